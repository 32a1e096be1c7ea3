//! Every check a call passes before it is sent, under the run's lock:
//! the budget (every call counts, refused or not), the grant's method,
//! canonical path and route, headers, body size, and its breaker.
//!
//! Guarantees: nothing here waits; a call that fails any check is a typed
//! `denied` (or `budget_exhausted`, `request_too_large`, `rate_limited`)
//! and is never sent; the credential is added only to a request that
//! passed, by the host.

use super::{AMBIGUOUS_ORIGIN, NO_GRANT_FOR_ORIGIN, RunBroker};
use crate::bindings::broker::{CallError, Request};
use crate::grant::Grant;
use crate::grant::headers::check_request_headers_for;
use crate::grant::route::{Method, canonical_target_with};
use crate::trace::CallRecord;
use bytes::Bytes;
use http_body_util::Full;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// A call that passed every check, ready to send.
pub(super) struct Checked {
    pub(super) caller: String,
    pub(super) profile: String,
    pub(super) grant: Arc<Grant>,
    pub(super) request: http::Request<Full<Bytes>>,
    pub(super) response_cap: u64,
    pub(super) timeout: Duration,
}

/// A `denied` call error saying `why`.
pub(super) fn denied(why: &str) -> CallError {
    CallError::Denied(why.to_owned())
}

impl RunBroker {
    /// Every check, under the run's lock; nothing here waits.
    pub(super) fn check(
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
}
