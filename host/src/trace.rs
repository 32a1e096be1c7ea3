//! The CallTrace: a metadata-only record of a run's broker calls.
//!
//! A row holds the grant, the method, the matched route *template*, the
//! outcome, the status, byte counts and latency. It never holds the raw
//! path, the query, a header, a body or a credential: the trace is returned
//! to callers and written to logs, and the guest controls the raw path.

use serde::{Deserialize, Serialize};

/// At most this many rows are kept per run; later calls only count.
pub const MAX_TRACE_ROWS: usize = 256;

/// How one broker call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// The call was made and the upstream answered (any status).
    Delivered,
    /// The grant does not allow it, or the request was malformed.
    Denied,
    /// The run's call budget was spent.
    BudgetExhausted,
    /// The request body was over the cap; nothing was sent.
    RequestTooLarge,
    /// The upstream's body was over the cap.
    ResponseTooLarge,
    /// The upstream did not answer in time.
    Timeout,
    /// The upstream could not be reached or answered garbage.
    UpstreamError,
    /// The host refused to send (e.g. while honouring `Retry-After`).
    Shed,
    /// The upstream's answer carried the credential the host put into
    /// the call (or could not be checked for it), so it was withheld
    /// from the guest (grant/reflection).
    CredentialReflected,
    /// The upstream's answer was in a coding the host cannot decode (or
    /// not valid in the coding it named), so it could not be checked for
    /// the credential and was withheld (grant/reflection/inspect.rs).
    Undecodable,
}

impl CallOutcome {
    /// Every outcome, for metrics and summaries.
    pub const ALL: [CallOutcome; 10] = [
        CallOutcome::Delivered,
        CallOutcome::Denied,
        CallOutcome::BudgetExhausted,
        CallOutcome::RequestTooLarge,
        CallOutcome::ResponseTooLarge,
        CallOutcome::Timeout,
        CallOutcome::UpstreamError,
        CallOutcome::Shed,
        CallOutcome::CredentialReflected,
        CallOutcome::Undecodable,
    ];

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Delivered => "delivered",
            CallOutcome::Denied => "denied",
            CallOutcome::BudgetExhausted => "budget_exhausted",
            CallOutcome::RequestTooLarge => "request_too_large",
            CallOutcome::ResponseTooLarge => "response_too_large",
            CallOutcome::Timeout => "timeout",
            CallOutcome::UpstreamError => "upstream_error",
            CallOutcome::Shed => "shed",
            CallOutcome::CredentialReflected => "credential_reflected",
            CallOutcome::Undecodable => "undecodable",
        }
    }
}

/// One broker call, metadata only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallRecord {
    /// 1-based order of the call within the run (counts dropped rows too).
    pub seq: u64,
    /// The grant's name when the guest named a grant of this run; `None`
    /// when it named something else (the guest's string is not recorded).
    pub grant: Option<String>,
    /// The method when it is one of the five the broker knows; `None`
    /// otherwise.
    pub method: Option<String>,
    /// The route template that matched, e.g. `/v1/orders/*`; `None` when
    /// nothing matched.
    pub route: Option<String>,
    /// How the call ended.
    pub outcome: CallOutcome,
    /// Why a denied call was denied, from a closed set of reasons.
    pub reason: Option<String>,
    /// The upstream's HTTP status, when it answered.
    pub status: Option<u16>,
    /// Bytes of the request body.
    pub request_bytes: u64,
    /// Bytes of the response body received.
    pub response_bytes: u64,
    /// Time from the guest's call to the answer, in microseconds.
    pub latency_us: u64,
}

/// The CallTrace of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CallTrace {
    /// The first [`MAX_TRACE_ROWS`] calls.
    pub rows: Vec<CallRecord>,
    /// Calls made after the rows were full.
    pub dropped: u64,
}

impl CallTrace {
    /// Records a call; past [`MAX_TRACE_ROWS`] only the counter moves.
    pub fn push(&mut self, mut rec: CallRecord) {
        rec.seq = self.total() + 1;
        if self.rows.len() < MAX_TRACE_ROWS {
            self.rows.push(rec);
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }

    /// Every call recorded, including dropped rows.
    pub fn total(&self) -> u64 {
        self.rows.len() as u64 + self.dropped
    }

    /// Number of kept rows with `outcome`.
    pub fn count(&self, outcome: CallOutcome) -> u64 {
        self.rows.iter().filter(|r| r.outcome == outcome).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(outcome: CallOutcome) -> CallRecord {
        CallRecord {
            seq: 0,
            grant: None,
            method: None,
            route: None,
            outcome,
            reason: None,
            status: None,
            request_bytes: 0,
            response_bytes: 0,
            latency_us: 0,
        }
    }

    #[test]
    fn keeps_at_most_the_row_cap_and_counts_the_rest() {
        let mut t = CallTrace::default();
        for _ in 0..MAX_TRACE_ROWS + 10 {
            t.push(row(CallOutcome::Denied));
        }
        assert_eq!(t.rows.len(), MAX_TRACE_ROWS);
        assert_eq!(t.dropped, 10);
        assert_eq!(t.total(), MAX_TRACE_ROWS as u64 + 10);
        assert_eq!(t.rows[MAX_TRACE_ROWS - 1].seq, MAX_TRACE_ROWS as u64);
    }
}
