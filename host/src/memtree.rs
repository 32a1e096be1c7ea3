//! A workspace tree in host memory: directories and regular files, with
//! every byte the guest can make the host hold charged at the moment it is
//! asked for (issue #19).
//!
//! The run's `/work` is this tree: [`crate::workspace::Workspace`] holds
//! one, and `memfs` serves it to the guest as `wasi:filesystem`.
//!
//! What it guarantees:
//! - **Exact caps.** File contents (at their apparent size: a sparse write
//!   is charged for the hole), names, and one entry per node — including a
//!   file that was unlinked while a handle still holds it — are charged to
//!   the tree's byte and entry budgets before the change is made. A change
//!   past a budget fails with [`TreeError::NoSpace`] and changes nothing.
//! - **Bounded handles.** At most `max_handles` nodes may be held open at
//!   once ([`TreeError::TooManyHandles`]); a handle is a number, never a
//!   host resource.
//! - **Handles die with their owner.** Every handle belongs to an
//!   [`Owner`] (one per guest instance; [`HOST`] for the host's own work):
//!   only its owner can close it, and [`Tree::release_owner`] closes all of
//!   an owner's handles at once, so an instance that is discarded (a trap,
//!   a timeout, a session's end) gives back every descriptor, listing and
//!   open-file charge it held, unlinked-but-open files included, at the
//!   moment it is discarded.
//! - **Inside the tree only.** Paths are relative, `/`-separated plain
//!   names; `.` is skipped, and `..` may not climb above the directory it is
//!   resolved from's root. There are no links of any kind, so resolution
//!   never leaves the tree and never loops.
//! - **Stable listings**: a directory lists its names in byte order.

use std::collections::BTreeMap;

/// Longest name, bytes (as on Linux).
pub const MAX_NAME: usize = 255;
/// Longest path resolved, bytes.
pub const MAX_PATH: usize = 4096;
/// Deepest nesting of directories.
pub const MAX_DEPTH: usize = 128;

/// Why an operation was refused; each maps to one `wasi:filesystem`
/// error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// `no-entry`.
    #[error("no such file or directory")]
    NotFound,
    /// `exist`.
    #[error("the name exists")]
    Exists,
    /// `not-directory`.
    #[error("not a directory")]
    NotDirectory,
    /// `is-directory`.
    #[error("is a directory")]
    IsDirectory,
    /// `not-empty`.
    #[error("the directory is not empty")]
    NotEmpty,
    /// `insufficient-space`: a byte or entry budget would be passed.
    #[error("the workspace is full")]
    NoSpace,
    /// `name-too-long`.
    #[error("a name or the path is too long")]
    NameTooLong,
    /// `invalid`: an empty name, a NUL, a backslash, a rename of a
    /// directory into itself.
    #[error("invalid name or argument")]
    Invalid,
    /// `not-permitted`: `..` above the root, removing the root.
    #[error("not permitted")]
    NotPermitted,
    /// `bad-descriptor`.
    #[error("no such handle")]
    BadHandle,
    /// `quota`: the run holds as many handles as its envelope allows.
    #[error("too many open files")]
    TooManyHandles,
    /// `file-too-large`: an offset or size past `i64::MAX` or the budget.
    #[error("file too large")]
    FileTooLarge,
}

/// A node's id; the root is 0.
pub type NodeId = usize;
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

/// The root directory's node.
pub const ROOT: NodeId = 0;

#[derive(Debug, Clone)]
enum Kind {
    Dir(BTreeMap<String, NodeId>),
    File(Vec<u8>),
}

#[derive(Debug, Clone)]
struct Node {
    kind: Kind,
    /// The directory holding it and its name there; `None` for the root
    /// and for a file unlinked while open.
    parent: Option<(NodeId, String)>,
    /// Handles holding it.
    open: u32,
    /// Modified, nanoseconds of the run's clock.
    mtime_ns: u64,
    /// Never reused within a tree: what `metadata-hash` and `st_ino` see.
    ino: u64,
}

/// What `stat` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub node: NodeId,
    pub ino: u64,
    pub is_dir: bool,
    pub size: u64,
    pub mtime_ns: u64,
}

/// How `open` treats the last name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenFlags {
    /// Create a file when the name is missing.
    pub create: bool,
    /// With `create`: fail when it exists.
    pub exclusive: bool,
    /// Empty the file.
    pub truncate: bool,
    /// It must be a directory.
    pub directory: bool,
}

/// The budgets of one tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes of contents and names.
    pub bytes: u64,
    /// Nodes, the root not counted.
    pub entries: u64,
    /// Handles open at once.
    pub handles: u32,
}

