//! The `path_*` calls: what a guest does with a path under a directory
//! descriptor: stat, open, create and remove directories, rename,
//! unlink.
//!
//! Guarantees: a path is resolved inside the directory it names (a
//! read-only tree or the workspace's tree, which keeps every path inside
//! itself); a read-only tree is never changed (`EROFS`); links and
//! symlinks are refused (`EPERM`); times are ignored; every byte and
//! entry created is charged to the workspace at the write.

use super::MODULE;
use super::abi::*;
use super::fds::{Fd, P1State};
use super::memory::{filestat, with};
use super::static_tree;
use super::workspace;
use crate::memtree::{OpenFlags, TreeError};
use crate::state::RunState;
use wasmtime::{Caller, Linker};

/// Where a path operation starts: a read-only tree's directory or the
/// workspace's.
enum Base {
    Static(
        std::sync::Arc<static_tree::StaticTree>,
        static_tree::StaticNode,
    ),
    Work(crate::memtree::NodeId),
}

fn base(
    p1: &mut P1State,
    ws: &Option<std::sync::Arc<crate::workspace::Workspace>>,
    fd: i32,
) -> Result<Base, i32> {
    match p1.fds(ws).get(fd).ok_or(EBADF)? {
        Fd::Static { tree, node, .. } if tree.is_dir(*node) => {
            Ok(Base::Static(tree.clone(), *node))
        }
        Fd::Work {
            node, is_dir: true, ..
        } => Ok(Base::Work(*node)),
        _ => Err(ENOTDIR),
    }
}

