//! What a session holds, wherever it lives: the seam between the session
//! table's policy ([`crate::session`]) and the provider that keeps the
//! interpreters.
//!
//! A provider offers sessions by opening a [`LiveSession`]: the in-process
//! engine keeps its instances here ([`LocalSession`]); a wrapped provider
//! keeps them in a worker bound to the session's caller
//! ([`crate::worker::pool`]), where the worker runs a [`LocalSession`] of
//! its own. The table above never knows which: it owns ids, owners, caps,
//! turns, idle time and lifetime, and asks the live session to evaluate.

use crate::envelope::Envelope;
use crate::executor::{self, BrokerSide, Classified, Live, Prepared};
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::run::{ErrorInfo, RunRequest, RunResult};
use crate::runtime::Runtime;
use crate::tier::Isolation;
use crate::workspace::Workspace;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Duration;

mod snapshot;

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionEnd {
    /// Its owner closed it.
    Closed,
    /// It was idle for its idle timeout, or reached its lifetime.
    Expired,
    /// An evaluation left its (only) instance unusable.
    Failed,
    /// A newer session of the same owner took its place.
    Replaced,
    /// The sandbox closed every session (shutting down).
    Shutdown,
    /// The boundary that held it failed: its worker died, hung, or sent a
    /// frame that was malformed, out of turn or untrue.
    BoundaryFailed,
}

impl SessionEnd {
    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionEnd::Closed => "closed",
            SessionEnd::Expired => "expired",
            SessionEnd::Failed => "failed",
            SessionEnd::Replaced => "replaced",
            SessionEnd::Shutdown => "shutdown",
            SessionEnd::BoundaryFailed => "boundary_failed",
        }
    }
}

/// What a session is opened with.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Its interpreters, at most one per guest family; they share one
    /// workspace.
    pub guests: Vec<Guest>,
    /// Which of `guests` (by position) start when the session opens; the
    /// others start with their first evaluation.
    pub start: Vec<usize>,
    /// A failed evaluation ends only its interpreter (a notebook), not the
    /// session.
    pub keep_on_failure: bool,
    /// Shortens the operator's lifetime (never lengthens it).
    pub lifetime: Option<Duration>,
    /// Shortens the operator's idle timeout (never lengthens it).
    pub idle_timeout: Option<Duration>,
    /// An opaque owner tag (the daemon's owner digest) with the cap on one
    /// owner's sessions of this caller: at the cap, the owner's least
    /// recently used session with no evaluation in progress is replaced.
    pub owner: Option<(String, usize)>,
}

impl SessionOptions {
    /// One interpreter, started at open; the session ends with it.
    pub fn single(guest: Guest) -> Self {
        SessionOptions {
            guests: vec![guest],
            start: vec![0],
            keep_on_failure: false,
            lifetime: None,
            idle_timeout: None,
            owner: None,
        }
    }
}

/// One evaluation's outcome, as the live session reports it.
#[derive(Debug)]
pub struct Step {
    /// The evaluation, as a run (the table sets its session id and wall
    /// time).
    pub result: RunResult,
    /// This evaluation is the first of its interpreter instance.
    pub interpreter_started: bool,
    /// The instance ended during this evaluation; the next starts afresh.
    pub interpreter_ended: bool,
    /// The whole session must end, and why.
    pub end: Option<SessionEnd>,
}

impl Step {
    /// A step that ran nothing.
    pub fn refused(result: RunResult) -> Step {
        Step {
            result,
            interpreter_started: false,
            interpreter_ended: false,
            end: None,
        }
    }
}

/// A session's interpreters and workspace. Evaluations are one at a time
/// (the table holds the session's turn while one runs).
pub trait LiveSession: Send {
    /// Evaluates `req.code` (already checked against the envelope) in the
    /// interpreter at `index` of the session's guests, with `req.files`
    /// placed in the workspace first.
    fn eval<'a>(
        &'a mut self,
        index: usize,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        isolation: Isolation,
        run_id: String,
    ) -> BoxFuture<'a, Step>;

    /// The session's exact state between two evaluations
    /// ([`crate::snapshot`]); the session goes on unchanged. A live
    /// session that cannot be snapshotted answers `snapshot_unavailable`,
    /// with the reason.
    fn snapshot<'a>(
        &'a mut self,
        _env: &'a Envelope,
        _isolation: Isolation,
    ) -> BoxFuture<'a, Result<crate::snapshot::archive::SessionImage, ErrorInfo>> {
        Box::pin(async {
            Err(err(
                crate::snapshot::UNAVAILABLE,
                "this provider's sessions have no snapshots",
            ))
        })
    }
}

