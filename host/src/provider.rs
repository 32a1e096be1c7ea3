//! Providers: what actually runs a guest, and the isolation it claims.
//!
//! `disabled` (the default) refuses every run. `wasm` runs the guest with
//! wasmtime inside this process and says so: its tier is `process`. The
//! wrapped providers (`wasm+bwrap`, `wasm+gvisor`, `wasm+microvm`) run the
//! engine in a worker behind an outer boundary.

use crate::envelope::Envelope;
use crate::executor;
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::live_session::{LiveSession, LocalSession, SessionOptions};
use crate::run::{ErrorInfo, RunRequest, RunResult};
use crate::runtime::Runtime;
use crate::tier::{Evidence, EvidenceCheck, Isolation, Tier};
use std::fmt;
use std::str::FromStr;

/// The environment variable that selects the provider.
pub const PROVIDER_ENV: &str = "SANDBOX_PROVIDER";

/// The message every refusal of the `disabled` provider carries.
pub const DISABLED_MESSAGE: &str = "no sandbox provider is configured, so nothing runs. \
     Opt in with SANDBOX_PROVIDER=wasm (in-process wasmtime, isolation tier `process`) \
     or pass --provider wasm to the CLI";

/// The providers plimsoll knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Disabled,
    Wasm,
    WasmBwrap,
    WasmGvisor,
    WasmMicrovm,
}

impl ProviderKind {
    /// The stable name used in `SANDBOX_PROVIDER`, flags and results.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Disabled => "disabled",
            ProviderKind::Wasm => "wasm",
            ProviderKind::WasmBwrap => "wasm+bwrap",
            ProviderKind::WasmGvisor => "wasm+gvisor",
            ProviderKind::WasmMicrovm => "wasm+microvm",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is not one of the known ones.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown provider {0:?}: expected disabled, wasm, wasm+bwrap, wasm+gvisor or wasm+microvm")]
pub struct UnknownProvider(pub String);

impl FromStr for ProviderKind {
    type Err = UnknownProvider;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "" | "disabled" => Ok(ProviderKind::Disabled),
            "wasm" => Ok(ProviderKind::Wasm),
            "wasm+bwrap" => Ok(ProviderKind::WasmBwrap),
            "wasm+gvisor" => Ok(ProviderKind::WasmGvisor),
            "wasm+microvm" => Ok(ProviderKind::WasmMicrovm),
            other => Err(UnknownProvider(other.chars().take(64).collect())),
        }
    }
}

/// A boxed future, so that providers can be trait objects (the `futures`
/// crate's, re-exported under its old name here).
pub use futures::future::BoxFuture;

/// What runs guests. Implementations must report, in `isolation`, only a
/// boundary they have verified.
pub trait Provider: Send + Sync {
    /// The provider's name (`disabled`, `wasm`, …).
    fn name(&self) -> &str;

    /// The isolation this provider gives every run right now (the
    /// `IsolationClass()` of the design). Checked against the floor
    /// immediately before each dispatch.
    fn isolation(&self) -> Isolation;

    /// Workers started, checked and waiting for a run, for providers that
    /// keep a warm pool (`None` for in-process providers).
    fn idle_workers(&self) -> Option<usize> {
        None
    }

    /// Whether [`Provider::open_session`] can succeed.
    fn offers_sessions(&self) -> bool {
        false
    }

    /// The longest a session may live under this provider (a worker's
    /// `PLIMSOLL_WORKER_MAX_AGE_SEC`); `None` = the operator's session
    /// lifetime alone.
    fn session_lifetime_cap(&self) -> Option<std::time::Duration> {
        None
    }

    /// Opens a session's interpreters for `caller` (the session table
    /// above owns its id, caps and lifetime). A provider that keeps
    /// sessions in workers binds the session's worker to `caller`.
    fn open_session<'a>(
        &'a self,
        _caller: &'a str,
        _opts: &'a SessionOptions,
        _env: &'a Envelope,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        let name = self.name().to_owned();
        Box::pin(async move {
            Err(ErrorInfo {
                code: "sessions_unavailable".into(),
                message: format!("provider {name} does not keep sessions"),
            })
        })
    }

    /// Runs `guest` once on behalf of `caller`. The caller has already
    /// checked the floor, the request and the envelope. A provider that
    /// keeps workers never lets one worker serve two callers.
    fn run<'a>(
        &'a self,
        caller: &'a str,
        guest: &'a Guest,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult>;
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Refuses every run. The default.
#[derive(Debug, Default)]
pub struct DisabledProvider;

