//! The data of one run's wasmtime `Store`: the WASI context, the resource
//! table, the limiter and the broker, plus what the epoch callback needs to
//! stop a run.

use crate::bindings;
use crate::broker::RunBroker;
use crate::limiter::RunLimiter;
use crate::workspace::Workspace;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Resource handles a guest may hold at once (files, streams, pollables…).
/// Bounds the host memory a guest can pin through the WASI table.
pub const MAX_RESOURCES: usize = 16_384;

/// Why the host stopped a run from the outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The wall-time deadline passed.
    Timeout,
    /// The workspace passed its byte or entry cap (kept for the
    /// classification; the in-memory workspace refuses the write instead).
    Disk,
}

/// The store data of one run (or of one session's instance).
pub struct RunState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: RunLimiter,
    pub(crate) broker: RunBroker,
    pub(crate) http: wasmtime_wasi_http::WasiHttpCtx,
    pub(crate) http_gate: crate::http_gate::HttpGate,
    pub(crate) deadline: Instant,
    /// The run's `/work` (`memfs` serves it); `None` for a pre-instantiated
    /// instance's placeholder, which has no workspace.
    pub(crate) workspace: Option<Arc<Workspace>>,
    /// Whose the workspace handles this instance opens are
    /// ([`crate::memtree::Owner`]): released together when the instance is
    /// discarded, whatever it left open.
    pub(crate) fs_owner: crate::memtree::Owner,
    pub(crate) stop: Option<StopReason>,
    /// A core-module guest's preview-1 descriptors and stdio
    /// ([`crate::wasip1`]); `None` for components.
    pub(crate) p1: Option<Box<crate::wasip1::fds::P1State>>,
}

impl RunState {
    /// Called on every epoch tick while wasm runs. Returns the reason to
    /// stop the run, if there is one.
    pub(crate) fn on_tick(&mut self) -> Option<StopReason> {
        let now = Instant::now();
        if now >= self.deadline {
            self.stop = Some(StopReason::Timeout);
            return self.stop;
        }
        None
    }
}

impl WasiView for RunState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl wasmtime_wasi_http::WasiHttpView for RunState {
    fn http(&mut self) -> wasmtime_wasi_http::WasiHttpCtxView<'_> {
        wasmtime_wasi_http::WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_gate,
        }
    }
}

impl bindings::broker::Host for RunState {
    async fn call(
        &mut self,
        api: String,
        req: bindings::broker::Request,
    ) -> wasmtime::Result<Result<bindings::broker::Response, bindings::broker::CallError>> {
        Ok(self.broker.call(&api, req).await)
    }

    async fn call_origin(
        &mut self,
        origin: String,
        req: bindings::broker::Request,
        timeout_ms: Option<u32>,
    ) -> wasmtime::Result<Result<bindings::broker::Response, bindings::broker::CallError>> {
        let timeout = timeout_ms.map(|ms| std::time::Duration::from_millis(ms.into()));
        Ok(self.broker.call_url(&origin, req, timeout).await)
    }
}
