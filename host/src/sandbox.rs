//! The sandbox: the one entry point of the library.
//!
//! It owns the provider, the operator's envelope and isolation floor, and
//! the registry of named components. Every run goes through
//! [`Sandbox::run`], which validates the request, lowers the envelope,
//! resolves grants, checks the floor immediately before dispatch, and only
//! then hands the run to the provider.

use crate::component_cache::LoadError;
use crate::envelope::{Envelope, EnvelopeError};
use crate::grant::{GrantProfiles, GrantSet};
use crate::guest::{Guest, GuestKind};
use crate::provider::{DisabledProvider, Provider, ProviderKind, WasmProvider};
use crate::run::ErrorInfo;
use crate::run::{Language, RunRequest, RunResult, new_run_id};
use crate::runtime::{Runtime, RuntimeConfig, RuntimeError};
use crate::session::{
    Evaluated, SessionEnd, SessionInfo, SessionLimits, SessionOptions, SessionTable, Turn,
};
use crate::tier::{Isolation, Tier};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// The caller name of runs started through the library without one.
pub const LOCAL_CALLER: &str = "local";

/// Everything the operator decides.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Which provider runs guests. `Disabled` by default: nothing runs.
    pub provider: ProviderKind,
    /// The operator's envelope; requests may only lower it.
    pub envelope: Envelope,
    /// The operator-wide isolation floor (`SANDBOX_MIN_ISOLATION`).
    pub min_isolation: Option<Tier>,
    /// Engine, cache and workspace settings.
    pub runtime: RuntimeConfig,
    /// The host's grant profiles (`PLIMSOLL_GRANTS_FILE`).
    pub grants: GrantProfiles,
    /// The interpreter components, by language. A language without one is
    /// refused with `language_unavailable`.
    pub interpreters: Vec<(Language, PathBuf)>,
    /// The scientific Python guest's directory ([`crate::scientific`]),
    /// if the host offers it.
    pub scientific: Option<PathBuf>,
    /// Whether a `python` request that names no `guest` runs the
    /// scientific guest (`PLIMSOLL_PYTHON_GUEST=scientific`).
    pub python_default_scientific: bool,
    /// Limits on sessions.
    pub sessions: SessionLimits,
    /// Workers of the wrapped providers.
    pub workers: crate::provider::WorkerConfig,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            provider: ProviderKind::Disabled,
            envelope: Envelope::default(),
            min_isolation: None,
            runtime: RuntimeConfig::default(),
            grants: GrantProfiles::empty(),
            interpreters: Vec::new(),
            scientific: None,
            python_default_scientific: false,
            sessions: SessionLimits::default(),
            workers: crate::provider::WorkerConfig::default(),
        }
    }
}

/// Why a sandbox could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("invalid envelope: {0}")]
    Envelope(#[from] EnvelopeError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(
        "the envelope allows {envelope} bytes of memory but the engine's pool slots hold {engine}; raise the engine's max_memory_bytes"
    )]
    PoolTooSmall { envelope: u64, engine: u64 },
    #[error("provider {provider} cannot start: {why}")]
    Wrapper { provider: ProviderKind, why: String },
    #[error("the scientific Python guest {path}: {source}")]
    Scientific { path: PathBuf, source: LoadError },
    #[error(
        "PLIMSOLL_PYTHON_GUEST=scientific, but this host has no scientific guest (build it with `make guests`)"
    )]
    NoScientificGuest,
    #[error("the {language} interpreter component {path}: {source}")]
    Interpreter {
        language: &'static str,
        path: PathBuf,
        source: LoadError,
    },
}

/// The library's entry point. Cheap to share behind an `Arc`.
pub struct Sandbox {
    provider: Arc<dyn Provider>,
    runtime: Runtime,
    envelope: Envelope,
    min_isolation: Option<Tier>,
    grants: GrantProfiles,
    interpreters: HashMap<Language, Guest>,
    /// The scientific Python guest, if the host has one.
    scientific: Option<Guest>,
    python_default_scientific: bool,
    components: RwLock<HashMap<String, Guest>>,
    sessions: SessionTable,
}

