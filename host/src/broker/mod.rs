//! The host side of the `broker` import.
//!
//! Every guest call is counted against the run's budget, checked against the
//! named grant (method, canonical path, route template, headers, body size),
//! sent upstream by the host with the credential added, and recorded in the
//! run's CallTrace — delivered or not. A refusal is a typed `call-error`;
//! the run goes on.

//!
//! One concept per child: `check` (a call checked against its grant under
//! the run's lock, nothing waiting), `send` (a checked call sent upstream,
//! the answer's headers and body checked, and the `Retry-After` breakers).
//! This module holds the process-wide [`Broker`], a run's [`RunBroker`]
//! with its budget and trace, and the seam to a worker's supervisor
//! ([`RemoteLink`]).

mod check;
mod send;

use crate::bindings::broker::{CallError, Request, Response};
use crate::envelope::Envelope;
use crate::grant::GrantSet;
use crate::grant::profile::same_origin;
use crate::grant::route::Method;
use crate::trace::{CallOutcome, CallRecord, CallTrace};
use crate::upstream::Upstream;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The grant name a call by URL is given when no grant covers its origin:
/// no grant can have it (names are `[A-Za-z0-9._-]`), so the call is
/// denied and traced like any other, with its own reason.
pub const NO_GRANT_FOR_ORIGIN: &str = " no grant for this origin";

/// Like [`NO_GRANT_FOR_ORIGIN`], for a call by URL whose origin more than
/// one of the run's grants has: it is denied (it must name its grant)
/// rather than sent under either.
pub const AMBIGUOUS_ORIGIN: &str = " more than one grant for this origin";

/// Headers an HTTP client library sets itself (framing, routing): on a
/// call by URL a guest's copy is dropped rather than refused, because the
/// standard clients add them; the host frames the request. The host asks
/// for an unencoded answer itself, which it can check for a reflected
/// credential.
pub const CLIENT_OWNED_HEADERS: [&str; 6] = [
    "host",
    "content-length",
    "transfer-encoding",
    "accept-encoding",
    "connection",
    "keep-alive",
];

/// The longest `Retry-After` the broker honours; longer values are cut to
/// this so that an upstream cannot shut a grant for hours.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);
/// The pause after a 429/503 without a usable `Retry-After`.
pub const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// How a withheld response's `upstream(...)` error starts; the CallTrace
/// records it as [`CallOutcome::CredentialReflected`].
pub const REFLECTED_PREFIX: &str = "credential_reflected: ";

/// How an answer withheld because it could not be checked (a coding the
/// host cannot decode) starts its `upstream(...)` error; the CallTrace
/// records it as [`CallOutcome::Undecodable`].
pub const UNDECODABLE_PREFIX: &str = "undecodable: ";

/// The most breakers kept at once; past it, expired ones are dropped and,
/// if none has expired, the one closing soonest.
pub const MAX_BREAKERS: usize = 4096;

/// The process-wide part of the broker: the HTTP client and the
/// `Retry-After` breakers, which belong to the upstream, not to one run.
///
/// A breaker is keyed by caller *and* profile: one caller's guest that
/// provokes 429/503 answers sheds only that caller's calls under the
/// profile, never another caller's.
#[derive(Debug, Default)]
pub struct Broker {
    upstream: Upstream,
    /// (caller, grant profile) → instant until which calls are shed.
    breakers: Mutex<HashMap<(String, String), Instant>>,
}

impl Broker {
    /// A broker with no open connections.
    pub fn new() -> Self {
        Broker::default()
    }
}

/// The broker's state for one run. A cheap handle: clones share the
/// budget and the trace (the `wasi:http` gate holds one, the `broker`
/// import another).
#[derive(Debug, Clone)]
pub struct RunBroker {
    broker: Arc<Broker>,
    inner: Arc<Mutex<RunInner>>,
}

/// Where a worker's broker calls go: across the boundary to the
/// supervisor, which holds the grants and credentials.
pub trait RemoteLink: Send + Sync + std::fmt::Debug {
    /// Makes the call on the supervisor's side.
    /// `timeout` shortens the per-call timeout (a call by URL may ask).
    fn call<'a>(
        &'a self,
        api: &'a str,
        req: Request,
        timeout: Option<Duration>,
    ) -> futures::future::BoxFuture<'a, Result<Response, CallError>>;
}

#[derive(Debug)]
struct RunInner {
    /// Set in a worker: every call is forwarded, nothing is checked or
    /// traced here (the supervisor does both).
    remote: Option<Arc<dyn RemoteLink>>,
    /// The run's grant origins, for routing `wasi:http` in a worker.
    remote_origins: Vec<crate::worker::protocol::GrantOrigin>,
    grants: GrantSet,
    calls_left: u64,
    per_grant_used: HashMap<String, u64>,
    request_cap: u64,
    response_cap: u64,
    call_timeout: Duration,
    deadline: Instant,
    trace: CallTrace,
}

