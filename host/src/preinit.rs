//! Pre-initialization: a component's start-up work done once, at build
//! time, and snapshotted into the component (Wizer's idea, for components).
//!
//! An interpreter guest spends most of a short run creating its engine: for
//! QuickJS, the runtime, the context with its intrinsics and the prelude
//! that builds `console` and `plimsoll`. [`preinitialize`] instantiates the
//! component once under this host's own WASI context (an empty workspace,
//! no grants, no network), calls its initialization export, and writes a
//! new component whose linear memories and globals start in the state the
//! call left them in. Every later instance starts there too, mapped
//! copy-on-write from the engine's memory image, so no run pays for the
//! start-up again.
//!
//! Only a component that asks for it should be snapshotted: anything its
//! initialization reads from the environment (time, random seeds, handles)
//! is frozen into every instance. The JavaScript guest seeds `Math.random`
//! lazily for that reason. The guest's identity is the hash of the
//! *snapshotted* component, the file the build ships.

use crate::envelope::Envelope;
use crate::executor;
use crate::grant::GrantSet;
use crate::output::CappedOutput;
use crate::run::{Language, RunRequest};
use crate::runtime::Runtime;
use crate::state::RunState;
use std::time::Duration;
use wasmtime::Store;
use wasmtime::component::types::{ComponentItem, Type};
use wasmtime::component::{Component, Instance, Lift, Val, WasmList};
use wasmtime_wasi::p2::pipe::MemoryInputPipe;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder};
use wasmtime_wizer::{ComponentInstanceState, Wizer};

/// Why a component could not be pre-initialized.
#[derive(Debug, thiserror::Error)]
pub enum PreinitError {
    #[error("the component cannot be instrumented for a snapshot: {0}")]
    Instrument(String),
    #[error("the instrumented component does not compile: {0}")]
    Compile(String),
    #[error("the component exports no function `{0}`")]
    NoSuchExport(String),
    #[error("`{0}` must take no parameter or one string, and return nothing or a result")]
    Signature(String),
    #[error("the run context could not be built: {0}")]
    Context(String),
    #[error("the component could not be instantiated: {0}")]
    Instantiate(String),
    #[error("the initialization call failed: {message}")]
    Init { message: String },
    #[error("the initialization wrote output, which a snapshot would lose: {0:?}")]
    Output(String),
    #[error("the snapshot could not be taken: {0}")]
    Snapshot(String),
}

/// The initialization call: an exported function of the component's world,
/// and the string it is called with if it takes one.
#[derive(Debug, Clone)]
pub struct InitCall {
    /// The export's name, e.g. `eval`.
    pub export: String,
    /// The argument, for a function that takes one string.
    pub arg: Option<String>,
}

impl InitCall {
    /// The interpreter world's convention: `eval("")`, which creates the
    /// engine and evaluates nothing.
    pub fn interpreter() -> InitCall {
        InitCall {
            export: "eval".into(),
            arg: Some(String::new()),
        }
    }
}