/// One workspace.
#[derive(Debug, Clone)]
pub struct Tree {
    nodes: Vec<Option<Node>>,
    free: Vec<NodeId>,
    handles: BTreeMap<Handle, (NodeId, Owner)>,
    next_handle: Handle,
    budget: Budget,
    bytes: u64,
    entries: u64,
    now_ns: u64,
    next_ino: u64,
    /// A change was refused for space since the flag was last taken.
    refused_space: bool,
}

fn check_name(name: &str) -> Result<(), TreeError> {
    if name.len() > MAX_NAME {
        return Err(TreeError::NameTooLong);
    }
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\', '\0']) {
        return Err(TreeError::Invalid);
    }
    Ok(())
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

    fn node(&self, id: NodeId) -> Result<&Node, TreeError> {
        self.nodes
            .get(id)
            .and_then(Option::as_ref)
            .ok_or(TreeError::BadHandle)
    }

    fn node_mut(&mut self, id: NodeId) -> Result<&mut Node, TreeError> {
        self.nodes
            .get_mut(id)
            .and_then(Option::as_mut)
            .ok_or(TreeError::BadHandle)
    }

    fn charge(&mut self, bytes: u64, entries: u64) -> Result<(), TreeError> {
        let b = self.bytes.checked_add(bytes).ok_or(TreeError::NoSpace)?;
        let e = self
            .entries
            .checked_add(entries)
            .ok_or(TreeError::NoSpace)?;
        if b > self.budget.bytes || e > self.budget.entries {
            self.refused_space = true;
            return Err(TreeError::NoSpace);
        }
        self.bytes = b;
        self.entries = e;
        Ok(())
    }

    fn refund(&mut self, bytes: u64, entries: u64) {
        self.bytes = self.bytes.saturating_sub(bytes);
        self.entries = self.entries.saturating_sub(entries);
    }

    fn depth(&self, mut id: NodeId) -> usize {
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
    fn detached(&self, id: NodeId) -> bool {
        id != ROOT && self.node(id).is_ok_and(|n| n.parent.is_none())
    }

    /// Resolves `path` from the directory `from` to (its parent directory,
    /// the last name); the last name is `None` for a path naming `from`
    /// itself or one of its ancestors.
    fn walk(&self, from: NodeId, path: &str) -> Result<(NodeId, Option<String>), TreeError> {
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

    fn lookup(&self, dir: NodeId, name: &str) -> Result<Option<NodeId>, TreeError> {
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

    fn alloc(&mut self, node: Node) -> NodeId {
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

    fn link(&mut self, dir: NodeId, name: &str, kind: Kind) -> Result<NodeId, TreeError> {
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

    fn maybe_free(&mut self, id: NodeId) {
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

    fn set_size_of(&mut self, id: NodeId, size: u64) -> Result<(), TreeError> {
        if size > i64::MAX as u64 {
            return Err(TreeError::FileTooLarge);
        }
        let now = self.now_ns;
        let old = match &self.node(id)?.kind {
            Kind::File(d) => d.len() as u64,
            Kind::Dir(_) => return Err(TreeError::IsDirectory),
        };
        if size > old {
            self.charge(size - old, 0)?;
        } else {
            self.refund(old - size, 0);
        }
        // Within the byte budget, which a usize holds.
        let size = usize::try_from(size).map_err(|_| TreeError::FileTooLarge)?;
        let n = self.node_mut(id)?;
        if let Kind::File(d) = &mut n.kind {
            d.resize(size, 0);
            if size < d.capacity() / 2 {
                d.shrink_to_fit();
            }
        }
        n.mtime_ns = now;
        Ok(())
    }

    /// Truncates or extends (with zeros) a file.
    pub fn set_size(&mut self, id: NodeId, size: u64) -> Result<(), TreeError> {
        self.set_size_of(id, size)
    }

    /// Writes `data` at `offset`, growing the file (a hole is zeros,
    /// charged at its size). Returns the bytes written: all of them, or
    /// nothing and [`TreeError::NoSpace`].
    pub fn write(&mut self, id: NodeId, offset: u64, data: &[u8]) -> Result<usize, TreeError> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|e| *e <= i64::MAX as u64)
            .ok_or(TreeError::FileTooLarge)?;
        let old = self.stat(id)?.size;
        if end > old {
            self.set_size_of(id, end)?;
        }
        let now = self.now_ns;
        let n = self.node_mut(id)?;
        if let Kind::File(d) = &mut n.kind {
            // `end` fits: the file is at least that long now.
            let start = offset as usize;
            d[start..start + data.len()].copy_from_slice(data);
        }
        n.mtime_ns = now;
        Ok(data.len())
    }

    /// Appends `data`; returns the offset it was written at.
    pub fn append(&mut self, id: NodeId, data: &[u8]) -> Result<u64, TreeError> {
        let at = self.stat(id)?.size;
        self.write(id, at, data)?;
        Ok(at)
    }

    fn detach(&mut self, id: NodeId) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A directory removed while a handle holds it takes no new entries:
    /// otherwise its children outlive it, its freed id is reused, and the
    /// parents form a cycle that `depth` would walk forever (found in
    /// review of the preview-1 layer, reachable from memfs too).
    #[test]
    fn a_removed_directory_held_open_takes_no_new_entries() {
        let mut t = Tree::new(Budget {
            bytes: 1 << 20,
            entries: 100,
            handles: 16,
        });
        t.mkdir(ROOT, "d").expect("the test's own tree");
        let dir = OpenFlags {
            directory: true,
            ..OpenFlags::default()
        };
        let h = t.open(HOST, ROOT, "d", dir).expect("the test's own tree");
        let d = t.node_of(h).expect("the test's own tree");
        t.rmdir(ROOT, "d").expect("the test's own tree");
        assert_eq!(t.mkdir(d, "e"), Err(TreeError::NotFound));
        let create = OpenFlags {
            create: true,
            ..OpenFlags::default()
        };
        assert_eq!(t.open(HOST, d, "f", create), Err(TreeError::NotFound));
        t.open(HOST, ROOT, "x", create)
            .map(|h| t.close(HOST, h))
            .expect("the test's own tree")
            .expect("the test's own tree");
        assert_eq!(t.rename(ROOT, "x", d, "x"), Err(TreeError::NotFound));
        t.close(HOST, h).expect("the test's own tree");
        // Everything is refunded and the tree still works.
        t.mkdir(ROOT, "d2").expect("the test's own tree");
        t.mkdir(ROOT, "d2/e").expect("the test's own tree");
        assert_eq!(t.entries(), 3);
    }
    use std::collections::BTreeMap as Map;

    const BIG: Budget = Budget {
        bytes: 1 << 20,
        entries: 1000,
        handles: 64,
    };

    #[test]
    fn an_unlinked_open_file_stays_charged_until_closed() {
        let mut t = Tree::new(Budget {
            bytes: 100,
            entries: 10,
            handles: 4,
        });
        let h = t
            .open(
                HOST,
                ROOT,
                "a",
                OpenFlags {
                    create: true,
                    ..OpenFlags::default()
                },
            )
            .expect("create");
        let id = t.node_of(h).expect("node");
        t.write(id, 0, &[1; 50]).expect("write");
        t.unlink(ROOT, "a").expect("unlink");
        assert_eq!(
            (t.bytes(), t.entries()),
            (50, 1),
            "the name goes, the bytes stay"
        );
        assert_eq!(
            t.write(id, 50, &[1; 51]),
            Err(TreeError::NoSpace),
            "the cap holds"
        );
        assert_eq!(t.write(id, 50, &[1; 50]), Ok(50));
        t.close(HOST, h).expect("close");
        assert_eq!((t.bytes(), t.entries()), (0, 0));
    }

    #[test]
    fn sparse_writes_are_charged_at_their_size_and_huge_offsets_refused() {
        let mut t = Tree::new(BIG);
        let h = t
            .open(
                HOST,
                ROOT,
                "s",
                OpenFlags {
                    create: true,
                    ..OpenFlags::default()
                },
            )
            .expect("create");
        let id = t.node_of(h).expect("node");
        assert_eq!(t.write(id, 1 << 63, b"x"), Err(TreeError::FileTooLarge));
        assert_eq!(t.write(id, 1 << 40, b"x"), Err(TreeError::NoSpace));
        t.write(id, 1000, b"x").expect("write");
        assert_eq!(t.bytes(), 1 + 1001);
        assert_eq!(t.read(id, 999, 10).expect("read"), b"\0x");
    }

    #[test]
    fn handles_are_capped_and_paths_stay_inside() {
        let mut t = Tree::new(Budget { handles: 2, ..BIG });
        t.mkdir(ROOT, "d").expect("mkdir");
        let a = t.open(HOST, ROOT, "d", OpenFlags::default()).expect("one");
        let _b = t.open(HOST, ROOT, ".", OpenFlags::default()).expect("two");
        assert_eq!(
            t.open(HOST, ROOT, "d", OpenFlags::default()),
            Err(TreeError::TooManyHandles)
        );
        t.close(HOST, a).expect("close");
        assert!(t.open(HOST, ROOT, "d", OpenFlags::default()).is_ok());
        for bad in ["/etc/passwd", "..", "d/../..", "a\0b", "a\\b"] {
            assert!(t.resolve(ROOT, bad).is_err(), "{bad}");
        }
        assert_eq!(t.resolve(ROOT, "d/..").expect("root"), ROOT);
        assert_eq!(
            t.resolve(ROOT, &"x".repeat(10_000)),
            Err(TreeError::NameTooLong)
        );
        assert_eq!(t.mkdir(ROOT, &"n".repeat(256)), Err(TreeError::NameTooLong));
    }

    #[test]
    fn renames_replace_files_refuse_cycles_and_keep_charges_exact() {
        let mut t = Tree::new(BIG);
        t.mkdir(ROOT, "a").expect("a");
        t.mkdir(ROOT, "a/b").expect("a/b");
        assert_eq!(t.rename(ROOT, "a", ROOT, "a/b/c"), Err(TreeError::Invalid));
        let f = |t: &mut Tree, p: &str, d: &[u8]| {
            let h = t
                .open(
                    HOST,
                    ROOT,
                    p,
                    OpenFlags {
                        create: true,
                        truncate: true,
                        ..OpenFlags::default()
                    },
                )
                .expect("file");
            let id = t.node_of(h).expect("node");
            t.write(id, 0, d).expect("write");
            t.close(HOST, h).expect("close");
        };
        f(&mut t, "x", b"12345");
        f(&mut t, "y", b"1");
        t.rename(ROOT, "x", ROOT, "y").expect("over a file");
        assert_eq!(
            t.list(ROOT).expect("list"),
            [("a".into(), true), ("y".into(), false)]
        );
        // a, b, y: names 1 + 1 + 1, contents 5.
        assert_eq!((t.bytes(), t.entries()), (3 + 5, 3));
        assert_eq!(t.rename(ROOT, "y", ROOT, "a"), Err(TreeError::IsDirectory));
        assert_eq!(t.rmdir(ROOT, "a"), Err(TreeError::NotEmpty));
    }

    #[test]
    fn handles_die_with_their_owner_and_only_their_owner_closes_them() {
        let mut t = Tree::new(Budget { handles: 8, ..BIG });
        let dead = new_owner();
        let live = new_owner();
        let create = OpenFlags {
            create: true,
            ..OpenFlags::default()
        };
        let f = t.open(dead, ROOT, "big", create).expect("open");
        t.write(t.node_of(f).expect("node"), 0, &[1u8; 100])
            .expect("write");
        t.unlink(ROOT, "big").expect("unlink while open");
        for _ in 0..5 {
            t.open_root(dead).expect("hold");
        }
        let mine = t.open_root(live).expect("live");
        assert_eq!(t.bytes(), 100, "the unlinked file is still charged");
        // Another owner cannot close the dead one's handle.
        assert_eq!(t.close(live, f), Err(TreeError::BadHandle));
        assert_eq!(t.release_owner(dead), 6);
        assert_eq!(t.bytes(), 0, "its charge went with it");
        assert_eq!(t.open_handles(), 1);
        assert_eq!(t.handles_of(live), 1);
        assert_eq!(t.close(dead, f), Err(TreeError::BadHandle));
        t.close(live, mine).expect("close");
    }

    #[test]
    fn handle_numbers_wrap_and_never_collide() {
        let mut t = Tree::new(Budget { handles: 3, ..BIG });
        t.next_handle = u32::MAX - 1;
        let a = t.open_root(HOST).expect("a");
        let b = t.open_root(HOST).expect("b");
        let c = t.open_root(HOST).expect("c, after the wrap");
        assert_eq!((a, b, c), (u32::MAX - 1, u32::MAX, 1));
        t.close(HOST, b).expect("close");
        t.next_handle = 1;
        let d = t.open_root(HOST).expect("d skips 1, which is held");
        assert_eq!(d, 2);
    }

    #[test]
    fn a_deep_chain_stops_at_the_depth_cap() {
        let mut t = Tree::new(Budget {
            entries: 10_000,
            ..BIG
        });
        let mut dir = ROOT;
        let mut made = 0;
        for _ in 0..2000 {
            match t.mkdir(dir, "d") {
                Ok(id) => {
                    dir = id;
                    made += 1;
                }
                Err(e) => {
                    assert_eq!(e, TreeError::NameTooLong);
                    break;
                }
            }
        }
        assert_eq!(made, MAX_DEPTH);
    }

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
}
