//! The worker's side: `plimsoll-worker` reads frames on stdin and writes
//! frames on stdout. It loads the guests it is told to (precompiled images,
//! read-only), answers `Observe` with what it sees of its boundary, runs
//! requests one at a time — each in a fresh instance with a fresh workspace
//! — until the supervisor hangs up, and forwards the guest's broker calls
//! to the supervisor. It holds no grant and no credential. The supervisor
//! binds a worker to one caller; the worker itself never learns who.

use crate::bindings::broker::{CallError, Request, Response};
use crate::broker::RemoteLink;
use crate::engine::EngineOptions;
use crate::executor::{BrokerSide, execute_with};
use crate::guest::Guest;
use crate::live_session::LocalSession;
use crate::runtime::{Runtime, RuntimeConfig};
use crate::tier::{Evidence, Isolation, Tier};
use crate::worker::observe::{WORK_ROOT, observe};
use crate::worker::protocol::{
    FrameError, FromWorker, PROTOCOL_VERSION, ToWorker, WireCallError, read_blocking,
    write_blocking,
};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type Pending = Arc<Mutex<HashMap<u64, tokio::sync::oneshot::Sender<Result<Response, CallError>>>>>;

/// The frame pipe to the supervisor, written without a buffer.
type Fd1 = std::mem::ManuallyDrop<std::fs::File>;

#[derive(Clone)]
struct Out(Arc<Mutex<Fd1>>);

impl Out {
    fn send(&self, msg: &FromWorker) -> bool {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        write_blocking(&mut **g, msg).is_ok()
    }
}

#[derive(Debug)]
struct Link {
    out: Arc<Mutex<Fd1>>,
    pending: Pending,
    /// Shared by every run of this worker, so that a late reply to an
    /// earlier run's call never matches a later run's.
    seq: Arc<AtomicU64>,
}

impl RemoteLink for Link {
    fn call<'a>(
        &'a self,
        api: &'a str,
        req: Request,
        timeout: Option<std::time::Duration>,
    ) -> BoxFuture<'a, Result<Response, CallError>> {
        Box::pin(async move {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = tokio::sync::oneshot::channel();
            self.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(seq, tx);
            let sent = {
                let mut g = self.out.lock().unwrap_or_else(|p| p.into_inner());
                write_blocking(
                    &mut **g,
                    &FromWorker::BrokerCall {
                        seq,
                        api: api.to_owned(),
                        request: req.into(),
                        timeout_ms: timeout
                            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
                    },
                )
                .is_ok()
            };
            if !sent {
                return Err(CallError::Upstream("the supervisor is gone".into()));
            }
            rx.await
                .unwrap_or_else(|_| Err(CallError::Upstream("the supervisor is gone".into())))
        })
    }
}

/// Closes every descriptor but stdin, stdout and stderr: whatever the
/// boundary's tools left open (a worker starts with exactly the frame
/// pipes and stderr; the smoke test lists what it holds after that).
fn close_inherited() {
    // SAFETY: close_range on descriptors this process has not opened for
    // itself yet (nothing of the worker's own is open before this).
    let r = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if r != 0 {
        // An older kernel (or gVisor) without close_range: close them one
        // by one, up to the descriptor limit.
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
            lim.rlim_cur.min(65536) as libc::c_int
        } else {
            4096
        };
        for fd in 3..max {
            // SAFETY: closing a descriptor number; EBADF for unused ones.
            unsafe { libc::close(fd) };
        }
    }
}

fn fail(out: &Out, message: &str) -> std::process::ExitCode {
    let _ = out.send(&FromWorker::Failed {
        message: message.to_owned(),
    });
    std::process::ExitCode::from(3)
}

