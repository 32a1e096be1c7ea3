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

use crate::broker::RunBroker;
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::run::{ErrorInfo, RunRequest, RunResult, Status};
use crate::runtime::Runtime;
use crate::tier::{Evidence, EvidenceCheck, Isolation, WorkerUse};
use crate::worker::observe::{Expectations, Observation, judge};
use crate::worker::protocol::{
    FrameError, FromWorker, GrantOrigin, GuestImage, ImageKind, PROTOCOL_VERSION, ToWorker,
    WorkerEngine, read_async, write_async,
};
use crate::wrapper::{Launch, Wrapper, WrapperError};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStdin, ChildStdout};

mod session;
pub use session::WorkerSession;

/// How long a worker may take to start and load its guests.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Extra time past the run's wall time before a silent worker is killed,
/// unless its wrapper says otherwise ([`Wrapper::hang_grace`]).
pub use crate::wrapper::HANG_GRACE;
/// Most core images a worker is remembered to hold loaded (the worker
/// keeps at most 32 loaded guests, components included).
const MAX_REMEMBERED_CORES: usize = 16;

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

/// One started worker.
pub struct Worker {
    child: Child,
    /// The guest images it was started with.
    images: Vec<String>,
    stdin: ChildStdin,
    stdout: ChildStdout,
    cleanup: Option<Box<dyn FnOnce() + Send>>,
    /// pidfds of the processes the boundary started under the child (for
    /// bubblewrap: the pid namespace's init and the worker), taken when
    /// the worker said it was ready.
    sandbox: Vec<std::os::fd::OwnedFd>,
    /// The boot id its smoke test saw.
    boot_id: String,
    /// How long past a wall time it is waited for ([`Wrapper::hang_grace`]).
    grace: Duration,
    /// The core images it has loaded (lazily, on a first run): a run of
    /// any other core image may spend up to [`START_TIMEOUT`] loading it
    /// before its wall time starts.
    cores: std::collections::HashSet<String>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The whole sandbox ends with the worker: the namespace's init
        // first (its death kills every process of its pid namespace,
        // stopped or not), then the outer process. A pidfd names exactly
        // the process it was opened for, so a reused pid is never hit.
        for fd in &self.sandbox {
            use std::os::fd::AsRawFd;
            // SAFETY: pidfd_send_signal on a pidfd this worker owns.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                );
            }
        }
        let _ = self.child.start_kill();
        if let Some(c) = self.cleanup.take() {
            c();
        }
    }
}

/// Most descendants of one worker's outer process that are tracked.
const MAX_SANDBOX_PROCESSES: usize = 16;

/// pidfds of the descendants of `pid` (children first), from
/// `/proc/PID/task/*/children`, at most [`MAX_SANDBOX_PROCESSES`].
fn descendants(pid: u32) -> Vec<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([pid]);
    while let Some(p) = queue.pop_front() {
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
            .flatten();
        for t in tasks {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if out.len() >= MAX_SANDBOX_PROCESSES {
                    return out;
                }
                // SAFETY: pidfd_open has no memory arguments.
                let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, c, 0u32) };
                if let Ok(fd) = i32::try_from(fd)
                    && fd >= 0
                {
                    // SAFETY: a fresh descriptor this process owns.
                    out.push(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
                    queue.push_back(c);
                }
            }
        }
    }
    out
}

