//! One whole run, and its report: prepare, claim a warm instance or
//! instantiate, call, classify, then collect outputs, artifacts and usage
//! and hand the instance to the reaper.
//!
//! Guarantees: a refusal before anything ran says so (`invalid_request`,
//! `busy`); instantiation failures are classified like any other ending;
//! the final workspace measurement decides `disk_exhausted`; the result is
//! cut to its cap at a character boundary; fuel is not reported after a
//! wall-time interrupt (the figure would be wrong); the caller has its
//! result before the instance and then the workspace are dropped, in that
//! order, on the reaper thread.

use super::call::{Invocation, OUTER_GRACE, instantiate_for_run, invoke};
use super::claim::claim_warm;
use super::classify::{Classified, classify};
use super::store::{BrokerSide, Prepared, prepare_with};
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::run::{ErrorInfo, RunRequest, RunResult, Status, Usage};
use crate::runtime::Runtime;
use crate::tier::Isolation;
use std::time::{Duration, Instant};

/// Runs `guest` once in a fresh instance and reports everything.
pub(crate) async fn execute(
    rt: &Runtime,
    guest: &Guest,
    req: &RunRequest,
    env: &Envelope,
    grants: GrantSet,
    isolation: Isolation,
    run_id: String,
) -> RunResult {
    execute_with(
        rt,
        guest,
        req,
        env,
        BrokerSide::Local(grants),
        isolation,
        run_id,
    )
    .await
}

/// [`execute`] with the broker on `side` (a worker's runs use the remote
/// side).
pub(crate) async fn execute_with(
    rt: &Runtime,
    guest: &Guest,
    req: &RunRequest,
    env: &Envelope,
    side: BrokerSide,
    isolation: Isolation,
    run_id: String,
) -> RunResult {
    let started = Instant::now();
    let _busy = rt.warm().busy();
    let mut prepared = match prepare_with(rt, req, env, side) {
        Ok(p) => p,
        Err(e) => {
            let mut r = RunResult::refused(run_id, isolation, &e.code, e.message);
            r.guest = Some(guest.identity().to_owned());
            return r;
        }
    };
    super::child::arm(rt, guest, env, &mut prepared);
    let wall = Duration::from_millis(env.wall_time_ms);
    let inst_started = Instant::now();
    let instantiated = match claim_warm(rt, guest, env, &mut prepared) {
        Some(live) => Ok(Ok(live)),
        None => {
            // Ask for one for the next run before making this one.
            rt.refill_warm(guest);
            tokio::time::timeout(
                wall + OUTER_GRACE,
                instantiate_for_run(rt, guest, &mut prepared.store),
            )
            .await
        }
    };
    let instantiate_ms = inst_started.elapsed().as_secs_f64() * 1e3;
    let store = &mut prepared.store;
    let classified = match instantiated {
        Ok(Ok(live)) => {
            let inv = invoke(&live, store, req.code.as_deref().unwrap_or(""), wall).await;
            classify(inv, store.data())
        }
        Ok(Err(e))
            if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                .is_some() =>
        {
            let mut r = RunResult::refused(
                run_id,
                isolation,
                "busy",
                "every instance slot is in use; try again shortly",
            );
            r.guest = Some(guest.identity().to_owned());
            return r;
        }
        // Instantiation runs the guest's start functions, so its failures
        // are classified like any other.
        Ok(Err(e)) => classify(Invocation::Returned(Err(e)), store.data()),
        Err(_) => classify(Invocation::OuterTimeout, store.data()),
    };
    let r = finish(
        prepared,
        env,
        &req.capture,
        classified,
        isolation,
        run_id,
        guest,
        started,
        instantiate_ms,
    );
    // Again now that this run is over: the request made before the run may
    // have found no free slot. (This run's slot is free once the reaper has
    // dropped its instance; the refill itself waits for a quiet moment,
    // which is normally later.)
    rt.refill_warm(guest);
    r
}

