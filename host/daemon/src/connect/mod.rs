//! plimsoll protocol 4: Connect's unary JSON protocol at
//! `POST /plimsoll.v1.SandboxService/{procedure}`, as plimsoll-client
//! 0.23.0 speaks it (docs/protocol.md).
//!
//! The wire is translated here and nothing else: authentication, quotas,
//! the body budgets, the audit log, metrics, session rules and the runs
//! themselves are the service layer's ([`crate::service`]) and the
//! library's. What this adds is the protocol's: the request id echo, the
//! not-dispatched marks, Connect errors, run records and their chains.

mod answer;
mod describe;
pub mod details;
mod envelope;
pub mod json;
mod payload;
pub mod record;
mod run;
mod session;

use crate::callers::{Caller, Scope};
use crate::error::ApiError;
use crate::service::{
    App, Chained, PreLease, SessionOpen, check_profiles, read_body, valid_session_id,
};
use answer::{Evidence, output, run_error, run_response};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use describe::{describe, identity_of, session_identity};
use details::{ConnectError, End, Reason, map_code};
use envelope::Envelope;
use http::{HeaderMap, HeaderValue, header};
use json::Msg;
use payload::{input_files, payload};
use plimsoll::envelope::Limits;
use plimsoll::run::{InputFile, Language};
use plimsoll::session::{SessionOptions, Turn};
use plimsoll::{RunRequest, RunResult, Status, Tier};
use record::{File, Output, Payload, RequestFacts, ResultFacts, RunRecord, Step};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The protocol number served.
pub const PROTOCOL: u32 = 4;
/// The request id a client sends and the answer echoes.
pub const REQUEST_ID: &str = "plimsoll-request-id";
/// The mark on an answer written before any procedure's handler ran.
pub const NOT_DISPATCHED: &str = "plimsoll-not-dispatched";

/// Files a project or a cell may carry (the client's own limit).
pub const MAX_FILES: usize = 200;
/// Bytes of files a project or a cell may carry.
pub const MAX_FILE_BYTES: usize = 4 << 20;
/// Artifacts a project may name.
pub const MAX_ARTIFACTS: usize = 100;

/// The two step forms `CodeExecutor` sends. Only the Python one runs: the
/// JavaScript interpreter evaluates scripts, not ES modules.
pub const PYTHON_STEP: &str =
    r#"python3 -c 'import runpy; runpy.run_path(".plimsoll/code.py", run_name="__main__")'"#;
/// `CodeExecutor`'s JavaScript step (refused as unsupported; see above).
pub const NODE_STEP: &str = "node .plimsoll/code.mjs";

/// What the Python step runs: `python3 -c`'s setup (`sys.argv` is
/// `['-c']`, the working directory first on `sys.path`), then the step's
/// own code, unchanged.
const PYTHON_STEP_CODE: &str = "import sys\nsys.argv[:] = ['-c']\nif '' not in sys.path: sys.path.insert(0, '')\ndel sys\nimport runpy; runpy.run_path(\".plimsoll/code.py\", run_name=\"__main__\")\n";

/// The procedures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Procedure {
    Describe,
    Run,
    OpenSession,
    SessionRun,
    CloseSession,
}

