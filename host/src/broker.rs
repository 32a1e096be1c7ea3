//! The host side of the `broker` import: every guest call passes the run's
//! grant check, is counted against the call budget, and is recorded in the
//! CallTrace, whether it is delivered or not.

use crate::bindings::broker::{CallError, Request, Response};
use crate::grant::GrantSet;
use crate::trace::{CallOutcome, CallRecord, CallTrace};
use std::time::Instant;

/// Methods the broker knows. Anything else is denied before any lookup.
const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "PATCH"];

/// The broker's state for one run.
#[derive(Debug)]
pub struct RunBroker {
    grants: GrantSet,
    calls_left: u64,
    request_cap: u64,
    trace: CallTrace,
}

impl RunBroker {
    /// A broker for one run with `grants`, a budget of `calls` calls and a
    /// request body cap of `request_cap` bytes.
    pub fn new(grants: GrantSet, calls: u64, request_cap: u64) -> Self {
        RunBroker {
            grants,
            calls_left: calls,
            request_cap,
            trace: CallTrace::default(),
        }
    }

    /// The trace so far.
    pub fn trace(&self) -> &CallTrace {
        &self.trace
    }

    /// Takes the trace (between evaluations of a session) and sets a new
    /// budget.
    pub fn take_trace(&mut self, next_calls: u64) -> CallTrace {
        self.calls_left = next_calls;
        std::mem::take(&mut self.trace)
    }

    /// Handles one `broker.call` from the guest.
    pub async fn call(&mut self, api: &str, req: Request) -> Result<Response, CallError> {
        let started = Instant::now();
        let method = normalise_method(&req.method);
        let grant = self.grants.get(api).map(|g| g.name.clone());
        let mut rec = CallRecord {
            seq: 0,
            grant: grant.clone(),
            method: method.map(str::to_owned),
            route: None,
            outcome: CallOutcome::Denied,
            reason: None,
            status: None,
            request_bytes: req.body.len() as u64,
            response_bytes: 0,
            latency_us: 0,
        };
        let result = self.decide(grant.is_some(), method, &req);
        match &result {
            Err(CallError::BudgetExhausted) => rec.outcome = CallOutcome::BudgetExhausted,
            Err(CallError::RequestTooLarge) => rec.outcome = CallOutcome::RequestTooLarge,
            Err(CallError::Denied(why)) => {
                rec.outcome = CallOutcome::Denied;
                rec.reason = Some(why.clone());
            }
            Err(CallError::ResponseTooLarge) => rec.outcome = CallOutcome::ResponseTooLarge,
            Err(CallError::Timeout) => rec.outcome = CallOutcome::Timeout,
            Err(CallError::Upstream(_)) => rec.outcome = CallOutcome::UpstreamError,
            Ok(resp) => {
                rec.outcome = CallOutcome::Delivered;
                rec.status = Some(resp.status);
                rec.response_bytes = resp.body.len() as u64;
            }
        }
        rec.latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.trace.push(rec);
        result
    }

    fn decide(
        &mut self,
        has_grant: bool,
        method: Option<&str>,
        req: &Request,
    ) -> Result<Response, CallError> {
        if self.calls_left == 0 {
            return Err(CallError::BudgetExhausted);
        }
        self.calls_left -= 1;
        if !has_grant {
            return Err(CallError::Denied(
                "this run has no grant of that name".to_owned(),
            ));
        }
        if method.is_none() {
            return Err(CallError::Denied("method not allowed".to_owned()));
        }
        if req.body.len() as u64 > self.request_cap {
            return Err(CallError::RequestTooLarge);
        }
        // Grants with routes arrive with the grants issue; until then a
        // grant allows nothing.
        Err(CallError::Denied(
            "no route of the grant matches".to_owned(),
        ))
    }
}

/// The method in upper case if it is one the broker knows.
fn normalise_method(m: &str) -> Option<&'static str> {
    METHODS
        .into_iter()
        .find(|known| known.eq_ignore_ascii_case(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request {
        Request {
            method: "get".into(),
            path: "/v1/orders/1".into(),
            headers: vec![],
            body: vec![],
        }
    }

    #[tokio::test]
    async fn without_grants_every_call_is_denied_and_traced() {
        let mut b = RunBroker::new(GrantSet::empty(), 2, 1024);
        assert!(matches!(
            b.call("orders", req()).await,
            Err(CallError::Denied(_))
        ));
        assert!(matches!(
            b.call("x\r\ny", req()).await,
            Err(CallError::Denied(_))
        ));
        assert!(matches!(
            b.call("orders", req()).await,
            Err(CallError::BudgetExhausted)
        ));
        let t = b.trace();
        assert_eq!(t.total(), 3);
        assert_eq!(t.count(CallOutcome::Denied), 2);
        assert_eq!(t.count(CallOutcome::BudgetExhausted), 1);
        // The guest's strings are not recorded.
        assert!(t.rows.iter().all(|r| r.grant.is_none()));
        let json = serde_json::to_string(t).unwrap_or_default();
        assert!(!json.contains("orders/1"));
    }
}
