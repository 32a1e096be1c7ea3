//! The host side of the `broker` import.
//!
//! Every guest call is counted against the run's budget, checked against the
//! named grant (method, canonical path, route template, headers, body size),
//! sent upstream by the host with the credential added, and recorded in the
//! run's CallTrace — delivered or not. A refusal is a typed `call-error`;
//! the run goes on.

use crate::bindings::broker::{CallError, Request, Response};
use crate::envelope::Envelope;
use crate::grant::headers::{
    MAX_RESPONSE_HEADERS, check_request_headers_for, response_header_passes,
};
use crate::grant::profile::same_origin;
use crate::grant::reflection::Withheld;
use crate::grant::route::{Method, canonical_target_with};
use crate::grant::{Grant, GrantSet};
use crate::trace::{CallOutcome, CallRecord, CallTrace};
use crate::upstream::{Upstream, UpstreamError};
use bytes::Bytes;
use http_body_util::Full;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

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

    fn breaker_open(&self, caller: &str, profile: &str) -> bool {
        let mut b = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        let key = (caller.to_owned(), profile.to_owned());
        match b.get(&key) {
            Some(until) if Instant::now() < *until => true,
            Some(_) => {
                b.remove(&key);
                false
            }
            None => false,
        }
    }

    fn trip(&self, caller: &str, profile: &str, pause: Duration) {
        let mut b = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if b.len() >= MAX_BREAKERS {
            b.retain(|_, until| *until > now);
            if b.len() >= MAX_BREAKERS
                && let Some(k) = b.iter().min_by_key(|(_, u)| **u).map(|(k, _)| k.clone())
            {
                b.remove(&k);
            }
        }
        b.insert(
            (caller.to_owned(), profile.to_owned()),
            now + pause.min(MAX_RETRY_AFTER),
        );
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

/// A call that passed every check, ready to send.
struct Checked {
    caller: String,
    profile: String,
    grant: Arc<Grant>,
    request: http::Request<Full<Bytes>>,
    response_cap: u64,
    timeout: Duration,
}

fn denied(why: &str) -> CallError {
    CallError::Denied(why.to_owned())
}

fn retry_after(headers: &http::HeaderMap) -> Duration {
    headers
        .get(http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_RETRY_AFTER)
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

    /// Every check, under the run's lock; nothing here waits.
    fn check(
        &self,
        api: &str,
        method: Option<Method>,
        req: Request,
        asked_timeout: Option<Duration>,
        rec: &mut CallRecord,
    ) -> Result<Checked, CallError> {
        let mut inner = self.lock();
        let grant: Option<Arc<Grant>> = inner.grants.get(api).cloned();
        rec.grant = grant.as_ref().map(|g| g.name().to_owned());
        // Every call counts, refused or not: a guest cannot spin on denied
        // calls for free.
        if inner.calls_left == 0 {
            return Err(CallError::BudgetExhausted);
        }
        inner.calls_left -= 1;
        let Some(grant) = grant else {
            return Err(denied(match api {
                NO_GRANT_FOR_ORIGIN => "no grant covers this origin",
                AMBIGUOUS_ORIGIN => {
                    "more than one of the run's grants covers this origin; name the grant (plimsoll.call)"
                }
                _ => "this run has no grant of that name",
            }));
        };
        let used = inner
            .per_grant_used
            .entry(grant.name().to_owned())
            .or_insert(0);
        if *used >= grant.profile.max_calls {
            return Err(CallError::BudgetExhausted);
        }
        *used += 1;
        let Some(method) = method else {
            return Err(denied("method not allowed"));
        };
        let target = canonical_target_with(&req.path, grant.profile.allow_path_parameters)
            .map_err(|d| denied(d.as_str()))?;
        let Some(route) = grant
            .profile
            .routes
            .iter()
            .find(|r| r.matches(method, &target))
        else {
            return Err(denied("no route of the grant matches"));
        };
        rec.route = Some(route.path_template().to_owned());
        let headers = check_request_headers_for(&req.headers, &grant.profile.allow_headers)
            .map_err(|d| denied(d.as_str()))?;
        if req.body.len() as u64 > inner.request_cap {
            return Err(CallError::RequestTooLarge);
        }
        if self
            .broker
            .breaker_open(inner.grants.caller(), grant.name())
        {
            return Err(CallError::Upstream(
                "shed: the upstream asked for a pause (Retry-After)".to_owned(),
            ));
        }
        let remaining = inner.deadline.saturating_duration_since(Instant::now());
        let timeout = inner
            .call_timeout
            .min(remaining)
            .min(asked_timeout.unwrap_or(Duration::MAX));
        if timeout.is_zero() {
            return Err(CallError::Timeout);
        }
        let uri = format!("{}{}", grant.profile.origin.url(), req.path);
        let mut builder = http::Request::builder().method(method.as_str()).uri(uri);
        for (name, value) in &headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        // The answer must be checkable for the credential (see `send`):
        // ask for it unencoded. A guest cannot set this header.
        builder = builder.header(http::header::ACCEPT_ENCODING, "identity");
        if let Some(cred) = &grant.credential {
            let mut v = Zeroizing::new(Vec::with_capacity(cred.len() + 7));
            v.extend_from_slice(b"Bearer ");
            v.extend_from_slice(cred.expose());
            let mut hv = http::HeaderValue::from_bytes(&v).map_err(|_| {
                CallError::Upstream("the grant's credential is not a valid header value".to_owned())
            })?;
            hv.set_sensitive(true);
            builder = builder.header(http::header::AUTHORIZATION, hv);
        }
        let request = builder
            .body(Full::new(Bytes::from(req.body)))
            .map_err(|_| denied("the request could not be formed"))?;
        Ok(Checked {
            caller: inner.grants.caller().to_owned(),
            profile: grant.name().to_owned(),
            grant: grant.clone(),
            request,
            response_cap: inner.response_cap,
            timeout,
        })
    }

    /// Sends a checked call; the run's lock is not held while waiting.
    async fn send(&self, c: Checked) -> Result<Response, CallError> {
        match self
            .broker
            .upstream
            .send(c.request, c.response_cap, c.timeout)
            .await
        {
            Ok(resp) => {
                if resp.status == 429 || resp.status == 503 {
                    self.broker
                        .trip(&c.caller, &c.profile, retry_after(&resp.headers));
                }
                let headers: Vec<(String, String)> = resp
                    .headers
                    .iter()
                    .filter(|(n, _)| response_header_passes(n.as_str()))
                    .filter_map(|(n, v)| {
                        v.to_str()
                            .ok()
                            .map(|v| (n.as_str().to_owned(), v.to_owned()))
                    })
                    .take(MAX_RESPONSE_HEADERS)
                    .collect();
                let cap = usize::try_from(c.response_cap).unwrap_or(usize::MAX);
                let body = crate::grant::reflection::inspect(
                    c.grant.reflection(),
                    &resp.headers,
                    resp.trailers.as_ref(),
                    resp.body.to_vec(),
                    cap,
                )
                .map_err(|w| match w {
                    Withheld::Reflected(why) => {
                        CallError::Upstream(format!("{REFLECTED_PREFIX}{why}"))
                    }
                    Withheld::Undecodable(why) => {
                        CallError::Upstream(format!("{UNDECODABLE_PREFIX}{why}"))
                    }
                    Withheld::TooLarge => CallError::ResponseTooLarge,
                })?;
                Ok(Response {
                    status: resp.status,
                    headers,
                    body,
                })
            }
            Err(UpstreamError::Timeout) => Err(CallError::Timeout),
            Err(UpstreamError::TooLarge) => Err(CallError::ResponseTooLarge),
            Err(UpstreamError::Failed(why)) => Err(CallError::Upstream(why.to_owned())),
        }
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

    #[test]
    fn retry_after_is_bounded() {
        let broker = Broker::new();
        broker.trip("alice", "p", Duration::from_secs(3600));
        assert!(broker.breaker_open("alice", "p"));
        // Another caller of the same profile is not shed.
        assert!(!broker.breaker_open("bob", "p"));
        let key = ("alice".to_owned(), "p".to_owned());
        let until = broker.breakers.lock().map(|b| b[&key]).expect("lock");
        assert!(until <= Instant::now() + MAX_RETRY_AFTER);
        for i in 0..MAX_BREAKERS + 10 {
            broker.trip(&format!("c{i}"), "p", Duration::from_secs(5));
        }
        assert!(broker.breakers.lock().map(|b| b.len()).unwrap_or(0) <= MAX_BREAKERS);
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("7"),
        );
        assert_eq!(retry_after(&h), Duration::from_secs(7));
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&h), DEFAULT_RETRY_AFTER);
    }
}
