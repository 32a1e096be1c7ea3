//! Sessions: one interpreter instance kept alive for many evaluations, so
//! that a notebook's globals persist between cells.
//!
//! A session belongs to the caller that opened it: its id is 128 random
//! bits, and a lookup by anyone else answers exactly as for an id that does
//! not exist. Each evaluation is a run of its own, with its own envelope,
//! grants, outputs, CallTrace and deadline; only the instance's memory and
//! the workspace persist. A session ends when its owner closes it, when it
//! has been idle for `idle_timeout`, when it reaches its `lifetime`, or when
//! an evaluation leaves the instance unusable (a trap, a timeout).

use crate::envelope::Envelope;
use crate::executor::{self, Classified, Live, Prepared};
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::run::{ErrorInfo, RunRequest, RunResult};
use crate::runtime::Runtime;
use crate::tier::Isolation;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Limits on sessions, set by the operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// Open sessions one caller may hold (`SANDBOX_MAX_SESSIONS_PER_CALLER`).
    pub per_caller: usize,
    /// Open sessions in all.
    pub total: usize,
    /// A session unused this long is closed.
    pub idle_timeout: Duration,
    /// A session this old is closed, however busy.
    pub lifetime: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            per_caller: 4,
            total: 64,
            idle_timeout: Duration::from_secs(600),
            lifetime: Duration::from_secs(3600),
        }
    }
}

/// What a caller learns about a session it opened.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionInfo {
    /// The session's id (unguessable; useless to anyone but its owner).
    pub session_id: String,
    /// The identity of the guest it runs.
    pub guest: String,
    /// Seconds of idleness after which it is closed.
    pub idle_timeout_sec: u64,
    /// Seconds after opening at which it is closed.
    pub lifetime_sec: u64,
}

struct LiveInstance {
    prepared: Prepared,
    live: Live,
}

struct Slot {
    owner: String,
    guest: Guest,
    created: Instant,
    last_used: Mutex<Instant>,
    /// `None` once the instance has been discarded.
    instance: tokio::sync::Mutex<Option<LiveInstance>>,
}