/// Collects outputs, artifacts and usage into the result, then tears the
/// instance down.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    mut prepared: Prepared,
    env: &Envelope,
    capture: &[String],
    c: Classified,
    isolation: Isolation,
    run_id: String,
    guest: &Guest,
    started: Instant,
    instantiate_ms: f64,
) -> RunResult {
    let mut r = report(&mut prepared, env, capture, c, isolation, run_id, guest);
    // The caller has its result and need not wait for the teardown: the
    // instance (its pool slot is reset as it goes) and then the workspace
    // directory are dropped on the reaper thread, in that order. A run that
    // finds no free slot meanwhile waits for the reaper
    // (`instantiate_for_run`).
    let Prepared {
        store, workspace, ..
    } = prepared;
    crate::reaper::reap_instance((store, workspace));
    r.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
    r.usage.instantiate_ms = instantiate_ms;
    r
}

/// Collects outputs, artifacts and usage into a result, leaving the
/// instance alive (sessions call this after every evaluation). Outputs are
/// taken: the next evaluation starts with empty ones.
pub(crate) fn report(
    prepared: &mut Prepared,
    env: &Envelope,
    capture: &[String],
    mut c: Classified,
    isolation: Isolation,
    run_id: String,
    guest: &Guest,
) -> RunResult {
    // `get_fuel` fails exactly when the engine does not count fuel. After a
    // wall-time interrupt the figure is not known: compiled wasm keeps its
    // fuel counter in a register that the interrupt does not write back, so
    // the store's figure would be far too low. Report nothing rather than a
    // wrong number.
    let fuel = if c.status == Status::Timeout {
        None
    } else {
        prepared.store.get_fuel().ok().map(|left| {
            // With what the shell's programs spent since the last tick.
            let debt = prepared.store.data().fuel_debt;
            env.fuel
                .saturating_sub(left)
                .saturating_add(debt)
                .min(env.fuel)
        })
    };
    // The workspace may have grown past its cap between two checks; the
    // final measurement decides.
    let ws = prepared.workspace.usage();
    if (ws.bytes > env.workspace_bytes || ws.entries > env.workspace_entries)
        && c.status != Status::Timeout
    {
        c.status = Status::DiskExhausted;
        c.error = Some(ErrorInfo {
            code: "disk_exhausted".into(),
            message: "the workspace passed its byte or entry limit".into(),
        });
    }
    let mut result_truncated = false;
    if let Some(v) = &mut c.result
        && v.len() as u64 > env.result_bytes
    {
        let mut end = usize::try_from(env.result_bytes)
            .unwrap_or(usize::MAX)
            .min(v.len());
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        v.truncate(end);
        result_truncated = true;
        if c.status == Status::Ok {
            c.status = Status::OutputTruncated;
            c.error = Some(ErrorInfo {
                code: "output_truncated".into(),
                message: format!("the result passed its cap of {} bytes", env.result_bytes),
            });
        }
    }
    // An empty `out/` (the usual case) was seen by the walk above: no
    // second walk for artifacts.
    let collected = if ws.out_empty {
        Default::default()
    } else {
        prepared.workspace.collect_artifacts(env)
    };
    let state = prepared.store.data();
    let calls = state.broker.trace();
    let memory_peak_bytes = state.limiter.memory_peak();
    let mut r = RunResult::refused(run_id, isolation, "", "");
    r.status = c.status;
    r.exit_code = c.exit_code;
    r.result = c.result;
    r.result_truncated = result_truncated;
    r.error = c.error;
    r.set_output(
        prepared.stdout.take(env.stdout_bytes),
        prepared.stderr.take(env.stderr_bytes),
    );
    r.artifacts = collected.artifacts;
    r.artifacts_truncated = collected.truncated;
    r.artifacts_refused = collected.refused;
    if !capture.is_empty() {
        let named = prepared.workspace.collect_named(capture, env);
        r.captured = named.artifacts;
        r.artifacts_truncated |= named.truncated;
        r.artifacts_refused.extend(named.refused);
    }
    r.guest = Some(guest.identity().to_owned());
    r.calls = calls;
    r.usage = Usage {
        wall_ms: 0.0,
        instantiate_ms: 0.0,
        fuel,
        memory_peak_bytes,
        worker_wait_ms: None,
    };
    r
}
