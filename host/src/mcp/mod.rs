//! The sandbox as a Model Context Protocol server (`plimsoll mcp`, and
//! `/mcp` on plimsolld), built on the official Rust SDK (`rmcp`).
//!
//! Tools:
//!
//! - `run_code(language, code, files?, stdin?, grants?, timeout_ms?,
//!   guest?)`: a fresh instance, exactly as `Sandbox::run`;
//! - `open_session(language, guest?)`, `run_cell(session, code, files?)`,
//!   `close_session(session)`: sessions bound to the MCP connection (a
//!   connection's close closes its sessions, [`ConnectionSessions`]);
//! - `snapshot_session(session)`, `resume_session(snapshot)`,
//!   `fork_session(session, count?)`: a session's exact state kept, and
//!   new sessions from it ([`crate::snapshot`]).
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
//!
//! One concept per child: `connection` (the sessions a connection holds,
//! bound to its first caller), `tools` (the tools' schemas), `args`
//! (strict parsing of a call's arguments), `calls` (each tool's call, with
//! progress and cancellation), beside `backend` and `render`. This module
//! holds the server, its connector and the MCP handler.

mod args;
pub mod backend;
mod calls;
mod connection;
pub mod render;
mod snapshots;
mod tools;

use args::parse;
use backend::Backend;
use render::Artifacts;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use connection::ConnectionSessions;
pub use tools::tools_of;

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
            "snapshot_session" => {
                self.snapshot_session(b, parse("snapshot_session", args)?)
                    .await
            }
            "resume_session" => self.resume_session(b, parse("resume_session", args)?).await,
            "fork_session" => self.fork_session(b, parse("fork_session", args)?).await,
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