impl Provider for DisabledProvider {
    fn name(&self) -> &str {
        "disabled"
    }

    fn isolation(&self) -> Isolation {
        Isolation {
            tier: Tier::Process,
            provider: "disabled".into(),
            wrapper: None,
            evidence: Evidence {
                observed_at_unix: now_unix(),
                summary: "no provider configured: nothing runs".into(),
                checks: Vec::new(),
                worker: None,
            },
        }
    }

    fn run<'a>(
        &'a self,
        _caller: &'a str,
        _guest: &'a Guest,
        _req: &'a RunRequest,
        _env: &'a Envelope,
        _grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult> {
        let iso = self.isolation();
        Box::pin(
            async move { RunResult::refused(run_id, iso, "provider_disabled", DISABLED_MESSAGE) },
        )
    }
}

/// Runs guests with wasmtime in this process. Tier `process`.
pub struct WasmProvider {
    runtime: Runtime,
    isolation: Isolation,
}

impl WasmProvider {
    /// A provider on `runtime`.
    pub fn new(runtime: Runtime) -> Self {
        let opts = runtime.engine().options();
        let isolation = Isolation {
            tier: Tier::Process,
            provider: "wasm".into(),
            wrapper: None,
            evidence: Evidence {
                observed_at_unix: now_unix(),
                summary: "in-process wasmtime: the guest shares the host process; \
                          an engine escape lands in the host"
                    .into(),
                checks: vec![
                    EvidenceCheck {
                        name: "engine".into(),
                        passed: true,
                        observed: format!(
                            "wasmtime 48.0.8, {} allocator, fuel {}",
                            if opts.pooling { "pooling" } else { "on-demand" },
                            if opts.fuel { "on" } else { "off" }
                        ),
                    },
                    EvidenceCheck {
                        name: "outer_boundary".into(),
                        passed: false,
                        observed: "none: no namespaces, seccomp, user-space kernel or VM around the engine"
                            .into(),
                    },
                ],
                worker: None,
            },
        };
        WasmProvider { runtime, isolation }
    }
}

impl Provider for WasmProvider {
    fn name(&self) -> &str {
        "wasm"
    }

    fn isolation(&self) -> Isolation {
        self.isolation.clone()
    }

    fn offers_sessions(&self) -> bool {
        true
    }

    fn open_session<'a>(
        &'a self,
        _caller: &'a str,
        opts: &'a SessionOptions,
        env: &'a Envelope,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        Box::pin(async move {
            let s = LocalSession::open(
                &self.runtime,
                opts.guests.clone(),
                &opts.start,
                opts.keep_on_failure,
                env,
            )
            .await?;
            Ok(Box::new(s) as Box<dyn LiveSession>)
        })
    }

    fn run<'a>(
        &'a self,
        _caller: &'a str,
        guest: &'a Guest,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult> {
        Box::pin(executor::execute(
            &self.runtime,
            guest,
            req,
            env,
            grants,
            self.isolation.clone(),
            run_id,
        ))
    }
}

/// How a wrapped provider finds and sizes its workers.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// `plimsoll-worker` (`PLIMSOLL_WORKER_BIN`; default: next to the
    /// running executable).
    pub worker_bin: Option<std::path::PathBuf>,
    /// Idle workers kept warm (`PLIMSOLL_WORKER_POOL`).
    pub warm: usize,
    /// Workers alive at once (`PLIMSOLL_WORKER_MAX`).
    pub max: usize,
    /// Workers one caller may hold at once, busy or idle
    /// (`PLIMSOLL_WORKER_MAX_PER_CALLER`); `None` = half of `max`, rounded
    /// up, so that one busy caller cannot hold every worker.
    pub max_per_caller: Option<usize>,
    /// Runs one worker may serve, all of one caller
    /// (`PLIMSOLL_WORKER_MAX_RUNS`); 1 = a fresh worker for every run.
    pub max_runs: u32,
    /// A worker this old is retired after its current run
    /// (`PLIMSOLL_WORKER_MAX_AGE_SEC`).
    pub max_age: std::time::Duration,
    /// A caller's worker idle this long is retired
    /// (`PLIMSOLL_WORKER_IDLE_SEC`).
    pub idle: std::time::Duration,
    /// Where guest images for workers are written (default
    /// `<state>/worker-images`).
    pub image_dir: Option<std::path::PathBuf>,
    /// The microVM's settings (`wasm+microvm`); `None` reads them from the
    /// environment when the provider starts.
    pub microvm: Option<crate::wrapper::microvm::MicrovmSettings>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        WorkerConfig {
            worker_bin: None,
            warm: 2,
            max: 16,
            max_per_caller: None,
            max_runs: 1000,
            max_age: std::time::Duration::from_secs(600),
            idle: std::time::Duration::from_secs(60),
            image_dir: None,
            microvm: None,
        }
    }
}

