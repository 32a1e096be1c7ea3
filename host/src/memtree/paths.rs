//! Paths: resolving a path from a directory, and making and removing the
//! names in it (`mkdir`, file creation, `unlink`, `rmdir`).
//!
//! Guarantees: a path is at most [`MAX_PATH`] bytes of relative,
//! `/`-separated plain names (at most [`MAX_NAME`] bytes each, no NUL or
//! backslash); `.` is skipped and `..` never climbs above the directory it
//! is resolved from; there are no links, so resolution never leaves the
//! tree and never loops; nesting stops at [`MAX_DEPTH`]; nothing is
//! created in a directory removed while a handle held it; an unlinked
//! file lives on, still charged, while a handle holds it.

use super::tree::{Kind, Node, Tree};
use super::{MAX_DEPTH, MAX_NAME, MAX_PATH, NodeId, ROOT, TreeError};
use std::collections::BTreeMap;

pub(super) fn check_name(name: &str) -> Result<(), TreeError> {
    if name.len() > MAX_NAME {
        return Err(TreeError::NameTooLong);
    }
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(TreeError::Invalid);
    }
    Ok(())
}

impl Tree {
    pub(super) fn depth(&self, mut id: NodeId) -> usize {
        let mut d = 0;
        while let Some(Some(Node {
            parent: Some((p, _)),
            ..
        })) = self.nodes.get(id)
        {
            id = *p;
            d += 1;
            // Parents never form a cycle (a removed directory takes no new
            // entries); the bound makes a bug a refusal, not a hang.
            if d > 2 * MAX_DEPTH {
                return usize::MAX;
            }
        }
        d
    }

    /// Whether `id` is a directory that was removed while a handle kept it
    /// (it has no parent and is not the root). Nothing may be created in or
    /// moved into it: its children would outlive it once freed.
    pub(super) fn detached(&self, id: NodeId) -> bool {
        id != ROOT && self.node(id).is_ok_and(|n| n.parent.is_none())
    }

    /// Resolves `path` from the directory `from` to (its parent directory,
    /// the last name); the last name is `None` for a path naming `from`
    /// itself or one of its ancestors.
    pub(super) fn walk(
        &self,
        from: NodeId,
        path: &str,
    ) -> Result<(NodeId, Option<String>), TreeError> {
        if path.len() > MAX_PATH {
            return Err(TreeError::NameTooLong);
        }
        if path.starts_with('/') || path.contains(['\\', '\0']) {
            return Err(TreeError::NotPermitted);
        }
        let parts: Vec<&str> = path
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        let mut dir = from;
        if !matches!(self.node(dir)?.kind, Kind::Dir(_)) {
            return Err(TreeError::NotDirectory);
        }
        // Levels below `from`: `..` may climb back up to it, never above.
        let mut below = 0usize;
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            if *part == ".." {
                match &self.node(dir)?.parent {
                    Some((p, _)) if below > 0 => {
                        dir = *p;
                        below -= 1;
                    }
                    _ => return Err(TreeError::NotPermitted),
                }
                continue;
            }
            check_name(part)?;
            if last {
                return Ok((dir, Some((*part).to_owned())));
            }
            let Kind::Dir(entries) = &self.node(dir)?.kind else {
                return Err(TreeError::NotDirectory);
            };
            let next = *entries.get(*part).ok_or(TreeError::NotFound)?;
            if !matches!(self.node(next)?.kind, Kind::Dir(_)) {
                return Err(TreeError::NotDirectory);
            }
            dir = next;
            below += 1;
        }
        Ok((dir, None))
    }

    pub(super) fn lookup(&self, dir: NodeId, name: &str) -> Result<Option<NodeId>, TreeError> {
        match &self.node(dir)?.kind {
            Kind::Dir(entries) => Ok(entries.get(name).copied()),
            Kind::File(_) => Err(TreeError::NotDirectory),
        }
    }

    /// The node `path` names from `from`, if it exists.
    pub fn resolve(&self, from: NodeId, path: &str) -> Result<NodeId, TreeError> {
        let (dir, name) = self.walk(from, path)?;
        match name {
            None => Ok(dir),
            Some(n) => self.lookup(dir, &n)?.ok_or(TreeError::NotFound),
        }
    }

    pub(super) fn link(
        &mut self,
        dir: NodeId,
        name: &str,
        kind: Kind,
    ) -> Result<NodeId, TreeError> {
        // As Linux answers a create in a removed directory.
        if self.detached(dir) {
            return Err(TreeError::NotFound);
        }
        if self.depth(dir).saturating_add(1) > MAX_DEPTH {
            return Err(TreeError::NameTooLong);
        }
        self.charge(name.len() as u64, 1)?;
        let now = self.now_ns;
        let ino = self.next_ino;
        self.next_ino += 1;
        let id = self.alloc(Node {
            kind,
            parent: Some((dir, name.to_owned())),
            open: 0,
            mtime_ns: now,
            ino,
        });
        if let Ok(Node {
            kind: Kind::Dir(entries),
            mtime_ns,
            ..
        }) = self.node_mut(dir)
        {
            entries.insert(name.to_owned(), id);
            *mtime_ns = now;
        }
        Ok(id)
    }

    /// Creates the directory `path` names.
    pub fn mkdir(&mut self, from: NodeId, path: &str) -> Result<NodeId, TreeError> {
        let (dir, name) = self.walk(from, path)?;
        let name = name.ok_or(TreeError::Exists)?;
        if self.lookup(dir, &name)?.is_some() {
            return Err(TreeError::Exists);
        }
        self.link(dir, &name, Kind::Dir(BTreeMap::new()))
    }

    pub(super) fn detach(&mut self, id: NodeId) {
        let now = self.now_ns;
        let Some(Some(n)) = self.nodes.get_mut(id) else {
            return;
        };
        if let Some((dir, name)) = n.parent.take() {
            self.refund(name.len() as u64, 0);
            if let Some(Some(Node {
                kind: Kind::Dir(entries),
                mtime_ns,
                ..
            })) = self.nodes.get_mut(dir)
            {
                entries.remove(&name);
                *mtime_ns = now;
            }
        }
    }

    /// Removes a file's name; the file lives on (still charged) while a
    /// handle holds it.
    pub fn unlink(&mut self, from: NodeId, path: &str) -> Result<(), TreeError> {
        let (dir, name) = self.walk(from, path)?;
        let name = name.ok_or(TreeError::IsDirectory)?;
        let id = self.lookup(dir, &name)?.ok_or(TreeError::NotFound)?;
        if matches!(self.node(id)?.kind, Kind::Dir(_)) {
            return Err(TreeError::IsDirectory);
        }
        self.detach(id);
        self.maybe_free(id);
        Ok(())
    }

    /// Removes an empty directory.
    pub fn rmdir(&mut self, from: NodeId, path: &str) -> Result<(), TreeError> {
        let (dir, name) = self.walk(from, path)?;
        let name = name.ok_or(TreeError::NotPermitted)?;
        let id = self.lookup(dir, &name)?.ok_or(TreeError::NotFound)?;
        match &self.node(id)?.kind {
            Kind::Dir(e) if e.is_empty() => {}
            Kind::Dir(_) => return Err(TreeError::NotEmpty),
            Kind::File(_) => return Err(TreeError::NotDirectory),
        }
        self.detach(id);
        self.maybe_free(id);
        Ok(())
    }
}
