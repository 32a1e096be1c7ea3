//! Admission: who is calling, whether the daemon takes work now, and what
//! the caller may ask for. Every wire admits a request through these, in
//! the same order: authenticate (401), scope (403), draining (503), rate
//! (429; in a fleet, with the run's concurrency place and allowance in
//! one round trip), the bounded body ([`super::body`]), grant profiles (403), limits
//! within the caller's envelope (400), a healthy audit log (503), then the
//! concurrency caps and the daily allowance (429/503).

use super::App;
use super::body::{BodyPermit, read_body};
use crate::callers::{Caller, Scope, bearer};
use crate::error::ApiError;
use crate::fleet::shared::{Down, RateAdmit};
use crate::quota::{RunPermit, Shed};
use axum::body::Body;
use bytes::Bytes;
use http::{HeaderMap, header};
use plimsoll::RunRequest;
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A run's place in the fleet, taken with its rate before its body was
/// read ([`App::spend_rate_for_run`]); empty without a fleet, or while its
/// shared state is down. Given back when dropped unused.
#[derive(Default)]
pub struct PreLease(Option<crate::quota::Lease>);

impl App {
    pub fn authorize(
        &self,
        headers: &HeaderMap,
        scope: Option<Scope>,
    ) -> Result<Arc<Caller>, ApiError> {
        let token = bearer(headers.get(header::AUTHORIZATION));
        let Some(caller) = self.callers.authenticate(token) else {
            let reason = if headers.contains_key(header::AUTHORIZATION) {
                "invalid"
            } else {
                "missing"
            };
            self.metrics.auth_failure(reason);
            return Err(ApiError::new(
                "unauthorized",
                "a valid `Authorization: Bearer <token>` header is required",
            ));
        };
        if let Some(scope) = scope
            && !caller.has(scope)
        {
            self.metrics.auth_failure("scope");
            return Err(ApiError::new(
                "forbidden",
                format!("this caller lacks the `{}` scope", scope.as_str()),
            ));
        }
        Ok(caller)
    }

    pub fn shed(&self, s: Shed) -> ApiError {
        self.metrics.shed(s.code());
        let msg = match s {
            Shed::RateLimited { .. } => "this caller's rate limit is reached",
            Shed::CallerConcurrency => "this caller already has its maximum of runs in flight",
            Shed::HostConcurrency => {
                "the host has its maximum of runs in flight; try again shortly"
            }
            Shed::CpuAllowance { .. } => "this caller's run seconds for today are spent",
            Shed::SharedStateDown => {
                "the fleet's shared state does not answer, and this daemon fails closed; try again shortly"
            }
        };
        let e = ApiError::new(s.code(), msg);
        match s {
            Shed::RateLimited { retry_after_secs } | Shed::CpuAllowance { retry_after_secs } => {
                e.retry_after(retry_after_secs)
            }
            Shed::CallerConcurrency | Shed::HostConcurrency | Shed::SharedStateDown => {
                e.retry_after(1)
            }
        }
    }

    pub fn check_open(&self) -> Result<(), ApiError> {
        self.check_open_for(false)
    }

    /// [`App::check_open`] for a call on an open session (`session_call`):
    /// while the daemon drains its sessions
    /// (`PLIMSOLL_SESSION_DRAIN_SECS`), those are still served.
    pub fn check_open_for(&self, session_call: bool) -> Result<(), ApiError> {
        if session_call && self.sessions_draining.load(Ordering::Acquire) {
            return Ok(());
        }
        if self.draining.load(Ordering::Acquire) {
            self.metrics.shed("draining");
            return Err(ApiError::new(
                "draining",
                "the daemon is shutting down; send the request to another instance",
            ));
        }
        Ok(())
    }

    pub fn check_audit(&self) -> Result<(), ApiError> {
        if !self.audit.healthy() {
            self.metrics.shed("audit_unavailable");
            return Err(ApiError::new(
                "audit_unavailable",
                "the audit log cannot be written, so nothing runs",
            ));
        }
        Ok(())
    }

    /// Checks the request's grants and limits against the caller, and pins
    /// its limits to the caller's envelope lowered by the request's.
    pub fn bind_to_caller(&self, caller: &Caller, req: &mut RunRequest) -> Result<(), ApiError> {
        check_profiles(caller, &req.grants)?;
        let env = caller
            .envelope
            .lowered_by(&req.limits)
            .map_err(|e| ApiError::new("invalid_limits", e.to_string()))?;
        req.limits = env.as_limits();
        Ok(())
    }

