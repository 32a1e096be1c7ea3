//! The tree itself: its nodes (a directory's sorted entries or a file's
//! bytes), the counters it keeps, and everything that only reads it —
//! `stat`, listings, reads.
//!
//! Guarantees: a node id that was freed (or never given) is
//! [`TreeError::BadHandle`], never a panic; a listing is in byte order and
//! can be read one entry at a time without copying the directory; a read
//! past the end is short, never an error.

use super::charge::Budget;
use super::handles::{Handle, Owner};
use super::{NodeId, Stat, TreeError};
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
pub(super) enum Kind {
    Dir(BTreeMap<String, NodeId>),
    File(Vec<u8>),
}

#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) kind: Kind,
    /// The directory holding it and its name there; `None` for the root
    /// and for a file unlinked while open.
    pub(super) parent: Option<(NodeId, String)>,
    /// Handles holding it.
    pub(super) open: u32,
    /// Modified, nanoseconds of the run's clock.
    pub(super) mtime_ns: u64,
    /// Never reused within a tree: what `metadata-hash` and `st_ino` see.
    pub(super) ino: u64,
}

/// One workspace.
#[derive(Debug, Clone)]
pub struct Tree {
    pub(super) nodes: Vec<Option<Node>>,
    pub(super) free: Vec<NodeId>,
    pub(super) handles: BTreeMap<Handle, (NodeId, Owner)>,
    pub(super) next_handle: Handle,
    pub(super) budget: Budget,
    pub(super) bytes: u64,
    pub(super) entries: u64,
    pub(super) now_ns: u64,
    pub(super) next_ino: u64,
    /// A change was refused for space since the flag was last taken.
    pub(super) refused_space: bool,
}

impl Tree {
    /// An empty tree within `budget`.
    pub fn new(budget: Budget) -> Tree {
        Tree {
            nodes: vec![Some(Node {
                kind: Kind::Dir(BTreeMap::new()),
                parent: None,
                open: 0,
                mtime_ns: 0,
                ino: 1,
            })],
            free: Vec::new(),
            handles: BTreeMap::new(),
            next_handle: 1,
            budget,
            bytes: 0,
            entries: 0,
            now_ns: 0,
            next_ino: 2,
            refused_space: false,
        }
    }

    /// Sets the clock new timestamps are read from (the run's own).
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    /// Bytes charged now.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Entries charged now.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Handles open now.
    pub fn open_handles(&self) -> usize {
        self.handles.len()
    }

    /// Whether a change was refused for space since the last call, and
    /// clears it: a run that then fails ended `disk_exhausted`.
    pub fn take_refused_space(&mut self) -> bool {
        std::mem::take(&mut self.refused_space)
    }

    /// The budgets in force.
    pub fn budget(&self) -> Budget {
        self.budget
    }

    /// Replaces the budgets (a session's next evaluation). What is held
    /// already stays; only growth is checked against the new ones.
    pub fn set_budget(&mut self, budget: Budget) {
        self.budget = budget;
    }

    pub(super) fn node(&self, id: NodeId) -> Result<&Node, TreeError> {
        self.nodes
            .get(id)
            .and_then(Option::as_ref)
            .ok_or(TreeError::BadHandle)
    }

    pub(super) fn node_mut(&mut self, id: NodeId) -> Result<&mut Node, TreeError> {
        self.nodes
            .get_mut(id)
            .and_then(Option::as_mut)
            .ok_or(TreeError::BadHandle)
    }

    pub(super) fn alloc(&mut self, node: Node) -> NodeId {
        match self.free.pop() {
            Some(id) => {
                self.nodes[id] = Some(node);
                id
            }
            None => {
                self.nodes.push(Some(node));
                self.nodes.len() - 1
            }
        }
    }

    /// What a node is.
    pub fn stat(&self, id: NodeId) -> Result<Stat, TreeError> {
        let n = self.node(id)?;
        Ok(Stat {
            node: id,
            ino: n.ino,
            is_dir: matches!(n.kind, Kind::Dir(_)),
            size: match &n.kind {
                Kind::File(d) => d.len() as u64,
                Kind::Dir(_) => 0,
            },
            mtime_ns: n.mtime_ns,
        })
    }

    /// The names in a directory, in byte order.
    pub fn list(&self, id: NodeId) -> Result<Vec<(String, bool)>, TreeError> {
        match &self.node(id)?.kind {
            Kind::Dir(entries) => Ok(entries
                .iter()
                .map(|(k, v)| {
                    let dir = matches!(
                        self.nodes.get(*v).and_then(Option::as_ref).map(|n| &n.kind),
                        Some(Kind::Dir(_))
                    );
                    (k.clone(), dir)
                })
                .collect()),
            Kind::File(_) => Err(TreeError::NotDirectory),
        }
    }

    /// The entry of directory `id` that comes after `after` in name order
    /// (the first with `None`): a listing read one entry at a time, with
    /// nothing copied but the entry.
    pub fn next_entry(
        &self,
        id: NodeId,
        after: Option<&str>,
    ) -> Result<Option<(String, bool)>, TreeError> {
        use std::ops::Bound;
        let Kind::Dir(entries) = &self.node(id)?.kind else {
            return Err(TreeError::NotDirectory);
        };
        let lower = match after {
            Some(a) => Bound::Excluded(a),
            None => Bound::Unbounded,
        };
        Ok(entries
            .range::<str, _>((lower, Bound::Unbounded))
            .next()
            .map(|(name, child)| {
                let dir = matches!(
                    self.nodes
                        .get(*child)
                        .and_then(Option::as_ref)
                        .map(|n| &n.kind),
                    Some(Kind::Dir(_))
                );
                (name.clone(), dir)
            }))
    }

    /// Reads up to `len` bytes at `offset`.
    pub fn read(&self, id: NodeId, offset: u64, len: usize) -> Result<&[u8], TreeError> {
        match &self.node(id)?.kind {
            Kind::File(d) => {
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(d.len());
                let end = start.saturating_add(len).min(d.len());
                Ok(&d[start..end])
            }
            Kind::Dir(_) => Err(TreeError::IsDirectory),
        }
    }
}
