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
    let archive = match &args.resume {
        Some(path) => match read_snapshot(path) {
            Ok(b) => Some(b),
            Err(e) => return fail(&e),
        },
        None => None,
    };
    // The snapshot's first guest is the session's language.
    let resumed_language = match &archive {
        Some(b) => match snapshot_language(b) {
            Ok(l) => Some(l),
            Err(e) => return fail(&e),
        },
        None => None,
    };
    let mut args = args;
    if resumed_language.is_some_and(|(_, scientific)| scientific) && args.guest.is_none() {
        args.guest = Some("scientific".into());
    }
    let resumed_language = resumed_language.map(|(l, _)| l);
    let language = match (args.language.as_deref(), resumed_language) {
        (Some(l), resumed) => match l.parse::<Language>() {
            Ok(l) if resumed.is_none_or(|r| r == l) => l,
            Ok(_) => return fail("--language is not the snapshot's"),
            Err(e) => return fail(&e),
        },
        (None, Some(l)) => l,
        (None, None) => return fail("--language is required"),
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
    let opened = match archive {
        Some(bytes) => {
            let req = RunRequest::default();
            sandbox.resume_session(caller, bytes, &req).await
        }
        None => sandbox.open_session(caller, &open).await,
    };
    let info = match opened {
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
        if let Some(file) = cell.trim().strip_prefix(":snapshot") {
            let file = file.trim();
            if file.is_empty() {
                let _ = writeln!(err, "plimsoll: usage: :snapshot FILE");
                continue;
            }
            match sandbox.snapshot_session(caller, &info.session_id).await {
                Ok(s) => match std::fs::write(file, &s.archive.bytes) {
                    Ok(()) => {
                        let _ = writeln!(
                            err,
                            "plimsoll: snapshot written to {file} ({} bytes); resume it with --resume {file}",
                            s.archive.bytes.len()
                        );
                    }
                    Err(e) => {
                        let _ = writeln!(err, "plimsoll: cannot write {file}: {e}");
                        status = ExitCode::from(EXIT_REFUSED);
                    }
                },
                Err(e) => {
                    let _ = writeln!(err, "plimsoll: {}: {}", e.code, e.message);
                    status = ExitCode::from(EXIT_REFUSED);
                }
            }
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

/// The largest snapshot file `--resume` reads.
const MAX_SNAPSHOT_FILE: u64 = 4 << 30;

fn read_snapshot(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let md = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if md.len() > MAX_SNAPSHOT_FILE {
        return Err(format!("{}: larger than a snapshot may be", path.display()));
    }
    std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))
}

/// The language of a snapshot's first guest, and whether it is the
/// scientific Python guest (its manifest alone is read).
fn snapshot_language(bytes: &[u8]) -> Result<(Language, bool), String> {
    let caps = plimsoll::snapshot::archive::Caps {
        total_bytes: u64::MAX,
        memory_bytes: 4 << 30,
        workspace_bytes: u64::MAX,
        workspace_entries: u64::MAX,
    };
    let s = plimsoll::snapshot::archive::summary(bytes, &caps).map_err(|e| e.to_string())?;
    let first = s.identities.first().map(String::as_str).unwrap_or_default();
    let scientific = first.starts_with(&format!("{}:", plimsoll::run::SCIENTIFIC_FAMILY));
    Language::from_identity(first)
        .map(|l| (l, scientific))
        .ok_or_else(|| "the snapshot's session has no interpreter this CLI knows".to_owned())
}
