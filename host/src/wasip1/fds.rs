//! The descriptor table of one preview-1 instance: stdio, the read-only
//! trees and the run's in-memory workspace. Nothing here is a host file
//! descriptor; every entry is a position in a tree.

use super::static_tree::{StaticNode, StaticTree};
use crate::memtree::{Handle, NodeId};
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
    },
}

/// The descriptors of one instance.
pub(crate) struct FdTable {
    slots: Vec<Option<Fd>>,
    live: usize,
    cap: usize,
    pub(crate) workspace: Option<Arc<Workspace>>,
}

impl FdTable {
    /// Stdio and the preopens of `layout`; the workspace preopen holds a
    /// handle on `workspace`'s root (none without a workspace: a
    /// pre-instantiated instance's placeholder).
    pub(crate) fn new(layout: &Layout, workspace: Option<Arc<Workspace>>, cap: usize) -> FdTable {
        let mut slots = vec![Some(Fd::Stdin), Some(Fd::Stdout), Some(Fd::Stderr)];
        for p in &layout.preopens {
            let fd = match &p.kind {
                PreopenKind::Static(tree) => Some(Fd::Static {
                    tree: tree.clone(),
                    node: 0,
                    pos: 0,
                    preopen: Some(p.guest_path.clone()),
                }),
                PreopenKind::Workspace => workspace.as_ref().and_then(|w| {
                    let handle = w.tree().open_root().ok()?;
                    Some(Fd::Work {
                        handle,
                        node: crate::memtree::ROOT,
                        is_dir: true,
                        pos: 0,
                        read: true,
                        write: true,
                        append: false,
                        preopen: Some(p.guest_path.clone()),
                    })
                }),
            };
            slots.push(fd);
        }
        let live = slots.iter().filter(|s| s.is_some()).count();
        FdTable {
            slots,
            live,
            // The preopens never count against the guest's own cap.
            cap: cap.saturating_add(live),
            workspace,
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
                self.slots.len() - 1
            }
        };
        let Ok(n) = i32::try_from(at) else {
            self.release(fd);
            return None;
        };
        self.slots[at] = Some(fd);
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
        self.release(old);
        true
    }

    fn release(&self, fd: Fd) {
        if let (Fd::Work { handle, .. }, Some(w)) = (fd, &self.workspace) {
            let _ = w.tree().close(handle);
        }
    }

    /// Descriptors open beyond stdio and the preopens.
    pub(crate) fn opened_by_guest(&self, preopens: usize) -> usize {
        self.slots
            .iter()
            .skip(3 + preopens)
            .filter(|s| s.is_some())
            .count()
    }
}

impl Drop for FdTable {
    fn drop(&mut self) {
        // A session's workspace outlives an interpreter that ended: give
        // its handles back.
        if let Some(w) = &self.workspace {
            let mut tree = w.tree();
            for fd in self.slots.iter_mut().filter_map(Option::take) {
                if let Fd::Work { handle, .. } = fd {
                    let _ = tree.close(handle);
                }
            }
        }
    }
}

/// The stdio and files of one preview-1 instance, kept in its store.
pub struct P1State {
    pub(crate) layout: Arc<Layout>,
    pub(crate) stdin: Vec<u8>,
    pub(crate) stdin_pos: usize,
    pub(crate) stdout: CappedOutput,
    pub(crate) stderr: CappedOutput,
    pub(crate) fds: Option<FdTable>,
    pub(crate) open_cap: usize,
    /// Fixed clocks and entropy (while a snapshot is taken).
    pub(crate) frozen: bool,
    pub(crate) frozen_clock: u64,
    pub(crate) frozen_random: u64,
    /// The cell the guest asks the host for, and its answer (see
    /// `scientific::door`).
    pub(crate) door: super::Door,
}

impl P1State {
    /// The state of a fresh instance: `stdin` whole, output to the two
    /// streams, at most `open_cap` descriptors of its own.
    pub fn new(
        layout: Arc<Layout>,
        stdin: Vec<u8>,
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
            door: super::Door::default(),
        }
    }

    /// The descriptor table, made on first use with `workspace`.
    pub(crate) fn fds(&mut self, workspace: &Option<Arc<Workspace>>) -> &mut FdTable {
        let (layout, cap) = (&self.layout, self.open_cap);
        self.fds
            .get_or_insert_with(|| FdTable::new(layout, workspace.clone(), cap))
    }

    /// Descriptors the guest holds beyond stdio and its preopens.
    pub fn opened_by_guest(&self) -> usize {
        self.fds
            .as_ref()
            .map_or(0, |t| t.opened_by_guest(self.layout.preopens.len()))
    }
}
