//! One worker process, as the supervisor holds it: started inside its
//! wrapper, greeted (`Hello` → `Ready` within [`START_TIMEOUT`], same
//! protocol version or refused), asked for its observation, and sent runs
//! whose broker calls it answers in between.
//!
//! Guarantees: every wait on the worker is bounded (start-up, or the
//! run's wall time plus the wrapper's grace, plus a start-up when a core
//! image must be loaded first); a frame out of turn is a protocol error
//! that leaves the worker unusable; dropping a [`Worker`] kills its whole
//! sandbox (the pidfds of the processes under it, then the outer process)
//! and runs its wrapper's cleanup.

use super::{START_TIMEOUT, WorkerError};
use crate::broker::RunBroker;
use crate::envelope::Envelope;
use crate::run::{RunRequest, RunResult};
use crate::worker::observe::Observation;
use crate::worker::protocol::{
    FromWorker, GrantOrigin, GuestImage, ImageKind, PROTOCOL_VERSION, ToWorker, WorkerEngine,
    read_async, write_async,
};
use crate::wrapper::{Launch, Wrapper};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Most core images a worker is remembered to hold loaded (the worker
/// keeps at most 32 loaded guests, components included).
const MAX_REMEMBERED_CORES: usize = 16;

/// One started worker.
pub struct Worker {
    child: Child,
    /// The guest images it was started with.
    pub(super) images: Vec<String>,
    stdin: ChildStdin,
    stdout: ChildStdout,
    cleanup: Option<Box<dyn FnOnce() + Send>>,
    /// pidfds of the processes the boundary started under the child (for
    /// bubblewrap: the pid namespace's init and the worker), taken when
    /// the worker said it was ready.
    sandbox: Vec<std::os::fd::OwnedFd>,
    /// The boot id its smoke test saw.
    pub(super) boot_id: String,
    /// How long past a wall time it is waited for ([`Wrapper::hang_grace`]).
    grace: Duration,
    /// The core images it has loaded (lazily, on a first run): a run of
    /// any other core image may spend up to [`START_TIMEOUT`] loading it
    /// before its wall time starts.
    cores: std::collections::HashSet<String>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // The whole sandbox ends with the worker: the namespace's init
        // first (its death kills every process of its pid namespace,
        // stopped or not), then the outer process. A pidfd names exactly
        // the process it was opened for, so a reused pid is never hit.
        for fd in &self.sandbox {
            use std::os::fd::AsRawFd;
            // SAFETY: pidfd_send_signal on a pidfd this worker owns.
            unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0u32,
                );
            }
        }
        let _ = self.child.start_kill();
        if let Some(c) = self.cleanup.take() {
            c();
        }
    }
}

/// Most descendants of one worker's outer process that are tracked.
const MAX_SANDBOX_PROCESSES: usize = 16;

/// pidfds of the descendants of `pid` (children first), from
/// `/proc/PID/task/*/children`, at most [`MAX_SANDBOX_PROCESSES`].
fn descendants(pid: u32) -> Vec<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let mut out = Vec::new();
    let mut queue = std::collections::VecDeque::from([pid]);
    while let Some(p) = queue.pop_front() {
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
            .flatten();
        for t in tasks {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            for c in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                if out.len() >= MAX_SANDBOX_PROCESSES {
                    return out;
                }
                // SAFETY: pidfd_open has no memory arguments.
                let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, c, 0u32) };
                if let Ok(fd) = i32::try_from(fd)
                    && fd >= 0
                {
                    // SAFETY: a fresh descriptor this process owns.
                    out.push(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
                    queue.push_back(c);
                }
            }
        }
    }
    out
}

