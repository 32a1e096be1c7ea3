//! Executes one run in this process: a fresh store and instance, the WASI
//! context the envelope allows, the call, and the classification of how it
//! ended.

use crate::broker::RunBroker;
use crate::engine::SandboxEngine;
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::guest::Guest;
pub(crate) use crate::guest::{Live, instantiate};
use crate::limiter::RunLimiter;
use crate::output::{CappedOutput, OutputLimitExceeded};
use crate::run::{ErrorInfo, RunRequest, RunResult, Status, Usage};
use crate::runtime::Runtime;
use crate::state::{MAX_RESOURCES, RunState, StopReason};
use crate::tier::Isolation;
use crate::workspace::Workspace;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::component::ResourceTable;
use wasmtime::{Store, Trap, UpdateDeadline};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{I32Exit, WasiCtxBuilder};

/// Extra time the outer timer grants past the wall-time limit before it
/// drops the run. The epoch callback normally ends the run first; the outer
/// timer catches a guest that is parked in a host call.
const OUTER_GRACE: Duration = Duration::from_millis(250);

/// Longest error message kept from a trap.
const MAX_MESSAGE: usize = 2048;

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

    let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
    let broker = match side {
        BrokerSide::Local(grants) => RunBroker::new(rt.broker().clone(), grants, env, deadline),
        BrokerSide::Remote { link, origins } => {
            RunBroker::remote(rt.broker().clone(), link, origins, env, deadline)
        }
    };
    let state = run_state(
        wasi.build(),
        broker,
        RunLimiter::new(env.memory_bytes, env.table_elements, env.instances),
        env,
        deadline,
        Some(workspace.clone()),
    );
    let mut state = state;
    // A core-module guest's stdio and files; its guest sets the layout
    // when it instantiates ([`crate::scientific`]).
    state.p1 = Some(Box::new(crate::wasip1::fds::P1State::new(
        crate::wasip1::fds::Layout::empty(),
        stdin,
        stdout.clone(),
        stderr.clone(),
        usize::try_from(env.open_files).unwrap_or(usize::MAX),
    )));
    Ok(Prepared {
        store: new_store(rt.engine(), state, env.fuel),
        stdout,
        stderr,
        workspace,
    })
}

/// A store around `state` with the run's limiter, `fuel` and the epoch
/// callback that enforces its deadline.
fn new_store(engine: &SandboxEngine, state: RunState, fuel: u64) -> Store<RunState> {
    let mut store = Store::new(engine.engine(), state);
    store.limiter(|s| &mut s.limiter);
    if engine.options().fuel {
        // Setting fuel cannot fail when the engine counts fuel.
        let _ = store.set_fuel(fuel);
    }
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|mut ctx| {
        if ctx.data_mut().on_tick().is_some() {
            return Ok(UpdateDeadline::Interrupt);
        }
        // Yield on every tick so one busy guest cannot hold an executor
        // thread that other runs (and the daemon) need.
        Ok(UpdateDeadline::Yield(1))
    });
    store
}

/// Fuel a pre-instantiated instance may spend on its start-up.
/// The store of a pre-instantiated instance ([`crate::warm`]), before any
/// request claims it: no workspace, no input, output to nowhere, no grants,
/// and only [`crate::warm::PLACEHOLDER_FUEL`] for the component's start-up. Tables and
/// instances are limited as `limits` says; memory is not limited here: the
/// claiming request's limit is checked against what the instance holds.
pub(crate) fn placeholder_store(
    engine: &SandboxEngine,
    process_broker: &Arc<crate::broker::Broker>,
    limits: crate::warm::PlaceholderLimits,
) -> Store<RunState> {
    let env = Envelope::default();
    let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
    let broker = RunBroker::new(process_broker.clone(), GrantSet::empty(), &env, deadline);
    let mut wasi = WasiCtxBuilder::new();
    wasi.allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .socket_addr_check(|_, _| Box::pin(async { false }));
    let state = run_state(
        wasi.build(),
        broker,
        RunLimiter::new(u64::MAX, limits.table_elements, limits.instances),
        &env,
        deadline,
        None,
    );
    new_store(engine, state, crate::warm::PLACEHOLDER_FUEL)
}

