//! The descriptor table of one preview-1 instance: stdio, the read-only
//! trees and the run's in-memory workspace. Nothing here is a host file
//! descriptor; every entry is a position in a tree.

use super::static_tree::{StaticNode, StaticTree};
use crate::memtree::{Handle, NodeId, Owner};
use crate::output::CappedOutput;
use crate::workspace::Workspace;
use std::sync::Arc;

/// What a preopened directory is.
#[derive(Debug, Clone)]
pub enum PreopenKind {
    /// A shared read-only tree.
    Static(Arc<StaticTree>),
    /// The run's workspace (`/work`).
    Workspace,
}

/// One preopened directory, at the descriptor its place in the list gives
/// it (the first is 3).
#[derive(Debug, Clone)]
pub struct Preopen {
    /// The absolute path the guest sees.
    pub guest_path: String,
    /// What it holds.
    pub kind: PreopenKind,
}

/// What a guest of this layout sees besides its files: always the same,
/// because a snapshot freezes what the interpreter read of it.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The preopens, at descriptors 3, 4, …
    pub preopens: Vec<Preopen>,
    /// `argv`.
    pub args: Vec<String>,
    /// `environ`, as `NAME=value`.
    pub env: Vec<String>,
}

impl Layout {
    /// The layout of a store no core guest has claimed yet: nothing. One
    /// shared value, so that a component's run allocates none.
    pub fn empty() -> Arc<Layout> {
        static EMPTY: std::sync::OnceLock<Arc<Layout>> = std::sync::OnceLock::new();
        EMPTY.get_or_init(|| Arc::new(Layout::default())).clone()
    }
}

/// An open descriptor.
#[derive(Debug)]
pub(crate) enum Fd {
    Stdin,
    Stdout,
    Stderr,
    Static {
        tree: Arc<StaticTree>,
        node: StaticNode,
        pos: u64,
        preopen: Option<String>,
    },
    Work {
        handle: Handle,
        node: NodeId,
        is_dir: bool,
        pos: u64,
        read: bool,
        write: bool,
        append: bool,
        preopen: Option<String>,
        /// The entries the last `fd_readdir` returned, as (the cookie that
        /// resumes after it, its name): the next call continues from the
        /// name instead of walking the directory from its start.
        cursor: Vec<(u64, String)>,
    },
}

/// The descriptors of one instance.
pub(crate) struct FdTable {
    slots: Vec<Option<Fd>>,
    /// Which slots hold a descriptor the guest opened.
    by_guest: Vec<bool>,
    live: usize,
    cap: usize,
    /// Descriptors the guest opened and still holds.
    guest_open: usize,
    /// The guest closed stdio or a preopen.
    closed_own: bool,
    pub(crate) workspace: Option<Arc<Workspace>>,
    /// The instance's workspace handles' owner ([`crate::memtree::Owner`]).
    pub(crate) owner: Owner,
}

impl FdTable {
    /// Stdio and the preopens of `layout`; the workspace preopen holds a
    /// handle on `workspace`'s root (none without a workspace: a
    /// pre-instantiated instance's placeholder).
    pub(crate) fn new(
        layout: &Layout,
        workspace: Option<Arc<Workspace>>,
        owner: Owner,
        cap: usize,
    ) -> FdTable {
        let mut slots = vec![Some(Fd::Stdin), Some(Fd::Stdout), Some(Fd::Stderr)];
        for p in &layout.preopens {
            let fd = match &p.kind {
                PreopenKind::Static(tree) => Some(Fd::Static {
                    tree: tree.clone(),
                    node: 0,
                    pos: 0,
                    preopen: Some(p.guest_path.clone()),
                }),
                PreopenKind::Workspace => match workspace.as_ref() {
                    Some(w) => w.tree().open_root(owner).ok().map(|handle| Fd::Work {
                        handle,
                        node: crate::memtree::ROOT,
                        is_dir: true,
                        pos: 0,
                        read: true,
                        write: true,
                        append: false,
                        preopen: Some(p.guest_path.clone()),
                        cursor: Vec::new(),
                    }),
                    // A placeholder has no workspace: an empty read-only
                    // directory keeps the descriptor, so nothing the guest
                    // opens can take the number `/work` has in a run.
                    None => Some(Fd::Static {
                        tree: Arc::new(StaticTree::default()),
                        node: 0,
                        pos: 0,
                        preopen: Some(p.guest_path.clone()),
                    }),
                },
            };
            slots.push(fd);
        }
        let live = slots.iter().filter(|s| s.is_some()).count();
        FdTable {
            by_guest: vec![false; slots.len()],
            slots,
            live,
            guest_open: 0,
            closed_own: false,
            // The preopens never count against the guest's own cap.
            cap: cap.saturating_add(live),
            workspace,
            owner,
        }
    }

