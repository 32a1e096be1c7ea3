//! Connect errors: `{code, message, details}` with the HTTP status Connect
//! gives each code, and the details plimsoll-client decodes, as binary
//! protobuf (field numbers from the client's `_wire.py`).

use super::record::RunRecord;
use base64::Engine as _;
use prost::Message;

/// Why nothing ran (`plimsoll.v1.NotDispatchedReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    Request = 1,
    Permission = 2,
    Protocol = 3,
    Unsupported = 4,
    Isolation = 5,
    Capacity = 6,
    Environment = 7,
}

impl Reason {
    /// The name the `Plimsoll-Not-Dispatched` header carries.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Request => "request",
            Reason::Permission => "permission",
            Reason::Protocol => "protocol",
            Reason::Unsupported => "unsupported",
            Reason::Isolation => "isolation",
            Reason::Capacity => "capacity",
            Reason::Environment => "environment",
        }
    }
}

/// How a session ended (`plimsoll.v1.SessionEnd`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Closed = 1,
    Expired = 2,
    MainProcessEnded = 4,
    BoundaryFailed = 5,
    Shutdown = 7,
    Replaced = 8,
    NotFound = 9,
}

impl End {
    /// The enum's JSON name.
    pub fn json_name(self) -> &'static str {
        match self {
            End::Closed => "SESSION_END_CLOSED",
            End::Expired => "SESSION_END_EXPIRED",
            End::MainProcessEnded => "SESSION_END_MAIN_PROCESS_ENDED",
            End::BoundaryFailed => "SESSION_END_BOUNDARY_FAILED",
            End::Shutdown => "SESSION_END_SHUTDOWN",
            End::Replaced => "SESSION_END_REPLACED",
            End::NotFound => "SESSION_END_NOT_FOUND",
        }
    }

    /// The protocol's end for the library's.
    pub fn of(e: plimsoll::session::SessionEnd) -> End {
        use plimsoll::session::SessionEnd as S;
        match e {
            S::Closed => End::Closed,
            S::Expired => End::Expired,
            S::Failed => End::MainProcessEnded,
            S::Replaced => End::Replaced,
            S::Shutdown => End::Shutdown,
            S::BoundaryFailed => End::BoundaryFailed,
        }
    }
}

