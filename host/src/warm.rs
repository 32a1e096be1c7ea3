//! Pre-instantiated interpreter instances.
//!
//! Instantiating an interpreter component, and its first call, are most of
//! what a fresh run of it costs: CPython's component links a dozen core
//! modules through a shared function table of thousands of entries, which
//! wasmtime fills on every instantiation (about 1.6–1.9 ms of a ~4.5 ms
//! Python `1+1` here), and the first call faults in the copy-on-write
//! pages of the interpreter's call path (about 1 ms more; see
//! docs/benchmarks.md). None of that depends on the request, so a
//! background thread does it ahead of time and a run claims the result.
//!
//! What this does not change: every run still gets an instance no other
//! run has touched. A warm instance has been instantiated and asked to
//! evaluate the empty cell, which the interpreters define to change
//! nothing (Python runs a throwaway expression in a throwaway namespace
//! and reseeds `random` from the instance's own entropy; no cell is
//! counted, no per-run set-up done; `guests/python/README.md`); the only
//! other guest code that ran is the component's own start-up, which every
//! instance runs. All of it ran under a placeholder state with no
//! workspace, no input, no grants and no WASI capabilities. An instance
//! whose empty evaluation fails, or that still holds a host resource
//! afterwards, is thrown away. The claiming run's state replaces the
//! placeholder whole before the guest is called again
//! (`executor::claim_warm`), and the fuel spent so far is charged to that
//! run. The total work per run is the same; it moves off the caller's
//! critical path onto an idle core (only when no run is in flight, see
//! [`QUIET`]), so this lowers latency, not CPU per run.
//!
//! Bounded: at most `EngineOptions::warm_instances` per guest, one
//! background thread per runtime, and refill requests beyond what is
//! queued are dropped. Each warm instance holds one pool slot; a refill
//! that finds no free slot gives up until the next run ends.

use crate::envelope::Envelope;
use crate::guest::Live;
use crate::guest::{Guest, GuestKind};
use crate::state::RunState;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use wasmtime::Store;

/// Refill requests that may wait at once; more are dropped (the pool is
/// refilled to its depth on each request anyway).
const REFILL_QUEUE: usize = 16;

/// How long no run may have been in flight before the background thread
/// instantiates. Making an instance while a run executes slows that run
/// down by more than it saves the next one (both fault pages into one
/// process's memory map, and every page-table change then interrupts the
/// other core: measured back to back, Python `1+1` p50 2.7 → 3.3 ms), so
/// the thread waits for a quiet moment. Callers that pause between runs
/// (an agent loop) find an instance ready; back-to-back callers and busy
/// hosts simply instantiate as before.
const QUIET: Duration = Duration::from_millis(2);

/// Fuel a pre-instantiated instance may spend on its start-up.
pub(crate) const PLACEHOLDER_FUEL: u64 = 100_000_000;

/// What makes a pre-instantiated instance: the runtime, seen through this
/// seam, so that the pool (which the runtime holds) needs no handle of the
/// runtime's own type. The background thread holds it weakly.
pub(crate) trait Maker: Send + Sync {
    /// Instantiates `guest` in a placeholder store made under `limits` and
    /// runs its empty evaluation, on `tokio`; `None` when that fails (no
    /// free slot, a guest that cannot start without running code).
    fn make(
        &self,
        guest: &Guest,
        limits: PlaceholderLimits,
        tokio: &tokio::runtime::Runtime,
    ) -> Option<(Store<RunState>, Live)>;
}

/// An instantiated guest nobody has called yet.
pub(crate) struct WarmInstance {
    pub(crate) store: Store<RunState>,
    pub(crate) live: Live,
    /// Fuel the instantiation consumed (its start functions), charged to
    /// the run that claims it as it would have been had the run
    /// instantiated for itself.
    pub(crate) fuel_used: u64,
    /// The table and instance limits it was made under.
    made_under: PlaceholderLimits,
}

/// The table and instance limits a pre-instantiated instance is made
/// under: the operator's envelope's (the most any request gets), so that
/// every request that does not lower them can claim it. A request that
/// lowers either would have been refused something the instance may
/// already have, and instantiates for itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlaceholderLimits {
    pub(crate) table_elements: u64,
    pub(crate) instances: u64,
}

impl PlaceholderLimits {
    fn of(env: &Envelope) -> Self {
        PlaceholderLimits {
            table_elements: env.table_elements,
            instances: env.instances,
        }
    }

