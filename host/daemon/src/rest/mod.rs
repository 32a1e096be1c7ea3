//! REST (design §5): the `/v1` routes, an adapter over the service layer.
//!
//! Each run-starting handler admits its request through the service
//! ([`crate::service::admission`]: authenticate, scope, draining, rate, the
//! bounded body, grant profiles, limits, audit log, concurrency and the
//! daily allowance), parses the body strictly, calls the library — which
//! checks the isolation floor immediately before dispatch — and, before
//! the answer leaves, makes the run's audit record durable. The OpenAPI
//! document of these routes is [`openapi`].

pub mod openapi;

use crate::error::{ApiError, parse_json};
use crate::service::{App, SessionOpen, valid_session_id};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use http::{HeaderMap, StatusCode, header};
use plimsoll::envelope::Limits;
use plimsoll::run::Language;
use plimsoll::session::SessionInfo;
use plimsoll::{Envelope, Isolation, RunRequest, RunResult, Status, Tier};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The REST routes, health included.
pub fn router(app: Arc<App>) -> axum::Router {
    axum::Router::new()
        .route("/v1/runs", post(create_run))
        .route("/v1/sessions", post(open_session))
        .route("/v1/sessions/{id}/runs", post(session_run))
        .route("/v1/sessions/{id}", delete(close_session))
        .route("/v1/sessions/{id}/snapshot", post(snapshots::snapshot))
        .route("/v1/sessions/{id}/pause", post(snapshots::pause))
        .route("/v1/sessions/{id}/fork", post(snapshots::fork))
        .route("/v1/snapshots/import", post(snapshots::import))
        .route(
            "/v1/snapshots/{id}",
            get(snapshots::get).delete(snapshots::delete),
        )
        .route("/v1/snapshots/{id}/export", get(snapshots::export))
        .route("/v1/info", get(info))
        .route("/v1/openapi.json", get(openapi))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(app)
}

/// The metrics listener's routes.
pub fn metrics_router(app: Arc<App>) -> axum::Router {
    axum::Router::new()
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(app)
}

/// The answer for a route no wire serves.
pub async fn not_found() -> ApiError {
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
    /// Resume this snapshot of the caller's instead (docs/snapshots.md):
    /// a session with exactly its state. `language` may come with it and
    /// must then be the snapshot's; `component` and `guest` may not.
    #[serde(default)]
    pub from_snapshot: Option<String>,
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
    /// the scientific Python guest): the guests that are ready.
    pub guests: BTreeMap<String, String>,
    /// Every configured interpreter guest and where it stands: `ready`,
    /// `loading` (being compiled for this machine; runs wait for it) or
    /// `failed`.
    pub guest_states: BTreeMap<String, String>,
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
    /// Run seconds used today (UTC): the fleet's, in a fleet whose shared
    /// state answers (`usage.scope`).
    pub cpu_seconds_used_today: f64,
    /// What the caller holds now, and where that was counted.
    pub usage: crate::service::usage::CallerUsage,
}

/// Accounts for a finished run, makes its audit record durable, and
/// builds the answer. A run whose record cannot be written is not answered
/// with its result.
async fn finish(
    app: &App,
    event: &'static str,
    caller: &crate::callers::Caller,
    req: &RunRequest,
    r: RunResult,
    started: Instant,
) -> Response {
    let rec = app.run_record(event, caller, req, &r, started);
    if let Err(e) = app.settle(caller, req, &r, rec).await {
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

macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return ApiError::into_response(e),
        }
    };
}

// After `tri!`, which it uses.
pub mod snapshots;

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
    let (caller, bytes, _body_permit, pre) = tri!(app.begin_run(&headers, body, false).await);
    let mut req: RunRequest = tri!(parse_json(&bytes));
    drop(bytes);
    let permit = tri!(app.admit_run_with(&caller, &mut req, pre).await);
    let r = app.sandbox.run_as(&caller.id, &req).await;
    app.run_done(permit);
    finish(&app, "run", &caller, &req, r, started).await
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
    let (caller, bytes, _body_permit) = tri!(app.begin(&headers, body).await);
    let sreq: SessionRequest = tri!(parse_json(&bytes));
    if let Some(id) = &sreq.from_snapshot {
        return resume(&app, &caller, id, sreq.clone()).await;
    }
    let req = RunRequest {
        language: sreq.language,
        component: sreq.component,
        limits: sreq.limits,
        require_identity: sreq.require_identity,
        minimum_isolation: sreq.minimum_isolation,
        guest: sreq.guest,
        ..RunRequest::default()
    };
    let open = SessionOpen {
        req,
        ..SessionOpen::default()
    };
    match app.open_session(&caller, open, started).await {
        Ok(info) => (StatusCode::CREATED, Json(info)).into_response(),
        Err(e) => e.into_response(),
    }
}

