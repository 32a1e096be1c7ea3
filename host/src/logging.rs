//! The log the binaries write to stderr, and what it never holds.
//!
//! The filter comes from `PLIMSOLL_LOG` (`tracing-subscriber`'s directive
//! syntax), with a default per binary. Whatever it says, events of the MCP
//! SDK (`rmcp`) are dropped: it logs MCP session ids, which are
//! capabilities, and raw protocol messages at every level from `info` down.
//! plimsoll's own events are written never to carry a session or run id, a
//! path, a body or a secret (SECURITY.md).

use tracing_subscriber::Layer as _;
use tracing_subscriber::filter::{EnvFilter, FilterExt as _, filter_fn};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// The variable the filter is read from.
pub const LOG_ENV: &str = "PLIMSOLL_LOG";

/// Whether an event or span of `target` may be logged at all, whatever the
/// filter: not the MCP SDK's.
pub fn target_allowed(target: &str) -> bool {
    !(target == "rmcp" || target.starts_with("rmcp::"))
}

/// Installs the stderr log: `PLIMSOLL_LOG`, else `default`, never the MCP
/// SDK's events. A second call does nothing.
pub fn init(default: &str) {
    let filter = EnvFilter::try_from_env(LOG_ENV).unwrap_or_else(|_| EnvFilter::new(default));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter.and(filter_fn(|meta| target_allowed(meta.target()))));
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_sdk_is_never_logged() {
        assert!(!target_allowed("rmcp"));
        assert!(!target_allowed("rmcp::transport::streamable_http_server"));
        assert!(target_allowed("plimsoll::sandbox"));
        assert!(target_allowed("rmcpx"));
    }
}
