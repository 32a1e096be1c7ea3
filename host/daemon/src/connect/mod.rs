//! plimsoll protocol 4: Connect's unary JSON protocol at
//! `POST /plimsoll.v1.SandboxService/{procedure}`, as plimsoll-client
//! 0.23.0 speaks it (docs/protocol.md).
//!
//! The wire is translated here and nothing else: authentication, quotas,
//! the body budgets, the audit log, metrics, the isolation floor and the
//! runs themselves are the REST API's own code paths ([`crate::api`]) and
//! the library's. What this adds is the protocol's: the request id echo,
//! the not-dispatched marks, Connect errors, run records and the session
//! chains.

pub mod details;
pub mod json;
pub mod record;
pub mod sessions;

use crate::api::{App, check_profiles, read_body, valid_session_id};
use crate::audit::AuditRecord;
use crate::callers::{Caller, Scope};
use crate::error::ApiError;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use details::{ConnectError, End, Reason, map_code};
use http::{HeaderMap, HeaderValue, header};
use json::Msg;
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
    if starts_work {
        app.check_open().map_err(from_api)?;
        app.quotas
            .check_rate(&caller)
            .map_err(|s| from_api(app.shed(s)))?;
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
        Procedure::Run => run(app, &caller, &msg, started).await,
        Procedure::OpenSession => open_session(app, &caller, &msg, started).await,
        Procedure::SessionRun => session_run(app, &caller, &msg, started).await,
        Procedure::CloseSession => close_session(app, &caller, &msg).await,
    }
}

// ------------------------------------------------------------------ Describe

/// The software a session runs: its interpreters, as one identity.
fn session_identity(app: &App) -> String {
    let mut ids: Vec<String> = [Language::Python, Language::Javascript]
        .into_iter()
        .filter_map(|l| identity_of(app, l))
        .collect();
    ids.sort();
    let joined = ids.join("\0");
    format!(
        "plimsoll-interpreters:sha256:{}",
        record::fingerprint(&joined)
    )
}

/// The identity of the guest that runs `language` here: the operator's
/// default (for Python, the scientific guest under
/// `PLIMSOLL_PYTHON_GUEST=scientific`), as every run of the protocol uses.
fn identity_of(app: &App, language: Language) -> Option<String> {
    app.sandbox
        .interpreter_for(language, None)
        .ok()
        .map(|g| g.identity().to_owned())
}

fn environment(identity: &str, max_timeout_ms: u64, languages: &[&str]) -> Value {
    let mut m = serde_json::Map::new();
    if !identity.is_empty() {
        m.insert("identity".into(), identity.into());
        m.insert("softwareIdentity".into(), identity.into());
    }
    m.insert(
        "maxTimeoutMs".into(),
        max_timeout_ms.min(u32::MAX.into()).into(),
    );
    if !languages.is_empty() {
        m.insert("languages".into(), json!(languages));
    }
    Value::Object(m)
}

fn describe(app: &App, caller: &Caller) -> Value {
    let iso = app.sandbox.isolation();
    let env = &caller.envelope;
    let runs = iso.provider != "disabled";
    let js = identity_of(app, Language::Javascript).filter(|_| runs);
    let py = identity_of(app, Language::Python).filter(|_| runs);
    let grants = !app.sandbox.grant_profiles().is_empty()
        && caller.grant_profiles.as_ref().is_none_or(|s| !s.is_empty());
    let sessions = app.sandbox.supports_sessions() && js.is_some() && py.is_some();
    let limits = app.sandbox.session_limits();
    let mut v = json!({
        "sandbox": iso.provider,
        "isolation": iso.tier.as_str(),
        "protocol": PROTOCOL,
        "supportsProject": py.is_some(),
        "supportsJavascriptGrants": js.is_some() && grants,
        "supportsProjectGrants": py.is_some() && grants,
        "supportsSessions": sessions,
        "javascriptEnvironment": environment(js.as_deref().unwrap_or(""), env.wall_time_ms, &[]),
        "projectEnvironment": environment(
            py.as_deref().unwrap_or(""),
            env.wall_time_ms,
            if py.is_some() { &["python"] } else { &[] },
        ),
        "resources": {
            "memoryMb": env.memory_bytes / (1 << 20),
            "cpus": 1.0,
            "diskMb": env.workspace_bytes / (1 << 20),
        },
    });
    if sessions {
        v["sessionLifetimeMs"] = json!(
            u64::try_from(limits.lifetime.as_millis())
                .unwrap_or(u64::MAX)
                .min(u32::MAX.into())
        );
        v["sessionIdleTimeoutMs"] = json!(
            u64::try_from(limits.idle_timeout.as_millis())
                .unwrap_or(u64::MAX)
                .min(u32::MAX.into())
        );
        v["sessionEnvironment"] = environment(
            &session_identity(app),
            env.wall_time_ms,
            &["javascript", "python"],
        );
        v["maxSessionsPerCaller"] = json!(caller.max_sessions);
        if app.max_sessions_per_owner > 0 {
            v["maxSessionsPerOwner"] = json!(app.max_sessions_per_owner);
        }
    }
    v
}