pub(super) fn add_path_calls(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "path_filestat_get",
        |mut c: Caller<'_, RunState>, fd: i32, _flags: i32, p: i32, l: i32, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let path = mem.path(p, l)?;
                match base(p1, ws, fd)? {
                    Base::Static(tree, dir) => {
                        let n = tree.resolve(dir, &path).map_err(tree_errno)?;
                        let ft = if tree.is_dir(n) {
                            FT_DIRECTORY
                        } else {
                            FT_REGULAR
                        };
                        filestat(mem, out, n as u64 + 1, ft, tree.size(n), 0)
                    }
                    Base::Work(dir) => {
                        let tree = workspace(ws)?.tree();
                        let n = tree.resolve(dir, &path).map_err(tree_errno)?;
                        let s = tree.stat(n).map_err(tree_errno)?;
                        drop(tree);
                        let ft = if s.is_dir { FT_DIRECTORY } else { FT_REGULAR };
                        filestat(mem, out, s.ino, ft, s.size, s.mtime_ns)
                    }
                }
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_filestat_set_times",
        |mut c: Caller<'_, RunState>,
         fd: i32,
         _flags: i32,
         p: i32,
         l: i32,
         _a: i64,
         _m: i64,
         _f: i32|
         -> i32 {
            with(&mut c, |mem, p1, ws| {
                let path = mem.path(p, l)?;
                match base(p1, ws, fd)? {
                    Base::Static(..) => Err(EROFS),
                    Base::Work(dir) => workspace(ws)?
                        .tree()
                        .resolve(dir, &path)
                        .map(|_| ())
                        .map_err(tree_errno),
                }
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_link",
        |_c: Caller<'_, RunState>,
         _a: i32,
         _b: i32,
         _p: i32,
         _l: i32,
         _d: i32,
         _q: i32,
         _m: i32|
         -> i32 { EPERM },
    )?;
    linker.func_wrap(
        MODULE,
        "path_symlink",
        |_c: Caller<'_, RunState>, _p: i32, _l: i32, _d: i32, _q: i32, _m: i32| -> i32 { EPERM },
    )?;
    linker.func_wrap(
        MODULE,
        "path_readlink",
        |mut c: Caller<'_, RunState>,
         fd: i32,
         p: i32,
         l: i32,
         _buf: i32,
         _len: i32,
         _out: i32|
         -> i32 {
            // Nothing here is a symlink: an existing name is `EINVAL`.
            with(&mut c, |mem, p1, ws| {
                let path = mem.path(p, l)?;
                match base(p1, ws, fd)? {
                    Base::Static(tree, dir) => tree.resolve(dir, &path).map_err(tree_errno)?,
                    Base::Work(dir) => workspace(ws)?
                        .tree()
                        .resolve(dir, &path)
                        .map_err(tree_errno)?,
                };
                Err(EINVAL)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "path_open",
        |mut c: Caller<'_, RunState>,
         fd: i32,
         _dirflags: i32,
         p: i32,
         l: i32,
         oflags: i32,
         rights: i64,
         _inheriting: i64,
         fdflags: i32,
         out: i32|
         -> i32 {
            with(&mut c, |mem, p1, ws| {
                let path = mem.path(p, l)?;
                let create = oflags & 1 != 0;
                let directory = oflags & 2 != 0;
                let exclusive = oflags & 4 != 0;
                let truncate = oflags & 8 != 0;
                let read = rights as u64 & RIGHT_FD_READ != 0;
                let write = rights as u64 & RIGHT_FD_WRITE != 0;
                let append = fdflags & 1 != 0;
                if !p1.fds(ws).has_room() {
                    return Err(EMFILE);
                }
                let entry = match base(p1, ws, fd)? {
                    Base::Static(tree, dir) => {
                        let found = tree.resolve(dir, &path);
                        let node = match found {
                            Ok(_) if create && exclusive => return Err(EEXIST),
                            Ok(n) => n,
                            Err(TreeError::NotFound) if create => return Err(EROFS),
                            Err(e) => return Err(tree_errno(e)),
                        };
                        if write || truncate {
                            return Err(if tree.is_dir(node) { EISDIR } else { EROFS });
                        }
                        if directory && !tree.is_dir(node) {
                            return Err(ENOTDIR);
                        }
                        Fd::Static {
                            tree,
                            node,
                            pos: 0,
                            preopen: None,
                        }
                    }
                    Base::Work(dir) => {
                        let owner = p1.fs_owner;
                        let w = workspace(ws)?;
                        let mut tree = w.tree();
                        let handle = tree
                            .open(
                                owner,
                                dir,
                                &path,
                                OpenFlags {
                                    create,
                                    exclusive,
                                    truncate,
                                    directory,
                                },
                            )
                            .map_err(tree_errno)?;
                        let node = tree.node_of(handle).map_err(tree_errno)?;
                        let is_dir = tree.stat(node).map_err(tree_errno)?.is_dir;
                        if is_dir && write {
                            let _ = tree.close(owner, handle);
                            return Err(EISDIR);
                        }
                        Fd::Work {
                            handle,
                            node,
                            is_dir,
                            pos: 0,
                            read,
                            write,
                            append,
                            preopen: None,
                            cursor: Vec::new(),
                        }
                    }
                };
                let n = p1.fds(ws).insert(entry).ok_or(EMFILE)?;
                mem.put_u32(out, n as u32)
            })
        },
    )?;
    // The three calls that change one name in the workspace, refused on
    // the read-only trees.
    type Change =
        fn(&mut crate::memtree::Tree, crate::memtree::NodeId, &str) -> Result<(), TreeError>;
    let changes: [(&str, Change); 3] = [
        ("path_create_directory", |t, d, p| t.mkdir(d, p).map(|_| ())),
        ("path_remove_directory", |t, d, p| t.rmdir(d, p)),
        ("path_unlink_file", |t, d, p| t.unlink(d, p)),
    ];
    for (name, change) in changes {
        linker.func_wrap(
            MODULE,
            name,
            move |mut c: Caller<'_, RunState>, fd: i32, p: i32, l: i32| -> i32 {
                with(&mut c, |mem, p1, ws| {
                    let path = mem.path(p, l)?;
                    match base(p1, ws, fd)? {
                        Base::Static(..) => Err(EROFS),
                        Base::Work(dir) => {
                            change(&mut workspace(ws)?.tree(), dir, &path).map_err(tree_errno)
                        }
                    }
                })
            },
        )?;
    }
    linker.func_wrap(
        MODULE,
        "path_rename",
        |mut c: Caller<'_, RunState>, fd: i32, p: i32, l: i32, to_fd: i32, q: i32, m: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let from = mem.path(p, l)?;
                let to = mem.path(q, m)?;
                match (base(p1, ws, fd)?, base(p1, ws, to_fd)?) {
                    (Base::Work(a), Base::Work(b)) => workspace(ws)?
                        .tree()
                        .rename(a, &from, b, &to)
                        .map_err(tree_errno),
                    _ => Err(EROFS),
                }
            })
        },
    )?;
    Ok(())
}