    /// Checks `req` against `caller` ([`App::bind_to_caller`]), the audit
    /// log's health and the caller's and host's concurrency caps and daily
    /// allowance; the permit holds the run's place until it is dropped
    /// ([`App::run_done`]).
    pub async fn admit_run(
        &self,
        caller: &Caller,
        req: &mut RunRequest,
    ) -> Result<RunPermit, ApiError> {
        self.admit_run_with(caller, req, PreLease::default()).await
    }

    /// [`App::admit_run`] with the place [`App::spend_rate_for_run`] may
    /// already have taken in the fleet (then only the host's cap is left).
    pub async fn admit_run_with(
        &self,
        caller: &Caller,
        req: &mut RunRequest,
        pre: PreLease,
    ) -> Result<RunPermit, ApiError> {
        self.bind_to_caller(caller, req)?;
        self.check_audit()?;
        let permit = match pre.0 {
            Some(lease) => self.quotas.admit_held(lease).map_err(|s| self.shed(s))?,
            None => match self.lease_run(caller).await? {
                Some(p) => p,
                None => self.quotas.admit(caller).map_err(|s| self.shed(s))?,
            },
        };
        self.metrics.set_inflight(self.quotas.inflight());
        Ok(permit)
    }

    /// In a fleet, the run's place under its caller's cap and allowance,
    /// leased in the shared state (`None`: no shared state, or it does not
    /// answer and the daemon serves from its own counters).
    async fn lease_run(&self, caller: &Caller) -> Result<Option<RunPermit>, ApiError> {
        let Some(f) = &self.fleet else {
            return Ok(None);
        };
        if !f.up() {
            return self.when_down().map(|()| None);
        }
        let lease = plimsoll::run::new_run_id();
        // Renewed every second while the run goes on: a node that dies
        // mid-run frees the slot within the lease's time.
        let lease_ms = crate::fleet::shared::LEASE_TTL_MS;
        let allowance = caller.cpu_seconds_per_day.map(|s| s.saturating_mul(1000));
        match f
            .admit(
                &caller.id,
                caller.max_concurrent,
                &lease,
                lease_ms,
                allowance,
            )
            .await
        {
            Ok(0) => self
                .quotas
                .admit_leased(f.clone(), caller, lease)
                .map(Some)
                .map_err(|s| self.shed(s)),
            Ok(-1) => Err(self.shed(Shed::CallerConcurrency)),
            Ok(n) => Err(self.shed(Shed::CpuAllowance {
                retry_after_secs: n.max(1) as u64,
            })),
            Err(Down::Unreachable) => self.when_down().map(|()| None),
            Err(Down::Slow) => {
                // The lease may have been taken: give it back.
                let (f, caller) = (f.clone(), caller.id.clone());
                tokio::spawn(async move {
                    let _ = f.settle(&caller, &lease, 0).await;
                });
                Err(self.shed(Shed::SharedStateDown))
            }
        }
    }

    /// The shared state did not answer: `Ok` to serve from this node's
    /// own (divided) counters, or the typed refusal of a daemon that fails
    /// closed.
    pub fn when_down(&self) -> Result<(), ApiError> {
        match &self.fleet {
            Some(f) if f.failure == crate::fleet::FailureMode::Closed => {
                Err(self.shed(Shed::SharedStateDown))
            }
            _ => Ok(()),
        }
    }

