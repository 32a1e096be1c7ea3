//! The HTTP API (design §5): routes, handlers and the state they share.
//!
//! Each run-starting handler goes through the same steps, in this order:
//! authenticate (401), scope (403), draining (503), rate limit (429), read
//! and strictly parse the bounded body (413/400), grant profiles the caller
//! may use (403), limits within the caller's envelope (400), audit log
//! healthy (503), concurrency caps and the daily allowance (429/503), then
//! the library call — which checks the isolation floor immediately before
//! dispatch — and, before the answer leaves, a durable audit record.

use crate::audit::{AuditLog, AuditRecord, now_rfc3339};
use crate::callers::{Caller, Callers, Scope, bearer};
use crate::error::{ApiError, parse_json};
use crate::metrics::Metrics;
use crate::quota::{Quotas, Shed};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use bytes::Bytes;
use http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use plimsoll::envelope::Limits;
use plimsoll::run::Language;
use plimsoll::session::SessionInfo;
use plimsoll::trace::CallOutcome;
use plimsoll::{Envelope, Isolation, RunRequest, RunResult, Sandbox, Status, Tier};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What every handler shares.
pub struct App {
    pub sandbox: Arc<Sandbox>,
    pub callers: Callers,
    pub quotas: Quotas,
    pub audit: AuditLog,
    pub metrics: Metrics,
    /// Set on SIGTERM: new runs are refused with 503 `draining`.
    pub draining: AtomicBool,
    /// Names of the components registered from `PLIMSOLL_COMPONENTS_DIR`.
    pub components: Vec<(String, String)>,
    /// Largest request body, bytes.
    pub max_body: usize,
    /// KiB of request bodies held at once, across all requests
    /// (`PLIMSOLL_MAX_BODY_BYTES_IN_FLIGHT`): with many connections each
    /// sending a large body, memory stays bounded.
    pub bodies: Arc<tokio::sync::Semaphore>,
    /// Each caller's share of `bodies`, KiB: at most
    /// `max(PLIMSOLL_MAX_BODY_BYTES, in-flight budget / callers)`, so that
    /// no caller can hold the whole budget ([`body_share_kib`]).
    pub body_shares: std::collections::HashMap<String, Arc<tokio::sync::Semaphore>>,
    /// Time a client has to send its body.
    pub body_timeout: Duration,
    /// Sessions one owner (of one caller) may hold over the protocol
    /// (`SANDBOX_MAX_SESSIONS_PER_OWNER`); 0: no per-owner cap.
    pub max_sessions_per_owner: u32,
    /// The protocol's sessions: their chains of records.
    pub connect_sessions: crate::connect::sessions::Sessions,
}

/// One caller's share of the in-flight body budget, in KiB: the budget
/// divided among the callers, but at least one largest body, and never
/// more than the budget.
pub fn body_share_kib(budget_bytes: u64, max_body: usize, callers: usize) -> usize {
    let budget = budget_bytes / 1024;
    let one_body = (max_body as u64) / 1024 + 1;
    let share = (budget / callers.max(1) as u64).max(one_body).min(budget);
    usize::try_from(share)
        .unwrap_or(usize::MAX)
        .clamp(1, tokio::sync::Semaphore::MAX_PERMITS)
}

/// The API router (without the metrics listener).
pub fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new()
        .route("/v1/runs", post(create_run))
        .route("/v1/sessions", post(open_session))
        .route("/v1/sessions/{id}/runs", post(session_run))
        .route("/v1/sessions/{id}", delete(close_session))
        .route("/v1/info", get(info))
        .route(
            "/plimsoll.v1.SandboxService/{procedure}",
            post(crate::connect::handle),
        )
        .route("/v1/openapi.json", get(openapi))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .fallback(not_found)
        .with_state(app.clone())
        // MCP over streamable HTTP, authenticated like the routes above.
        .merge(crate::mcp::router(app))
}

/// The metrics router.
pub fn metrics_router(app: Arc<App>) -> axum::Router {
    axum::Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(app)
}

async fn not_found() -> ApiError {
    ApiError::new("not_found", "no such route")
}