impl Sandbox {
    /// Builds the sandbox. Fails if the configuration is unsafe or
    /// inconsistent; never falls back to another provider.
    pub fn new(mut config: SandboxConfig) -> Result<Self, SandboxError> {
        config.envelope.validate()?;
        if config.runtime.engine.cpu == crate::cpu::CpuTarget::Native {
            // The supervisor compiles the images a worker loads: for the
            // CPU the boundary shows it, not for this one. A VM's vCPU and
            // gVisor's filtered CPUID are narrower than the host's
            // (wrapper/microvm.rs, wrapper/gvisor.rs); bwrap's is the host's.
            match config.provider {
                ProviderKind::WasmMicrovm => {
                    config.runtime.engine.cpu = crate::wrapper::microvm::image_cpu();
                }
                ProviderKind::WasmGvisor => {
                    config.runtime.engine.cpu = crate::wrapper::gvisor::image_cpu();
                }
                _ => {}
            }
        }
        if config.envelope.memory_bytes > config.runtime.engine.max_memory_bytes {
            return Err(SandboxError::PoolTooSmall {
                envelope: config.envelope.memory_bytes,
                engine: config.runtime.engine.max_memory_bytes,
            });
        }
        let runtime = Runtime::new(config.runtime)?;
        runtime.warm().make_under(&config.envelope);
        let mut interpreters = HashMap::new();
        for (language, path) in &config.interpreters {
            let guest = runtime
                .load_file_as(path, language.identity_family())
                .and_then(|g| match g.kind() {
                    GuestKind::Interpreter => Ok(g),
                    GuestKind::Agent => Err(LoadError::WrongWorld(
                        "an interpreter must implement the `interpreter` world".into(),
                    )),
                })
                .map_err(|source| SandboxError::Interpreter {
                    language: language.as_str(),
                    path: path.clone(),
                    source,
                })?;
            interpreters.insert(*language, guest);
        }
        // Every provider runs it (a wrapped provider's workers load its
        // image, written below, when a run needs it).
        let scientific = match &config.scientific {
            Some(dir) if config.provider != ProviderKind::Disabled => Some(
                runtime
                    .load_scientific(dir)
                    .map_err(|source| SandboxError::Scientific {
                        path: dir.clone(),
                        source,
                    })?,
            ),
            _ => None,
        };
        if config.python_default_scientific
            && scientific.is_none()
            && config.provider != ProviderKind::Disabled
        {
            return Err(SandboxError::NoScientificGuest);
        }
        let provider: Arc<dyn Provider> = match config.provider {
            ProviderKind::Disabled => Arc::new(DisabledProvider),
            ProviderKind::Wasm => Arc::new(WasmProvider::new(runtime.clone())),
            kind @ (ProviderKind::WasmBwrap
            | ProviderKind::WasmGvisor
            | ProviderKind::WasmMicrovm) => {
                let image_dir = config
                    .workers
                    .image_dir
                    .clone()
                    .unwrap_or_else(|| crate::paths::default_state_dir().join("worker-images"));
                let guests: Vec<Guest> = interpreters
                    .values()
                    .chain(scientific.as_ref())
                    .cloned()
                    .collect();
                Arc::new(
                    crate::provider::WrappedProvider::start(
                        kind,
                        runtime.clone(),
                        &config.workers,
                        image_dir,
                        config.envelope.workspace_bytes.saturating_mul(2),
                        guests,
                    )
                    .map_err(|why| SandboxError::Wrapper {
                        provider: kind,
                        why,
                    })?,
                )
            }
        };
        Ok(Sandbox {
            provider,
            runtime,
            envelope: config.envelope,
            min_isolation: config.min_isolation,
            grants: config.grants,
            interpreters,
            scientific,
            python_default_scientific: config.python_default_scientific,
            sessions: SessionTable::new(config.sessions),
            components: RwLock::new(HashMap::new()),
        })
    }