/// The runtime makes the warm pool's instances: a placeholder store, the
/// instance, its empty evaluation (see [`crate::warm`]).
impl crate::warm::Maker for crate::runtime::RuntimeInner {
    fn make(
        &self,
        guest: &Guest,
        limits: crate::warm::PlaceholderLimits,
        tokio: &tokio::runtime::Runtime,
    ) -> Option<(Store<RunState>, Live)> {
        let mut store = placeholder_store(&self.engine, &self.broker, limits);
        let made = tokio.block_on(async {
            let live = instantiate(guest, &mut store).await?;
            // The empty evaluation: an interpreter's first call into a
            // fresh instance faults in the pages its call path uses
            // (about 1 ms of a Python run here); doing it now takes that
            // off the claiming run too. It runs no caller's code and must
            // leave nothing behind; an instance whose interpreter reports
            // an error for it is not used.
            let empty = match &live {
                Live::Interpreter(i) => Some(i.call_eval(&mut store, "").await?),
                Live::Core(c) => Some(c.eval(&mut store, "").await?),
                Live::Agent(_) => None,
            };
            if empty.is_some_and(|r| r.is_err()) {
                return Err(wasmtime::Error::msg("the empty evaluation failed"));
            }
            if crate::scientific::CoreLive::holds_files(&store) {
                return Err(wasmtime::Error::msg("the instance holds files"));
            }
            // The claiming run's state replaces the placeholder's whole,
            // resource table included: an instance still holding a WASI
            // resource (a handle it might have cached) is not used.
            if !store.data().table.is_empty() {
                return Err(wasmtime::Error::msg("the instance holds host resources"));
            }
            Ok::<_, wasmtime::Error>(live)
        });
        made.ok().map(|live| (store, live))
    }
}

/// The store data of a run: its WASI context, a bounded resource table,
/// its limiter and broker (which also gates `wasi:http`).
fn run_state(
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
    }
}

/// Moves the run `prepared` was made for into a pre-instantiated instance
/// of `guest`, if one is ready and fits `env`; returns it, live. The run's
/// state (workspace, WASI context, broker, deadline, limits) replaces the
/// placeholder's whole; only the memory the instance already holds carries
/// over, counted against the run's own limit.
pub(crate) fn claim_warm(
    rt: &Runtime,
    guest: &Guest,
    env: &Envelope,
    prepared: &mut Prepared,
) -> Option<Live> {
    let warm = rt.warm().take(guest, env)?;
    let crate::warm::WarmInstance {
        mut store,
        live,
        fuel_used,
        ..
    } = warm;
    std::mem::swap(prepared.store.data_mut(), store.data_mut());
    // `prepared.store` (never instantiated) now holds the placeholder.
    let placeholder = prepared.store.data().limiter.clone();
    store.data_mut().limiter.continue_from(&placeholder);
    crate::guest::adopt(guest, &mut store);
    if rt.engine().options().fuel {
        // Setting fuel cannot fail when the engine counts fuel.
        let _ = store.set_fuel(env.fuel.saturating_sub(fuel_used));
    }
    store.set_epoch_deadline(1);
    prepared.store = store;
    rt.refill_warm(guest);
    Some(live)
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
    if let Some(w) = &st.workspace {
        w.set_budget(env);
        let _ = w.take_refused_space();
    }
    // Setting fuel cannot fail when the engine counts fuel.
    let _ = p.store.set_fuel(env.fuel);
    p.store.set_epoch_deadline(1);
}

/// What one call into the guest returned, before classification.
pub(crate) enum Invocation {
    /// The call returned (`Ok`) or the guest exited/trapped (`Err`).
    Returned(wasmtime::Result<CallValue>),
    /// The outer timer fired.
    OuterTimeout,
}

