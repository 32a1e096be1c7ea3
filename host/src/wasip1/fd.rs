//! The `fd_*` calls: what a guest does with a descriptor it holds — stat,
//! read, write, seek, size, close, renumber, list a directory.
//!
//! Guarantees: a descriptor is looked up in the run's bounded table
//! ([`super::fds`]) on every call, so a closed or unknown one is `EBADF`;
//! a descriptor of a read-only tree can change nothing (`EROFS` or
//! `EBADF`); a directory listing fills at most the guest's buffer and
//! resumes by cookie; `fd_sync` and `fd_advise` do nothing but check the
//! descriptor.

use super::MODULE;
use super::abi::*;
use super::fds::{Fd, P1State};
use super::io::{Wrote, do_read, do_write};
use super::memory::{filestat, with};
use super::workspace;
use crate::state::RunState;
use wasmtime::{Caller, Linker};

/// Stat of what `fd` holds: (ino, filetype, size, mtime).
fn stat_fd(
    p1: &mut P1State,
    ws: &Option<std::sync::Arc<crate::workspace::Workspace>>,
    fd: i32,
) -> Result<(u64, u8, u64, u64), i32> {
    match p1.fds(ws).get(fd).ok_or(EBADF)? {
        Fd::Stdin | Fd::Stdout | Fd::Stderr => Ok((0, FT_UNKNOWN, 0, 0)),
        Fd::Static { tree, node, .. } => {
            let ft = if tree.is_dir(*node) {
                FT_DIRECTORY
            } else {
                FT_REGULAR
            };
            Ok((*node as u64 + 1, ft, tree.size(*node), 0))
        }
        Fd::Work { node, .. } => {
            let w = ws.as_ref().ok_or(EBADF)?;
            let s = w.tree().stat(*node).map_err(tree_errno)?;
            let ft = if s.is_dir { FT_DIRECTORY } else { FT_REGULAR };
            Ok((s.ino, ft, s.size, s.mtime_ns))
        }
    }
}

