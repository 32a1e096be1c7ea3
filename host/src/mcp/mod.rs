//! The sandbox as a Model Context Protocol server (`plimsoll mcp`, and
//! `/mcp` on plimsolld), built on the official Rust SDK (`rmcp`).
//!
//! Tools:
//!
//! - `run_code(language, code, files?, stdin?, grants?, timeout_ms?,
//!   guest?)`: a fresh instance, exactly as `Sandbox::run`;
//! - `open_session(language, guest?)`, `run_cell(session, code, files?)`,
//!   `close_session(session)`: sessions bound to the MCP connection (a
//!   connection's close closes its sessions, [`ConnectionSessions`]).
//!
//! Every answer carries the run's status, isolation tier and run id, as
//! text for a model and as structured content for a program
//! ([`render`]). A run that did not end `ok` is a tool error (`isError`)
//! with its typed status. While a run is in flight a client that asked for
//! progress gets a notification every second; a client's cancellation
//! stops the run (its instance, or its worker, is torn down) and the
//! answer, which the SDK then drops, is `canceled`.
//!
//! Nothing a client sends is trusted: arguments are parsed strictly
//! (unknown fields, wrong types and oversized code are MCP errors or typed
//! refusals, and the server keeps serving), and every limit is the
//! sandbox's own envelope, which a request can only lower.

pub mod backend;
pub mod render;

use crate::blob::Blob;
use crate::envelope::Limits;
use crate::run::{InputFile, Language, RunRequest, RunResult, Status};
use backend::{Backend, Offered};
use render::Artifacts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ResourceContents, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Largest `code` argument accepted (the envelope's own `code_bytes` cap
/// applies too); a longer one is refused before it is copied anywhere.
pub const MAX_CODE_BYTES: usize = 1 << 20;
/// Most files one call may place.
pub const MAX_FILES: usize = 256;
/// Most sessions one connection may hold open at once (the sandbox's
/// per-caller cap applies too).
pub const MAX_SESSIONS_PER_CONNECTION: usize = 8;
/// How often a run in flight reports progress.
pub const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Where a connection's [`Backend`] comes from: one fixed backend (the
/// stdio server's), or one per request for the caller its transport
/// authenticated (plimsolld's `/mcp`, which puts the caller in the HTTP
/// request's extensions).
pub trait Connector: Send + Sync + 'static {
    /// The backend for a request whose HTTP parts are `parts` (`None` over
    /// stdio); `None` when the request carries no caller.
    fn backend(&self, parts: Option<&http::request::Parts>) -> Option<Arc<dyn Backend>>;

    /// The isolation runs get now (for the server's description).
    fn isolation(&self) -> crate::tier::Isolation;
}

struct Fixed(Arc<dyn Backend>);

impl Connector for Fixed {
    fn backend(&self, _parts: Option<&http::request::Parts>) -> Option<Arc<dyn Backend>> {
        Some(self.0.clone())
    }

    fn isolation(&self) -> crate::tier::Isolation {
        self.0.isolation()
    }
}

/// The sessions one connection opened, and the caller the connection
/// belongs to (that of its first call); dropping it (the connection's
/// end) closes the sessions.
pub struct ConnectionSessions {
    bound: Mutex<Option<Arc<dyn Backend>>>,
    open: Mutex<Vec<String>>,
    /// Opens in flight (each holds a [`Reserved`] slot).
    opening: std::sync::atomic::AtomicUsize,
}

/// One session slot taken while its open is awaited; given back on drop
/// (by then the session, if it opened, is in `open`).
struct Reserved<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl ConnectionSessions {
    fn new() -> ConnectionSessions {
        ConnectionSessions {
            bound: Mutex::new(None),
            open: Mutex::new(Vec::new()),
            opening: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// `b`, if this connection is its caller's (binding it on first use).
    fn bind(&self, b: Arc<dyn Backend>) -> Result<Arc<dyn Backend>, ErrorData> {
        let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        match &*bound {
            Some(first) if first.caller_id() != b.caller_id() => Err(ErrorData::invalid_request(
                "this MCP connection belongs to another caller",
                None,
            )),
            Some(_) => Ok(b),
            None => {
                *bound = Some(b.clone());
                Ok(b)
            }
        }
    }

    /// A slot for one more session, or `None` when the connection holds
    /// its cap (open sessions and opens in flight together).
    fn reserve(&self) -> Option<Reserved<'_>> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let opening = self.opening.load(std::sync::atomic::Ordering::Acquire);
        if open.len() + opening >= MAX_SESSIONS_PER_CONNECTION {
            return None;
        }
        self.opening
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Some(Reserved(&self.opening))
    }

    fn holds(&self, id: &str) -> bool {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|s| s == id)
    }

