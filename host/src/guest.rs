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
}

struct GuestInner {
    component: Component,
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
                component: component.clone(),
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

    pub(crate) fn component(&self) -> &Component {
        &self.inner.component
    }

    pub(crate) fn pre(&self) -> &GuestPre {
        &self.inner.pre
    }
}

/// A live instance of a guest.
pub(crate) enum Live {
    Agent(Command),
    Interpreter(Interpreter),
}

/// Instantiates the guest in `store`.
pub(crate) async fn instantiate(
    guest: &Guest,
    store: &mut Store<RunState>,
) -> wasmtime::Result<Live> {
    match guest.pre() {
        GuestPre::Agent(pre) => Ok(Live::Agent(pre.instantiate_async(store).await?)),
        GuestPre::Interpreter(pre) => Ok(Live::Interpreter(pre.instantiate_async(store).await?)),
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
