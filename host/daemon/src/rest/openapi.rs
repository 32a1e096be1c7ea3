//! The OpenAPI 3 document, generated from the handlers' annotations and the
//! library's own request and result types (their `utoipa::ToSchema`
//! derives follow their serde attributes, so the document and the wire
//! format cannot drift apart). `docs/openapi.json` is this document; a test
//! fails when it is stale.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(
        title = "plimsolld",
        description = "Runs untrusted code written by AI agents in WebAssembly components, for many callers. See docs/api.md."
    ),
    paths(
        crate::rest::create_run,
        crate::rest::open_session,
        crate::rest::session_run,
        crate::rest::close_session,
        crate::rest::info,
        crate::rest::snapshots::snapshot,
        crate::rest::snapshots::pause,
        crate::rest::snapshots::fork,
        crate::rest::snapshots::get,
        crate::rest::snapshots::delete,
        crate::rest::snapshots::export,
        crate::rest::snapshots::import,
    ),
    components(schemas(
        plimsoll::RunRequest,
        plimsoll::RunResult,
        plimsoll::session::SessionInfo,
        crate::rest::SessionRequest,
        crate::rest::Info,
        crate::rest::snapshots::SnapshotInfo,
        crate::rest::snapshots::ForkRequest,
        crate::rest::snapshots::ForkInfo,
        crate::error::ApiError,
    )),
    modifiers(&BearerAuth)
)]
struct ApiDoc;

/// The document as pretty JSON.
pub fn document() -> String {
    ApiDoc::openapi()
        .to_pretty_json()
        .unwrap_or_else(|_| "{}".into())
}