/// A guest's own answer.
pub(crate) enum CallValue {
    /// `wasi:cli/run` returned; `true` for success.
    Run(bool),
    /// `eval` returned `ok(value)` or `err(message)`.
    Eval(Result<String, String>),
}

/// How long a run that found no free pool slot waits for queued teardowns.
const TEARDOWN_WAIT: Duration = Duration::from_secs(2);

/// [`instantiate`] for a run or a session: when every pool slot is taken
/// and some are held by pre-instantiated instances ([`crate::warm`]) or by
/// finished runs queued for teardown ([`crate::reaper`]), the former are
/// dropped, the latter waited for (at most [`TEARDOWN_WAIT`], on tokio's
/// blocking pool), and the instantiation tried once more. A run comes
/// before a warm instance.
pub(crate) async fn instantiate_for_run(
    rt: &Runtime,
    guest: &Guest,
    store: &mut Store<RunState>,
) -> wasmtime::Result<Live> {
    match instantiate(guest, store).await {
        Err(e)
            if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                .is_some() =>
        {
            // Slots that are only held by pre-instantiated instances, or
            // by finished runs still queued for teardown, are free to take:
            // let them go, then try once more. Both waits block, so they
            // run on tokio's blocking pool, not on this worker thread.
            //
            // The retry happens even when nothing was waiting by the time
            // this looked: the reaper may have finished a teardown between
            // the failed attempt and the look (measured: under CPU load a
            // run in a one-slot pool was refused `busy` with the slot
            // already free).
            let owned = rt.clone();
            let waited = tokio::task::spawn_blocking(move || {
                owned.warm().release_all();
                if crate::reaper::pending_instances() > 0 {
                    crate::reaper::flush(TEARDOWN_WAIT);
                }
            })
            .await;
            if waited.is_err() {
                return Err(e);
            }
            instantiate(guest, store).await
        }
        r => r,
    }
}

/// Calls the guest once, under the store's deadline plus a grace period.
pub(crate) async fn invoke(
    live: &Live,
    store: &mut Store<RunState>,
    code: &str,
    wall: Duration,
) -> Invocation {
    let call = async {
        match live {
            Live::Agent(cmd) => cmd
                .wasi_cli_run()
                .call_run(&mut *store)
                .await
                .map(|r| CallValue::Run(r.is_ok())),
            Live::Interpreter(i) => i.call_eval(&mut *store, code).await.map(CallValue::Eval),
            Live::Core(c) => c.eval(&mut *store, code).await.map(CallValue::Eval),
        }
    };
    match tokio::time::timeout(wall + OUTER_GRACE, call).await {
        Ok(r) => Invocation::Returned(r),
        Err(_) => Invocation::OuterTimeout,
    }
}

/// How a finished call is reported.
pub(crate) struct Classified {
    pub(crate) status: Status,
    pub(crate) exit_code: Option<i32>,
    pub(crate) result: Option<String>,
    pub(crate) error: Option<ErrorInfo>,
    /// Whether the instance may be used again (sessions).
    pub(crate) reusable: bool,
}

/// What the host knows of how a call ended, besides the call's own
/// outcome: the facts [`classify`] reads from the store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct StopFacts {
    /// Why the host stopped the run from the outside, if it did.
    pub(crate) stop: Option<StopReason>,
    /// Whether the limiter refused a memory (or table) growth.
    pub(crate) memory_refused: bool,
    /// Whether the workspace refused a write for space during the call.
    pub(crate) disk_refused: bool,
}

impl StopFacts {
    /// The facts of a store's run (taking the workspace's refusal, which
    /// each call reports once).
    pub(crate) fn of(state: &RunState) -> StopFacts {
        StopFacts {
            stop: state.stop,
            memory_refused: state.limiter.refused_growth(),
            disk_refused: state
                .workspace
                .as_ref()
                .is_some_and(|w| w.take_refused_space()),
        }
    }
}

