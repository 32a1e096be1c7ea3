//! `plimsoll batch`: every job of a JSON Lines file, in parallel, one
//! result line per job ([`plimsoll::batch`]).
//!
//! Pre-instantiation is off unless asked for: a batch keeps every core
//! busy with runs. Guests are loaded the first time a job needs one (a
//! job's `guest: "scientific"` loads the scientific guest then), and a job
//! waits for its guest's compile however long it takes.

use crate::args::BatchArgs;
use crate::config::sandbox_config;
use crate::fail;
use plimsoll::Sandbox;
use std::process::ExitCode;

/// Runs the jobs file and prints the summary.
pub(crate) async fn batch(args: BatchArgs) -> ExitCode {
    use std::io::IsTerminal;
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    // A batch keeps every core busy with runs, so instantiating ahead in
    // the background only competes with them (measured: ~10 % fewer
    // `1+1` jobs/s). Off unless asked for.
    if std::env::var_os(plimsoll::engine::WARM_INSTANCES_ENV).is_none() {
        cfg.runtime.engine.warm_instances = 0;
    }
    // Any job may name the scientific guest: offer it when it is built;
    // `lazy` loads it only if a job asks for it.
    if cfg.scientific.is_none() {
        cfg.scientific = plimsoll::config::default_scientific_dir();
    }
    let sandbox = match Sandbox::lazy(cfg) {
        Ok(s) => std::sync::Arc::new(s),
        Err(e) => return fail(&e.to_string()),
    };
    let mut opts = plimsoll::batch::BatchOptions {
        progress: std::io::stderr().is_terminal(),
        guest: args.guest.clone(),
        ..Default::default()
    };
    if let Some(n) = args.concurrency {
        opts.concurrency = n.max(1);
    }
    let summary = if args.jobs.as_os_str() == "-" {
        let stdin = std::io::BufReader::new(std::io::stdin());
        plimsoll::batch::run_batch(sandbox, stdin, &args.output, &opts).await
    } else {
        match std::fs::File::open(&args.jobs) {
            Ok(f) => {
                plimsoll::batch::run_batch(sandbox, std::io::BufReader::new(f), &args.output, &opts)
                    .await
            }
            Err(e) => return fail(&format!("cannot read {}: {e}", args.jobs.display())),
        }
    };
    plimsoll::reaper::flush(std::time::Duration::from_secs(10));
    match summary {
        Ok(s) => {
            eprintln!("plimsoll batch: {}", s.line());
            if args.summary_json {
                println!("{}", serde_json::to_string(&s).unwrap_or_default());
            }
            ExitCode::SUCCESS
        }
        Err(e) => fail(&format!("batch failed: {e}")),
    }
}