/// Instantiates `wasm` on `runtime`, makes `init`, and returns the component
/// snapshotted in the state the call left it in.
///
/// The call runs as a run does (the default envelope, no grants, no
/// network), but with no workspace and with fixed clocks and randomness
/// (see [`fixed_wasi`]), so the same input always gives the same bytes. It
/// must succeed (a `result` export must return `ok`) and must write
/// nothing to stdout or stderr.
pub async fn preinitialize(
    runtime: &Runtime,
    wasm: &[u8],
    init: &InitCall,
) -> Result<Vec<u8>, PreinitError> {
    let mut wizer = Wizer::new();
    // The initialization export is part of the world (`eval`): keep it.
    wizer.init_func(init.export.clone()).keep_init_func(true);
    let (cx, instrumented) = wizer
        .instrument_component(wasm)
        .map_err(|e| PreinitError::Instrument(format!("{e:#}")))?;
    let component = Component::new(runtime.engine().engine(), &instrumented)
        .map_err(|e| PreinitError::Compile(format!("{e:#}")))?;

    let (ty, index) = component
        .get_export(None, &init.export)
        .ok_or_else(|| PreinitError::NoSuchExport(init.export.clone()))?;
    let ComponentItem::ComponentFunc(ty) = ty else {
        return Err(PreinitError::NoSuchExport(init.export.clone()));
    };
    let params: Vec<Type> = ty.params().map(|(_, t)| t).collect();
    let args = match (params.as_slice(), &init.arg) {
        ([], None) => vec![],
        ([Type::String], Some(arg)) => vec![Val::String(arg.clone())],
        _ => return Err(PreinitError::Signature(init.export.clone())),
    };
    let results: Vec<Type> = ty.results().collect();
    if !matches!(results.as_slice(), [] | [Type::Result(_)]) {
        return Err(PreinitError::Signature(init.export.clone()));
    }

    let request = RunRequest::code(Language::Javascript, "");
    let prepared = executor::prepare(runtime, &request, &Envelope::default(), GrantSet::empty())
        .map_err(|e| PreinitError::Context(e.message))?;
    let (mut store, stdout, stderr) = (prepared.store, prepared.stdout, prepared.stderr);
    store.data_mut().wasi = fixed_wasi(&stdout, &stderr);
    let instance = runtime
        .inner
        .linker
        .instantiate_async(&mut store, &component)
        .await
        .map_err(|e| PreinitError::Instantiate(format!("{e:#}")))?;
    let func = instance
        .get_func(&mut store, index)
        .ok_or_else(|| PreinitError::NoSuchExport(init.export.clone()))?;
    let mut rets = vec![Val::Bool(false); results.len()];
    func.call_async(&mut store, &args, &mut rets)
        .await
        .map_err(|e| PreinitError::Init {
            message: format!("{e:#}"),
        })?;
    if let [Val::Result(Err(err))] = rets.as_slice() {
        // The component's own words, cut short: it may return anything.
        let message = match err.as_deref() {
            Some(Val::String(s)) => s.chars().take(2000).collect(),
            other => format!("{other:?}").chars().take(2000).collect(),
        };
        return Err(PreinitError::Init { message });
    }
    let written = format!("{}{}", stdout.take(0).text(), stderr.take(0).text());
    if !written.is_empty() {
        return Err(PreinitError::Output(written.chars().take(300).collect()));
    }

    let mut access = SnapshotAccess {
        store,
        instance,
        failure: None,
    };
    let snapshot = wizer
        .snapshot_component(&cx, &mut access)
        .await
        .map_err(|e| PreinitError::Snapshot(format!("{e:#}")))?;
    if let Some(why) = access.failure {
        return Err(PreinitError::Snapshot(why));
    }
    check(runtime, &snapshot, init).await?;
    Ok(snapshot)
}

/// The WASI context the initialization runs under: a run's (captured
/// output, no network), minus the workspace, and with the clocks and the
/// random source fixed.
///
/// Fixed because whatever the initialization reads is frozen into every
/// instance: with the real clocks QuickJS would record the build's time as
/// `performance.now()`'s origin (so a fast run would read a negative time)
/// and seed its hashes from the build's wall clock, and every build would
/// produce different bytes. With these the snapshot is reproducible and
/// its origins are zero. Values a run needs fresh are drawn after the
/// snapshot (see the module documentation).
fn fixed_wasi(stdout: &CappedOutput, stderr: &CappedOutput) -> WasiCtx {
    let mut wasi = WasiCtxBuilder::new();
    wasi.stdin(MemoryInputPipe::new(Vec::new()))
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .wall_clock(FixedClock)
        .monotonic_clock(FixedClock)
        .secure_random(FixedRandom(0x9e37_79b9_7f4a_7c15))
        .insecure_random(FixedRandom(0x2545_f491_4f6c_dd1d))
        .insecure_random_seed(0);
    wasi.build()
}

/// A clock stopped at zero: the Unix epoch, and the start of monotonic time.
struct FixedClock;

impl HostWallClock for FixedClock {
    fn resolution(&self) -> Duration {
        Duration::from_nanos(1)
    }
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FixedClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        0
    }
}

/// A fixed-seed generator (splitmix64). Not random at all, on purpose: a
/// snapshot is published, so nothing drawn while making it could be
/// secret anyway.
struct FixedRandom(u64);

impl FixedRandom {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

impl rand_core::TryRng for FixedRandom {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok((self.next() >> 32) as u32)
    }
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(self.next())
    }
    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.next().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// Compiles the snapshot and makes the initialization call again on a
