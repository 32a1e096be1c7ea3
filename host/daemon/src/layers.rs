//! The daemon's levels, and a test that keeps imports pointing down and the
//! wires apart: REST, protocol 4 and MCP are adapters over the service
//! layer and never import each other (docs/architecture.md).

#[path = "../../src/layers_check.rs"]
mod layers_check;

/// Level of each module, lowest first: 1 infrastructure (no wire's
/// knowledge), 2 the service layer, 3 the wires (which must not know each
/// other), 4 composition. A module not listed fails the test.
pub const LEVELS: &[(&str, u8)] = &[
    ("error", 1),
    ("callers", 1),
    ("config", 1),
    ("audit", 1),
    ("metrics", 1),
    ("quota", 1),
    ("tls", 1),
    ("server", 1),
    ("hardened", 1),
    ("fleet", 1),
    ("fleet/agent", 1),
    ("fleet/handover", 1),
    ("fleet/node", 1),
    ("fleet/registry", 1),
    ("fleet/scripts", 1),
    ("fleet/shared", 1),
    ("service", 2),
    ("service/accounting", 2),
    ("service/admission", 2),
    ("service/body", 2),
    ("service/handover", 2),
    ("service/lost", 2),
    ("service/sessions", 2),
    ("service/snapshots", 2),
    ("service/usage", 2),
    ("rest", 3),
    ("rest/openapi", 3),
    ("rest/snapshots", 3),
    ("connect", 3),
    ("connect/answer", 3),
    ("connect/describe", 3),
    ("connect/details", 3),
    ("connect/envelope", 3),
    ("connect/json", 3),
    ("connect/payload", 3),
    ("connect/record", 3),
    ("connect/run", 3),
    ("connect/session", 3),
    ("connect/tests", 3),
    ("mcp", 3),
    ("routes", 4),
    ("main", 4),
    ("lib", 4),
    ("layers", 4),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_module_imports_one_above_it_and_no_wire_another() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let layers = layers_check::Layers {
            src: &src,
            levels: LEVELS,
            known_upward: &[],
            known_cycles: &[],
            isolated_level: Some(3),
            roots: &["lib", "main", "layers"],
            skip_dirs: &[],
        };
        if let Err(e) = layers.check() {
            panic!("{e}");
        }
    }

    #[test]
    fn the_check_sees_a_wire_importing_another() {
        // The rule itself, on a made-up crate: `rest` naming `connect`.
        let dir = tempfile::tempdir().expect("tempdir");
        let src = dir.path();
        std::fs::write(src.join("lib.rs"), "mod rest; mod connect;").expect("write");
        std::fs::write(src.join("rest.rs"), "use crate::connect::X;").expect("write");
        std::fs::write(src.join("connect.rs"), "pub struct X;").expect("write");
        let layers = layers_check::Layers {
            src,
            levels: &[("lib", 4), ("rest", 3), ("connect", 3)],
            known_upward: &[],
            known_cycles: &[],
            isolated_level: Some(3),
            roots: &["lib"],
            skip_dirs: &[],
        };
        let e = layers.check().expect_err("a wire imports another");
        assert!(e.contains("must not know each other"), "{e}");
    }
}