/// A request to open a session.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionRequest {
    /// The interpreter to run. Exactly one of `language` and `component`.
    #[serde(default)]
    pub language: Option<Language>,
    /// A registered interpreter component, by name or identity.
    #[serde(default)]
    pub component: Option<String>,
    /// Limits for opening the session (each evaluation has its own).
    #[serde(default)]
    pub limits: Limits,
    /// The exact guest identity required.
    #[serde(default)]
    pub require_identity: Option<String>,
    /// The weakest isolation accepted.
    #[serde(default)]
    pub minimum_isolation: Option<Tier>,
    /// The interpreter guest for `language` (`"scientific"` for Python's
    /// scientific guest), as in a run request.
    #[serde(default)]
    pub guest: Option<String>,
}

/// What `GET /v1/info` answers.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Info {
    /// The daemon's version.
    pub version: String,
    /// The provider's name.
    pub provider: String,
    /// The isolation runs get, with its evidence.
    pub isolation: Isolation,
    /// The operator-wide isolation floor, if any.
    pub min_isolation: Option<Tier>,
    /// Interpreter guest identities, by language (`python/scientific` for
    /// the scientific Python guest).
    pub guests: BTreeMap<String, String>,
    /// Registered components: name → identity.
    pub components: BTreeMap<String, String>,
    /// The calling caller's own view.
    pub caller: CallerInfo,
    /// Session timeouts.
    pub session_idle_timeout_sec: u64,
    pub session_lifetime_sec: u64,
}

/// The calling caller's limits.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CallerInfo {
    pub id: String,
    pub scopes: Vec<String>,
    /// Grant profiles it may attach (`null`: every profile, insecure mode).
    pub grant_profiles: Option<Vec<String>>,
    /// Its envelope: requests may lower it.
    pub envelope: Envelope,
    pub rate_per_min: u32,
    pub max_concurrent: u32,
    pub max_sessions: u32,
    pub cpu_seconds_per_day: Option<u64>,
    /// Run seconds used today (UTC).
    pub cpu_seconds_used_today: f64,
}

