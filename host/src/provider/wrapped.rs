//! The wrapped providers (`wasm+bwrap`, `wasm+gvisor`, `wasm+microvm`):
//! guests run in `plimsoll-worker` processes behind an outer boundary,
//! from a pool whose start-up smoke test must pass before any tier above
//! `process` is claimed.

use super::{BoxFuture, Provider, ProviderKind, WorkerConfig};
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::live_session::{LiveSession, SessionOptions};
use crate::run::{ErrorInfo, RunRequest, RunResult};
use crate::runtime::Runtime;
use crate::tier::{Evidence, EvidenceCheck, Isolation, Tier};
use crate::worker::pool::Pool;
use std::sync::{Arc, OnceLock};

/// Runs guests in `plimsoll-worker` processes inside a wrapper
/// (`wasm+bwrap`, `wasm+gvisor`, `wasm+microvm`). Its tier is the wrapper's only if the start-up smoke
/// test passed; otherwise it refuses every run.
pub struct WrappedProvider {
    name: &'static str,
    wrapper_name: &'static str,
    /// The pool once its start-up (the smoke test) is done, or why it
    /// could not start; empty while it starts.
    pool: Arc<OnceLock<Result<Arc<Pool>, String>>>,
    /// Bumped when `pool` is set, for runs waiting for it.
    started: tokio::sync::watch::Sender<bool>,
    /// The runtime that owns the workers' pipes; dropped on a plain thread.
    rt: std::sync::Mutex<Option<tokio::runtime::Runtime>>,
}

impl Drop for WrappedProvider {
    fn drop(&mut self) {
        let rt = self.rt.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(rt) = rt {
            // Dropping a runtime inside another one panics; a thread of its
            // own is always allowed to.
            let _ = std::thread::spawn(move || drop(rt)).join();
        }
    }
}

