//! `plimsoll preinit` and the hidden `preinit-scientific`: build steps
//! that snapshot a guest's start-up ([`plimsoll::preinit`]).
//!
//! Guarantees: each runs under a scratch runtime (default engine, no
//! cache, a scratch workspace root); the output is written beside its
//! target and renamed, so a failed build never leaves a partial file.

use crate::args::{PreinitArgs, PreinitScientificArgs};
use crate::fail;
use std::process::ExitCode;

/// A runtime for a build step: default engine, no cache, a scratch
/// workspace root (kept alive by the returned directory).
fn scratch_runtime() -> Result<(tempfile::TempDir, plimsoll::Runtime), String> {
    scratch_runtime_with(false)
}

/// A runtime of the runs' configuration, or with `quick_compile` for code
/// that runs once (the scientific initialization: compiled without
/// optimizations it is ready in a fraction of the time, and runs once).
fn scratch_runtime_with(
    quick_compile: bool,
) -> Result<(tempfile::TempDir, plimsoll::Runtime), String> {
    let work =
        tempfile::tempdir().map_err(|e| format!("cannot create a scratch workspace: {e}"))?;
    let mut config = plimsoll::RuntimeConfig {
        cache_dir: None,
        workspace_dir: work.path().to_path_buf(),
        ..plimsoll::RuntimeConfig::default()
    };
    config.engine.quick_compile = quick_compile;
    let runtime = plimsoll::Runtime::new(config).map_err(|e| e.to_string())?;
    Ok((work, runtime))
}

/// Snapshots an interpreter component's start-up.
pub(crate) async fn preinit(args: PreinitArgs) -> ExitCode {
    let wasm = match std::fs::read(&args.input) {
        Ok(b) => b,
        Err(e) => return fail(&format!("{}: {e}", args.input.display())),
    };
    let (_work, runtime) = match scratch_runtime() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let init = plimsoll::preinit::InitCall {
        export: args.init_export,
        arg: (!args.no_init_arg).then_some(args.init_arg),
    };
    let snapshot = match plimsoll::preinit::preinitialize(&runtime, &wasm, &init).await {
        Ok(s) => s,
        Err(e) => return fail(&format!("{}: {e}", args.input.display())),
    };
    // Written beside the target and renamed, so a failed build never leaves
    // a half-written guest where the host looks for one.
    let tmp = args.output.with_extension("wasm.tmp");
    if let Err(e) =
        std::fs::write(&tmp, &snapshot).and_then(|()| std::fs::rename(&tmp, &args.output))
    {
        return fail(&format!("{}: {e}", args.output.display()));
    }
    eprintln!(
        "plimsoll: pre-initialized {} -> {} ({} -> {} bytes)",
        args.input.display(),
        args.output.display(),
        wasm.len(),
        snapshot.len()
    );
    ExitCode::SUCCESS
}

/// Snapshots the scientific guest's start-up.
pub(crate) async fn preinit_scientific(args: PreinitScientificArgs) -> ExitCode {
    let read = |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let (plain, init) = match (read(&args.plain), read(&args.init)) {
        (Ok(p), Ok(i)) => (p, i),
        (Err(e), _) | (_, Err(e)) => return fail(&e),
    };
    let Ok(init) = String::from_utf8(init) else {
        return fail(&format!("{} is not UTF-8", args.init.display()));
    };
    // The initialization runs once: its engine compiles without
    // optimizations. The snapshot is compiled for runs by `runtime`.
    let (_quick_work, quick) = match scratch_runtime_with(true) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let (_work, runtime) = match scratch_runtime() {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let artifacts = match plimsoll::scientific::load_artifacts(&args.dir) {
        Ok(a) => a,
        Err(e) => return fail(&format!("{}: {e}", args.dir.display())),
    };
    let started = std::time::Instant::now();
    let snapshot =
        match plimsoll::preinit::snapshot_scientific(&quick, &plain, &artifacts, &init).await {
            Ok(s) => s,
            Err(e) => return fail(&format!("{}: {e}", args.plain.display())),
        };
    let output = args.dir.join(plimsoll::scientific::SNAPSHOT_FILE);
    let tmp = output.with_extension("wasm.tmp");
    if let Err(e) = std::fs::write(&tmp, &snapshot).and_then(|()| std::fs::rename(&tmp, &output)) {
        return fail(&format!("{}: {e}", output.display()));
    }
    for dir in &args.cache_dirs {
        eprintln!(
            "plimsoll: compiling the snapshot into {} ({:.0} s so far)",
            dir.display(),
            started.elapsed().as_secs_f64()
        );
        let compiled = plimsoll::component_cache::ComponentCache::open(dir)
            .and_then(|cache| runtime.load_scientific_with(&args.dir, &cache));
        if let Err(e) = compiled {
            return fail(&format!("compiling into {}: {e}", dir.display()));
        }
    }
    eprintln!(
        "plimsoll: snapshotted {} -> {} ({} -> {} bytes, {:.1} s)",
        args.plain.display(),
        output.display(),
        plain.len(),
        snapshot.len(),
        started.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
