//! The prologue every session instance of an interpreter component
//! evaluates before its first cell, and the host resources it leaves
//! held.
//!
//! An instance keeps WASI handles between evaluations (its C library
//! caches the preopened directory and the standard streams), and a handle
//! is an index into the instance's own handle table, which lives in the
//! engine, not in linear memory: a snapshot of memory names handles a
//! fresh instance does not have. So every session instance first takes
//! exactly those handles, in one fixed order — the prologue touches the
//! workspace, reads standard input and writes to both output streams —
//! and a snapshot is taken only while the instance holds exactly what its
//! prologue left (no file, listing or stream of its own open). A resumed
//! instance evaluates the same prologue before its state is written, and
//! so holds the same handles under the same numbers.

use crate::guest::Guest;
use crate::state::RunState;
use std::collections::BTreeMap;
use wasmtime::Store;

/// CPython (the `python-wasm` guest). Its output is discarded.
const PYTHON: &str = "import os, sys\nos.listdir('.')\nsys.stdin.read()\nprint(' ', end='', flush=True)\nprint(' ', end='', file=sys.stderr, flush=True)";

/// QuickJS (the `quickjs-wasm` guest). Its output is discarded.
const JAVASCRIPT: &str = "require('fs').readdirSync('.'); require('fs').readFileSync(0); process.stdout.write(' '); process.stderr.write(' ');";

/// The prologue of `guest`, if its sessions take one.
pub fn of(guest: &Guest) -> Option<&'static str> {
    match guest.family() {
        "python-wasm" => Some(PYTHON),
        "quickjs-wasm" => Some(JAVASCRIPT),
        _ => None,
    }
}

/// What one held host resource is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// A workspace descriptor, on this node.
    Descriptor(crate::memtree::NodeId),
    InputStream,
    OutputStream,
    Pollable,
    Other,
}

/// The resources `store`'s instance holds: each table index and kind.
pub fn held(store: &mut Store<RunState>) -> Vec<(u32, Held)> {
    let table = &mut store.data_mut().table;
    let count = table.iter_mut().count();
    let mut out = Vec::with_capacity(count);
    let mut key = 0u32;
    // Indices are dense from 0 up to the highest in use; look no further
    // than the table could ever hold.
    while out.len() < count && key < 1 << 20 {
        let probe: BTreeMap<u32, u32> = (key..key.saturating_add(64)).map(|k| (k, k)).collect();
        for (entry, k) in table.iter_entries(probe) {
            let Ok(e) = entry else { continue };
            let kind = if let Some(d) = e.downcast_ref::<crate::memfs::Descriptor>() {
                Held::Descriptor(d.node())
            } else if e.is::<wasmtime_wasi::p2::DynInputStream>() {
                Held::InputStream
            } else if e.is::<wasmtime_wasi::p2::DynOutputStream>() {
                Held::OutputStream
            } else if e.is::<wasmtime_wasi::p2::DynPollable>() {
                Held::Pollable
            } else {
                Held::Other
            };
            out.push((k, kind));
        }
        key = key.saturating_add(64);
    }
    out
}

/// `held` as a snapshot records it: `index:kind` each, in order.
pub fn describe(held: &[(u32, Held)]) -> String {
    held.iter()
        .map(|(i, h)| match h {
            Held::Descriptor(n) => format!("{i}:d{n}"),
            Held::InputStream => format!("{i}:i"),
            Held::OutputStream => format!("{i}:o"),
            Held::Pollable => format!("{i}:p"),
            Held::Other => format!("{i}:x"),
        })
        .collect::<Vec<_>>()
        .join(",")
}