    pub(crate) fn get(&self, fd: i32) -> Option<&Fd> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(Option::as_ref)
    }

    pub(crate) fn get_mut(&mut self, fd: i32) -> Option<&mut Fd> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get_mut(i))
            .and_then(Option::as_mut)
    }

    /// Whether another descriptor may be opened.
    pub(crate) fn has_room(&self) -> bool {
        self.live < self.cap
    }

    /// Puts `fd` at the lowest free number (POSIX's rule).
    pub(crate) fn insert(&mut self, fd: Fd) -> Option<i32> {
        if !self.has_room() {
            self.release(fd);
            return None;
        }
        let at = match self.slots.iter().position(Option::is_none) {
            Some(i) => i,
            None => {
                self.slots.push(None);
                self.by_guest.push(false);
                self.slots.len() - 1
            }
        };
        let Ok(n) = i32::try_from(at) else {
            self.release(fd);
            return None;
        };
        self.slots[at] = Some(fd);
        self.by_guest[at] = true;
        self.guest_open += 1;
        self.live += 1;
        Some(n)
    }

    /// Closes `fd`; false if it was not open.
    pub(crate) fn close(&mut self, fd: i32) -> bool {
        let Some(slot) = usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)) else {
            return false;
        };
        let Some(old) = slot.take() else {
            return false;
        };
        self.live -= 1;
        let i = fd as usize;
        if self.by_guest.get(i).copied().unwrap_or(false) {
            self.by_guest[i] = false;
            self.guest_open -= 1;
        } else {
            self.closed_own = true;
        }
        self.release(old);
        true
    }

    fn release(&self, fd: Fd) {
        if let (Fd::Work { handle, .. }, Some(w)) = (fd, &self.workspace) {
            let _ = w.tree().close(self.owner, handle);
        }
    }

    /// Descriptors the guest opened and holds, plus one if it closed
    /// stdio or a preopen: either way the table is not as a fresh run's.
    pub(crate) fn opened_by_guest(&self) -> usize {
        self.guest_open + usize::from(self.closed_own)
    }
}

impl Drop for FdTable {
    fn drop(&mut self) {
        // A session's workspace outlives an interpreter that ended: give
        // its handles back.
        if let Some(w) = &self.workspace {
            w.tree().release_owner(self.owner);
        }
    }
}

/// The stdio and files of one preview-1 instance, kept in its store.
pub struct P1State {
    pub(crate) layout: Arc<Layout>,
    pub(crate) stdin: bytes::Bytes,
    pub(crate) stdin_pos: usize,
    pub(crate) stdout: CappedOutput,
    pub(crate) stderr: CappedOutput,
    pub(crate) fds: Option<FdTable>,
    pub(crate) open_cap: usize,
    /// Fixed clocks and entropy (while a snapshot is taken).
    pub(crate) frozen: bool,
    pub(crate) frozen_clock: u64,
    pub(crate) frozen_random: u64,
    /// Where this instance's monotonic clock starts (so that it says
    /// nothing of the host process's age).
    pub(crate) origin: std::time::Instant,
    /// The cell the guest asks the host for, and its answer (see
    /// `scientific::door`).
    pub(crate) door: Door,
    /// The instance's workspace handles' owner (its store's).
    pub(crate) fs_owner: Owner,
}

impl P1State {
    /// The state of a fresh instance: `stdin` whole, output to the two
    /// streams, at most `open_cap` descriptors of its own.
    pub fn new(
        layout: Arc<Layout>,
        stdin: bytes::Bytes,
        stdout: CappedOutput,
        stderr: CappedOutput,
        open_cap: usize,
    ) -> P1State {
        P1State {
            layout,
            stdin,
            stdin_pos: 0,
            stdout,
            stderr,
            fds: None,
            open_cap,
            frozen: false,
            frozen_clock: 0,
            frozen_random: 0,
            origin: std::time::Instant::now(),
            door: Door::default(),
            // Set to the store's own on every call (`wasip1::with`).
            fs_owner: crate::memtree::HOST,
        }
    }

    /// The descriptor table, made on first use with `workspace`.
    pub(crate) fn fds(&mut self, workspace: &Option<Arc<Workspace>>) -> &mut FdTable {
        let (layout, cap, owner) = (&self.layout, self.open_cap, self.fs_owner);
        self.fds
            .get_or_insert_with(|| FdTable::new(layout, workspace.clone(), owner, cap))
    }

    /// Descriptors the guest holds beyond stdio and its preopens.
    pub fn opened_by_guest(&self) -> usize {
        self.fds.as_ref().map_or(0, FdTable::opened_by_guest)
    }
}

/// The host door's state for one cell (the scientific guest's `host.call`).
#[derive(Debug, Default)]
pub struct Door {
    /// The cell's code, which the guest asks for.
    pub code: String,
    /// What the guest reported: `Ok(repr)` or `Err(traceback)`.
    pub done: Option<Result<String, String>>,
    /// The guest reported that it ran out of memory.
    pub memory_error: bool,
    /// A door call is being answered: a call made from inside it (from the
    /// guest's `host_alloc`) is refused, so at most one frame is held.
    pub busy: bool,
}