pub(super) fn add_fd_calls(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap(
        MODULE,
        "fd_advise",
        |mut c: Caller<'_, RunState>, fd: i32, _o: i64, _l: i64, _a: i32| -> i32 {
            with(&mut c, |_, p1, ws| {
                p1.fds(ws).get(fd).map(|_| ()).ok_or(EBADF)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_close",
        |mut c: Caller<'_, RunState>, fd: i32| -> i32 {
            with(&mut c, |_, p1, ws| {
                if p1.fds(ws).close(fd) {
                    Ok(())
                } else {
                    Err(EBADF)
                }
            })
        },
    )?;
    for name in ["fd_datasync", "fd_sync"] {
        linker.func_wrap(
            MODULE,
            name,
            |mut c: Caller<'_, RunState>, fd: i32| -> i32 {
                with(&mut c, |_, p1, ws| {
                    p1.fds(ws).get(fd).map(|_| ()).ok_or(EBADF)
                })
            },
        )?;
    }
    linker.func_wrap(
        MODULE,
        "fd_fdstat_get",
        |mut c: Caller<'_, RunState>, fd: i32, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let (ft, flags, base, inheriting) = match p1.fds(ws).get(fd).ok_or(EBADF)? {
                    Fd::Stdin => (FT_UNKNOWN, 0u16, RIGHT_FD_READ, 0),
                    Fd::Stdout | Fd::Stderr => (FT_UNKNOWN, 0, RIGHT_FD_WRITE, 0),
                    Fd::Static { tree, node, .. } => {
                        let ft = if tree.is_dir(*node) {
                            FT_DIRECTORY
                        } else {
                            FT_REGULAR
                        };
                        (ft, 0, READ_ONLY_RIGHTS, READ_ONLY_RIGHTS)
                    }
                    Fd::Work {
                        is_dir,
                        read,
                        write,
                        append,
                        ..
                    } => {
                        let mut rights = ALL_RIGHTS;
                        if !*read {
                            rights &= !RIGHT_FD_READ;
                        }
                        if !*write {
                            rights &= !RIGHT_FD_WRITE;
                        }
                        let ft = if *is_dir { FT_DIRECTORY } else { FT_REGULAR };
                        (ft, u16::from(*append), rights, ALL_RIGHTS)
                    }
                };
                let mut b = [0u8; 24];
                b[0] = ft;
                b[2..4].copy_from_slice(&flags.to_le_bytes());
                b[8..16].copy_from_slice(&base.to_le_bytes());
                b[16..24].copy_from_slice(&inheriting.to_le_bytes());
                mem.put(out, &b)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_fdstat_set_flags",
        |mut c: Caller<'_, RunState>, fd: i32, flags: i32| -> i32 {
            with(&mut c, |_, p1, ws| {
                match p1.fds(ws).get_mut(fd).ok_or(EBADF)? {
                    Fd::Work {
                        append,
                        is_dir: false,
                        ..
                    } => {
                        *append = flags & 1 != 0;
                        Ok(())
                    }
                    _ if flags & 1 == 0 => Ok(()),
                    _ => Err(ENOTSUP),
                }
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_get",
        |mut c: Caller<'_, RunState>, fd: i32, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let (ino, ft, size, mtime) = stat_fd(p1, ws, fd)?;
                filestat(mem, out, ino, ft, size, mtime)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_set_size",
        |mut c: Caller<'_, RunState>, fd: i32, size: i64| -> i32 {
            with(&mut c, |_, p1, ws| {
                match p1.fds(ws).get(fd).ok_or(EBADF)? {
                    Fd::Work {
                        node,
                        is_dir: false,
                        write: true,
                        ..
                    } => {
                        let node = *node;
                        let size = u64::try_from(size).map_err(|_| EINVAL)?;
                        workspace(ws)?
                            .tree()
                            .set_size(node, size)
                            .map_err(tree_errno)
                    }
                    Fd::Work { is_dir: true, .. } => Err(EISDIR),
                    Fd::Static { .. } => Err(EROFS),
                    _ => Err(EBADF),
                }
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_filestat_set_times",
        |mut c: Caller<'_, RunState>, fd: i32, _a: i64, _m: i64, _f: i32| -> i32 {
            // Times are not kept (as in `memfs`).
            with(&mut c, |_, p1, ws| {
                p1.fds(ws).get(fd).map(|_| ()).ok_or(EBADF)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_read",
        |mut c: Caller<'_, RunState>, fd: i32, iovs: i32, n: i32, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let list = mem.iovs(iovs, n)?;
                let got = do_read(mem, p1, ws, fd, &list, None)?;
                mem.put_u32(out, got as u32)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_pread",
        |mut c: Caller<'_, RunState>, fd: i32, iovs: i32, n: i32, off: i64, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let list = mem.iovs(iovs, n)?;
                let off = u64::try_from(off).map_err(|_| EINVAL)?;
                let got = do_read(mem, p1, ws, fd, &list, Some(off))?;
                mem.put_u32(out, got as u32)
            })
        },
    )?;
    fn write_call(
        c: &mut Caller<'_, RunState>,
        fd: i32,
        iovs: i32,
        n: i32,
        at: Option<i64>,
        out: i32,
    ) -> wasmtime::Result<i32> {
        let mut over = None;
        let errno = with(c, |mem, p1, ws| {
            let list = mem.iovs(iovs, n)?;
            let at = match at {
                Some(o) => Some(u64::try_from(o).map_err(|_| EINVAL)?),
                None => None,
            };
            match do_write(mem, p1, ws, fd, &list, at)? {
                Wrote::Bytes(k) => mem.put_u32(out, k as u32),
                Wrote::OverCap(e) => {
                    over = Some(e);
                    Ok(())
                }
            }
        });
        match over {
            // The run ends, as a component's does at its cap.
            Some(e) => Err(wasmtime::Error::new(e)),
            None => Ok(errno),
        }
    }
    linker.func_wrap(
        MODULE,
        "fd_write",
        |mut c: Caller<'_, RunState>,
         fd: i32,
         iovs: i32,
         n: i32,
         out: i32|
         -> wasmtime::Result<i32> { write_call(&mut c, fd, iovs, n, None, out) },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_pwrite",
        |mut c: Caller<'_, RunState>,
         fd: i32,
         iovs: i32,
         n: i32,
         off: i64,
         out: i32|
         -> wasmtime::Result<i32> { write_call(&mut c, fd, iovs, n, Some(off), out) },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_prestat_get",
        |mut c: Caller<'_, RunState>, fd: i32, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let name_len = match p1.fds(ws).get(fd).ok_or(EBADF)? {
                    Fd::Static {
                        preopen: Some(p), ..
                    }
                    | Fd::Work {
                        preopen: Some(p), ..
                    } => p.len(),
                    _ => return Err(EBADF),
                };
                let mut b = [0u8; 8];
                b[4..8].copy_from_slice(&(name_len as u32).to_le_bytes());
                mem.put(out, &b)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_prestat_dir_name",
        |mut c: Caller<'_, RunState>, fd: i32, buf: i32, len: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let name = match p1.fds(ws).get(fd).ok_or(EBADF)? {
                    Fd::Static {
                        preopen: Some(p), ..
                    }
                    | Fd::Work {
                        preopen: Some(p), ..
                    } => p.clone(),
                    _ => return Err(EBADF),
                };
                if (len as u32 as usize) < name.len() {
                    return Err(ENAMETOOLONG);
                }
                mem.put(buf, name.as_bytes())
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_readdir",
        |mut c: Caller<'_, RunState>, fd: i32, buf: i32, len: i32, cookie: i64, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let entries = list_dir(p1, ws, fd, cookie as u64, len as u32)?;
                let mut bytes = Vec::new();
                for (i, (name, ino, is_dir)) in entries.into_iter().enumerate() {
                    let mut h = [0u8; 24];
                    h[0..8].copy_from_slice(&(cookie as u64 + i as u64 + 1).to_le_bytes());
                    h[8..16].copy_from_slice(&ino.to_le_bytes());
                    h[16..20].copy_from_slice(&(name.len() as u32).to_le_bytes());
                    h[20] = if is_dir { FT_DIRECTORY } else { FT_REGULAR };
                    bytes.extend_from_slice(&h);
                    bytes.extend_from_slice(name.as_bytes());
                    if bytes.len() >= len as u32 as usize {
                        break;
                    }
                }
                bytes.truncate(len as u32 as usize);
                mem.put(buf, &bytes)?;
                mem.put_u32(out, bytes.len() as u32)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_seek",
        |mut c: Caller<'_, RunState>, fd: i32, delta: i64, whence: i32, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let size = stat_fd(p1, ws, fd)?.2;
                let pos = match p1.fds(ws).get_mut(fd).ok_or(EBADF)? {
                    Fd::Static {
                        pos, tree, node, ..
                    } if !tree.is_dir(*node) => pos,
                    Fd::Work {
                        pos, is_dir: false, ..
                    } => pos,
                    Fd::Stdin | Fd::Stdout | Fd::Stderr => return Err(ESPIPE),
                    _ => return Err(EBADF),
                };
                let start = match whence {
                    0 => 0i128,
                    1 => *pos as i128,
                    2 => size as i128,
                    _ => return Err(EINVAL),
                };
                let new = start + delta as i128;
                if new < 0 || new > i64::MAX as i128 {
                    return Err(EINVAL);
                }
                *pos = new as u64;
                mem.put_u64(out, new as u64)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "fd_tell",
        |mut c: Caller<'_, RunState>, fd: i32, out: i32| -> i32 {
            with(&mut c, |mem, p1, ws| {
                let pos = match p1.fds(ws).get(fd).ok_or(EBADF)? {
                    Fd::Static { pos, .. } | Fd::Work { pos, .. } => *pos,
                    _ => return Err(ESPIPE),
                };
                mem.put_u64(out, pos)
            })
        },
    )?;
    Ok(())
}