impl Worker {
    /// The worker's process id (for tests that kill it).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    pub(super) async fn spawn(
        wrapper: &Arc<dyn Wrapper>,
        launch: &Launch,
        engine: WorkerEngine,
        guests: Vec<GuestImage>,
    ) -> Result<Worker, WorkerError> {
        // The boundary shows the worker exactly the components it loads.
        let mut l = launch.clone();
        l.images = guests
            .iter()
            .filter(|g| g.kind == ImageKind::Component)
            .filter_map(|g| g.path.strip_prefix("/guests/"))
            .map(str::to_owned)
            .collect();
        // Preparing may write a VM's initramfs (hundreds of MB with a core
        // image): off the threads that carry every worker's frames.
        let w = wrapper.clone();
        let prepared = tokio::task::spawn_blocking(move || w.prepare(&l))
            .await
            .map_err(|_| WorkerError::Spawn("the wrapper's preparation did not finish".into()))??;
        let diagnostics = prepared.diagnostics.clone();
        let mut command = prepared.command;
        let mut child = command
            .spawn()
            .map_err(|e| WorkerError::Spawn(e.to_string()))?;
        drop(prepared.keep);
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(WorkerError::Spawn("no pipes to the worker".into()));
        };
        let mut w = Worker {
            child,
            images: guests.iter().map(|g| g.path.clone()).collect(),
            stdin,
            stdout,
            cleanup: prepared.cleanup,
            sandbox: Vec::new(),
            boot_id: String::new(),
            grace: wrapper.hang_grace(),
            cores: std::collections::HashSet::new(),
        };
        match w.handshake(engine, guests).await {
            Ok(()) => {
                if let Some(pid) = w.child.id() {
                    w.sandbox = descendants(pid);
                }
                Ok(w)
            }
            Err(e) => {
                // Quote the wrapper tool's own words before the worker (and
                // with it the diagnostics file) is cleaned up.
                let said = diagnostics
                    .map(|log| crate::wrapper::diagnostics_tail(&log, 300))
                    .unwrap_or_default();
                drop(w);
                if said.is_empty() {
                    Err(e)
                } else {
                    Err(WorkerError::Failed(format!(
                        "{e}; {} said: {said}",
                        wrapper.name()
                    )))
                }
            }
        }
    }

    async fn handshake(
        &mut self,
        engine: WorkerEngine,
        guests: Vec<GuestImage>,
    ) -> Result<(), WorkerError> {
        let w = self;
        let hello = ToWorker::Hello {
            protocol: PROTOCOL_VERSION,
            engine,
            guests,
        };
        let ready = tokio::time::timeout(START_TIMEOUT, async {
            write_async(&mut w.stdin, &hello).await?;
            read_async::<FromWorker>(&mut w.stdout).await
        })
        .await
        .map_err(|_| WorkerError::StartTimeout(START_TIMEOUT))??;
        match ready {
            FromWorker::Ready { protocol, .. } if protocol == PROTOCOL_VERSION => Ok(()),
            FromWorker::Ready { protocol, .. } => Err(WorkerError::Version { found: protocol }),
            FromWorker::Failed { message } => Err(WorkerError::Failed(clip(&message))),
            _ => Err(WorkerError::Protocol("expected Ready".into())),
        }
    }

    pub(super) async fn observe(&mut self) -> Result<Observation, WorkerError> {
        write_async(&mut self.stdin, &ToWorker::Observe).await?;
        match tokio::time::timeout(START_TIMEOUT, read_async::<FromWorker>(&mut self.stdout))
            .await
            .map_err(|_| WorkerError::Hung)??
        {
            FromWorker::Observed { observation } => Ok(observation),
            FromWorker::Failed { message } => Err(WorkerError::Failed(clip(&message))),
            _ => Err(WorkerError::Protocol("expected Observed".into())),
        }
    }

    /// Sends `first` and answers the worker's broker calls with `broker`
    /// until it sends anything else, which is returned. The worker must
    /// answer within `wall` plus its grace, plus [`START_TIMEOUT`] when
    /// `first` makes it load a core image it does not hold yet.
    pub(super) async fn converse(
        &mut self,
        first: &ToWorker,
        wall: Duration,
        images: &[GuestImage],
        broker: &RunBroker,
    ) -> Result<FromWorker, WorkerError> {
        let images = crate::worker::protocol::flatten_images(images);
        let loads = images
            .iter()
            .any(|g| g.kind == ImageKind::Core && !self.cores.contains(&g.path));
        let loading = if loads { START_TIMEOUT } else { Duration::ZERO };
        let deadline = Instant::now() + loading + wall + self.grace;
        write_async(&mut self.stdin, first).await?;
        let answer = self.answer_until(deadline, broker).await;
        if answer.is_ok() {
            // Whatever it answered, it loaded them first.
            for g in images.iter().filter(|g| g.kind == ImageKind::Core) {
                if self.cores.len() < MAX_REMEMBERED_CORES {
                    self.cores.insert(g.path.clone());
                }
            }
        }
        answer
    }

    /// [`Worker::converse`] after the first frame was sent.
    async fn answer_until(
        &mut self,
        deadline: Instant,
        broker: &RunBroker,
    ) -> Result<FromWorker, WorkerError> {
        loop {
            let frame = tokio::time::timeout_at(
                tokio::time::Instant::from_std(deadline),
                read_async::<FromWorker>(&mut self.stdout),
            )
            .await
            .map_err(|_| WorkerError::Hung)??;
            match frame {
                FromWorker::BrokerCall {
                    seq,
                    api,
                    request,
                    timeout_ms,
                } => {
                    let result = broker
                        .call_within(&api, request.into(), timeout_ms.map(Duration::from_millis))
                        .await
                        .map(Into::into)
                        .map_err(Into::into);
                    write_async(&mut self.stdin, &ToWorker::BrokerReply { seq, result }).await?;
                }
                FromWorker::Failed { message } => return Err(WorkerError::Failed(clip(&message))),
                other => return Ok(other),
            }
        }
    }

    /// Runs one request; returns the worker's result and the boot id it
    /// reported after the run. Any error leaves the worker unusable.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn run(
        &mut self,
        run_id: String,
        guest: GuestImage,
        req: &RunRequest,
        env: &Envelope,
        grants: Vec<GrantOrigin>,
        broker: RunBroker,
    ) -> Result<(RunResult, String), WorkerError> {
        let images = [guest.clone()];
        let first = ToWorker::Run {
            run_id,
            guest,
            request: req.clone(),
            envelope: *env,
            grants,
        };
        match self
            .converse(
                &first,
                Duration::from_millis(env.wall_time_ms),
                &images,
                &broker,
            )
            .await?
        {
            FromWorker::Done { result, boot_id } => Ok((result, boot_id)),
            _ => Err(WorkerError::Protocol(
                "unexpected frame during a run".into(),
            )),
        }
    }
}

/// A worker's own words, bounded. Long enough for a wasmtime error chain
/// with two image paths in it, cause included (a start-up refusal must say
/// why in full).
pub(super) fn clip(s: &str) -> String {
    s.chars().take(2048).collect()
}