// ------------------------------------------------------------------ envelope

/// What every run and session call states besides its payload.
struct Envelope {
    minimum_isolation: String,
    floor: Option<Tier>,
    timeout_ms: i32,
    trace_id: Option<String>,
    software: Option<(String, Vec<String>)>,
}

impl Envelope {
    fn read(m: &Msg<'_>) -> Result<Envelope, ConnectError> {
        let bad = |e: json::Invalid| invalid(e.0);
        let minimum_isolation = m.str("minimumIsolation").map_err(bad)?;
        let floor = match minimum_isolation.as_str() {
            "" => None,
            s => Some(s.parse::<Tier>().map_err(|_| {
                invalid("minimumIsolation must be process, container, kernel or vm")
            })?),
        };
        let timeout_ms = m
            .int("timeoutMs", i32::MIN.into(), i32::MAX.into())
            .map_err(bad)? as i32;
        // An invalid trace id is dropped, never echoed.
        let trace_id = Some(m.str("traceId").map_err(bad)?).filter(|t| {
            !t.is_empty()
                && t.len() <= 64
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'))
        });
        let software = match m.msg("softwareRule").map_err(bad)? {
            None => None,
            Some(r) => {
                let mode = r.str("mode").map_err(bad)?;
                let ids = r.strs("identities").map_err(bad)?;
                let ok_count = match mode.as_str() {
                    "exact" => ids.len() == 1,
                    "approved" => (1..=32).contains(&ids.len()),
                    _ => false,
                };
                let mut seen = std::collections::BTreeSet::new();
                let ok_ids = ids.iter().all(|i| {
                    !i.is_empty()
                        && i.len() <= 256
                        && i.bytes().all(|b| {
                            b.is_ascii_alphanumeric()
                                || matches!(b, b'.' | b'_' | b':' | b'/' | b'@' | b'+' | b'-')
                        })
                        && seen.insert(i.as_str())
                });
                if !ok_count || !ok_ids {
                    return Err(invalid(
                        "softwareRule needs exact with one identity or approved with 1 to 32 distinct identities of [A-Za-z0-9._:/@+-], each at most 256 bytes",
                    ));
                }
                Some((mode, ids))
            }
        };
        Ok(Envelope {
            minimum_isolation,
            floor,
            timeout_ms,
            trace_id,
            software,
        })
    }

    /// What the request digest covers: this envelope as sent (the timeout
    /// before clamping) and `payload`.
    fn facts(&self, payload: &Payload) -> RequestFacts {
        RequestFacts {
            protocol: PROTOCOL,
            minimum_isolation: self.minimum_isolation.clone(),
            timeout_ms: self.timeout_ms,
            software: self.software.clone(),
            payload: payload.clone(),
        }
    }

    fn rule_id(&self) -> String {
        self.software
            .as_ref()
            .map(|(_, ids)| record::software_rule_id(ids))
            .unwrap_or_default()
    }