    /// The isolation runs get right now.
    pub fn isolation(&self) -> Isolation {
        self.provider.isolation()
    }

    /// Warm workers waiting for a run, under a wrapped provider (`None`
    /// in-process).
    pub fn idle_workers(&self) -> Option<usize> {
        self.provider.idle_workers()
    }

    /// The provider's name.
    pub fn provider_name(&self) -> &str {
        self.provider.name()
    }

    /// The host's grant profiles.
    pub fn grant_profiles(&self) -> &GrantProfiles {
        &self.grants
    }

    /// The operator's envelope.
    pub fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// The runtime (engine, linker, caches).
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Loads a component without registering it.
    pub fn load(&self, bytes: &[u8]) -> Result<Guest, LoadError> {
        self.runtime.load(bytes)
    }

    /// Loads a component and registers it under `name` (and under its
    /// identity), so that requests can name it.
    pub fn register(&self, name: &str, bytes: &[u8]) -> Result<Guest, LoadError> {
        let guest = self.runtime.load(bytes)?;
        self.register_guest(name, guest.clone());
        Ok(guest)
    }

    /// Registers an already loaded guest under `name` and its identity.
    pub fn register_guest(&self, name: &str, guest: Guest) {
        let mut map = self.components.write().unwrap_or_else(|p| p.into_inner());
        map.insert(guest.identity().to_owned(), guest.clone());
        map.insert(name.to_owned(), guest);
    }

    /// The interpreter guest for `language`, if the host has one.
    pub fn interpreter(&self, language: Language) -> Option<&Guest> {
        self.interpreters.get(&language)
    }

    /// The scientific Python guest, if the host has one.
    pub fn scientific(&self) -> Option<&Guest> {
        self.scientific.as_ref()
    }

    /// The guest that runs `language` code when the request names `guest`
    /// (`scientific`, `standard`, or none: the operator's default).
    pub fn interpreter_for(
        &self,
        language: Language,
        guest: Option<&str>,
    ) -> Result<Guest, ErrorInfo> {
        let err = |code: &str, message: String| ErrorInfo {
            code: code.into(),
            message,
        };
        let scientific = match (language, guest) {
            (Language::Python, None) => self.python_default_scientific,
            (Language::Python, Some(crate::scientific::GUEST_NAME)) => true,
            (_, None | Some("standard")) => false,
            (_, Some(_)) => {
                // The name is the caller's: not quoted back.
                return Err(err(
                    "guest_unavailable",
                    format!(
                        "no {} guest has that name: `guest` is \"standard\"{}",
                        language.as_str(),
                        if language == Language::Python {
                            " or \"scientific\""
                        } else {
                            ""
                        }
                    ),
                ));
            }
        };
        if scientific {
            return self.scientific.clone().ok_or_else(|| {
                err(
                    "guest_unavailable",
                    "this host has no scientific Python guest (build it with `make guests`)".into(),
                )
            });
        }
        self.interpreters.get(&language).cloned().ok_or_else(|| {
            err(
                "language_unavailable",
                format!("this host has no {} interpreter", language.as_str()),
            )
        })
    }

    /// The identities of the interpreter guests, by language.
    pub fn interpreter_identities(&self) -> Vec<(Language, String)> {
        let mut v: Vec<_> = self
            .interpreters
            .iter()
            .map(|(l, g)| (*l, g.identity().to_owned()))
            .collect();
        v.sort_by_key(|(l, _)| l.as_str());
        v
    }

