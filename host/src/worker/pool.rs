//! The supervisor's side of the worker split: caller-affine pools of
//! workers, each started inside a wrapper and smoke-tested before it is
//! offered.
//!
//! A worker is **unbound** while it waits warm, is **bound** to a caller by
//! that caller's first run on it, and from then on serves only that
//! caller's runs — one at a time, each in a fresh instance with a fresh
//! workspace — until it is **retired**. It is never handed back unbound and
//! never serves a second caller. It is retired after a run that trapped or
//! exhausted memory or disk, after a lost, late or lying frame, when its
//! boot changed, after `max_runs` runs, at `max_age`, and after `idle`
//! without a run. Every result says which worker ran it, for whom and how
//! many runs it had served before ([`crate::tier::WorkerUse`]).
//!
//! Caps: `max` workers alive in all, `max_per_caller` held by one caller;
//! when the pool is full, a caller without a worker retires the least
//! recently used idle worker of another caller rather than be refused, so
//! one busy caller cannot hold every worker.
//!
//! A worker that dies, hangs past the run's wall time, or sends a frame that
//! is malformed, oversized or out of turn fails only its own run, with
//! status `worker_lost`; the pool starts another. Nothing a worker reports
//! is trusted: its result's isolation, guest, run id and CallTrace are
//! replaced with the supervisor's, and its outputs are re-capped.
//!
//! This module holds the pool's settings, its state and its start (the
//! smoke test that decides the evidence). One concept per child:
//!
//! * `process`: one worker process — spawned in its wrapper, the
//!   handshake, its frames, and its whole sandbox killed when dropped.
//! * `admission`: the caps — workers alive, each caller's share — and the
//!   order in which a caller is given a worker.
//! * `affinity`: a tracked worker, its binding to one caller, and the idle
//!   queues it returns to.
//! * `lifecycle`: starting a worker (smoke test included), the warm set's
//!   refill and the sweeper that retires expired workers.
//! * `images`: the guest images written for workers and which worker can
//!   load which.
//! * `run`: one run on a bound worker, and the re-capping of what the
//!   worker reported.
//! * `session`: sessions held in a dedicated worker ([`WorkerSession`]).

use crate::guest::Guest;
use crate::runtime::Runtime;
use crate::tier::{Evidence, EvidenceCheck, Isolation};
use crate::worker::observe::{Expectations, judge};
use crate::worker::protocol::{FrameError, GuestImage, ImageKind, PROTOCOL_VERSION, WorkerEngine};
use crate::wrapper::{Launch, Wrapper, WrapperError};
use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod admission;
mod affinity;
mod images;
mod lifecycle;
mod process;
mod run;
mod session;
#[cfg(test)]
mod tests;

use admission::Counts;
use affinity::{Pooled, reusable_after};
use images::{create_image_dir, write_image};
pub use process::Worker;
use process::clip;
use run::{origins_of, sanitize};
pub use session::WorkerSession;

/// How long a worker may take to start and load its guests.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Extra time past the run's wall time before a silent worker is killed,
/// unless its wrapper says otherwise ([`Wrapper::hang_grace`]).
pub use crate::wrapper::HANG_GRACE;

/// Pool settings.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// `plimsoll-worker` on the host.
    pub worker_bin: PathBuf,
    /// Where guest images are written for workers (mode 0755).
    pub image_dir: PathBuf,
    /// Idle workers kept warm (`PLIMSOLL_WORKER_POOL`).
    pub warm: usize,
    /// Workers alive at once, busy or idle (`PLIMSOLL_WORKER_MAX`); past it
    /// runs are refused with `worker_pool_exhausted`.
    pub max: usize,
    /// The worker's tmpfs size.
    pub workspace_bytes: u64,
    /// Workers one caller may hold, busy or idle.
    pub max_per_caller: usize,
    /// Runs one worker may serve.
    pub max_runs: u32,
    /// A worker this old is retired after its current run.
    pub max_age: Duration,
    /// A bound worker idle this long is retired.
    pub idle: Duration,
}

/// Why a worker could not be used.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Wrapper(#[from] WrapperError),
    #[error("could not start the worker: {0}")]
    Spawn(String),
    #[error("the worker did not start within {0:?}")]
    StartTimeout(Duration),
    #[error("the worker answered protocol {found}, not {PROTOCOL_VERSION}")]
    Version { found: u32 },
    #[error("the worker failed: {0}")]
    Failed(String),
    #[error("the worker broke the protocol: {0}")]
    Protocol(String),
    #[error("the worker hung past the run's wall time")]
    Hung,
}

