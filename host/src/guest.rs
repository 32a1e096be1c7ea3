//! A guest: a component checked against plimsoll's worlds and
//! pre-instantiated, ready for cheap fresh instances.

use crate::bindings::shell::{Shell, ShellPre};
use crate::bindings::{Interpreter, InterpreterPre};
use crate::component_cache::LoadError;
use crate::state::RunState;
use std::sync::Arc;
use wasmtime::Store;
use wasmtime::component::{Component, Linker};
use wasmtime_wasi::p2::bindings::{Command, CommandPre};

/// Which world a guest implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestKind {
    /// `agent`: a `wasi:cli` command; a run calls `run` once.
    Agent,
    /// `interpreter`: exports `eval(code)`.
    Interpreter,
    /// `shell`: exports `eval(script)`, whose value is the exit status,
    /// and imports `programs` (the shell guest, `guests/shell`).
    Shell,
}

pub use crate::run::SHELL_FAMILY;

/// The interpreters a shell guest's `python3` and `node` start: fresh
/// instances of these guests ([`crate::programs`]).
#[derive(Debug, Clone, Default)]
pub struct Programs {
    /// What `python3` and `python` run.
    pub python: Option<Guest>,
    /// What `node` and `nodejs` run.
    pub node: Option<Guest>,
}

impl Programs {
    /// The guest for `program`, if this shell has one.
    pub fn guest(&self, program: crate::programs::Program) -> Option<&Guest> {
        match program {
            crate::programs::Program::Python => self.python.as_ref(),
            crate::programs::Program::Node => self.node.as_ref(),
        }
    }
}

pub(crate) enum GuestPre {
    Agent(CommandPre<RunState>),
    Interpreter(InterpreterPre<RunState>),
    Shell(ShellPre<RunState>),
    /// A core module of the interpreter world's semantics (the scientific
    /// Python guest, [`crate::scientific`]).
    Core(crate::scientific::CorePre),
}

struct GuestInner {
    /// The component; `None` for a core-module guest.
    component: Option<Component>,
    /// How a live instance's state is read and written, when the guest
    /// was compiled instrumented ([`crate::snapshot`]).
    state: Option<crate::snapshot::access::StateAccess>,
    /// The same, for a core-module guest.
    core_state: Option<crate::snapshot::core_access::CoreAccess>,
    /// What a fresh instance holds, captured the first time a snapshot
    /// needs it.
    base: tokio::sync::OnceCell<Result<Arc<crate::snapshot::image::Base>, String>>,
    identity: String,
    content_hash: String,
    kind: GuestKind,
    pre: GuestPre,
}

/// A loaded, linked guest component. Cheap to clone.
#[derive(Clone)]
pub struct Guest {
    inner: Arc<GuestInner>,
    /// For a shell guest, the interpreters its `python3` and `node` start.
    programs: Option<Arc<Programs>>,
}

impl std::fmt::Debug for Guest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guest")
            .field("identity", &self.inner.identity)
            .field("kind", &self.inner.kind)
            .finish()
    }
}

impl Guest {
    /// Links `component` and works out its world. `family` prefixes the
    /// identity (`component`, `python-wasm`, `quickjs-wasm`).
    pub(crate) fn link(
        linker: &Linker<RunState>,
        component: &Component,
        content_hash: String,
        family: &str,
    ) -> Result<Guest, LoadError> {
        let pre = linker.instantiate_pre(component).map_err(|e| {
            LoadError::WrongWorld(format!(
                "it imports something plimsoll does not provide: {}",
                first_line(&format!("{e:#}"))
            ))
        })?;
        let (kind, pre) = if family == SHELL_FAMILY {
            let p = ShellPre::new(pre).map_err(|e| {
                LoadError::WrongWorld(format!(
                    "the shell guest must implement the `shell` world: {}",
                    first_line(&format!("{e:#}"))
                ))
            })?;
            (GuestKind::Shell, GuestPre::Shell(p))
        } else if let Ok(p) = CommandPre::new(pre.clone()) {
            (GuestKind::Agent, GuestPre::Agent(p))
        } else if let Ok(p) = InterpreterPre::new(pre) {
            (GuestKind::Interpreter, GuestPre::Interpreter(p))
        } else {
            return Err(LoadError::WrongWorld(
                "it exports neither `wasi:cli/run` (world `agent`) nor `eval` (world `interpreter`)".into(),
            ));
        };
        let state = crate::snapshot::access::StateAccess::of(component).filter(|s| s.complete());
        Ok(Guest {
            inner: Arc::new(GuestInner {
                component: Some(component.clone()),
                state,
                core_state: None,
                base: tokio::sync::OnceCell::new(),
                identity: format!("{family}:sha256:{content_hash}"),
                content_hash,
                kind,
                pre,
            }),
            programs: None,
        })
    }

    /// This shell guest with the interpreters its `python3` and `node`
    /// start (for any other guest, the same guest).
    pub fn with_programs(&self, programs: Programs) -> Guest {
        if self.inner.kind != GuestKind::Shell {
            return self.clone();
        }
        Guest {
            inner: self.inner.clone(),
            programs: Some(Arc::new(programs)),
        }
    }

    /// A shell guest's interpreters (see [`Guest::with_programs`]).
    pub fn programs(&self) -> Option<&Programs> {
        self.programs.as_deref()
    }

