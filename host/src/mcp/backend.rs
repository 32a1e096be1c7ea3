//! What the MCP server runs code on: a [`Backend`]. The stdio server
//! (`plimsoll mcp`) uses [`LocalBackend`], a [`Sandbox`] in this process
//! acting for one caller; plimsolld puts its callers' tokens, scopes,
//! quotas, floor and audit behind the same trait.

use crate::run::{ErrorInfo, RunRequest, RunResult};
use crate::sandbox::Sandbox;
use crate::session::SessionInfo;
use crate::snapshot::store::{Meta, SnapshotStore};
use crate::tier::Isolation;
use futures::future::BoxFuture;
use std::sync::Arc;

/// A guest the server offers, by the names a tool call selects it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// `python` or `javascript`.
    pub language: &'static str,
    /// `None` for the language's default guest, `Some("scientific")` for
    /// the scientific Python guest.
    pub guest: Option<&'static str>,
    /// Its identity (`python-wasm:sha256:…`).
    pub identity: String,
}

/// Runs code for one MCP connection's caller. Every method answers; none
/// panics on what a client sent.
pub trait Backend: Send + Sync + 'static {
    /// The caller it acts for (an MCP connection belongs to one).
    fn caller_id(&self) -> &str;

    /// The guests really present, for the tools' schemas and descriptions.
    fn offered(&self) -> Vec<Offered>;

    /// The isolation runs get now.
    fn isolation(&self) -> Isolation;

    /// The longest wall time a run may ask for, in milliseconds (a tool
    /// call's longer `timeout_ms` is cut to it).
    fn max_wall_time_ms(&self) -> u64;

    /// Runs one request in a fresh instance. Dropping the future stops
    /// the run (its instance, or its worker, is torn down).
    fn run(&self, req: RunRequest) -> BoxFuture<'_, RunResult>;

    /// Opens a session for this caller.
    fn open_session(&self, req: RunRequest) -> BoxFuture<'_, Result<SessionInfo, ErrorInfo>>;

    /// Runs a cell in this caller's session `session_id`.
    fn run_cell<'a>(&'a self, session_id: &'a str, req: RunRequest) -> BoxFuture<'a, RunResult>;

    /// Closes this caller's session; whether it was open.
    fn close_session(&self, session_id: &str) -> bool;

    /// Snapshots this caller's session `session_id` and keeps it
    /// ([`crate::snapshot`]); a backend that keeps none refuses.
    fn snapshot_session<'a>(
        &'a self,
        _session_id: &'a str,
    ) -> BoxFuture<'a, Result<Meta, ErrorInfo>> {
        Box::pin(async { Err(no_snapshots()) })
    }

    /// Opens a session for this caller from its snapshot `snapshot_id`.
    fn resume_session<'a>(
        &'a self,
        _snapshot_id: &'a str,
    ) -> BoxFuture<'a, Result<SessionInfo, ErrorInfo>> {
        Box::pin(async { Err(no_snapshots()) })
    }

    /// Opens `n` sessions from one snapshot of this caller's session.
    fn fork_session<'a>(
        &'a self,
        _session_id: &'a str,
        _n: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, ErrorInfo>> {
        Box::pin(async { Err(no_snapshots()) })
    }
}

fn no_snapshots() -> ErrorInfo {
    ErrorInfo {
        code: crate::snapshot::UNAVAILABLE.into(),
        message: "this server keeps no snapshots".into(),
    }
}

/// A [`Sandbox`] in this process, acting for `caller`.
pub struct LocalBackend {
    sandbox: Arc<Sandbox>,
    caller: String,
    snapshots: Option<Arc<SnapshotStore>>,
}

impl LocalBackend {
    /// A backend that runs everything on `sandbox` as `caller`.
    pub fn new(sandbox: Arc<Sandbox>, caller: impl Into<String>) -> LocalBackend {
        LocalBackend {
            sandbox,
            caller: caller.into(),
            snapshots: None,
        }
    }

    /// The same, keeping snapshots in `store`.
    pub fn with_snapshots(mut self, store: Arc<SnapshotStore>) -> LocalBackend {
        self.snapshots = Some(store);
        self
    }
}

/// The guests `sandbox` has, in a stable order.
pub fn offered_by(sandbox: &Sandbox) -> Vec<Offered> {
    let mut v = Vec::new();
    for (language, name) in [
        (crate::run::Language::Python, "python"),
        (crate::run::Language::Javascript, "javascript"),
        (crate::run::Language::Shell, "sh"),
    ] {
        if let Some(g) = sandbox.interpreter(language) {
            v.push(Offered {
                language: name,
                guest: None,
                identity: g.identity().to_owned(),
            });
        }
    }
    if let Some(g) = sandbox.scientific() {
        v.push(Offered {
            language: "python",
            guest: Some(crate::scientific::GUEST_NAME),
            identity: g.identity().to_owned(),
        });
    }
    v
}

impl Backend for LocalBackend {
    fn caller_id(&self) -> &str {
        &self.caller
    }

    fn offered(&self) -> Vec<Offered> {
        offered_by(&self.sandbox)
    }

    fn isolation(&self) -> Isolation {
        self.sandbox.isolation()
    }

    fn max_wall_time_ms(&self) -> u64 {
        self.sandbox.envelope().wall_time_ms
    }

    fn run(&self, req: RunRequest) -> BoxFuture<'_, RunResult> {
        Box::pin(async move { self.sandbox.run_as(&self.caller, &req).await })
    }

    fn open_session(&self, req: RunRequest) -> BoxFuture<'_, Result<SessionInfo, ErrorInfo>> {
        Box::pin(async move { self.sandbox.open_session(&self.caller, &req).await })
    }

    fn run_cell<'a>(&'a self, session_id: &'a str, req: RunRequest) -> BoxFuture<'a, RunResult> {
        Box::pin(async move {
            self.sandbox
                .run_in_session(&self.caller, session_id, &req)
                .await
        })
    }

    fn close_session(&self, session_id: &str) -> bool {
        self.sandbox.close_session(&self.caller, session_id)
    }

    fn snapshot_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Meta, ErrorInfo>> {
        Box::pin(async move {
            let store = self.snapshots.as_ref().ok_or_else(no_snapshots)?;
            let s = self
                .sandbox
                .snapshot_session(&self.caller, session_id)
                .await?;
            store.put(&self.caller, &s.archive, s.identities, &s.taken_at)
        })
    }

    fn resume_session<'a>(
        &'a self,
        snapshot_id: &'a str,
    ) -> BoxFuture<'a, Result<SessionInfo, ErrorInfo>> {
        Box::pin(async move {
            let store = self.snapshots.as_ref().ok_or_else(no_snapshots)?;
            let (_, bytes) = store.get(&self.caller, snapshot_id)?;
            self.sandbox
                .resume_session(&self.caller, bytes, &RunRequest::default())
                .await
        })
    }

    fn fork_session<'a>(
        &'a self,
        session_id: &'a str,
        n: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, ErrorInfo>> {
        Box::pin(async move {
            self.sandbox
                .fork_session(&self.caller, session_id, n, &RunRequest::default())
                .await
        })
    }
}