fn err(code: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        code: code.into(),
        message: message.into(),
    }
}

struct LiveInstance {
    prepared: Prepared,
    live: Live,
    /// Evaluations it has run.
    cells: u64,
    /// The host resources it held after its prologue
    /// ([`crate::snapshot::prologue`]): a snapshot is taken only while it
    /// holds exactly these. `None` when it took no prologue (or its
    /// prologue failed): it has no snapshots.
    held: Option<Vec<(u32, crate::snapshot::prologue::Held)>>,
}

/// Starts an instance of `guest` working in `workspace`, pre-instantiated
/// or fresh, and evaluates its prologue (when it has one).
async fn start(
    rt: &Runtime,
    guest: &Guest,
    env: &Envelope,
    workspace: Arc<Workspace>,
) -> Result<LiveInstance, ErrorInfo> {
    start_with(rt, guest, env, workspace, true).await
}

/// [`start`], never from the warm pool when `warm` is false (a resumed
/// instance must start exactly as the guest's base did).
async fn start_with(
    rt: &Runtime,
    guest: &Guest,
    env: &Envelope,
    workspace: Arc<Workspace>,
    warm: bool,
) -> Result<LiveInstance, ErrorInfo> {
    let mut prepared = executor::prepare_in(
        rt,
        &[],
        env,
        BrokerSide::Local(GrantSet::empty()),
        workspace,
    )?;
    let wall = Duration::from_millis(env.wall_time_ms);
    executor::arm(rt, guest, env, &mut prepared);
    let claimed = if warm {
        executor::claim_warm(rt, guest, env, &mut prepared)
    } else {
        None
    };
    let live = match claimed {
        Some(live) => live,
        None => {
            match tokio::time::timeout(
                wall,
                executor::instantiate_for_run(rt, guest, &mut prepared.store),
            )
            .await
            {
                Ok(Ok(live)) => live,
                Ok(Err(e)) => {
                    let busy = e
                        .downcast_ref::<wasmtime::PoolConcurrencyLimitError>()
                        .is_some();
                    return Err(if busy {
                        err("busy", "every instance slot is in use; try again shortly")
                    } else {
                        err("trap", "the guest failed to start")
                    });
                }
                Err(_) => {
                    return Err(err(
                        "timeout",
                        "the guest did not start within the wall-time limit",
                    ));
                }
            }
        }
    };
    rt.refill_warm(guest);
    let mut inst = LiveInstance {
        prepared,
        live,
        cells: 0,
        held: None,
    };
    prologue(guest, env, &mut inst).await;
    Ok(inst)
}

/// Evaluates `guest`'s prologue in `inst` and records what it left held;
/// its output is discarded. A prologue that fails leaves the instance
/// without snapshots, nothing else.
async fn prologue(guest: &Guest, env: &Envelope, inst: &mut LiveInstance) {
    let Some(code) = crate::snapshot::prologue::of(guest) else {
        return;
    };
    if !guest.has_snapshots() {
        return;
    }
    let wall = Duration::from_millis(env.wall_time_ms);
    let inv = executor::invoke(&inst.live, &mut inst.prepared.store, code, wall).await;
    let _ = inst.prepared.stdout.take(env.stdout_bytes);
    let _ = inst.prepared.stderr.take(env.stderr_bytes);
    if inv.evaluated_ok() {
        inst.held = Some(crate::snapshot::prologue::held(&mut inst.prepared.store));
    }
}

/// A session whose instances live in this process's engine. Dropping it
/// drops them where it is dropped: the session table hands an ended
/// session to the reaper thread whole, so that a later run waiting for a
/// slot waits for exactly that teardown.
pub struct LocalSession {
    rt: Runtime,
    guests: Vec<Guest>,
    keep_on_failure: bool,
    /// One per guest: whether it evaluates in a fresh instance each time,
    /// discarded after it (a shell: one process per command).
    fresh: Vec<bool>,
    workspace: Arc<Workspace>,
    /// One per guest, `None` until started or after it ended.
    instances: Vec<Option<LiveInstance>>,
}

