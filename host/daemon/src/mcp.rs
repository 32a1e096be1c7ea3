//! `/mcp`: the MCP tools of `plimsoll mcp` (`plimsoll::mcp`) over the
//! streamable HTTP transport, on the API listener.
//!
//! Every HTTP request is authenticated before the MCP layer sees it, with
//! the `code:run` scope, exactly as a REST run: a missing or wrong token is
//! 401, a missing scope 403, a drained daemon 503, a caller past its rate
//! 429, all with the REST API's JSON error body. The caller found is handed
//! to the MCP layer in the request's extensions, and each tool call runs
//! through [`DaemonBackend`], which applies the caller's grant profiles,
//! envelope, floor, concurrency and daily allowance, counts the run in
//! `/metrics` and writes its audit record — a canceled run's too
//! (`canceled`). An MCP connection belongs to the caller of its first call;
//! another caller's token on it is refused, and its sessions are that
//! caller's.

use crate::callers::{Caller, Scope};
use crate::service::{App, SessionOpen, read_body};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use plimsoll::mcp::backend::{Backend, Offered};
use plimsoll::mcp::{Connector, McpServer};
use plimsoll::run::ErrorInfo;
use plimsoll::session::SessionInfo;
use plimsoll::{Isolation, RunRequest, RunResult, Status};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest MCP request body (a JSON-RPC message): a larger one is 413.
pub const MAX_MCP_BODY: usize = 4 << 20;
/// MCP sessions one caller may hold at once; another `initialize` is 429.
pub const MCP_SESSIONS_PER_CALLER: usize = 32;
/// An MCP session without a request for this long ends: the SDK closes it
/// (and with it its code sessions), and it is forgotten here.
pub const MCP_SESSION_IDLE: Duration = Duration::from_secs(600);
/// How long the SDK keeps a finished request's answers for a client that
/// resumes its stream: short, since they hold results outside every cap.
pub const MCP_ANSWER_CACHE: Duration = Duration::from_secs(5);

/// The header the SDK keys MCP sessions by.
const SESSION_HEADER: &str = "mcp-session-id";

/// Which caller owns each MCP session: the SDK itself treats the id as the
/// only key, so every request is checked here against the caller that
/// opened the session.
#[derive(Default)]
struct Owners {
    map: Mutex<OwnersMap>,
}

/// MCP sessions by id (owner, last use), and the `initialize` requests in
/// flight per caller, which hold a place under the cap until their answer
/// names the new session: a burst of them never passes the cap.
#[derive(Default)]
struct OwnersMap {
    sessions: HashMap<String, (String, Instant)>,
    opening: HashMap<String, usize>,
}

impl OwnersMap {
    fn held_by(&self, caller: &str) -> usize {
        self.sessions.values().filter(|(o, _)| o == caller).count()
            + self.opening.get(caller).copied().unwrap_or(0)
    }

    fn opened(&mut self, caller: &str) {
        if let Some(n) = self.opening.get_mut(caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.opening.remove(caller);
            }
        }
    }
}

/// Gives back an `initialize`'s place if its request ends without an
/// answer (a dropped connection).
struct Opening {
    owners: Arc<Owners>,
    caller: String,
    done: bool,
}

impl Drop for Opening {
    fn drop(&mut self) {
        if !self.done {
            self.owners
                .map
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .opened(&self.caller);
        }
    }
}

#[derive(Clone)]
struct Front {
    app: Arc<App>,
    owners: Arc<Owners>,
}

/// The `/mcp` service, with its authentication in front.
pub fn router(app: Arc<App>) -> axum::Router {
    let connector = Arc::new(DaemonConnector { app: app.clone() });
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.completed_cache_ttl = MCP_ANSWER_CACHE;
    sessions.session_config.keep_alive = Some(MCP_SESSION_IDLE);
    let service = StreamableHttpService::new(
        move || Ok(McpServer::with_connector(connector.clone())),
        Arc::new(sessions),
        StreamableHttpServerConfig::default()
            // Every request carries a bearer token, so the DNS-rebinding
            // guard for unauthenticated local servers is not what protects
            // this one; the daemon may be reached under any host name.
            .disable_allowed_hosts()
            .with_max_request_body_bytes(MAX_MCP_BODY),
    );
    let front = Front {
        app,
        owners: Arc::new(Owners::default()),
    };
    axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(front, authenticate))
}