    fn forget(&self, id: &str) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|s| s != id);
    }
}

impl Drop for ConnectionSessions {
    fn drop(&mut self) {
        let open = std::mem::take(&mut *self.open.lock().unwrap_or_else(|p| p.into_inner()));
        let bound = self.bound.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(b) = bound {
            for id in open {
                b.close_session(&id);
            }
        }
    }
}

/// One MCP connection's server. Cheap to clone (clones share the
/// connection's sessions and artifacts).
#[derive(Clone)]
pub struct McpServer {
    connector: Arc<dyn Connector>,
    sessions: Arc<ConnectionSessions>,
    artifacts: Arc<Mutex<Artifacts>>,
}

impl McpServer {
    /// A server for one connection, running code on `backend`.
    pub fn new(backend: Arc<dyn Backend>) -> McpServer {
        McpServer::with_connector(Arc::new(Fixed(backend)))
    }

    /// A server for one connection whose backend each request's
    /// `connector` finds.
    pub fn with_connector(connector: Arc<dyn Connector>) -> McpServer {
        McpServer {
            connector,
            sessions: Arc::new(ConnectionSessions::new()),
            artifacts: Arc::new(Mutex::new(Artifacts::default())),
        }
    }

    /// The backend for this request (and the connection's caller).
    fn backend_for(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<dyn Backend>, ErrorData> {
        let parts = ctx.extensions.get::<http::request::Parts>();
        let b = self.connector.backend(parts).ok_or_else(|| {
            ErrorData::invalid_request("this request carries no authenticated caller", None)
        })?;
        self.sessions.bind(b)
    }
}

/// The tools, with schemas naming only the guests `b` really has.
pub fn tools_of(b: &dyn Backend) -> Vec<Tool> {
    tools(&b.offered(), &b.isolation(), b.max_wall_time_ms())
}

/// The guests' language names and whether a scientific guest is there.
fn languages(offered: &[Offered]) -> (Vec<&'static str>, bool) {
    let mut langs: Vec<&'static str> = offered.iter().map(|o| o.language).collect();
    langs.sort_unstable();
    langs.dedup();
    if langs.is_empty() {
        // No guest is built: the schema still names the languages, and a
        // call is answered with the sandbox's own refusal.
        langs = vec!["javascript", "python"];
    }
    let scientific = offered.iter().any(|o| o.guest == Some("scientific"));
    (langs, scientific)
}

fn object(v: Value) -> Arc<serde_json::Map<String, Value>> {
    Arc::new(match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    })
}

