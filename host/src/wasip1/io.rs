//! Reading and writing through a descriptor: stdin from the request,
//! stdout and stderr into the run's capped streams, files of a read-only
//! tree or of the workspace.
//!
//! Guarantees: a read or write moves at most [`super::memory::MAX_IO`]
//! bytes; a positioned call (`pread`/`pwrite`) leaves the descriptor's
//! position alone and is `ESPIPE` on a stream; a write to stdout or
//! stderr past its cap is reported as [`Wrote::OverCap`] (the caller ends
//! the run `output_limit`), never silently dropped; a descriptor opened
//! without read or write rights is `EBADF` for that direction; nothing is
//! ever written to a read-only tree.

use super::abi::{EBADF, EISDIR, ESPIPE, tree_errno};
use super::fds::{Fd, P1State};
use super::memory::{Mem, gather, read_into};
use super::workspace;

/// Reads from `fd` at `at` (its position when `None`), advancing the
/// position only then.
pub(super) fn do_read(
    mem: &mut Mem<'_>,
    p1: &mut P1State,
    ws: &Option<std::sync::Arc<crate::workspace::Workspace>>,
    fd: i32,
    iovs: &[(i32, u32)],
    at: Option<u64>,
) -> Result<usize, i32> {
    if matches!(p1.fds(ws).get(fd), Some(Fd::Stdin)) {
        if at.is_some() {
            return Err(ESPIPE);
        }
        let (stdin, pos) = (&p1.stdin, &mut p1.stdin_pos);
        return read_into(mem, iovs, |n| {
            let start = (*pos).min(stdin.len());
            let end = start.saturating_add(n).min(stdin.len());
            *pos = end;
            Ok(stdin[start..end].to_vec())
        });
    }
    match p1.fds(ws).get_mut(fd).ok_or(EBADF)? {
        Fd::Stdin | Fd::Stdout | Fd::Stderr => Err(EBADF),
        Fd::Static {
            tree, node, pos, ..
        } => {
            if tree.is_dir(*node) {
                return Err(EISDIR);
            }
            let mut off = at.unwrap_or(*pos);
            let r = read_into(mem, iovs, |n| {
                let c = tree.read(*node, off, n).map_err(tree_errno)?.to_vec();
                off += c.len() as u64;
                Ok(c)
            });
            if at.is_none() {
                *pos = off;
            }
            r
        }
        Fd::Work {
            node,
            is_dir,
            pos,
            read,
            ..
        } => {
            if *is_dir {
                return Err(EISDIR);
            }
            if !*read {
                return Err(EBADF);
            }
            let w = workspace(ws)?;
            let tree = w.tree();
            let mut off = at.unwrap_or(*pos);
            let r = read_into(mem, iovs, |n| {
                let c = tree.read(*node, off, n).map_err(tree_errno)?.to_vec();
                off += c.len() as u64;
                Ok(c)
            });
            if at.is_none() {
                *pos = off;
            }
            r
        }
    }
}

/// What a write did: bytes written, or the output cap that ended the run.
pub(super) enum Wrote {
    Bytes(usize),
    OverCap(crate::output::OutputLimitExceeded),
}

pub(super) fn do_write(
    mem: &Mem<'_>,
    p1: &mut P1State,
    ws: &Option<std::sync::Arc<crate::workspace::Workspace>>,
    fd: i32,
    iovs: &[(i32, u32)],
    at: Option<u64>,
) -> Result<Wrote, i32> {
    let data = gather(mem, iovs)?;
    let (stdout, stderr) = (p1.stdout.clone(), p1.stderr.clone());
    match p1.fds(ws).get_mut(fd).ok_or(EBADF)? {
        Fd::Stdout | Fd::Stderr if at.is_some() => Err(ESPIPE),
        Fd::Stdout => Ok(match stdout.append_bytes(&data) {
            Ok(()) => Wrote::Bytes(data.len()),
            Err(e) => Wrote::OverCap(e),
        }),
        Fd::Stderr => Ok(match stderr.append_bytes(&data) {
            Ok(()) => Wrote::Bytes(data.len()),
            Err(e) => Wrote::OverCap(e),
        }),
        Fd::Stdin => Err(EBADF),
        Fd::Static { .. } => Err(EBADF),
        Fd::Work {
            node,
            is_dir,
            pos,
            write,
            append,
            ..
        } => {
            if *is_dir {
                return Err(EISDIR);
            }
            if !*write {
                return Err(EBADF);
            }
            let w = workspace(ws)?;
            let mut tree = w.tree();
            if let Some(off) = at {
                tree.write(*node, off, &data).map_err(tree_errno)?;
            } else if *append {
                let start = tree.append(*node, &data).map_err(tree_errno)?;
                *pos = start + data.len() as u64;
            } else {
                tree.write(*node, *pos, &data).map_err(tree_errno)?;
                *pos += data.len() as u64;
            }
            Ok(Wrote::Bytes(data.len()))
        }
    }
}
