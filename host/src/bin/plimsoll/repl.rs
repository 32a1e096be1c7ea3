//! `plimsoll repl`: an interactive session, every cell in one interpreter
//! instance, so globals persist.
//!
//! A cell is one line, or, after a line that opens a block, every line up
//! to the next empty one. The session is closed and its workspace removed
//! when input ends or the session does.

use crate::args::ReplArgs;
use crate::config::{NO_SCIENTIFIC, sandbox_config, wants_scientific};
use crate::fail;
use crate::report::{EXIT_REFUSED, exit_code};
use plimsoll::{Language, Limits, ProviderKind, RunRequest, Sandbox, Status};
use std::io::Write;
use std::process::ExitCode;

/// Whether `line` opens a block that continues on the next lines.
fn opens_block(line: &str) -> bool {
    let t = line.trim_end();
    t.ends_with(':')
        || t.ends_with('{')
        || t.ends_with('(')
        || t.ends_with('[')
        || t.ends_with('\\')
}

/// Reads cells from stdin and runs each in one session.
pub(crate) async fn repl(args: ReplArgs) -> ExitCode {
    use std::io::{BufRead, IsTerminal};
    let language = match args.language.parse::<Language>() {
        Ok(l) => l,
        Err(e) => return fail(&e),
    };
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let scientific = wants_scientific(&cfg, Some(language), args.guest.as_deref());
    if scientific && cfg.scientific.is_none() {
        cfg.scientific = plimsoll::config::default_scientific_dir();
    }
    // A shell also loads the interpreters its `python3` and `node` start.
    cfg.interpreters
        .retain(|(l, _)| (*l == language || language == Language::Shell) && !scientific);
    if !scientific {
        cfg.scientific = None;
    } else if cfg.scientific.is_none() && cfg.provider != ProviderKind::Disabled {
        return fail(NO_SCIENTIFIC);
    }
    if cfg.provider != ProviderKind::Disabled
        && !scientific
        && !cfg.interpreters.iter().any(|(l, _)| *l == language)
    {
        return fail(&format!(
            "no {} interpreter component found: build it with `make guests`",
            language.as_str()
        ));
    }
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let caller = plimsoll::sandbox::LOCAL_CALLER;
    let open = RunRequest {
        language: Some(language),
        guest: args.guest.clone(),
        ..RunRequest::default()
    };
    let info = match sandbox.open_session(caller, &open).await {
        Ok(i) => i,
        Err(e) => {
            eprintln!("plimsoll: {}: {}", e.code, e.message);
            return ExitCode::from(EXIT_REFUSED);
        }
    };
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        eprintln!(
            "plimsoll {} session on {} (isolation: {}); Ctrl-D to end",
            language.as_str(),
            info.guest,
            sandbox.isolation().tier
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut out = std::io::stdout();
    let mut err = std::io::stderr();
    let mut status = ExitCode::SUCCESS;
    loop {
        if interactive {
            let _ = write!(err, ">>> ");
            let _ = err.flush();
        }
        let Some(Ok(first)) = lines.next() else { break };
        let mut cell = first.clone();
        if opens_block(&first) {
            loop {
                if interactive {
                    let _ = write!(err, "... ");
                    let _ = err.flush();
                }
                match lines.next() {
                    Some(Ok(l)) if !l.trim().is_empty() => {
                        cell.push('\n');
                        cell.push_str(&l);
                    }
                    _ => break,
                }
            }
        }
        if cell.trim().is_empty() {
            continue;
        }
        let (code, files) = if language == Language::Shell {
            // Each line runs in a fresh shell (one process per command);
            // its working directory and exported variables carry over in
            // the workspace, as plimsoll-client's Workspace keeps them.
            let (code, file) = plimsoll::run::shell_session_line(&cell);
            (code, vec![file])
        } else {
            (cell, Vec::new())
        };
        let req = RunRequest {
            code: Some(code),
            files,
            grants: args.grants.clone(),
            limits: Limits {
                wall_time_ms: args.timeout_ms,
                ..Limits::default()
            },
            ..RunRequest::default()
        };
        let r = sandbox.run_in_session(caller, &info.session_id, &req).await;
        let _ = out.write_all(&r.stdout_bytes);
        let _ = err.write_all(&r.stderr_bytes);
        if let Some(v) = r.result.as_deref().filter(|v| !v.is_empty()) {
            let _ = writeln!(out, "{v}");
        }
        let _ = out.flush();
        if r.status != Status::Ok && r.status != Status::Error {
            let msg = r.error.as_ref().map(|e| e.message.as_str()).unwrap_or("");
            let _ = writeln!(err, "plimsoll: {}: {msg}", r.status.as_str());
        }
        if r.status != Status::Ok {
            status = ExitCode::from(exit_code(&r));
        }
        if r.session_closed || r.status == Status::Refused {
            let _ = writeln!(err, "plimsoll: the session has ended");
            break;
        }
    }
    sandbox.close_session(caller, &info.session_id);
    plimsoll::reaper::flush(std::time::Duration::from_secs(10));
    status
}
