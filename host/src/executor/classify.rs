//! How a call ended: the call's own outcome and the facts the host knows
//! (its own stop, a refused memory growth, a refused write) turned into a
//! status, an exit code, a result or an error, and whether the instance
//! may be used again.
//!
//! Guarantees: [`classify_facts`] is a pure function of its inputs; the
//! host's stop facts take precedence over what the guest did with them
//! (a timeout stays a timeout, a failure after a refused growth is
//! `memory_exhausted`, after a refused write `disk_exhausted`); only a
//! clean return or a guest's own error leaves an instance reusable; an
//! error message is at most [`MAX_MESSAGE`] bytes, cut at a character
//! boundary.

use super::call::{CallValue, Invocation};
use crate::output::OutputLimitExceeded;
use crate::run::{EXIT_STATUS, ErrorInfo, Status};
use crate::state::{RunState, StopReason};
use wasmtime::Trap;
use wasmtime_wasi::I32Exit;

/// Longest error message kept from a trap.
const MAX_MESSAGE: usize = 2048;

/// How a finished call is reported.
pub(crate) struct Classified {
    pub(crate) status: Status,
    pub(crate) exit_code: Option<i32>,
    pub(crate) result: Option<String>,
    pub(crate) error: Option<ErrorInfo>,
    /// Whether the instance may be used again (sessions).
    pub(crate) reusable: bool,
}

/// What the host knows of how a call ended, besides the call's own
/// outcome: the facts [`classify`] reads from the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StopFacts {
    /// Why the host stopped the run from the outside, if it did.
    pub(crate) stop: Option<StopReason>,
    /// Whether the limiter refused a memory (or table) growth.
    pub(crate) memory_refused: bool,
    /// Whether the workspace refused a write for space during the call.
    pub(crate) disk_refused: bool,
}

impl StopFacts {
    /// The facts of a store's run (taking the workspace's refusal, which
    /// each call reports once).
    pub(crate) fn of(state: &RunState) -> StopFacts {
        StopFacts {
            stop: state.stop,
            memory_refused: state.limiter.refused_growth(),
            disk_refused: state
                .workspace
                .as_ref()
                .is_some_and(|w| w.take_refused_space()),
        }
    }
}

/// Turns a call's outcome and the store's state into a status.
pub(crate) fn classify(inv: Invocation, state: &RunState) -> Classified {
    classify_facts(inv, StopFacts::of(state))
}

/// [`classify`] as a pure function of the call's outcome and the stop
/// facts. A call that failed after the workspace refused a write for space
/// ended `disk_exhausted`: the guest did not recover from a full disk.
pub(crate) fn classify_facts(inv: Invocation, facts: StopFacts) -> Classified {
    let mut c = classify_call(inv, facts);
    if facts.disk_refused && matches!(c.status, Status::Error | Status::Trap) {
        c.status = Status::DiskExhausted;
        c.error = Some(ErrorInfo {
            code: "disk_exhausted".into(),
            message: format!(
                "the workspace refused a write past its byte or entry limit, and then {}",
                c.error
                    .as_ref()
                    .map_or("the run failed".to_owned(), |e| truncate(e.message.clone()))
            ),
        });
    }
    c
}

fn classify_call(inv: Invocation, facts: StopFacts) -> Classified {
    let mut c = Classified {
        status: Status::Ok,
        exit_code: None,
        result: None,
        error: None,
        reusable: false,
    };
    let set_err = |c: &mut Classified, status: Status, code: &str, message: String| {
        c.status = status;
        c.error = Some(ErrorInfo {
            code: code.into(),
            message: truncate(message),
        });
    };
    match inv {
        Invocation::OuterTimeout => {
            set_err(
                &mut c,
                Status::Timeout,
                "timeout",
                "the run passed its wall-time limit".into(),
            );
        }
        Invocation::Returned(Ok(CallValue::Run(true))) => {
            c.exit_code = Some(0);
            c.reusable = true;
        }
        Invocation::Returned(Ok(CallValue::Run(false))) => {
            c.exit_code = Some(1);
            set_err(
                &mut c,
                Status::Error,
                "guest_error",
                "the guest's run returned an error".into(),
            );
        }
        Invocation::Returned(Ok(CallValue::Eval(Ok(v)))) => {
            c.result = Some(v);
            c.reusable = true;
        }
        Invocation::Returned(Ok(CallValue::Eval(Err(msg)))) => {
            c.reusable = true;
            set_err(&mut c, Status::Error, "guest_error", msg);
        }
        Invocation::Returned(Ok(CallValue::Shell(Ok(status)))) => {
            // The script's exit status, as a shell reports it (0–255).
            match status.trim().parse::<i32>() {
                Ok(0) => c.exit_code = Some(0),
                Ok(code) if (1..=255).contains(&code) => {
                    c.exit_code = Some(code);
                    set_err(
                        &mut c,
                        Status::Error,
                        EXIT_STATUS,
                        format!("the script exited with status {code}"),
                    );
                }
                _ => set_err(
                    &mut c,
                    Status::Trap,
                    "trap",
                    "the shell reported no exit status".into(),
                ),
            }
            c.reusable = c.status != Status::Trap;
        }
        Invocation::Returned(Ok(CallValue::Shell(Err(msg)))) => {
            set_err(
                &mut c,
                Status::Trap,
                "trap",
                format!("the shell failed: {msg}"),
            );
        }
        Invocation::Returned(Err(e)) => classify_error(&mut c, &e, facts, set_err),
    }
    // A run that failed after the limiter refused memory failed for want of
    // memory, whatever the guest did with the refusal.
    if c.status != Status::Ok && c.status != Status::Timeout && facts.memory_refused {
        c.reusable = c.status == Status::Error;
        set_err(
            &mut c,
            Status::MemoryExhausted,
            "memory_exhausted",
            "the guest asked for more memory than its limit".into(),
        );
    }
    c
}