async fn authenticate(State(front): State<Front>, req: Request, next: Next) -> Response {
    let app = &front.app;
    let caller = match app.authorize(req.headers(), Some(Scope::CodeRun)) {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = app.check_open() {
        return e.into_response();
    }
    if let Err(e) = app.spend_rate(&caller).await {
        return e.into_response();
    }
    // A declared length over the cap is refused before a byte of the body
    // is read (the MCP layer also stops reading at the cap).
    let declared = req
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_MCP_BODY as u64) {
        return crate::error::ApiError::new(
            "body_too_large",
            format!("an MCP request body is at most {MAX_MCP_BODY} bytes"),
        )
        .into_response();
    }
    let session = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut opening = None;
    {
        let mut owners = front.owners.map.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        owners
            .sessions
            .retain(|_, (_, seen)| now.duration_since(*seen) < MCP_SESSION_IDLE);
        match &session {
            Some(id) => match owners.sessions.get_mut(id) {
                Some((owner, seen)) if *owner == caller.id => *seen = now,
                // Another caller's session and an unknown one answer alike.
                _ => {
                    return crate::error::ApiError::new(
                        "unknown_session",
                        "no MCP session with that id is open for this caller",
                    )
                    .into_response();
                }
            },
            None => {
                if owners.held_by(&caller.id) >= MCP_SESSIONS_PER_CALLER {
                    app.metrics.shed("session_limit");
                    return crate::error::ApiError::new(
                        "session_limit",
                        format!(
                            "this caller already holds {MCP_SESSIONS_PER_CALLER} MCP sessions; end one (DELETE) first"
                        ),
                    )
                    .into_response();
                }
                *owners.opening.entry(caller.id.clone()).or_insert(0) += 1;
                opening = Some(Opening {
                    owners: front.owners.clone(),
                    caller: caller.id.clone(),
                    done: false,
                });
            }
        }
    }
    // The body is read here, within the caller's share of the in-flight
    // budget and the body timeout, as a REST body is; the permit is held
    // until the answer is done.
    let deleting = req.method() == http::Method::DELETE;
    let (mut parts, body) = req.into_parts();
    let (bytes, permit) = match read_body(app, &caller, &parts.headers, body).await {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    parts.extensions.insert(caller.clone());
    let resp = next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await;
    drop(permit);
    let mut owners = front.owners.map.lock().unwrap_or_else(|p| p.into_inner());
    match &session {
        Some(id) if deleting && resp.status().is_success() => {
            owners.sessions.remove(id);
        }
        Some(_) => {}
        None => {
            // A new session: the SDK named it in the answer's header. Its
            // place moves from `opening` to the session, under one lock.
            if let Some(id) = resp
                .headers()
                .get(SESSION_HEADER)
                .and_then(|v| v.to_str().ok())
            {
                owners
                    .sessions
                    .insert(id.to_owned(), (caller.id.clone(), Instant::now()));
            }
            owners.opened(&caller.id);
            if let Some(o) = opening.as_mut() {
                o.done = true;
            }
        }
    }
    drop(owners);
    drop(opening);
    resp
}

/// Finds the caller the authentication put in a request's extensions.
struct DaemonConnector {
    app: Arc<App>,
}

impl Connector for DaemonConnector {
    fn backend(&self, parts: Option<&http::request::Parts>) -> Option<Arc<dyn Backend>> {
        let caller = parts?.extensions.get::<Arc<Caller>>()?.clone();
        Some(Arc::new(DaemonBackend {
            app: self.app.clone(),
            caller,
        }))
    }

    fn isolation(&self) -> Isolation {
        self.app.sandbox.isolation()
    }
}

/// One caller's runs and sessions, with the REST API's checks, metrics and
/// audit.
struct DaemonBackend {
    app: Arc<App>,
    caller: Arc<Caller>,
}

fn refused(app: &App, code: &str, message: String) -> RunResult {
    RunResult::refused(String::new(), app.sandbox.isolation(), code, message)
}

/// Writes a canceled run's audit record if the run's future is dropped
/// before it finished.
struct CancelAudit {
    app: Arc<App>,
    caller: Arc<Caller>,
    req: Option<RunRequest>,
    event: &'static str,
    started: Instant,
}

impl Drop for CancelAudit {
    fn drop(&mut self) {
        let Some(req) = self.req.take() else { return };
        let mut r = refused(
            &self.app,
            "canceled",
            "the client canceled the request".into(),
        );
        r.status = Status::Canceled;
        // The guest ran until the cancel: that time is the caller's (its
        // broker calls were checked and traced as made, but the trace went
        // with the run).
        r.usage.wall_ms = self.started.elapsed().as_secs_f64() * 1e3;
        let mut rec = self
            .app
            .run_record(self.event, &self.caller, &req, &r, self.started);
        rec.protocol = Some("mcp");
        let app = self.app.clone();
        let caller = self.caller.clone();
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            h.spawn(async move {
                let _ = app.settle(&caller, &req, &r, rec).await;
            });
        }
    }
}

