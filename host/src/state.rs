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
    /// What the shell guest's `python3` and `node` start; `None` for every
    /// other guest (and for a shell without interpreters).
    pub(crate) programs: Option<Arc<dyn crate::programs::ProgramRunner>>,
    /// Whether `/tmp` is preopened too (the workspace's
    /// `.plimsoll-shell/tmp`, the shell's own `/tmp`): set for the programs
    /// a shell starts, so that they find the files the shell put there.
    pub(crate) tmp_alias: bool,
    /// The store's fuel as last seen on an epoch tick (its envelope's fuel
    /// before the first): what a program the shell starts may spend.
    pub(crate) fuel_left: u64,
    /// Fuel the shell's programs spent that the store has not been charged
    /// yet: taken from it on the next epoch tick.
    pub(crate) fuel_debt: u64,
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

impl bindings::shell::programs::Host for RunState {
    async fn run(
        &mut self,
        inv: bindings::shell::programs::Invocation,
    ) -> wasmtime::Result<Result<bindings::shell::programs::Completion, String>> {
        let (Some(runner), Some(workspace)) = (self.programs.clone(), self.workspace.clone())
        else {
            return Ok(Err(format!("{}: not found", clip(&inv.program))));
        };
        // The run's fuel is spent (by programs before this one, charged
        // on the next tick): the shell ends out of fuel, as it would have
        // spending it itself.
        if self.fuel_left <= self.fuel_debt {
            return Err(wasmtime::Trap::OutOfFuel.into());
        }
        let parent = crate::programs::Parent {
            workspace,
            broker: self.broker.clone(),
            deadline: self.deadline,
            fuel: self.fuel_left.saturating_sub(self.fuel_debt),
        };
        let ran = runner.run(inv, parent).await;
        self.fuel_debt = self.fuel_debt.saturating_add(ran.fuel_used);
        Ok(ran.completion)
    }
}

/// A guest-supplied name, cut short enough to quote in one line.
fn clip(s: &str) -> String {
    s.chars().filter(|c| !c.is_control()).take(64).collect()
}