impl From<FrameError> for WorkerError {
    fn from(e: FrameError) -> Self {
        WorkerError::Protocol(e.to_string())
    }
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A caller-affine pool of workers behind one wrapper.
pub struct Pool {
    wrapper: Arc<dyn Wrapper>,
    runtime: Runtime,
    config: PoolConfig,
    launch: Launch,
    engine: WorkerEngine,
    expectations: Expectations,
    /// The kernel the start-up smoke test saw; a worker that reports
    /// another is not offered.
    kernel: String,
    /// Warm workers bound to no one yet.
    unbound: Mutex<VecDeque<Pooled>>,
    /// Idle workers bound to each caller, least recently used first.
    bound: Mutex<HashMap<String, VecDeque<Pooled>>>,
    counts: Arc<Counts>,
    /// Workers being started for the warm set.
    starting: AtomicUsize,
    /// The runtime that owns every worker's pipes and child handles.
    handle: tokio::runtime::Handle,
    images: Mutex<HashMap<String, GuestImage>>,
    isolation: Isolation,
    verified: bool,
}

impl Pool {
    /// Starts a pool: writes the images of `guests`, starts one worker,
    /// runs the smoke test in it, and judges the evidence. A pool whose
    /// smoke test failed refuses every run.
    pub async fn start(
        wrapper: Arc<dyn Wrapper>,
        runtime: Runtime,
        config: PoolConfig,
        uid: u32,
        provider: &str,
        guests: &[Guest],
    ) -> Result<Arc<Pool>, WorkerError> {
        create_image_dir(&config.image_dir)
            .map_err(|e| WorkerError::Spawn(format!("image dir: {e}")))?;
        let libs = crate::wrapper::shared_libraries(&config.worker_bin)?;
        let launch = Launch {
            worker_bin: config.worker_bin.clone(),
            libs,
            image_dir: config.image_dir.clone(),
            images: Vec::new(),
            bundles: Vec::new(),
            workspace_bytes: config.workspace_bytes,
            uid,
        };
        let opts = runtime.engine().options();
        let engine = WorkerEngine {
            fuel: opts.fuel,
            max_memory_bytes: opts.max_memory_bytes,
            max_wasm_stack: opts.max_wasm_stack as u64,
            cpu: opts.cpu,
            // A worker that serves its caller again makes the next
            // instance between runs, as the in-process engine does.
            warm_instances: if config.max_runs > 1 {
                opts.warm_instances.min(4)
            } else {
                0
            },
        };
        let mut images = HashMap::new();
        for g in guests {
            let img = write_image(&runtime, g, &config.image_dir)
                .map_err(|e| WorkerError::Spawn(format!("guest image: {e}")))?;
            images.insert(g.identity().to_owned(), img);
        }
        let mut probe = Worker::spawn(
            &wrapper,
            &launch,
            engine,
            images
                .values()
                .filter(|i| i.kind == ImageKind::Component)
                .cloned()
                .collect(),
        )
        .await?;
        let observation = probe.observe().await?;
        drop(probe);
        let expectations = wrapper.expectations(uid);
        let mut checks = vec![EvidenceCheck {
            name: "wrapper".into(),
            passed: true,
            observed: wrapper.version(),
        }];
        checks.extend(judge(&observation, &expectations));
        checks.push(crate::worker::observe::judge_cpu(&observation, opts.cpu));
        let verified = checks.iter().all(|c| c.passed);
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect();
        let reuse = if config.max_runs <= 1 {
            "a fresh worker for every run".to_owned()
        } else {
            format!(
                "a worker serves one caller only, at most {} runs, each in a fresh instance",
                config.max_runs
            )
        };
        let isolation = Isolation {
            tier: if verified {
                wrapper.tier()
            } else {
                crate::tier::Tier::Process
            },
            provider: provider.to_owned(),
            wrapper: Some(wrapper.name().to_owned()),
            evidence: Evidence {
                observed_at_unix: now_unix(),
                summary: if verified {
                    format!(
                        "smoke test passed inside {} (this daemon's observation, not an attestation) and runs again in every new worker; {reuse}",
                        wrapper.version()
                    )
                } else {
                    format!(
                        "smoke test FAILED inside {} ({}): every run is refused",
                        wrapper.version(),
                        failed.join(", ")
                    )
                },
                checks,
                worker: None,
            },
        };
        let pool = Arc::new(Pool {
            wrapper,
            runtime,
            config,
            launch,
            engine,
            expectations,
            kernel: observation.kernel.clone(),
            unbound: Mutex::new(VecDeque::new()),
            bound: Mutex::new(HashMap::new()),
            counts: Arc::new(Counts::default()),
            starting: AtomicUsize::new(0),
            handle: tokio::runtime::Handle::current(),
            images: Mutex::new(images),
            isolation,
            verified,
        });
        if verified {
            Pool::refill(&pool);
            Pool::start_sweeper(&pool);
        }
        Ok(pool)
    }

    /// The isolation runs get (the evidence of the start-up smoke test).
    pub fn isolation(&self) -> Isolation {
        self.isolation.clone()
    }

    /// Whether the smoke test passed.
    pub fn verified(&self) -> bool {
        self.verified
    }

    /// Warm workers bound to no caller yet.
    pub fn idle(&self) -> usize {
        self.unbound.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Idle workers bound to `caller`.
    pub fn idle_for(&self, caller: &str) -> usize {
        self.bound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(caller)
            .map_or(0, VecDeque::len)
    }

    /// The age at which a worker is retired.
    pub fn max_age(&self) -> Duration {
        self.config.max_age
    }

    /// Workers alive: warm, bound, busy or starting.
    pub fn alive(&self) -> usize {
        self.counts.alive.load(Ordering::Acquire)
    }

    /// Workers bound to `caller`, busy or idle.
    pub fn held_by(&self, caller: &str) -> usize {
        self.counts.held_by(caller)
    }
}
