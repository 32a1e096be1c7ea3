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

use crate::memtree::{Handle, NodeId, OpenFlags, Owner, ROOT, TreeError};
use crate::state::RunState;
use crate::workspace::Workspace;
use std::sync::Arc;
use wasmtime::component::{HasSelf, Linker, Resource};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, InputStream, OutputStream, Pollable};
use wasmtime_wasi::p2::{StreamError, StreamResult};

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
use types::{
    DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, Filesize,
    MetadataHashValue, NewTimestamp, PathFlags,
};

/// The most bytes one read or one stream read returns.
const MAX_READ: usize = 1 << 20;

/// The guest's path for the workspace.
pub const WORK: &str = "/work";

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

impl Drop for Descriptor {
    fn drop(&mut self) {
        let _ = self.ws.tree().close(self.owner, self.handle);
    }
}

/// A directory listing, read one entry at a time: it holds the directory
/// as a handle does (so it counts against `open_files`) and remembers only
/// the last name it returned, never a copy of the listing.
pub struct DirEntries {
    ws: Arc<Workspace>,
    owner: Owner,
    handle: Handle,
    node: NodeId,
    last: Option<String>,
    done: bool,
}

impl Drop for DirEntries {
    fn drop(&mut self) {
        let _ = self.ws.tree().close(self.owner, self.handle);
    }
}

type R<T> = wasmtime::Result<Result<T, ErrorCode>>;

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

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

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
            ws,
            owner,
            handle,
            node: ROOT,
            dir: true,
            read: true,
            write: true,
        })?;
        Ok(vec![(r, WORK.to_owned())])
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