/// The worker's main loop. Returns when the run is done or the supervisor
/// hangs up.
pub fn main() -> std::process::ExitCode {
    close_inherited();
    // Frames go straight to fd 1, one write each: `Stdout` is
    // line-buffered and would split a frame at every newline byte (each
    // write is a system call, dear under a user-space kernel). No new
    // descriptor: the smoke test lists every one the worker holds.
    let stdout = {
        use std::os::fd::FromRawFd;
        // SAFETY: fd 1 is open for the life of the process (the frame
        // pipe), and `ManuallyDrop` never closes it.
        let f = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
        Arc::new(Mutex::new(f))
    };
    let out = Out(stdout.clone());
    // Read unbuffered, so that nothing past `Hello` is taken from the pipe
    // before it moves to the async reader below.
    let mut stdin = {
        use std::os::fd::FromRawFd;
        // SAFETY: fd 0 is open for the life of the process (the frame
        // pipe), and `ManuallyDrop` never closes it.
        std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) })
    };
    let (engine, images) = match read_hello(&mut stdin) {
        Ok(ToWorker::Hello {
            protocol,
            engine,
            guests,
        }) if protocol == PROTOCOL_VERSION => (engine, guests),
        Ok(ToWorker::Hello { protocol, .. }) => {
            return fail(
                &out,
                &format!("protocol {protocol} is not this worker's {PROTOCOL_VERSION}"),
            );
        }
        _ => return fail(&out, "the first frame must be Hello"),
    };
    let work = PathBuf::from(WORK_ROOT).join("runs");
    let rt = match Runtime::new(RuntimeConfig {
        engine: EngineOptions {
            fuel: engine.fuel,
            pooling: true,
            // One run at a time (plus a margin for the instances a
            // component creates inside itself), and the warm instances
            // kept for the next run.
            max_live_instances: 8 + engine
                .warm_instances
                .min(4)
                .saturating_mul(u32::try_from(images.len()).unwrap_or(u32::MAX).min(16)),
            max_memory_bytes: engine.max_memory_bytes,
            max_wasm_stack: usize::try_from(engine.max_wasm_stack).unwrap_or(4 << 20),
            // Only a worker that serves its caller again makes instances
            // ahead of time; they are made between runs (the warm pool
            // waits for a quiet moment), never during one.
            warm_instances: engine.warm_instances.min(4),
            cpu: engine.cpu,
            ..EngineOptions::default()
        },
        cache_dir: None,
        workspace_dir: work,
        ..RuntimeConfig::default()
    }) {
        Ok(rt) => rt,
        Err(e) => return fail(&out, &format!("engine: {e}")),
    };
    let mut guests: HashMap<String, Guest> = HashMap::new();
    for img in &images {
        if let Err(e) = guest_for(&rt, &mut guests, img) {
            return fail(&out, &format!("cannot load a guest image: {e}"));
        }
    }
    if !out.send(&FromWorker::Ready {
        protocol: PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").to_owned(),
        loaded: guests.len(),
    }) {
        return std::process::ExitCode::from(3);
    }

    // Frames are read on a thread of their own so that broker replies
    // arrive while the guest runs.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&out, &format!("async runtime: {e}")),
    };
    // Frames are read apart from the main loop, so that broker replies
    // arrive while the guest runs: on the runtime's own thread when stdin
    // is a pipe (bubblewrap, gVisor), on a thread of its own otherwise (a
    // VM's serial port).
    let (tx, mut rx) = tokio::sync::mpsc::channel::<ToWorker>(16);
    if stdin_is_fifo() {
        let _in_runtime = runtime.enter();
        use std::os::fd::FromRawFd;
        // SAFETY: fd 0 moves to the receiver; nothing else reads or closes
        // it from here on (`stdin` above is never used again).
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(0) };
        match tokio::net::unix::pipe::Receiver::from_owned_fd(owned) {
            Ok(mut pipe) => {
                runtime.spawn(async move {
                    while let Ok(msg) =
                        crate::worker::protocol::read_async::<ToWorker>(&mut pipe).await
                    {
                        if tx.send(msg).await.is_err() {
                            break;
                        }
                    }
                });
            }
            Err(e) => return fail(&out, &format!("stdin: {e}")),
        }
    } else {
        std::thread::spawn(move || {
            while let Ok(msg) = read_blocking::<ToWorker>(&mut *stdin) {
                if tx.blocking_send(msg).is_err() {
                    break;
                }
            }
        });
    }
    let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
    let seq = Arc::new(AtomicU64::new(1));
    let mut session: Option<LocalSession> = None;
    // The envelope the session was opened with (its snapshots' caps).
    let mut session_env = crate::envelope::Envelope::default();
    runtime.block_on(async move {
        loop {
            let Some(msg) = rx.recv().await else {
                return std::process::ExitCode::SUCCESS;
            };
            match msg {
                ToWorker::Observe => {
                    if !out.send(&FromWorker::Observed {
                        observation: observe(),
                    }) {
                        return std::process::ExitCode::from(3);
                    }
                }
                ToWorker::Run {
                    run_id,
                    guest,
                    request,
                    envelope,
                    grants,
                } => {
                    let g = match guest_for(&rt, &mut guests, &guest) {
                        Ok(g) => g,
                        Err(e) => return fail(&out, &e),
                    };
                    let side = remote_side(&stdout, &pending, &seq, grants);
                    let run = execute_with(
                        &rt,
                        &g,
                        &request,
                        &envelope,
                        side,
                        placeholder_isolation(),
                        run_id,
                    );
                    let Some(result) = pump(run, &mut rx, &pending).await else {
                        return std::process::ExitCode::from(3);
                    };
                    if !finish(
                        &out,
                        &pending,
                        true,
                        FromWorker::Done {
                            result,
                            boot_id: crate::worker::observe::boot_id_again(),
                        },
                    ) {
                        return std::process::ExitCode::from(3);
                    }
                }
                ToWorker::OpenSession {
                    guests: images,
                    start,
                    keep_on_failure,
                    envelope,
                    resume,
                } => {
                    if session.is_some() {
                        return fail(&out, "a worker keeps one session");
                    }
                    let mut list = Vec::with_capacity(images.len());
                    for img in images.iter().take(16) {
                        match guest_for(&rt, &mut guests, img) {
                            Ok(g) => list.push(g),
                            Err(e) => return fail(&out, &e),
                        }
                    }
                    session_env = envelope;
                    let opened = async {
                        match resume {
                            None => {
                                LocalSession::open(&rt, list, &start, keep_on_failure, &envelope)
                                    .await
                            }
                            Some(archive) => {
                                let caps = crate::snapshot::archive::Caps::for_envelope(&envelope);
                                let (_, image) =
                                    crate::snapshot::archive::decode(archive.as_bytes(), &caps)
                                        .map_err(|e| crate::run::ErrorInfo {
                                            code: crate::snapshot::INVALID.into(),
                                            message: e.to_string(),
                                        })?;
                                LocalSession::resume(&rt, list, &envelope, &image).await
                            }
                        }
                    };
                    let Some(opened) = pump(opened, &mut rx, &pending).await else {
                        return std::process::ExitCode::from(3);
                    };
                    let reply = match opened {
                        Ok(s) => {
                            session = Some(s);
                            FromWorker::SessionOpened
                        }
                        Err(e) => FromWorker::Refused {
                            code: e.code,
                            message: e.message,
                        },
                    };
                    if !out.send(&reply) {
                        return std::process::ExitCode::from(3);
                    }
                }
                ToWorker::Eval {
                    index,
                    run_id,
                    request,
                    envelope,
                    grants,
                } => {
                    let Some(live) = session.as_mut() else {
                        return fail(&out, "no session is open in this worker");
                    };
                    let side = remote_side(&stdout, &pending, &seq, grants);
                    let step = live.eval_with(
                        index,
                        &request,
                        &envelope,
                        side,
                        placeholder_isolation(),
                        run_id,
                    );
                    let Some(step) = pump(step, &mut rx, &pending).await else {
                        return std::process::ExitCode::from(3);
                    };
                    let ended = step.end.is_some();
                    if ended {
                        session = None;
                    }
                    let dropped = ended || step.interpreter_ended;
                    if !finish(
                        &out,
                        &pending,
                        dropped,
                        FromWorker::Evaluated {
                            result: step.result,
                            interpreter_started: step.interpreter_started,
                            interpreter_ended: step.interpreter_ended,
                            ended,
                            boot_id: crate::worker::observe::boot_id_again(),
                        },
                    ) {
                        return std::process::ExitCode::from(3);
                    }
                }
                ToWorker::Snapshot => {
                    let Some(live) = session.as_mut() else {
                        return fail(&out, "no session is open in this worker");
                    };
                    let iso = placeholder_isolation();
                    let taken = live.take_snapshot(&session_env, &iso);
                    let Some(taken) = pump(taken, &mut rx, &pending).await else {
                        return std::process::ExitCode::from(3);
                    };
                    let reply = match taken.and_then(|image| {
                        crate::snapshot::archive::encode(&image, 1).map_err(|e| {
                            crate::run::ErrorInfo {
                                code: crate::snapshot::TOO_LARGE.into(),
                                message: e.to_string(),
                            }
                        })
                    }) {
                        Ok(a) => FromWorker::Snapshotted {
                            archive: crate::blob::Blob(a.bytes),
                        },
                        Err(e) => FromWorker::Refused {
                            code: e.code,
                            message: e.message,
                        },
                    };
                    if !out.send(&reply) {
                        return std::process::ExitCode::from(3);
                    }
                }
                // A reply to a call of a run that has ended.
                ToWorker::BrokerReply { .. } => {}
                ToWorker::Hello { .. } => {
                    return fail(&out, "unexpected frame");
                }
            }
        }
    })
}

