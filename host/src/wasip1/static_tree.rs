//! A read-only tree of files shared by every run of a guest: the
//! scientific guest's standard-library zip and matplotlib's data.
//!
//! It is built once when the guest loads and never changes; runs hold an
//! `Arc` of it and their open files are positions in it, so a run can
//! neither change it nor pin host resources through it (its descriptors
//! count against the run's own open-file cap in [`super::fds`]).

use crate::memtree::TreeError;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A node's index; the root is 0.
pub type StaticNode = usize;

#[derive(Debug)]
enum Kind {
    Dir(BTreeMap<String, StaticNode>),
    File(Arc<[u8]>),
}

/// An immutable directory tree.
#[derive(Debug)]
pub struct StaticTree {
    nodes: Vec<(Kind, Option<StaticNode>)>,
}

impl Default for StaticTree {
    fn default() -> Self {
        StaticTree {
            nodes: vec![(Kind::Dir(BTreeMap::new()), None)],
        }
    }
}

impl StaticTree {
    /// Adds `contents` at the relative path `path` (`a/b/c`), making the
    /// directories on the way. A name already taken is left as it is.
    pub fn insert(&mut self, path: &str, contents: Arc<[u8]>) {
        let mut dir = 0;
        let names: Vec<&str> = path.split('/').filter(|n| !n.is_empty()).collect();
        for (i, name) in names.iter().enumerate() {
            let last = i + 1 == names.len();
            let next = match &self.nodes[dir].0 {
                Kind::Dir(entries) => entries.get(*name).copied(),
                Kind::File(_) => return,
            };
            dir = match next {
                Some(n) => n,
                None => {
                    let kind = if last {
                        Kind::File(contents.clone())
                    } else {
                        Kind::Dir(BTreeMap::new())
                    };
                    self.nodes.push((kind, Some(dir)));
                    let id = self.nodes.len() - 1;
                    if let Kind::Dir(entries) = &mut self.nodes[dir].0 {
                        entries.insert((*name).to_owned(), id);
                    }
                    id
                }
            };
        }
    }

    /// The node `path` names from `from`. `..` never climbs above `from`'s
    /// preopen (the root), as in the writable workspace.
    pub fn resolve(&self, from: StaticNode, path: &str) -> Result<StaticNode, TreeError> {
        if path.len() > 4096 {
            return Err(TreeError::NameTooLong);
        }
        if path.starts_with('/') {
            return Err(TreeError::NotPermitted);
        }
        let mut at = from;
        for name in path.split('/') {
            match name {
                "" | "." => {
                    if !self.is_dir(at) {
                        return Err(TreeError::NotDirectory);
                    }
                }
                ".." => {
                    at = self
                        .nodes
                        .get(at)
                        .and_then(|n| n.1)
                        .ok_or(TreeError::NotPermitted)?;
                }
                _ => {
                    let Some((Kind::Dir(entries), _)) = self.nodes.get(at) else {
                        return Err(TreeError::NotDirectory);
                    };
                    at = *entries.get(name).ok_or(TreeError::NotFound)?;
                }
            }
        }
        Ok(at)
    }

    /// Whether `node` is a directory.
    pub fn is_dir(&self, node: StaticNode) -> bool {
        matches!(self.nodes.get(node), Some((Kind::Dir(_), _)))
    }

    /// A file's size (0 for a directory).
    pub fn size(&self, node: StaticNode) -> u64 {
        match self.nodes.get(node) {
            Some((Kind::File(d), _)) => d.len() as u64,
            _ => 0,
        }
    }

    /// Up to `len` bytes of a file from `offset`.
    pub fn read(&self, node: StaticNode, offset: u64, len: usize) -> Result<&[u8], TreeError> {
        match self.nodes.get(node) {
            Some((Kind::File(d), _)) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(d.len());
                let end = start.saturating_add(len).min(d.len());
                Ok(&d[start..end])
            }
            Some((Kind::Dir(_), _)) => Err(TreeError::IsDirectory),
            None => Err(TreeError::BadHandle),
        }
    }

    /// The `index`th entry of a directory (name order): its name, node and
    /// whether it is a directory.
    pub fn entry(&self, node: StaticNode, index: usize) -> Option<(&str, StaticNode, bool)> {
        let Some((Kind::Dir(entries), _)) = self.nodes.get(node) else {
            return None;
        };
        entries
            .iter()
            .nth(index)
            .map(|(k, v)| (k.as_str(), *v, self.is_dir(*v)))
    }

    /// Every file, as its relative path (`a/b/c`) and contents, in name
    /// order.
    pub fn files(&self) -> Vec<(String, Arc<[u8]>)> {
        let mut out = Vec::new();
        let mut stack = vec![(0usize, String::new())];
        while let Some((node, prefix)) = stack.pop() {
            match self.nodes.get(node) {
                Some((Kind::File(d), _)) => out.push((prefix, d.clone())),
                Some((Kind::Dir(entries), _)) => {
                    for (name, child) in entries.iter().rev() {
                        let path = if prefix.is_empty() {
                            name.clone()
                        } else {
                            format!("{prefix}/{name}")
                        };
                        stack.push((*child, path));
                    }
                }
                None => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_within_the_tree_and_never_above_it() {
        let mut t = StaticTree::default();
        t.insert("a/b/c.txt", Arc::from(&b"hello"[..]));
        let c = t.resolve(0, "a/b/c.txt").expect("the test's own tree");
        assert_eq!(t.read(c, 1, 3).expect("the test's own tree"), b"ell");
        assert_eq!(t.resolve(0, "a/../a/b/c.txt"), Ok(c));
        assert_eq!(t.resolve(0, ".."), Err(TreeError::NotPermitted));
        assert_eq!(t.resolve(0, "/etc"), Err(TreeError::NotPermitted));
        assert_eq!(t.resolve(0, "a/b/c.txt/x"), Err(TreeError::NotDirectory));
        assert_eq!(t.resolve(0, "nope"), Err(TreeError::NotFound));
        let a = t.resolve(0, "a").expect("the test's own tree");
        assert_eq!(t.entry(a, 0).map(|e| e.0), Some("b"));
        assert!(t.entry(a, 1).is_none());
        t.insert("a/a.txt", Arc::from(&b"x"[..]));
        t.insert("z", Arc::from(&b"y"[..]));
        let files: Vec<String> = t.files().into_iter().map(|(p, _)| p).collect();
        assert_eq!(files, ["a/a.txt", "a/b/c.txt", "z"]);
    }
}