impl RunBroker {
    /// A broker for one run with `grants`, its budgets and caps from `env`,
    /// and every call ending before `deadline`.
    pub fn new(broker: Arc<Broker>, grants: GrantSet, env: &Envelope, deadline: Instant) -> Self {
        RunBroker {
            broker,
            inner: Arc::new(Mutex::new(RunInner {
                remote: None,
                remote_origins: Vec::new(),
                grants,
                calls_left: env.broker_calls,
                per_grant_used: HashMap::new(),
                request_cap: env.request_bytes,
                response_cap: env.response_bytes,
                call_timeout: Duration::from_millis(env.broker_call_ms),
                deadline,
                trace: CallTrace::default(),
            })),
        }
    }

    /// A worker's broker: calls cross to the supervisor through `link`;
    /// `origins` route `wasi:http` requests to grant names.
    pub fn remote(
        broker: Arc<Broker>,
        link: Arc<dyn RemoteLink>,
        origins: Vec<crate::worker::protocol::GrantOrigin>,
        env: &Envelope,
        deadline: Instant,
    ) -> Self {
        let rb = RunBroker::new(broker, GrantSet::empty(), env, deadline);
        {
            let mut inner = rb.lock();
            inner.remote = Some(link);
            inner.remote_origins = origins;
        }
        rb
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunInner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A copy of the trace so far.
    pub fn trace(&self) -> CallTrace {
        self.lock().trace.clone()
    }

    /// The name of the run's grant whose origin is `scheme://authority`,
    /// if there is exactly one (the `wasi:http` gate routes by origin).
    pub fn grant_for_origin(&self, scheme: &str, authority: &str) -> Option<String> {
        self.route_origin(scheme, authority).ok()
    }

    /// The grant a call by URL to `scheme://authority` goes under, or the
    /// name no grant can have that makes [`RunBroker::check`] deny it with
    /// the reason: none of the run's grants has the origin, or more than
    /// one has (the call must then name its grant).
    fn route_origin(&self, scheme: &str, authority: &str) -> Result<String, &'static str> {
        let inner = self.lock();
        let mut names: Vec<&str> = if inner.remote.is_some() {
            inner
                .remote_origins
                .iter()
                .filter(|o| same_origin(&o.scheme, &o.authority, scheme, authority))
                .map(|o| o.name.as_str())
                .take(2)
                .collect()
        } else {
            inner
                .grants
                .names()
                .filter(|n| {
                    inner.grants.get(n).is_some_and(|g| {
                        let o = &g.profile.origin;
                        same_origin(&o.scheme, &o.authority, scheme, authority)
                    })
                })
                .take(2)
                .collect()
        };
        match (names.pop(), names.pop()) {
            (Some(one), None) => Ok(one.to_owned()),
            (None, _) => Err(NO_GRANT_FOR_ORIGIN),
            (Some(_), Some(_)) => Err(AMBIGUOUS_ORIGIN),
        }
    }

    /// Starts the next evaluation of a session: fresh grants, trace, budget
    /// and deadline. Returns the previous trace.
    pub fn next_run(&self, env: &Envelope, deadline: Instant, grants: GrantSet) -> CallTrace {
        let mut inner = self.lock();
        inner.grants = grants;
        inner.calls_left = env.broker_calls;
        inner.per_grant_used.clear();
        inner.request_cap = env.request_bytes;
        inner.response_cap = env.response_bytes;
        inner.call_timeout = Duration::from_millis(env.broker_call_ms);
        inner.deadline = deadline;
        std::mem::take(&mut inner.trace)
    }

    /// Starts the next evaluation of a session kept in a worker: calls
    /// cross to the supervisor through `link`, `origins` route `wasi:http`
    /// requests, and the budget and deadline are fresh. The worker holds
    /// no grant.
    pub fn next_remote_run(
        &self,
        env: &Envelope,
        deadline: Instant,
        link: Arc<dyn RemoteLink>,
        origins: Vec<crate::worker::protocol::GrantOrigin>,
    ) -> CallTrace {
        let trace = self.next_run(env, deadline, GrantSet::empty());
        let mut inner = self.lock();
        inner.remote = Some(link);
        inner.remote_origins = origins;
        trace
    }

    /// Handles one call from the guest: checks it, sends it, traces it.
    pub async fn call(&self, api: &str, req: Request) -> Result<Response, CallError> {
        self.call_within(api, req, None).await
    }

