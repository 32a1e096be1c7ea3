//! `plimsoll check` and `plimsoll componentize`: a component judged
//! against the published worlds, and a core module made into one.
//!
//! Guarantees: nothing is compiled or run; at most [`MAX_WASM`] bytes are
//! read; `componentize` writes its output only after the result passed the
//! check, and never over its input.

use crate::args::{CheckArgs, ComponentizeArgs};
use plimsoll::worlds::check::{Target, check};
use plimsoll::worlds::componentize::componentize;
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

/// The largest component or module either command reads.
const MAX_WASM: u64 = 512 << 20;

fn read(path: &Path) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_WASM + 1).read_to_end(&mut out))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if out.len() as u64 > MAX_WASM {
        return Err(format!(
            "{} is larger than {MAX_WASM} bytes",
            path.display()
        ));
    }
    Ok(out)
}

/// Prints the verdict; a closed stdout (`| head`) is not an error.
fn say(target: &Target, json: bool) {
    use std::io::Write;
    let text = if json {
        serde_json::to_string_pretty(target).unwrap_or_default()
    } else {
        format!(
            "{} (world `{}` of {})",
            target.world, target.world, target.package
        )
    };
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// Exit status 1 when the component targets no published world, 2 when it
/// cannot be read.
pub(crate) fn check_cmd(args: CheckArgs) -> ExitCode {
    let bytes = match read(&args.component) {
        Ok(b) => b,
        Err(e) => return crate::fail(&e),
    };
    match check(&bytes) {
        Ok(t) => {
            say(&t, args.json);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("plimsoll: {}: {e}", args.component.display());
            ExitCode::from(1)
        }
    }
}

/// Exit status 1 when the module cannot become a component of the world.
pub(crate) fn componentize_cmd(args: ComponentizeArgs) -> ExitCode {
    let core = match read(&args.module) {
        Ok(b) => b,
        Err(e) => return crate::fail(&e),
    };
    let same = match (args.module.canonicalize(), args.output.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return crate::fail("the output would overwrite the input module");
    }
    let (bytes, target) = match componentize(&core, &args.world) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("plimsoll: {}: {e}", args.module.display());
            return ExitCode::from(1);
        }
    };
    if let Err(e) = std::fs::write(&args.output, &bytes) {
        return crate::fail(&format!("cannot write {}: {e}", args.output.display()));
    }
    eprintln!(
        "plimsoll: wrote {} ({} bytes)",
        args.output.display(),
        bytes.len()
    );
    say(&target, false);
    ExitCode::SUCCESS
}
