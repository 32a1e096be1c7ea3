//! The snapshot routes (docs/snapshots.md): snapshot, pause and fork a
//! session; read, delete, export and import a snapshot. A resume is
//! `POST /v1/sessions` with `from_snapshot` ([`super::open_session`]).
//! Each is an adapter over the service layer's snapshot calls.

use crate::error::{ApiError, parse_json};
use crate::service::{App, valid_session_id};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use plimsoll::envelope::Limits;
use plimsoll::session::SessionInfo;
use plimsoll::snapshot::store::Meta;
use plimsoll::{RunRequest, Tier};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// A snapshot, as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct SnapshotInfo {
    /// Its id (64 hex digits): a capability of its caller's, like a
    /// session id.
    pub snapshot_id: String,
    /// The archive's size, bytes (only what the session changed since its
    /// guests started, compressed).
    pub bytes: u64,
    /// The session's first guest's identity; a resume needs this build.
    pub guest_identity: String,
    /// Every guest of the session, in its order.
    pub guest_identities: Vec<String>,
    /// When it was taken (RFC 3339, UTC).
    pub created_at: String,
    /// When it expires (RFC 3339, UTC).
    pub expires_at: String,
    /// The tier the session ran at when it was taken.
    pub taken_at: String,
}

fn rfc3339(ms: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_millis(t).to_string()
}

impl From<Meta> for SnapshotInfo {
    fn from(m: Meta) -> Self {
        SnapshotInfo {
            snapshot_id: m.id,
            bytes: m.bytes,
            guest_identity: m.identities.first().cloned().unwrap_or_default(),
            guest_identities: m.identities,
            created_at: rfc3339(m.created_unix_ms),
            expires_at: rfc3339(m.expires_unix_ms),
            taken_at: m.taken_at,
        }
    }
}

/// A request to fork a session.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkRequest {
    /// How many sessions (1 to 16; default 1). Each counts against the
    /// caller's session cap.
    #[serde(default)]
    pub count: Option<usize>,
    /// The forks' envelope (each evaluation has its own).
    #[serde(default)]
    pub limits: Limits,
    /// The weakest isolation accepted.
    #[serde(default)]
    pub minimum_isolation: Option<Tier>,
}

/// The sessions a fork opened.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ForkInfo {
    pub sessions: Vec<SessionInfo>,
}

fn unknown_session() -> ApiError {
    ApiError::new(
        "unknown_session",
        "no session with that id is open for this caller",
    )
}