impl Worker {
    /// The worker's process id (for tests that kill it).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    async fn spawn(
        wrapper: &Arc<dyn Wrapper>,
        launch: &Launch,
        engine: WorkerEngine,
        guests: Vec<GuestImage>,
    ) -> Result<Worker, WorkerError> {
        // The boundary shows the worker exactly the components it loads.
        let mut l = launch.clone();
        l.images = guests
            .iter()
            .filter(|g| g.kind == ImageKind::Component)
            .filter_map(|g| g.path.strip_prefix("/guests/"))
            .map(str::to_owned)
            .collect();
        // Preparing may write a VM's initramfs (hundreds of MB with a core
        // image): off the threads that carry every worker's frames.
        let w = wrapper.clone();
        let prepared = tokio::task::spawn_blocking(move || w.prepare(&l))
            .await
            .map_err(|_| WorkerError::Spawn("the wrapper's preparation did not finish".into()))??;
        let diagnostics = prepared.diagnostics.clone();
        let mut command = prepared.command;
        let mut child = command
            .spawn()
            .map_err(|e| WorkerError::Spawn(e.to_string()))?;
        drop(prepared.keep);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(WorkerError::Spawn("no pipes to the worker".into()));
        };
        let mut w = Worker {
            child,
            images: guests.iter().map(|g| g.path.clone()).collect(),
            stdin,
            stdout,
            cleanup: prepared.cleanup,
            sandbox: Vec::new(),
            boot_id: String::new(),
            grace: wrapper.hang_grace(),
            cores: std::collections::HashSet::new(),
        };
        match w.handshake(engine, guests).await {
            Ok(()) => {
                if let Some(pid) = w.child.id() {
                    w.sandbox = descendants(pid);
                }
                Ok(w)
            }
            Err(e) => {
                // Quote the wrapper tool's own words before the worker (and
                // with it the diagnostics file) is cleaned up.
                let said = diagnostics
                    .map(|log| crate::wrapper::diagnostics_tail(&log, 300))
                    .unwrap_or_default();
                drop(w);
                if said.is_empty() {
                    Err(e)
                } else {
                    Err(WorkerError::Failed(format!(
                        "{e}; {} said: {said}",
                        wrapper.name()
                    )))
                }
            }
        }
    }

    async fn handshake(
        &mut self,
        engine: WorkerEngine,
        guests: Vec<GuestImage>,
    ) -> Result<(), WorkerError> {
        let w = self;
        let hello = ToWorker::Hello {
            protocol: PROTOCOL_VERSION,
            engine,
            guests,
        };
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            write_async(&mut w.stdin, &hello).await?;
            read_async::<FromWorker>(&mut w.stdout).await
        })
        .await
        .map_err(|_| WorkerError::StartTimeout(START_TIMEOUT))??;
        match ready {
            FromWorker::Ready { protocol, .. } if protocol == PROTOCOL_VERSION => Ok(()),
            FromWorker::Ready { protocol, .. } => Err(WorkerError::Version { found: protocol }),
            FromWorker::Failed { message } => Err(WorkerError::Failed(clip(&message))),
            _ => Err(WorkerError::Protocol("expected Ready".into())),
        }
    }

    async fn observe(&mut self) -> Result<Observation, WorkerError> {
        write_async(&mut self.stdin, &ToWorker::Observe).await?;
        match tokio::time::timeout(START_TIMEOUT, read_async::<FromWorker>(&mut self.stdout))
            .await
            .map_err(|_| WorkerError::Hung)??
        {
            FromWorker::Observed { observation } => Ok(observation),
            FromWorker::Failed { message } => Err(WorkerError::Failed(clip(&message))),
            _ => Err(WorkerError::Protocol("expected Observed".into())),
        }
    }

    /// Sends `first` and answers the worker's broker calls with `broker`
    /// until it sends anything else, which is returned. The worker must
    /// answer within `wall` plus its grace, plus [`START_TIMEOUT`] when
    /// `first` makes it load a core image it does not hold yet.
    async fn converse(
        &mut self,
        first: &ToWorker,
        wall: Duration,
        images: &[GuestImage],
        broker: &RunBroker,
    ) -> Result<FromWorker, WorkerError> {
        let loads = images
            .iter()
            .any(|g| g.kind == ImageKind::Core && !self.cores.contains(&g.path));
        let loading = if loads { START_TIMEOUT } else { Duration::ZERO };
        let deadline = Instant::now() + loading + wall + self.grace;
        write_async(&mut self.stdin, first).await?;
        let answer = self.answer_until(deadline, broker).await;
        if answer.is_ok() {
            // Whatever it answered, it loaded them first.
            for g in images.iter().filter(|g| g.kind == ImageKind::Core) {
                if self.cores.len() < MAX_REMEMBERED_CORES {
                    self.cores.insert(g.path.clone());
                }
            }
        }
        answer
    }

    /// [`Worker::converse`] after the first frame was sent.
    async fn answer_until(
        &mut self,
        deadline: Instant,
        broker: &RunBroker,
    ) -> Result<FromWorker, WorkerError> {
        loop {
            let frame = tokio::time::timeout_at(
                tokio::time::Instant::from_std(deadline),
                read_async::<FromWorker>(&mut self.stdout),
            )
            .await
            .map_err(|_| WorkerError::Hung)??;
            match frame {
                FromWorker::BrokerCall {
                    seq,
                    api,
                    request,
                    timeout_ms,
                } => {
                    let result = broker
                        .call_within(&api, request.into(), timeout_ms.map(Duration::from_millis))
                        .await
                        .map(Into::into)
                        .map_err(Into::into);
                    write_async(&mut self.stdin, &ToWorker::BrokerReply { seq, result }).await?;
                }
                FromWorker::Failed { message } => return Err(WorkerError::Failed(clip(&message))),
                other => return Ok(other),
            }
        }
    }

    /// Runs one request; returns the worker's result and the boot id it
    /// reported after the run. Any error leaves the worker unusable.
    #[allow(clippy::too_many_arguments)]
    async fn run(
        &mut self,
        run_id: String,
        guest: GuestImage,
        req: &RunRequest,
        env: &Envelope,
        grants: Vec<GrantOrigin>,
        broker: RunBroker,
    ) -> Result<(RunResult, String), WorkerError> {
        let images = [guest.clone()];
        let first = ToWorker::Run {
            run_id,
            guest,
            request: req.clone(),
            envelope: *env,
            grants,
        };
        match self
            .converse(
                &first,
                Duration::from_millis(env.wall_time_ms),
                &images,
                &broker,
            )
            .await?
        {
            FromWorker::Done { result, boot_id } => Ok((result, boot_id)),
            _ => Err(WorkerError::Protocol(
                "unexpected frame during a run".into(),
            )),
        }
    }
}

