//! Sessions behind an outer boundary: a session's interpreters and
//! workspace live in one worker bound to the session's caller, which runs a
//! [`crate::live_session::LocalSession`] of its own. Each evaluation is one
//! `Eval` frame; the supervisor makes the guest's broker calls and keeps
//! the CallTrace, exactly as for a run.
//!
//! The worker is dedicated to the session: nothing else runs in it, and it
//! is retired when the session ends — closed, idle, at its lifetime, after
//! an evaluation that trapped or exhausted memory or disk, or when the
//! worker dies, hangs, lies or reports another boot (`boundary_failed`).

use super::{Pool, Pooled, WorkerError, clip, origins_of, reusable_after, sanitize};
use crate::broker::RunBroker;
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::live_session::{LiveSession, SessionEnd, SessionOptions, Step};
use crate::run::{ErrorInfo, RunRequest, RunResult, Status};
use crate::snapshot::archive::SessionImage;
use crate::tier::{Isolation, WorkerUse};
use crate::worker::protocol::{FromWorker, GrantOrigin, GuestImage, ToWorker};
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the worker answered to one evaluation.
struct Evaluated {
    result: RunResult,
    interpreter_started: bool,
    interpreter_ended: bool,
    ended: bool,
    boot_id: String,
}

impl super::Worker {
    /// Opens the worker's one session. `Ok(Err(_))` is the worker's typed
    /// refusal; `Err(_)` leaves the worker unusable.
    async fn open_session(
        &mut self,
        guests: Vec<GuestImage>,
        start: Vec<usize>,
        keep_on_failure: bool,
        env: &Envelope,
        broker: &RunBroker,
        resume: Option<crate::blob::Blob>,
    ) -> Result<Result<(), ErrorInfo>, WorkerError> {
        let images = guests.clone();
        let first = ToWorker::OpenSession {
            guests,
            start,
            keep_on_failure,
            envelope: *env,
            resume,
        };
        // Starting the interpreters is bounded by the wall time, per
        // interpreter started.
        let wall = Duration::from_millis(env.wall_time_ms).saturating_mul(2);
        match self.converse(&first, wall, &images, broker).await? {
            FromWorker::SessionOpened => Ok(Ok(())),
            FromWorker::Refused { code, message } => Ok(Err(ErrorInfo {
                code: code.chars().take(64).collect(),
                message: clip(&message),
            })),
            _ => Err(WorkerError::Protocol(
                "unexpected frame opening a session".into(),
            )),
        }
    }

    /// The worker's session's archive. `Ok(Err(_))` is the worker's typed
    /// refusal (the session lives on).
    async fn snapshot(
        &mut self,
        env: &Envelope,
        broker: &RunBroker,
    ) -> Result<Result<Vec<u8>, ErrorInfo>, WorkerError> {
        match self
            .converse(
                &ToWorker::Snapshot,
                Duration::from_millis(env.wall_time_ms),
                &[],
                broker,
            )
            .await?
        {
            FromWorker::Snapshotted { archive } => Ok(Ok(archive.0)),
            FromWorker::Refused { code, message } => Ok(Err(ErrorInfo {
                code: code.chars().take(64).collect(),
                message: clip(&message),
            })),
            _ => Err(WorkerError::Protocol(
                "unexpected frame during a snapshot".into(),
            )),
        }
    }

    async fn eval(
        &mut self,
        first: ToWorker,
        env: &Envelope,
        broker: &RunBroker,
    ) -> Result<Evaluated, WorkerError> {
        match self
            .converse(&first, Duration::from_millis(env.wall_time_ms), &[], broker)
            .await?
        {
            FromWorker::Evaluated {
                result,
                interpreter_started,
                interpreter_ended,
                ended,
                boot_id,
            } => Ok(Evaluated {
                result,
                interpreter_started,
                interpreter_ended,
                ended,
                boot_id,
            }),
            _ => Err(WorkerError::Protocol(
                "unexpected frame during an evaluation".into(),
            )),
        }
    }
}

