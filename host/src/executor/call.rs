//! Instantiating a guest for a run and calling it once.
//!
//! Guarantees: a call is bounded by the run's wall time plus
//! [`OUTER_GRACE`] even when the guest is parked in a host call (the epoch
//! callback normally ends it first); when every pool slot is taken, slots
//! held by pre-instantiated instances or by finished runs queued for
//! teardown are freed (waiting at most [`TEARDOWN_WAIT`], off the async
//! threads) and the instantiation is tried exactly once more — a run comes
//! before a warm instance.

use crate::guest::{Guest, Live, instantiate};
use crate::runtime::Runtime;
use crate::state::RunState;
use std::time::Duration;
use wasmtime::Store;

/// Extra time the outer timer grants past the wall-time limit before it
/// drops the run. The epoch callback normally ends the run first; the outer
/// timer catches a guest that is parked in a host call.
pub(super) const OUTER_GRACE: Duration = Duration::from_millis(250);

/// What one call into the guest returned, before classification.
pub(crate) enum Invocation {
    /// The call returned (`Ok`) or the guest exited/trapped (`Err`).
    Returned(wasmtime::Result<CallValue>),
    /// The outer timer fired.
    OuterTimeout,
}

impl Invocation {
    /// Whether an interpreter's `eval` returned its value (not an error,
    /// a trap or a timeout).
    pub(crate) fn evaluated_ok(&self) -> bool {
        matches!(self, Invocation::Returned(Ok(CallValue::Eval(Ok(_)))))
    }
}

/// A guest's own answer.
pub(crate) enum CallValue {
    /// `wasi:cli/run` returned; `true` for success.
    Run(bool),
    /// `eval` returned `ok(value)` or `err(message)`.
    Eval(Result<String, String>),
    /// The shell's `eval` returned `ok(exit status)` or `err(message)`.
    Shell(Result<String, String>),
}

/// How long a run that found no free pool slot waits for queued teardowns.
const TEARDOWN_WAIT: Duration = Duration::from_secs(2);

/// [`instantiate`] for a run or a session: when every pool slot is taken
/// and some are held by pre-instantiated instances ([`crate::warm`]) or by
/// finished runs queued for teardown ([`crate::reaper`]), the former are
/// dropped, the latter waited for (at most [`TEARDOWN_WAIT`], on tokio's
/// blocking pool), and the instantiation tried once more. A run comes
/// before a warm instance.
pub(crate) async fn instantiate_for_run(
    rt: &Runtime,
    guest: &Guest,
    store: &mut Store<RunState>,
) -> wasmtime::Result<Live> {
    match instantiate(guest, store).await {
        Err(e)
            if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                .is_some() =>
        {
            // Slots that are only held by pre-instantiated instances, or
            // by finished runs still queued for teardown, are free to take:
            // let them go, then try once more. Both waits block, so they
            // run on tokio's blocking pool, not on this worker thread.
            //
            // The retry happens even when nothing was waiting by the time
            // this looked: the reaper may have finished a teardown between
            // the failed attempt and the look (measured: under CPU load a
            // run in a one-slot pool was refused `busy` with the slot
            // already free).
            let owned = rt.clone();
            let waited = tokio::task::spawn_blocking(move || {
                owned.warm().release_all();
                if crate::reaper::pending_instances() > 0 {
                    crate::reaper::flush(TEARDOWN_WAIT);
                }
            })
            .await;
            if waited.is_err() {
                return Err(e);
            }
            instantiate(guest, store).await
        }
        r => r,
    }
}

/// Calls the guest once, under the store's deadline plus a grace period.
pub(crate) async fn invoke(
    live: &Live,
    store: &mut Store<RunState>,
    code: &str,
    wall: Duration,
) -> Invocation {
    let call = async {
        match live {
            Live::Agent(cmd) => cmd
                .wasi_cli_run()
                .call_run(&mut *store)
                .await
                .map(|r| CallValue::Run(r.is_ok())),
            Live::Interpreter(i) => i
                .api
                .call_eval(&mut *store, code)
                .await
                .map(CallValue::Eval),
            Live::Shell(sh) => sh.call_eval(&mut *store, code).await.map(CallValue::Shell),
            Live::Core(c) => c.eval(&mut *store, code).await.map(CallValue::Eval),
        }
    };
    match tokio::time::timeout(wall + OUTER_GRACE, call).await {
        Ok(r) => Invocation::Returned(r),
        Err(_) => Invocation::OuterTimeout,
    }
}