/// A worker's own words, bounded. Long enough for a wasmtime error chain
/// with two image paths in it, cause included (a start-up refusal must say
/// why in full).
fn clip(s: &str) -> String {
    s.chars().take(2048).collect()
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// 64 random bits, hex: a worker's id.
fn new_worker_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        // The clock and a counter, if the kernel's entropy is unavailable:
        // ids must be unique, not secret.
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        b = (t ^ N.fetch_add(1, Ordering::Relaxed).rotate_left(48)).to_be_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The pool's counts, apart from the pool itself so that a worker's guards
/// never keep the pool (and with it every other worker) alive.
#[derive(Default)]
struct Counts {
    /// Workers alive: idle, bound, busy or starting.
    alive: AtomicUsize,
    /// Workers bound to each caller, busy or idle.
    per_caller: Mutex<HashMap<String, usize>>,
}

impl Counts {
    /// Reserves one of `caller`'s `cap` workers.
    fn reserve(self: &Arc<Self>, caller: &str, cap: usize) -> Option<ShareGuard> {
        let mut m = self.per_caller.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(caller.to_owned()).or_insert(0);
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(ShareGuard {
            counts: self.clone(),
            caller: caller.to_owned(),
        })
    }

    fn held_by(&self, caller: &str) -> usize {
        self.per_caller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(caller)
            .copied()
            .unwrap_or(0)
    }
}

/// Counts a live worker until dropped.
struct AliveGuard(Arc<Counts>);
impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts a worker in its caller's share until dropped.
struct ShareGuard {
    counts: Arc<Counts>,
    caller: String,
}
impl Drop for ShareGuard {
    fn drop(&mut self) {
        let mut m = self
            .counts
            .per_caller
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.caller);
            }
        }
    }
}

/// A worker the pool tracks, with what the pool knows of it.
struct Pooled {
    worker: Worker,
    id: String,
    born: Instant,
    last_used: Instant,
    /// Runs it has served.
    runs: u32,
    _alive: AliveGuard,
    /// Its caller's share, once bound; a bound worker never loses it.
    share: Option<ShareGuard>,
}

impl Pooled {
    fn new(worker: Worker, alive: AliveGuard) -> Pooled {
        let now = Instant::now();
        Pooled {
            worker,
            id: new_worker_id(),
            born: now,
            last_used: now,
            runs: 0,
            _alive: alive,
            share: None,
        }
    }

    /// Whether it has outlived its age or its idle time.
    fn expired(&self, config: &PoolConfig, now: Instant) -> bool {
        now.duration_since(self.born) >= config.max_age
            || (self.share.is_some() && now.duration_since(self.last_used) >= config.idle)
    }
}