/// fresh instance of it: what the build ships must at least start.
async fn check(runtime: &Runtime, snapshot: &[u8], init: &InitCall) -> Result<(), PreinitError> {
    let broken =
        |what: String| PreinitError::Snapshot(format!("the snapshot does not work: {what}"));
    let component = Component::new(runtime.engine().engine(), snapshot)
        .map_err(|e| broken(format!("{e:#}")))?;
    let request = RunRequest::code(Language::Javascript, "");
    let prepared = executor::prepare(runtime, &request, &Envelope::default(), GrantSet::empty())
        .map_err(|e| PreinitError::Context(e.message))?;
    let mut store = prepared.store;
    let instance = runtime
        .inner
        .linker
        .instantiate_async(&mut store, &component)
        .await
        .map_err(|e| broken(format!("{e:#}")))?;
    let func = instance
        .get_func(&mut store, init.export.as_str())
        .ok_or_else(|| broken(format!("it lost its `{}` export", init.export)))?;
    let args: Vec<Val> = init.arg.iter().map(|a| Val::String(a.clone())).collect();
    let mut rets = vec![Val::Bool(false); func.ty(&store).results().len()];
    func.call_async(&mut store, &args, &mut rets)
        .await
        .map_err(|e| broken(format!("{e:#}")))?;
    if let [Val::Result(Err(_))] = rets.as_slice() {
        return Err(broken(format!("`{}` fails on it", init.export)));
    }
    Ok(())
}

/// Reads an instrumented instance's state for the snapshot: the accessor
/// functions Wizer's instrumentation exports, called on our store.
///
/// The trait has no way to report an error, so the first one is kept in
/// `failure` (and a zero returned); [`preinitialize`] then refuses the
/// snapshot.
struct SnapshotAccess {
    store: Store<RunState>,
    instance: Instance,
    failure: Option<String>,
}

impl SnapshotAccess {
    /// Calls `func` in the exported `instance` and returns its one result.
    async fn call<R: Lift + Send + Sync + 'static>(
        &mut self,
        instance: &str,
        func: &str,
    ) -> Option<R> {
        let result = self.try_call(instance, func).await;
        match result {
            Ok(r) => Some(r),
            Err(why) => {
                self.failure.get_or_insert(why);
                None
            }
        }
    }

    async fn try_call<R: Lift + Send + Sync + 'static>(
        &mut self,
        instance: &str,
        func: &str,
    ) -> Result<R, String> {
        let (_, exported) = self
            .instance
            .get_export(&mut self.store, None, instance)
            .ok_or_else(|| format!("the instrumented component has no `{instance}`"))?;
        let (_, index) = self
            .instance
            .get_export(&mut self.store, Some(&exported), func)
            .ok_or_else(|| format!("the instrumented component has no `{instance}#{func}`"))?;
        let typed = self
            .instance
            .get_typed_func::<(), (R,)>(&mut self.store, index)
            .map_err(|e| format!("`{instance}#{func}`: {e:#}"))?;
        let (r,) = typed
            .call_async(&mut self.store, ())
            .await
            .map_err(|e| format!("reading `{instance}#{func}`: {e:#}"))?;
        Ok(r)
    }
}

