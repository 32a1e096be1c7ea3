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
use crate::runtime::{Runtime, RuntimeConfig};
use crate::tier::{Evidence, Isolation, Tier};
use crate::worker::observe::{WORK_ROOT, observe};
use crate::worker::protocol::{
    FromWorker, PROTOCOL_VERSION, ToWorker, WireCallError, read_blocking, write_blocking,
};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type Pending = Arc<Mutex<HashMap<u64, tokio::sync::oneshot::Sender<Result<Response, CallError>>>>>;

#[derive(Clone)]
struct Out(Arc<Mutex<std::io::Stdout>>);

impl Out {
    fn send(&self, msg: &FromWorker) -> bool {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        write_blocking(&mut *g, msg).is_ok()
    }
}

#[derive(Debug)]
struct Link {
    out: Arc<Mutex<std::io::Stdout>>,
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
                    &mut *g,
                    &FromWorker::BrokerCall {
                        seq,
                        api: api.to_owned(),
                        request: req.into(),
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
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let out = Out(stdout.clone());
    let mut stdin = std::io::stdin();
    let (engine, images) = match read_blocking::<ToWorker>(&mut stdin) {
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
    }) {
        Ok(rt) => rt,
        Err(e) => return fail(&out, &format!("engine: {e}")),
    };
    let mut guests: HashMap<String, Guest> = HashMap::new();
    for img in &images {
        match rt.load_trusted_image(std::path::Path::new(&img.path), &img.hash, &img.family) {
            Ok(g) => {
                guests.insert(img.path.clone(), g);
            }
            Err(e) => return fail(&out, &format!("cannot load a guest image: {e}")),
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
    let (tx, mut rx) = tokio::sync::mpsc::channel::<ToWorker>(16);
    std::thread::spawn(move || {
        while let Ok(msg) = read_blocking::<ToWorker>(&mut stdin) {
            if tx.blocking_send(msg).is_err() {
                break;
            }
        }
    });
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(&out, &format!("async runtime: {e}")),
    };
    let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
    let seq = Arc::new(AtomicU64::new(1));
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
                    let g = match guests.get(&guest.path) {
                        Some(g) => g.clone(),
                        None => match rt.load_trusted_image(
                            std::path::Path::new(&guest.path),
                            &guest.hash,
                            &guest.family,
                        ) {
                            Ok(g) => g,
                            Err(e) => return fail(&out, &format!("guest image: {e}")),
                        },
                    };
                    let link = Arc::new(Link {
                        out: stdout.clone(),
                        pending: pending.clone(),
                        seq: seq.clone(),
                    });
                    // The supervisor replaces this with its own isolation.
                    let iso = Isolation {
                        tier: Tier::Process,
                        provider: "worker".into(),
                        wrapper: None,
                        evidence: Evidence {
                            observed_at_unix: 0,
                            summary: String::new(),
                            checks: Vec::new(),
                            worker: None,
                        },
                    };
                    let run = execute_with(
                        &rt,
                        &g,
                        &request,
                        &envelope,
                        BrokerSide::Remote {
                            link,
                            origins: grants,
                        },
                        iso,
                        run_id,
                    );
                    tokio::pin!(run);
                    let result = loop {
                        tokio::select! {
                            r = &mut run => break r,
                            m = rx.recv() => match m {
                                Some(ToWorker::BrokerReply { seq, result }) => {
                                    let tx = pending.lock().unwrap_or_else(|p| p.into_inner()).remove(&seq);
                                    if let Some(tx) = tx {
                                        let _ = tx.send(result.map(Into::into).map_err(|e: WireCallError| e.into()));
                                    }
                                }
                                // Anything else mid-run, or a closed pipe:
                                // stop.
                                _ => return std::process::ExitCode::from(3),
                            }
                        }
                    };
                    // Calls the run left unanswered are forgotten: their
                    // replies, if any come, match nothing.
                    pending.lock().unwrap_or_else(|p| p.into_inner()).clear();
                    if !out.send(&FromWorker::Done {
                        result,
                        boot_id: crate::worker::observe::boot_id(),
                    }) {
                        return std::process::ExitCode::from(3);
                    }
                    let _ = std::io::stdout().flush();
                    // The instance is torn down before the next run starts
                    // (after the result is on its way), so that it never
                    // shares the engine's slots with it.
                    crate::reaper::flush(std::time::Duration::from_secs(2));
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