#[derive(Clone, PartialEq, prost::Message)]
struct NotDispatched {
    #[prost(int32, tag = "1")]
    reason: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SessionEnded {
    #[prost(int32, tag = "1")]
    reason: i32,
    #[prost(string, tag = "2")]
    detail: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct WireRecord {
    #[prost(uint32, tag = "1")]
    version: u32,
    #[prost(string, tag = "2")]
    request_sha256: String,
    #[prost(string, tag = "3")]
    result_sha256: String,
    #[prost(string, tag = "4")]
    provider: String,
    #[prost(string, tag = "5")]
    isolation: String,
    #[prost(string, tag = "6")]
    environment: String,
    #[prost(string, tag = "7")]
    policy: String,
    #[prost(int64, tag = "8")]
    started_unix_ms: i64,
    #[prost(int64, tag = "9")]
    ended_unix_ms: i64,
    #[prost(string, tag = "10")]
    session: String,
    #[prost(uint64, tag = "11")]
    sequence: u64,
    #[prost(string, tag = "12")]
    previous_sha256: String,
    #[prost(string, tag = "13")]
    record_sha256: String,
    #[prost(string, tag = "14")]
    software_identity: String,
    #[prost(string, tag = "15")]
    software_rule_id: String,
    #[prost(string, tag = "16")]
    unanswered: String,
    #[prost(string, tag = "17")]
    instance: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct UnansweredCall {
    #[prost(message, optional, tag = "1")]
    record: Option<WireRecord>,
}

/// A Connect error answer.
#[derive(Debug, Clone)]
pub struct ConnectError {
    /// Connect's code (`invalid_argument`, …).
    pub code: &'static str,
    /// For people; never a value from the request.
    pub message: String,
    /// Set only when nothing ran.
    pub not_dispatched: Option<Reason>,
    /// The session's end, for calls on one that is gone.
    pub ended: Option<(End, String)>,
    /// The record of a call that may have run without an answer.
    pub unanswered: Option<Box<RunRecord>>,
    /// Seconds in `Retry-After`.
    pub retry_after: Option<u64>,
    /// Written before any handler ran (the `Plimsoll-Not-Dispatched`
    /// header says so).
    pub before_handler: bool,
}

impl ConnectError {
    /// An error with `code`, marked not dispatched for `reason`.
    pub fn refused(code: &'static str, reason: Reason, message: impl Into<String>) -> Self {
        ConnectError {
            code,
            message: message.into(),
            not_dispatched: Some(reason),
            ended: None,
            unanswered: None,
            retry_after: None,
            before_handler: false,
        }
    }

    /// An error after which the code may have run: unmarked.
    pub fn unmarked(code: &'static str, message: impl Into<String>) -> Self {
        ConnectError {
            code,
            message: message.into(),
            not_dispatched: None,
            ended: None,
            unanswered: None,
            retry_after: None,
            before_handler: false,
        }
    }

    /// A call on a session that is gone: `failed_precondition` with the
    /// end, marked `request`.
    pub fn session_ended(end: End, detail: &str) -> Self {
        let mut e = ConnectError::refused(
            "failed_precondition",
            Reason::Request,
            match end {
                End::NotFound => "no session with that id is open for this caller".to_owned(),
                _ => format!("the session has ended ({})", detail),
            },
        );
        e.ended = Some((end, detail.to_owned()));
        e
    }

    /// Sets `Retry-After`.
    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    /// Connect's HTTP status for the code.
    pub fn status(&self) -> http::StatusCode {
        http_status(self.code)
    }

    /// The JSON body, details encoded.
    pub fn body(&self) -> serde_json::Value {
        let b64 = |m: &[u8]| base64::engine::general_purpose::STANDARD_NO_PAD.encode(m);
        let mut details = Vec::new();
        if let Some(r) = self.not_dispatched {
            let m = NotDispatched { reason: r as i32 }.encode_to_vec();
            details
                .push(serde_json::json!({"type": "plimsoll.v1.NotDispatched", "value": b64(&m)}));
        }
        if let Some((end, detail)) = &self.ended {
            let m = SessionEnded {
                reason: *end as i32,
                detail: detail.clone(),
            }
            .encode_to_vec();
            details.push(serde_json::json!({"type": "plimsoll.v1.SessionEnded", "value": b64(&m)}));
        }
        if let Some(r) = &self.unanswered {
            let m = UnansweredCall {
                record: Some(WireRecord {
                    version: r.version,
                    request_sha256: r.request_sha256.clone(),
                    result_sha256: r.result_sha256.clone(),
                    provider: r.provider.clone(),
                    isolation: r.isolation.clone(),
                    environment: r.environment.clone(),
                    policy: r.policy.clone(),
                    started_unix_ms: r.started_unix_ms,
                    ended_unix_ms: r.ended_unix_ms,
                    session: r.session.clone(),
                    sequence: r.sequence,
                    previous_sha256: r.previous_sha256.clone(),
                    record_sha256: r.record_sha256.clone(),
                    software_identity: r.software_identity.clone(),
                    software_rule_id: r.software_rule_id.clone(),
                    unanswered: r.unanswered.clone(),
                    instance: r.instance.clone(),
                }),
            }
            .encode_to_vec();
            details
                .push(serde_json::json!({"type": "plimsoll.v1.UnansweredCall", "value": b64(&m)}));
        }
        let mut body = serde_json::json!({"code": self.code, "message": self.message});
        if !details.is_empty() {
            body["details"] = serde_json::Value::Array(details);
        }
        body
    }
}

/// Connect's HTTP status for each code.
pub fn http_status(code: &str) -> http::StatusCode {
    use http::StatusCode as S;
    match code {
        "canceled" => S::from_u16(499).unwrap_or(S::BAD_REQUEST),
        "invalid_argument" | "failed_precondition" | "out_of_range" => S::BAD_REQUEST,
        "deadline_exceeded" => S::GATEWAY_TIMEOUT,
        "not_found" => S::NOT_FOUND,
        "already_exists" | "aborted" => S::CONFLICT,
        "permission_denied" => S::FORBIDDEN,
        "resource_exhausted" => S::TOO_MANY_REQUESTS,
        "unimplemented" => S::NOT_IMPLEMENTED,
        "unavailable" => S::SERVICE_UNAVAILABLE,
        "unauthenticated" => S::UNAUTHORIZED,
        _ => S::INTERNAL_SERVER_ERROR,
    }
}

/// Our error code (REST and library) as a Connect code and, when nothing
/// can have run, the reason. One row per code; docs/protocol.md has the
/// table.
pub fn map_code(code: &str) -> (&'static str, Option<Reason>) {
    use Reason::*;
    match code {
        "unauthorized" => ("unauthenticated", Some(Permission)),
        "forbidden" | "grant_not_allowed" | "unknown_grant" => {
            ("permission_denied", Some(Permission))
        }
        "invalid_json" | "invalid_request" | "invalid_limits" | "unsupported_media_type" => {
            ("invalid_argument", Some(Request))
        }
        "body_too_large" => ("resource_exhausted", Some(Request)),
        "request_timeout" => ("deadline_exceeded", Some(Request)),
        "insufficient_isolation" => ("failed_precondition", Some(Isolation)),
        "identity_mismatch" => ("failed_precondition", Some(Environment)),
        "provider_disabled" => ("failed_precondition", Some(Unsupported)),
        "language_unavailable" | "unknown_component" | "sessions_unavailable" | "not_found" => {
            ("unimplemented", Some(Unsupported))
        }
        "rate_limited"
        | "concurrency_limit"
        | "session_limit"
        | "cpu_allowance_exhausted"
        | "busy"
        | "session_busy" => ("resource_exhausted", Some(Capacity)),
        "draining"
        | "audit_unavailable"
        | "workspace_unavailable"
        | "not_ready"
        | "worker_pool_exhausted"
        | "warming_up" => ("unavailable", Some(Capacity)),
        "unknown_session" => ("failed_precondition", Some(Request)),
        // The guest's start functions ran: not a refusal.
        "timeout" | "trap" => ("internal", None),
        _ => ("internal", None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_decode_as_the_client_reads_them() {
        // NotDispatched{reason: capacity}: field 1 varint 6.
        assert_eq!(NotDispatched { reason: 6 }.encode_to_vec(), [0x08, 0x06]);
        let m = SessionEnded {
            reason: End::NotFound as i32,
            detail: "x".into(),
        }
        .encode_to_vec();
        assert_eq!(m, [0x08, 0x09, 0x12, 0x01, b'x']);
        let e = ConnectError::session_ended(End::NotFound, "");
        assert_eq!(e.status(), http::StatusCode::BAD_REQUEST);
        let body = e.body();
        assert_eq!(body["details"].as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn every_refusal_code_is_marked_and_run_failures_are_not() {
        for code in [
            "unauthorized",
            "forbidden",
            "invalid_json",
            "body_too_large",
            "insufficient_isolation",
            "identity_mismatch",
            "rate_limited",
            "draining",
            "unknown_session",
            "language_unavailable",
        ] {
            assert!(map_code(code).1.is_some(), "{code}");
        }
        assert_eq!(map_code("trap"), ("internal", None));
    }
}
