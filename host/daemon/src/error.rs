//! The daemon's errors: JSON `{code, message}` with a stable `code` and the
//! HTTP status that goes with it.
//!
//! No message echoes a token, a secret, or the caller's code: request
//! parsing errors say where the body is wrong and what was expected, with
//! every value from the body removed.

use axum::Json;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

/// An error answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ApiError {
    /// Stable machine-readable code, e.g. `rate_limited`.
    pub code: String,
    /// What happened, for people.
    pub message: String,
    /// The run's id, when the error is a refused run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Seconds to wait before trying again (also in `Retry-After`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
    /// Why, for `session_lost`: `node_lost`, `node_restarted` or
    /// `node_drained`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl ApiError {
    /// An error with `code` and `message`. A refusal for want of capacity
    /// that passes by itself ([`retry_after_for`]) carries `Retry-After`.
    pub fn new(code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            code: code.to_owned(),
            message: message.into(),
            run_id: None,
            retry_after_secs: retry_after_for(code),
            reason: None,
        }
    }

    /// Sets the seconds in `Retry-After`.
    pub fn retry_after(mut self, secs: u64) -> ApiError {
        self.retry_after_secs = Some(secs);
        self
    }

    /// The HTTP status for this error's code.
    pub fn status(&self) -> StatusCode {
        status_for(&self.code)
    }
}

/// Seconds to wait before trying again after a refusal with `code`, for
/// the refusals that pass by themselves (the host's capacity, a guest
/// still compiling); `None` for the rest.
pub fn retry_after_for(code: &str) -> Option<u64> {
    match code {
        "worker_pool_exhausted"
        | "busy"
        | "session_busy"
        | "quota_unavailable"
        | "session_unreachable" => Some(1),
        "warming_up" => Some(5),
        _ => None,
    }
}

/// The HTTP status of an error code. Codes not listed are the host's fault.
pub fn status_for(code: &str) -> StatusCode {
    match code {
        "invalid_json"
        | "invalid_request"
        | "invalid_limits"
        | "identity_mismatch"
        | "language_unavailable"
        | "unknown_component"
        | "snapshot_invalid"
        | "snapshot_too_large" => StatusCode::BAD_REQUEST,
        "unauthorized" => StatusCode::UNAUTHORIZED,
        "forbidden" | "grant_not_allowed" | "unknown_grant" | "insufficient_isolation" => {
            StatusCode::FORBIDDEN
        }
        "not_found" | "unknown_session" | "unknown_snapshot" => StatusCode::NOT_FOUND,
        "session_busy" | "snapshot_unavailable" | "snapshot_guest_mismatch" => StatusCode::CONFLICT,
        "body_too_large" => StatusCode::PAYLOAD_TOO_LARGE,
        "unsupported_media_type" => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "rate_limited"
        | "concurrency_limit"
        | "session_limit"
        | "cpu_allowance_exhausted"
        | "snapshot_quota" => StatusCode::TOO_MANY_REQUESTS,
        "busy"
        | "provider_disabled"
        | "draining"
        | "audit_unavailable"
        | "not_ready"
        | "worker_pool_exhausted"
        | "warming_up"
        | "quota_unavailable"
        | "session_unreachable" => StatusCode::SERVICE_UNAVAILABLE,
        "session_lost" => StatusCode::GONE,
        "request_timeout" => StatusCode::REQUEST_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let retry = self.retry_after_secs;
        let unauthorized = status == StatusCode::UNAUTHORIZED;
        let mut resp = (status, Json(self)).into_response();
        if let Some(s) = retry
            && let Ok(v) = HeaderValue::from_str(&s.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if unauthorized {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

/// Parses a JSON request body strictly (unknown fields are refused by the
/// types themselves). The error says where and what was expected, never
/// what the body held.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        let kind = match e.classify() {
            serde_json::error::Category::Syntax => "malformed JSON",
            serde_json::error::Category::Eof => "the body ends early",
            serde_json::error::Category::Data => "the body does not match the request schema",
            serde_json::error::Category::Io => "the body could not be read",
        };
        ApiError::new(
            "invalid_json",
            format!(
                "{kind} at line {} column {}: {}",
                e.line(),
                e.column(),
                plimsoll::redact::serde_message(&e.to_string())
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct T {
        n: u64,
    }

    #[test]
    fn parse_errors_never_echo_values() {
        let secret = "sk-live-SECRET";
        for body in [
            format!(r#"{{"n": "{secret}"}}"#),
            format!(r#"{{"{secret}": 1}}"#),
            format!(r#"{{"n": 1, "x": "{secret}"#),
            secret.to_string(),
        ] {
            let e = parse_json::<T>(body.as_bytes()).expect_err("invalid");
            assert_eq!(e.code, "invalid_json");
            assert!(!e.message.contains(secret), "{}", e.message);
        }
        let e = parse_json::<T>(br#"{"n": 1, "extra": 2}"#).expect_err("unknown field");
        assert!(e.message.contains("unknown field"), "{}", e.message);
        assert!(e.message.contains("`n`"), "{}", e.message);
    }
}