/// Turns a call's outcome and the store's state into a status.
pub(crate) fn classify(inv: Invocation, state: &RunState) -> Classified {
    classify_facts(inv, StopFacts::of(state))
}

/// [`classify`] as a pure function of the call's outcome and the stop
/// facts. A call that failed after the workspace refused a write for space
/// ended `disk_exhausted`: the guest did not recover from a full disk.
pub(crate) fn classify_facts(inv: Invocation, facts: StopFacts) -> Classified {
    let mut c = classify_call(inv, facts);
    if facts.disk_refused && matches!(c.status, Status::Error | Status::Trap) {
        c.status = Status::DiskExhausted;
        c.error = Some(ErrorInfo {
            code: "disk_exhausted".into(),
            message: format!(
                "the workspace refused a write past its byte or entry limit, and then {}",
                c.error
                    .as_ref()
                    .map_or("the run failed".to_owned(), |e| truncate(e.message.clone()))
            ),
        });
    }
    c
}

fn classify_call(inv: Invocation, facts: StopFacts) -> Classified {
    let mut c = Classified {
        status: Status::Ok,
        exit_code: None,
        result: None,
        error: None,
        reusable: false,
    };
    let set_err = |c: &mut Classified, status: Status, code: &str, message: String| {
        c.status = status;
        c.error = Some(ErrorInfo {
            code: code.into(),
            message: truncate(message),
        });
    };
    match inv {
        Invocation::OuterTimeout => {
            set_err(
                &mut c,
                Status::Timeout,
                "timeout",
                "the run passed its wall-time limit".into(),
            );
        }
        Invocation::Returned(Ok(CallValue::Run(true))) => {
            c.exit_code = Some(0);
            c.reusable = true;
        }
        Invocation::Returned(Ok(CallValue::Run(false))) => {
            c.exit_code = Some(1);
            set_err(
                &mut c,
                Status::Error,
                "guest_error",
                "the guest's run returned an error".into(),
            );
        }
        Invocation::Returned(Ok(CallValue::Eval(Ok(v)))) => {
            c.result = Some(v);
            c.reusable = true;
        }
        Invocation::Returned(Ok(CallValue::Eval(Err(msg)))) => {
            c.reusable = true;
            set_err(&mut c, Status::Error, "guest_error", msg);
        }
        Invocation::Returned(Err(e)) => classify_error(&mut c, &e, facts, set_err),
    }
    // A run that failed after the limiter refused memory failed for want of
    // memory, whatever the guest did with the refusal.
    if c.status != Status::Ok && c.status != Status::Timeout && facts.memory_refused {
        c.reusable = c.status == Status::Error;
        set_err(
            &mut c,
            Status::MemoryExhausted,
            "memory_exhausted",
            "the guest asked for more memory than its limit".into(),
        );
    }
    c
}

fn classify_error(
    c: &mut Classified,
    e: &wasmtime::Error,
    facts: StopFacts,
    set_err: impl Fn(&mut Classified, Status, &str, String),
) {
    if let Some(exit) = e.downcast_ref::<I32Exit>() {
        c.exit_code = Some(exit.0);
        if exit.0 == 0 {
            c.status = Status::Ok;
        } else {
            set_err(
                c,
                Status::Error,
                "guest_error",
                format!("the guest exited with code {}", exit.0),
            );
        }
        return;
    }
    match facts.stop {
        Some(StopReason::Timeout) => {
            return set_err(
                c,
                Status::Timeout,
                "timeout",
                "the run passed its wall-time limit".into(),
            );
        }
        Some(StopReason::Disk) => {
            return set_err(
                c,
                Status::DiskExhausted,
                "disk_exhausted",
                "the workspace passed its byte or entry limit".into(),
            );
        }
        None => {}
    }
    if let Some(o) = e.downcast_ref::<OutputLimitExceeded>() {
        return set_err(
            c,
            Status::OutputTruncated,
            "output_truncated",
            o.to_string(),
        );
    }
    match e.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => set_err(
            c,
            Status::CpuExhausted,
            "cpu_exhausted",
            "the run used all its fuel".into(),
        ),
        Some(Trap::Interrupt) => set_err(
            c,
            Status::Timeout,
            "timeout",
            "the run passed its wall-time limit".into(),
        ),
        Some(t) => set_err(c, Status::Trap, "trap", t.to_string()),
        None => set_err(c, Status::Trap, "trap", format!("{e:#}")),
    }
}