impl App {
    pub(crate) fn authorize(
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

    pub(crate) fn shed(&self, s: Shed) -> ApiError {
        self.metrics.shed(s.code());
        let msg = match s {
            Shed::RateLimited { .. } => "this caller's rate limit is reached",
            Shed::CallerConcurrency => "this caller already has its maximum of runs in flight",
            Shed::HostConcurrency => {
                "the host has its maximum of runs in flight; try again shortly"
            }
            Shed::CpuAllowance { .. } => "this caller's run seconds for today are spent",
        };
        let e = ApiError::new(s.code(), msg);
        match s {
            Shed::RateLimited { retry_after_secs } | Shed::CpuAllowance { retry_after_secs } => {
                e.retry_after(retry_after_secs)
            }
            Shed::CallerConcurrency | Shed::HostConcurrency => e.retry_after(1),
        }
    }

    pub(crate) fn check_open(&self) -> Result<(), ApiError> {
        if self.draining.load(Ordering::Acquire) {
            self.metrics.shed("draining");
            return Err(ApiError::new(
                "draining",
                "the daemon is shutting down; send the request to another instance",
            ));
        }
        Ok(())
    }

    pub(crate) fn check_audit(&self) -> Result<(), ApiError> {
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
    pub(crate) fn bind_to_caller(
        &self,
        caller: &Caller,
        req: &mut RunRequest,
    ) -> Result<(), ApiError> {
        check_profiles(caller, &req.grants)?;
        let env = caller
            .envelope
            .lowered_by(&req.limits)
            .map_err(|e| ApiError::new("invalid_limits", e.to_string()))?;
        req.limits = env.as_limits();
        Ok(())
    }

    pub(crate) fn base_record(
        &self,
        event: &'static str,
        caller: &Caller,
        iso: &Isolation,
    ) -> AuditRecord {
        AuditRecord {
            time: now_rfc3339(),
            event,
            caller: Some(caller.id.clone()),
            provider: iso.provider.clone(),
            tier: iso.tier.as_str().to_owned(),
            ..AuditRecord::default()
        }
    }

    pub(crate) fn run_record(
        &self,
        event: &'static str,
        caller: &Caller,
        req: &RunRequest,
        r: &RunResult,
        started: Instant,
    ) -> AuditRecord {
        let mut rec = self.base_record(event, caller, &r.isolation);
        rec.run_id = Some(r.run_id.clone());
        // The session's fingerprint, never its id (a capability).
        rec.session_id = r
            .session_id
            .as_deref()
            .map(crate::connect::record::fingerprint);
        rec.guest = r.guest.clone();
        // What ran, never what the caller claimed.
        rec.language = ran_language(req, r);
        rec.grant_profiles = req.grants.clone();
        if let Some(code) = &req.code {
            rec.code_bytes = Some(code.len() as u64);
            rec.code_sha256 = Some(hex::encode(Sha256::digest(code.as_bytes())));
        }
        rec.outcome = r.status.as_str().to_owned();
        rec.error_code = r.error.as_ref().map(|e| e.code.clone());
        rec.exit_code = r.exit_code;
        rec.wall_ms = r.usage.wall_ms;
        rec.instantiate_ms = r.usage.instantiate_ms;
        rec.handling_ms = started.elapsed().as_secs_f64() * 1e3;
        for o in CallOutcome::ALL {
            let n = r.calls.count(o);
            if n > 0 {
                rec.broker_calls.insert(o.as_str(), n);
            }
        }
        rec.broker_calls_uncounted = r.calls.dropped;
        rec
    }

    /// Accounts for a finished run, makes its audit record durable, and
    /// builds the answer. A run whose record cannot be written is not
    /// answered with its result.
    async fn finish(
        &self,
        event: &'static str,
        caller: &Caller,
        req: &RunRequest,
        r: RunResult,
        started: Instant,
    ) -> Response {
        let rec = self.run_record(event, caller, req, &r, started);
        if let Err(e) = self.settle(caller, req, &r, rec).await {
            return e.into_response();
        }
        if r.status == Status::Refused {
            let (code, message) = r
                .error
                .map(|e| (e.code, e.message))
                .unwrap_or_else(|| ("refused".into(), "the run was refused".into()));
            let mut e = ApiError::new(&code, message);
            e.run_id = Some(r.run_id);
            return e.into_response();
        }
        (StatusCode::OK, Json(r)).into_response()
    }
}

impl App {
    /// Charges a finished run to its caller's allowance, counts it, and
    /// makes its audit record `rec` durable. An error means the run must
    /// not be answered with its result.
    pub(crate) async fn settle(
        &self,
        caller: &Caller,
        req: &RunRequest,
        r: &RunResult,
        rec: AuditRecord,
    ) -> Result<(), ApiError> {
        if r.status != Status::Refused {
            self.quotas
                .ledger
                .charge(&caller.id, r.usage.wall_ms.ceil() as u64);
        }
        let language = ran_language(req, r).unwrap_or("component");
        self.metrics.run(&caller.id, language, r);
        self.audit
            .record(&rec)
            .await
            .map_err(|e| ApiError::new("audit_unavailable", e.to_string()))
    }
}

pub(crate) fn check_profiles(caller: &Caller, grants: &[String]) -> Result<(), ApiError> {
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

/// What a request's body holds of the body budgets until the request is
/// done: its caller's share and the host-wide budget, in KiB, for the
/// bytes actually received.
pub struct BodyPermit {
    share: Option<tokio::sync::OwnedSemaphorePermit>,
    global: Option<tokio::sync::OwnedSemaphorePermit>,
    kib: u32,
}

impl BodyPermit {
    fn none() -> Self {
        BodyPermit {
            share: None,
            global: None,
            kib: 0,
        }
    }

    fn take(
        kib: u32,
        share: &Arc<tokio::sync::Semaphore>,
        global: &Arc<tokio::sync::Semaphore>,
    ) -> Result<
        (
            tokio::sync::OwnedSemaphorePermit,
            tokio::sync::OwnedSemaphorePermit,
        ),
        &'static str,
    > {
        let s = share
            .clone()
            .try_acquire_many_owned(kib)
            .map_err(|_| "caller")?;
        let g = global
            .clone()
            .try_acquire_many_owned(kib)
            .map_err(|_| "host")?;
        Ok((s, g))
    }

    /// Grows the reservation to cover `bytes` received so far. Fails,
    /// holding what it had, when the caller's share or the host's budget
    /// has no room: the caller waits on itself, never on others.
    fn cover(
        &mut self,
        bytes: usize,
        most: usize,
        share: &Arc<tokio::sync::Semaphore>,
        global: &Arc<tokio::sync::Semaphore>,
    ) -> Result<(), &'static str> {
        let kib = |b: usize| u32::try_from(b / 1024 + 1).unwrap_or(u32::MAX);
        let need = kib(bytes);
        if need <= self.kib {
            return Ok(());
        }
        // Reserve ahead in steps of 64 KiB, so that a large body takes a
        // few dozen reservations rather than one per frame; never past
        // the largest body a request may have.
        let exact = need - self.kib;
        let ahead = exact
            .max(64)
            .min(kib(most).saturating_sub(self.kib))
            .max(exact);
        // Ahead if there is room, else exactly what arrived.
        let (s, g, more) = match Self::take(ahead, share, global) {
            Ok((s, g)) => (s, g, ahead),
            Err(_) if ahead > exact => {
                let (s, g) = Self::take(exact, share, global)?;
                (s, g, exact)
            }
            Err(e) => return Err(e),
        };
        match &mut self.share {
            Some(p) => p.merge(s),
            None => self.share = Some(s),
        }
        match &mut self.global {
            Some(p) => p.merge(g),
            None => self.global = Some(g),
        }
        self.kib += more;
        Ok(())
    }
}

/// Reads `caller`'s body of at most `max` bytes within `timeout`. Only
/// JSON (or no content type) is accepted. What it receives is reserved, as
/// it arrives, against the caller's share of the in-flight budget and the
/// host-wide budget (a declared `Content-Length` reserves nothing: a slow
/// upload holds only what it has sent); the permit holds both until the
/// request is done.
pub(crate) async fn read_body(
    app: &App,
    caller: &Caller,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Bytes, BodyPermit), ApiError> {
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("");
        let essence = ct.split(';').next().unwrap_or("").trim();
        if !essence.eq_ignore_ascii_case("application/json") {
            return Err(ApiError::new(
                "unsupported_media_type",
                "the body must be application/json",
            ));
        }
    }
    let too_large = || {
        ApiError::new(
            "body_too_large",
            format!("the body is larger than {} bytes", app.max_body),
        )
    };
    if let Some(len) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > app.max_body as u64
    {
        return Err(too_large());
    }
    let Some(share) = app.body_shares.get(&caller.id).cloned() else {
        return Err(ApiError::new("forbidden", "unknown caller"));
    };
    let mut permit = BodyPermit::none();
    let mut buf = bytes::BytesMut::new();
    let mut body = body;
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame
                .map_err(|_| ApiError::new("invalid_request", "the body could not be read"))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if buf.len().saturating_add(data.len()) > app.max_body {
                return Err(too_large());
            }
            if let Err(whose) =
                permit.cover(buf.len() + data.len(), app.max_body, &share, &app.bodies)
            {
                app.metrics.shed("bodies_in_flight");
                return Err(ApiError::new(
                    "busy",
                    if whose == "caller" {
                        "this caller's request bodies in flight are at its share of the budget; try again shortly"
                    } else {
                        "too many request bodies are being received; try again shortly"
                    },
                )
                .retry_after(1));
            }
            buf.extend_from_slice(&data);
        }
        Ok(())
    };
    match tokio::time::timeout(app.body_timeout, read).await {
        Err(_) => Err(ApiError::new(
            "request_timeout",
            "the body did not arrive in time",
        )),
        Ok(Err(e)) => Err(e),
        Ok(Ok(())) => Ok((buf.freeze(), permit)),
    }
}

