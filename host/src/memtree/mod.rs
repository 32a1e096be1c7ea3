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
//!
//! One concept per child: `tree` (the nodes and what can be read of
//! them), `charge` (the budgets, and the writes that grow or shrink a
//! file), `handles` (handles and their owners), `paths` (resolution,
//! creating and removing names), `rename`.

mod charge;
mod handles;
mod image;
#[cfg(test)]
mod model_tests;
mod paths;
mod rename;
#[cfg(test)]
mod tests;
mod tree;

pub use charge::Budget;
pub use handles::{HOST, Handle, Owner, new_owner};
pub use image::{ImageEntry, TreeImage};
pub use tree::Tree;

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

/// The root directory's node.
pub const ROOT: NodeId = 0;

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