fn truncate(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// Runs `guest` once in a fresh instance and reports everything.
pub(crate) async fn execute(
    rt: &Runtime,
    guest: &Guest,
    req: &RunRequest,
    env: &Envelope,
    grants: GrantSet,
    isolation: Isolation,
    run_id: String,
) -> RunResult {
    execute_with(
        rt,
        guest,
        req,
        env,
        BrokerSide::Local(grants),
        isolation,
        run_id,
    )
    .await
}

/// [`execute`] with the broker on `side` (a worker's runs use the remote
/// side).
pub(crate) async fn execute_with(
    rt: &Runtime,
    guest: &Guest,
    req: &RunRequest,
    env: &Envelope,
    side: BrokerSide,
    isolation: Isolation,
    run_id: String,
) -> RunResult {
    let started = Instant::now();
    let _busy = rt.warm().busy();
    let mut prepared = match prepare_with(rt, req, env, side) {
        Ok(p) => p,
        Err(e) => {
            let mut r = RunResult::refused(run_id, isolation, &e.code, e.message);
            r.guest = Some(guest.identity().to_owned());
            return r;
        }
    };
    let wall = Duration::from_millis(env.wall_time_ms);
    let inst_started = Instant::now();
    let instantiated = match claim_warm(rt, guest, env, &mut prepared) {
        Some(live) => Ok(Ok(live)),
        None => {
            // Ask for one for the next run before making this one.
            rt.refill_warm(guest);
            tokio::time::timeout(
                wall + OUTER_GRACE,
                instantiate_for_run(rt, guest, &mut prepared.store),
            )
            .await
        }
    };
    let instantiate_ms = inst_started.elapsed().as_secs_f64() * 1e3;
    let store = &mut prepared.store;
    let classified = match instantiated {
        Ok(Ok(live)) => {
            let inv = invoke(&live, store, req.code.as_deref().unwrap_or(""), wall).await;
            classify(inv, store.data())
        }
        Ok(Err(e))
            if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                .is_some() =>
        {
            let mut r = RunResult::refused(
                run_id,
                isolation,
                "busy",
                "every instance slot is in use; try again shortly",
            );
            r.guest = Some(guest.identity().to_owned());
            return r;
        }
        // Instantiation runs the guest's start functions, so its failures
        // are classified like any other.
        Ok(Err(e)) => classify(Invocation::Returned(Err(e)), store.data()),
        Err(_) => classify(Invocation::OuterTimeout, store.data()),
    };
    let r = finish(
        prepared,
        env,
        &req.capture,
        classified,
        isolation,
        run_id,
        guest,
        started,
        instantiate_ms,
    );
    // Again now that this run is over: the request made before the run may
    // have found no free slot. (This run's slot is free once the reaper has
    // dropped its instance; the refill itself waits for a quiet moment,
    // which is normally later.)
    rt.refill_warm(guest);
    r
}

/// Collects outputs, artifacts and usage into the result, then tears the
/// instance down.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    mut prepared: Prepared,
    env: &Envelope,
    capture: &[String],
    c: Classified,
    isolation: Isolation,
    run_id: String,
    guest: &Guest,
    started: Instant,
    instantiate_ms: f64,
) -> RunResult {
    let mut r = report(&mut prepared, env, capture, c, isolation, run_id, guest);
    // The caller has its result and need not wait for the teardown: the
    // instance (its pool slot is reset as it goes) and then the workspace
    // directory are dropped on the reaper thread, in that order. A run that
    // finds no free slot meanwhile waits for the reaper
    // (`instantiate_for_run`).
    let Prepared {
        store, workspace, ..
    } = prepared;
    crate::reaper::reap_instance((store, workspace));
    r.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
    r.usage.instantiate_ms = instantiate_ms;
    r
}