/// Whether a worker may serve its caller's next run after a run that ended
/// this way: not after a trap, memory or disk exhaustion, a refusal it
/// made itself, or a loss.
fn reusable_after(status: Status) -> bool {
    matches!(
        status,
        Status::Ok
            | Status::Error
            | Status::Timeout
            | Status::CpuExhausted
            | Status::OutputTruncated
    )
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

    /// The images every new worker loads: the components. A core-module
    /// guest's image (tens of megabytes of trees, hundreds of code) is
    /// loaded only by a worker that runs it: on its first run where the
    /// worker sees the live image directory, or by a worker started for it
    /// where it does not ([`Pool::with_images`]).
    fn guest_images(&self) -> Vec<GuestImage> {
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|i| i.kind == ImageKind::Component)
            .cloned()
            .collect()
    }

    /// Starts a worker and runs the smoke test in it: a worker whose
    /// checks do not all pass, or whose kernel is not the one the pool was
    /// verified with, is never offered.
    async fn launch(&self) -> Result<Worker, WorkerError> {
        self.launch_with(&[]).await
    }

    /// [`Pool::launch`], for a worker that also carries `extra`'s core
    /// images.
    async fn launch_with(&self, extra: &[GuestImage]) -> Result<Worker, WorkerError> {
        let mut images = self.guest_images();
        let mut launch = self.launch.clone();
        for i in extra {
            if i.kind == ImageKind::Core && !images.contains(i) {
                if let Some(name) = i.path.strip_prefix("/guests/") {
                    launch.bundles.push(name.to_owned());
                }
                images.push(i.clone());
            }
        }
        let mut w = Worker::spawn(&self.wrapper, &launch, self.engine, images).await?;
        let o = w.observe().await?;
        let mut failed: Vec<String> = judge(&o, &self.expectations)
            .into_iter()
            .chain([crate::worker::observe::judge_cpu(&o, self.engine.cpu)])
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect();
        if o.kernel != self.kernel {
            failed.push("kernel_changed".into());
        }
        if !failed.is_empty() {
            return Err(WorkerError::Failed(format!(
                "the smoke test failed in a new worker ({}); it was retired",
                failed.join(", ")
            )));
        }
        w.boot_id = o.boot_id;
        Ok(w)
    }

    /// Retires idle workers past their idle time or age, every second,
    /// for as long as the pool exists, and refills the warm set.
    fn start_sweeper(pool: &Arc<Pool>) {
        let weak = Arc::downgrade(pool);
        pool.handle.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(pool) = weak.upgrade() else { return };
                let retired = pool.sweep();
                let any = !retired.is_empty();
                // Killed outside every lock; their places free up here.
                drop(retired);
                // Warm workers that reached their age are replaced, so the
                // warm set does not drain away while no run comes.
                if any {
                    Pool::refill(&pool);
                }
                drop(pool);
            }
        });
    }

    /// Takes the expired workers out of the pool (the caller drops them).
    fn sweep(&self) -> Vec<Pooled> {
        let now = Instant::now();
        let mut out = Vec::new();
        let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        for q in bound.values_mut() {
            let (old, keep): (Vec<Pooled>, Vec<Pooled>) =
                q.drain(..).partition(|p| p.expired(&self.config, now));
            out.extend(old);
            q.extend(keep);
        }
        bound.retain(|_, q| !q.is_empty());
        drop(bound);
        let mut unbound = self.unbound.lock().unwrap_or_else(|p| p.into_inner());
        let (old, keep): (Vec<Pooled>, Vec<Pooled>) = unbound
            .drain(..)
            .partition(|p| p.expired(&self.config, now));
        unbound.extend(keep);
        drop(unbound);
        out.extend(old);
        out
    }

    /// Starts workers in the background until `warm` are idle or
    /// starting.
    fn refill(pool: &Arc<Pool>) {
        loop {
            let idle = pool.idle();
            let starting = pool.starting.load(Ordering::Acquire);
            if idle + starting >= pool.config.warm {
                return;
            }
            let alive = pool.counts.alive.load(Ordering::Acquire);
            if alive >= pool.config.max {
                return;
            }
            if pool
                .counts
                .alive
                .compare_exchange(alive, alive + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            let guard = AliveGuard(pool.counts.clone());
            pool.starting.fetch_add(1, Ordering::AcqRel);
            let p = pool.clone();
            pool.handle.spawn(async move {
                let started = p.launch().await;
                p.starting.fetch_sub(1, Ordering::AcqRel);
                match started {
                    Ok(w) if !p.can_run_every_image(&w) => {
                        // An image was added while it booted: retire it and
                        // start one that has every image.
                        drop(w);
                        drop(guard);
                        Pool::refill(&p);
                    }
                    Ok(w) => p
                        .unbound
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push_back(Pooled::new(w, guard)),
                    Err(e) => {
                        tracing::warn!("a {} worker failed to start: {e}", p.wrapper.name());
                        drop(guard);
                    }
                }
            });
        }
    }

    /// Whether `w` can load every image known now (always, unless the
    /// wrapper fixes a worker's images when it starts).
    fn can_run_every_image(&self, w: &Worker) -> bool {
        !self.wrapper.images_fixed_at_start()
            || self
                .images
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .values()
                .filter(|i| i.kind == ImageKind::Component)
                .all(|i| w.images.contains(&i.path))
    }

    /// `caller`'s most recently used idle worker that has not expired
    /// (expired ones found on the way are retired).
    fn take_bound(&self, caller: &str) -> Option<Pooled> {
        let now = Instant::now();
        let mut retired = Vec::new();
        let found = {
            let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
            let q = bound.get_mut(caller)?;
            let mut found = None;
            while let Some(p) = q.pop_back() {
                if p.expired(&self.config, now) {
                    retired.push(p);
                } else {
                    found = Some(p);
                    break;
                }
            }
            if q.is_empty() {
                bound.remove(caller);
            }
            found
        };
        drop(retired);
        found
    }

    /// A warm unbound worker, if there is one (and a replacement is
    /// started).
    fn take_unbound(pool: &Arc<Pool>) -> Option<Pooled> {
        let p = pool
            .unbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()?;
        Pool::refill(pool);
        Some(p)
    }

    /// Retires the least recently used idle worker bound to a caller other
    /// than `caller`, to make room. Returns whether there was one.
    fn evict_for(&self, caller: &str) -> bool {
        let victim = {
            let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
            let oldest = bound
                .iter()
                .filter(|(c, _)| c.as_str() != caller)
                .filter_map(|(c, q)| q.front().map(|p| (c.clone(), p.last_used)))
                .min_by_key(|(_, t)| *t)
                .map(|(c, _)| c);
            let Some(c) = oldest else { return false };
            let victim = bound.get_mut(&c).and_then(VecDeque::pop_front);
            if bound.get(&c).is_some_and(VecDeque::is_empty) {
                bound.remove(&c);
            }
            victim
        };
        victim.is_some()
    }

    fn exhausted(&self, message: String) -> ErrorInfo {
        ErrorInfo {
            code: "worker_pool_exhausted".into(),
            message,
        }
    }

    /// A worker bound to `caller`: its own idle one, else a warm one bound
    /// now, else a new one, within the caps.
    async fn take(pool: &Arc<Pool>, caller: &str) -> Result<Pooled, ErrorInfo> {
        if let Some(p) = pool.take_bound(caller) {
            return Ok(p);
        }
        let Some(share) = pool.counts.reserve(caller, pool.config.max_per_caller) else {
            return Err(pool.exhausted(format!(
                "this caller already holds its share of {} {} workers (of {} in all); try again shortly",
                pool.config.max_per_caller,
                pool.wrapper.name(),
                pool.config.max
            )));
        };
        if let Some(mut p) = Pool::take_unbound(pool) {
            p.share = Some(share);
            return Ok(p);
        }
        // None warm. If one is starting and the cap is reached, wait for
        // it rather than refuse (it is milliseconds away).
        let waited = Instant::now();
        while pool.alive() >= pool.config.max
            && pool.starting.load(Ordering::Acquire) > 0
            && waited.elapsed() < START_TIMEOUT
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
            if let Some(mut p) = Pool::take_unbound(pool) {
                p.share = Some(share);
                return Ok(p);
            }
        }
        // At the cap, another caller's idle worker makes room: idle
        // workers are never a reason to refuse.
        if pool.alive() >= pool.config.max {
            pool.evict_for(caller);
        }
        let mut p = pool.start_now().await?;
        Pool::refill(pool);
        p.share = Some(share);
        Ok(p)
    }

    /// Starts a worker now (smoke test included), within the cap on live
    /// workers.
    async fn start_now(&self) -> Result<Pooled, ErrorInfo> {
        self.start_now_with(&[]).await
    }

    /// [`Pool::start_now`], for a worker that also carries `extra`'s core
    /// images.
    async fn start_now_with(&self, extra: &[GuestImage]) -> Result<Pooled, ErrorInfo> {
        let alive = self.counts.alive.fetch_add(1, Ordering::AcqRel);
        let guard = AliveGuard(self.counts.clone());
        if alive >= self.config.max {
            return Err(self.exhausted(format!(
                "all {} {} workers are busy; try again shortly",
                self.config.max,
                self.wrapper.name()
            )));
        }
        let w = self.launch_with(extra).await.map_err(|e| ErrorInfo {
            code: "worker_unavailable".into(),
            message: format!("could not start a {} worker: {e}", self.wrapper.name()),
        })?;
        Ok(Pooled::new(w, guard))
    }

    /// Puts `caller`'s worker back for its next run.
    fn give_back(&self, caller: &str, mut p: Pooled) {
        p.last_used = Instant::now();
        self.bound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(caller.to_owned())
            .or_default()
            .push_back(p);
    }

    fn image_for(&self, guest: &Guest) -> Result<GuestImage, ErrorInfo> {
        if let Some(img) = self
            .images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(guest.identity())
        {
            return Ok(img.clone());
        }
        let img =
            write_image(&self.runtime, guest, &self.config.image_dir).map_err(|e| ErrorInfo {
                code: "worker_unavailable".into(),
                message: format!("could not write the guest's image for workers: {e}"),
            })?;
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(guest.identity().to_owned(), img.clone());
        if self.wrapper.images_fixed_at_start() && img.kind == ImageKind::Component {
            // Idle workers that cannot see the new image are retired, so
            // that the warm set (refilled by the run that follows) has it.
            // (A core image is never in the warm set: see `guest_images`.)
            let stale: Vec<Pooled> = self
                .unbound
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain(..)
                .collect();
            drop(stale);
        }
        Ok(img)
    }

    /// `p`, if it can load every image of `images`; else a new worker
    /// that can, which takes over `p`'s share (a VM sees only the images
    /// that existed when it booted).
    async fn with_images(
        pool: &Arc<Pool>,
        mut p: Pooled,
        images: &[GuestImage],
    ) -> Result<Pooled, ErrorInfo> {
        if !pool.wrapper.images_fixed_at_start()
            || images.iter().all(|i| p.worker.images.contains(&i.path))
        {
            return Ok(p);
        }
        let share = p.share.take();
        drop(p);
        let mut p = pool.start_now_with(images).await?;
        p.share = share;
        Ok(p)
    }

    /// Runs `req` for `caller` on a worker bound to `caller`.
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        pool: &Arc<Pool>,
        caller: &str,
        guest: &Guest,
        req: &RunRequest,
        env: &Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> RunResult {
        let iso = pool.isolation();
        let refuse = |code: &str, message: String| {
            let mut r = RunResult::refused(run_id.clone(), iso.clone(), code, message);
            r.guest = Some(guest.identity().to_owned());
            r
        };
        if !pool.verified {
            return refuse(
                "isolation_unverified",
                format!(
                    "the {} smoke test failed at start, so this provider runs nothing: {}",
                    pool.wrapper.name(),
                    iso.evidence.summary
                ),
            );
        }
        let image = match pool.image_for(guest) {
            Ok(i) => i,
            Err(e) => return refuse(&e.code, e.message),
        };
        let started = Instant::now();
        let p = match Pool::take(pool, caller).await {
            Ok(p) => p,
            Err(e) => return refuse(&e.code, e.message),
        };
        let mut p = match Pool::with_images(pool, p, std::slice::from_ref(&image)).await {
            Ok(p) => p,
            Err(e) => return refuse(&e.code, e.message),
        };
        let waited_ms = started.elapsed().as_secs_f64() * 1e3;
        let origins = origins_of(&grants);
        let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
        let broker = RunBroker::new(pool.runtime.broker().clone(), grants, env, deadline);
        let outcome = p
            .worker
            .run(run_id.clone(), image, req, env, origins, broker.clone())
            .await;
        let used = WorkerUse {
            worker_id: p.id.clone(),
            caller: caller.to_owned(),
            runs_before: p.runs,
            max_runs: pool.config.max_runs,
        };
        p.runs = p.runs.saturating_add(1);
        let (mut r, keep) = match outcome {
            Ok((mut r, boot_id)) => {
                let honest = r.run_id == run_id && sanitize(&mut r, env) == 0;
                let same_boot = boot_id == p.worker.boot_id;
                let keep = honest && same_boot && reusable_after(r.status);
                (r, keep)
            }
            Err(e) => {
                let mut r = RunResult::refused(
                    run_id.clone(),
                    iso.clone(),
                    "worker_lost",
                    clip(&e.to_string()),
                );
                r.status = Status::WorkerLost;
                (r, false)
            }
        };
        if keep && p.runs < pool.config.max_runs && p.born.elapsed() < pool.config.max_age {
            pool.give_back(caller, p);
        } else {
            drop(p);
        }
        r.run_id = run_id;
        r.isolation = iso;
        r.isolation.evidence.worker = Some(used);
        r.guest = Some(guest.identity().to_owned());
        r.calls = broker.trace();
        r.session_id = None;
        r.session_closed = false;
        r.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        r.usage.worker_wait_ms = Some(waited_ms);
        r
    }
}

