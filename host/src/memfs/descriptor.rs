//! The calls on a descriptor: streams, reads and writes at offsets,
//! sizes, stats and hashes, opening, listing, and the `*-at` calls that
//! create, rename and remove names under a directory.
//!
//! Guarantees: every call works on the run's tree under its lock — never
//! a system call, never a host descriptor; a descriptor not opened for
//! writing changes nothing (`bad-descriptor` before anything else, as on
//! Linux); one read returns at most [`super::MAX_READ`] bytes; symlinks
//! and hard links are refused (`not-permitted`); setting timestamps is
//! accepted and ignored; `advise` and the syncs do nothing.

use super::bindings::wasi::filesystem::types;
use super::listing::DirEntries;
use super::stream::Stream;
use super::{Descriptor, MAX_READ, R, code, now_ns};
use crate::memtree::{NodeId, OpenFlags, TreeError};
use crate::state::RunState;
use types::{
    DescriptorFlags, DescriptorStat, DescriptorType, ErrorCode, Filesize, MetadataHashValue,
    NewTimestamp, PathFlags,
};
use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

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
        let (node, dir, _, write) = self.desc(&fd)?;
        if !write || dir {
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
        // Not open for writing is EBADF, as on Linux, where a directory is
        // never open for writing (here its handle may change its entries,
        // never be written to).
        if !write || dir {
            return Ok(Err(ErrorCode::BadDescriptor));
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
            // A directory may change what its parent may change (as
            // wasmtime-wasi's do): `remove_dir_all` opens each directory
            // for reading and removes its entries through it. A file is
            // writable only when it was opened for writing.
            write: if is_dir { may_write } else { want_write },
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
        // Not open for writing is EBADF, as on Linux, where a directory is
        // never open for writing (here its handle may change its entries,
        // never be written to).
        if !write || dir {
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
