//! The supervisor's side of the worker split: a warm pool of workers, each
//! started inside a wrapper, checked by the smoke test, used for exactly one
//! run and then discarded.
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
use crate::tier::{Evidence, EvidenceCheck, Isolation};
use crate::worker::observe::{Observation, judge};
use crate::worker::protocol::{
    FrameError, FromWorker, GrantOrigin, GuestImage, PROTOCOL_VERSION, ToWorker, WorkerEngine,
    read_async, write_async,
};
use crate::wrapper::{Launch, Wrapper, WrapperError};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long a worker may take to start and load its guests.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Extra time past the run's wall time before a silent worker is killed.
pub const HANG_GRACE: Duration = Duration::from_secs(2);

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
        wrapper: &dyn Wrapper,
        launch: &Launch,
        engine: WorkerEngine,
        guests: Vec<GuestImage>,
    ) -> Result<Worker, WorkerError> {
        let prepared = wrapper.prepare(launch)?;
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

    /// Runs one request; the worker is consumed.
    #[allow(clippy::too_many_arguments)]
    async fn run(
        mut self,
        run_id: String,
        guest: GuestImage,
        req: &RunRequest,
        env: &Envelope,
        grants: Vec<GrantOrigin>,
        broker: RunBroker,
    ) -> Result<RunResult, WorkerError> {
        let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms) + HANG_GRACE;
        write_async(
            &mut self.stdin,
            &ToWorker::Run {
                run_id,
                guest,
                request: req.clone(),
                envelope: *env,
                grants,
            },
        )
        .await?;
        loop {
            let frame = tokio::time::timeout_at(
                tokio::time::Instant::from_std(deadline),
                read_async::<FromWorker>(&mut self.stdout),
            )
            .await
            .map_err(|_| WorkerError::Hung)??;
            match frame {
                FromWorker::BrokerCall { seq, api, request } => {
                    let result = broker
                        .call(&api, request.into())
                        .await
                        .map(Into::into)
                        .map_err(Into::into);
                    write_async(&mut self.stdin, &ToWorker::BrokerReply { seq, result }).await?;
                }
                FromWorker::Done { result } => return Ok(result),
                FromWorker::Failed { message } => return Err(WorkerError::Failed(clip(&message))),
                _ => {
                    return Err(WorkerError::Protocol(
                        "unexpected frame during a run".into(),
                    ));
                }
            }
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

/// A warm pool of workers behind one wrapper.
pub struct Pool {
    wrapper: Arc<dyn Wrapper>,
    runtime: Runtime,
    config: PoolConfig,
    launch: Launch,
    engine: WorkerEngine,
    idle: Mutex<VecDeque<Worker>>,
    /// Workers alive (idle, busy or starting).
    alive: AtomicUsize,
    /// Workers being started for the warm set.
    starting: AtomicUsize,
    /// The runtime that owns every worker's pipes and child handles.
    handle: tokio::runtime::Handle,
    images: Mutex<HashMap<String, GuestImage>>,
    isolation: Isolation,
    verified: bool,
}

/// Counts a live worker until dropped.
struct AliveGuard(Arc<Pool>);
impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::AcqRel);
    }
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
            workspace_bytes: config.workspace_bytes,
            uid,
        };
        let opts = runtime.engine().options();
        let engine = WorkerEngine {
            fuel: opts.fuel,
            max_memory_bytes: opts.max_memory_bytes,
            max_wasm_stack: opts.max_wasm_stack as u64,
            cpu: opts.cpu,
        };
        let mut images = HashMap::new();
        for g in guests {
            let name = runtime
                .write_image(g, &config.image_dir)
                .map_err(|e| WorkerError::Spawn(format!("guest image: {e}")))?;
            images.insert(
                g.identity().to_owned(),
                GuestImage {
                    path: format!("/guests/{name}"),
                    hash: g.content_hash().to_owned(),
                    family: g.family().to_owned(),
                },
            );
        }
        let mut probe = Worker::spawn(
            wrapper.as_ref(),
            &launch,
            engine,
            images.values().cloned().collect(),
        )
        .await?;
        let observation = probe.observe().await?;
        drop(probe);
        let mut checks = vec![EvidenceCheck {
            name: "wrapper".into(),
            passed: true,
            observed: wrapper.version(),
        }];
        checks.extend(judge(&observation, &wrapper.expectations(uid)));
        checks.push(crate::worker::observe::judge_cpu(&observation, opts.cpu));
        let verified = checks.iter().all(|c| c.passed);
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect();
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
                        "smoke test passed inside {} (this daemon's observation, not an attestation); one worker per run",
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
            },
        };
        let pool = Arc::new(Pool {
            wrapper,
            runtime,
            config,
            launch,
            engine,
            idle: Mutex::new(VecDeque::new()),
            alive: AtomicUsize::new(0),
            starting: AtomicUsize::new(0),
            handle: tokio::runtime::Handle::current(),
            images: Mutex::new(images),
            isolation,
            verified,
        });
        if verified {
            Pool::refill(&pool);
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

    /// Idle workers right now.
    pub fn idle(&self) -> usize {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn guest_images(&self) -> Vec<GuestImage> {
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
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
            let alive = pool.alive.load(Ordering::Acquire);
            if alive >= pool.config.max {
                return;
            }
            if pool
                .alive
                .compare_exchange(alive, alive + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            pool.starting.fetch_add(1, Ordering::AcqRel);
            let p = pool.clone();
            pool.handle.spawn(async move {
                let guard = AliveGuard(p.clone());
                let started =
                    Worker::spawn(p.wrapper.as_ref(), &p.launch, p.engine, p.guest_images()).await;
                p.starting.fetch_sub(1, Ordering::AcqRel);
                match started {
                    Ok(w) if !p.can_run_every_image(&w) => {
                        // An image was added while it booted: retire it and
                        // start one that has every image.
                        drop(w);
                        drop(guard);
                        Pool::refill(&p);
                    }
                    Ok(w) => {
                        // The idle worker keeps its place in `alive`.
                        std::mem::forget(guard);
                        p.idle
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push_back(w);
                    }
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
                .all(|i| w.images.contains(&i.path))
    }

    /// An idle worker, if there is one (and a replacement is started).
    fn take_idle(pool: &Arc<Pool>) -> Option<(Worker, AliveGuard)> {
        let idle = pool
            .idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        let w = idle?;
        Pool::refill(pool);
        Some((w, AliveGuard(pool.clone())))
    }

    async fn take(pool: &Arc<Pool>) -> Result<(Worker, AliveGuard), ErrorInfo> {
        if let Some(taken) = Pool::take_idle(pool) {
            return Ok(taken);
        }
        // None warm. If one is starting and the cap is reached, wait for
        // it rather than refuse (it is milliseconds away).
        let waited = Instant::now();
        while pool.alive.load(Ordering::Acquire) >= pool.config.max
            && pool.starting.load(Ordering::Acquire) > 0
            && waited.elapsed() < START_TIMEOUT
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
            if let Some(taken) = Pool::take_idle(pool) {
                return Ok(taken);
            }
        }
        // Start one now if the cap allows.
        let alive = pool.alive.fetch_add(1, Ordering::AcqRel);
        let guard = AliveGuard(pool.clone());
        if alive >= pool.config.max {
            return Err(ErrorInfo {
                code: "worker_pool_exhausted".into(),
                message: format!(
                    "all {} {} workers are busy; try again shortly",
                    pool.config.max,
                    pool.wrapper.name()
                ),
            });
        }
        let w = Worker::spawn(
            pool.wrapper.as_ref(),
            &pool.launch,
            pool.engine,
            pool.guest_images(),
        )
        .await
        .map_err(|e| ErrorInfo {
            code: "worker_unavailable".into(),
            message: format!("could not start a {} worker: {e}", pool.wrapper.name()),
        })?;
        Pool::refill(pool);
        Ok((w, guard))
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
        let name = self
            .runtime
            .write_image(guest, &self.config.image_dir)
            .map_err(|e| ErrorInfo {
                code: "worker_unavailable".into(),
                message: format!("could not write the guest's image for workers: {e}"),
            })?;
        let img = GuestImage {
            path: format!("/guests/{name}"),
            hash: guest.content_hash().to_owned(),
            family: guest.family().to_owned(),
        };
        self.images
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(guest.identity().to_owned(), img.clone());
        if self.wrapper.images_fixed_at_start() {
            // Warm workers that cannot see the new image are retired, so
            // that the warm set (refilled by the run that follows) has it.
            let stale: Vec<Worker> = self
                .idle
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .drain(..)
                .collect();
            self.alive.fetch_sub(stale.len(), Ordering::AcqRel);
            drop(stale);
        }
        Ok(img)
    }

    /// Runs `req` on a worker.
    pub async fn run(
        pool: &Arc<Pool>,
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
        let (mut worker, _alive) = match Pool::take(pool).await {
            Ok(w) => w,
            Err(e) => return refuse(&e.code, e.message),
        };
        if pool.wrapper.images_fixed_at_start() && !worker.images.contains(&image.path) {
            // A warm worker that predates this guest's image cannot load
            // it: start one that has it (the warm set catches up).
            drop(worker);
            worker = match Worker::spawn(
                pool.wrapper.as_ref(),
                &pool.launch,
                pool.engine,
                pool.guest_images(),
            )
            .await
            {
                Ok(w) => w,
                Err(e) => {
                    return refuse(
                        "worker_unavailable",
                        format!("could not start a {} worker: {e}", pool.wrapper.name()),
                    );
                }
            };
        }
        let origins: Vec<GrantOrigin> = grants
            .names()
            .filter_map(|n| {
                grants.get(n).map(|g| GrantOrigin {
                    name: n.to_owned(),
                    scheme: g.profile.origin.scheme.clone(),
                    authority: g.profile.origin.authority.clone(),
                })
            })
            .collect();
        let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
        let broker = RunBroker::new(pool.runtime.broker().clone(), grants, env, deadline);
        let outcome = worker
            .run(run_id.clone(), image, req, env, origins, broker.clone())
            .await;
        let mut r = match outcome {
            Ok(r) => r,
            Err(e) => {
                let mut r = RunResult::refused(
                    run_id.clone(),
                    iso.clone(),
                    "worker_lost",
                    clip(&e.to_string()),
                );
                r.status = Status::WorkerLost;
                r
            }
        };
        sanitize(&mut r, env);
        r.run_id = run_id;
        r.isolation = iso;
        r.guest = Some(guest.identity().to_owned());
        r.calls = broker.trace();
        r.session_id = None;
        r.session_closed = false;
        r.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        r
    }
}

/// Re-caps what a worker reported: its outputs and artifacts must fit the
/// envelope whatever it claims.
fn sanitize(r: &mut RunResult, env: &Envelope) {
    fn cap(s: &mut String, max: u64, flag: &mut bool) {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        if s.len() > max {
            let mut cut = max;
            while cut > 0 && !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            *flag = true;
        }
    }
    cap(&mut r.stdout, env.stdout_bytes, &mut r.stdout_truncated);
    cap(&mut r.stderr, env.stderr_bytes, &mut r.stderr_truncated);
    if let Some(v) = &mut r.result {
        cap(v, env.result_bytes, &mut r.result_truncated);
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
            return false;
        }
        a.size = a.content.len() as u64;
        a.sha256 = crate::component_cache::content_hash(a.content.as_bytes());
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
    }
    r.artifacts.retain(|a| {
        total = total.saturating_add(a.content.len() as u64);
        total <= env.artifact_bytes
    });
    r.stdout_bytes = r.stdout.as_bytes().to_vec();
    r.stderr_bytes = r.stderr.as_bytes().to_vec();
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
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
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
        sanitize(&mut r, &env);
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