impl types::HostDescriptor for RunState {
    fn read_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Filesize,
    ) -> R<Resource<DynInputStream>> {
        let (node, dir, read, _) = self.desc(&fd)?;
        if dir {
            return Ok(Err(ErrorCode::IsDirectory));
        }
        if !read {
            return Ok(Err(ErrorCode::BadDescriptor));
        }
        let ws = match self.ws() {
            Ok(ws) => ws.clone(),
            Err(e) => return Ok(Err(e)),
        };
        let owner = self.fs_owner;
        let handle = match ws.tree().hold(owner, node) {
            Ok(h) => h,
            Err(e) => return Ok(Err(code(e))),
        };
        let s: DynInputStream = Box::new(Stream {
            ws,
            owner,
            handle,
            node,
            offset: Some(offset),
        });
        Ok(Ok(self.table.push(s)?))
    }

    fn write_via_stream(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Filesize,
    ) -> R<Resource<DynOutputStream>> {
        self.writer(fd, Some(offset))
    }

    fn append_via_stream(&mut self, fd: Resource<Descriptor>) -> R<Resource<DynOutputStream>> {
        self.writer(fd, None)
    }

    fn advise(
        &mut self,
        _fd: Resource<Descriptor>,
        _offset: Filesize,
        _length: Filesize,
        _advice: types::Advice,
    ) -> R<()> {
        Ok(Ok(()))
    }

    fn sync_data(&mut self, _fd: Resource<Descriptor>) -> R<()> {
        Ok(Ok(()))
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> R<DescriptorFlags> {
        let (_, dir, read, write) = self.desc(&fd)?;
        let mut f = DescriptorFlags::empty();
        if read {
            f |= DescriptorFlags::READ;
        }
        if write {
            f |= if dir {
                DescriptorFlags::MUTATE_DIRECTORY
            } else {
                DescriptorFlags::WRITE
            };
        }
        Ok(Ok(f))
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> R<DescriptorType> {
        let (_, dir, _, _) = self.desc(&fd)?;
        Ok(Ok(if dir {
            DescriptorType::Directory
        } else {
            DescriptorType::RegularFile
        }))
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: Filesize) -> R<()> {
        let (node, _, _, write) = self.desc(&fd)?;
        if !write {
            return Ok(Err(ErrorCode::BadDescriptor));
        }
        Ok(self.ws().and_then(|ws| {
            let mut t = ws.tree();
            t.set_now(now_ns());
            t.set_size(node, size).map_err(code)
        }))
    }

    fn set_times(
        &mut self,
        _fd: Resource<Descriptor>,
        _atime: NewTimestamp,
        _mtime: NewTimestamp,
    ) -> R<()> {
        Ok(Ok(()))
    }

    fn read(
        &mut self,
        fd: Resource<Descriptor>,
        length: Filesize,
        offset: Filesize,
    ) -> R<(Vec<u8>, bool)> {
        let (node, dir, read, _) = self.desc(&fd)?;
        if dir {
            return Ok(Err(ErrorCode::IsDirectory));
        }
        if !read {
            return Ok(Err(ErrorCode::BadDescriptor));
        }
        let len = usize::try_from(length).unwrap_or(usize::MAX).min(MAX_READ);
        Ok(self.ws().and_then(|ws| {
            let t = ws.tree();
            let size = t.stat(node).map_err(code)?.size;
            let bytes = t.read(node, offset, len).map_err(code)?.to_vec();
            let end = offset.saturating_add(bytes.len() as u64) >= size;
            Ok((bytes, end))
        }))
    }

    fn write(
        &mut self,
        fd: Resource<Descriptor>,
        buffer: Vec<u8>,
        offset: Filesize,
    ) -> R<Filesize> {
        let (node, dir, _, write) = self.desc(&fd)?;
        // Not open for writing comes first (EBADF), as on Linux.
        if !write {
            return Ok(Err(ErrorCode::BadDescriptor));
        }
        if dir {
            return Ok(Err(ErrorCode::IsDirectory));
        }
        Ok(self.ws().and_then(|ws| {
            let mut t = ws.tree();
            t.set_now(now_ns());
            t.write(node, offset, &buffer)
                .map(|n| n as u64)
                .map_err(code)
        }))
    }

    fn read_directory(&mut self, fd: Resource<Descriptor>) -> R<Resource<DirEntries>> {
        let node = match self.dir_of(&fd)? {
            Ok(n) => n,
            Err(e) => return Ok(Err(e)),
        };
        let ws = match self.ws() {
            Ok(ws) => ws.clone(),
            Err(e) => return Ok(Err(e)),
        };
        let owner = self.fs_owner;
        let handle = match ws.tree().hold(owner, node) {
            Ok(h) => h,
            Err(e) => return Ok(Err(code(e))),
        };
        Ok(Ok(self.table.push(DirEntries {
            ws,
            owner,
            handle,
            node,
            last: None,
            done: false,
        })?))
    }

    fn sync(&mut self, _fd: Resource<Descriptor>) -> R<()> {
        Ok(Ok(()))
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> R<()> {
        let (dir, _, _, write) = self.desc(&fd)?;
        let dir = match self.dir_of(&fd)? {
            Ok(_) if !write => return Ok(Err(ErrorCode::NotPermitted)),
            Ok(_) => dir,
            Err(e) => return Ok(Err(e)),
        };
        Ok(self.ws().and_then(|ws| {
            let mut t = ws.tree();
            t.set_now(now_ns());
            t.mkdir(dir, &path).map(|_| ()).map_err(code)
        }))
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> R<DescriptorStat> {
        let (node, _, _, _) = self.desc(&fd)?;
        Ok(self.stat_of(node))
    }

    fn stat_at(
        &mut self,
        fd: Resource<Descriptor>,
        _flags: PathFlags,
        path: String,
    ) -> R<DescriptorStat> {
        Ok(self.at(&fd, &path)?.and_then(|node| self.stat_of(node)))
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        _flags: PathFlags,
        path: String,
        _atime: NewTimestamp,
        _mtime: NewTimestamp,
    ) -> R<()> {
        let dir = match self.dir_of(&fd)? {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        Ok(self
            .ws()
            .and_then(|ws| ws.tree().resolve(dir, &path).map(|_| ()).map_err(code)))
    }

    fn link_at(
        &mut self,
        _fd: Resource<Descriptor>,
        _old_flags: PathFlags,
        _old_path: String,
        _new_fd: Resource<Descriptor>,
        _new_path: String,
    ) -> R<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        _path_flags: PathFlags,
        path: String,
        open_flags: types::OpenFlags,
        flags: DescriptorFlags,
    ) -> R<Resource<Descriptor>> {
        let (_, _, _, may_write) = self.desc(&fd)?;
        let dir = match self.dir_of(&fd)? {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        let want_write = flags.contains(DescriptorFlags::WRITE)
            || flags.contains(DescriptorFlags::MUTATE_DIRECTORY);
        let creates = open_flags.contains(types::OpenFlags::CREATE)
            || open_flags.contains(types::OpenFlags::TRUNCATE);
        if (want_write || creates) && !may_write {
            return Ok(Err(ErrorCode::NotPermitted));
        }
        if open_flags.contains(types::OpenFlags::TRUNCATE)
            && !flags.contains(DescriptorFlags::WRITE)
        {
            return Ok(Err(ErrorCode::NotPermitted));
        }
        let ws = match self.ws() {
            Ok(ws) => ws.clone(),
            Err(e) => return Ok(Err(e)),
        };
        let owner = self.fs_owner;
        let opened = {
            let mut t = ws.tree();
            t.set_now(now_ns());
            t.open(
                owner,
                dir,
                &path,
                OpenFlags {
                    create: open_flags.contains(types::OpenFlags::CREATE),
                    exclusive: open_flags.contains(types::OpenFlags::EXCLUSIVE),
                    truncate: open_flags.contains(types::OpenFlags::TRUNCATE),
                    directory: open_flags.contains(types::OpenFlags::DIRECTORY),
                },
            )
            .and_then(|h| {
                let node = t.node_of(h)?;
                let is_dir = t.stat(node)?.is_dir;
                if is_dir && flags.contains(DescriptorFlags::WRITE) {
                    let _ = t.close(owner, h);
                    return Err(TreeError::IsDirectory);
                }
                Ok((h, node, is_dir))
            })
        };
        let (handle, node, is_dir) = match opened {
            Ok(o) => o,
            Err(e) => return Ok(Err(code(e))),
        };
        Ok(Ok(self.push_descriptor(Descriptor {
            ws,
            owner,
            handle,
            node,
            dir: is_dir,
            read: is_dir || flags.contains(DescriptorFlags::READ),
            write: want_write,
        })?))
    }

    fn readlink_at(&mut self, _fd: Resource<Descriptor>, _path: String) -> R<String> {
        Ok(Err(ErrorCode::Invalid))
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> R<()> {
        self.mutate_at(fd, |t, dir| t.rmdir(dir, &path))
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> R<()> {
        let to = match self.dir_of(&new_fd)? {
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        self.mutate_at(fd, |t, from| t.rename(from, &old_path, to, &new_path))
    }

    fn symlink_at(&mut self, _fd: Resource<Descriptor>, _old: String, _new: String) -> R<()> {
        Ok(Err(ErrorCode::NotPermitted))
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> R<()> {
        self.mutate_at(fd, |t, dir| t.unlink(dir, &path))
    }

    fn is_same_object(
        &mut self,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        Ok(self.desc(&a)?.0 == self.desc(&b)?.0)
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> R<MetadataHashValue> {
        let (node, _, _, _) = self.desc(&fd)?;
        Ok(self.hash_of(node))
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        _flags: PathFlags,
        path: String,
    ) -> R<MetadataHashValue> {
        Ok(self.at(&fd, &path)?.and_then(|node| self.hash_of(node)))
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        // Dropping the descriptor lets go of its handle.
        drop(self.table.delete(fd)?);
        Ok(())
    }
}

impl RunState {
    fn writer(
        &mut self,
        fd: Resource<Descriptor>,
        offset: Option<Filesize>,
    ) -> R<Resource<DynOutputStream>> {
        let (node, dir, _, write) = self.desc(&fd)?;
        // Not open for writing comes first (EBADF), as on Linux.
        if !write {
            return Ok(Err(ErrorCode::BadDescriptor));
        }
        if dir {
            return Ok(Err(ErrorCode::IsDirectory));
        }
        let ws = match self.ws() {
            Ok(ws) => ws.clone(),
            Err(e) => return Ok(Err(e)),
        };
        let owner = self.fs_owner;
        let handle = match ws.tree().hold(owner, node) {
            Ok(h) => h,
            Err(e) => return Ok(Err(code(e))),
        };
        let s: DynOutputStream = Box::new(Stream {
            ws,
            owner,
            handle,
            node,
            offset,
        });
        Ok(Ok(self.table.push(s)?))
    }

    fn mutate_at(
        &mut self,
        fd: Resource<Descriptor>,
        f: impl FnOnce(&mut crate::memtree::Tree, NodeId) -> Result<(), TreeError>,
    ) -> R<()> {
        let (_, _, _, write) = self.desc(&fd)?;
        let dir = match self.dir_of(&fd)? {
            Ok(_) if !write => return Ok(Err(ErrorCode::NotPermitted)),
            Ok(d) => d,
            Err(e) => return Ok(Err(e)),
        };
        Ok(self.ws().and_then(|ws| {
            let mut t = ws.tree();
            t.set_now(now_ns());
            f(&mut t, dir).map_err(code)
        }))
    }

    /// The node `path` names from the directory `fd`.
    fn at(&self, fd: &Resource<Descriptor>, path: &str) -> R<NodeId> {
        Ok(self
            .dir_of(fd)?
            .and_then(|dir| self.ws()?.tree().resolve(dir, path).map_err(code)))
    }

    fn hash_of(&self, node: NodeId) -> Result<MetadataHashValue, ErrorCode> {
        let s = self.ws()?.tree().stat(node).map_err(code)?;
        Ok(MetadataHashValue {
            lower: s.ino,
            upper: s.mtime_ns ^ s.size.rotate_left(32),
        })
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

/// A stream over one file: reads from or writes at its offset, or appends
/// (`offset: None`). It holds the file as a handle does.
struct Stream {
    ws: Arc<Workspace>,
    owner: Owner,
    handle: Handle,
    node: NodeId,
    offset: Option<u64>,
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.ws.tree().close(self.owner, self.handle);
    }
}

#[async_trait::async_trait]
impl Pollable for Stream {
    async fn ready(&mut self) {}
}

impl InputStream for Stream {
    fn read(&mut self, size: usize) -> StreamResult<bytes::Bytes> {
        let at = self.offset.unwrap_or(0);
        let t = self.ws.tree();
        let data = t
            .read(self.node, at, size.min(MAX_READ))
            .map_err(|e| StreamError::LastOperationFailed(e.into()))?;
        if data.is_empty() && size > 0 {
            return Err(StreamError::Closed);
        }
        let out = bytes::Bytes::copy_from_slice(data);
        self.offset = Some(at + out.len() as u64);
        Ok(out)
    }
}

impl OutputStream for Stream {
    fn write(&mut self, bytes: bytes::Bytes) -> StreamResult<()> {
        let mut t = self.ws.tree();
        t.set_now(now_ns());
        let r = match self.offset {
            Some(at) => t.write(self.node, at, &bytes).map(|n| {
                self.offset = Some(at + n as u64);
            }),
            None => t.append(self.node, &bytes).map(|_| ()),
        };
        r.map_err(|e| StreamError::LastOperationFailed(e.into()))
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(MAX_READ)
    }
}