impl WrappedProvider {
    /// Starts the pool: writes guest images, starts a worker, runs the
    /// smoke test. Blocks until that is done (it may be called from inside
    /// an async runtime).
    pub fn start(
        kind: ProviderKind,
        runtime: Runtime,
        config: &WorkerConfig,
        image_dir: std::path::PathBuf,
        workspace_bytes: u64,
        guests: Vec<Guest>,
    ) -> Result<WrappedProvider, String> {
        let p = WrappedProvider::begin(kind, runtime, config, image_dir, workspace_bytes, guests)?;
        // Start-up only: a short poll is simpler than a second signal.
        while p.pool.get().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        match p.pool.get() {
            Some(Ok(_)) => Ok(p),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!(
                "{}: the worker pool's start-up ended early",
                p.name
            )),
        }
    }

    /// Finds the wrapper now (a missing tool or image is an error at
    /// once) and starts the pool in the background: until its smoke test
    /// has passed, the provider claims no tier above `process` and runs
    /// wait for it, each within its own wall time ([`Provider::run`]).
    pub fn begin(
        kind: ProviderKind,
        runtime: Runtime,
        config: &WorkerConfig,
        image_dir: std::path::PathBuf,
        workspace_bytes: u64,
        guests: Vec<Guest>,
    ) -> Result<WrappedProvider, String> {
        let worker_bin = config.resolve_bin()?;
        let wrapper: Arc<dyn crate::wrapper::Wrapper> = match kind {
            ProviderKind::WasmBwrap => {
                Arc::new(crate::wrapper::bwrap::Bwrap::detect().map_err(|e| e.to_string())?)
            }
            ProviderKind::WasmGvisor => Arc::new(
                crate::wrapper::gvisor::Gvisor::detect(image_dir.parent().unwrap_or(&image_dir))
                    .map_err(|e| e.to_string())?,
            ),
            ProviderKind::WasmMicrovm => Arc::new(
                crate::wrapper::microvm::Microvm::detect(
                    image_dir.parent().unwrap_or(&image_dir),
                    &worker_bin,
                    &config
                        .microvm
                        .clone()
                        .unwrap_or_else(crate::wrapper::microvm::MicrovmSettings::from_env),
                )
                .map_err(|e| e.to_string())?,
            ),
            other => return Err(format!("{other} has no worker wrapper in this build")),
        };
        let uid = crate::wrapper::guest_uid().map_err(|e| e.to_string())?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("plimsoll-workers")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        let handle = rt.handle().clone();
        let pool_config = crate::worker::pool::PoolConfig {
            worker_bin,
            image_dir,
            warm: config.warm,
            max: config.max.max(1),
            max_per_caller: config
                .max_per_caller
                .unwrap_or(config.max.max(1).div_ceil(2))
                .clamp(1, config.max.max(1)),
            max_runs: config.max_runs.max(1),
            max_age: config.max_age,
            idle: config.idle,
            workspace_bytes,
        };
        let name = kind.as_str();
        let wrapper_name = wrapper.name();
        let pool: Arc<OnceLock<Result<Arc<Pool>, String>>> = Arc::new(OnceLock::new());
        let (started, _) = tokio::sync::watch::channel(false);
        let (slot, done) = (pool.clone(), started.clone());
        let spawned = std::thread::Builder::new()
            .name("plimsoll-pool-start".into())
            .spawn(move || {
                let t = std::time::Instant::now();
                let r = handle
                    .block_on(Pool::start(
                        wrapper,
                        runtime,
                        pool_config,
                        uid,
                        name,
                        &guests,
                    ))
                    .map_err(|e| format!("{name}: {e}"));
                match &r {
                    Ok(p) if p.verified() => tracing::info!(
                        "{name}: the smoke test passed in {:.1} s",
                        t.elapsed().as_secs_f64()
                    ),
                    Ok(_) => tracing::error!("{name}: the smoke test failed; every run is refused"),
                    Err(e) => tracing::error!("{e}"),
                }
                let _ = slot.set(r);
                done.send_replace(true);
            });
        if let Err(e) = spawned {
            let _ = std::thread::spawn(move || drop(rt)).join();
            return Err(format!("{name}: cannot start the pool's thread: {e}"));
        }
        Ok(WrappedProvider {
            name,
            wrapper_name,
            pool,
            started,
            rt: std::sync::Mutex::new(Some(rt)),
        })
    }

    /// The runtime that owns the workers' pipes, unless shut down.
    fn handle(&self) -> Option<tokio::runtime::Handle> {
        self.rt
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .map(|rt| rt.handle().clone())
    }

    /// The pool, once started (tests use it to find worker pids).
    pub fn pool(&self) -> Option<&Arc<Pool>> {
        self.pool.get().and_then(|r| r.as_ref().ok())
    }

    /// The pool, waiting for its start-up until `deadline`: `warming_up`
    /// past it, `worker_unavailable` if it could not start.
    async fn ready_pool(&self, deadline: std::time::Instant) -> Result<Arc<Pool>, ErrorInfo> {
        let mut rx = self.started.subscribe();
        loop {
            match self.pool.get() {
                Some(Ok(p)) => return Ok(p.clone()),
                Some(Err(e)) => {
                    return Err(ErrorInfo {
                        code: "worker_unavailable".into(),
                        message: e.clone(),
                    });
                }
                None => {}
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(ErrorInfo {
                    code: "warming_up".into(),
                    message: format!(
                        "{}'s workers are still starting (their smoke test has not finished); try again shortly",
                        self.name
                    ),
                });
            }
            let _ = tokio::time::timeout(
                left.min(std::time::Duration::from_millis(500)),
                rx.changed(),
            )
            .await;
        }
    }

    /// What the provider claims before (or without) a started pool: no tier
    /// above `process`, and why.
    fn unproven(&self, why: &str) -> Isolation {
        Isolation {
            tier: Tier::Process,
            provider: self.name.to_owned(),
            wrapper: Some(self.wrapper_name.to_owned()),
            evidence: Evidence {
                observed_at_unix: super::now_unix(),
                summary: why.to_owned(),
                checks: vec![EvidenceCheck {
                    name: "smoke_test".into(),
                    passed: false,
                    observed: why.to_owned(),
                }],
                worker: None,
            },
        }
    }
}