    /// Every interpreter guest by the name a request selects it with: the
    /// language (`python`, `javascript`), and `python/scientific` for the
    /// scientific guest when the host has it.
    pub fn guest_identities(&self) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = self
            .interpreter_identities()
            .into_iter()
            .map(|(l, id)| (l.as_str().to_owned(), id))
            .collect();
        if let Some(g) = &self.scientific {
            v.push((
                format!("python/{}", crate::scientific::GUEST_NAME),
                g.identity().to_owned(),
            ));
        }
        v
    }

    /// The registered guest named `name` (a name or an identity).
    pub fn component(&self, name: &str) -> Option<Guest> {
        self.components
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
            .cloned()
    }

    /// Runs a request that names a registered component, as the local
    /// caller.
    pub async fn run(&self, req: &RunRequest) -> RunResult {
        self.run_as(LOCAL_CALLER, req).await
    }

    /// Runs a request that names a registered component, on behalf of
    /// `caller`.
    pub async fn run_as(&self, caller: &str, req: &RunRequest) -> RunResult {
        let run_id = new_run_id();
        let name = match (req.language, req.component.as_deref()) {
            (Some(_), Some(_)) => {
                return RunResult::refused(
                    run_id,
                    self.isolation(),
                    "invalid_request",
                    "give either `language` (with `code`) or `component`, not both",
                );
            }
            (Some(language), None) => {
                if req.code.is_none() {
                    return RunResult::refused(
                        run_id,
                        self.isolation(),
                        "invalid_request",
                        "a `language` request needs `code`",
                    );
                }
                return match self.interpreter_for(language, req.guest.as_deref()) {
                    Ok(g) => self.run_guest_with_id(caller, &g, req, run_id).await,
                    Err(e) => RunResult::refused(run_id, self.isolation(), &e.code, e.message),
                };
            }
            (None, Some(name)) => name,
            (None, None) => {
                return RunResult::refused(
                    run_id,
                    self.isolation(),
                    "invalid_request",
                    "the request names neither a language nor a component",
                );
            }
        };
        match self.component(name) {
            Some(g) => self.run_guest_with_id(caller, &g, req, run_id).await,
            None => RunResult::refused(
                run_id,
                self.isolation(),
                "unknown_component",
                "no component of that name or identity is registered",
            ),
        }
    }

    /// Runs `guest` (the request's `component` field is ignored).
    pub async fn run_guest(&self, guest: &Guest, req: &RunRequest) -> RunResult {
        self.run_guest_with_id(LOCAL_CALLER, guest, req, new_run_id())
            .await
    }

    /// Runs `guest` on behalf of `caller` (grant profiles may be limited to
    /// some callers; a minted JWT names the caller as its subject).
    pub async fn run_guest_as(&self, caller: &str, guest: &Guest, req: &RunRequest) -> RunResult {
        self.run_guest_with_id(caller, guest, req, new_run_id())
            .await
    }

    /// Opens a session for `caller` on the interpreter for `req.language`
    /// (or the registered interpreter component `req.component`). Only
    /// `language`/`component`, `require_identity`, `minimum_isolation` and
    /// `limits` of `req` are used.
    pub async fn open_session(
        &self,
        caller: &str,
        req: &RunRequest,
    ) -> Result<SessionInfo, ErrorInfo> {
        let guest = self.resolve_guest(req)?;
        if let Some(want) = &req.require_identity
            && want != guest.identity()
        {
            return Err(ErrorInfo {
                code: "identity_mismatch".into(),
                message: format!(
                    "`require_identity` names another guest; this guest is {}",
                    guest.identity()
                ),
            });
        }
        self.open_session_with(caller, &SessionOptions::single(guest), req)
            .await
    }

    /// Opens a session for `caller` as `opts` says: its interpreters over
    /// one workspace. Of `req`, only `limits` and `minimum_isolation` are
    /// used.
    pub async fn open_session_with(
        &self,
        caller: &str,
        opts: &SessionOptions,
        req: &RunRequest,
    ) -> Result<SessionInfo, ErrorInfo> {
        if opts
            .guests
            .iter()
            .any(|g| g.kind() != GuestKind::Interpreter)
        {
            return Err(ErrorInfo {
                code: "invalid_request".into(),
                message:
                    "sessions need an interpreter guest (a `language`, or an interpreter component)"
                        .into(),
            });
        }
        let env = self
            .envelope
            .lowered_by(&req.limits)
            .map_err(|e| ErrorInfo {
                code: "invalid_limits".into(),
                message: e.to_string(),
            })?;
        self.check_provider(req)?;
        // A session lives no longer than the worker that holds it.
        let mut opts = opts.clone();
        if let Some(cap) = self.provider.session_lifetime_cap() {
            opts.lifetime = Some(opts.lifetime.map_or(cap, |l| l.min(cap)));
        }
        self.sessions
            .open(self.provider.as_ref(), caller, &opts, &env)
            .await
    }

    /// Evaluates `req.code` in `caller`'s session `session_id`. Each
    /// evaluation is a run with its own envelope (`req.limits`), grants,
    /// outputs and CallTrace. A busy session refuses (`session_busy`).
    pub async fn run_in_session(
        &self,
        caller: &str,
        session_id: &str,
        req: &RunRequest,
    ) -> RunResult {
        self.evaluate(caller, session_id, req, Turn::Refuse)
            .await
            .result
    }

    /// [`Sandbox::run_in_session`] for a session with several interpreters
    /// (`req.language` picks one), waiting its turn or not as `turn` says,
    /// with what became of the interpreter.
    pub async fn evaluate(
        &self,
        caller: &str,
        session_id: &str,
        req: &RunRequest,
        turn: Turn,
    ) -> Evaluated {
        let run_id = new_run_id();
        let iso = self.isolation();
        let plain = |result| Evaluated {
            result,
            interpreter_started: false,
            interpreter_ended: false,
        };
        let env = match self.envelope.lowered_by(&req.limits) {
            Ok(env) => env,
            Err(e) => {
                return plain(RunResult::refused(
                    run_id,
                    iso,
                    "invalid_limits",
                    e.to_string(),
                ));
            }
        };
        let budget = Duration::from_millis(env.wall_time_ms);
        let grants = match GrantSet::resolve(&self.grants, &req.grants, caller, budget) {
            Ok(g) => g,
            Err(e) => return plain(RunResult::refused(run_id, iso, e.code(), e.to_string())),
        };
        // The floor is checked immediately before the evaluation runs.
        if let Err(e) = self.check_provider(req) {
            return plain(RunResult::refused(run_id, iso, &e.code, e.message));
        }
        self.sessions
            .eval(caller, session_id, req, &env, grants, iso, run_id, turn)
            .await
    }

    /// Why `caller`'s session ended, when it ended by itself (idle,
    /// lifetime, a failure, a newer session of its owner, shutdown) within
    /// [`crate::session::TOMBSTONE_TTL`]. `None` for an open session, an
    /// unknown one and another caller's alike.
    pub fn session_ended(&self, caller: &str, session_id: &str) -> Option<SessionEnd> {
        self.sessions.ended(caller, session_id)
    }

    /// Open sessions of `caller` opened for the owner tag `owner`.
    pub fn session_count_for_owner(&self, caller: &str, owner: &str) -> usize {
        self.sessions.count_for_owner(caller, owner)
    }

    /// Whether `caller`'s session is open.
    pub fn session_open(&self, caller: &str, session_id: &str) -> bool {
        self.sessions.is_open(caller, session_id)
    }

    /// Whether this sandbox's provider keeps sessions: the in-process
    /// `wasm` provider in this process, a wrapped one in a worker bound to
    /// the session's caller.
    pub fn supports_sessions(&self) -> bool {
        self.provider.offers_sessions()
    }

    /// Closes `caller`'s session. Returns whether it was open.
    pub fn close_session(&self, caller: &str, session_id: &str) -> bool {
        self.sessions.close(caller, session_id)
    }

    /// Closes idle and expired sessions; returns how many are left.
    pub fn sweep_sessions(&self) -> usize {
        self.sessions.sweep();
        self.sessions.len()
    }

    /// Open sessions of `caller`.
    pub fn session_count(&self, caller: &str) -> usize {
        self.sessions.count_for(caller)
    }

    /// The operator's limits on sessions.
    pub fn session_limits(&self) -> SessionLimits {
        self.sessions.limits()
    }

    /// The operator-wide isolation floor.
    pub fn min_isolation(&self) -> Option<Tier> {
        self.min_isolation
    }

    /// Open sessions in all.
    pub fn session_total(&self) -> usize {
        self.sessions.len()
    }

    /// Closes every session (a daemon shutting down).
    pub fn close_all_sessions(&self) {
        self.sessions.close_all();
    }

    fn resolve_guest(&self, req: &RunRequest) -> Result<Guest, ErrorInfo> {
        let err = |code: &str, message: String| ErrorInfo {
            code: code.into(),
            message,
        };
        match (req.language, req.component.as_deref()) {
            (Some(l), None) => self.interpreter_for(l, req.guest.as_deref()),
            (None, Some(name)) => self.component(name).ok_or_else(|| {
                err(
                    "unknown_component",
                    "no component of that name or identity is registered".into(),
                )
            }),
            _ => Err(err(
                "invalid_request",
                "give exactly one of `language` and `component`".into(),
            )),
        }
    }

    /// Refuses when the provider runs nothing, keeps no sessions, or is
    /// below the floor.
    fn check_provider(&self, req: &RunRequest) -> Result<(), ErrorInfo> {
        let iso = self.provider.isolation();
        if iso.provider == "disabled" {
            return Err(ErrorInfo {
                code: "provider_disabled".into(),
                message: crate::provider::DISABLED_MESSAGE.into(),
            });
        }
        if !self.provider.offers_sessions() {
            return Err(ErrorInfo {
                code: "sessions_unavailable".into(),
                message: format!(
                    "provider {} keeps no sessions (its smoke test failed)",
                    iso.provider
                ),
            });
        }
        if let Some(floor) = req.minimum_isolation.max(self.min_isolation)
            && iso.tier < floor
        {
            return Err(ErrorInfo {
                code: "insufficient_isolation".into(),
                message: format!(
                    "the run requires isolation `{floor}` but provider {} gives `{}`",
                    iso.provider, iso.tier
                ),
            });
        }
        Ok(())
    }

    async fn run_guest_with_id(
        &self,
        caller: &str,
        guest: &Guest,
        req: &RunRequest,
        run_id: String,
    ) -> RunResult {
        let refuse = |code: &str, message: String| {
            let mut r = RunResult::refused(run_id.clone(), self.isolation(), code, message);
            r.guest = Some(guest.identity().to_owned());
            r
        };
        let env = match self.envelope.lowered_by(&req.limits) {
            Ok(env) => env,
            Err(e) => return refuse("invalid_limits", e.to_string()),
        };
        if let Some(want) = &req.require_identity
            && want != guest.identity()
        {
            return refuse(
                "identity_mismatch",
                format!(
                    "`require_identity` names another guest; this guest is {}",
                    guest.identity()
                ),
            );
        }
        let budget = Duration::from_millis(env.wall_time_ms);
        let grants = match GrantSet::resolve(&self.grants, &req.grants, caller, budget) {
            Ok(g) => g,
            Err(e) => return refuse(e.code(), e.to_string()),
        };
        // The floor is checked here, against the provider that will run this
        // request, and nothing awaits between this check and the dispatch.
        let iso = self.provider.isolation();
        let floor = req.minimum_isolation.max(self.min_isolation);
        if let Some(floor) = floor
            && iso.tier < floor
        {
            return refuse(
                "insufficient_isolation",
                format!(
                    "the run requires isolation `{floor}` but provider {} gives `{}`",
                    iso.provider, iso.tier
                ),
            );
        }
        self.provider
            .run(caller, guest, req, &env, grants, run_id)
            .await
    }
}
