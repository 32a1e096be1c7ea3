//! Sessions: interpreters kept alive for many evaluations, with the
//! session table's caps, timeouts and owners.

use super::Sandbox;
use crate::grant::GrantSet;
use crate::guest::GuestKind;
use crate::run::{ErrorInfo, RunRequest, RunResult, new_run_id};
use crate::session::{Evaluated, SessionEnd, SessionInfo, SessionLimits, SessionOptions, Turn};
use std::time::Duration;

impl Sandbox {
    /// Opens a session for `caller` on the interpreter for `req.language`
    /// (or the registered interpreter component `req.component`). Only
    /// `language`/`component`, `require_identity`, `minimum_isolation` and
    /// `limits` of `req` are used.
    pub async fn open_session(
        &self,
        caller: &str,
        req: &RunRequest,
    ) -> Result<SessionInfo, ErrorInfo> {
        let guest = self.resolve_guest(req, self.deadline_of(req)).await?;
        if let Some(want) = &req.require_identity
            && want != guest.identity()
        {
            return Err(ErrorInfo {
                code: "identity_mismatch".into(),
                message: format!(
                    "`require_identity` names another guest; this guest is {}",
                    guest.identity()
                ),
            });
        }
        self.open_session_with(caller, &SessionOptions::single(guest), req)
            .await
    }

    /// Opens a session for `caller` as `opts` says: its interpreters over
    /// one workspace. Of `req`, only `limits` and `minimum_isolation` are
    /// used.
    pub async fn open_session_with(
        &self,
        caller: &str,
        opts: &SessionOptions,
        req: &RunRequest,
    ) -> Result<SessionInfo, ErrorInfo> {
        if opts.guests.iter().any(|g| g.kind() == GuestKind::Agent) {
            return Err(ErrorInfo {
                code: "invalid_request".into(),
                message:
                    "sessions need an interpreter or shell guest (a `language`, or an interpreter component)"
                        .into(),
            });
        }
        let env = self
            .envelope
            .lowered_by(&req.limits)
            .map_err(|e| ErrorInfo {
                code: "invalid_limits".into(),
                message: e.to_string(),
            })?;
        self.provider.ready(self.deadline_of(req)).await?;
        self.check_provider(req)?;
        // A session lives no longer than the worker that holds it.
        let mut opts = opts.clone();
        if let Some(cap) = self.provider.session_lifetime_cap() {
            opts.lifetime = Some(opts.lifetime.map_or(cap, |l| l.min(cap)));
        }
        self.sessions
            .open(self.provider.as_ref(), caller, &opts, &env)
            .await
    }

    /// Evaluates `req.code` in `caller`'s session `session_id`. Each
    /// evaluation is a run with its own envelope (`req.limits`), grants,
    /// outputs and CallTrace. A busy session refuses (`session_busy`).
    pub async fn run_in_session(
        &self,
        caller: &str,
        session_id: &str,
        req: &RunRequest,
    ) -> RunResult {
        self.evaluate(caller, session_id, req, Turn::Refuse)
            .await
            .result
    }

    /// [`Sandbox::run_in_session`] for a session with several interpreters
    /// (`req.language` picks one), waiting its turn or not as `turn` says,
    /// with what became of the interpreter.
    pub async fn evaluate(
        &self,
        caller: &str,
        session_id: &str,
        req: &RunRequest,
        turn: Turn,
    ) -> Evaluated {
        let run_id = new_run_id();
        let iso = self.isolation();
        let plain = |result| Evaluated {
            result,
            interpreter_started: false,
            interpreter_ended: false,
        };
        let env = match self.envelope.lowered_by(&req.limits) {
            Ok(env) => env,
            Err(e) => {
                return plain(RunResult::refused(
                    run_id,
                    iso,
                    "invalid_limits",
                    e.to_string(),
                ));
            }
        };
        let budget = Duration::from_millis(env.wall_time_ms);
        let grants = match GrantSet::resolve(&self.grants, &req.grants, caller, budget) {
            Ok(g) => g,
            Err(e) => return plain(RunResult::refused(run_id, iso, e.code(), e.to_string())),
        };
        // The floor is checked immediately before the evaluation runs.
        if let Err(e) = self.check_provider(req) {
            return plain(RunResult::refused(run_id, iso, &e.code, e.message));
        }
        self.sessions
            .eval(caller, session_id, req, &env, grants, iso, run_id, turn)
            .await
    }

