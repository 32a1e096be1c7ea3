//! The tree against a model: random sequences of writes, truncations,
//! directories, removals and renames, after each of which the tree's
//! charges and contents must equal the model's, computed from scratch.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap as Map;

/// A model of the tree: paths of files to contents and a set of
/// directories, with charges computed from scratch.
#[derive(Debug, Clone, Default)]
struct Model {
    files: Map<String, Vec<u8>>,
    dirs: std::collections::BTreeSet<String>,
}

impl Model {
    fn parent_ok(&self, p: &str) -> bool {
        match p.rsplit_once('/') {
            None => true,
            Some((d, _)) => self.dirs.contains(d),
        }
    }
    fn bytes(&self) -> u64 {
        let name = |p: &str| p.rsplit('/').next().map_or(0, str::len) as u64;
        self.files
            .iter()
            .map(|(p, d)| name(p) + d.len() as u64)
            .sum::<u64>()
            + self.dirs.iter().map(|p| name(p)).sum::<u64>()
    }
    fn entries(&self) -> u64 {
        (self.files.len() + self.dirs.len()) as u64
    }
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize, u16, Vec<u8>),
    Truncate(usize, u16),
    Mkdir(usize),
    Unlink(usize),
    Rmdir(usize),
    Rename(usize, usize),
}

const PATHS: &[&str] = &["a", "b", "d", "d/a", "d/b", "d/e", "d/e/a", "e"];

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PATHS.len();
    prop_oneof![
        (
            p.clone(),
            0u16..300,
            proptest::collection::vec(any::<u8>(), 0..64)
        )
            .prop_map(|(a, b, c)| Op::Write(a, b, c)),
        (p.clone(), 0u16..300).prop_map(|(a, b)| Op::Truncate(a, b)),
        p.clone().prop_map(Op::Mkdir),
        p.clone().prop_map(Op::Unlink),
        p.clone().prop_map(Op::Rmdir),
        (p.clone(), p).prop_map(|(a, b)| Op::Rename(a, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn the_tree_agrees_with_a_model(ops in proptest::collection::vec(op(), 1..60)) {
        let budget = Budget { bytes: 600, entries: 6, handles: 8 };
        let mut t = Tree::new(budget);
        let mut m = Model::default();
        for op in ops {
            match op {
                Op::Write(p, off, data) => {
                    let path = PATHS[p];
                    let flags = OpenFlags { create: true, ..OpenFlags::default() };
                    let r = t.open(HOST, ROOT, path, flags).and_then(|h| {
                        let id = t.node_of(h)?;
                        let w = t.write(id, off.into(), &data);
                        t.close(HOST, h)?;
                        w
                    });
                    let exists = m.files.contains_key(path);
                    let mut after = m.clone();
                    let f = after.files.entry(path.into()).or_default();
                    let end = off as usize + data.len();
                    if f.len() < end { f.resize(end, 0); }
                    f[off as usize..end].copy_from_slice(&data);
                    let fits = after.bytes() <= budget.bytes && after.entries() <= budget.entries;
                    let can = !m.dirs.contains(path) && m.parent_ok(path);
                    if can && fits {
                        prop_assert_eq!(r, Ok(data.len()));
                        m = after;
                    } else {
                        prop_assert!(r.is_err());
                        if can && !exists && r == Err(TreeError::NoSpace) {
                            // Created, then the write did not fit.
                            m.files.entry(path.into()).or_default();
                            if m.bytes() > budget.bytes || m.entries() > budget.entries {
                                m.files.remove(path);
                            }
                        }
                    }
                }
                Op::Truncate(p, size) => {
                    let path = PATHS[p];
                    let r = t.resolve(ROOT, path).and_then(|id| t.set_size(id, size.into()));
                    if let Some(f) = m.files.get(path) {
                        let mut after = m.clone();
                        let mut g = f.clone();
                        g.resize(size as usize, 0);
                        after.files.insert(path.into(), g);
                        if after.bytes() <= budget.bytes {
                            prop_assert_eq!(r, Ok(()));
                            m = after;
                        } else {
                            prop_assert_eq!(r, Err(TreeError::NoSpace));
                        }
                    } else {
                        prop_assert!(r.is_err());
                    }
                }
                Op::Mkdir(p) => {
                    let path = PATHS[p];
                    let r = t.mkdir(ROOT, path);
                    let mut after = m.clone();
                    after.dirs.insert(path.into());
                    let ok = !m.dirs.contains(path) && !m.files.contains_key(path)
                        && m.parent_ok(path)
                        && after.bytes() <= budget.bytes && after.entries() <= budget.entries;
                    prop_assert_eq!(r.is_ok(), ok, "{:?}", r);
                    if ok { m = after; }
                }
                Op::Unlink(p) => {
                    let path = PATHS[p];
                    let r = t.unlink(ROOT, path);
                    prop_assert_eq!(r.is_ok(), m.files.remove(path).is_some(), "{:?}", r);
                }
                Op::Rmdir(p) => {
                    let path = PATHS[p];
                    let empty = m.dirs.contains(path)
                        && !m.files.keys().chain(m.dirs.iter()).any(|k| k.starts_with(&format!("{path}/")));
                    let r = t.rmdir(ROOT, path);
                    prop_assert_eq!(r.is_ok(), empty, "{:?}", r);
                    if empty { m.dirs.remove(path); }
                }
                Op::Rename(a, b) => {
                    let (from, to) = (PATHS[a], PATHS[b]);
                    let r = t.rename(ROOT, from, ROOT, to);
                    let mut after = m.clone();
                    let ok = if let Some(d) = m.files.get(from) {
                        !m.dirs.contains(to) && after.parent_ok(to) && {
                            after.files.remove(from);
                            after.files.insert(to.into(), d.clone());
                            from == to || after.bytes() <= budget.bytes
                        }
                    } else if m.dirs.contains(from) {
                        let inside = to == from || to.starts_with(&format!("{from}/"));
                        let target_empty_dir = m.dirs.contains(to)
                            && !m.files.keys().chain(m.dirs.iter()).any(|k| k.starts_with(&format!("{to}/")));
                        (!inside || to == from) && m.parent_ok(to) && !m.files.contains_key(to)
                            && (!m.dirs.contains(to) || target_empty_dir || to == from) && {
                                if to != from {
                                    let moved = |k: &String| k == from || k.starts_with(&format!("{from}/"));
                                    let re = |k: &String| format!("{to}{}", &k[from.len()..]);
                                    after.dirs.remove(to);
                                    after.files = m.files.iter().map(|(k, v)| (if moved(k) { re(k) } else { k.clone() }, v.clone())).collect();
                                    after.dirs = m.dirs.iter().filter(|k| *k != to).map(|k| if moved(k) { re(k) } else { k.clone() }).collect();
                                }
                                after.bytes() <= budget.bytes
                            }
                    } else {
                        false
                    };
                    prop_assert_eq!(r.is_ok(), ok, "{} -> {}: {:?}", from, to, r);
                    if ok { m = after; }
                }
            }
            prop_assert_eq!(t.bytes(), m.bytes());
            prop_assert_eq!(t.entries(), m.entries());
            prop_assert_eq!(t.open_handles(), 0);
            for (p, d) in &m.files {
                let id = t.resolve(ROOT, p).expect("a file the model has");
                prop_assert_eq!(t.read(id, 0, usize::MAX).expect("read"), d.as_slice());
            }
        }
    }
}