impl ComponentInstanceState for SnapshotAccess {
    async fn call_func_ret_list_u8(
        &mut self,
        instance: &str,
        func: &str,
        contents: impl FnOnce(&[u8]) + Send,
    ) {
        match self.call::<WasmList<u8>>(instance, func).await {
            Some(list) => contents(list.as_le_slice(&self.store)),
            None => contents(&[]),
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.call(instance, func).await.unwrap_or(0)
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.call(instance, func).await.unwrap_or(0)
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.call::<f32>(instance, func)
            .await
            .map_or(0, f32::to_bits)
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.call::<f64>(instance, func)
            .await
            .map_or(0, f64::to_bits)
    }
}

// ---- the scientific Python guest: a core module's snapshot

/// Why a snapshot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ScientificSnapshotError {
    #[error("{0}")]
    Load(#[from] crate::component_cache::LoadError),
    #[error("the module cannot be instrumented for a snapshot: {0}")]
    Instrument(String),
    #[error("the interpreter failed while the snapshot was being made: {0}")]
    Init(String),
    #[error("the initialization printed output, which a snapshot would lose: {0}")]
    Output(String),
    #[error("the initialization left {0} files open, which no later run could use")]
    OpenFiles(usize),
}

/// Makes the snapshot: instantiates the plain interpreter `plain` (its
/// `_initialize` not yet run) under `artifacts`' layout, with fixed
/// clocks and entropy and an empty workspace, runs its initialization
/// and `init` (Python source: the imports and the driver), and returns
/// the module in the state that left it. The caller's engine must be the
/// runs' engine configuration.
pub async fn snapshot_scientific(
    rt: &crate::runtime::Runtime,
    plain: &[u8],
    artifacts: &crate::scientific::Artifacts,
    init: &str,
) -> Result<Vec<u8>, ScientificSnapshotError> {
    let started = std::time::Instant::now();
    let wizer = wasmtime_wizer::Wizer::new();
    let (cx, instrumented) = wizer
        .instrument(plain)
        .map_err(|e| ScientificSnapshotError::Instrument(format!("{e:#}")))?;
    let engine = rt.engine().engine();
    tracing::info!(
        "scientific snapshot: instrumented in {:.1} s; compiling the interpreter",
        started.elapsed().as_secs_f64()
    );
    let module = wasmtime::Module::new(engine, &instrumented)
        .map_err(|e| ScientificSnapshotError::Instrument(format!("{e:#}")))?;
    tracing::info!(
        "scientific snapshot: compiled at {:.1} s; importing the stack",
        started.elapsed().as_secs_f64()
    );
    let linker = crate::scientific::linker(engine)
        .map_err(|e| ScientificSnapshotError::Init(format!("{e:#}")))?;
    let env = crate::envelope::Envelope {
        wall_time_ms: 30 * 60 * 1000,
        memory_bytes: 4 << 30,
        workspace_bytes: 64 << 20,
        stdout_bytes: 1 << 20,
        stderr_bytes: 1 << 20,
        ..crate::envelope::Envelope::default()
    };
    let req = crate::run::RunRequest::code(crate::run::Language::Python, "");
    let mut prepared = crate::executor::prepare(rt, &req, &env, crate::grant::GrantSet::empty())
        .map_err(|e| ScientificSnapshotError::Init(e.message))?;
    let store = &mut prepared.store;
    crate::scientific::install(store, &artifacts.layout, 0);
    if let Some(p1) = store.data_mut().p1.as_mut() {
        p1.frozen = true;
    }
    let _ = store.set_fuel(u64::MAX);
    let instance = linker
        .instantiate_async(&mut *store, &module)
        .await
        .map_err(|e| ScientificSnapshotError::Init(format!("{e:#}")))?;
    if let Ok(init_fn) = instance.get_typed_func::<(), ()>(&mut *store, "_initialize") {
        init_fn
            .call_async(&mut *store, ())
            .await
            .map_err(|e| ScientificSnapshotError::Init(format!("_initialize: {e:#}")))?;
    }
    let live = crate::scientific::live_of(instance, store)
        .map_err(|e| ScientificSnapshotError::Init(format!("{e:#}")))?;
    crate::scientific::run_source(&live, store, init)
        .await
        .map_err(|e| ScientificSnapshotError::Init(format!("{e:#}")))?;
    let out = prepared.stdout.take(0);
    let err = prepared.stderr.take(0);
    if !out.bytes.is_empty() || !err.bytes.is_empty() {
        return Err(ScientificSnapshotError::Output(format!(
            "{}{}",
            String::from_utf8_lossy(&out.bytes),
            String::from_utf8_lossy(&err.bytes)
        )));
    }
    let store = &mut prepared.store;
    let open = store.data().p1.as_ref().map_or(0, |p| p.opened_by_guest());
    if open > 0 {
        return Err(ScientificSnapshotError::OpenFiles(open));
    }
    tracing::info!(
        "scientific snapshot: imported at {:.1} s; snapshotting",
        started.elapsed().as_secs_f64()
    );
    let mut state = CoreInstanceState { store, instance };
    let snapshot = wizer
        .snapshot(&cx, &mut state)
        .await
        .map_err(|e| ScientificSnapshotError::Instrument(format!("{e:#}")));
    tracing::info!(
        "scientific snapshot: done at {:.1} s",
        started.elapsed().as_secs_f64()
    );
    snapshot
}

struct CoreInstanceState<'a> {
    store: &'a mut Store<RunState>,
    instance: wasmtime::Instance,
}

impl wasmtime_wizer::InstanceState for CoreInstanceState<'_> {
    async fn global_get(
        &mut self,
        name: &str,
        _: wasmtime_wizer::ValType,
    ) -> wasmtime_wizer::SnapshotVal {
        use wasmtime_wizer::SnapshotVal;
        let v = self
            .instance
            .get_global(&mut *self.store, name)
            .map(|g| g.get(&mut *self.store));
        match v {
            Some(wasmtime::Val::I32(x)) => SnapshotVal::I32(x),
            Some(wasmtime::Val::I64(x)) => SnapshotVal::I64(x),
            Some(wasmtime::Val::F32(x)) => SnapshotVal::F32(x),
            Some(wasmtime::Val::F64(x)) => SnapshotVal::F64(x),
            Some(wasmtime::Val::V128(x)) => SnapshotVal::V128(x.as_u128()),
            // Wizer asks only for the globals it exported itself.
            _ => SnapshotVal::I32(0),
        }
    }

    async fn memory_contents(&mut self, name: &str, contents: impl FnOnce(&[u8]) + Send) {
        match self.instance.get_memory(&mut *self.store, name) {
            Some(m) => contents(m.data(&*self.store)),
            None => contents(&[]),
        }
    }
}