    /// Whether a run under `env` may use an instance made under these.
    fn allow(&self, env: &Envelope) -> bool {
        env.table_elements >= self.table_elements && env.instances >= self.instances
    }
}

/// The ready instances of one runtime, and the thread that makes them.
pub(crate) struct WarmPool {
    depth: usize,
    ready: Arc<Mutex<HashMap<String, Vec<WarmInstance>>>>,
    /// Held by the background thread while it makes an instance (and so
    /// holds a pool slot that is not in `ready` yet).
    making: Arc<Mutex<()>>,
    /// Set when a run needed the slots: no new instance until the next
    /// refill request, which comes after a run.
    suspended: Arc<AtomicBool>,
    /// Runs in flight, and when the last one started or ended.
    activity: Arc<Activity>,
    /// Started on the first refill request (`None` before, or when off).
    refill: Mutex<Option<SyncSender<Guest>>>,
    claimed: AtomicU64,
    /// What the next instance is made under; the defaults until the
    /// sandbox sets its operator's envelope ([`WarmPool::make_under`]).
    limits: Arc<Mutex<PlaceholderLimits>>,
}

impl WarmPool {
    /// A pool keeping `depth` instances per interpreter guest (0: off).
    pub(crate) fn new(depth: u32) -> Self {
        WarmPool {
            depth: depth as usize,
            ready: Arc::new(Mutex::new(HashMap::new())),
            making: Arc::new(Mutex::new(())),
            suspended: Arc::new(AtomicBool::new(false)),
            activity: Arc::new(Activity::default()),
            refill: Mutex::new(None),
            claimed: AtomicU64::new(0),
            limits: Arc::new(Mutex::new(PlaceholderLimits::of(&Envelope::default()))),
        }
    }

    /// Makes instances from now on under `operator`'s table and instance
    /// limits (see [`PlaceholderLimits`]). The sandbox calls this with its
    /// envelope; without it they are made under the defaults.
    pub(crate) fn make_under(&self, operator: &Envelope) {
        *lock(&self.limits) = PlaceholderLimits::of(operator);
    }

    /// Takes a ready instance of `guest` that a run under `env` may use:
    /// one whose instantiation fits `env`'s limits. `None` means
    /// instantiate as usual.
    pub(crate) fn take(&self, guest: &Guest, env: &Envelope) -> Option<WarmInstance> {
        if self.depth == 0 || guest.kind() != GuestKind::Interpreter {
            return None;
        }
        let mut ready = lock(&self.ready);
        let list = ready.get_mut(guest.identity())?;
        let i = list.iter().position(|w| {
            // What the instance holds beyond its guest's own base (the
            // scientific guest's snapshot heap) counts against the run.
            let limiter = &w.store.data().limiter;
            w.made_under.allow(env)
                && limiter.memory_total().saturating_sub(limiter.base()) <= env.memory_bytes
        })?;
        let w = list.swap_remove(i);
        drop(ready);
        self.claimed.fetch_add(1, Ordering::Relaxed);
        Some(w)
    }

    /// Asks the background thread to bring `guest`'s ready instances up to
    /// the pool's depth. Never blocks.
    pub(crate) fn refill(&self, maker: Weak<dyn Maker>, guest: &Guest) {
        if self.depth == 0 || guest.kind() != GuestKind::Interpreter {
            return;
        }
        self.suspended.store(false, Ordering::Release);
        let mut tx = lock(&self.refill);
        if tx.is_none() {
            let (send, recv) = std::sync::mpsc::sync_channel(REFILL_QUEUE);
            let weak = maker;
            let shared = Shared {
                limits: self.limits.clone(),
                ready: self.ready.clone(),
                making: self.making.clone(),
                suspended: self.suspended.clone(),
                activity: self.activity.clone(),
                depth: self.depth,
            };
            let spawned = std::thread::Builder::new()
                .name("plimsoll-warm".into())
                .spawn(move || refill_loop(weak, shared, recv));
            if spawned.is_err() {
                // No thread, no warm instances: runs instantiate as usual.
                return;
            }
            *tx = Some(send);
        }
        if let Some(send) = tx.as_ref()
            && let Err(TrySendError::Disconnected(_)) = send.try_send(guest.clone())
        {
            *tx = None;
        }
    }

