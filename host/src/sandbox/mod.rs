//! The sandbox: the one entry point of the library.
//!
//! It owns the provider, the operator's envelope and isolation floor, the
//! interpreter guests ([`shelf`]) and the registry of named components.
//! Every run goes through [`Sandbox::run`], which validates the request,
//! lowers the envelope, resolves grants, checks the floor immediately
//! before dispatch, and only then hands the run to the provider.
//!
//! [`Sandbox::new`] loads every guest and starts the provider before it
//! returns (a CLI, a test, an embedder). [`Sandbox::start`] returns at once
//! and does both in the background (a daemon that must answer at once): a
//! run for a guest or a provider still starting waits for it within its
//! own wall time, or is refused as `warming_up`.

mod guests;
pub mod project;
mod runs;
mod sessions;
pub mod shelf;
pub mod snapshots;

pub use shelf::{Readiness, Shelved, WARMING_UP};

use crate::component_cache::LoadError;
use crate::envelope::{Envelope, EnvelopeError};
use crate::grant::GrantProfiles;
use crate::guest::{Guest, GuestKind};
use crate::provider::{DisabledProvider, Provider, ProviderKind, WasmProvider};
use crate::run::Language;
use crate::runtime::{Runtime, RuntimeConfig, RuntimeError};
use crate::session::{SessionLimits, SessionTable};
use crate::tier::{Isolation, Tier};
use shelf::{Loader, Shelf};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

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
    /// A guest that failed to load, as its error says.
    #[error("{0}")]
    Load(String),
}

/// The library's entry point. Cheap to share behind an `Arc`.
pub struct Sandbox {
    provider: Arc<dyn Provider>,
    runtime: Runtime,
    envelope: Envelope,
    min_isolation: Option<Tier>,
    grants: GrantProfiles,
    /// The interpreter guests, each ready, loading or failed.
    shelf: Arc<Shelf>,
    /// A request waits for its guest's compile however long it takes (a
    /// CLI), rather than within its wall time (a daemon).
    wait_for_compile: bool,
    python_default_scientific: bool,
    components: RwLock<HashMap<String, Guest>>,
    sessions: SessionTable,
}

/// When a sandbox's guests and provider become ready.
#[derive(Clone, Copy, PartialEq, Eq)]
enum When {
    /// Before the constructor returns; any failure is its error.
    Now,
    /// In the background; a failure is a guest's or the provider's state.
    Background,
    /// Each guest when a request first needs it (the provider now).
    OnDemand,
}

/// The order guests are loaded in the background: the ones a request
/// without `guest` gets (the operator's defaults), cheapest to compile
/// first, then the others.
fn load_order(keys: &[Shelved], python_default_scientific: bool) -> Vec<Shelved> {
    let rank = |k: &Shelved| match k {
        Shelved::Interpreter(Language::Javascript) => 0,
        Shelved::Interpreter(Language::Python) if !python_default_scientific => 1,
        Shelved::Scientific if python_default_scientific => 1,
        // After the interpreters its `python3` and `node` start.
        Shelved::Interpreter(Language::Shell) => 2,
        Shelved::Interpreter(_) => 3,
        Shelved::Scientific => 4,
    };
    let mut v = keys.to_vec();
    v.sort_by_key(|k| (rank(k), *k));
    v
}

impl Sandbox {
    /// Builds the sandbox: every guest loaded, the provider started.
    /// Fails if the configuration is unsafe or inconsistent, or anything
    /// fails to load or start; never falls back to another provider.
    pub fn new(config: SandboxConfig) -> Result<Self, SandboxError> {
        Sandbox::build(config, When::Now)
    }

    /// Builds the sandbox at once and loads its guests and starts its
    /// provider in the background (see the module's documentation). What
    /// can be checked without compiling is checked now — the envelope, the
    /// engine, the guests' files, the wrapper's tools — and is an error
    /// here; a guest that then fails to compile, or a wrapper whose smoke
    /// test fails, is refused on every run that needs it, with the reason
    /// ([`Sandbox::guest_readiness`], [`Sandbox::isolation`]).
    pub fn start(config: SandboxConfig) -> Result<Self, SandboxError> {
        Sandbox::build(config, When::Background)
    }

    /// Builds the sandbox with its provider started and each guest loaded
    /// the first time a request needs it, the request waiting for the
    /// compile however long it takes (a command-line run, a batch: a
    /// JavaScript run never pays for CPython, a batch that names the
    /// scientific guest in one job loads it then).
    pub fn lazy(config: SandboxConfig) -> Result<Self, SandboxError> {
        Sandbox::build(config, When::OnDemand)
    }

