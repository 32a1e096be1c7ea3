//! The library's levels, and a test that keeps imports pointing down.
//!
//! One crate has no Cargo to stop a module from importing one above it, so
//! this test does what crates would: it reads every file of `src/`, finds
//! each `crate::…` path outside comments, and fails on an edge from a
//! module to a module of a higher level, unless the edge is in
//! [`KNOWN_UPWARD`], a list that may only shrink. docs/architecture.md has
//! the same table.

/// Level of each module, lowest first: 1 data, 2 capabilities, 3 engine,
/// 4 provider, 5 sandbox, 6 wire adapters. A module not listed fails the
/// test (a new module must be placed).
pub const LEVELS: &[(&str, u8)] = &[
    // L1 data: no wasmtime instance, no I/O of their own.
    ("blob", 1),
    ("envelope", 1),
    ("tier", 1),
    ("trace", 1),
    ("run", 1),
    ("bindings", 1),
    ("paths", 1),
    ("cpu", 1),
    ("redact", 1),
    ("workspace_usage", 1),
    ("worlds", 1),
    ("worlds/check", 1),
    ("worlds/componentize", 1),
    ("worker/protocol", 1),
    // L2 capabilities a guest is given.
    ("upstream", 2),
    ("grant", 2),
    ("grant/credential", 2),
    ("grant/headers", 2),
    ("grant/profile", 2),
    ("grant/profile/origin", 2),
    ("grant/profile/parse", 2),
    ("grant/profile/tests", 2),
    ("grant/reflection", 2),
    ("grant/reflection/codings", 2),
    ("grant/reflection/forms", 2),
    ("grant/reflection/inspect", 2),
    ("grant/route", 2),
    ("broker", 2),
    ("broker/check", 2),
    ("broker/send", 2),
    ("http_gate", 2),
    ("programs", 2),
    ("workspace", 2),
    ("memtree", 2),
    ("memtree/tree", 2),
    ("memtree/charge", 2),
    ("memtree/handles", 2),
    ("memtree/image", 2),
    ("memtree/paths", 2),
    ("memtree/rename", 2),
    ("memtree/tests", 2),
    ("memtree/model_tests", 2),
    ("wasip1/static_tree", 2),
    // L3 engine.
    ("engine", 3),
    ("limiter", 3),
    ("output", 3),
    ("component_cache", 3),
    ("state", 3),
    ("memfs", 3),
    ("memfs/descriptor", 3),
    ("memfs/listing", 3),
    ("memfs/stream", 3),
    ("wasip1/fds", 3),
    ("wasip1", 3),
    ("wasip1/abi", 3),
    ("wasip1/memory", 3),
    ("wasip1/io", 3),
    ("wasip1/fd", 3),
    ("wasip1/path", 3),
    ("wasip1/environ", 3),
    ("wasip1/process", 3),
    ("scientific", 3),
    ("scientific/files", 3),
    ("scientific/link", 3),
    ("scientific/instance", 3),
    ("scientific/door", 3),
    ("guest", 3),
    ("snapshot", 3),
    ("snapshot/instrument", 3),
    ("snapshot/access", 3),
    ("snapshot/core_access", 3),
    ("snapshot/image", 3),
    ("snapshot/prologue", 3),
    ("snapshot/archive", 2),
    ("snapshot/store", 2),
    ("runtime", 3),
    ("warm", 3),
    ("executor", 3),
    ("executor/store", 3),
    ("executor/claim", 3),
    ("executor/call", 3),
    ("executor/child", 3),
    ("executor/classify", 3),
    ("executor/execute", 3),
    ("reaper", 3),
    // L4 providers and boundaries.
    ("provider", 4),
    ("provider/wrapped", 4),
    ("worker", 4),
    ("worker/pool", 4),
    ("worker/pool/process", 4),
    ("worker/pool/admission", 4),
    ("worker/pool/affinity", 4),
    ("worker/pool/lifecycle", 4),
    ("worker/pool/images", 4),
    ("worker/pool/run", 4),
    ("worker/pool/tests", 4),
    ("worker/pool/session", 4),
    ("live_session", 4),
    ("live_session/snapshot", 4),
    ("worker/observe", 4),
    ("wrapper", 4),
    ("wrapper/bwrap", 4),
    ("wrapper/gvisor", 4),
    ("wrapper/microvm", 4),
    ("wrapper/microvm/detect", 4),
    ("wrapper/microvm/accel", 4),
    ("wrapper/microvm/archive", 4),
    ("wrapper/initramfs", 4),
    ("wrapper/seccomp", 4),
    // L5 the sandbox.
    ("session", 5),
    ("sandbox", 5),
    ("sandbox/guests", 5),
    ("sandbox/project", 5),
    ("sandbox/runs", 5),
    ("sandbox/sessions", 5),
    ("sandbox/snapshots", 5),
    ("session/snapshot", 5),
    ("sandbox/shelf", 5),
    // L6 wire adapters.
    ("config", 6),
    ("logging", 6),
    ("batch", 6),
    ("batch/jobs", 6),
    ("batch/results", 6),
    ("batch/tests", 6),
    ("mcp", 6),
    ("mcp/args", 6),
    ("mcp/calls", 6),
    ("mcp/connection", 6),
    ("mcp/tools", 6),
    ("mcp/backend", 6),
    ("mcp/render", 6),
    ("mcp/snapshots", 6),
    ("preinit", 6),
    ("worker/serve", 6),
    ("worker/vm_init", 6),
    ("lib", 6),
    ("layers", 6),
    ("layers_check", 6),
];

/// Groups of modules that import each other in a circle today (within one
/// level). Each must only shrink, and none may appear; the seams that
/// break them are in docs/architecture.md.
pub const KNOWN_CYCLES: &[&[&str]] = &[];

/// Upward edges that exist today, each with the seam that will remove it
/// (docs/architecture.md). This list may only shrink.
pub const KNOWN_UPWARD: &[(&str, &str)] = &[];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layers_check::{Layers, code_of, paths};
    use std::path::Path;

    fn layers(src: &Path) -> Layers<'_> {
        Layers {
            src,
            levels: LEVELS,
            known_upward: KNOWN_UPWARD,
            known_cycles: KNOWN_CYCLES,
            isolated_level: None,
            roots: &["lib", "layers"],
            skip_dirs: &["bin"],
        }
    }

    #[test]
    fn no_module_imports_one_above_it() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        if let Err(e) = layers(&src).check() {
            panic!("{e}");
        }
    }

    #[test]
    fn the_parser_sees_grouped_and_inline_paths() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let l = layers(&src);
        let code = code_of(
            "use crate::{run::RunResult, tier};\n// crate::sandbox in a comment\nlet x = crate::worker::pool::Pool::start();",
        );
        let ts: Vec<_> = paths(&code).iter().filter_map(|p| l.target(p)).collect();
        assert_eq!(ts, ["run", "tier", "worker/pool"]);
    }
}
