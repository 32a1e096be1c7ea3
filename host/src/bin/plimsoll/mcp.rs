//! `plimsoll mcp`: the sandbox as a Model Context Protocol server over
//! stdin and stdout ([`plimsoll::mcp`]); stdout is the protocol's, notes
//! go to stderr.

use crate::args::McpArgs;
use crate::config::{NO_SCIENTIFIC, sandbox_config};
use crate::fail;
use plimsoll::{ProviderKind, Sandbox};
use std::process::ExitCode;

/// Serves MCP on stdio until the client goes.
pub(crate) async fn mcp(args: McpArgs) -> ExitCode {
    let mut cfg = match sandbox_config(&args.common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    if args.scientific && cfg.scientific.is_none() {
        cfg.scientific = plimsoll::config::default_scientific_dir();
        if cfg.scientific.is_none() && cfg.provider != ProviderKind::Disabled {
            return fail(NO_SCIENTIFIC);
        }
    }
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    // stdout is the protocol's; a note for whoever reads the server's log.
    eprintln!(
        "plimsoll mcp: provider {}, isolation {}",
        sandbox.provider_name(),
        sandbox.isolation().tier
    );
    let mut backend = plimsoll::mcp::backend::LocalBackend::new(
        std::sync::Arc::new(sandbox),
        plimsoll::sandbox::LOCAL_CALLER,
    );
    // Snapshots are kept in the state directory (`PLIMSOLL_SNAPSHOT_DIR`
    // elsewhere), so that a later `plimsoll mcp` resumes them.
    let dir = std::env::var_os("PLIMSOLL_SNAPSHOT_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| plimsoll::config::default_state_dir().join("snapshots"));
    match plimsoll::snapshot::store::SnapshotStore::open(&dir, Default::default()) {
        Ok(store) => backend = backend.with_snapshots(std::sync::Arc::new(store)),
        Err(e) => eprintln!("plimsoll mcp: snapshots are off ({}: {e})", dir.display()),
    }
    let backend = std::sync::Arc::new(backend);
    match plimsoll::mcp::serve_stdio(backend).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e),
    }
}
