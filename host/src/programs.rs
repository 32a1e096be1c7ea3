//! The `programs` capability: what the shell guest's `python3` and `node`
//! start. Only the shell guest is linked with it (`runtime`), and only a
//! shell run's store is given a [`ProgramRunner`].
//!
//! Guarantees: a program is a *guest* — a fresh instance of one of the
//! host's interpreter components, in the engine that runs the shell; no
//! host process is ever started. It works in the shell's own workspace,
//! under the shell's deadline, with the shell's broker (one call budget and
//! one trace for the whole run); its outputs are capped like a run's. A
//! name the runner does not serve is refused (`Err`), never looked up on
//! the host.

use crate::bindings::shell::programs::{Completion, Invocation};
use crate::broker::RunBroker;
use crate::workspace::Workspace;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::Instant;

/// The names a shell may start, and the interpreter each one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `python3`, `python`.
    Python,
    /// `node`, `nodejs`.
    Node,
}

impl Program {
    /// The program a command name starts, if it is one of ours.
    pub fn named(name: &str) -> Option<Program> {
        match name {
            "python3" | "python" => Some(Program::Python),
            "node" | "nodejs" => Some(Program::Node),
            _ => None,
        }
    }
}

/// What a started program shares with the shell that started it.
pub(crate) struct Parent {
    /// The shell's workspace: the program sees the same files.
    pub(crate) workspace: Arc<Workspace>,
    /// The shell's broker: calls count against the run's budget and are
    /// traced with its own.
    pub(crate) broker: RunBroker,
    /// The shell's deadline: the program ends by it.
    pub(crate) deadline: Instant,
    /// The most fuel the program may spend: what the shell has left. What
    /// it spends is charged to the shell ([`Ran::fuel_used`]), so a run's
    /// programs share its one fuel budget.
    pub(crate) fuel: u64,
}

/// What starting a program gave.
pub(crate) struct Ran {
    /// How it ended, or why it could not start (the shell prints it).
    pub(crate) completion: Result<Completion, String>,
    /// The fuel it spent (0 when the engine counts none).
    pub(crate) fuel_used: u64,
}

/// Runs the programs a shell starts (the executor's
/// `executor::ChildRunner` in practice).
pub(crate) trait ProgramRunner: Send + Sync {
    /// Runs `inv` to its end. `Err` when it cannot be started at all (an
    /// unknown name, an interpreter this host does not have): the message
    /// is what the shell prints.
    fn run<'a>(&'a self, inv: Invocation, parent: Parent) -> BoxFuture<'a, Ran>;
}