/// Collects outputs, artifacts and usage into a result, leaving the
/// instance alive (sessions call this after every evaluation). Outputs are
/// taken: the next evaluation starts with empty ones.
pub(crate) fn report(
    prepared: &mut Prepared,
    env: &Envelope,
    capture: &[String],
    mut c: Classified,
    isolation: Isolation,
    run_id: String,
    guest: &Guest,
) -> RunResult {
    // `get_fuel` fails exactly when the engine does not count fuel. After a
    // wall-time interrupt the figure is not known: compiled wasm keeps its
    // fuel counter in a register that the interrupt does not write back, so
    // the store's figure would be far too low. Report nothing rather than a
    // wrong number.
    let fuel = if c.status == Status::Timeout {
        None
    } else {
        prepared
            .store
            .get_fuel()
            .ok()
            .map(|left| env.fuel.saturating_sub(left))
    };
    // The workspace may have grown past its cap between two checks; the
    // final measurement decides.
    let ws = prepared.workspace.usage();
    if (ws.bytes > env.workspace_bytes || ws.entries > env.workspace_entries)
        && c.status != Status::Timeout
    {
        c.status = Status::DiskExhausted;
        c.error = Some(ErrorInfo {
            code: "disk_exhausted".into(),
            message: "the workspace passed its byte or entry limit".into(),
        });
    }
    let mut result_truncated = false;
    if let Some(v) = &mut c.result
        && v.len() as u64 > env.result_bytes
    {
        let mut end = usize::try_from(env.result_bytes)
            .unwrap_or(usize::MAX)
            .min(v.len());
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        v.truncate(end);
        result_truncated = true;
        if c.status == Status::Ok {
            c.status = Status::OutputTruncated;
            c.error = Some(ErrorInfo {
                code: "output_truncated".into(),
                message: format!("the result passed its cap of {} bytes", env.result_bytes),
            });
        }
    }
    // An empty `out/` (the usual case) was seen by the walk above: no
    // second walk for artifacts.
    let collected = if ws.out_empty {
        Default::default()
    } else {
        prepared.workspace.collect_artifacts(env)
    };
    let state = prepared.store.data();
    let calls = state.broker.trace();
    let memory_peak_bytes = state.limiter.memory_peak();
    let mut r = RunResult::refused(run_id, isolation, "", "");
    r.status = c.status;
    r.exit_code = c.exit_code;
    r.result = c.result;
    r.result_truncated = result_truncated;
    r.error = c.error;
    r.set_output(
        prepared.stdout.take(env.stdout_bytes),
        prepared.stderr.take(env.stderr_bytes),
    );
    r.artifacts = collected.artifacts;
    r.artifacts_truncated = collected.truncated;
    r.artifacts_refused = collected.refused;
    if !capture.is_empty() {
        let named = prepared.workspace.collect_named(capture, env);
        r.captured = named.artifacts;
        r.artifacts_truncated |= named.truncated;
        r.artifacts_refused.extend(named.refused);
    }
    r.guest = Some(guest.identity().to_owned());
    r.calls = calls;
    r.usage = Usage {
        wall_ms: 0.0,
        instantiate_ms: 0.0,
        fuel,
        memory_peak_bytes,
        worker_wait_ms: None,
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(stop: Option<StopReason>, memory_refused: bool) -> StopFacts {
        StopFacts {
            stop,
            memory_refused,
            disk_refused: false,
        }
    }

    #[test]
    fn a_call_that_fails_after_a_refused_write_is_disk_exhausted() {
        let refused = StopFacts {
            disk_refused: true,
            ..facts(None, false)
        };
        let failed =
            || Invocation::Returned(Ok(CallValue::Eval(Err("OSError: [Errno 28]".into()))));
        assert_eq!(
            classify_facts(failed(), refused).status,
            Status::DiskExhausted
        );
        // A guest that recovered from the full disk ended as it ended.
        let ok = Invocation::Returned(Ok(CallValue::Eval(Ok("1".into()))));
        assert_eq!(classify_facts(ok, refused).status, Status::Ok);
        assert_eq!(
            classify_facts(failed(), facts(None, false)).status,
            Status::Error
        );
    }

    fn status(inv: Invocation, f: StopFacts) -> (Status, Option<String>, bool) {
        let c = classify_facts(inv, f);
        (c.status, c.error.map(|e| e.code), c.reusable)
    }

    #[test]
    fn how_a_call_ended_decides_the_status() {
        let none = StopFacts::default();
        assert_eq!(
            status(Invocation::Returned(Ok(CallValue::Run(true))), none),
            (Status::Ok, None, true)
        );
        assert_eq!(
            status(Invocation::Returned(Ok(CallValue::Run(false))), none),
            (Status::Error, Some("guest_error".into()), false)
        );
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Eval(Ok("2".into())))),
                none
            ),
            (Status::Ok, None, true)
        );
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Eval(Err("boom".into())))),
                none
            ),
            (Status::Error, Some("guest_error".into()), true)
        );
        assert_eq!(
            status(Invocation::OuterTimeout, none),
            (Status::Timeout, Some("timeout".into()), false)
        );
        let exit = |code| Invocation::Returned(Err(wasmtime::Error::new(I32Exit(code))));
        assert_eq!(status(exit(0), none).0, Status::Ok);
        assert_eq!(
            status(exit(3), none),
            (Status::Error, Some("guest_error".into()), false)
        );
        let trap = |t| Invocation::Returned(Err(wasmtime::Error::new(t)));
        assert_eq!(status(trap(Trap::OutOfFuel), none).0, Status::CpuExhausted);
        assert_eq!(status(trap(Trap::Interrupt), none).0, Status::Timeout);
        assert_eq!(
            status(trap(Trap::UnreachableCodeReached), none),
            (Status::Trap, Some("trap".into()), false)
        );
    }

    #[test]
    fn the_hosts_stop_facts_take_precedence() {
        let trap = || Invocation::Returned(Err(wasmtime::Error::new(Trap::Interrupt)));
        // An interrupt the host caused for the workspace is disk, not time.
        assert_eq!(
            status(trap(), facts(Some(StopReason::Disk), false)).0,
            Status::DiskExhausted
        );
        assert_eq!(
            status(trap(), facts(Some(StopReason::Timeout), false)).0,
            Status::Timeout
        );
        // A failure after a refused growth is memory, whatever the guest
        // made of the refusal; a guest error stays reusable.
        assert_eq!(
            status(
                Invocation::Returned(Err(wasmtime::Error::new(Trap::UnreachableCodeReached))),
                facts(None, true)
            ),
            (
                Status::MemoryExhausted,
                Some("memory_exhausted".into()),
                false
            )
        );
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Eval(Err("MemoryError".into())))),
                facts(None, true)
            ),
            (
                Status::MemoryExhausted,
                Some("memory_exhausted".into()),
                true
            )
        );
        // Success and a wall-time stop are not rewritten.
        assert_eq!(
            status(
                Invocation::Returned(Ok(CallValue::Run(true))),
                facts(None, true)
            )
            .0,
            Status::Ok
        );
        assert_eq!(
            status(Invocation::OuterTimeout, facts(None, true)).0,
            Status::Timeout
        );
    }
}