/// `POST /v1/sessions` with `from_snapshot`.
async fn resume(
    app: &App,
    caller: &crate::callers::Caller,
    id: &str,
    s: SessionRequest,
) -> Response {
    if s.component.is_some() || s.guest.is_some() || s.require_identity.is_some() {
        return ApiError::new(
            "invalid_request",
            "`from_snapshot` resumes the snapshot's own guests: `component`, `guest` and `require_identity` do not go with it",
        )
        .into_response();
    }
    if let Some(language) = s.language {
        let meta = tri!(app.snapshot_meta(caller, id));
        let first = meta
            .identities
            .first()
            .and_then(|i| Language::from_identity(i));
        if first != Some(language) {
            return ApiError::new("invalid_request", "`language` is not the snapshot's")
                .into_response();
        }
    }
    let req = RunRequest {
        limits: s.limits,
        minimum_isolation: s.minimum_isolation,
        ..RunRequest::default()
    };
    match app.resume_session(caller, id, req).await {
        Ok(info) => (StatusCode::CREATED, Json(info)).into_response(),
        Err(e) => e.into_response(),
    }
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
    // A call on an open session is still served while the daemon drains
    // its sessions.
    let (caller, bytes, _body_permit, pre) = tri!(app.begin_run(&headers, body, true).await);
    let mut req: RunRequest = tri!(parse_json(&bytes));
    drop(bytes);
    // A protocol 4 session's calls are links of its chain of records: one
    // made here would be missing from it, so here it does not exist.
    if !valid_session_id(&id) || app.chained(&caller, &id) {
        return unknown_session().into_response();
    }
    // Not here: in a fleet, perhaps handed over by its draining node, or
    // lost with its node.
    tri!(app.locate_session(&caller, &id).await);
    let permit = tri!(app.admit_run_with(&caller, &mut req, pre).await);
    let r = app.sandbox.run_in_session(&caller.id, &id, &req).await;
    app.run_done(permit);
    app.metrics.set_sessions(app.sandbox.session_total());
    finish(&app, "session_run", &caller, &req, r, started).await
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
    let caller = tri!(app.authorize(&headers, Some(crate::callers::Scope::CodeRun)));
    if app.chained(&caller, &id) {
        return unknown_session().into_response();
    }
    if !app.close_session(&caller, &id, None).await {
        // Handed over by its draining node: taken here, then closed.
        tri!(app.locate_session(&caller, &id).await);
        if !app.close_session(&caller, &id, None).await {
            return app.missing_session(&id).await.into_response();
        }
    }
    StatusCode::NO_CONTENT.into_response()
}

fn unknown_session() -> ApiError {
    ApiError::new(
        "unknown_session",
        "no session with that id is open for this caller",
    )
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
    let usage = app.usage_of(&caller).await;
    let info = Info {
        version: env!("CARGO_PKG_VERSION").to_owned(),
        provider: iso.provider.clone(),
        isolation: iso,
        min_isolation: app.sandbox.min_isolation(),
        guests: app.sandbox.guest_identities().into_iter().collect(),
        guest_states: app
            .sandbox
            .guest_readiness()
            .into_iter()
            .map(|(name, r)| (name, r.as_str().to_owned()))
            .collect(),
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
            cpu_seconds_used_today: usage.0 as f64 / 1e3,
            usage: usage.1,
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
        openapi::document(),
    )
        .into_response()
}

/// Liveness: the process answers.
pub async fn healthz() -> Response {
    Json(serde_json::json!({"status": "ok"})).into_response()
}

/// Readiness: runs can be served (a provider that runs and has proved its
/// tier, every configured guest loaded, a healthy audit log, not
/// draining). The answer lists each guest's state either way.
pub async fn readyz(State(app): State<Arc<App>>) -> Response {
    let states = app.sandbox.guest_readiness();
    let loading: Vec<&str> = states
        .iter()
        .filter(|(_, r)| *r == plimsoll::sandbox::Readiness::Loading)
        .map(|(n, _)| n.as_str())
        .collect();
    let iso = app.sandbox.isolation();
    let starting = iso.wrapper.is_some() && !iso.evidence.checks.iter().all(|c| c.passed);
    let why = if app.draining.load(Ordering::Acquire) {
        Some("draining".to_owned())
    } else if !app.audit.healthy() {
        Some("the audit log cannot be written".to_owned())
    } else if app.sandbox.provider_name() == "disabled" {
        Some("the provider is disabled".to_owned())
    } else if starting {
        Some(format!("{}: {}", iso.provider, iso.evidence.summary))
    } else if !loading.is_empty() {
        Some(format!(
            "guests still compiling for this machine: {}",
            loading.join(", ")
        ))
    } else {
        None
    };
    let guests: BTreeMap<String, &str> = states
        .iter()
        .map(|(n, r)| (n.clone(), r.as_str()))
        .collect();
    match why {
        None => Json(serde_json::json!({"status": "ready", "guests": guests})).into_response(),
        Some(w) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"code": "not_ready", "message": w, "guests": guests})),
        )
            .into_response(),
    }
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    app.metrics.set_inflight(app.quotas.inflight());
    app.metrics.set_sessions(app.sandbox.session_total());
    if let Some(f) = &app.fleet {
        app.metrics.set_shared_state_up(f.up());
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        app.metrics.encode(),
    )
        .into_response()
}