    /// Why `caller`'s session ended, when it ended by itself (idle,
    /// lifetime, a failure, a newer session of its owner, shutdown) within
    /// [`crate::session::TOMBSTONE_TTL`]. `None` for an open session, an
    /// unknown one and another caller's alike.
    pub fn session_ended(&self, caller: &str, session_id: &str) -> Option<SessionEnd> {
        self.sessions.ended(caller, session_id)
    }

    /// Every open session, by caller and id (a fleet node renews their
    /// places under their callers' caps in its shared state).
    pub fn open_sessions(&self) -> Vec<(String, String)> {
        self.sessions.open_ids()
    }

    /// Open sessions of `caller` opened for the owner tag `owner`.
    pub fn session_count_for_owner(&self, caller: &str, owner: &str) -> usize {
        self.sessions.count_for_owner(caller, owner)
    }

    /// Whether `caller`'s session is open.
    pub fn session_open(&self, caller: &str, session_id: &str) -> bool {
        self.sessions.is_open(caller, session_id)
    }

    /// Whether this sandbox's provider keeps sessions: the in-process
    /// `wasm` provider in this process, a wrapped one in a worker bound to
    /// the session's caller.
    pub fn supports_sessions(&self) -> bool {
        self.provider.offers_sessions()
    }

    /// Closes `caller`'s session. Returns whether it was open.
    pub fn close_session(&self, caller: &str, session_id: &str) -> bool {
        self.sessions.close(caller, session_id)
    }

    /// Ends `caller`'s session as handed over to another node of a fleet
    /// (its tombstone says `shutdown`). Returns whether it was open.
    pub fn hand_over_session(&self, caller: &str, session_id: &str) -> bool {
        self.sessions
            .end(caller, session_id, crate::session::SessionEnd::Shutdown)
    }

    /// Closes idle and expired sessions; returns how many are left.
    pub fn sweep_sessions(&self) -> usize {
        self.sessions.sweep();
        self.sessions.len()
    }

    /// Open sessions of `caller`.
    pub fn session_count(&self, caller: &str) -> usize {
        self.sessions.count_for(caller)
    }

    /// The operator's limits on sessions.
    pub fn session_limits(&self) -> SessionLimits {
        self.sessions.limits()
    }

    /// Open sessions in all.
    pub fn session_total(&self) -> usize {
        self.sessions.len()
    }

    /// Closes every session (a daemon shutting down).
    pub fn close_all_sessions(&self) {
        self.sessions.close_all();
    }

    /// Refuses when the provider runs nothing, keeps no sessions, or is
    /// below the floor.
    pub(super) fn check_provider(&self, req: &RunRequest) -> Result<(), ErrorInfo> {
        let iso = self.provider.isolation();
        if iso.provider == "disabled" {
            return Err(ErrorInfo {
                code: "provider_disabled".into(),
                message: crate::provider::DISABLED_MESSAGE.into(),
            });
        }
        if !self.provider.offers_sessions() {
            return Err(ErrorInfo {
                code: "sessions_unavailable".into(),
                message: format!(
                    "provider {} keeps no sessions (its smoke test failed)",
                    iso.provider
                ),
            });
        }
        if let Some(floor) = req.minimum_isolation.max(self.min_isolation)
            && iso.tier < floor
        {
            return Err(ErrorInfo {
                code: "insufficient_isolation".into(),
                message: format!(
                    "the run requires isolation `{floor}` but provider {} gives `{}`",
                    iso.provider, iso.tier
                ),
            });
        }
        Ok(())
    }
}
