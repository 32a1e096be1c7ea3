//! The service layer: everything the daemon's wires share, and nothing of
//! any one wire.
//!
//! REST ([`crate::api`]), plimsoll protocol 4 ([`crate::connect`]) and MCP
//! ([`crate::mcp`]) are adapters over [`App`]: each translates its wire
//! into the calls here — admission ([`admission`]), bounded bodies
//! ([`body`]), session rules ([`sessions`]), accounting and audit
//! ([`accounting`]) — and the library's [`plimsoll::Sandbox`]. No adapter
//! imports another (a test in `layers.rs` keeps it so), so a wire added
//! later is one more adapter over this layer.

pub mod accounting;
pub mod admission;
pub mod body;
pub mod handover;
pub mod lost;
pub mod sessions;
pub mod snapshots;
pub mod usage;

pub use accounting::fingerprint;
pub use admission::{PreLease, check_profiles};
pub use body::{BodyPermit, body_share_kib, read_body, read_body_of};
pub use sessions::{Chain, Chained, Chains, SessionOpen, valid_session_id};

use crate::audit::AuditLog;
use crate::callers::Callers;
use crate::metrics::Metrics;
use crate::quota::Quotas;
use plimsoll::Sandbox;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// What every wire shares: the sandbox, the callers and their quotas, the
/// audit log and metrics, the body budgets and the session rules' state.
pub struct App {
    pub sandbox: Arc<Sandbox>,
    pub callers: Callers,
    pub quotas: Quotas,
    pub audit: AuditLog,
    pub metrics: Metrics,
    /// Set on SIGTERM: new work is refused with 503 `draining`.
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
    pub chains: Chains,
    /// Where session snapshots are kept (`PLIMSOLL_SNAPSHOT_DIR`); `None`
    /// when the store could not be opened (snapshots are then refused).
    pub snapshots: Option<Arc<plimsoll::snapshot::store::SnapshotStore>>,
    /// The largest snapshot archive imported, bytes
    /// (`PLIMSOLL_SNAPSHOT_MAX_BYTES`).
    pub snapshot_max_bytes: usize,
    /// This node, in a fleet (`PLIMSOLL_NODE_TAG`).
    pub node: Option<crate::fleet::Node>,
    /// The fleet's shared state (`PLIMSOLL_SHARED_STATE_URL`).
    pub fleet: Option<Arc<crate::fleet::Shared>>,
    /// The fleet's key, which seals sessions handed over at drain
    /// (`PLIMSOLL_FLEET_KEY_FILE`).
    pub fleet_key: Option<Arc<crate::fleet::handover::Key>>,
    /// Calls waiting on this node for a session being handed over.
    pub handover_waiters: handover::Waiters,
    /// What the agent-check port says.
    pub agent: crate::fleet::agent::Word,
    /// Set on SIGTERM with `PLIMSOLL_SESSION_DRAIN_SECS`: new work is
    /// refused, calls on open sessions are still served.
    pub sessions_draining: AtomicBool,
}