    /// [`App::spend_rate`] for a call that goes on to start a run: in a
    /// fleet whose shared state answers, the run's place under its
    /// caller's concurrency cap and allowance is taken in the same round
    /// trip (so those are checked before the body is read), held — and
    /// renewed — until the run ends or the call fails, then given back.
    pub async fn spend_rate_for_run(&self, caller: &Caller) -> Result<PreLease, ApiError> {
        let Some(f) = self.fleet.as_ref().filter(|f| f.up()) else {
            self.spend_rate(caller).await?;
            return Ok(PreLease::default());
        };
        let lease = plimsoll::run::new_run_id();
        let allowance = caller.cpu_seconds_per_day.map(|s| s.saturating_mul(1000));
        let decided = f
            .rate_and_admit(
                &caller.id,
                caller.rate_per_min,
                caller.max_concurrent,
                &lease,
                crate::fleet::shared::LEASE_TTL_MS,
                allowance,
            )
            .await;
        match decided {
            Ok(RateAdmit::Leased) => Ok(PreLease(Some(self.quotas.hold_lease(
                f.clone(),
                caller,
                lease,
            )))),
            Ok(RateAdmit::RateLimited { retry_after_secs }) => {
                Err(self.shed(Shed::RateLimited { retry_after_secs }))
            }
            Ok(RateAdmit::AtCap) => Err(self.shed(Shed::CallerConcurrency)),
            Ok(RateAdmit::AllowanceSpent { retry_after_secs }) => {
                Err(self.shed(Shed::CpuAllowance { retry_after_secs }))
            }
            Err(Down::Unreachable) => {
                self.when_down()?;
                self.quotas.check_rate(caller).map_err(|s| self.shed(s))?;
                Ok(PreLease::default())
            }
            Err(Down::Slow) => {
                let (f, caller) = (f.clone(), caller.id.clone());
                tokio::spawn(async move {
                    let _ = f.settle(&caller, &lease, 0).await;
                });
                Err(self.shed(Shed::SharedStateDown))
            }
        }
    }

    /// Spends one request of `caller`'s rate: the fleet's when there is
    /// one, else (or while it does not answer) this node's.
    pub async fn spend_rate(&self, caller: &Caller) -> Result<(), ApiError> {
        if let Some(f) = &self.fleet {
            // While it is down (or slow to answer), this node's share of
            // the rate: at worst one request more than the fleet's.
            let checked = match f.up() {
                true => f.check_rate(&caller.id, caller.rate_per_min).await,
                false => Err(Down::Unreachable),
            };
            match checked {
                Ok(0) => return Ok(()),
                Ok(n) => {
                    return Err(self.shed(Shed::RateLimited {
                        retry_after_secs: n,
                    }));
                }
                Err(_) => self.when_down()?,
            }
        }
        self.quotas.check_rate(caller).map_err(|s| self.shed(s))
    }

    /// Gives back a run's place ([`App::admit_run`]).
    pub fn run_done(&self, permit: RunPermit) {
        drop(permit);
        self.metrics.set_inflight(self.quotas.inflight());
    }

    /// The first steps of every request that starts work: authenticate
    /// with the `code:run` scope, refuse while draining, spend one request
    /// of the caller's rate, read the bounded body.
    pub async fn begin(
        &self,
        headers: &HeaderMap,
        body: Body,
    ) -> Result<(Arc<Caller>, Bytes, BodyPermit), ApiError> {
        self.begin_for(headers, body, false).await
    }

    /// [`App::begin`] for a call on an open session (`session_call`),
    /// which a draining daemon still serves.
    pub async fn begin_for(
        &self,
        headers: &HeaderMap,
        body: Body,
        session_call: bool,
    ) -> Result<(Arc<Caller>, Bytes, BodyPermit), ApiError> {
        let caller = self.authorize(headers, Some(Scope::CodeRun))?;
        self.check_open_for(session_call)?;
        self.spend_rate(&caller).await?;
        let (bytes, permit) = read_body(self, &caller, headers, body).await?;
        Ok((caller, bytes, permit))
    }

    /// [`App::begin_for`] for a call that starts a run: the rate spent with
    /// [`App::spend_rate_for_run`], whose place goes to
    /// [`App::admit_run_with`].
    pub async fn begin_run(
        &self,
        headers: &HeaderMap,
        body: Body,
        session_call: bool,
    ) -> Result<(Arc<Caller>, Bytes, BodyPermit, PreLease), ApiError> {
        let caller = self.authorize(headers, Some(Scope::CodeRun))?;
        self.check_open_for(session_call)?;
        let pre = self.spend_rate_for_run(&caller).await?;
        let (bytes, permit) = read_body(self, &caller, headers, body).await?;
        Ok((caller, bytes, permit, pre))
    }
}

pub fn check_profiles(caller: &Caller, grants: &[String]) -> Result<(), ApiError> {
    for (i, g) in grants.iter().enumerate() {
        if !caller.may_use_profile(g) {
            // The position, never the name: no message echoes the body.
            return Err(ApiError::new(
                "grant_not_allowed",
                format!("grants[{i}] names a grant profile this caller may not use"),
            ));
        }
    }
    Ok(())
}
