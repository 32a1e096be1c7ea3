//! The layering check both crates' tests use (`layers.rs` here and in
//! `host/daemon/src`): read every file of a crate's `src/`, find each
//! `crate::…` path outside comments, and report an edge from a module to a
//! module of a higher level, a circle of modules, or an edge between two
//! modules of a level whose groups must not know each other (the daemon's
//! wires). Included with `#[path]` by each crate's test; it is not part of
//! either crate's API.

use std::collections::BTreeSet;
use std::path::Path;

/// One crate's rules.
pub struct Layers<'a> {
    /// The crate's `src/`.
    pub src: &'a Path,
    /// Each module's level, lowest first.
    pub levels: &'a [(&'a str, u8)],
    /// Upward edges allowed for now (a list that may only shrink).
    pub known_upward: &'a [(&'a str, &'a str)],
    /// Circles allowed for now (a list that may only shrink).
    pub known_cycles: &'a [&'a [&'a str]],
    /// A level whose modules may import their own group (the first path
    /// segment) and lower levels only, never another group of the level.
    pub isolated_level: Option<u8>,
    /// Modules whose `mod` lines are not imports (the crate root).
    pub roots: &'a [&'a str],
    /// Directories under `src/` that are not modules of the crate.
    pub skip_dirs: &'a [&'a str],
}

/// `src/a/b.rs` → `a/b`, `src/a/mod.rs` → `a`.
pub fn module_of(rel: &Path) -> String {
    let s = rel.with_extension("").to_string_lossy().replace('\\', "/");
    s.strip_suffix("/mod").map(str::to_owned).unwrap_or(s)
}

/// Removes `//` comments (and so doc comments) line by line, keeping
/// string contents as they are (no `crate::` path is in a string).
pub fn code_of(text: &str) -> String {
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
pub fn paths(code: &str) -> Vec<String> {
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

/// The strongly connected groups of more than one module.
pub fn cycles(edges: &BTreeSet<(String, String)>) -> Vec<BTreeSet<String>> {
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

impl Layers<'_> {
    /// The level of module `m`.
    pub fn level(&self, m: &str) -> Option<u8> {
        self.levels.iter().find(|(n, _)| *n == m).map(|(_, l)| *l)
    }

    /// The crate root's re-exports (`pub use run::{RunRequest, …}` in
    /// lib.rs): name → the module that defines it.
    fn root_reexports(&self) -> Vec<(String, String)> {
        let lib = std::fs::read_to_string(self.src.join("lib.rs")).unwrap_or_default();
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
    pub fn target(&self, path: &str) -> Option<String> {
        let mut segs = path.split("::").filter(|s| !s.is_empty());
        let first = segs.next()?.trim();
        if first.is_empty() || !first.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        if first.starts_with(|c: char| c.is_ascii_uppercase()) {
            return self
                .root_reexports()
                .into_iter()
                .find(|(n, _)| n == first)
                .map(|(_, m)| m);
        }
        if let Some(second) = segs.next() {
            let two = format!("{first}/{}", second.trim());
            if self.level(&two).is_some() {
                return Some(two);
            }
        }
        Some(first.to_owned())
    }

    /// Checks every rule; the error lists every violation found.
    pub fn check(&self) -> Result<(), String> {
        let mut files = Vec::new();
        let mut dirs = vec![self.src.to_path_buf()];
        while let Some(d) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                return Err(format!("cannot read {}", d.display()));
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    if p.file_name()
                        .is_some_and(|n| !self.skip_dirs.iter().any(|s| n == *s))
                    {
                        dirs.push(p);
                    }
                } else if p.extension().is_some_and(|x| x == "rs") {
                    files.push(p);
                }
            }
        }
        let group = |m: &str| m.split('/').next().unwrap_or(m).to_owned();
        let mut upward = BTreeSet::new();
        let mut across = BTreeSet::new();
        let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
        let mut unplaced = Vec::new();
        for f in &files {
            let Ok(rel) = f.strip_prefix(self.src) else {
                continue;
            };
            let m = module_of(rel);
            let Some(from) = self.level(&m) else {
                unplaced.push(m);
                continue;
            };
            let text = std::fs::read_to_string(f).unwrap_or_default();
            for p in paths(&code_of(&text)) {
                let Some(t) = self.target(&p) else { continue };
                if t == m || t.starts_with(&format!("{m}/")) {
                    continue;
                }
                // A root's `mod child;` is not an import of the child.
                if !self.roots.contains(&m.as_str()) {
                    edges.insert((m.clone(), t.clone()));
                }
                match self.level(&t) {
                    Some(to) if to > from => {
                        upward.insert((m.clone(), t));
                    }
                    Some(to)
                        if Some(to) == self.isolated_level
                            && Some(from) == self.isolated_level
                            && group(&m) != group(&t) =>
                    {
                        across.insert((m.clone(), t));
                    }
                    Some(_) => {}
                    None => unplaced.push(format!("{t} (named from {m})")),
                }
            }
        }
        let mut problems = Vec::new();
        if !unplaced.is_empty() {
            problems.push(format!("modules missing from LEVELS: {unplaced:?}"));
        }
        let known: BTreeSet<(String, String)> = self
            .known_upward
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let new: Vec<_> = upward.difference(&known).collect();
        if !new.is_empty() {
            problems.push(format!(
                "imports that point up a level (move the type down or add a seam): {new:?}"
            ));
        }
        let gone: Vec<_> = known.difference(&upward).collect();
        if !gone.is_empty() {
            problems.push(format!(
                "known upward imports that no longer exist: remove them from KNOWN_UPWARD: {gone:?}"
            ));
        }
        if !across.is_empty() {
            problems.push(format!(
                "modules of one level that must not know each other do: {across:?}"
            ));
        }
        let found = cycles(&edges);
        let known_cycles: Vec<BTreeSet<String>> = self
            .known_cycles
            .iter()
            .map(|c| c.iter().map(|m| m.to_string()).collect())
            .collect();
        let unknown: Vec<_> = found
            .iter()
            .filter(|c| !known_cycles.iter().any(|k| c.is_subset(k)))
            .collect();
        if !unknown.is_empty() {
            problems.push(format!(
                "modules that import each other in a circle: {unknown:?}"
            ));
        }
        for k in &known_cycles {
            if !found.iter().any(|c| c == k) {
                problems.push(format!(
                    "a known circle shrank or is gone: update KNOWN_CYCLES ({k:?}; now {found:?})"
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }
}