impl DaemonBackend {
    /// A run's admission, as for REST: the caller's grant profiles and
    /// envelope, a healthy audit log, a concurrency slot.
    async fn admit(&self, req: &mut RunRequest) -> Result<crate::quota::RunPermit, Box<RunResult>> {
        self.app
            .admit_run(&self.caller, req)
            .await
            .map_err(|e| Box::new(refused(&self.app, &e.code, e.message)))
    }

    async fn settle(
        &self,
        event: &'static str,
        req: &RunRequest,
        r: RunResult,
        started: Instant,
    ) -> RunResult {
        let mut rec = self.app.run_record(event, &self.caller, req, &r, started);
        rec.protocol = Some("mcp");
        match self.app.settle(&self.caller, req, &r, rec).await {
            Ok(()) => r,
            // A result whose record could not be written is not answered.
            Err(e) => refused(&self.app, &e.code, e.message),
        }
    }
}

impl Backend for DaemonBackend {
    fn caller_id(&self) -> &str {
        &self.caller.id
    }

    fn offered(&self) -> Vec<Offered> {
        plimsoll::mcp::backend::offered_by(&self.app.sandbox)
    }

    fn isolation(&self) -> Isolation {
        self.app.sandbox.isolation()
    }

    fn max_wall_time_ms(&self) -> u64 {
        self.caller.envelope.wall_time_ms
    }

    fn run(&self, mut req: RunRequest) -> BoxFuture<'_, RunResult> {
        Box::pin(async move {
            let started = Instant::now();
            let permit = match self.admit(&mut req).await {
                Ok(p) => p,
                Err(refusal) => return *refusal,
            };
            let mut guard = CancelAudit {
                app: self.app.clone(),
                caller: self.caller.clone(),
                req: Some(req.clone()),
                event: "run",
                started,
            };
            let r = self.app.sandbox.run_as(&self.caller.id, &req).await;
            guard.req = None;
            self.app.run_done(permit);
            self.settle("run", &req, r, started).await
        })
    }

    fn open_session(&self, req: RunRequest) -> BoxFuture<'_, Result<SessionInfo, ErrorInfo>> {
        Box::pin(async move {
            let open = SessionOpen {
                req,
                protocol: Some("mcp"),
                ..SessionOpen::default()
            };
            self.app
                .open_session(&self.caller, open, Instant::now())
                .await
                .map_err(|e| ErrorInfo {
                    code: e.code,
                    message: e.message,
                })
        })
    }

    fn run_cell<'a>(
        &'a self,
        session_id: &'a str,
        mut req: RunRequest,
    ) -> BoxFuture<'a, RunResult> {
        Box::pin(async move {
            let started = Instant::now();
            let permit = match self.admit(&mut req).await {
                Ok(p) => p,
                Err(refusal) => return *refusal,
            };
            let r = self
                .app
                .sandbox
                .run_in_session(&self.caller.id, session_id, &req)
                .await;
            self.app.run_done(permit);
            self.app
                .metrics
                .set_sessions(self.app.sandbox.session_total());
            self.settle("session_run", &req, r, started).await
        })
    }

    fn close_session(&self, session_id: &str) -> bool {
        let closed = self.app.sandbox.close_session(&self.caller.id, session_id);
        self.app
            .metrics
            .set_sessions(self.app.sandbox.session_total());
        if closed {
            let app = self.app.clone();
            let caller = self.caller.clone();
            let id = session_id.to_owned();
            if let Ok(h) = tokio::runtime::Handle::try_current() {
                h.spawn(async move { app.audit_close(&caller, &id, Some("mcp")).await });
            }
        }
        closed
    }

    fn snapshot_session<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<plimsoll::snapshot::store::Meta, ErrorInfo>> {
        Box::pin(async move {
            self.app
                .snapshot_session(&self.caller, session_id, false)
                .await
                .map_err(|e| ErrorInfo {
                    code: e.code,
                    message: e.message,
                })
        })
    }

    fn resume_session<'a>(
        &'a self,
        snapshot_id: &'a str,
    ) -> BoxFuture<'a, Result<SessionInfo, ErrorInfo>> {
        Box::pin(async move {
            self.app
                .resume_session(&self.caller, snapshot_id, RunRequest::default())
                .await
                .map_err(|e| ErrorInfo {
                    code: e.code,
                    message: e.message,
                })
        })
    }

    fn fork_session<'a>(
        &'a self,
        session_id: &'a str,
        n: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, ErrorInfo>> {
        Box::pin(async move {
            self.app
                .fork_session(&self.caller, session_id, n, RunRequest::default())
                .await
                .map_err(|e| ErrorInfo {
                    code: e.code,
                    message: e.message,
                })
        })
    }
}