/// Up to about `room` bytes' worth of entries of the directory `fd`,
/// from the `cookie`th: (name, ino, is_dir).
fn list_dir(
    p1: &mut P1State,
    ws: &Option<std::sync::Arc<crate::workspace::Workspace>>,
    fd: i32,
    cookie: u64,
    room: u32,
) -> Result<Vec<(String, u64, bool)>, i32> {
    let start = usize::try_from(cookie).map_err(|_| EINVAL)?;
    let mut out = Vec::new();
    let mut used = 0u64;
    match p1.fds(ws).get(fd).ok_or(EBADF)? {
        Fd::Static { tree, node, .. } => {
            if !tree.is_dir(*node) {
                return Err(ENOTDIR);
            }
            let mut i = start;
            while let Some((name, child, is_dir)) = tree.entry(*node, i) {
                out.push((name.to_owned(), child as u64 + 1, is_dir));
                used += 24 + name.len() as u64;
                if used >= u64::from(room) {
                    break;
                }
                i += 1;
            }
            return Ok(out);
        }
        Fd::Work { is_dir: true, .. } => {}
        _ => return Err(ENOTDIR),
    }
    let Some(Fd::Work { node, cursor, .. }) = p1.fds(ws).get_mut(fd) else {
        return Err(EBADF);
    };
    let node = *node;
    let w = workspace(ws)?;
    let tree = w.tree();
    // Continue after the entry the last call returned for this cookie; a
    // cookie from elsewhere (a seek back) walks from the start.
    let mut after: Option<String> = None;
    let mut skip = 0usize;
    if cookie > 0 {
        match cursor.iter().find(|(c, _)| *c == cookie) {
            Some((_, name)) => after = Some(name.clone()),
            None => skip = start,
        }
    }
    let mut next_cookie = cookie;
    let mut returned = Vec::new();
    while let Some((name, is_dir)) = tree
        .next_entry(node, after.as_deref())
        .map_err(tree_errno)?
    {
        after = Some(name.clone());
        if skip > 0 {
            skip -= 1;
            continue;
        }
        let ino = tree
            .resolve(node, &name)
            .and_then(|n| tree.stat(n))
            .map_or(0, |s| s.ino);
        used += 24 + name.len() as u64;
        next_cookie += 1;
        returned.push((next_cookie, name.clone()));
        out.push((name, ino, is_dir));
        if used >= u64::from(room) {
            break;
        }
    }
    *cursor = returned;
    Ok(out)
}
