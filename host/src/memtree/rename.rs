//! `rename`, as POSIX has it: a file replaces a file, a directory an
//! empty directory.
//!
//! Guarantees: both parents are resolved before either name (as Linux
//! does); a directory is never moved into itself or below itself, nor
//! into a directory removed while held; the depth cap holds after the
//! move; what the rename frees and costs is checked against the byte
//! budget before anything changes, so a refused rename changes nothing
//! and the charges stay exact.

use super::tree::{Kind, Node, Tree};
use super::{MAX_DEPTH, NodeId, TreeError};

impl Tree {
    fn is_within(&self, mut id: NodeId, ancestor: NodeId) -> bool {
        for _ in 0..=2 * MAX_DEPTH {
            if id == ancestor {
                return true;
            }
            match self
                .nodes
                .get(id)
                .and_then(Option::as_ref)
                .and_then(|n| n.parent.as_ref())
            {
                Some((p, _)) => id = *p,
                None => return false,
            }
        }
        // Deeper than any tree can be: treated as inside (refused).
        true
    }

    /// Renames `from_path` to `to_path`, replacing a file there (or an
    /// empty directory, by a directory), as POSIX `rename` does.
    pub fn rename(
        &mut self,
        from_dir: NodeId,
        from_path: &str,
        to_dir: NodeId,
        to_path: &str,
    ) -> Result<(), TreeError> {
        // Both parents first, then the names (as Linux does).
        let (src_dir, src_name) = self.walk(from_dir, from_path)?;
        let (dst_dir, dst_name) = self.walk(to_dir, to_path)?;
        if self.detached(dst_dir) {
            return Err(TreeError::NotFound);
        }
        let src_name = src_name.ok_or(TreeError::NotPermitted)?;
        let id = self
            .lookup(src_dir, &src_name)?
            .ok_or(TreeError::NotFound)?;
        let dst_name = dst_name.ok_or(TreeError::Exists)?;
        let src_is_dir = matches!(self.node(id)?.kind, Kind::Dir(_));
        if src_is_dir && self.is_within(dst_dir, id) {
            return Err(TreeError::Invalid);
        }
        if let Some(existing) = self.lookup(dst_dir, &dst_name)? {
            if existing == id {
                return Ok(());
            }
            // Onto one of its own ancestors (as Linux answers).
            if self.is_within(id, existing) {
                return Err(TreeError::NotEmpty);
            }
            match (&self.node(existing)?.kind, src_is_dir) {
                (Kind::Dir(e), true) if e.is_empty() => {}
                (Kind::Dir(_), true) => return Err(TreeError::NotEmpty),
                (Kind::Dir(_), false) => return Err(TreeError::IsDirectory),
                (Kind::File(_), true) => return Err(TreeError::NotDirectory),
                (Kind::File(_), false) => {}
            }
        }
        if src_is_dir && self.depth(dst_dir) + 1 + self.height(id) > MAX_DEPTH {
            return Err(TreeError::NameTooLong);
        }
        // What the rename frees (the old name; the replaced node's name,
        // and its contents and entry when no handle holds it) against the
        // new name: checked before anything changes.
        let mut freed = src_name.len() as u64;
        let replaced = self.lookup(dst_dir, &dst_name)?;
        if let Some(existing) = replaced {
            let n = self.node(existing)?;
            freed += dst_name.len() as u64;
            if n.open == 0
                && let Kind::File(d) = &n.kind
            {
                freed += d.len() as u64;
            }
        }
        let after = (self.bytes - freed.min(self.bytes)).saturating_add(dst_name.len() as u64);
        if after > self.budget.bytes && dst_name.len() as u64 > freed {
            self.refused_space = true;
            return Err(TreeError::NoSpace);
        }
        if let Some(existing) = replaced {
            self.detach(existing);
            self.maybe_free(existing);
        }
        self.detach(id);
        // Within the budget: checked above.
        self.bytes = self.bytes.saturating_add(dst_name.len() as u64);
        let now = self.now_ns;
        if let Ok(n) = self.node_mut(id) {
            n.parent = Some((dst_dir, dst_name.clone()));
        }
        if let Ok(Node {
            kind: Kind::Dir(entries),
            mtime_ns,
            ..
        }) = self.node_mut(dst_dir)
        {
            entries.insert(dst_name, id);
            *mtime_ns = now;
        }
        Ok(())
    }

    /// Levels of directories below `id`, itself not counted.
    fn height(&self, id: NodeId) -> usize {
        let mut best = 0;
        let mut stack = vec![(id, 0usize)];
        while let Some((n, d)) = stack.pop() {
            best = best.max(d);
            if let Some(Some(Node {
                kind: Kind::Dir(e), ..
            })) = self.nodes.get(n)
            {
                for c in e.values() {
                    stack.push((*c, d + 1));
                }
            }
        }
        best
    }
}