    fn build(mut config: SandboxConfig, when: When) -> Result<Self, SandboxError> {
        config.envelope.validate()?;
        if config.runtime.engine.cpu == crate::cpu::CpuTarget::Native {
            // The supervisor compiles the images a worker loads: for the
            // CPU the boundary shows it, not for this one. A VM's vCPU and
            // gVisor's filtered CPUID are narrower than the host's
            // (wrapper/microvm/, wrapper/gvisor.rs); bwrap's is the host's.
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
        // Every provider runs the scientific guest (a wrapped provider's
        // workers load its image when a run needs it).
        let scientific = config
            .scientific
            .clone()
            .filter(|_| config.provider != ProviderKind::Disabled);
        if config.python_default_scientific
            && scientific.is_none()
            && config.provider != ProviderKind::Disabled
        {
            return Err(SandboxError::NoScientificGuest);
        }
        let mut loads: Vec<(Shelved, Loader)> = Vec::new();
        for (language, path) in &config.interpreters {
            let (rt, path, language) = (runtime.clone(), path.clone(), *language);
            if when != When::Now {
                std::fs::metadata(&path).map_err(|e| SandboxError::Interpreter {
                    language: language.as_str(),
                    path: path.clone(),
                    source: LoadError::Io(e),
                })?;
            }
            loads.push((
                Shelved::Interpreter(language),
                Box::new(move || {
                    rt.load_file_as(&path, language.identity_family())
                        .and_then(|g| match (g.kind(), language) {
                            (GuestKind::Shell, Language::Shell) => Ok(g),
                            (GuestKind::Interpreter, Language::Python | Language::Javascript) => {
                                Ok(g)
                            }
                            _ => Err(LoadError::WrongWorld(
                                "an interpreter must implement the `interpreter` world, the shell the `shell` world".into(),
                            )),
                        })
                        .map_err(|source| {
                            SandboxError::Interpreter {
                                language: language.as_str(),
                                path,
                                source,
                            }
                            .to_string()
                        })
                }),
            ));
        }
        if let Some(dir) = scientific {
            if when != When::Now {
                std::fs::metadata(dir.join(crate::scientific::SNAPSHOT_FILE)).map_err(|e| {
                    SandboxError::Scientific {
                        path: dir.clone(),
                        source: LoadError::Io(e),
                    }
                })?;
            }
            let rt = runtime.clone();
            loads.push((
                Shelved::Scientific,
                Box::new(move || {
                    rt.load_scientific(&dir).map_err(|source| {
                        SandboxError::Scientific { path: dir, source }.to_string()
                    })
                }),
            ));
        }
        let keys: Vec<Shelved> = loads.iter().map(|(k, _)| *k).collect();
        let order = load_order(&keys, config.python_default_scientific);
        loads.sort_by_key(|(k, _)| order.iter().position(|o| o == k));
        let shelf = Arc::new(if when == When::OnDemand {
            Shelf::on_demand(std::mem::take(&mut loads))
        } else {
            Shelf::loading(keys)
        });
        let mut ready: Vec<Guest> = Vec::new();
        if when == When::Now {
            for (key, load) in loads.drain(..) {
                match load() {
                    Ok(g) => {
                        ready.push(g.clone());
                        shelf.set(key, Ok(g));
                    }
                    Err(e) => return Err(SandboxError::Load(e)),
                }
            }
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
                let workspace_bytes = config.envelope.workspace_bytes.saturating_mul(2);
                let started = match when {
                    When::Now | When::OnDemand => crate::provider::WrappedProvider::start(
                        kind,
                        runtime.clone(),
                        &config.workers,
                        image_dir,
                        workspace_bytes,
                        ready,
                    ),
                    // The guests' images are written when a run needs them.
                    When::Background => crate::provider::WrappedProvider::begin(
                        kind,
                        runtime.clone(),
                        &config.workers,
                        image_dir,
                        workspace_bytes,
                        Vec::new(),
                    ),
                };
                Arc::new(started.map_err(|why| SandboxError::Wrapper {
                    provider: kind,
                    why,
                })?)
            }
        };
        if when == When::Background {
            shelf.fill_in_background(loads, |_| {});
        }
        Ok(Sandbox {
            provider,
            runtime,
            envelope: config.envelope,
            min_isolation: config.min_isolation,
            grants: config.grants,
            shelf,
            wait_for_compile: when == When::OnDemand,
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

    /// The operator-wide isolation floor.
    pub fn min_isolation(&self) -> Option<Tier> {
        self.min_isolation
    }

    /// Every interpreter guest the host is configured with, by name
    /// (`python`, `javascript`, `python/scientific`), with where it
    /// stands.
    pub fn guest_readiness(&self) -> Vec<(String, Readiness)> {
        self.shelf.readiness()
    }
}
