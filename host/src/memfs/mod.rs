//! `wasi:filesystem` over the run's in-memory workspace: the guest's
//! `/work` is a [`crate::memtree::Tree`], not a host directory.
//!
//! This replaces wasmtime-wasi's own filesystem in the linker (linked after
//! it, shadowing its `wasi:filesystem/types` and `preopens`), so every
//! descriptor the guest holds is an entry of the run's resource table and a
//! handle of its tree — never a host file descriptor — and every call is
//! memory work under the tree's lock, never a system call.
//!
//! What the guest gets: one preopen, `/work`; regular files and
//! directories; reads, writes at offsets and appends, through calls and
//! streams; truncation; rename; unlink (an open file lives on, still
//! charged); listings in name order; `stat` with the run clock's
//! modification time; `metadata-hash` from a node number never reused in
//! the run. Symlinks and hard links are refused (`not-permitted`); setting
//! timestamps is accepted and ignored; `advise` and the syncs do nothing.
//!
//! One concept per child: `descriptor` (the calls on a descriptor),
//! `listing` (a directory read one entry at a time), `stream` (a read or
//! write stream over one file). This module holds the bindings, the
//! descriptor itself, the preopen and the error mapping.

mod descriptor;
mod listing;
mod stream;

pub use listing::DirEntries;

use crate::memtree::{Handle, NodeId, Owner, ROOT, TreeError};
use crate::state::RunState;
use crate::workspace::Workspace;
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker, Resource};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        inline: "
            package plimsoll:memfs;
            world memfs {
                import wasi:filesystem/types@0.2.12;
                import wasi:filesystem/preopens@0.2.12;
            }
        ",
        world: "plimsoll:memfs/memfs",
        imports: { default: trappable },
        require_store_data_send: true,
        with: {
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "wasi:filesystem/types.descriptor": super::Descriptor,
            "wasi:filesystem/types.directory-entry-stream": super::DirEntries,
        },
    });
}

use bindings::wasi::filesystem::{preopens, types};
use types::{DescriptorStat, DescriptorType, ErrorCode};

/// The most bytes one read or one stream read returns.
const MAX_READ: usize = 1 << 20;

/// The guest's path for the workspace.
pub const WORK: &str = "/work";
/// The second preopen a program started by the shell gets
/// ([`crate::state::RunState::tmp_alias`]).
pub const TMP: &str = "/tmp";
/// Where `/tmp` lives in the workspace: the shell guest's own alias
/// (guests/shell/src/fs.rs).
pub const TMP_DIR: &str = ".plimsoll-shell/tmp";
const TMP_PARENT: &str = ".plimsoll-shell";

/// An open file or directory of the workspace. It holds its node as a
/// handle of the instance that opened it, and lets go when it is dropped:
/// by the guest, or with the instance's resource table.
pub struct Descriptor {
    ws: Arc<Workspace>,
    owner: Owner,
    handle: Handle,
    node: NodeId,
    dir: bool,
    read: bool,
    write: bool,
}

impl Descriptor {
    /// The workspace node it holds.
    pub fn node(&self) -> NodeId {
        self.node
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        let _ = self.ws.tree().close(self.owner, self.handle);
    }
}

/// A host call's answer: a trap, or the guest's result.
type R<T> = wasmtime::Result<Result<T, ErrorCode>>;

/// The `wasi:filesystem` error code of a tree's refusal.
fn code(e: TreeError) -> ErrorCode {
    match e {
        TreeError::NotFound => ErrorCode::NoEntry,
        TreeError::Exists => ErrorCode::Exist,
        TreeError::NotDirectory => ErrorCode::NotDirectory,
        TreeError::IsDirectory => ErrorCode::IsDirectory,
        TreeError::NotEmpty => ErrorCode::NotEmpty,
        TreeError::NoSpace => ErrorCode::InsufficientSpace,
        TreeError::NameTooLong => ErrorCode::NameTooLong,
        TreeError::Invalid => ErrorCode::Invalid,
        TreeError::NotPermitted => ErrorCode::NotPermitted,
        TreeError::BadHandle => ErrorCode::BadDescriptor,
        TreeError::TooManyHandles => ErrorCode::Quota,
        TreeError::FileTooLarge => ErrorCode::FileTooLarge,
    }
}

