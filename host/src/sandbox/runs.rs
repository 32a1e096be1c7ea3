//! Runs: a request's guest, envelope, grants and floor, then dispatch.

use super::{LOCAL_CALLER, Sandbox};
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::run::{RunRequest, RunResult, new_run_id};
use std::time::{Duration, Instant};

impl Sandbox {
    /// When a request's wait for a guest or provider still starting ends:
    /// its wall time from now (the operator's, lowered by the request's),
    /// or never for a sandbox that waits for compiles ([`Sandbox::lazy`]).
    pub(super) fn deadline_of(&self, req: &RunRequest) -> Instant {
        if self.wait_for_compile {
            return Instant::now() + Duration::from_secs(24 * 3600);
        }
        let wall = self
            .envelope
            .lowered_by(&req.limits)
            .map(|e| e.wall_time_ms)
            .unwrap_or(self.envelope.wall_time_ms);
        Instant::now() + Duration::from_millis(wall)
    }

    /// Runs a request that names a registered component, as the local
    /// caller.
    pub async fn run(&self, req: &RunRequest) -> RunResult {
        self.run_as(LOCAL_CALLER, req).await
    }

    /// Runs a request that names a registered component, on behalf of
    /// `caller`.
    pub async fn run_as(&self, caller: &str, req: &RunRequest) -> RunResult {
        let run_id = new_run_id();
        let name = match (req.language, req.component.as_deref()) {
            (Some(_), Some(_)) => {
                return RunResult::refused(
                    run_id,
                    self.isolation(),
                    "invalid_request",
                    "give either `language` (with `code`) or `component`, not both",
                );
            }
            (Some(language), None) => {
                if req.code.is_none() {
                    return RunResult::refused(
                        run_id,
                        self.isolation(),
                        "invalid_request",
                        "a `language` request needs `code`",
                    );
                }
                let deadline = self.deadline_of(req);
                return match self
                    .interpreter_by(language, req.guest.as_deref(), deadline)
                    .await
                {
                    Ok(g) => self.run_guest_with_id(caller, &g, req, run_id).await,
                    Err(e) => RunResult::refused(run_id, self.isolation(), &e.code, e.message),
                };
            }
            (None, Some(name)) => name,
            (None, None) => {
                return RunResult::refused(
                    run_id,
                    self.isolation(),
                    "invalid_request",
                    "the request names neither a language nor a component",
                );
            }
        };
        match self.component(name) {
            Some(g) => self.run_guest_with_id(caller, &g, req, run_id).await,
            None => RunResult::refused(
                run_id,
                self.isolation(),
                "unknown_component",
                "no component of that name or identity is registered",
            ),
        }
    }

    /// Runs `guest` (the request's `component` field is ignored).
    pub async fn run_guest(&self, guest: &Guest, req: &RunRequest) -> RunResult {
        self.run_guest_with_id(LOCAL_CALLER, guest, req, new_run_id())
            .await
    }

    /// Runs `guest` on behalf of `caller` (grant profiles may be limited to
    /// some callers; a minted JWT names the caller as its subject).
    pub async fn run_guest_as(&self, caller: &str, guest: &Guest, req: &RunRequest) -> RunResult {
        self.run_guest_with_id(caller, guest, req, new_run_id())
            .await
    }

    async fn run_guest_with_id(
        &self,
        caller: &str,
        guest: &Guest,
        req: &RunRequest,
        run_id: String,
    ) -> RunResult {
        let refuse = |code: &str, message: String| {
            let mut r = RunResult::refused(run_id.clone(), self.isolation(), code, message);
            r.guest = Some(guest.identity().to_owned());
            r
        };
        let env = match self.envelope.lowered_by(&req.limits) {
            Ok(env) => env,
            Err(e) => return refuse("invalid_limits", e.to_string()),
        };
        if let Some(want) = &req.require_identity
            && want != guest.identity()
        {
            return refuse(
                "identity_mismatch",
                format!(
                    "`require_identity` names another guest; this guest is {}",
                    guest.identity()
                ),
            );
        }
        let budget = Duration::from_millis(env.wall_time_ms);
        let grants = match GrantSet::resolve(&self.grants, &req.grants, caller, budget) {
            Ok(g) => g,
            Err(e) => return refuse(e.code(), e.to_string()),
        };
        // A provider still starting is waited for (within the run's wall
        // time) before its tier is judged.
        let deadline = std::time::Instant::now() + budget;
        if let Err(e) = self.provider.ready(deadline).await {
            return refuse(&e.code, e.message);
        }
        // The floor is checked here, against the provider that will run this
        // request, and nothing awaits between this check and the dispatch.
        let iso = self.provider.isolation();
        let floor = req.minimum_isolation.max(self.min_isolation);
        if let Some(floor) = floor
            && iso.tier < floor
        {
            return refuse(
                "insufficient_isolation",
                format!(
                    "the run requires isolation `{floor}` but provider {} gives `{}`",
                    iso.provider, iso.tier
                ),
            );
        }
        self.provider
            .run(caller, guest, req, &env, grants, run_id)
            .await
    }
}