/// Reads the first frame. A VM's serial port reads as end-of-file until
/// the host side of the port is connected, which under load can be a
/// moment after the port appeared: there, an end-of-file before the first
/// byte is waited out (for at most 10 s). On a pipe it means the
/// supervisor is gone.
fn read_hello(stdin: &mut std::fs::File) -> Result<ToWorker, FrameError> {
    use std::io::Read;
    if stdin_is_fifo() {
        return read_blocking(stdin);
    }
    let started = std::time::Instant::now();
    let mut first = [0u8; 1];
    loop {
        match stdin.read(&mut first) {
            Ok(1) => break,
            Ok(_) if started.elapsed() < std::time::Duration::from_secs(10) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Ok(_) => return Err(FrameError::Closed),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    read_blocking(&mut (&first[..]).chain(stdin))
}

/// Whether fd 0 is a pipe (which the async runtime can wait on).
fn stdin_is_fifo() -> bool {
    // SAFETY: fstat writes into the struct we own.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on fd 0 with a valid out-pointer.
    unsafe { libc::fstat(0, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFIFO }
}

/// Most guests one worker keeps loaded.
const MAX_LOADED: usize = 32;

/// The guest at `img`: loaded before, or now (and kept, up to
/// [`MAX_LOADED`]: a core-module guest's trees are tens of megabytes).
fn guest_for(
    rt: &Runtime,
    loaded: &mut HashMap<String, Guest>,
    img: &crate::worker::protocol::GuestImage,
) -> Result<Guest, String> {
    let g = plain_guest_for(rt, loaded, img)?;
    if img.python.is_none() && img.node.is_none() {
        return Ok(g);
    }
    // A shell: the interpreters its `python3` and `node` start.
    let mut programs = crate::guest::Programs::default();
    if let Some(py) = &img.python {
        programs.python = Some(plain_guest_for(rt, loaded, py)?);
    }
    if let Some(node) = &img.node {
        programs.node = Some(plain_guest_for(rt, loaded, node)?);
    }
    Ok(g.with_programs(programs))
}

fn plain_guest_for(
    rt: &Runtime,
    loaded: &mut HashMap<String, Guest>,
    img: &crate::worker::protocol::GuestImage,
) -> Result<Guest, String> {
    use crate::worker::protocol::ImageKind;
    if let Some(g) = loaded.get(&img.path) {
        return Ok(g.clone());
    }
    let path = std::path::Path::new(&img.path);
    let g = match img.kind {
        ImageKind::Component => rt.load_trusted_image(path, &img.hash, &img.family),
        ImageKind::Core => rt.load_trusted_core(path, &img.hash),
    }
    .map_err(|e| format!("guest image: {e}"))?;
    if loaded.len() < MAX_LOADED {
        loaded.insert(img.path.clone(), g.clone());
    }
    Ok(g)
}

/// The broker side of one run or evaluation: calls cross to the
/// supervisor.
fn remote_side(
    stdout: &Arc<Mutex<Fd1>>,
    pending: &Pending,
    seq: &Arc<AtomicU64>,
    origins: Vec<crate::worker::protocol::GrantOrigin>,
) -> BrokerSide {
    BrokerSide::Remote {
        link: Arc::new(Link {
            out: stdout.clone(),
            pending: pending.clone(),
            seq: seq.clone(),
        }),
        origins,
    }
}

/// The supervisor replaces this with its own isolation.
fn placeholder_isolation() -> Isolation {
    Isolation {
        tier: Tier::Process,
        provider: "worker".into(),
        wrapper: None,
        evidence: Evidence {
            observed_at_unix: 0,
            summary: String::new(),
            checks: Vec::new(),
            worker: None,
        },
    }
}

/// Drives `fut` while answering the guest's pending broker calls with the
/// supervisor's replies. `None` when the supervisor hung up or sent
/// anything else mid-run.
async fn pump<F: std::future::Future>(
    fut: F,
    rx: &mut tokio::sync::mpsc::Receiver<ToWorker>,
    pending: &Pending,
) -> Option<F::Output> {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            r = &mut fut => return Some(r),
            m = rx.recv() => match m {
                Some(ToWorker::BrokerReply { seq, result }) => {
                    let tx = pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&seq);
                    if let Some(tx) = tx {
                        let _ = tx.send(result.map(Into::into).map_err(|e: WireCallError| e.into()));
                    }
                }
                _ => return None,
            }
        }
    }
}

/// Sends a run's or an evaluation's last frame, forgets the calls it left
/// unanswered (their replies, if any come, match nothing), and, when an
/// instance was `dropped`, tears it down before the next frame is read, so
/// that it never shares the engine's slots with the next run.
fn finish(out: &Out, pending: &Pending, dropped: bool, last: FromWorker) -> bool {
    pending.lock().unwrap_or_else(|p| p.into_inner()).clear();
    if !out.send(&last) {
        return false;
    }
    if dropped {
        crate::reaper::flush(std::time::Duration::from_secs(2));
    }
    true
}