impl LocalSession {
    /// Opens a session on `rt`: a fresh workspace, and the interpreters
    /// `opts.start` names started in it.
    pub async fn open(
        rt: &Runtime,
        guests: Vec<Guest>,
        start_now: &[usize],
        keep_on_failure: bool,
        env: &Envelope,
    ) -> Result<LocalSession, ErrorInfo> {
        if guests.is_empty() {
            return Err(err("invalid_request", "a session needs an interpreter"));
        }
        let _busy = rt.warm().busy();
        let workspace = Arc::new(Workspace::new(env));
        let mut instances: Vec<Option<LiveInstance>> = guests.iter().map(|_| None).collect();
        let fresh: Vec<bool> = guests
            .iter()
            .map(|g| g.kind() == crate::guest::GuestKind::Shell)
            .collect();
        for &i in start_now {
            // A fresh-per-evaluation interpreter starts with its evaluation.
            if fresh.get(i).copied().unwrap_or(false) {
                continue;
            }
            if let (Some(guest), Some(cell)) = (guests.get(i), instances.get_mut(i)) {
                *cell = Some(start(rt, guest, env, workspace.clone()).await?);
            }
        }
        Ok(LocalSession {
            rt: rt.clone(),
            guests,
            keep_on_failure,
            fresh,
            workspace,
            instances,
        })
    }

    /// [`LiveSession::eval`] with the broker on `side` (a worker's session
    /// sends its calls to the supervisor).
    pub(crate) async fn eval_with(
        &mut self,
        index: usize,
        req: &RunRequest,
        env: &Envelope,
        side: BrokerSide,
        isolation: Isolation,
        run_id: String,
    ) -> Step {
        let Some(guest) = self.guests.get(index).cloned() else {
            return Step::refused(RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                "the session has no such interpreter",
            ));
        };
        // Counted as a run in flight, so that the background thread that
        // makes pre-instantiated instances does not compete with it.
        let _busy = self.rt.warm().busy();
        if let Err(e) = self.workspace.place_files(&req.files, env) {
            return Step::refused(RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                e.to_string(),
            ));
        }
        let Some(cell) = self.instances.get_mut(index) else {
            return Step::refused(RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                "the session has no such interpreter",
            ));
        };
        if cell.is_none() {
            match start(&self.rt, &guest, env, self.workspace.clone()).await {
                Ok(inst) => *cell = Some(inst),
                Err(e) => {
                    let mut r = RunResult::refused(run_id, isolation, &e.code, e.message);
                    r.guest = Some(guest.identity().to_owned());
                    return Step::refused(r);
                }
            }
        }
        let Some(inst) = cell.as_mut() else {
            return Step::refused(RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                "the session has no such interpreter",
            ));
        };
        let interpreter_started = inst.cells == 0;
        inst.cells += 1;
        executor::reset_for_next_run_with(&mut inst.prepared, env, side);
        let wall = Duration::from_millis(env.wall_time_ms);
        let code = req.code.as_deref().unwrap_or("");
        let inv = executor::invoke(&inst.live, &mut inst.prepared.store, code, wall).await;
        let classified: Classified = executor::classify(inv, inst.prepared.store.data());
        let reusable = classified.reusable;
        let r = executor::report(
            &mut inst.prepared,
            env,
            &req.capture,
            classified,
            isolation,
            run_id,
            &guest,
        );
        let mut step = Step {
            result: r,
            interpreter_started,
            interpreter_ended: false,
            end: None,
        };
        let fresh = self.fresh.get(index).copied().unwrap_or(false);
        if fresh || !reusable {
            // The instance stopped mid-evaluation (a trap or an interrupt):
            // its state cannot be trusted. (A fresh-per-evaluation one is
            // discarded after every evaluation; that ends nothing.)
            step.interpreter_ended = !reusable;
            if let Some(dead) = cell.take() {
                // Every descriptor it held is given back now, not when the
                // reaper gets to it: the next cell's interpreter must find
                // the session's handle and byte budgets as its live
                // instances leave them.
                self.workspace
                    .tree()
                    .release_owner(dead.prepared.store.data().fs_owner);
                crate::reaper::reap_instance(dead);
            }
            if !reusable && !self.keep_on_failure {
                // The session ends with its only interpreter.
                step.end = Some(SessionEnd::Failed);
            }
        }
        step
    }
}

impl LiveSession for LocalSession {
    fn eval<'a>(
        &'a mut self,
        index: usize,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        isolation: Isolation,
        run_id: String,
    ) -> BoxFuture<'a, Step> {
        Box::pin(self.eval_with(
            index,
            req,
            env,
            BrokerSide::Local(grants),
            isolation,
            run_id,
        ))
    }

    fn snapshot<'a>(
        &'a mut self,
        env: &'a Envelope,
        isolation: Isolation,
    ) -> BoxFuture<'a, Result<crate::snapshot::archive::SessionImage, ErrorInfo>> {
        Box::pin(async move { self.take_snapshot(env, &isolation).await })
    }
}