    /// Refuses, before dispatch, software the rule does not allow.
    fn check_software(&self, identity: &str) -> Result<(), ConnectError> {
        match &self.software {
            Some((_, ids)) if !ids.iter().any(|i| i == identity) => Err(ConnectError::refused(
                "failed_precondition",
                Reason::Environment,
                format!(
                    "the software rule does not allow the software that would run ({identity})"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The run's wall time: the caller's envelope when none is asked for,
    /// else the ask clamped to it (never refused).
    fn limits(&self, caller: &Caller) -> Limits {
        let most = caller.envelope.wall_time_ms;
        let ms = if self.timeout_ms <= 0 {
            most
        } else {
            (self.timeout_ms as u64).min(most)
        };
        Limits {
            wall_time_ms: Some(ms),
            ..Limits::default()
        }
    }
}

fn files(m: &Msg<'_>) -> Result<Vec<File>, ConnectError> {
    let n = m.count("files").map_err(|e| invalid(e.0))?;
    if n > MAX_FILES {
        return Err(invalid(format!("too many files (at most {MAX_FILES})")));
    }
    let mut out = Vec::with_capacity(n);
    let mut total = 0usize;
    for f in m.msgs("files").map_err(|e| invalid(e.0))? {
        let path = f.str("path").map_err(|e| invalid(e.0))?;
        let content = f.str("content").map_err(|e| invalid(e.0))?;
        total = total.saturating_add(content.len());
        if total > MAX_FILE_BYTES {
            return Err(invalid(format!(
                "the files hold more than {MAX_FILE_BYTES} bytes"
            )));
        }
        if !plimsoll::workspace::is_plain_relative_path(&path) {
            return Err(invalid(format!(
                "files[{}].path is not a plain relative path",
                out.len()
            )));
        }
        out.push(File { path, content });
    }
    Ok(out)
}

fn input_files(fs: &[File]) -> Vec<InputFile> {
    fs.iter()
        .map(|f| InputFile {
            path: f.path.clone(),
            content: f.content.as_str().into(),
        })
        .collect()
}

/// The payload of a Run or a SessionRun, exactly one of four.
fn payload(m: &Msg<'_>) -> Result<Payload, ConnectError> {
    let bad = |e: json::Invalid| invalid(e.0);
    let mut present = Vec::new();
    for k in ["javascript", "project", "module", "cell"] {
        if m.has(k).map_err(bad)? {
            present.push(k);
        }
    }
    if present.len() != 1 {
        return Err(invalid(
            "the request needs exactly one payload: javascript, project, module or cell",
        ));
    }
    let Some(p) = m.msg(present[0]).map_err(bad)? else {
        return Ok(Payload::None);
    };
    Ok(match present[0] {
        "javascript" => Payload::Javascript {
            code: p.str("code").map_err(bad)?,
            grant_profile: p.str("grantProfile").map_err(bad)?,
        },
        "cell" => Payload::Cell {
            language: p.str("language").map_err(bad)?,
            code: p.str("code").map_err(bad)?,
            files: files(&p)?,
        },
        "project" => {
            let steps = p.strs("steps").map_err(bad)?;
            let artifacts = p.strs("artifacts").map_err(bad)?;
            if artifacts.len() > MAX_ARTIFACTS {
                return Err(invalid(format!(
                    "too many artifacts (at most {MAX_ARTIFACTS})"
                )));
            }
            Payload::Project {
                grant_profile: p.str("grantProfile").map_err(bad)?,
                files: files(&p)?,
                steps,
                artifacts,
            }
        }
        _ => Payload::Module {
            model: p.str("model").map_err(bad)?,
            end_time: p.float("endTime").map_err(bad)?,
            step: p.float("step").map_err(bad)?,
            rows: p
                .msgs("rows")
                .map_err(bad)?
                .iter()
                .map(|r| r.floats("values"))
                .collect::<Result<_, _>>()
                .map_err(bad)?,
        },
    })
}

// ------------------------------------------------------------------ results

/// A finished run's output in the protocol's terms (docs/protocol.md has
/// the table): the guest's raw bytes, its exit code, and for a stop the
/// host imposed a non-zero code with the reason on stderr.
fn output(r: &RunResult, notebook: bool) -> Output {
    let mut stdout = r.stdout_bytes.clone();
    let mut stderr = r.stderr_bytes.clone();
    let note = |stderr: &mut Vec<u8>, text: &str| {
        if !text.is_empty() && !String::from_utf8_lossy(stderr).contains(text) {
            if !stderr.is_empty() && !stderr.ends_with(b"\n") {
                stderr.push(b'\n');
            }
            stderr.extend_from_slice(text.as_bytes());
            if !text.ends_with('\n') {
                stderr.push(b'\n');
            }
        }
    };
    let message = r.error.as_ref().map(|e| e.message.as_str()).unwrap_or("");
    let (exit_code, timed_out) = match r.status {
        Status::Ok => {
            if notebook && let Some(v) = r.result.as_deref().filter(|v| !v.is_empty()) {
                stdout.extend_from_slice(v.as_bytes());
                stdout.push(b'\n');
            }
            (r.exit_code.unwrap_or(0), false)
        }
        Status::Error => {
            note(&mut stderr, message);
            (
                if notebook {
                    1
                } else {
                    r.exit_code.filter(|c| *c != 0).unwrap_or(1)
                },
                false,
            )
        }
        Status::Timeout => {
            note(&mut stderr, "plimsoll: the run's time ran out");
            (124, true)
        }
        other => {
            let code = match other {
                Status::CpuExhausted => 152,
                Status::MemoryExhausted => 137,
                Status::DiskExhausted => 153,
                Status::OutputTruncated => 141,
                _ => 134,
            };
            note(
                &mut stderr,
                &format!("plimsoll: {}: {message}", other.as_str()),
            );
            (code, false)
        }
    };
    Output {
        exit_code,
        timed_out,
        stdout,
        stderr,
        stdout_truncated: r.stdout_truncated,
        stderr_truncated: r.stderr_truncated,
    }
}

fn output_json(o: &Output) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    if !o.stdout.is_empty() {
        m.insert("stdout".into(), b64(&o.stdout).into());
    }
    if !o.stderr.is_empty() {
        m.insert("stderr".into(), b64(&o.stderr).into());
    }
    if o.exit_code != 0 {
        m.insert("exitCode".into(), o.exit_code.into());
    }
    for (k, v) in [
        ("timedOut", o.timed_out),
        ("stdoutTruncated", o.stdout_truncated),
        ("stderrTruncated", o.stderr_truncated),
    ] {
        if v {
            m.insert(k.into(), true.into());
        }
    }
    m
}

fn result_json(facts: &ResultFacts) -> (&'static str, Value) {
    match facts {
        ResultFacts::Javascript(o) => ("javascript", Value::Object(output_json(o))),
        ResultFacts::Cell {
            output,
            interpreter_started,
            interpreter_ended,
        } => {
            let mut m = output_json(output);
            if *interpreter_started {
                m.insert("interpreterStarted".into(), true.into());
            }
            if *interpreter_ended {
                m.insert("interpreterEnded".into(), true.into());
            }
            ("cell", Value::Object(m))
        }
        ResultFacts::Project {
            outcome,
            outcome_detail,
            artifacts_truncated,
            steps,
            artifacts,
        } => {
            let names = [
                "PROJECT_OUTCOME_UNSPECIFIED",
                "PROJECT_OUTCOME_COMPLETED",
                "PROJECT_OUTCOME_SETUP_FAILED",
                "PROJECT_OUTCOME_TIMED_OUT",
                "PROJECT_OUTCOME_PROTOCOL_ERROR",
                "PROJECT_OUTCOME_RUNNER_FAILED",
            ];
            let mut m = serde_json::Map::new();
            if let Some(n) = usize::try_from(*outcome).ok().and_then(|i| names.get(i))
                && *outcome != 0
            {
                m.insert("outcome".into(), (*n).into());
            }
            if !outcome_detail.is_empty() {
                m.insert("outcomeDetail".into(), outcome_detail.clone().into());
            }
            if *artifacts_truncated {
                m.insert("artifactsTruncated".into(), true.into());
            }
            let steps: Vec<Value> = steps
                .iter()
                .map(|s| {
                    let mut o = output_json(&s.output);
                    o.insert("command".into(), s.command.clone().into());
                    if s.duration_ms != 0 {
                        o.insert("durationMs".into(), s.duration_ms.to_string().into());
                    }
                    Value::Object(o)
                })
                .collect();
            if !steps.is_empty() {
                m.insert("steps".into(), steps.into());
            }
            let arts: Vec<Value> = artifacts
                .iter()
                .map(|(p, c)| {
                    let mut o = serde_json::Map::new();
                    o.insert("path".into(), p.clone().into());
                    if !c.is_empty() {
                        o.insert("content".into(), b64(c).into());
                    }
                    Value::Object(o)
                })
                .collect();
            if !arts.is_empty() {
                m.insert("artifacts".into(), arts.into());
            }
            ("project", Value::Object(m))
        }
    }
}

/// The evidence a response and its record state, from one value.
struct Evidence {
    provider: String,
    isolation: String,
    environment: String,
    software_identity: String,
}

/// A RunResponse: the result, the evidence, and its sealed record.
fn run_response(
    facts: &ResultFacts,
    ev: &Evidence,
    mut rec: RunRecord,
    duration_ms: i64,
) -> (Value, RunRecord) {
    rec.version = record::VERSION;
    rec.result_sha256 = facts.digest();
    rec.provider = ev.provider.clone();
    rec.isolation = ev.isolation.clone();
    rec.environment = ev.environment.clone();
    rec.software_identity = ev.software_identity.clone();
    let rec = rec.seal();
    let (kind, body) = result_json(facts);
    let mut m = serde_json::Map::new();
    m.insert(kind.into(), body);
    m.insert("sandbox".into(), ev.provider.clone().into());
    m.insert("isolation".into(), ev.isolation.clone().into());
    if !ev.environment.is_empty() {
        m.insert("environment".into(), ev.environment.clone().into());
    }
    if !ev.software_identity.is_empty() {
        m.insert(
            "softwareIdentity".into(),
            ev.software_identity.clone().into(),
        );
    }
    if duration_ms != 0 {
        m.insert("durationMs".into(), duration_ms.to_string().into());
    }
    m.insert("record".into(), rec.to_json());
    (Value::Object(m), rec)
}

/// A refused or lost run as a Connect error.
fn run_error(r: &RunResult) -> ConnectError {
    match r.status {
        Status::Refused => {
            let code = r.error_code().unwrap_or("refused");
            let message = r
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_default();
            let mut e = from_api(ApiError::new(code, message));
            if matches!(code, "busy" | "session_limit") {
                e.retry_after = Some(1);
            }
            e
        }
        // The worker may have run the code before it was lost.
        _ => ConnectError::unmarked(
            "unavailable",
            "the worker running the code was lost; the code may have run",
        ),
    }
}

fn audit_base(app: &App, event: &'static str, caller: &Caller, env: &Envelope) -> AuditRecord {
    let mut rec = app.base_record(event, caller, &app.sandbox.isolation());
    rec.protocol = Some("connect");
    rec.trace_id = env.trace_id.clone();
    rec
}

// ------------------------------------------------------------------ Run

async fn run(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
    started: Instant,
) -> Result<Value, ConnectError> {
    let env = Envelope::read(m)?;
    let payload = payload(m)?;
    let facts = env.facts(&payload);
    let (mut req, identity, project) = match &payload {
        Payload::Javascript {
            code,
            grant_profile,
        } => {
            let identity = identity_of(app, Language::Javascript)
                .ok_or_else(|| unsupported("this daemon has no JavaScript interpreter"))?;
            let mut req = RunRequest::code(Language::Javascript, code.clone());
            if !grant_profile.is_empty() {
                req.grants = vec![grant_profile.clone()];
            }
            (req, identity, None)
        }
        Payload::Project {
            grant_profile,
            files,
            steps,
            artifacts,
        } => {
            if steps.is_empty() {
                return Err(invalid("a project needs a step"));
            }
            if steps.len() != 1 || steps[0] != PYTHON_STEP {
                return Err(unsupported(
                    "this daemon runs exactly one project step, CodeExecutor's Python step; the JavaScript step (node, ES modules) and shell steps are not supported",
                ));
            }
            let identity = identity_of(app, Language::Python)
                .ok_or_else(|| unsupported("this daemon has no Python interpreter"))?;
            let mut req = RunRequest::code(Language::Python, PYTHON_STEP_CODE);
            req.files = input_files(files);
            req.capture = artifacts.clone();
            if !grant_profile.is_empty() {
                req.grants = vec![grant_profile.clone()];
            }
            (req, identity, Some(steps[0].clone()))
        }
        Payload::Module { .. } => {
            return Err(unsupported("this daemon runs no modules"));
        }
        Payload::Cell { .. } => {
            return Err(invalid("a cell runs only in a session (SessionRun)"));
        }
        Payload::None => return Err(invalid("the payload is empty")),
    };
    check_profiles(caller, &req.grants).map_err(from_api)?;
    env.check_software(&identity)?;
    req.limits = env.limits(caller);
    req.minimum_isolation = env.floor;
    // The library checks it again immediately before dispatch.
    req.require_identity = Some(identity.clone());
    app.bind_to_caller(caller, &mut req).map_err(from_api)?;
    app.check_audit().map_err(from_api)?;
    let permit = app
        .quotas
        .admit(caller)
        .map_err(|s| from_api(app.shed(s)))?;
    app.metrics.set_inflight(app.quotas.inflight());
    let started_ms = now_ms();
    let r = app.sandbox.run_as(&caller.id, &req).await;
    let ended_ms = now_ms();
    drop(permit);
    app.metrics.set_inflight(app.quotas.inflight());
    let mut audit = app.run_record("run", caller, &req, &r, started);
    audit.protocol = Some("connect");
    audit.trace_id = env.trace_id.clone();
    if matches!(r.status, Status::Refused | Status::WorkerLost) {
        app.settle(caller, &req, &r, audit)
            .await
            .map_err(from_api)?;
        return Err(run_error(&r));
    }
    let out = output(&r, false);
    let result = match project {
        None => ResultFacts::Javascript(out),
        Some(command) => ResultFacts::Project {
            outcome: if out.timed_out { 3 } else { 1 },
            outcome_detail: String::new(),
            artifacts_truncated: r.artifacts_truncated,
            steps: vec![Step {
                command,
                output: out,
                duration_ms: r.usage.wall_ms.round() as i64,
            }],
            artifacts: r
                .captured
                .iter()
                .map(|a| (a.path.clone(), a.content.as_bytes().to_vec()))
                .collect(),
        },
    };
    let iso = &r.isolation;
    let ev = Evidence {
        provider: iso.provider.clone(),
        isolation: iso.tier.as_str().to_owned(),
        environment: r.guest.clone().unwrap_or_default(),
        software_identity: identity,
    };
    let rec = RunRecord {
        request_sha256: facts.digest(),
        software_rule_id: env.rule_id(),
        started_unix_ms: started_ms,
        ended_unix_ms: ended_ms,
        ..RunRecord::default()
    };
    let (body, rec) = run_response(&result, &ev, rec, ended_ms - started_ms);
    audit.record_sha256 = Some(rec.record_sha256.clone());
    app.settle(caller, &req, &r, audit)
        .await
        .map_err(from_api)?;
    Ok(body)
}

// ------------------------------------------------------------------ sessions

fn session_id(m: &Msg<'_>) -> Result<String, ConnectError> {
    m.str("sessionId").map_err(|e| invalid(e.0))
}

/// The answer for a session that is not (or no longer) this caller's to
/// use: its end when the library remembers one, else `NOT_FOUND` — the
/// same for an unknown id and another caller's.
fn gone(app: &App, caller: &Caller, id: &str) -> ConnectError {
    match app.sandbox.session_ended(&caller.id, id) {
        Some(end) => ConnectError::session_ended(End::of(end), end.as_str()),
        None => ConnectError::session_ended(End::NotFound, ""),
    }
}

fn forget_stale(app: &App) {
    let sb = &app.sandbox;
    app.connect_sessions
        .retain(|caller, id| sb.session_open(caller, id) || sb.session_ended(caller, id).is_some());
}

async fn open_session(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
    started: Instant,
) -> Result<Value, ConnectError> {
    let bad = |e: json::Invalid| invalid(e.0);
    let env = Envelope::read(m)?;
    let hint = m.strs("languages").map_err(bad)?;
    let mut start = Vec::new();
    for l in &hint {
        match l.as_str() {
            "python" => start.push(0),
            "javascript" => start.push(1),
            _ => return Err(invalid("languages may name only javascript and python")),
        }
    }
    start.sort_unstable();
    start.dedup();
    let owner = m.str("owner").map_err(bad)?;
    let digest = owner.len() == 64 && owner.bytes().all(|b| b.is_ascii_hexdigit());
    if !owner.is_empty() && !digest {
        return Err(invalid(
            "owner must be the client's owner digest (64 hex digits)",
        ));
    }
    let ms = |name: &str| -> Result<Option<Duration>, ConnectError> {
        let v = m.int(name, 0, u32::MAX.into()).map_err(bad)?;
        Ok((v > 0).then(|| Duration::from_millis(v as u64)))
    };
    let (lifetime, idle_timeout) = (ms("lifetimeMs")?, ms("idleTimeoutMs")?);
    if !app.sandbox.supports_sessions() {
        return Err(unsupported(
            "this daemon's provider offers no sessions (the `disabled` provider, or a wrapper whose workers are not verified)",
        ));
    }
    let (Ok(py), Ok(js)) = (
        app.sandbox.interpreter_for(Language::Python, None),
        app.sandbox.interpreter_for(Language::Javascript, None),
    ) else {
        return Err(unsupported("sessions need both interpreters"));
    };
    let software = session_identity(app);
    env.check_software(&software)?;
    let mut req = RunRequest {
        limits: env.limits(caller),
        minimum_isolation: env.floor,
        ..RunRequest::default()
    };
    app.bind_to_caller(caller, &mut req).map_err(from_api)?;
    app.check_audit().map_err(from_api)?;
    let Some(_lock) = app.quotas.session_lock(caller).await else {
        return Err(from_api(ApiError::new("forbidden", "unknown caller")));
    };
    forget_stale(app);
    let per_owner = app.max_sessions_per_owner as usize;
    let opts = SessionOptions {
        guests: vec![py, js],
        start,
        keep_on_failure: true,
        lifetime,
        idle_timeout,
        owner: (!owner.is_empty() && per_owner > 0).then(|| (owner.clone(), per_owner)),
    };
    // The owner's cap may free a place; the caller's is checked after.
    // At the caller's cap only a replacement can make room: the owner must
    // be at its own cap, or nothing would be replaced and the new session
    // would be closed again at once.
    let at_cap = app.sandbox.session_count(&caller.id) >= caller.max_sessions as usize;
    let replaces = opts
        .owner
        .as_ref()
        .is_some_and(|(tag, cap)| app.sandbox.session_count_for_owner(&caller.id, tag) >= *cap);
    if at_cap && !replaces {
        app.metrics.shed("session_limit");
        return Err(from_api(ApiError::new(
            "session_limit",
            format!(
                "this caller already has its maximum of {} open sessions",
                caller.max_sessions
            ),
        ))
        .retry_after(1));
    }
    let opened = app.sandbox.open_session_with(&caller.id, &opts, &req).await;
    app.metrics.set_sessions(app.sandbox.session_total());
    let mut rec = audit_base(app, "session_open", caller, &env);
    rec.handling_ms = started.elapsed().as_secs_f64() * 1e3;
    let info = match opened {
        Ok(info) => info,
        Err(e) => {
            rec.outcome = "refused".into();
            rec.error_code = Some(e.code.clone());
            let _ = app.audit.record(&rec).await;
            return Err(from_api(ApiError::new(&e.code, e.message)));
        }
    };
    if app.sandbox.session_count(&caller.id) > caller.max_sessions as usize {
        app.sandbox.close_session(&caller.id, &info.session_id);
        return Err(from_api(ApiError::new(
            "session_limit",
            format!(
                "this caller already has its maximum of {} open sessions",
                caller.max_sessions
            ),
        )));
    }
    let fp = record::fingerprint(&info.session_id);
    rec.session_id = Some(fp.clone());
    rec.guest = Some(software.clone());
    rec.outcome = "ok".into();
    if let Err(e) = app.audit.record(&rec).await {
        app.sandbox.close_session(&caller.id, &info.session_id);
        return Err(from_api(ApiError::new("audit_unavailable", e.to_string())));
    }
    app.connect_sessions.insert(
        info.session_id.clone(),
        sessions::Session {
            caller: caller.id.clone(),
            fingerprint: fp.clone(),
            software_identity: software.clone(),
            chain: Default::default(),
        },
    );
    let iso = app.sandbox.isolation();
    let expires = now_ms().saturating_add(i64::try_from(info.lifetime_ms).unwrap_or(i64::MAX));
    Ok(json!({
        "sessionId": info.session_id,
        "session": fp,
        "sandbox": iso.provider,
        "isolation": iso.tier.as_str(),
        "softwareIdentity": software,
        "expiresUnixMs": expires.to_string(),
        "idleTimeoutMs": info.idle_timeout_ms.min(u32::MAX.into()),
    }))
}

async fn session_run(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
    started: Instant,
) -> Result<Value, ConnectError> {
    let env = Envelope::read(m)?;
    let id = session_id(m)?;
    let payload = payload(m)?;
    let (language, code, files) = match &payload {
        Payload::Cell {
            language,
            code,
            files,
        } => {
            let language = match language.as_str() {
                "python" => Language::Python,
                "javascript" => Language::Javascript,
                _ => return Err(invalid("a cell's language is javascript or python")),
            };
            (language, code.clone(), files.clone())
        }
        Payload::None => return Err(invalid("the payload is empty")),
        _ => {
            return Err(unsupported(
                "a session runs cells; JavaScript runs and projects in a session are not supported",
            ));
        }
    };
    if code.is_empty() {
        return Err(invalid("a cell needs code"));
    }
    let facts = env.facts(&payload);
    let session = match valid_session_id(&id)
        .then(|| app.connect_sessions.get(&caller.id, &id))
        .flatten()
    {
        Some(s) => s,
        None => return Err(gone(app, caller, &id)),
    };
    env.check_software(&session.software_identity)?;
    let mut req = RunRequest {
        language: Some(language),
        code: Some(code),
        files: input_files(&files),
        limits: env.limits(caller),
        minimum_isolation: env.floor,
        ..RunRequest::default()
    };
    app.bind_to_caller(caller, &mut req).map_err(from_api)?;
    app.check_audit().map_err(from_api)?;
    // Admitted before it waits, so that a caller's calls queued on its
    // sessions count against its own concurrency cap: the queue is bounded
    // per caller, and no one else's runs wait for it.
    let permit = app
        .quotas
        .admit(caller)
        .map_err(|s| from_api(app.shed(s)))?;
    // One call at a time, in arrival order; the chain moves under it.
    let mut chain = session.chain.lock().await;
    if !app.sandbox.session_open(&caller.id, &id) {
        return Err(gone(app, caller, &id));
    }
    app.metrics.set_inflight(app.quotas.inflight());
    let started_ms = now_ms();
    let ev = app
        .sandbox
        .evaluate(&caller.id, &id, &req, Turn::Wait)
        .await;
    let ended_ms = now_ms();
    drop(permit);
    app.metrics.set_inflight(app.quotas.inflight());
    app.metrics.set_sessions(app.sandbox.session_total());
    let r = &ev.result;
    let mut audit = app.run_record("session_run", caller, &req, r, started);
    audit.protocol = Some("connect");
    audit.trace_id = env.trace_id.clone();
    if r.status == Status::Refused {
        let _ = app.settle(caller, &req, r, audit).await;
        if r.error_code() == Some("unknown_session") {
            return Err(gone(app, caller, &id));
        }
        return Err(run_error(r));
    }
    let iso = &r.isolation;
    let evidence = Evidence {
        provider: iso.provider.clone(),
        isolation: iso.tier.as_str().to_owned(),
        environment: r.guest.clone().unwrap_or_default(),
        software_identity: session.software_identity.clone(),
    };
    let base = RunRecord {
        request_sha256: facts.digest(),
        software_rule_id: env.rule_id(),
        started_unix_ms: started_ms,
        ended_unix_ms: ended_ms,
        session: session.fingerprint.clone(),
        sequence: chain.calls + 1,
        previous_sha256: chain.last.clone(),
        ..RunRecord::default()
    };
    let result = ResultFacts::Cell {
        output: output(r, true),
        interpreter_started: ev.interpreter_started,
        interpreter_ended: ev.interpreter_ended,
    };
    let (body, rec) = run_response(&result, &evidence, base.clone(), ended_ms - started_ms);
    audit.record_sha256 = Some(rec.record_sha256.clone());
    if let Err(e) = app.settle(caller, &req, r, audit).await {
        // The cell ran and cannot be answered: its record continues the
        // chain, unanswered, so the client can account for it.
        let unanswered = RunRecord {
            version: record::VERSION,
            unanswered: "unavailable".into(),
            provider: evidence.provider,
            isolation: evidence.isolation,
            environment: evidence.environment,
            software_identity: evidence.software_identity,
            ..base
        }
        .seal();
        chain.calls = unanswered.sequence;
        chain.last = unanswered.record_sha256.clone();
        let mut c = ConnectError::unmarked("unavailable", e.message);
        c.unanswered = Some(Box::new(unanswered));
        return Err(c);
    }
    chain.calls = rec.sequence;
    chain.last = rec.record_sha256.clone();
    let mut out = json!({ "run": body });
    if let Some(end) = app.sandbox.session_ended(&caller.id, &id) {
        out["ended"] = End::of(end).json_name().into();
        out["endDetail"] = end.as_str().into();
    }
    Ok(out)
}

async fn close_session(app: &App, caller: &Caller, m: &Msg<'_>) -> Result<Value, ConnectError> {
    let id = session_id(m)?;
    let session = match valid_session_id(&id)
        .then(|| app.connect_sessions.get(&caller.id, &id))
        .flatten()
    {
        Some(s) => s,
        None => return Err(gone(app, caller, &id)),
    };
    // After any call in progress: its record is the last.
    let chain = session.chain.lock().await;
    let end = if app.sandbox.close_session(&caller.id, &id) {
        End::Closed
    } else {
        match app.sandbox.session_ended(&caller.id, &id) {
            Some(e) => End::of(e),
            None => End::Expired,
        }
    };
    app.connect_sessions.remove(&id);
    app.metrics.set_sessions(app.sandbox.session_total());
    let mut rec = app.base_record("session_close", caller, &app.sandbox.isolation());
    rec.protocol = Some("connect");
    rec.session_id = Some(session.fingerprint.clone());
    rec.outcome = "ok".into();
    // The session is closed whatever happens to the record; a failed write
    // still marks the log unhealthy, which stops further runs.
    let _ = app.audit.record(&rec).await;
    let mut out = json!({
        "session": session.fingerprint,
        "ended": end.json_name(),
    });
    if chain.calls > 0 {
        out["calls"] = chain.calls.to_string().into();
        out["lastRecordSha256"] = chain.last.clone().into();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Everything a request goes through before dispatch, on one body.
    fn read_all(body: &[u8]) {
        if let Ok(m) = json::parse(body) {
            let _ = m.int("protocol", 0, u32::MAX.into());
            let _ = Envelope::read(&m);
            let _ = payload(&m);
            let _ = session_id(&m);
            let _ = m.strs("languages");
        }
    }

    #[test]
    fn mangled_requests_are_refused_never_a_panic() {
        let good = format!(
            r#"{{"protocol":4,"minimumIsolation":"process","timeoutMs":"30000","traceId":"t-1","softwareRule":{{"mode":"approved","identities":["a:b","c:d"]}},"sessionId":"00112233445566778899aabbccddeeff","project":{{"files":[{{"path":"a/b.txt","content":"x"}}],"steps":["{}"],"artifacts":["out.txt"]}},"cell":{{"language":"python","code":"1","files":[]}},"module":{{"rows":[{{"values":[1,"NaN"]}}],"endTime":1e308}}}}"#,
            PYTHON_STEP.replace('"', "\\\"")
        );
        let good = good.as_bytes();
        assert!(json::parse(good).is_ok());
        // Every prefix.
        for n in 0..good.len() {
            read_all(&good[..n]);
        }
        // Byte flips and splices, from a fixed seed.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"{}[]\":,0123456789-eE.nulltruefalse\\u00\xff ";
        for _ in 0..20_000 {
            let mut b = good.to_vec();
            for _ in 0..(next() % 4 + 1) {
                let i = (next() as usize) % b.len();
                b[i] = alphabet[(next() as usize) % alphabet.len()];
            }
            read_all(&b);
        }
        // Deep nesting stops at the parser's depth limit.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(json::parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn the_request_id_is_echoed_only_when_exactly_one_is_valid() {
        let mut h = HeaderMap::new();
        assert!(request_id(&h).is_none());
        h.append(
            REQUEST_ID,
            HeaderValue::from_static("0123456789abcdef0123456789abcdef"),
        );
        assert!(request_id(&h).is_some());
        h.append(
            REQUEST_ID,
            HeaderValue::from_static("0123456789abcdef0123456789abcdef"),
        );
        assert!(request_id(&h).is_none(), "two values");
        let mut h = HeaderMap::new();
        h.append(
            REQUEST_ID,
            HeaderValue::from_static("0123456789ABCDEF0123456789ABCDEF"),
        );
        assert!(request_id(&h).is_none(), "upper case");
    }

    #[test]
    fn timeouts_are_defaulted_and_clamped_never_refused() {
        let env =
            |t: &str| Envelope::read(&json::parse(t.as_bytes()).expect("json")).expect("envelope");
        assert_eq!(env(r#"{"timeoutMs": 30000}"#).timeout_ms, 30000);
        assert_eq!(env(r#"{}"#).timeout_ms, 0);
        assert!(
            Envelope::read(&json::parse(br#"{"timeoutMs": 2147483648}"#).expect("json")).is_err()
        );
        assert!(
            env(r#"{"traceId": "bad id!"}"#).trace_id.is_none(),
            "dropped, not refused"
        );
    }
}
