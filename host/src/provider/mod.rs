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

mod wrapped;
pub use wrapped::WrappedProvider;

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

    /// Waits (until `deadline`) for a provider that is still starting (a
    /// wrapped provider's smoke test) to have proved its tier; `warming_up`
    /// past the deadline. The sandbox calls it before the isolation floor
    /// is checked, so that a starting provider is waited for, not refused
    /// for the tier it has not proved yet.
    fn ready(&self, _deadline: std::time::Instant) -> BoxFuture<'_, Result<(), ErrorInfo>> {
        Box::pin(async { Ok(()) })
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

    /// Opens a session for `caller` set to `image` (a snapshot,
    /// [`crate::snapshot`]) with `opts.guests` — the snapshot's guests,
    /// in its order. A provider whose sessions have no snapshots answers
    /// `snapshot_unavailable`.
    fn resume_session<'a>(
        &'a self,
        _caller: &'a str,
        _opts: &'a SessionOptions,
        _env: &'a Envelope,
        _image: &'a crate::snapshot::archive::SessionImage,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        let name = self.name().to_owned();
        Box::pin(async move {
            Err(ErrorInfo {
                code: crate::snapshot::UNAVAILABLE.into(),
                message: format!("provider {name} does not resume sessions"),
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

    fn resume_session<'a>(
        &'a self,
        _caller: &'a str,
        opts: &'a SessionOptions,
        env: &'a Envelope,
        image: &'a crate::snapshot::archive::SessionImage,
    ) -> BoxFuture<'a, Result<Box<dyn LiveSession>, ErrorInfo>> {
        Box::pin(async move {
            let s = LocalSession::resume(&self.runtime, opts.guests.clone(), env, image).await?;
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