/// The first steps of every request that starts a run or a session:
/// authenticate with the `code:run` scope, refuse while draining, spend
/// one request of the caller's rate, read the bounded body.
async fn begin(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> Result<(Arc<Caller>, Bytes, BodyPermit), ApiError> {
    let caller = app.authorize(headers, Some(Scope::CodeRun))?;
    app.check_open()?;
    app.quotas.check_rate(&caller).map_err(|s| app.shed(s))?;
    let (bytes, permit) = read_body(app, &caller, headers, body).await?;
    Ok((caller, bytes, permit))
}
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return ApiError::into_response(e),
        }
    };
}

/// Runs code or a component once, in a fresh instance.
#[utoipa::path(
    post, path = "/v1/runs", tag = "runs", request_body = RunRequest,
    responses(
        (status = 200, description = "The run happened (any status but `refused`)", body = RunResult),
        (status = 400, description = "Invalid request", body = ApiError),
        (status = 401, description = "Missing or wrong token", body = ApiError),
        (status = 403, description = "Scope, grant profile or isolation floor", body = ApiError),
        (status = 413, description = "Body too large", body = ApiError),
        (status = 429, description = "Rate, concurrency or daily allowance", body = ApiError),
        (status = 503, description = "Host busy, draining, provider disabled or audit log down", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn create_run(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let started = Instant::now();
    let (caller, bytes, _body_permit) = tri!(begin(&app, &headers, body).await);
    let mut req: RunRequest = tri!(parse_json(&bytes));
    drop(bytes);
    tri!(app.bind_to_caller(&caller, &mut req));
    tri!(app.check_audit());
    let permit = tri!(app.quotas.admit(&caller).map_err(|s| app.shed(s)));
    app.metrics.set_inflight(app.quotas.inflight());
    let r = app.sandbox.run_as(&caller.id, &req).await;
    drop(permit);
    app.metrics.set_inflight(app.quotas.inflight());
    app.finish("run", &caller, &req, r, started).await
}

/// Opens a session: one interpreter instance for many evaluations.
#[utoipa::path(
    post, path = "/v1/sessions", tag = "sessions", request_body = SessionRequest,
    responses(
        (status = 201, description = "The session is open", body = SessionInfo),
        (status = 400, description = "Invalid request", body = ApiError),
        (status = 401, description = "Missing or wrong token", body = ApiError),
        (status = 403, description = "Scope or isolation floor", body = ApiError),
        (status = 429, description = "Session cap or rate", body = ApiError),
        (status = 503, description = "Host busy or draining", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn open_session(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let started = Instant::now();
    let (caller, bytes, _body_permit) = tri!(begin(&app, &headers, body).await);
    let sreq: SessionRequest = tri!(parse_json(&bytes));
    let mut req = RunRequest {
        language: sreq.language,
        component: sreq.component,
        limits: sreq.limits,
        require_identity: sreq.require_identity,
        minimum_isolation: sreq.minimum_isolation,
        guest: sreq.guest,
        ..RunRequest::default()
    };
    tri!(app.bind_to_caller(&caller, &mut req));
    tri!(app.check_audit());
    let Some(_lock) = app.quotas.session_lock(&caller).await else {
        return ApiError::new("forbidden", "unknown caller").into_response();
    };
    if app.sandbox.session_count(&caller.id) >= caller.max_sessions as usize {
        app.metrics.shed("session_limit");
        return ApiError::new(
            "session_limit",
            format!(
                "this caller already has its maximum of {} open sessions",
                caller.max_sessions
            ),
        )
        .into_response();
    }
    let iso = app.sandbox.isolation();
    let opened = app.sandbox.open_session(&caller.id, &req).await;
    app.metrics.set_sessions(app.sandbox.session_total());
    let mut rec = app.base_record("session_open", &caller, &iso);
    rec.language = req.language.map(Language::as_str);
    rec.handling_ms = started.elapsed().as_secs_f64() * 1e3;
    match &opened {
        Ok(info) => {
            rec.session_id = Some(crate::connect::record::fingerprint(&info.session_id));
            rec.guest = Some(info.guest.clone());
            rec.outcome = "ok".into();
        }
        Err(e) => {
            rec.outcome = "refused".into();
            rec.error_code = Some(e.code.clone());
        }
    }
    if let Err(e) = app.audit.record(&rec).await {
        if let Ok(info) = &opened {
            app.sandbox.close_session(&caller.id, &info.session_id);
        }
        return ApiError::new("audit_unavailable", e.to_string()).into_response();
    }
    match opened {
        Ok(info) => (StatusCode::CREATED, Json(info)).into_response(),
        Err(e) => ApiError::new(&e.code, e.message).into_response(),
    }
}

/// The language of the guest that ran (from its identity); for a run that
/// resolved no guest, the request's (a closed set of names either way).
pub(crate) fn ran_language(req: &RunRequest, r: &RunResult) -> Option<&'static str> {
    match r.guest.as_deref() {
        Some(identity) => Language::from_identity(identity).map(Language::as_str),
        None => req.language.map(Language::as_str),
    }
}

pub(crate) fn valid_session_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Evaluates code in an open session.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/runs", tag = "sessions", request_body = RunRequest,
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 200, description = "The evaluation happened", body = RunResult),
        (status = 404, description = "No such session for this caller", body = ApiError),
        (status = 409, description = "The session is busy", body = ApiError),
        (status = 429, description = "Rate, concurrency or daily allowance", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn session_run(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let (caller, bytes, _body_permit) = tri!(begin(&app, &headers, body).await);
    let mut req: RunRequest = tri!(parse_json(&bytes));
    drop(bytes);
    tri!(app.bind_to_caller(&caller, &mut req));
    tri!(app.check_audit());
    // A protocol 4 session's calls are links of its chain of records: one
    // made here would be missing from it, so here it does not exist.
    if !valid_session_id(&id) || app.connect_sessions.get(&caller.id, &id).is_some() {
        return ApiError::new(
            "unknown_session",
            "no session with that id is open for this caller",
        )
        .into_response();
    }
    let permit = tri!(app.quotas.admit(&caller).map_err(|s| app.shed(s)));
    app.metrics.set_inflight(app.quotas.inflight());
    let r = app.sandbox.run_in_session(&caller.id, &id, &req).await;
    drop(permit);
    app.metrics.set_inflight(app.quotas.inflight());
    app.metrics.set_sessions(app.sandbox.session_total());
    app.finish("session_run", &caller, &req, r, started).await
}

/// Closes a session.
#[utoipa::path(
    delete, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 204, description = "Closed"),
        (status = 404, description = "No such session for this caller", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn close_session(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let caller = tri!(app.authorize(&headers, Some(Scope::CodeRun)));
    let closed = valid_session_id(&id)
        && app.connect_sessions.get(&caller.id, &id).is_none()
        && app.sandbox.close_session(&caller.id, &id);
    app.metrics.set_sessions(app.sandbox.session_total());
    if !closed {
        return ApiError::new(
            "unknown_session",
            "no session with that id is open for this caller",
        )
        .into_response();
    }
    let mut rec = app.base_record("session_close", &caller, &app.sandbox.isolation());
    rec.session_id = Some(crate::connect::record::fingerprint(&id));
    rec.outcome = "ok".into();
    // The session is closed whatever happens to the record; a failed write
    // still marks the log unhealthy, which stops further runs.
    let _ = app.audit.record(&rec).await;
    StatusCode::NO_CONTENT.into_response()
}

/// The provider, its isolation and evidence, the guests, and the caller's
/// limits.
#[utoipa::path(
    get, path = "/v1/info", tag = "info",
    responses(
        (status = 200, description = "What this daemon offers this caller", body = Info),
        (status = 401, description = "Missing or wrong token", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn info(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let caller = tri!(app.authorize(&headers, None));
    let iso = app.sandbox.isolation();
    let limits = app.sandbox.session_limits();
    let info = Info {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        provider: iso.provider.clone(),
        isolation: iso,
        min_isolation: app.sandbox.min_isolation(),
        guests: app.sandbox.guest_identities().into_iter().collect(),
        components: app.components.iter().cloned().collect(),
        caller: CallerInfo {
            id: caller.id.clone(),
            scopes: caller
                .scopes
                .iter()
                .map(|s| s.as_str().to_owned())
                .collect(),
            grant_profiles: caller
                .grant_profiles
                .as_ref()
                .map(|s| s.iter().cloned().collect()),
            envelope: caller.envelope,
            rate_per_min: caller.rate_per_min,
            max_concurrent: caller.max_concurrent,
            max_sessions: caller.max_sessions,
            cpu_seconds_per_day: caller.cpu_seconds_per_day,
            cpu_seconds_used_today: app.quotas.ledger.used_ms(&caller.id) as f64 / 1e3,
        },
        session_idle_timeout_sec: limits.idle_timeout.as_secs(),
        session_lifetime_sec: limits.lifetime.as_secs(),
    };
    Json(info).into_response()
}

/// The OpenAPI 3 document of this API.
pub async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::document(),
    )
        .into_response()
}

/// Liveness: the process answers.
pub async fn healthz() -> Response {
    Json(serde_json::json!({"status": "ok"})).into_response()
}

/// Readiness: runs can be served (a provider that runs, a healthy audit
/// log, not draining).
pub async fn readyz(State(app): State<Arc<App>>) -> Response {
    let why = if app.draining.load(Ordering::Acquire) {
        Some("draining")
    } else if !app.audit.healthy() {
        Some("the audit log cannot be written")
    } else if app.sandbox.provider_name() == "disabled" {
        Some("the provider is disabled")
    } else {
        None
    };
    match why {
        None => Json(serde_json::json!({"status": "ready"})).into_response(),
        Some(w) => ApiError::new("not_ready", w).into_response(),
    }
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    app.metrics.set_inflight(app.quotas.inflight());
    app.metrics.set_sessions(app.sandbox.session_total());
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.encode(),
    )
        .into_response()
}