/// The open sessions of a sandbox.
pub(crate) struct SessionTable {
    limits: SessionLimits,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

fn unknown(run_id: String, iso: Isolation) -> RunResult {
    RunResult::refused(
        run_id,
        iso,
        "unknown_session",
        "no session with that id is open for this caller",
    )
}

impl SessionTable {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        SessionTable {
            limits,
            slots: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Slot>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Closes sessions that are idle too long or too old. Their instances
    /// are dropped outside the table's lock.
    pub(crate) fn sweep(&self) {
        let now = Instant::now();
        let expired: Vec<Arc<Slot>> = {
            let mut map = self.lock();
            let ids: Vec<String> = map
                .iter()
                .filter(|(_, s)| {
                    let idle = now.saturating_duration_since(
                        *s.last_used.lock().unwrap_or_else(|p| p.into_inner()),
                    );
                    idle >= self.limits.idle_timeout
                        || now.saturating_duration_since(s.created) >= self.limits.lifetime
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        // Torn down off this caller's path (sweeps run before every
        // evaluation and open), like a finished run's instance.
        for slot in expired {
            crate::reaper::reap_instance(slot);
        }
    }

    /// The limits this table enforces.
    pub(crate) fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// Closes every session; instances are dropped outside the lock.
    pub(crate) fn close_all(&self) {
        let all: Vec<Arc<Slot>> = self.lock().drain().map(|(_, s)| s).collect();
        drop(all);
    }

    /// Open sessions of `caller`.
    pub(crate) fn count_for(&self, caller: &str) -> usize {
        self.lock().values().filter(|s| s.owner == caller).count()
    }

    /// Open sessions in all.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Opens a session of `guest` for `caller`.
    pub(crate) async fn open(
        &self,
        rt: &Runtime,
        caller: &str,
        guest: &Guest,
        env: &Envelope,
    ) -> Result<SessionInfo, ErrorInfo> {
        self.sweep();
        if self.count_for(caller) >= self.limits.per_caller {
            return Err(ErrorInfo {
                code: "session_limit".into(),
                message: format!(
                    "this caller already has {} open sessions",
                    self.limits.per_caller
                ),
            });
        }
        if self.len() >= self.limits.total {
            return Err(ErrorInfo {
                code: "busy".into(),
                message: "the host has no room for another session".into(),
            });
        }
        let _busy = rt.warm().busy();
        let mut prepared = executor::prepare(rt, &RunRequest::default(), env, GrantSet::empty())?;
        // Measured after every evaluation: walk it only when it changed.
        prepared.workspace.track_changes();
        let wall = Duration::from_millis(env.wall_time_ms);
        let warm = executor::claim_warm(rt, guest, env, &mut prepared);
        let live = if let Some(live) = warm {
            live
        } else {
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
                    return Err(ErrorInfo {
                        code: if busy { "busy" } else { "trap" }.into(),
                        message: if busy {
                            "every instance slot is in use; try again shortly".into()
                        } else {
                            "the guest failed to start".into()
                        },
                    });
                }
                Err(_) => {
                    return Err(ErrorInfo {
                        code: "timeout".into(),
                        message: "the guest did not start within the wall-time limit".into(),
                    });
                }
            }
        };
        rt.refill_warm(guest);
        let id = crate::run::new_run_id();
        let now = Instant::now();
        let slot = Arc::new(Slot {
            owner: caller.to_owned(),
            guest: guest.clone(),
            created: now,
            last_used: Mutex::new(now),
            instance: tokio::sync::Mutex::new(Some(LiveInstance { prepared, live })),
        });
        self.lock().insert(id.clone(), slot);
        Ok(SessionInfo {
            session_id: id,
            guest: guest.identity().to_owned(),
            idle_timeout_sec: self.limits.idle_timeout.as_secs(),
            lifetime_sec: self.limits.lifetime.as_secs(),
        })
    }

    /// Closes `caller`'s session `id`. Returns whether there was one.
    pub(crate) fn close(&self, caller: &str, id: &str) -> bool {
        let removed = {
            let mut map = self.lock();
            match map.get(id) {
                Some(s) if s.owner == caller => map.remove(id),
                _ => None,
            }
        };
        match removed {
            Some(slot) => {
                crate::reaper::reap_instance(slot);
                true
            }
            None => false,
        }
    }

    /// Evaluates `req.code` in `caller`'s session `id`, under `env` and
    /// `grants`. `check_floor` is called immediately before the guest runs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn eval(
        &self,
        caller: &str,
        id: &str,
        req: &RunRequest,
        env: &Envelope,
        grants: GrantSet,
        isolation: Isolation,
        run_id: String,
    ) -> RunResult {
        self.sweep();
        let started = Instant::now();
        let slot = match self.lock().get(id) {
            Some(s) if s.owner == caller => s.clone(),
            _ => return unknown(run_id, isolation),
        };
        let Ok(mut guard) = slot.instance.try_lock() else {
            return RunResult::refused(
                run_id,
                isolation,
                "session_busy",
                "the session is already evaluating; wait for it to finish",
            );
        };
        let Some(inst) = guard.as_mut() else {
            return unknown(run_id, isolation);
        };
        // A session evaluation cannot switch guests: a request that names
        // one must name the session's.
        if let Some(want) = &req.require_identity
            && want != slot.guest.identity()
        {
            return RunResult::refused(
                run_id,
                isolation,
                "identity_mismatch",
                format!(
                    "`require_identity` names another guest; the session runs {}",
                    slot.guest.identity()
                ),
            );
        }
        if req.component.is_some() {
            return RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                "a session evaluation runs the session's guest; leave out `component`",
            );
        }
        if let Some(language) = req.language
            && language.identity_family() != slot.guest.family()
        {
            let mut r = RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                format!(
                    "`language` does not apply: this session runs {}; leave it out or name the session's language",
                    slot.guest.family()
                ),
            );
            // The audit line names the session's guest, not the claim.
            r.guest = Some(slot.guest.identity().to_owned());
            return r;
        }
        if !req.stdin.is_empty() {
            return RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                "a session evaluation takes no stdin",
            );
        }
        if req
            .code
            .as_ref()
            .is_some_and(|c| c.len() as u64 > env.code_bytes)
        {
            return RunResult::refused(
                run_id,
                isolation,
                "invalid_request",
                format!("the code is longer than {} bytes", env.code_bytes),
            );
        }
        if let Err(e) = inst.prepared.workspace.place_files(&req.files, env) {
            return RunResult::refused(run_id, isolation, "invalid_request", e.to_string());
        }
        executor::reset_for_next_run(&mut inst.prepared, env, grants);
        let wall = Duration::from_millis(env.wall_time_ms);
        let code = req.code.as_deref().unwrap_or("");
        let inv = executor::invoke(&inst.live, &mut inst.prepared.store, code, wall).await;
        let classified: Classified = executor::classify(inv, inst.prepared.store.data());
        let reusable = classified.reusable;
        let mut r = executor::report(
            &mut inst.prepared,
            env,
            classified,
            isolation,
            run_id,
            &slot.guest,
        );
        r.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        r.session_id = Some(id.to_owned());
        *slot.last_used.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        if !reusable {
            // The instance stopped mid-evaluation (a trap or an interrupt):
            // its state cannot be trusted, so the session ends here.
            *guard = None;
            drop(guard);
            self.lock().remove(id);
            r.session_closed = true;
        }
        r
    }
}