/// A session kept in a worker bound to its caller.
pub struct WorkerSession {
    pool: Arc<Pool>,
    handle: tokio::runtime::Handle,
    caller: String,
    guest_ids: Vec<String>,
    /// `None` once the worker is gone.
    worker: Option<Pooled>,
}

impl Pool {
    /// Opens a session for `caller` in a worker bound to `caller`: the
    /// caller's idle worker, a warm one, or a new one, within the caps.
    pub async fn open_session(
        pool: &Arc<Pool>,
        caller: &str,
        opts: &SessionOptions,
        env: &Envelope,
        resume: Option<Vec<u8>>,
    ) -> Result<WorkerSession, ErrorInfo> {
        if !pool.verified {
            return Err(ErrorInfo {
                code: "isolation_unverified".into(),
                message: format!(
                    "the {} smoke test failed at start, so this provider runs nothing",
                    pool.wrapper.name()
                ),
            });
        }
        let mut images = Vec::with_capacity(opts.guests.len());
        for g in &opts.guests {
            images.push(pool.image_for(g)?);
        }
        let p = Pool::take(pool, caller).await?;
        let mut p = Pool::with_images(pool, p, &images).await?;
        // Nothing calls the broker while interpreters start (they start
        // with no grants), but the frame loop needs one.
        let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
        let idle = RunBroker::new(
            pool.runtime.broker().clone(),
            GrantSet::empty(),
            env,
            deadline,
        );
        match p
            .worker
            .open_session(
                images,
                opts.start.clone(),
                opts.keep_on_failure,
                env,
                &idle,
                resume.map(crate::blob::Blob),
            )
            .await
        {
            Ok(Ok(())) => Ok(WorkerSession {
                pool: pool.clone(),
                handle: pool.handle.clone(),
                caller: caller.to_owned(),
                guest_ids: opts
                    .guests
                    .iter()
                    .map(|g| g.identity().to_owned())
                    .collect(),
                worker: Some(p),
            }),
            // The worker is retired either way: it refused, or it failed.
            Ok(Err(e)) => Err(e),
            Err(e) => Err(ErrorInfo {
                code: "worker_lost".into(),
                message: clip(&format!("the session's worker failed: {e}")),
            }),
        }
    }
}

impl WorkerSession {
    /// The result of an evaluation that lost the worker.
    fn lost(run_id: String, iso: Isolation, why: &str) -> Step {
        let mut r = RunResult::refused(run_id, iso, "worker_lost", clip(why));
        r.status = Status::WorkerLost;
        Step {
            result: r,
            interpreter_started: false,
            interpreter_ended: true,
            end: Some(SessionEnd::BoundaryFailed),
        }
    }
}

impl WorkerSession {
    /// The session's state: the worker's archive, verified whole here
    /// (the worker is not trusted) and checked to be of this session's
    /// guests. A worker that answers anything else is retired, and the
    /// session with it.
    async fn take_snapshot(&mut self, env: &Envelope) -> Result<SessionImage, ErrorInfo> {
        let Some(mut p) = self.worker.take() else {
            return Err(ErrorInfo {
                code: "unknown_session".into(),
                message: "the session's worker is gone".into(),
            });
        };
        let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
        let idle = RunBroker::new(
            self.pool.runtime.broker().clone(),
            GrantSet::empty(),
            env,
            deadline,
        );
        let env_owned = *env;
        let task = self.handle.spawn(async move {
            let out = p.worker.snapshot(&env_owned, &idle).await;
            (p, out)
        });
        let lost = || ErrorInfo {
            code: "worker_lost".into(),
            message: "the session's worker failed while taking the snapshot".into(),
        };
        let (p, out) = task.await.map_err(|_| lost())?;
        match out {
            Ok(Ok(bytes)) => {
                let caps = crate::snapshot::archive::Caps::for_envelope(env);
                let checked = crate::snapshot::archive::decode(&bytes, &caps)
                    .ok()
                    .map(|(_, image)| image)
                    .filter(|image| {
                        image
                            .guests
                            .iter()
                            .map(|g| g.identity.as_str())
                            .eq(self.guest_ids.iter().map(String::as_str))
                    });
                match checked {
                    Some(image) => {
                        self.worker = Some(p);
                        Ok(image)
                    }
                    // An archive that is not of this session: the worker
                    // lies, and is retired.
                    None => Err(lost()),
                }
            }
            Ok(Err(e)) => {
                self.worker = Some(p);
                Err(e)
            }
            Err(_) => Err(lost()),
        }
    }
}