/// The host's clock, in nanoseconds since the epoch.
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// `ns` as a `wasi:clocks` datetime.
fn datetime(ns: u64) -> types::Datetime {
    types::Datetime {
        seconds: ns / 1_000_000_000,
        nanoseconds: (ns % 1_000_000_000) as u32,
    }
}

/// Links this filesystem in place of wasmtime-wasi's. Call after
/// `wasmtime_wasi::p2::add_to_linker_async`.
pub fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    types::add_to_linker::<RunState, HasSelf<RunState>>(linker, |s| s)?;
    preopens::add_to_linker::<RunState, HasSelf<RunState>>(linker, |s| s)?;
    linker.allow_shadowing(false);
    Ok(())
}

impl RunState {
    fn ws(&self) -> Result<&Arc<Workspace>, ErrorCode> {
        self.workspace.as_ref().ok_or(ErrorCode::BadDescriptor)
    }

    fn desc(&self, fd: &Resource<Descriptor>) -> wasmtime::Result<(NodeId, bool, bool, bool)> {
        let d = self.table.get(fd)?;
        Ok((d.node, d.dir, d.read, d.write))
    }

    /// The directory a `*-at` call resolves from.
    fn dir_of(&self, fd: &Resource<Descriptor>) -> wasmtime::Result<Result<NodeId, ErrorCode>> {
        let (node, dir, _, _) = self.desc(fd)?;
        Ok(if dir {
            Ok(node)
        } else {
            Err(ErrorCode::NotDirectory)
        })
    }

    /// Puts `d` in the resource table (a full table drops it, which lets
    /// go of its handle).
    fn push_descriptor(&mut self, d: Descriptor) -> wasmtime::Result<Resource<Descriptor>> {
        Ok(self.table.push(d)?)
    }

    fn stat_of(&self, node: NodeId) -> Result<DescriptorStat, ErrorCode> {
        let s = self.ws()?.tree().stat(node).map_err(code)?;
        let t = Some(datetime(s.mtime_ns));
        Ok(DescriptorStat {
            type_: if s.is_dir {
                DescriptorType::Directory
            } else {
                DescriptorType::RegularFile
            },
            link_count: 1,
            size: s.size,
            data_access_timestamp: t,
            data_modification_timestamp: t,
            status_change_timestamp: t,
        })
    }
}

impl preopens::Host for RunState {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        let Some(ws) = self.workspace.clone() else {
            return Ok(Vec::new());
        };
        let owner = self.fs_owner;
        let Ok(handle) = ws.tree().hold(owner, ROOT) else {
            return Ok(Vec::new());
        };
        let r = self.push_descriptor(Descriptor {
            ws: ws.clone(),
            owner,
            handle,
            node: ROOT,
            dir: true,
            read: true,
            write: true,
        })?;
        let mut out = vec![(r, WORK.to_owned())];
        if self.tmp_alias {
            // A program the shell started sees the shell's `/tmp`: the
            // workspace's own `.plimsoll-shell/tmp`, made here if missing
            // (charged like any directory), preopened as `/tmp`. Paths
            // resolve inside it; `..` cannot climb out of a preopen.
            let node = {
                let mut t = ws.tree();
                let _ = t.mkdir(ROOT, TMP_PARENT);
                let _ = t.mkdir(ROOT, TMP_DIR);
                t.resolve(ROOT, TMP_DIR)
                    .ok()
                    .filter(|&n| t.stat(n).is_ok_and(|st| st.is_dir))
                    .and_then(|n| t.hold(owner, n).ok().map(|h| (n, h)))
            };
            if let Some((node, handle)) = node {
                let r = self.push_descriptor(Descriptor {
                    ws,
                    owner,
                    handle,
                    node,
                    dir: true,
                    read: true,
                    write: true,
                })?;
                out.push((r, TMP.to_owned()));
            }
        }
        Ok(out)
    }
}

impl types::Host for RunState {
    fn filesystem_error_code(
        &mut self,
        err: Resource<wasmtime::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        let err = self.table.get(&err)?;
        Ok(err.downcast_ref::<TreeError>().map(|e| code(*e)))
    }
}
