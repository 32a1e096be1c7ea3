//! A run's result on the terminal: the guest's output (or the whole result
//! as JSON), a line for an ending that was not the guest's own, and the
//! exit status.
//!
//! Guarantees: the exit status is the guest's exit code when it exited,
//! otherwise a fixed code per status (124 timeout, 125 refused, 134 trap,
//! 137 memory exhausted, 141 output truncated, 152 CPU exhausted, 153
//! workspace full, 154 worker lost, 130 canceled); write errors (a closed
//! pipe) never change it.

use crate::fail;
use plimsoll::{RunResult, Status};
use std::io::Write;
use std::process::ExitCode;

/// Exit codes for runs that did not end with the guest's own code.
pub(crate) const EXIT_REFUSED: u8 = 125;
const EXIT_TIMEOUT: u8 = 124;
const EXIT_TRAP: u8 = 134;
const EXIT_MEMORY: u8 = 137;
const EXIT_OUTPUT: u8 = 141;
const EXIT_CPU: u8 = 152;
const EXIT_DISK: u8 = 153;
const EXIT_WORKER_LOST: u8 = 154;
const EXIT_CANCELED: u8 = 130;

/// Prints `result` (as JSON with `json`) and answers its exit status.
pub(crate) fn report(result: &RunResult, json: bool) -> ExitCode {
    if json {
        match serde_json::to_string_pretty(result) {
            Ok(s) => {
                let _ = writeln!(std::io::stdout(), "{s}");
            }
            Err(e) => return fail(&format!("cannot encode the result: {e}")),
        }
    } else {
        let _ = std::io::stdout().write_all(&result.stdout_bytes);
        let _ = std::io::stderr().write_all(&result.stderr_bytes);
        // Write errors (a closed pipe) are ignored: the exit code still
        // tells how the run ended.
        let mut err = std::io::stderr();
        if result.status != Status::Ok && result.status != Status::Error {
            let msg = result
                .error
                .as_ref()
                .map(|e| e.message.as_str())
                .unwrap_or("");
            let _ = writeln!(err, "plimsoll: run {}: {msg}", result.status.as_str());
        }
        if result.stdout_truncated || result.stderr_truncated {
            let _ = writeln!(err, "plimsoll: output was truncated at its cap");
        }
        // Artifacts are in the JSON result; the text output names them.
        for a in &result.artifacts {
            let _ = writeln!(
                err,
                "plimsoll: artifact out/{} ({} bytes; --json has its contents)",
                a.path, a.size
            );
        }
    }
    ExitCode::from(exit_code(result))
}

/// The exit status of a run that ended as `r` did.
pub(crate) fn exit_code(r: &RunResult) -> u8 {
    match r.status {
        Status::Ok => 0,
        Status::Error => r
            .exit_code
            .and_then(|c| u8::try_from(c).ok())
            .filter(|c| *c != 0)
            .unwrap_or(1),
        Status::Timeout => EXIT_TIMEOUT,
        Status::CpuExhausted => EXIT_CPU,
        Status::MemoryExhausted => EXIT_MEMORY,
        Status::OutputTruncated => EXIT_OUTPUT,
        Status::DiskExhausted => EXIT_DISK,
        Status::Trap => EXIT_TRAP,
        Status::Refused => EXIT_REFUSED,
        Status::WorkerLost => EXIT_WORKER_LOST,
        Status::Canceled => EXIT_CANCELED,
    }
}