impl LiveSession for WorkerSession {
    fn snapshot<'a>(
        &'a mut self,
        env: &'a Envelope,
        _isolation: Isolation,
    ) -> BoxFuture<'a, Result<SessionImage, ErrorInfo>> {
        Box::pin(self.take_snapshot(env))
    }

    fn eval<'a>(
        &'a mut self,
        index: usize,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        _isolation: Isolation,
        run_id: String,
    ) -> BoxFuture<'a, Step> {
        Box::pin(async move {
            let iso = self.pool.isolation();
            let Some(mut p) = self.worker.take() else {
                return WorkerSession::lost(run_id, iso, "the session's worker is gone");
            };
            let used = WorkerUse {
                worker_id: p.id.clone(),
                caller: self.caller.clone(),
                runs_before: p.runs,
                max_runs: self.pool.config.max_runs,
            };
            p.runs = p.runs.saturating_add(1);
            let origins: Vec<GrantOrigin> = origins_of(&grants);
            let deadline = Instant::now() + Duration::from_millis(env.wall_time_ms);
            let broker = RunBroker::new(self.pool.runtime.broker().clone(), grants, env, deadline);
            let first = ToWorker::Eval {
                index,
                run_id: run_id.clone(),
                request: req.clone(),
                envelope: *env,
                grants: origins,
            };
            let env_owned = *env;
            let b = broker.clone();
            // The worker's pipes belong to the pool's runtime.
            let task = self.handle.spawn(async move {
                let out = p.worker.eval(first, &env_owned, &b).await;
                (p, out)
            });
            let (p, out) = match task.await {
                Ok(done) => done,
                Err(_) => return WorkerSession::lost(run_id, iso, "the evaluation's task failed"),
            };
            let mut step = match out {
                Ok(mut ev) => {
                    let honest = ev.result.run_id == run_id && sanitize(&mut ev.result, env) == 0;
                    if !honest || ev.boot_id != p.worker.boot_id {
                        drop(p);
                        let mut s = WorkerSession::lost(
                            run_id.clone(),
                            iso.clone(),
                            "the session's worker reported a result that is not true, or another boot",
                        );
                        s.result.isolation.evidence.worker = Some(used);
                        return s;
                    }
                    // A refusal is the worker turning down bad input (a
                    // file path, say) before anything ran: the session
                    // lives on, as in-process.
                    let clean =
                        reusable_after(ev.result.status) || ev.result.status == Status::Refused;
                    let end = if ev.ended || !clean {
                        // A trap, or memory or disk exhaustion, retires the
                        // worker, and the session with it.
                        Some(SessionEnd::Failed)
                    } else if p.born.elapsed() >= self.pool.config.max_age {
                        Some(SessionEnd::Expired)
                    } else {
                        None
                    };
                    if end.is_none() {
                        self.worker = Some(p);
                    }
                    Step {
                        interpreter_ended: ev.interpreter_ended || end.is_some(),
                        result: ev.result,
                        interpreter_started: ev.interpreter_started,
                        end,
                    }
                }
                Err(e) => {
                    drop(p);
                    WorkerSession::lost(run_id.clone(), iso.clone(), &e.to_string())
                }
            };
            let r = &mut step.result;
            r.run_id = run_id;
            r.isolation = iso;
            r.isolation.evidence.worker = Some(used);
            r.guest = self.guest_ids.get(index).cloned();
            r.calls = broker.trace();
            r.session_id = None;
            r.session_closed = false;
            step
        })
    }
}