    /// Marks a run (or session start) in flight until the guard drops;
    /// the background thread waits for none to be.
    pub(crate) fn busy(&self) -> BusyGuard {
        self.activity.in_flight.fetch_add(1, Ordering::AcqRel);
        self.activity.touch();
        BusyGuard {
            activity: self.activity.clone(),
        }
    }

    /// How many runs have used a warm instance.
    pub(crate) fn claimed(&self) -> u64 {
        self.claimed.load(Ordering::Relaxed)
    }

    /// Ready instances of all guests.
    pub(crate) fn ready(&self) -> usize {
        lock(&self.ready).values().map(Vec::len).sum()
    }

    /// Drops every ready instance, freeing their pool slots (a run found
    /// none free), and makes no more until the next refill request. Waits
    /// for an instance being made (a few milliseconds), so that its slot
    /// is freed too. Returns how many were dropped.
    pub(crate) fn release_all(&self) -> usize {
        let _making = lock(&self.making);
        // Set while holding `making`: the thread checks it after taking
        // `making`, so it cannot start another instance in between.
        self.suspended.store(true, Ordering::Release);
        let dropped: Vec<WarmInstance> = lock(&self.ready)
            .drain()
            .flat_map(|(_, list)| list)
            .collect();
        dropped.len()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Runs in flight and the time of the last change.
#[derive(Default)]
struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Option<Instant>>,
}

impl Activity {
    fn touch(&self) {
        *lock(&self.last) = Some(Instant::now());
    }

    /// No run in flight, and none started or ended within [`QUIET`].
    fn quiet(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
            && lock(&self.last).is_none_or(|t| t.elapsed() >= QUIET)
    }
}

/// Keeps a run counted as in flight ([`WarmPool::busy`]).
pub(crate) struct BusyGuard {
    activity: Arc<Activity>,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.activity.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.activity.touch();
    }
}

/// What the background thread shares with its pool.
struct Shared {
    limits: Arc<Mutex<PlaceholderLimits>>,
    ready: Arc<Mutex<HashMap<String, Vec<WarmInstance>>>>,
    making: Arc<Mutex<()>>,
    suspended: Arc<AtomicBool>,
    activity: Arc<Activity>,
    depth: usize,
}

/// The background thread: instantiates until each requested guest has
/// `depth` ready instances. Ends when the runtime is gone (its pool, and so
/// the sender, dropped).
/// Attempts after a failed instantiation before a refill request is
/// dropped (20, 40, … ms apart: about 0.3 s in all).
const REFILL_RETRIES: u32 = 4;

fn refill_loop(runtime: Weak<dyn Maker>, shared: Shared, requests: Receiver<Guest>) {
    let Shared {
        limits,
        ready,
        making,
        suspended,
        activity,
        depth,
    } = shared;
    let Ok(tokio) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    while let Ok(guest) = requests.recv() {
        let mut failures = 0u32;
        loop {
            // Wait for a quiet moment (see QUIET); give up on this request
            // if the runtime goes away meanwhile.
            while !activity.quiet() {
                if runtime.strong_count() == 0 {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let making_now = lock(&making);
            let have = lock(&ready).get(guest.identity()).map_or(0, Vec::len);
            if have >= depth || suspended.load(Ordering::Acquire) {
                break;
            }
            // Hold the runtime only while making one instance, so that
            // dropping the last handle elsewhere ends this thread.
            let Some(maker) = runtime.upgrade() else {
                return;
            };
            let made_under = *lock(&limits);
            let made = maker.make(&guest, made_under, &tokio);
            drop(maker);
            match made {
                Some((store, live)) => {
                    let fuel_used = store
                        .get_fuel()
                        .map_or(0, |left| PLACEHOLDER_FUEL.saturating_sub(left));
                    lock(&ready)
                        .entry(guest.identity().to_owned())
                        .or_default()
                        .push(WarmInstance {
                            store,
                            live,
                            fuel_used,
                            made_under,
                        })
                }
                // No free slot yet (the run that asked may still be
                // handing its own back through the reaper), or the guest
                // cannot start without running code: try a few more
                // times, a little later each, then leave it to the runs.
                None if failures < REFILL_RETRIES => {
                    failures += 1;
                    // Not while holding `making`: a run that found no
                    // free slot waits on it in `release_all`.
                    drop(making_now);
                    std::thread::sleep(Duration::from_millis(20 * u64::from(failures)));
                }
                None => break,
            }
        }
    }
}