impl Procedure {
    fn parse(s: &str) -> Option<Procedure> {
        Some(match s {
            "Describe" => Procedure::Describe,
            "Run" => Procedure::Run,
            "OpenSession" => Procedure::OpenSession,
            "SessionRun" => Procedure::SessionRun,
            "CloseSession" => Procedure::CloseSession,
            _ => return None,
        })
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The request id, when the request carried exactly one valid value.
fn request_id(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut all = headers.get_all(REQUEST_ID).iter();
    let one = all.next()?;
    if all.next().is_some() {
        return None;
    }
    let ok = one.len() == 32
        && one
            .as_bytes()
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
    ok.then(|| one.clone())
}

/// An error of ours (REST code) as a Connect error.
fn from_api(e: ApiError) -> ConnectError {
    let (code, reason) = map_code(&e.code);
    let mut c = match reason {
        Some(r) => ConnectError::refused(code, r, e.message),
        None => ConnectError::unmarked(code, e.message),
    };
    c.retry_after = e.retry_after_secs;
    c
}

/// Like [`from_api`], for an error written before any handler ran.
fn before(e: ApiError) -> ConnectError {
    let mut c = from_api(e);
    c.before_handler = true;
    c
}

fn invalid(message: impl Into<String>) -> ConnectError {
    ConnectError::refused("invalid_argument", Reason::Request, message)
}

fn unsupported(message: impl Into<String>) -> ConnectError {
    ConnectError::refused("unimplemented", Reason::Unsupported, message)
}

fn error_response(e: ConnectError) -> Response {
    let mut resp = (e.status(), Json(e.body())).into_response();
    let h = resp.headers_mut();
    if e.before_handler
        && let Some(r) = e.not_dispatched
    {
        h.insert(NOT_DISPATCHED, HeaderValue::from_static(r.as_str()));
    }
    if let Some(s) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        h.insert(header::RETRY_AFTER, v);
    }
    if e.code == "unauthenticated" {
        h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    resp
}

/// `POST /plimsoll.v1.SandboxService/{procedure}`.
pub async fn handle(
    State(app): State<Arc<App>>,
    Path(procedure): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let id = request_id(&headers);
    let mut resp = match serve(&app, &procedure, &headers, body).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => error_response(e),
    };
    if let Some(id) = id {
        resp.headers_mut().insert(REQUEST_ID, id);
    }
    resp
}

async fn serve(
    app: &App,
    procedure: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Value, ConnectError> {
    let started = Instant::now();
    let Some(procedure) = Procedure::parse(procedure) else {
        let mut e = unsupported("no such procedure in plimsoll.v1.SandboxService");
        e.before_handler = true;
        return Err(e);
    };
    let essence = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase());
    if essence.as_deref() != Some("application/json") {
        let mut e = invalid("the body must be application/json (Connect's JSON codec)");
        e.before_handler = true;
        return Err(e);
    }
    let caller = app
        .authorize(headers, Some(Scope::CodeRun))
        .map_err(from_api)?;
    let starts_work = matches!(
        procedure,
        Procedure::Run | Procedure::OpenSession | Procedure::SessionRun
    );
    let mut pre = PreLease::default();
    if starts_work {
        // A call on an open session is still served while the daemon
        // drains its sessions.
        app.check_open_for(procedure == Procedure::SessionRun)
            .map_err(from_api)?;
        if procedure == Procedure::OpenSession {
            app.spend_rate(&caller).await.map_err(from_api)?;
        } else {
            pre = app.spend_rate_for_run(&caller).await.map_err(from_api)?;
        }
    }
    let (bytes, _permit) = read_body(app, &caller, headers, body)
        .await
        .map_err(before)?;
    let msg = json::parse(&bytes).map_err(|e| {
        let mut c = invalid(e.0);
        c.before_handler = true;
        c
    })?;
    drop(bytes);
    if procedure != Procedure::Describe {
        let protocol = msg
            .int("protocol", 0, u32::MAX.into())
            .map_err(|e| invalid(e.0))?;
        if protocol == 0 {
            return Err(ConnectError::refused(
                "invalid_argument",
                Reason::Protocol,
                "the request states no protocol number; this daemon serves protocol 4",
            ));
        }
        if protocol != i128::from(PROTOCOL) {
            return Err(ConnectError::refused(
                "unimplemented",
                Reason::Protocol,
                "this daemon serves protocol 4, not the protocol the request states",
            ));
        }
    }
    match procedure {
        Procedure::Describe => Ok(describe(app, &caller)),
        Procedure::Run => run::run(app, &caller, &msg, started, pre).await,
        Procedure::OpenSession => session::open_session(app, &caller, &msg, started).await,
        Procedure::SessionRun => session::session_run(app, &caller, &msg, started, pre).await,
        Procedure::CloseSession => session::close_session(app, &caller, &msg).await,
    }
}

#[cfg(test)]
mod tests;
