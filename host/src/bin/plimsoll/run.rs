//! `plimsoll run`: one component or script, once, its output printed.
//!
//! Guarantees: only the interpreter the run needs is loaded (none for a
//! component, nothing at all without a provider); the CLI reads at most
//! [`MAX_CLI_INPUT`] bytes of any input (the envelope caps what the guest
//! gets); a terminal never becomes the guest's stdin; the workspace is
//! removed before the process exits.

use crate::args::RunArgs;
use crate::config::{NO_SCIENTIFIC, sandbox_config, wants_scientific};
use crate::fail;
use crate::report::report;
use plimsoll::{Blob, InputFile, Language, Limits, ProviderKind, RunRequest, RunResult, Sandbox};
use std::path::PathBuf;
use std::process::ExitCode;

/// The most the CLI reads of one input (a script, a stdin file, piped
/// standard input); the envelope caps what the guest gets.
const MAX_CLI_INPUT: u64 = 256 << 20;

fn read_capped(path: &PathBuf, what: &str) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| format!("cannot read {what} {}: {e}", path.display());
    let mut out = Vec::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(MAX_CLI_INPUT + 1)
            .read_to_end(&mut out)
            .map_err(cannot)?;
    } else {
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CLI_INPUT + 1).read_to_end(&mut out))
            .map_err(cannot)?;
    }
    if out.len() as u64 > MAX_CLI_INPUT {
        return Err(format!(
            "{what} {} is larger than {MAX_CLI_INPUT} bytes",
            path.display()
        ));
    }
    Ok(out)
}

/// Whether this process's standard input is a pipe or a file (data meant
/// for the guest), not a terminal, `/dev/null` or anything else.
fn stdin_is_piped() -> bool {
    use std::os::unix::fs::FileTypeExt;
    let Ok(md) = std::fs::metadata("/proc/self/fd/0") else {
        return false;
    };
    let t = md.file_type();
    t.is_fifo() || t.is_file()
}

/// Runs `args.program` once and reports how it ended.
pub(crate) async fn run(args: RunArgs) -> ExitCode {
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let disabled = cfg.provider == ProviderKind::Disabled;
    let language = match &args.language {
        Some(l) => match l.parse::<Language>() {
            Ok(l) => Some(l),
            Err(e) => return fail(&e),
        },
        None => args
            .program
            .extension()
            .and_then(|e| e.to_str())
            .and_then(Language::from_extension),
    };
    // Load only the interpreter this run needs (none for a component), and
    // nothing at all when no provider will run it.
    let scientific = wants_scientific(&cfg, language, args.guest.as_deref());
    if scientific && cfg.scientific.is_none() {
        cfg.scientific = plimsoll::config::default_scientific_dir();
    }
    // A shell also loads the interpreters its `python3` and `node` start.
    cfg.interpreters.retain(|(l, _)| {
        (Some(*l) == language || language == Some(Language::Shell)) && !disabled && !scientific
    });
    if !scientific {
        cfg.scientific = None;
    } else if cfg.scientific.is_none() && !disabled {
        return fail(NO_SCIENTIFIC);
    }
    if let (Some(l), false, false) = (language, disabled, scientific)
        && !cfg.interpreters.iter().any(|(have, _)| *have == l)
    {
        return fail(&format!(
            "no {} interpreter component found: build it with `make guests` or set PLIMSOLL_{}_COMPONENT",
            l.as_str(),
            l.file_stem().to_ascii_uppercase()
        ));
    }
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let mut req = RunRequest::default();
    let piped = PathBuf::from("-");
    let stdin = match &args.stdin {
        Some(p) => Some(p),
        None if stdin_is_piped() => Some(&piped),
        None => None,
    };
    if let Some(p) = stdin {
        match read_capped(p, "stdin") {
            Ok(b) => req.stdin = Blob(b),
            Err(e) => return fail(&e),
        }
    }
    if language.is_some() {
        if args.code.is_some() {
            return fail("--code is for interpreter components; a script is its own code");
        }
        match read_capped(&args.program, "script").map(String::from_utf8) {
            Ok(Ok(code)) => req.code = Some(code),
            Ok(Err(_)) => {
                return fail(&format!(
                    "script {}: not valid UTF-8",
                    args.program.display()
                ));
            }
            Err(e) => return fail(&e),
        }
        req.language = language;
        req.guest = args.guest.clone();
    }
    if let Some(p) = &args.code {
        match read_capped(p, "code file").map(String::from_utf8) {
            Ok(Ok(code)) => req.code = Some(code),
            Ok(Err(_)) => return fail(&format!("code file {}: not valid UTF-8", p.display())),
            Err(e) => return fail(&e),
        }
    }
    for spec in &args.files {
        use std::os::unix::ffi::OsStrExt;
        let raw = spec.as_bytes();
        let shown = spec.to_string_lossy();
        let (host, work) = match raw.iter().rposition(|b| *b == b'=') {
            Some(i) => {
                let host = PathBuf::from(std::ffi::OsStr::from_bytes(&raw[..i]));
                match std::str::from_utf8(&raw[i + 1..]) {
                    Ok(w) => (host, w.to_owned()),
                    Err(_) => {
                        return fail(&format!(
                            "--file {shown}: the workspace path is not valid UTF-8"
                        ));
                    }
                }
            }
            None => {
                let host = PathBuf::from(spec);
                let Some(name) = host.file_name().and_then(|n| n.to_str()).map(str::to_owned)
                else {
                    return fail(&format!(
                        "--file {shown}: the file name is not valid UTF-8; use HOST=WORK_PATH"
                    ));
                };
                (host, name)
            }
        };
        match read_capped(&host, "--file") {
            Ok(b) => req.files.push(InputFile {
                path: work,
                content: Blob(b),
            }),
            Err(e) => return fail(&e),
        }
    }
    req.grants = args.grants.clone();
    req.limits = Limits {
        wall_time_ms: args.timeout_ms,
        memory_bytes: args.memory_mb.map(|m| m.saturating_mul(1 << 20)),
        fuel: args.fuel,
        broker_call_ms: args.broker_call_ms,
        ..Limits::default()
    };

    let result = if disabled {
        // Refuse before compiling anything: with no provider nothing about
        // the guest is even looked at.
        RunResult::refused(
            plimsoll::run::new_run_id(),
            sandbox.isolation(),
            "provider_disabled",
            plimsoll::provider::DISABLED_MESSAGE,
        )
    } else if language.is_some() {
        sandbox.run(&req).await
    } else {
        let guest = match sandbox.runtime().load_file(&args.program) {
            Ok(g) => g,
            Err(e) => return fail(&format!("{}: {e}", args.program.display())),
        };
        sandbox.run_guest(&guest, &req).await
    };
    // Workspaces are removed in the background; wait for that before the
    // process exits, or the last one would stay on disk.
    plimsoll::reaper::flush(std::time::Duration::from_secs(10));
    report(&result, args.json)
}
