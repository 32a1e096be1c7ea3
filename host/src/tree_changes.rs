//! Whether anything under a directory tree changed since it was last walked,
//! from the kernel's inotify events, so that a session's workspace need not
//! be walked after every evaluation when nothing touched it.
//!
//! A walk of even an empty workspace (`/work` and `/work/out`) is about 16
//! system calls, a fifth of a Python session evaluation on this machine
//! class; one `read` of an inotify descriptor that has nothing queued is one.
//!
//! Sound by the order its user keeps: **drain, then walk**. A change that
//! lands after the drain queues an event that the next look sees; a change
//! that landed before it is seen by the walk. The kernel queues an event for
//! every write, truncation, allocation, creation, removal, rename and
//! attribute change of an entry of a watched directory (inotify(7)), and the
//! guest can change the workspace no other way (it has no `mmap` of host
//! files). Every directory the walk enters is watched, so entries of new
//! directories are covered from the walk that first sees them (until then,
//! the creation of the directory itself is an event in its parent).
//!
//! Anything it cannot vouch for means "walk": no inotify (no `/proc` to name
//! a directory by its descriptor, the per-user instance or watch limit
//! reached), a failed read, an overflowed queue (itself an event), a
//! directory it could not watch, more directories than it watches, or a
//! walk that stopped early.

use crate::workspace_usage::WorkspaceUsage;
use rustix::fs::inotify;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};

/// What is watched on every directory of the tree: anything that changes
/// what a walk would count.
const WATCHED: inotify::WatchFlags = inotify::WatchFlags::MODIFY
    .union(inotify::WatchFlags::ATTRIB)
    .union(inotify::WatchFlags::CLOSE_WRITE)
    .union(inotify::WatchFlags::MOVED_FROM)
    .union(inotify::WatchFlags::MOVED_TO)
    .union(inotify::WatchFlags::CREATE)
    .union(inotify::WatchFlags::DELETE)
    .union(inotify::WatchFlags::DELETE_SELF)
    .union(inotify::WatchFlags::MOVE_SELF);

/// Most directories one tree watches. A tree with more (a guest can make
/// thousands) is walked every time: watches are kernel memory charged to
/// the host's user, and its per-user watch budget is shared with
/// everything else that user runs.
pub(crate) const MAX_WATCHED_DIRS: u32 = 256;

/// Most reads of the queue per look: a queue still not empty after that
/// many counts as changed (the rest is read next time).
const MAX_READS_PER_LOOK: u32 = 64;

/// One tree's change feed and its last complete measurement.
#[derive(Debug)]
pub(crate) struct TreeChanges {
    inotify: OwnedFd,
    /// The last walk's result and the entry cap it was taken under, kept
    /// only when that walk was complete and watched every directory.
    last: Option<(u64, WorkspaceUsage)>,
    /// The walk in progress could not watch a directory, or entered more
    /// than [`MAX_WATCHED_DIRS`].
    watch_failed: bool,
    /// Directories the walk in progress entered.
    dirs_this_walk: u32,
    /// Walks so far (for tests).
    walks: u64,
}

impl TreeChanges {
    /// A feed with nothing watched yet, or `None` where the kernel gives
    /// none (then every measurement walks).
    pub(crate) fn new() -> Option<Self> {
        let inotify =
            inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK).ok()?;
        Some(TreeChanges {
            inotify,
            last: None,
            watch_failed: false,
            dirs_this_walk: 0,
            walks: 0,
        })
    }

    /// The last measurement under `max_entries`, if nothing changed since
    /// it was taken. Drains the queued events either way: call it right
    /// before walking.
    pub(crate) fn unchanged_usage(&mut self, max_entries: u64) -> Option<WorkspaceUsage> {
        let changed = self.drain();
        match self.last {
            Some((cap, usage)) if !changed && cap == max_entries => Some(usage),
            _ => None,
        }
    }

    /// A walk starts: every directory it enters is to be passed to
    /// [`TreeChanges::watch`].
    pub(crate) fn begin_walk(&mut self) {
        self.watch_failed = false;
        self.dirs_this_walk = 0;
        self.walks += 1;
    }

    /// Watches `dir`, a directory the walk entered (named through
    /// `/proc/self/fd`, since inotify takes paths and the walk has only
    /// descriptors). Watching an already watched directory is a no-op.
    pub(crate) fn watch(&mut self, dir: &impl AsFd) {
        self.dirs_this_walk = self.dirs_this_walk.saturating_add(1);
        if self.dirs_this_walk > MAX_WATCHED_DIRS {
            self.watch_failed = true;
        }
        if self.watch_failed {
            return;
        }
        let path = format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd());
        if inotify::add_watch(&self.inotify, path, WATCHED).is_err() {
            self.watch_failed = true;
        }
    }

    /// The walk ended with `usage`; `complete` if it entered every
    /// directory (it stops early past the entry cap or too deep).
    pub(crate) fn end_walk(&mut self, max_entries: u64, usage: WorkspaceUsage, complete: bool) {
        self.last = (complete && !self.watch_failed).then_some((max_entries, usage));
    }

    /// Walks so far.
    #[cfg(test)]
    pub(crate) fn walks(&self) -> u64 {
        self.walks
    }

    /// Reads every queued event; true if there was one, or if the queue
    /// cannot be read (then the last measurement is forgotten too).
    fn drain(&mut self) -> bool {
        // The events themselves do not matter, only whether there were any.
        let mut buf = [0u8; 4096];
        let mut any = false;
        for _ in 0..MAX_READS_PER_LOOK {
            match rustix::io::read(&self.inotify, &mut buf) {
                Ok(0) => return any,
                Ok(_) => any = true,
                Err(rustix::io::Errno::AGAIN) => return any,
                Err(rustix::io::Errno::INTR) => {}
                Err(_) => {
                    self.last = None;
                    return true;
                }
            }
        }
        true
    }
}
