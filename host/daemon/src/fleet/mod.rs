//! A fleet of plimsolld (docs/operations.md, "A fleet"): each node's
//! identity, the state its nodes share in Redis, and the answers a call
//! for a session that lived on a lost node gets.
//!
//! A single daemon without `PLIMSOLL_NODE_TAG` and
//! `PLIMSOLL_SHARED_STATE_URL` is exactly what it was: none of this runs.
//!
//! One concept per child: [`node`] (tag, boot epoch, what a session id
//! says of its node), [`shared`] (the quotas and the node registry in
//! Redis, each one atomic script on the server's clock), [`agent`] (the
//! TCP port a balancer's agent check reads: `ready`, `drain`, `down`),
//! [`handover`] (a draining node's sessions, sealed with the fleet's key).

pub mod agent;
pub mod handover;
pub mod node;
pub mod registry;
mod scripts;
pub mod shared;

pub use node::Node;
pub use shared::{FailureMode, Shared};

/// Why a session is lost, as the API names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// Its node is gone (killed, crashed, partitioned for longer than the
    /// registry's 3 s).
    NodeLost,
    /// Its node came back with a new boot: the session died with the old.
    NodeRestarted,
    /// Its node drained and stopped.
    NodeDrained,
}

impl Lost {
    /// The `reason` of a `410 session_lost`, and the metrics label.
    pub fn as_str(self) -> &'static str {
        match self {
            Lost::NodeLost => "node_lost",
            Lost::NodeRestarted => "node_restarted",
            Lost::NodeDrained => "node_drained",
        }
    }
}

/// What a session id that is not open on this node means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whereabouts {
    /// Nothing can be said: it answers as an unknown session (a malformed
    /// id, an id of this node's own boot, an id whose tag never
    /// registered).
    Unknown,
    /// Its node is alive with that boot: the balancer sent the call to the
    /// wrong node (try again).
    Elsewhere,
    /// Lost, and why.
    Lost(Lost),
}
