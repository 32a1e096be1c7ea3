//! Preparing a run's store: the workspace with the request's files, the
//! WASI context the envelope allows, the broker on its side (here or in
//! the supervisor), and the store with the run's limiter, fuel and epoch
//! deadline.
//!
//! Guarantees: code and stdin past the envelope's caps are refused before
//! anything is made; no network of any kind (sockets are linked but every
//! use is refused) and no preopen of a host directory (`/work` is the
//! in-memory workspace); the resource table is bounded; a guest cannot
//! hold an executor thread past one epoch tick; a kept instance's next
//! evaluation starts with a new deadline, fuel, memory limit, empty
//! outputs, fresh grants and call budget.

use crate::broker::RunBroker;
use crate::engine::SandboxEngine;
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::limiter::RunLimiter;
use crate::output::CappedOutput;
use crate::run::{ErrorInfo, RunRequest};
use crate::runtime::Runtime;
use crate::state::{MAX_RESOURCES, RunState};
use crate::workspace::Workspace;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::WasiCtxBuilder;
use wasmtime_wasi::p2::pipe::MemoryInputPipe;

/// Everything a fresh instance needs that is not the guest.
pub(crate) struct Prepared {
    pub(crate) store: Store<RunState>,
    pub(crate) stdout: CappedOutput,
    pub(crate) stderr: CappedOutput,
    pub(crate) workspace: Arc<Workspace>,
}

/// Creates the workspace, places the request's files, and builds the store.
/// Errors are refusals: nothing has run.
pub(crate) fn prepare(
    rt: &Runtime,
    req: &RunRequest,
    env: &Envelope,
    grants: GrantSet,
) -> Result<Prepared, ErrorInfo> {
    prepare_with(rt, req, env, BrokerSide::Local(grants))
}

/// Where a run's broker calls are checked and made.
pub(crate) enum BrokerSide {
    /// Here, with these grants.
    Local(GrantSet),
    /// In the supervisor, across the worker protocol.
    Remote {
        link: Arc<dyn crate::broker::RemoteLink>,
        origins: Vec<crate::worker::protocol::GrantOrigin>,
    },
}

/// [`prepare`] with the broker on `side`.
pub(crate) fn prepare_with(
    rt: &Runtime,
    req: &RunRequest,
    env: &Envelope,
    side: BrokerSide,
) -> Result<Prepared, ErrorInfo> {
    if req
        .code
        .as_ref()
        .is_some_and(|c| c.len() as u64 > env.code_bytes)
    {
        return Err(invalid(format!(
            "the code is longer than {} bytes",
            env.code_bytes
        )));
    }
    if req.stdin.len() as u64 > env.stdin_bytes {
        return Err(invalid(format!(
            "stdin is {} bytes; at most {} are allowed",
            req.stdin.len(),
            env.stdin_bytes
        )));
    }
    let workspace = Workspace::new(env);
    workspace
        .place_files(&req.files, env)
        .map_err(|e| invalid(e.to_string()))?;
    prepare_in(rt, req.stdin.as_bytes(), env, side, Arc::new(workspace))
}

/// The store for a run in `workspace`, which may be shared: a session's
/// interpreters all work in one. `stdin` is the guest's whole stdin.
pub(crate) fn prepare_in(
    rt: &Runtime,
    stdin: &[u8],
    env: &Envelope,
    side: BrokerSide,
    workspace: Arc<Workspace>,
) -> Result<Prepared, ErrorInfo> {
    let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
    let broker = match side {
        BrokerSide::Local(grants) => RunBroker::new(rt.broker().clone(), grants, env, deadline),
        BrokerSide::Remote { link, origins } => {
            RunBroker::remote(rt.broker().clone(), link, origins, env, deadline)
        }
    };
    Ok(prepare_around(rt, stdin, env, broker, deadline, workspace))
}