impl WrappedProvider {
    /// A session in a worker of `caller`'s, started fresh or resumed from
    /// the archive `resume`.
    fn open_in_worker<'a>(
        &'a self,
        caller: &'a str,
        opts: &'a SessionOptions,
        env: &'a Envelope,
        resume: Option<Vec<u8>>,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        let handle = self.handle();
        let caller = caller.to_owned();
        let opts = opts.clone();
        let env = *env;
        Box::pin(async move {
            let deadline =
                std::time::Instant::now() + std::time::Duration::from_millis(env.wall_time_ms);
            let pool = self.ready_pool(deadline).await?;
            let Some(handle) = handle else {
                return Err(ErrorInfo {
                    code: "worker_unavailable".into(),
                    message: "the worker pool is shut down".into(),
                });
            };
            let mut task = AbortOnDrop(handle.spawn(async move {
                crate::worker::pool::Pool::open_session(&pool, &caller, &opts, &env, resume).await
            }));
            match (&mut task.0).await {
                Ok(r) => r.map(|s| Box::new(s) as Box<dyn LiveSession>),
                Err(_) => Err(ErrorInfo {
                    code: "worker_lost".into(),
                    message: "the session's start failed".into(),
                }),
            }
        })
    }
}

impl Provider for WrappedProvider {
    fn name(&self) -> &str {
        self.name
    }

    fn isolation(&self) -> Isolation {
        match self.pool.get() {
            Some(Ok(p)) => p.isolation(),
            Some(Err(e)) => self.unproven(&format!(
                "the workers could not start ({e}): every run is refused"
            )),
            None => self.unproven(
                "starting: the smoke test has not finished; runs wait for it and nothing is claimed until it passes",
            ),
        }
    }

    fn idle_workers(&self) -> Option<usize> {
        Some(self.pool().map_or(0, |p| p.idle()))
    }

    fn ready(&self, deadline: std::time::Instant) -> BoxFuture<'_, Result<(), ErrorInfo>> {
        Box::pin(async move { self.ready_pool(deadline).await.map(|_| ()) })
    }

    fn offers_sessions(&self) -> bool {
        // While the pool starts, sessions are offered (an open waits for
        // the pool, as a run does); a failed start offers none.
        match self.pool.get() {
            Some(Ok(p)) => p.verified(),
            Some(Err(_)) => false,
            None => true,
        }
    }

    fn session_lifetime_cap(&self) -> Option<std::time::Duration> {
        self.pool().map(|p| p.max_age())
    }

    fn open_session<'a>(
        &'a self,
        caller: &'a str,
        opts: &'a SessionOptions,
        env: &'a Envelope,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        self.open_in_worker(caller, opts, env, None)
    }

    fn resume_session<'a>(
        &'a self,
        caller: &'a str,
        opts: &'a SessionOptions,
        env: &'a Envelope,
        image: &'a crate::snapshot::archive::SessionImage,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        match crate::snapshot::archive::encode(image, 1) {
            Ok(a) => self.open_in_worker(caller, opts, env, Some(a.bytes)),
            Err(e) => Box::pin(async move {
                Err(ErrorInfo {
                    code: crate::snapshot::TOO_LARGE.into(),
                    message: e.to_string(),
                })
            }),
        }
    }

    fn run<'a>(
        &'a self,
        caller: &'a str,
        guest: &'a Guest,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult> {
        let caller = caller.to_owned();
        let guest = guest.clone();
        let req = req.clone();
        let env = *env;
        let handle = self.handle();
        Box::pin(async move {
            let deadline =
                std::time::Instant::now() + std::time::Duration::from_millis(env.wall_time_ms);
            let pool = match self.ready_pool(deadline).await {
                Ok(p) => p,
                Err(e) => return RunResult::refused(run_id, self.isolation(), &e.code, e.message),
            };
            let iso = pool.isolation();
            let Some(handle) = handle else {
                return RunResult::refused(
                    run_id,
                    iso,
                    "worker_unavailable",
                    "the worker pool is shut down",
                );
            };
            let id = run_id.clone();
            // Dropping this future (a canceled run) aborts the task, and with
            // it the run's worker.
            let mut task = AbortOnDrop(handle.spawn(async move {
                crate::worker::pool::Pool::run(&pool, &caller, &guest, &req, &env, grants, run_id)
                    .await
            }));
            match (&mut task.0).await {
                Ok(r) => r,
                Err(_) => {
                    let mut r = RunResult::refused(id, iso, "worker_lost", "the run's task failed");
                    r.status = crate::run::Status::WorkerLost;
                    r
                }
            }
        })
    }
}

/// A spawned task that is aborted when its handle is dropped: a run on the
/// pool's runtime stops when whoever awaited it stops waiting.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
