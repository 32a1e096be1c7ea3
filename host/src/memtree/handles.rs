//! Handles and their owners: a handle is a number in the tree's table
//! naming one node and the [`Owner`] that opened it.
//!
//! Guarantees: at most `budget.handles` handles are open at once
//! ([`TreeError::TooManyHandles`]); handle numbers wrap and never collide
//! with one in use, and 0 is never given; only a handle's owner can close
//! it; [`Tree::release_owner`] closes all of an owner's handles at once;
//! a node with no name and no handle left is freed at that moment and its
//! contents and entry refunded.

use super::tree::{Kind, Tree};
use super::{NodeId, OpenFlags, ROOT, TreeError};

/// An open handle.
pub type Handle = u32;
/// Who holds a handle: one guest instance, or the host.
pub type Owner = u64;
/// The host's own handles (placing a request's files, reading artifacts).
pub const HOST: Owner = 0;

/// A new owner, never [`HOST`] and never given out twice in this process.
pub fn new_owner() -> Owner {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Tree {
    /// Opens what `path` names (creating a file as `flags` say) and holds
    /// it with a new handle.
    pub fn open(
        &mut self,
        owner: Owner,
        from: NodeId,
        path: &str,
        flags: OpenFlags,
    ) -> Result<Handle, TreeError> {
        if self.handles.len() >= self.budget.handles as usize {
            return Err(TreeError::TooManyHandles);
        }
        let (dir, name) = self.walk(from, path)?;
        let id = match name {
            None => {
                if flags.create && flags.exclusive {
                    return Err(TreeError::Exists);
                }
                dir
            }
            Some(name) => match self.lookup(dir, &name)? {
                Some(_) if flags.create && flags.exclusive => return Err(TreeError::Exists),
                Some(id) => id,
                None if flags.create && !flags.directory => {
                    self.link(dir, &name, Kind::File(Vec::new()))?
                }
                None => return Err(TreeError::NotFound),
            },
        };
        let is_dir = matches!(self.node(id)?.kind, Kind::Dir(_));
        if flags.directory && !is_dir {
            return Err(TreeError::NotDirectory);
        }
        if is_dir && (flags.truncate || (flags.create && !flags.directory && id != dir)) {
            return Err(TreeError::IsDirectory);
        }
        if flags.truncate {
            self.set_size_of(id, 0)?;
        }
        self.hold(owner, id)
    }

    /// A new handle on the node `id` (a stream over a file keeps it alive
    /// as a handle does), within the handle cap.
    pub fn hold(&mut self, owner: Owner, id: NodeId) -> Result<Handle, TreeError> {
        if self.handles.len() >= self.budget.handles as usize {
            return Err(TreeError::TooManyHandles);
        }
        self.node(id)?;
        // Numbers wrap (a long session opens and closes billions of
        // times) and skip the ones in use: fewer than the cap are, so a
        // free one is found within cap + 1 steps.
        let mut h = self.next_handle;
        while h == 0 || self.handles.contains_key(&h) {
            h = h.wrapping_add(1);
        }
        self.next_handle = h.wrapping_add(1);
        self.node_mut(id)?.open += 1;
        self.handles.insert(h, (id, owner));
        Ok(h)
    }

    /// A new handle on the root (a preopen).
    pub fn open_root(&mut self, owner: Owner) -> Result<Handle, TreeError> {
        self.open(owner, ROOT, ".", OpenFlags::default())
    }

    /// The node a handle holds.
    pub fn node_of(&self, h: Handle) -> Result<NodeId, TreeError> {
        self.handles
            .get(&h)
            .map(|(id, _)| *id)
            .ok_or(TreeError::BadHandle)
    }

    /// Lets go of `owner`'s handle `h`; a node with no name and no handle
    /// left is freed and its charges refunded. Another owner's handle (or
    /// one already released) is [`TreeError::BadHandle`] and stays open.
    pub fn close(&mut self, owner: Owner, h: Handle) -> Result<(), TreeError> {
        match self.handles.get(&h) {
            Some((_, o)) if *o == owner => {}
            _ => return Err(TreeError::BadHandle),
        }
        let (id, _) = self.handles.remove(&h).ok_or(TreeError::BadHandle)?;
        let n = self.node_mut(id)?;
        n.open = n.open.saturating_sub(1);
        self.maybe_free(id);
        Ok(())
    }

    /// Closes every handle `owner` holds (an instance that was discarded);
    /// returns how many.
    pub fn release_owner(&mut self, owner: Owner) -> usize {
        let held: Vec<Handle> = self
            .handles
            .iter()
            .filter(|(_, (_, o))| *o == owner)
            .map(|(h, _)| *h)
            .collect();
        for &h in &held {
            let _ = self.close(owner, h);
        }
        held.len()
    }

    /// Handles `owner` holds.
    pub fn handles_of(&self, owner: Owner) -> usize {
        self.handles.values().filter(|(_, o)| *o == owner).count()
    }

    pub(super) fn maybe_free(&mut self, id: NodeId) {
        let Some(Some(n)) = self.nodes.get(id) else {
            return;
        };
        if id == ROOT || n.open > 0 || n.parent.is_some() {
            return;
        }
        let size = match &n.kind {
            Kind::File(d) => d.len() as u64,
            Kind::Dir(_) => 0,
        };
        self.nodes[id] = None;
        self.free.push(id);
        self.refund(size, 1);
    }
}