/// Snapshots a session: its exact state, kept on this daemon.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/snapshot", tag = "snapshots",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 201, description = "Taken; the session goes on unchanged", body = SnapshotInfo),
        (status = 404, description = "No such session for this caller", body = ApiError),
        (status = 409, description = "The session cannot be snapshotted now (snapshot_unavailable)", body = ApiError),
        (status = 429, description = "The caller's snapshot quota", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn snapshot(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    take(app, id, headers, body, false).await
}

/// Pauses a session: a snapshot, then the session closes (an idle
/// session then costs no memory; resume it from the snapshot).
#[utoipa::path(
    post, path = "/v1/sessions/{id}/pause", tag = "snapshots",
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 201, description = "Taken, and the session closed", body = SnapshotInfo),
        (status = 404, description = "No such session for this caller", body = ApiError),
        (status = 409, description = "The session cannot be snapshotted now (snapshot_unavailable)", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn pause(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    take(app, id, headers, body, true).await
}

async fn take(app: Arc<App>, id: String, headers: HeaderMap, body: Body, pause: bool) -> Response {
    let (caller, _bytes, _permit) = tri!(app.begin(&headers, body).await);
    if !valid_session_id(&id) {
        return unknown_session().into_response();
    }
    let meta = tri!(app.snapshot_session(&caller, &id, pause).await);
    (StatusCode::CREATED, Json(SnapshotInfo::from(meta))).into_response()
}

/// Forks a session: one snapshot, `count` new sessions from it that
/// share nothing afterwards.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/fork", tag = "snapshots", request_body = ForkRequest,
    params(("id" = String, Path, description = "The session's id")),
    responses(
        (status = 201, description = "The new sessions", body = ForkInfo),
        (status = 404, description = "No such session for this caller", body = ApiError),
        (status = 429, description = "The forks would pass the caller's session cap", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn fork(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let (caller, bytes, _permit) = tri!(app.begin(&headers, body).await);
    let f: ForkRequest = if bytes.is_empty() {
        ForkRequest::default()
    } else {
        tri!(parse_json(&bytes))
    };
    if !valid_session_id(&id) {
        return unknown_session().into_response();
    }
    let req = RunRequest {
        limits: f.limits,
        minimum_isolation: f.minimum_isolation,
        ..RunRequest::default()
    };
    let sessions = tri!(
        app.fork_session(&caller, &id, f.count.unwrap_or(1), req)
            .await
    );
    (StatusCode::CREATED, Json(ForkInfo { sessions })).into_response()
}

/// A snapshot of this caller's.
#[utoipa::path(
    get, path = "/v1/snapshots/{id}", tag = "snapshots",
    params(("id" = String, Path, description = "The snapshot's id")),
    responses(
        (status = 200, description = "The snapshot", body = SnapshotInfo),
        (status = 404, description = "No such snapshot for this caller", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn get(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let caller = tri!(app.authorize(&headers, Some(crate::callers::Scope::CodeRun)));
    let meta = tri!(app.snapshot_meta(&caller, &id));
    Json(SnapshotInfo::from(meta)).into_response()
}

/// Deletes a snapshot of this caller's.
#[utoipa::path(
    delete, path = "/v1/snapshots/{id}", tag = "snapshots",
    params(("id" = String, Path, description = "The snapshot's id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such snapshot for this caller", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let caller = tri!(app.authorize(&headers, Some(crate::callers::Scope::CodeRun)));
    tri!(app.delete_snapshot(&caller, &id).await);
    StatusCode::NO_CONTENT.into_response()
}

/// A snapshot of this caller's as a portable archive, for another daemon
/// with the same guest build (`POST /v1/snapshots/import` there).
#[utoipa::path(
    get, path = "/v1/snapshots/{id}/export", tag = "snapshots",
    params(("id" = String, Path, description = "The snapshot's id")),
    responses(
        (status = 200, description = "The archive (application/octet-stream)"),
        (status = 404, description = "No such snapshot for this caller", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn export(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let caller = tri!(app.authorize(&headers, Some(crate::callers::Scope::CodeRun)));
    let bytes = tri!(app.export_snapshot(&caller, &id).await);
    ([(header::CONTENT_TYPE, "application/octet-stream")], bytes).into_response()
}

/// Keeps an archive exported by another daemon, verified whole first;
/// answers the snapshot's id here.
#[utoipa::path(
    post, path = "/v1/snapshots/import", tag = "snapshots",
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses(
        (status = 201, description = "Kept", body = SnapshotInfo),
        (status = 400, description = "Not a valid archive (snapshot_invalid)", body = ApiError),
        (status = 413, description = "Larger than PLIMSOLL_SNAPSHOT_MAX_BYTES", body = ApiError),
        (status = 429, description = "The caller's snapshot quota", body = ApiError),
    ),
    security(("bearer" = []))
)]
pub async fn import(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let caller = tri!(app.authorize(&headers, Some(crate::callers::Scope::CodeRun)));
    tri!(app.check_open());
    tri!(app.spend_rate(&caller).await);
    let (bytes, _permit) = tri!(
        crate::service::read_body_of(
            &app,
            &caller,
            &headers,
            body,
            "application/octet-stream",
            app.snapshot_max_bytes,
        )
        .await
    );
    let meta = tri!(app.import_snapshot(&caller, bytes.to_vec()).await);
    (StatusCode::CREATED, Json(SnapshotInfo::from(meta))).into_response()
}
