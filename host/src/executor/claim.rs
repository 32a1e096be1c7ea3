//! Pre-instantiated instances ([`crate::warm`]) from the executor's side:
//! the placeholder store one is made in, how the runtime makes one, and a
//! run's claim on one.
//!
//! Guarantees: a placeholder store has no workspace, no input, output to
//! nowhere, no grants and only [`crate::warm::PLACEHOLDER_FUEL`]; an
//! instance whose empty evaluation failed, or that holds files or host
//! resources after it, is never offered; a claiming run's state replaces
//! the placeholder's whole — only the memory the instance already holds
//! carries over, counted against the run's own limit, and the fuel its
//! start-up spent is taken from the run's.

use super::store::{Prepared, new_store, run_state};
use crate::broker::RunBroker;
use crate::engine::SandboxEngine;
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::guest::{Guest, Live, instantiate};
use crate::limiter::RunLimiter;
use crate::runtime::Runtime;
use crate::state::RunState;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::Store;
use wasmtime_wasi::WasiCtxBuilder;

/// Fuel a pre-instantiated instance may spend on its start-up.
/// The store of a pre-instantiated instance ([`crate::warm`]), before any
/// request claims it: no workspace, no input, output to nowhere, no grants,
/// and only [`crate::warm::PLACEHOLDER_FUEL`] for the component's start-up. Tables and
/// instances are limited as `limits` says; memory is not limited here: the
/// claiming request's limit is checked against what the instance holds.
pub(crate) fn placeholder_store(
    engine: &SandboxEngine,
    process_broker: &Arc<crate::broker::Broker>,
    limits: crate::warm::PlaceholderLimits,
) -> Store<RunState> {
    let env = Envelope::default();
    let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
    let broker = RunBroker::new(process_broker.clone(), GrantSet::empty(), &env, deadline);
    let mut wasi = WasiCtxBuilder::new();
    wasi.allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }));
    let state = run_state(
        wasi.build(),
        broker,
        RunLimiter::new(u64::MAX, limits.table_elements, limits.instances),
        &env,
        deadline,
        None,
    );
    new_store(engine, state, crate::warm::PLACEHOLDER_FUEL)
}

/// The runtime makes the warm pool's instances: a placeholder store, the
/// instance, its empty evaluation (see [`crate::warm`]).
impl crate::warm::Maker for crate::runtime::RuntimeInner {
    fn make(
        &self,
        guest: &Guest,
        limits: crate::warm::PlaceholderLimits,
        tokio: &tokio::runtime::Runtime,
    ) -> Option<(Store<RunState>, Live)> {
        let mut store = placeholder_store(&self.engine, &self.broker, limits);
        let made = tokio.block_on(async {
            let live = instantiate(guest, &mut store).await?;
            // The empty evaluation: an interpreter's first call into a
            // fresh instance faults in the pages its call path uses
            // (about 1 ms of a Python run here); doing it now takes that
            // off the claiming run too. It runs no caller's code and must
            // leave nothing behind; an instance whose interpreter reports
            // an error for it is not used.
            let empty = match &live {
                Live::Interpreter(i) => Some(i.api.call_eval(&mut store, "").await?),
                Live::Shell(sh) => Some(sh.call_eval(&mut store, "").await?),
                Live::Core(c) => Some(c.eval(&mut store, "").await?),
                Live::Agent(_) => None,
            };
            if empty.is_some_and(|r| r.is_err()) {
                return Err(wasmtime::Error::msg("the empty evaluation failed"));
            }
            if crate::scientific::CoreLive::holds_files(&store) {
                return Err(wasmtime::Error::msg("the instance holds files"));
            }
            // The claiming run's state replaces the placeholder's whole,
            // resource table included: an instance still holding a WASI
            // resource (a handle it might have cached) is not used.
            if !store.data().table.is_empty() {
                return Err(wasmtime::Error::msg("the instance holds host resources"));
            }
            Ok::<_, wasmtime::Error>(live)
        });
        made.ok().map(|live| (store, live))
    }
}

/// Moves the run `prepared` was made for into a pre-instantiated instance
/// of `guest`, if one is ready and fits `env`; returns it, live. The run's
/// state (workspace, WASI context, broker, deadline, limits) replaces the
/// placeholder's whole; only the memory the instance already holds carries
/// over, counted against the run's own limit.
pub(crate) fn claim_warm(
    rt: &Runtime,
    guest: &Guest,
    env: &Envelope,
    prepared: &mut Prepared,
) -> Option<Live> {
    let warm = rt.warm().take(guest, env)?;
    let crate::warm::WarmInstance {
        mut store,
        live,
        fuel_used,
        ..
    } = warm;
    std::mem::swap(prepared.store.data_mut(), store.data_mut());
    // `prepared.store` (never instantiated) now holds the placeholder.
    let placeholder = prepared.store.data().limiter.clone();
    store.data_mut().limiter.continue_from(&placeholder);
    crate::guest::adopt(guest, &mut store);
    if rt.engine().options().fuel {
        // Setting fuel cannot fail when the engine counts fuel.
        let _ = store.set_fuel(env.fuel.saturating_sub(fuel_used));
    }
    store.set_epoch_deadline(1);
    prepared.store = store;
    rt.refill_warm(guest);
    Some(live)
}