impl WorkerConfig {
    /// The worker binary to use.
    pub fn resolve_bin(&self) -> Result<std::path::PathBuf, String> {
        if let Some(p) = &self.worker_bin {
            return Ok(p.clone());
        }
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut dirs = Vec::new();
        if let Some(d) = exe.parent() {
            dirs.push(d.to_path_buf());
            // Test and bench executables live one level down, in deps/.
            if let Some(up) = d.parent() {
                dirs.push(up.to_path_buf());
            }
        }
        dirs.into_iter()
            .map(|d| d.join("plimsoll-worker"))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                "plimsoll-worker was not found next to this executable; set PLIMSOLL_WORKER_BIN"
                    .into()
            })
    }
}

/// Runs guests in `plimsoll-worker` processes inside a wrapper
/// (`wasm+bwrap`, `wasm+gvisor`, `wasm+microvm`). Its tier is the wrapper's only if the start-up smoke
/// test passed; otherwise it refuses every run.
pub struct WrappedProvider {
    name: &'static str,
    pool: std::sync::Arc<crate::worker::pool::Pool>,
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
        let worker_bin = config.resolve_bin()?;
        let wrapper: std::sync::Arc<dyn crate::wrapper::Wrapper> = match kind {
            ProviderKind::WasmBwrap => std::sync::Arc::new(
                crate::wrapper::bwrap::Bwrap::detect().map_err(|e| e.to_string())?,
            ),
            ProviderKind::WasmGvisor => std::sync::Arc::new(
                crate::wrapper::gvisor::Gvisor::detect(image_dir.parent().unwrap_or(&image_dir))
                    .map_err(|e| e.to_string())?,
            ),
            ProviderKind::WasmMicrovm => std::sync::Arc::new(
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
        let started = std::thread::spawn(move || {
            handle.block_on(crate::worker::pool::Pool::start(
                wrapper,
                runtime,
                pool_config,
                uid,
                name,
                &guests,
            ))
        })
        .join()
        .map_err(|_| "the worker pool's start-up panicked".to_string())?;
        let pool = match started {
            Ok(p) => p,
            Err(e) => {
                let _ = std::thread::spawn(move || drop(rt)).join();
                return Err(format!("{name}: {e}"));
            }
        };
        Ok(WrappedProvider {
            name,
            pool,
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

    /// The pool (tests use it to find worker pids).
    pub fn pool(&self) -> &std::sync::Arc<crate::worker::pool::Pool> {
        &self.pool
    }
}

impl Provider for WrappedProvider {
    fn name(&self) -> &str {
        self.name
    }

    fn isolation(&self) -> Isolation {
        self.pool.isolation()
    }

    fn idle_workers(&self) -> Option<usize> {
        Some(self.pool.idle())
    }

    fn offers_sessions(&self) -> bool {
        self.pool.verified()
    }

    fn session_lifetime_cap(&self) -> Option<std::time::Duration> {
        Some(self.pool.max_age())
    }

    fn open_session<'a>(
        &'a self,
        caller: &'a str,
        opts: &'a SessionOptions,
        env: &'a Envelope,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        let pool = self.pool.clone();
        let handle = self.handle();
        let caller = caller.to_owned();
        let opts = opts.clone();
        let env = *env;
        Box::pin(async move {
            let Some(handle) = handle else {
                return Err(ErrorInfo {
                    code: "worker_unavailable".into(),
                    message: "the worker pool is shut down".into(),
                });
            };
            let mut task = AbortOnDrop(handle.spawn(async move {
                crate::worker::pool::Pool::open_session(&pool, &caller, &opts, &env).await
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

    fn run<'a>(
        &'a self,
        caller: &'a str,
        guest: &'a Guest,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult> {
        let pool = self.pool.clone();
        let caller = caller.to_owned();
        let guest = guest.clone();
        let req = req.clone();
        let env = *env;
        let handle = self.handle();
        Box::pin(async move {
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