/// What a worker may know of `grants`: each one's name and origin, for
/// routing `wasi:http` requests. Never a credential.
fn origins_of(grants: &GrantSet) -> Vec<GrantOrigin> {
    grants
        .names()
        .filter_map(|n| {
            grants.get(n).map(|g| GrantOrigin {
                name: n.to_owned(),
                scheme: g.profile.origin.scheme.clone(),
                authority: g.profile.origin.authority.clone(),
            })
        })
        .collect()
}

/// Re-caps what a worker reported: its outputs and artifacts must fit the
/// envelope whatever it claims. Returns how many things had to be
/// corrected: an honest worker's result needs none, so any correction
/// means the worker lied and is retired.
fn sanitize(r: &mut RunResult, env: &Envelope) -> usize {
    fn cap(s: &mut String, max: u64, flag: &mut bool) -> usize {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        if s.len() > max {
            let mut cut = max;
            while cut > 0 && !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            *flag = true;
            return 1;
        }
        0
    }
    let mut corrected = 0;
    corrected += cap(&mut r.stdout, env.stdout_bytes, &mut r.stdout_truncated);
    corrected += cap(&mut r.stderr, env.stderr_bytes, &mut r.stderr_truncated);
    if let Some(v) = &mut r.result {
        corrected += cap(v, env.result_bytes, &mut r.result_truncated);
    }
    // Paths, sizes and hashes are checked again: a compromised worker could
    // name `../../etc/passwd` and an embedder might write artifacts out.
    let mut refused = Vec::new();
    r.artifacts.retain_mut(|a| {
        if !crate::workspace::is_plain_relative_path(&a.path) {
            refused.push(crate::run::RefusedArtifact {
                path: a.path.chars().take(256).collect(),
                reason: "invalid_path_from_worker".into(),
            });
            corrected += 1;
            return false;
        }
        let size = a.content.len() as u64;
        let sha256 = crate::component_cache::content_hash(a.content.as_bytes());
        if a.size != size || a.sha256 != sha256 {
            corrected += 1;
        }
        a.size = size;
        a.sha256 = sha256;
        true
    });
    r.artifacts_refused
        .truncate(usize::try_from(env.artifact_files).unwrap_or(usize::MAX));
    for ra in &mut r.artifacts_refused {
        ra.path = ra.path.chars().take(256).collect();
        ra.reason = ra.reason.chars().take(64).collect();
    }
    r.artifacts_refused.extend(refused);
    if let Some(e) = &mut r.error {
        e.code = e.code.chars().take(64).collect();
        e.message = e.message.chars().take(2048).collect();
    }
    let mut total = 0u64;
    let max_files = usize::try_from(env.artifact_files).unwrap_or(usize::MAX);
    if r.artifacts.len() > max_files {
        r.artifacts.truncate(max_files);
        r.artifacts_truncated = true;
        corrected += 1;
    }
    let before = r.artifacts.len();
    r.artifacts.retain(|a| {
        total = total.saturating_add(a.content.len() as u64);
        total <= env.artifact_bytes
    });
    if r.artifacts.len() != before {
        corrected += 1;
    }
    r.stdout_bytes = r.stdout.as_bytes().to_vec();
    r.stderr_bytes = r.stderr.as_bytes().to_vec();
    corrected
}