fn classify_error(
    c: &mut Classified,
    e: &wasmtime::Error,
    facts: StopFacts,
    set_err: impl Fn(&mut Classified, Status, &str, String),
) {
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        c.exit_code = Some(exit.0);
        if exit.0 == 0 {
            c.status = Status::Ok;
        } else {
            set_err(
                c,
                Status::Error,
                "guest_error",
                format!("the guest exited with code {}", exit.0),
            );
        }
        return;
    }
    match facts.stop {
        Some(StopReason::Timeout) => {
            return set_err(
                c,
                Status::Timeout,
                "timeout",
                "the run passed its wall-time limit".into(),
            );
        }
        Some(StopReason::Disk) => {
            return set_err(
                c,
                Status::DiskExhausted,
                "disk_exhausted",
                "the workspace passed its byte or entry limit".into(),
            );
        }
        None => {}
    }
    if let Some(o) = e.downcast_ref::<OutputLimitExceeded>() {
        return set_err(
            c,
            Status::OutputTruncated,
            "output_truncated",
            o.to_string(),
        );
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => set_err(
            c,
            Status::CpuExhausted,
            "cpu_exhausted",
            "the run used all its fuel".into(),
        ),
        Some(Trap::Interrupt) => set_err(
            c,
            Status::Timeout,
            "timeout",
            "the run passed its wall-time limit".into(),
        ),
        Some(t) => set_err(c, Status::Trap, "trap", t.to_string()),
        None => set_err(c, Status::Trap, "trap", format!("{e:#}")),
    }
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(stop: Option<StopReason>, memory_refused: bool) -> StopFacts {
        StopFacts {
            stop,
            memory_refused,
            disk_refused: false,
        }
    }

    #[test]
    fn a_call_that_fails_after_a_refused_write_is_disk_exhausted() {
        let refused = StopFacts {
            disk_refused: true,
            ..facts(None, false)
        };
        let failed =
            || Invocation::Returned(Ok(CallValue::Eval(Err("OSError: [Errno 28]".into()))));
        assert_eq!(
            classify_facts(failed(), refused).status,
            Status::DiskExhausted
        );
        // A guest that recovered from the full disk ended as it ended.
        let ok = Invocation::Returned(Ok(CallValue::Eval(Ok("1".into()))));
        assert_eq!(classify_facts(ok, refused).status, Status::Ok);
        assert_eq!(
            classify_facts(failed(), facts(None, false)).status,
            Status::Error
        );
    }

    fn status(inv: Invocation, f: StopFacts) -> (Status, Option<String>, bool) {
        let c = classify_facts(inv, f);
        (c.status, c.error.map(|e| e.code), c.reusable)
    }

    #[test]
    fn how_a_call_ended_decides_the_status() {
        let none = StopFacts::default();
        assert_eq!(
            status(Invocation::Returned(Ok(CallValue::Run(true))), none),
            (Status::Ok, None, true)
        );
        assert_eq!(
            status(Invocation::Returned(Ok(CallValue::Run(false))), none),
            (Status::Error, Some("guest_error".into()), false)
        );
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Eval(Ok("2".into())))),
                none
            ),
            (Status::Ok, None, true)
        );
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Eval(Err("boom".into())))),
                none
            ),
            (Status::Error, Some("guest_error".into()), true)
        );
        assert_eq!(
            status(Invocation::OuterTimeout, none),
            (Status::Timeout, Some("timeout".into()), false)
        );
        let exit = |code| Invocation::Returned(Err(wasmtime::Error::new(I32Exit(code))));
        assert_eq!(status(exit(0), none).0, Status::Ok);
        assert_eq!(
            status(exit(3), none),
            (Status::Error, Some("guest_error".into()), false)
        );
        let trap = |t| Invocation::Returned(Err(wasmtime::Error::new(t)));
        assert_eq!(status(trap(Trap::OutOfFuel), none).0, Status::CpuExhausted);
        assert_eq!(status(trap(Trap::Interrupt), none).0, Status::Timeout);
        assert_eq!(
            status(trap(Trap::UnreachableCodeReached), none),
            (Status::Trap, Some("trap".into()), false)
        );
    }

    #[test]
    fn the_hosts_stop_facts_take_precedence() {
        let trap = || Invocation::Returned(Err(wasmtime::Error::new(Trap::Interrupt)));
        // An interrupt the host caused for the workspace is disk, not time.
        assert_eq!(
            status(trap(), facts(Some(StopReason::Disk), false)).0,
            Status::DiskExhausted
        );
        assert_eq!(
            status(trap(), facts(Some(StopReason::Timeout), false)).0,
            Status::Timeout
        );
        // A failure after a refused growth is memory, whatever the guest
        // made of the refusal; a guest error stays reusable.
        assert_eq!(
            status(
                Invocation::Returned(Err(wasmtime::Error::new(Trap::UnreachableCodeReached))),
                facts(None, true)
            ),
            (
                Status::MemoryExhausted,
                Some("memory_exhausted".into()),
                false
            )
        );
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Eval(Err("MemoryError".into())))),
                facts(None, true)
            ),
            (
                Status::MemoryExhausted,
                Some("memory_exhausted".into()),
                true
            )
        );
        // Success and a wall-time stop are not rewritten.
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Run(true))),
                facts(None, true)
            )
            .0,
            Status::Ok
        );
        assert_eq!(
            status(Invocation::OuterTimeout, facts(None, true)).0,
            Status::Timeout
        );
    }
}
