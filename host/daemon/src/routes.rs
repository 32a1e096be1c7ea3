//! The daemon's routes: each wire's adapter over the service layer,
//! composed on one router. This is the one module that knows every wire;
//! no wire knows another.

use crate::service::App;
use axum::routing::post;
use std::sync::Arc;

/// The API listener's routes: REST (with health and the OpenAPI
/// document), plimsoll protocol 4, and MCP over streamable HTTP.
pub fn router(app: Arc<App>) -> axum::Router {
    let protocol = axum::Router::new()
        .route(
            "/plimsoll.v1.SandboxService/{procedure}",
            post(crate::connect::handle),
        )
        .with_state(app.clone());
    crate::rest::router(app.clone())
        .merge(protocol)
        // MCP over streamable HTTP, authenticated like the routes above.
        .merge(crate::mcp::router(app))
        .fallback(crate::rest::not_found)
}

/// The metrics listener's routes.
pub fn metrics_router(app: Arc<App>) -> axum::Router {
    crate::rest::metrics_router(app)
}
