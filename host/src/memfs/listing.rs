//! A directory listing, read one entry at a time.
//!
//! Guarantees: a listing holds its directory as a handle does (it counts
//! against `open_files` and lets go when dropped) and remembers only the
//! last name it returned, never a copy of the listing; entries come in
//! name order, each once, and the end is sticky.

use super::R;
use super::bindings::wasi::filesystem::types;
use super::code;
use crate::memtree::{Handle, NodeId, Owner};
use crate::state::RunState;
use crate::workspace::Workspace;
use std::sync::Arc;
use types::{DescriptorType, DirectoryEntry};
use wasmtime::component::Resource;

/// A directory listing, read one entry at a time: it holds the directory
/// as a handle does (so it counts against `open_files`) and remembers only
/// the last name it returned, never a copy of the listing.
pub struct DirEntries {
    pub(super) ws: Arc<Workspace>,
    pub(super) owner: Owner,
    pub(super) handle: Handle,
    pub(super) node: NodeId,
    pub(super) last: Option<String>,
    pub(super) done: bool,
}

impl Drop for DirEntries {
    fn drop(&mut self) {
        let _ = self.ws.tree().close(self.owner, self.handle);
    }
}

impl types::HostDirectoryEntryStream for RunState {
    fn read_directory_entry(&mut self, stream: Resource<DirEntries>) -> R<Option<DirectoryEntry>> {
        let s = self.table.get_mut(&stream)?;
        if s.done {
            return Ok(Ok(None));
        }
        let next = s.ws.tree().next_entry(s.node, s.last.as_deref());
        Ok(match next {
            Ok(Some((name, dir))) => {
                s.last = Some(name.clone());
                Ok(Some(DirectoryEntry {
                    type_: if dir {
                        DescriptorType::Directory
                    } else {
                        DescriptorType::RegularFile
                    },
                    name,
                }))
            }
            Ok(None) => {
                s.done = true;
                Ok(None)
            }
            Err(e) => Err(code(e)),
        })
    }

    fn drop(&mut self, stream: Resource<DirEntries>) -> wasmtime::Result<()> {
        self.table.delete(stream)?;
        Ok(())
    }
}