fn tools(offered: &[Offered], iso: &crate::tier::Isolation, max_ms: u64) -> Vec<Tool> {
    let (langs, scientific) = languages(offered);
    let tier = format!(
        "Runs at isolation tier `{}` (provider {}); every answer names the tier it ran at.",
        iso.tier, iso.provider
    );
    let guest_schema = if scientific {
        json!({"type": "string", "enum": ["standard", "scientific"],
            "description": "For python: `scientific` runs CPython with numpy, pandas, scipy, scikit-learn, statsmodels and matplotlib already imported (figures left open come back as PNG images); `standard` is a smaller, faster CPython with the standard library only. Absent: the operator's default."})
    } else {
        json!({"type": "string", "enum": ["standard"], "description": "The interpreter guest; only `standard` is present on this host."})
    };
    let files_schema = json!({"type": "object", "additionalProperties": {"type": "string"},
        "description": "Files to place in the working directory first: relative path → UTF-8 contents (no `..`, no absolute paths). Files the code writes under `out/` come back as artifacts."});
    let run_code = json!({
        "type": "object",
        "properties": {
            "language": {"type": "string", "enum": langs, "description": "The language of `code`."},
            "code": {"type": "string", "description": "The program. Python and JavaScript cells print the value of a trailing expression, as a notebook does."},
            "files": files_schema,
            "stdin": {"type": "string", "description": "Standard input for the program."},
            "grants": {"type": "array", "items": {"type": "string"}, "description": "Names of the operator's grant profiles this run may call (an HTTP API through the host, which adds the credential; the code never sees it). Python: `import plimsoll; plimsoll.get(name, path)`; JavaScript: `plimsoll.get(name, path)`."},
            "timeout_ms": {"type": "integer", "minimum": 1, "description": format!("Wall-time limit in milliseconds; at most {max_ms} (the default), a longer one is cut to it.")},
            "guest": guest_schema,
        },
        "required": ["language", "code"],
        "additionalProperties": false,
    });
    let open_session = json!({
        "type": "object",
        "properties": {
            "language": {"type": "string", "enum": langs, "description": "The session's language."},
            "guest": guest_schema,
        },
        "required": ["language"],
        "additionalProperties": false,
    });
    let run_cell = json!({
        "type": "object",
        "properties": {
            "session": {"type": "string", "description": "The id `open_session` returned."},
            "code": {"type": "string", "description": "The cell. Names defined by earlier cells are still there; the trailing expression's value is printed."},
            "files": files_schema,
        },
        "required": ["session", "code"],
        "additionalProperties": false,
    });
    let close_session = json!({
        "type": "object",
        "properties": {"session": {"type": "string"}},
        "required": ["session"],
        "additionalProperties": false,
    });
    vec![
        Tool::new(
            "run_code",
            format!(
                "Run code in a fresh, isolated WebAssembly sandbox and return its status, stdout, stderr, trailing value and artifacts. Nothing persists between calls; there is no network except the grants named. Languages here: {}. {tier}",
                langs.join(", ")
            ),
            object(run_code),
        ),
        Tool::new(
            "open_session",
            format!(
                "Open a session: an interpreter whose globals and files persist across `run_cell` calls, like a notebook kernel. It is closed by `close_session`, when idle too long, or when this connection ends. {tier}"
            ),
            object(open_session),
        ),
        Tool::new(
            "run_cell",
            "Run a cell in a session opened by `open_session`. An exception keeps the session; a timeout or memory exhaustion may end its interpreter.",
            object(run_cell),
        ),
        Tool::new(
            "close_session",
            "Close a session opened by `open_session`.",
            object(close_session),
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunCodeArgs {
    language: String,
    code: String,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    stdin: Option<String>,
    #[serde(default)]
    grants: Vec<String>,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    guest: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenSessionArgs {
    language: String,
    #[serde(default)]
    guest: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunCellArgs {
    session: String,
    code: String,
    #[serde(default)]
    files: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CloseSessionArgs {
    session: String,
}

fn invalid(message: impl Into<String>) -> ErrorData {
    ErrorData::invalid_params(message.into(), None)
}

fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: Option<serde_json::Map<String, Value>>,
) -> Result<T, ErrorData> {
    serde_json::from_value(Value::Object(args.unwrap_or_default())).map_err(|e| {
        // serde's message names the field and the expected type (and may
        // quote a value the same client sent; it goes back only to it).
        invalid(format!("{tool}: {e}"))
    })
}

fn language(name: &str) -> Result<Language, ErrorData> {
    name.parse::<Language>()
        .map_err(|_| invalid("language: expected \"python\" or \"javascript\""))
}

fn check_code(code: &str) -> Result<(), ErrorData> {
    if code.len() > MAX_CODE_BYTES {
        return Err(invalid(format!(
            "code: {} bytes, more than the {MAX_CODE_BYTES} accepted",
            code.len()
        )));
    }
    Ok(())
}

fn input_files(files: BTreeMap<String, String>) -> Result<Vec<InputFile>, ErrorData> {
    if files.len() > MAX_FILES {
        return Err(invalid(format!(
            "files: {} given, at most {MAX_FILES}",
            files.len()
        )));
    }
    // Paths are checked by the sandbox (the same rules as every request).
    Ok(files
        .into_iter()
        .map(|(path, content)| InputFile {
            path,
            content: Blob::from(content),
        })
        .collect())
}

/// The guest a request names: `standard` and `scientific` pass through as
/// given (an absent one is the operator's default).
fn guest_name(guest: Option<String>) -> Option<String> {
    guest
}

impl McpServer {
    async fn run_code(
        &self,
        b: &dyn Backend,
        args: RunCodeArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        check_code(&args.code)?;
        let mut req = RunRequest::code(language(&args.language)?, args.code);
        req.files = input_files(args.files)?;
        req.stdin = Blob::from(args.stdin.unwrap_or_default());
        req.grants = args.grants;
        req.guest = guest_name(args.guest);
        if let Some(ms) = args.timeout_ms {
            // A model's guess at a timeout is cut to the operator's, not
            // refused (as the plimsoll protocol does); 0 is refused by the
            // envelope as for every request.
            req.limits = Limits {
                wall_time_ms: Some(ms.min(b.max_wall_time_ms())),
                ..Limits::default()
            };
        }
        let budget = req.limits.wall_time_ms;
        let r = self
            .in_flight(b.run(req), budget, ctx)
            .await
            .unwrap_or_else(|| canceled(&b.isolation()));
        Ok(self.render(&r))
    }

    async fn open_session(
        &self,
        b: &dyn Backend,
        args: OpenSessionArgs,
    ) -> Result<CallToolResult, ErrorData> {
        let lang = language(&args.language)?;
        // The slot is taken before the open is awaited, so concurrent calls
        // on one connection cannot pass the cap together.
        let Some(_slot) = self.sessions.reserve() else {
            return Ok(render::refusal(
                "too_many_sessions",
                &format!(
                    "this connection holds {MAX_SESSIONS_PER_CONNECTION} open sessions; close one first"
                ),
            ));
        };
        let req = RunRequest {
            language: Some(lang),
            guest: guest_name(args.guest),
            ..RunRequest::default()
        };
        match b.open_session(req).await {
            Ok(info) => {
                self.sessions
                    .open
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(info.session_id.clone());
                let tier = b.isolation().tier;
                Ok(render::structured(
                    json!({
                        "session": info.session_id,
                        "language": lang.as_str(),
                        "guest": info.guest,
                        "isolation": {"tier": tier.as_str()},
                        "idle_timeout_sec": info.idle_timeout_sec,
                        "lifetime_sec": info.lifetime_sec,
                    }),
                    format!(
                        "session {} opened ({} on {}, isolation {}); it closes after {} s idle or {} s in all",
                        info.session_id,
                        lang.as_str(),
                        info.guest,
                        tier,
                        info.idle_timeout_sec,
                        info.lifetime_sec
                    ),
                ))
            }
            Err(e) => Ok(render::refusal(&e.code, &e.message)),
        }
    }

    async fn run_cell(
        &self,
        b: &dyn Backend,
        args: RunCellArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        check_code(&args.code)?;
        if !self.sessions.holds(&args.session) {
            // Another connection's session and an unknown one answer alike.
            return Ok(render::refusal(
                "not_found",
                "no open session of this connection has that id",
            ));
        }
        let req = RunRequest {
            code: Some(args.code),
            files: input_files(args.files)?,
            ..RunRequest::default()
        };
        // A cell is not stopped halfway (its interpreter would be left in
        // the middle of a call): it ends at its own timeout, with progress
        // reported meanwhile.
        let cell = b.run_cell(&args.session, req);
        let r = self.with_progress(cell, None, ctx).await;
        if r.session_closed {
            self.sessions.forget(&args.session);
        }
        Ok(self.render(&r))
    }

    fn close_session(
        &self,
        b: &dyn Backend,
        args: CloseSessionArgs,
    ) -> Result<CallToolResult, ErrorData> {
        let was = self.sessions.holds(&args.session) && b.close_session(&args.session);
        self.sessions.forget(&args.session);
        Ok(render::structured(
            json!({"session": args.session, "closed": was}),
            if was {
                "session closed".into()
            } else {
                "no open session of this connection has that id".into()
            },
        ))
    }

    fn render(&self, r: &RunResult) -> CallToolResult {
        let mut store = self.artifacts.lock().unwrap_or_else(|p| p.into_inner());
        render::tool_result(r, &mut store)
    }

    /// Drives `run`, reporting progress; `None` when the client canceled
    /// the request (the run is dropped, which stops it).
    async fn in_flight(
        &self,
        run: futures::future::BoxFuture<'_, RunResult>,
        budget_ms: Option<u64>,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<RunResult> {
        let ct = ctx.ct.clone();
        tokio::select! {
            r = self.with_progress(run, budget_ms, ctx) => Some(r),
            _ = ct.cancelled() => None,
        }
    }

    async fn with_progress(
        &self,
        run: futures::future::BoxFuture<'_, RunResult>,
        budget_ms: Option<u64>,
        ctx: &RequestContext<RoleServer>,
    ) -> RunResult {
        let Some(token) = ctx.meta.get_progress_token() else {
            return run.await;
        };
        let started = Instant::now();
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        tokio::pin!(run);
        loop {
            tokio::select! {
                r = &mut run => return r,
                _ = tick.tick() => {
                    let secs = started.elapsed().as_secs_f64();
                    let mut p = ProgressNotificationParam::new(token.clone(), secs)
                        .with_message(format!("running for {:.0} s", secs));
                    if let Some(ms) = budget_ms {
                        p = p.with_total(ms as f64 / 1e3);
                    }
                    // A client that stopped reading loses its progress
                    // notes, not the run.
                    let _ = tokio::time::timeout(
                        Duration::from_millis(200),
                        ctx.peer.notify_progress(p),
                    )
                    .await;
                }
            }
        }
    }
}

/// The result of a canceled run (the SDK drops the answer; it is what an
/// audit records).
fn canceled(iso: &crate::tier::Isolation) -> RunResult {
    let mut r = RunResult::refused(
        String::new(),
        iso.clone(),
        "canceled",
        "the client canceled the request",
    );
    r.status = Status::Canceled;
    r
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let iso = self.connector.isolation();
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("plimsoll", env!("CARGO_PKG_VERSION")))
        .with_instructions(format!(
            "plimsoll runs untrusted code in WebAssembly sandboxes at isolation tier `{}` (provider {}). Use run_code for one-off programs and open_session/run_cell/close_session to keep state between cells.",
            iso.tier, iso.provider
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let b = self.backend_for(&context)?;
        Ok(ListToolsResult::with_all_items(tools_of(b.as_ref())))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments;
        let b = self.backend_for(&context)?;
        let b = b.as_ref();
        let result = match request.name.as_ref() {
            "run_code" => self.run_code(b, parse("run_code", args)?, &context).await,
            "open_session" => self.open_session(b, parse("open_session", args)?).await,
            "run_cell" => self.run_cell(b, parse("run_cell", args)?, &context).await,
            "close_session" => self.close_session(b, parse("close_session", args)?),
            _ => Err(ErrorData::invalid_params("tool not found", None)),
        }?;
        Ok(result.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        // Artifacts are reached through the links in tool results; they are
        // not listed.
        Ok(ListResourcesResult::default())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        // Only the connection's own caller reads its artifacts.
        self.backend_for(&context)?;
        let found = self
            .artifacts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&request.uri);
        let Some((mime, data)) = found else {
            return Err(ErrorData::resource_not_found(
                "no artifact of this connection's recent runs has that URI",
                None,
            ));
        };
        use base64::Engine as _;
        let blob = base64::engine::general_purpose::STANDARD.encode(&data);
        Ok(ReadResourceResult::new(vec![
            ResourceContents::blob(blob, request.uri).with_mime_type(mime),
        ])
        .into())
    }
}

/// Serves one connection over this process's stdin and stdout until the
/// client hangs up; its sessions close then.
pub async fn serve_stdio(backend: Arc<dyn Backend>) -> Result<(), String> {
    use rmcp::ServiceExt;
    let server = McpServer::new(backend);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP client did not initialize: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("the MCP connection failed: {e}"))?;
    Ok(())
}