/// The store for an instance in `workspace` with `broker` (shared with the
/// run that started it, for a program a shell starts) and `deadline`.
pub(crate) fn prepare_around(
    rt: &Runtime,
    stdin: &[u8],
    env: &Envelope,
    broker: RunBroker,
    deadline: Instant,
    workspace: Arc<Workspace>,
) -> Prepared {
    let stdout = CappedOutput::new("stdout", env.stdout_bytes);
    let stderr = CappedOutput::new("stderr", env.stderr_bytes);
    // One copy of stdin, shared by the WASI pipe and a core guest's fd 0.
    let stdin = bytes::Bytes::copy_from_slice(stdin);
    let mut wasi = WasiCtxBuilder::new();
    wasi.stdin(MemoryInputPipe::new(stdin.clone()))
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        // No network of any kind: sockets are linked (toolchains import
        // them) but every use is refused.
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }));
    // `/work` is the in-memory workspace, served by `memfs`: no preopen of
    // a host directory.
    wasi.initial_cwd(crate::memfs::WORK);
    let mut state = run_state(
        wasi.build(),
        broker,
        RunLimiter::new(env.memory_bytes, env.table_elements, env.instances),
        env,
        deadline,
        Some(workspace.clone()),
    );
    // A core-module guest's stdio and files; its guest sets the layout
    // when it instantiates ([`crate::scientific`]).
    state.p1 = Some(Box::new(crate::wasip1::fds::P1State::new(
        crate::wasip1::fds::Layout::empty(),
        stdin,
        stdout.clone(),
        stderr.clone(),
        usize::try_from(env.open_files).unwrap_or(usize::MAX),
    )));
    Prepared {
        store: new_store(rt.engine(), state, env.fuel),
        stdout,
        stderr,
        workspace,
    }
}

/// A store around `state` with the run's limiter, `fuel` and the epoch
/// callback that enforces its deadline.
pub(super) fn new_store(engine: &SandboxEngine, state: RunState, fuel: u64) -> Store<RunState> {
    let mut store = Store::new(engine.engine(), state);
    store.limiter(|s| &mut s.limiter);
    if engine.options().fuel {
        // Setting fuel cannot fail when the engine counts fuel.
        let _ = store.set_fuel(fuel);
    }
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut ctx| {
        // What the shell's programs spent is charged here (a host call
        // cannot reach the store's fuel); `get_fuel` fails exactly when the
        // engine counts none.
        if let Ok(left) = ctx.get_fuel() {
            let debt = std::mem::take(&mut ctx.data_mut().fuel_debt);
            let left = left.saturating_sub(debt);
            if debt > 0 {
                let _ = ctx.set_fuel(left);
            }
            ctx.data_mut().fuel_left = left;
        }
        if ctx.data_mut().on_tick().is_some() {
            return Ok(UpdateDeadline::Interrupt);
        }
        // Yield on every tick so one busy guest cannot hold an executor
        // thread that other runs (and the daemon) need.
        Ok(UpdateDeadline::Yield(1))
    });
    store
}

/// The store data of a run: its WASI context, a bounded resource table,
/// its limiter and broker (which also gates `wasi:http`).
pub(super) fn run_state(
    wasi: wasmtime_wasi::WasiCtx,
    broker: RunBroker,
    limiter: RunLimiter,
    env: &Envelope,
    deadline: Instant,
    workspace: Option<Arc<Workspace>>,
) -> RunState {
    let mut table = ResourceTable::new();
    table.set_max_capacity(MAX_RESOURCES);
    RunState {
        wasi,
        table,
        limiter,
        broker: broker.clone(),
        http: wasmtime_wasi_http::WasiHttpCtx::new(),
        http_gate: crate::http_gate::HttpGate {
            broker,
            request_cap: env.request_bytes,
        },
        deadline,
        workspace,
        fs_owner: crate::memtree::new_owner(),
        stop: None,
        p1: None,
        programs: None,
        tmp_alias: false,
        fuel_left: env.fuel,
        fuel_debt: 0,
    }
}

fn invalid(message: String) -> ErrorInfo {
    ErrorInfo {
        code: "invalid_request".into(),
        message,
    }
}

/// Makes a kept instance ready for its next evaluation: new deadline,
/// fuel, memory limit, output caps, and the broker on `side` with fresh
/// grants and call budget.
pub(crate) fn reset_for_next_run_with(p: &mut Prepared, env: &Envelope, side: BrokerSide) {
    let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
    let _ = p.stdout.take(env.stdout_bytes);
    let _ = p.stderr.take(env.stderr_bytes);
    let st = p.store.data_mut();
    st.deadline = deadline;
    st.stop = None;
    st.limiter.reset_for_next_run(env.memory_bytes);
    match side {
        BrokerSide::Local(grants) => {
            st.broker.next_run(env, deadline, grants);
        }
        BrokerSide::Remote { link, origins } => {
            st.broker.next_remote_run(env, deadline, link, origins);
        }
    }
    st.http_gate.request_cap = env.request_bytes;
    st.fuel_left = env.fuel;
    st.fuel_debt = 0;
    if let Some(w) = &st.workspace {
        w.set_budget(env);
        let _ = w.take_refused_space();
    }
    // Setting fuel cannot fail when the engine counts fuel.
    let _ = p.store.set_fuel(env.fuel);
    p.store.set_epoch_deadline(1);
}