    /// A call by URL: under the run's one grant whose origin is
    /// `scheme://authority` (see [`same_origin`]), with every check of
    /// [`RunBroker::call`]. The headers in [`CLIENT_OWNED_HEADERS`] are
    /// dropped first. No grant for the origin: denied (and traced) with
    /// "no grant covers this origin"; nothing is sent.
    pub async fn call_origin(
        &self,
        scheme: &str,
        authority: &str,
        mut req: Request,
        timeout: Option<Duration>,
    ) -> Result<Response, CallError> {
        req.headers.retain(|(name, _)| {
            !CLIENT_OWNED_HEADERS
                .iter()
                .any(|h| name.eq_ignore_ascii_case(h))
        });
        let api = self
            .route_origin(scheme, authority)
            .unwrap_or_else(|sentinel| sentinel.to_owned());
        self.call_within(&api, req, timeout).await
    }

    /// A call by URL from any guest: `origin` as the guest wrote it
    /// (`scheme://host[:port]`). One that is not an origin is handled as
    /// one no grant covers: denied, traced, nothing sent.
    pub async fn call_url(
        &self,
        origin: &str,
        req: Request,
        timeout: Option<Duration>,
    ) -> Result<Response, CallError> {
        match crate::grant::profile::Origin::parse_guest(origin) {
            Some(o) => {
                self.call_origin(&o.scheme, &o.authority, req, timeout)
                    .await
            }
            None => self.call_within(NO_GRANT_FOR_ORIGIN, req, timeout).await,
        }
    }

    /// [`RunBroker::call`] with the per-call timeout shortened to
    /// `timeout`, if given (never lengthened).
    pub async fn call_within(
        &self,
        api: &str,
        req: Request,
        timeout: Option<Duration>,
    ) -> Result<Response, CallError> {
        let remote = self.lock().remote.clone();
        if let Some(link) = remote {
            return link.call(api, req, timeout).await;
        }
        let started = Instant::now();
        let method = Method::parse(&req.method);
        let mut rec = CallRecord {
            seq: 0,
            grant: None,
            method: method.map(|m| m.as_str().to_owned()),
            route: None,
            outcome: CallOutcome::Denied,
            reason: None,
            status: None,
            request_bytes: req.body.len() as u64,
            response_bytes: 0,
            latency_us: 0,
        };
        let checked = self.check(api, method, req, timeout, &mut rec);
        let result = match checked {
            Err(e) => Err(e),
            Ok(c) => self.send(c).await,
        };
        rec.outcome = match &result {
            Ok(resp) => {
                rec.status = Some(resp.status);
                rec.response_bytes = resp.body.len() as u64;
                CallOutcome::Delivered
            }
            Err(CallError::Denied(why)) => {
                rec.reason = Some(why.clone());
                CallOutcome::Denied
            }
            Err(CallError::BudgetExhausted) => CallOutcome::BudgetExhausted,
            Err(CallError::RequestTooLarge) => CallOutcome::RequestTooLarge,
            Err(CallError::ResponseTooLarge) => CallOutcome::ResponseTooLarge,
            Err(CallError::Timeout) => CallOutcome::Timeout,
            Err(CallError::Upstream(why)) if why.starts_with("shed") => CallOutcome::Shed,
            Err(CallError::Upstream(why)) if why.starts_with(UNDECODABLE_PREFIX) => {
                CallOutcome::Undecodable
            }
            Err(CallError::Upstream(why)) if why.starts_with(REFLECTED_PREFIX) => {
                CallOutcome::CredentialReflected
            }
            Err(CallError::Upstream(_)) => CallOutcome::UpstreamError,
        };
        rec.latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.lock().trace.push(rec);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, path: &str) -> Request {
        Request {
            method: method.into(),
            path: path.into(),
            headers: vec![],
            body: vec![],
        }
    }

    #[tokio::test]
    async fn without_grants_every_call_is_denied_and_traced() {
        let env = Envelope {
            broker_calls: 2,
            ..Envelope::default()
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        let b = RunBroker::new(Arc::new(Broker::new()), GrantSet::empty(), &env, deadline);
        assert!(matches!(
            b.call("orders", req("get", "/v1/orders/1")).await,
            Err(CallError::Denied(_))
        ));
        assert!(matches!(
            b.call("x\r\ny", req("FROB", "/x")).await,
            Err(CallError::Denied(_))
        ));
        assert!(matches!(
            b.call("orders", req("GET", "/v1/orders/1")).await,
            Err(CallError::BudgetExhausted)
        ));
        let t = &b.trace();
        assert_eq!(t.total(), 3);
        assert_eq!(t.count(CallOutcome::Denied), 2);
        assert_eq!(t.count(CallOutcome::BudgetExhausted), 1);
        // The guest's strings are not recorded.
        assert!(t.rows.iter().all(|r| r.grant.is_none()));
        let json = serde_json::to_string(t).unwrap_or_default();
        assert!(!json.contains("orders/1") && !json.contains("FROB"));
    }
}