/// Writes `guest`'s image into `dir` (unless it is there) and names it as
/// a worker sees it, under `/guests`.
fn write_image(runtime: &Runtime, guest: &Guest, dir: &Path) -> std::io::Result<GuestImage> {
    let name = runtime.write_image(guest, dir)?;
    Ok(GuestImage {
        path: format!("/guests/{name}"),
        hash: guest.content_hash().to_owned(),
        family: guest.family().to_owned(),
        kind: if guest.is_core_module() {
            ImageKind::Core
        } else {
            ImageKind::Component
        },
    })
}

fn create_image_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    std::fs::create_dir_all(dir)?;
    let md = std::fs::symlink_metadata(dir)?;
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !md.is_dir() || md.uid() != me {
        return Err(std::io::Error::other(format!(
            "{} must be a directory owned by this user",
            dir.display()
        )));
    }
    // Workers (another uid inside their boundary) read the images; only
    // this user writes them.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    sweep_partial_images(dir);
    Ok(())
}

/// Removes core images left half-written (`.core-*`, hundreds of MB each)
/// by a supervisor that died while writing them; one younger than an hour
/// may still be another supervisor's write in progress and is left alone.
fn sweep_partial_images(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let stale = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if is_dir && stale && name.to_string_lossy().starts_with(".core-") {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{Artifact, RefusedArtifact};
    use crate::tier::{Evidence, Isolation, Tier};

    fn result() -> RunResult {
        let iso = Isolation {
            tier: Tier::Container,
            provider: "wasm+bwrap".into(),
            wrapper: Some("bwrap".into()),
            evidence: Evidence {
                observed_at_unix: 0,
                summary: String::new(),
                checks: Vec::new(),
                worker: None,
            },
        };
        RunResult::refused("r".into(), iso, "x", "y")
    }

    fn artifact(path: &str, content: &str, claimed: u64) -> Artifact {
        Artifact {
            path: path.into(),
            size: claimed,
            sha256: "f".repeat(64),
            content: content.into(),
        }
    }

    /// An honest worker's result needs no correction (so its worker is
    /// kept for the caller's next run).
    #[test]
    fn an_honest_result_needs_no_correction() {
        let env = Envelope::default();
        let mut r = result();
        r.stdout = "hello".into();
        r.result = Some("2".into());
        let mut a = artifact("out.txt", "abc", 3);
        a.sha256 = crate::component_cache::content_hash(b"abc");
        r.artifacts = vec![a];
        assert_eq!(sanitize(&mut r, &env), 0);
        assert_eq!(r.artifacts.len(), 1);
    }

    /// A caller's share is counted while its guards live and released with
    /// them; at the cap, a reservation is refused.
    #[test]
    fn shares_are_capped_per_caller_and_released_on_drop() {
        let c = Arc::new(Counts::default());
        let a1 = c.reserve("alice", 2).expect("first");
        let a2 = c.reserve("alice", 2).expect("second");
        assert!(c.reserve("alice", 2).is_none(), "alice is at her cap");
        let b = c.reserve("bob", 2).expect("bob has his own share");
        assert_eq!(c.held_by("alice"), 2);
        drop(a1);
        assert_eq!(c.held_by("alice"), 1);
        drop((a2, b));
        assert_eq!(c.held_by("alice"), 0);
        assert!(
            c.per_caller.lock().expect("lock").is_empty(),
            "no entry is left for a caller with no worker"
        );
    }

    #[test]
    fn only_clean_endings_keep_a_worker() {
        for s in Status::ALL {
            let keep = reusable_after(s);
            let expected = matches!(
                s,
                Status::Ok
                    | Status::Error
                    | Status::Timeout
                    | Status::CpuExhausted
                    | Status::OutputTruncated
            );
            assert_eq!(keep, expected, "{s:?}");
        }
    }

    /// What a lying worker reports is re-capped to the envelope and
    /// re-checked: outputs, paths, sizes, hashes, counts, error texts.
    #[test]
    fn sanitize_recaps_what_a_worker_claims() {
        let env = Envelope {
            stdout_bytes: 4,
            stderr_bytes: 2,
            result_bytes: 3,
            artifact_files: 2,
            artifact_bytes: 5,
            ..Envelope::default()
        };
        let mut r = result();
        r.stdout = "héllo world".into();
        r.stderr = "errors".into();
        r.result = Some("123456".into());
        r.artifacts = vec![
            artifact("../../etc/passwd", "root:x", 1),
            artifact("ok.txt", "abc", 999),
            artifact("two.txt", "defg", 0),
            artifact("three.txt", "h", 0),
        ];
        r.artifacts_refused = (0..10)
            .map(|i| RefusedArtifact {
                path: format!("{}{i}", "p".repeat(1000)),
                reason: "r".repeat(500),
            })
            .collect();
        if let Some(e) = &mut r.error {
            e.code = "c".repeat(1000);
            e.message = "m".repeat(10_000);
        }
        assert!(sanitize(&mut r, &env) >= 5, "every lie is counted");
        // "hé" is 3 bytes; cutting at 4 would split nothing, at a char
        // boundary always.
        assert!(r.stdout.len() <= 4 && r.stdout_truncated, "{:?}", r.stdout);
        assert_eq!(r.stderr, "er");
        assert!(r.stderr_truncated);
        assert_eq!(r.result.as_deref(), Some("123"));
        assert!(r.result_truncated);
        let paths: Vec<&str> = r.artifacts.iter().map(|a| a.path.as_str()).collect();
        // The escaping path is refused; of the rest, at most 2 files and
        // 5 bytes.
        assert_eq!(paths, ["ok.txt"], "{paths:?}");
        assert!(r.artifacts_truncated);
        let ok = &r.artifacts[0];
        assert_eq!(ok.size, 3, "the size is recomputed");
        assert_eq!(
            ok.sha256,
            crate::component_cache::content_hash(b"abc"),
            "the hash is recomputed"
        );
        assert!(
            r.artifacts_refused
                .iter()
                .any(|a| a.reason == "invalid_path_from_worker")
        );
        assert!(r.artifacts_refused.len() <= 3);
        assert!(
            r.artifacts_refused
                .iter()
                .all(|a| a.path.chars().count() <= 256 && a.reason.chars().count() <= 64)
        );
        let e = r.error.as_ref().expect("error kept");
        assert!(e.code.chars().count() <= 64 && e.message.chars().count() <= 2048);
        assert_eq!(r.stdout_bytes, r.stdout.as_bytes());
    }
}
