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
    ("workspace_usage", 1),
    ("worker/protocol", 1),
    // L2 capabilities a guest is given.
    ("upstream", 2),
    ("grant", 2),
    ("grant/credential", 2),
    ("grant/headers", 2),
    ("grant/profile", 2),
    ("grant/reflection", 2),
    ("grant/reflection/codings", 2),
    ("grant/reflection/forms", 2),
    ("grant/reflection/inspect", 2),
    ("grant/route", 2),
    ("broker", 2),
    ("http_gate", 2),
    ("workspace", 2),
    ("memtree", 2),
    ("wasip1/static_tree", 2),
    // L3 engine.
    ("engine", 3),
    ("limiter", 3),
    ("output", 3),
    ("component_cache", 3),
    ("state", 3),
    ("memfs", 3),
    ("wasip1/fds", 3),
    ("wasip1", 3),
    ("scientific", 3),
    ("guest", 3),
    ("runtime", 3),
    ("warm", 3),
    ("executor", 3),
    ("reaper", 3),
    // L4 providers and boundaries.
    ("provider", 4),
    ("worker", 4),
    ("worker/pool", 4),
    ("worker/pool/session", 4),
    ("live_session", 4),
    ("worker/observe", 4),
    ("wrapper", 4),
    ("wrapper/bwrap", 4),
    ("wrapper/gvisor", 4),
    ("wrapper/microvm", 4),
    ("wrapper/initramfs", 4),
    ("wrapper/seccomp", 4),
    // L5 the sandbox.
    ("session", 5),
    ("sandbox", 5),
    // L6 wire adapters.
    ("config", 6),
    ("logging", 6),
    ("batch", 6),
    ("mcp", 6),
    ("mcp/backend", 6),
    ("mcp/render", 6),
    ("preinit", 6),
    ("worker/serve", 6),
    ("worker/vm_init", 6),
    ("lib", 6),
    ("layers", 6),
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
    use std::collections::BTreeSet;
    use std::path::Path;

    /// `src/a/b.rs` → `a/b`, `src/a/mod.rs` → `a`.
    fn module_of(rel: &Path) -> String {
        let s = rel.with_extension("").to_string_lossy().replace('\\', "/");
        s.strip_suffix("/mod").map(str::to_owned).unwrap_or(s)
    }

    fn level(m: &str) -> Option<u8> {
        LEVELS.iter().find(|(n, _)| *n == m).map(|(_, l)| *l)
    }

    /// The crate root's re-exports (`pub use run::{RunRequest, …}` in
    /// lib.rs): name → the module that defines it.
    fn root_reexports() -> Vec<(String, String)> {
        let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
            .expect("read lib.rs");
        let mut out = Vec::new();
        for line in lib.lines() {
            let Some(rest) = line.trim().strip_prefix("pub use ") else {
                continue;
            };
            let rest = rest.trim_end_matches(';');
            let Some((module, names)) = rest.split_once("::") else {
                continue;
            };
            let names = names.trim_start_matches('{').trim_end_matches('}');
            for n in names.split(',') {
                let n = n.trim().rsplit("::").next().unwrap_or("").trim();
                if !n.is_empty() {
                    out.push((n.to_owned(), module.replace("::", "/")));
                }
            }
        }
        out
    }

    /// The module a `crate::` path names: `worker::pool::X` → `worker/pool`
    /// when that is a module, else `worker`; a root re-export (`Envelope`)
    /// → the module that defines it.
    fn target(path: &str) -> Option<String> {
        let mut segs = path.split("::").filter(|s| !s.is_empty());
        let first = segs.next()?.trim();
        if first.is_empty() || !first.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        if first.starts_with(|c: char| c.is_ascii_uppercase()) {
            return root_reexports()
                .into_iter()
                .find(|(n, _)| n == first)
                .map(|(_, m)| m);
        }
        if let Some(second) = segs.next() {
            let two = format!("{first}/{}", second.trim());
            if level(&two).is_some() {
                return Some(two);
            }
        }
        Some(first.to_owned())
    }

    /// Removes `//` comments (and so doc comments) line by line, keeping
    /// string contents as they are (no `crate::` path is in a string).
    fn code_of(text: &str) -> String {
        text.lines()
            .map(|l| match l.find("//") {
                // `http://` and friends inside strings: keep a line whose
                // `//` follows a `:` with a quote before it.
                Some(i) if !l[..i].ends_with(':') => &l[..i],
                _ => l,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every `crate::…` path in `code`, grouped imports expanded
    /// (`crate::{a::X, b}` → `a::X`, `b`).
    fn paths(code: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            if let Some(group) = after.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    out.push(item.trim().to_owned());
                }
            } else {
                let end = after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(after.len());
                out.push(after[..end].to_owned());
            }
            rest = after;
        }
        out
    }

    #[test]
    fn no_module_imports_one_above_it() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        let mut dirs = vec![src.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).expect("read src").flatten() {
                let p = e.path();
                if p.is_dir() {
                    if p.file_name().is_some_and(|n| n != "bin") {
                        dirs.push(p);
                    }
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        let mut upward = BTreeSet::new();
        let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
        let mut unplaced = Vec::new();
        for f in &files {
            let m = module_of(f.strip_prefix(&src).expect("under src"));
            let Some(from) = level(&m) else {
                unplaced.push(m);
                continue;
            };
            let text = std::fs::read_to_string(f).expect("read a source file");
            for p in paths(&code_of(&text)) {
                let Some(t) = target(&p) else { continue };
                if t == m || t.starts_with(&format!("{m}/")) {
                    continue;
                }
                // A parent's `mod child;` is not an import of the child.
                if m != "lib" && m != "layers" {
                    edges.insert((m.clone(), t.clone()));
                }
                match level(&t) {
                    Some(to) if to > from => {
                        upward.insert((m.clone(), t));
                    }
                    Some(_) => {}
                    None => unplaced.push(format!("{t} (named from {m})")),
                }
            }
        }
        assert!(
            unplaced.is_empty(),
            "modules missing from LEVELS: {unplaced:?}"
        );
        let known: BTreeSet<(String, String)> = KNOWN_UPWARD
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let new: Vec<_> = upward.difference(&known).collect();
        assert!(
            new.is_empty(),
            "imports that point up a level (move the type down or add a seam): {new:?}"
        );
        let gone: Vec<_> = known.difference(&upward).collect();
        assert!(
            gone.is_empty(),
            "known upward imports that no longer exist: remove them from KNOWN_UPWARD: {gone:?}"
        );
        let cycles = cycles(&edges);
        let known_cycles: Vec<BTreeSet<String>> = KNOWN_CYCLES
            .iter()
            .map(|c| c.iter().map(|m| m.to_string()).collect())
            .collect();
        let unknown: Vec<_> = cycles
            .iter()
            .filter(|c| !known_cycles.iter().any(|k| c.is_subset(k)))
            .collect();
        assert!(
            unknown.is_empty(),
            "modules that import each other in a circle: {unknown:?}"
        );
        for k in &known_cycles {
            assert!(
                cycles.iter().any(|c| c == k),
                "a known circle shrank or is gone: update KNOWN_CYCLES ({k:?}; now {cycles:?})"
            );
        }
    }

    /// The strongly connected groups of more than one module.
    fn cycles(edges: &BTreeSet<(String, String)>) -> Vec<BTreeSet<String>> {
        let nodes: BTreeSet<&String> = edges.iter().flat_map(|(a, b)| [a, b]).collect();
        let reach = |from: &String| {
            let mut seen = BTreeSet::new();
            let mut stack = vec![from.clone()];
            while let Some(n) = stack.pop() {
                for (a, b) in edges {
                    if *a == n && seen.insert(b.clone()) {
                        stack.push(b.clone());
                    }
                }
            }
            seen
        };
        let reaches: Vec<(String, BTreeSet<String>)> =
            nodes.iter().map(|n| ((*n).clone(), reach(n))).collect();
        let mut out: Vec<BTreeSet<String>> = Vec::new();
        for (n, r) in &reaches {
            let group: BTreeSet<String> = reaches
                .iter()
                .filter(|(m, rm)| m == n || (r.contains(m) && rm.contains(n)))
                .map(|(m, _)| m.clone())
                .collect();
            if group.len() > 1 && !out.contains(&group) {
                out.push(group);
            }
        }
        out
    }

    #[test]
    fn the_parser_sees_grouped_and_inline_paths() {
        let code = code_of(
            "use crate::{run::RunResult, tier};\n// crate::sandbox in a comment\nlet x = crate::worker::pool::Pool::start();",
        );
        let ts: Vec<_> = paths(&code).iter().filter_map(|p| target(p)).collect();
        assert_eq!(ts, ["run", "tier", "worker/pool"]);
    }
}
