//! Executes one run in this process: a fresh store and instance, the WASI
//! context the envelope allows, the call, and the classification of how it
//! ended.
//!
//! The phases, one module each:
//!
//! * `store`: prepare — the workspace with the request's files, the
//!   deny-by-default WASI context, the broker on its side, the store with
//!   its limiter, fuel and deadline; and the reset between a session's
//!   evaluations.
//! * `claim`: the placeholder store a pre-instantiated instance
//!   ([`crate::warm`]) is made in, and a run's claim on one.
//! * `call`: instantiate (making room in a full pool) and call the guest
//!   once, under the deadline plus a grace.
//! * `child`: the programs a shell starts (`python3`, `node`), each a
//!   fresh interpreter instance over the shell's workspace.
//! * `classify`: how the call ended, as a pure function of its outcome and
//!   the host's stop facts.
//! * `execute`: the whole run, and the report of outputs, artifacts and
//!   usage before the instance is handed to the reaper.

mod call;
mod child;
mod claim;
mod classify;
mod execute;
mod store;

pub(crate) use crate::guest::Live;
pub(crate) use call::{instantiate_for_run, invoke};
pub(crate) use child::arm;
pub(crate) use claim::claim_warm;
pub(crate) use classify::{Classified, classify};
pub(crate) use execute::{execute, execute_with, report};
pub(crate) use store::{BrokerSide, Prepared, prepare, prepare_in, reset_for_next_run_with};