    /// The guest's identity: `<family>:sha256:<content hash>`.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The SHA-256 of the component's bytes, hex.
    pub fn content_hash(&self) -> &str {
        &self.inner.content_hash
    }

    /// The world it implements.
    pub fn kind(&self) -> GuestKind {
        self.inner.kind
    }

    /// The identity's family (`component`, `python-wasm`, …).
    pub fn family(&self) -> &str {
        self.inner
            .identity
            .split(":sha256:")
            .next()
            .unwrap_or("component")
    }

    /// Links the scientific guest: `module` (its snapshot, whose hash is
    /// `module_hash`) with its read-only files.
    pub(crate) fn core(
        linker: &wasmtime::Linker<RunState>,
        module: &wasmtime::Module,
        module_hash: &str,
        artifacts: &crate::scientific::Artifacts,
    ) -> Result<Guest, LoadError> {
        let (pre, content_hash) = crate::scientific::link(linker, module, module_hash, artifacts)?;
        Ok(Guest {
            inner: Arc::new(GuestInner {
                component: None,
                state: None,
                core_state: crate::snapshot::core_access::CoreAccess::of(module),
                base: tokio::sync::OnceCell::new(),
                identity: format!("{}:sha256:{content_hash}", crate::scientific::FAMILY),
                content_hash,
                kind: GuestKind::Interpreter,
                pre: GuestPre::Core(pre),
            }),
            programs: None,
        })
    }

    /// A core-module guest loaded from a worker's bundle, whose content
    /// hash the supervisor gives (see [`crate::Runtime::load_trusted_core`]).
    pub(crate) fn core_as(
        linker: &wasmtime::Linker<RunState>,
        module: &wasmtime::Module,
        content_hash: &str,
        artifacts: &crate::scientific::Artifacts,
    ) -> Result<Guest, LoadError> {
        let pre = crate::scientific::link_as(linker, module, artifacts)?;
        Ok(Guest {
            inner: Arc::new(GuestInner {
                component: None,
                state: None,
                core_state: crate::snapshot::core_access::CoreAccess::of(module),
                base: tokio::sync::OnceCell::new(),
                identity: format!("{}:sha256:{content_hash}", crate::scientific::FAMILY),
                content_hash: content_hash.to_owned(),
                kind: GuestKind::Interpreter,
                pre: GuestPre::Core(pre),
            }),
            programs: None,
        })
    }

    /// The component; `None` for a core-module guest.
    pub(crate) fn component(&self) -> Option<&Component> {
        self.inner.component.as_ref()
    }

    /// Whether this is a core-module guest (its worker image is a
    /// directory, [`crate::worker::protocol::ImageKind::Core`]).
    pub fn is_core_module(&self) -> bool {
        self.inner.component.is_none()
    }

    pub(crate) fn pre(&self) -> &GuestPre {
        &self.inner.pre
    }

    /// Whether a live instance's state can be read and written (the guest
    /// was compiled instrumented, [`crate::snapshot`]).
    pub fn has_snapshots(&self) -> bool {
        self.inner.state.is_some() || self.inner.core_state.is_some()
    }

    pub(crate) fn state_access(&self) -> Option<&crate::snapshot::access::StateAccess> {
        self.inner.state.as_ref()
    }

    pub(crate) fn core_state_access(&self) -> Option<&crate::snapshot::core_access::CoreAccess> {
        self.inner.core_state.as_ref()
    }

    pub(crate) fn base_cell(
        &self,
    ) -> &tokio::sync::OnceCell<Result<Arc<crate::snapshot::image::Base>, String>> {
        &self.inner.base
    }
}

/// A live instance of an interpreter component: its typed exports, and
/// the instance itself (for its state, [`crate::snapshot`]).
pub(crate) struct InterpreterLive {
    pub(crate) api: Interpreter,
    pub(crate) instance: wasmtime::component::Instance,
}

/// A live instance of a guest.
pub(crate) enum Live {
    Agent(Command),
    Interpreter(InterpreterLive),
    Shell(Shell),
    Core(crate::scientific::CoreLive),
}

/// Gives a store that takes over a pre-instantiated instance of `guest`
/// what the guest's kind keeps in the store: for a core-module guest, its
/// file layout and memory base (a component's state needs nothing).
pub(crate) fn adopt(guest: &Guest, store: &mut Store<RunState>) {
    if let GuestPre::Core(pre) = guest.pre() {
        crate::scientific::adopt(pre, store);
    }
}

/// Instantiates the guest in `store`.
pub(crate) async fn instantiate(
    guest: &Guest,
    store: &mut Store<RunState>,
) -> wasmtime::Result<Live> {
    match guest.pre() {
        GuestPre::Agent(pre) => Ok(Live::Agent(pre.instantiate_async(store).await?)),
        GuestPre::Interpreter(pre) => {
            let instance = pre.instance_pre().instantiate_async(&mut *store).await?;
            let api = Interpreter::new(&mut *store, &instance)?;
            Ok(Live::Interpreter(InterpreterLive { api, instance }))
        }
        GuestPre::Shell(pre) => Ok(Live::Shell(pre.instantiate_async(store).await?)),
        GuestPre::Core(pre) => Ok(Live::Core(
            crate::scientific::instantiate(pre, store).await?,
        )),
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect()
}
