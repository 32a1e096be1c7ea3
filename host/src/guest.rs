//! A guest: a component checked against plimsoll's worlds and
//! pre-instantiated, ready for cheap fresh instances.

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
}

pub(crate) enum GuestPre {
    Agent(CommandPre<RunState>),
    Interpreter(InterpreterPre<RunState>),
    /// A core module of the interpreter world's semantics (the scientific
    /// Python guest, [`crate::scientific`]).
    Core(crate::scientific::CorePre),
}

struct GuestInner {
    /// The component; `None` for a core-module guest.
    component: Option<Component>,
    identity: String,
    content_hash: String,
    kind: GuestKind,
    pre: GuestPre,
}

/// A loaded, linked guest component. Cheap to clone.
#[derive(Clone)]
pub struct Guest {
    inner: Arc<GuestInner>,
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
        let (kind, pre) = if let Ok(p) = CommandPre::new(pre.clone()) {
            (GuestKind::Agent, GuestPre::Agent(p))
        } else if let Ok(p) = InterpreterPre::new(pre) {
            (GuestKind::Interpreter, GuestPre::Interpreter(p))
        } else {
            return Err(LoadError::WrongWorld(
                "it exports neither `wasi:cli/run` (world `agent`) nor `eval` (world `interpreter`)".into(),
            ));
        };
        Ok(Guest {
            inner: Arc::new(GuestInner {
                component: Some(component.clone()),
                identity: format!("{family}:sha256:{content_hash}"),
                content_hash,
                kind,
                pre,
            }),
        })
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
                identity: format!("{}:sha256:{content_hash}", crate::scientific::FAMILY),
                content_hash,
                kind: GuestKind::Interpreter,
                pre: GuestPre::Core(pre),
            }),
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
                identity: format!("{}:sha256:{content_hash}", crate::scientific::FAMILY),
                content_hash: content_hash.to_owned(),
                kind: GuestKind::Interpreter,
                pre: GuestPre::Core(pre),
            }),
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
}

/// A live instance of a guest.
pub(crate) enum Live {
    Agent(Command),
    Interpreter(Interpreter),
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
        GuestPre::Interpreter(pre) => Ok(Live::Interpreter(pre.instantiate_async(store).await?)),
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
