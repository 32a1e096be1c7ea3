//! `wasi_snapshot_preview1` for core-module guests, over plimsoll's own
//! parts: the in-memory workspace ([`crate::memtree`]), shared read-only
//! trees ([`static_tree`]), the capped output streams and the run's
//! deadline.
//!
//! wasmtime-wasi's own preview-1 layer serves host directories through
//! host descriptors, and its table is private; a guest here must see the
//! same workspace a component sees, with the same exact caps and no host
//! descriptor per file. So this module implements the preview-1 calls a
//! WASI libc makes, each over a bounded table ([`fds`]):
//!
//! - files: the workspace at `/work` and the layout's read-only trees;
//!   links and symlinks are refused (`EPERM`), times are ignored;
//! - stdio: stdin from the request, stdout and stderr into the run's
//!   capped streams (a write past the cap ends the run `output_limit`);
//! - clocks, entropy and sleeps: the host's, except while a snapshot is
//!   taken ([`fds::P1State::frozen`]): then fixed clocks and a fixed
//!   generator, so that the snapshot holds nothing of the build machine;
//! - no sockets (`ENOTSOCK`), no processes; `proc_exit` ends the call.
//!
//! Every pointer the guest passes is checked against its memory; every
//! count is bounded before anything is allocated for it.

pub mod fds;
pub mod static_tree;

use crate::memtree::{OpenFlags, TreeError};
use crate::state::RunState;
pub use fds::Door;
use fds::{Fd, Layout, P1State};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wasmtime::{Caller, Linker};

const MODULE: &str = "wasi_snapshot_preview1";

// errno values of preview 1.
const ESUCCESS: i32 = 0;
const EBADF: i32 = 8;
const EEXIST: i32 = 20;
const EFAULT: i32 = 21;
const EFBIG: i32 = 22;
const EILSEQ: i32 = 25;
const EINVAL: i32 = 28;
const EISDIR: i32 = 31;
const EMFILE: i32 = 33;
const ENAMETOOLONG: i32 = 37;
const ENOENT: i32 = 44;
const ENOSPC: i32 = 51;
const ENOTDIR: i32 = 54;
const ENOTEMPTY: i32 = 55;
const ENOTSOCK: i32 = 57;
const ENOTSUP: i32 = 58;
const EPERM: i32 = 63;
const EROFS: i32 = 69;
const ESPIPE: i32 = 70;

// filetype
const FT_UNKNOWN: u8 = 0;
const FT_DIRECTORY: u8 = 3;
const FT_REGULAR: u8 = 4;

// rights
const RIGHT_FD_READ: u64 = 1 << 1;
const RIGHT_FD_WRITE: u64 = 1 << 6;
const ALL_RIGHTS: u64 = (1 << 30) - 1;
/// What a read-only tree lets a descriptor opened in it do.
const READ_ONLY_RIGHTS: u64 = ALL_RIGHTS
    & !(RIGHT_FD_WRITE
        | 1 << 0 // datasync
        | 1 << 4 // sync
        | 1 << 8 // allocate
        | 1 << 9 // path_create_directory
        | 1 << 10 // path_create_file
        | 1 << 11 | 1 << 12 // links
        | 1 << 16 | 1 << 17 // renames
        | 1 << 19 | 1 << 20 // path set size / times
        | 1 << 22 | 1 << 23 // fd set size / times
        | 1 << 24 | 1 << 25 | 1 << 26); // symlink, rmdir, unlink

/// Longest path accepted.
const MAX_PATH: u32 = 4096;
/// Most iovecs in one call (Linux's `IOV_MAX`).
const MAX_IOVS: u32 = 1024;
/// Most bytes one read or write moves (the rest is a short count, as
/// POSIX allows): an iovec list may name the same memory many times over,
/// and the host must not copy more than this for one call.
const MAX_IO: usize = 16 << 20;
/// Most subscriptions in one `poll_oneoff`.
const MAX_SUBSCRIPTIONS: u32 = 4096;
/// The realtime clock while a snapshot is taken: 2026-01-01T00:00:00Z.
const FROZEN_EPOCH_NS: u64 = 1_767_225_600_000_000_000;
/// The monotonic clock starts this far ahead of the snapshot's, so that it
/// never runs backwards across the snapshot.
const MONOTONIC_OFFSET: Duration = Duration::from_secs(3600);

fn tree_errno(e: TreeError) -> i32 {
    match e {
        TreeError::NotFound => ENOENT,
        TreeError::Exists => EEXIST,
        TreeError::NotDirectory => ENOTDIR,
        TreeError::IsDirectory => EISDIR,
        TreeError::NotEmpty => ENOTEMPTY,
        TreeError::NoSpace => ENOSPC,
        TreeError::NameTooLong => ENAMETOOLONG,
        TreeError::Invalid => EINVAL,
        TreeError::NotPermitted => EPERM,
        TreeError::BadHandle => EBADF,
        TreeError::TooManyHandles => EMFILE,
        TreeError::FileTooLarge => EFBIG,
    }
}

/// The guest's memory, bounds-checked.
struct Mem<'a>(&'a mut [u8]);

impl Mem<'_> {
    fn range(&self, ptr: i32, len: u32) -> Result<std::ops::Range<usize>, i32> {
        let start = ptr as u32 as usize;
        let end = start.checked_add(len as usize).ok_or(EFAULT)?;
        if end > self.0.len() {
            return Err(EFAULT);
        }
        Ok(start..end)
    }
    fn bytes(&self, ptr: i32, len: u32) -> Result<&[u8], i32> {
        let r = self.range(ptr, len)?;
        Ok(&self.0[r])
    }
    fn bytes_mut(&mut self, ptr: i32, len: u32) -> Result<&mut [u8], i32> {
        let r = self.range(ptr, len)?;
        Ok(&mut self.0[r])
    }
    fn u32(&self, ptr: i32) -> Result<u32, i32> {
        let b = self.bytes(ptr, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn put(&mut self, ptr: i32, data: &[u8]) -> Result<(), i32> {
        let len = u32::try_from(data.len()).map_err(|_| EFAULT)?;
        self.bytes_mut(ptr, len)?.copy_from_slice(data);
        Ok(())
    }
    fn put_u32(&mut self, ptr: i32, v: u32) -> Result<(), i32> {
        self.put(ptr, &v.to_le_bytes())
    }
    fn put_u64(&mut self, ptr: i32, v: u64) -> Result<(), i32> {
        self.put(ptr, &v.to_le_bytes())
    }
    fn path(&self, ptr: i32, len: i32) -> Result<String, i32> {
        let len = len as u32;
        if len > MAX_PATH {
            return Err(ENAMETOOLONG);
        }
        let b = self.bytes(ptr, len)?;
        let s = std::str::from_utf8(b).map_err(|_| EILSEQ)?;
        if s.contains('\0') {
            return Err(EINVAL);
        }
        Ok(s.to_owned())
    }
    /// The (pointer, length) pairs of an iovec array.
    fn iovs(&self, ptr: i32, count: i32) -> Result<Vec<(i32, u32)>, i32> {
        let count = count as u32;
        if count > MAX_IOVS {
            return Err(EINVAL);
        }
        let mut out = Vec::with_capacity(count as usize);
        for i in 0..count {
            let at = (ptr as u32).wrapping_add(i * 8) as i32;
            out.push((self.u32(at)? as i32, self.u32(at.wrapping_add(4))?));
        }
        Ok(out)
    }
}

/// The guest's memory and its store data, or `None` for a guest without
/// an exported memory or a store without preview-1 state.
fn split<'a>(caller: &'a mut Caller<'_, RunState>) -> Option<(Mem<'a>, &'a mut RunState)> {
    let mem = caller.get_export("memory")?.into_memory()?;
    let (data, state) = mem.data_and_store_mut(caller);
    state.p1.as_ref()?;
    Some((Mem(data), state))
}

/// Runs `f` with the memory, the preview-1 state and the workspace;
/// answers `EFAULT` when there is no memory or state.
fn with<F>(caller: &mut Caller<'_, RunState>, f: F) -> i32
where
    F: FnOnce(
        &mut Mem<'_>,
        &mut P1State,
        &Option<std::sync::Arc<crate::workspace::Workspace>>,
    ) -> Result<(), i32>,
{
    let Some((mut mem, state)) = split(caller) else {
        return EFAULT;
    };
    let workspace = state.workspace.clone();
    let owner = state.fs_owner;
    let Some(p1) = state.p1.as_deref_mut() else {
        return EFAULT;
    };
    p1.fs_owner = owner;
    match f(&mut mem, p1, &workspace) {
        Ok(()) => ESUCCESS,
        Err(e) => e,
    }
}

fn filestat(
    mem: &mut Mem<'_>,
    ptr: i32,
    ino: u64,
    ft: u8,
    size: u64,
    mtime: u64,
) -> Result<(), i32> {
    let mut b = [0u8; 64];
    b[8..16].copy_from_slice(&ino.to_le_bytes());
    b[16] = ft;
    b[24..32].copy_from_slice(&1u64.to_le_bytes());
    b[32..40].copy_from_slice(&size.to_le_bytes());
    for at in [40, 48, 56] {
        b[at..at + 8].copy_from_slice(&mtime.to_le_bytes());
    }
    mem.put(ptr, &b)
}

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

fn workspace(
    ws: &Option<std::sync::Arc<crate::workspace::Workspace>>,
) -> Result<&crate::workspace::Workspace, i32> {
    ws.as_deref().ok_or(EBADF)
}

fn read_into(
    mem: &mut Mem<'_>,
    iovs: &[(i32, u32)],
    mut src: impl FnMut(usize) -> Result<Vec<u8>, i32>,
) -> Result<usize, i32> {
    let mut total = 0usize;
    for &(ptr, len) in iovs {
        let len = (len as usize).min(MAX_IO - total);
        if len == 0 {
            if total == MAX_IO {
                break;
            }
            continue;
        }
        let chunk = src(len)?;
        let n = chunk.len();
        mem.bytes_mut(ptr, n as u32)?.copy_from_slice(&chunk);
        total += n;
        if n < len {
            break;
        }
    }
    Ok(total)
}

fn gather(mem: &Mem<'_>, iovs: &[(i32, u32)]) -> Result<Vec<u8>, i32> {
    let mut out = Vec::new();
    for &(ptr, len) in iovs {
        let b = mem.bytes(ptr, len)?;
        let room = MAX_IO - out.len();
        out.extend_from_slice(&b[..b.len().min(room)]);
        if out.len() == MAX_IO {
            break;
        }
    }
    Ok(out)
}

/// Reads from `fd` at `at` (its position when `None`), advancing the
/// position only then.
fn do_read(
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
enum Wrote {
    Bytes(usize),
    OverCap(crate::output::OutputLimitExceeded),
}

fn do_write(
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

fn clock_now(p1: &mut P1State, id: i32) -> Result<u64, i32> {
    if p1.frozen {
        // Each read moves a microsecond on, so code that waits for time
        // to pass still ends.
        p1.frozen_clock += 1_000;
        return match id {
            0 => Ok(FROZEN_EPOCH_NS + p1.frozen_clock),
            1..=3 => Ok(p1.frozen_clock),
            _ => Err(EINVAL),
        };
    }
    match id {
        0 => Ok(SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))),
        1..=3 => Ok(
            u64::try_from((p1.origin.elapsed() + MONOTONIC_OFFSET).as_nanos()).unwrap_or(u64::MAX),
        ),
        _ => Err(EINVAL),
    }
}

fn fill_random(p1: &mut P1State, buf: &mut [u8]) -> Result<(), i32> {
    if p1.frozen {
        // SplitMix64 from a fixed seed: the same snapshot on every build.
        for chunk in buf.chunks_mut(8) {
            p1.frozen_random = p1.frozen_random.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = p1.frozen_random;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
        return Ok(());
    }
    getrandom::fill(buf).map_err(|_| crate::wasip1::EFAULT)
}

/// Adds every `wasi_snapshot_preview1` function a WASI libc imports.
pub fn add_to_linker(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    add_args_env_clocks(linker)?;
    add_fd_calls(linker)?;
    add_path_calls(linker)?;
    add_poll_and_process(linker)?;
    Ok(())
}

fn add_args_env_clocks(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    fn sizes(list: &[String]) -> (u32, u32) {
        let n = u32::try_from(list.len()).unwrap_or(u32::MAX);
        let bytes = list.iter().map(|s| s.len() as u64 + 1).sum::<u64>();
        (n, u32::try_from(bytes).unwrap_or(u32::MAX))
    }
    fn put_list(mem: &mut Mem<'_>, list: &[String], ptrs: i32, buf: i32) -> Result<(), i32> {
        let mut at = buf as u32;
        for (i, s) in list.iter().enumerate() {
            mem.put_u32((ptrs as u32).wrapping_add(i as u32 * 4) as i32, at)?;
            let mut z = s.as_bytes().to_vec();
            z.push(0);
            mem.put(at as i32, &z)?;
            at = at.wrapping_add(z.len() as u32);
        }
        Ok(())
    }
    // argv and environ: the same two calls over two lists.
    type Pick = fn(&Layout) -> &[String];
    let lists: [(&str, &str, Pick); 2] = [
        ("args_sizes_get", "args_get", |l| &l.args),
        ("environ_sizes_get", "environ_get", |l| &l.env),
    ];
    for (sizes_name, get_name, pick) in lists {
        linker.func_wrap(
            MODULE,
            sizes_name,
            move |mut c: Caller<'_, RunState>, n: i32, size: i32| -> i32 {
                with(&mut c, |mem, p1, _| {
                    let (count, bytes) = sizes(pick(&p1.layout));
                    mem.put_u32(n, count)?;
                    mem.put_u32(size, bytes)
                })
            },
        )?;
        linker.func_wrap(
            MODULE,
            get_name,
            move |mut c: Caller<'_, RunState>, ptrs: i32, buf: i32| -> i32 {
                with(&mut c, |mem, p1, _| {
                    let layout = p1.layout.clone();
                    put_list(mem, pick(&layout), ptrs, buf)
                })
            },
        )?;
    }
    linker.func_wrap(
        MODULE,
        "clock_res_get",
        |mut c: Caller<'_, RunState>, id: i32, out: i32| -> i32 {
            with(&mut c, |mem, _, _| {
                if !(0..=3).contains(&id) {
                    return Err(EINVAL);
                }
                mem.put_u64(out, 1_000)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "clock_time_get",
        |mut c: Caller<'_, RunState>, id: i32, _precision: i64, out: i32| -> i32 {
            with(&mut c, |mem, p1, _| {
                let now = clock_now(p1, id)?;
                mem.put_u64(out, now)
            })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "random_get",
        |mut c: Caller<'_, RunState>, buf: i32, len: i32| -> i32 {
            with(&mut c, |mem, p1, _| {
                // One call fills at most 16 MiB (longer would hold a host
                // thread for seconds): `EINVAL`, which the guest's
                // `os.urandom` raises as `OSError`.
                if len as u32 as usize > MAX_IO {
                    return Err(EINVAL);
                }
                let b = mem.bytes_mut(buf, len as u32)?;
                fill_random(p1, b)
            })
        },
    )?;
    Ok(())
}

fn add_fd_calls(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
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

fn add_path_calls(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
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

fn add_poll_and_process(linker: &mut Linker<RunState>) -> wasmtime::Result<()> {
    linker.func_wrap_async(
        MODULE,
        "poll_oneoff",
        |mut c: Caller<'_, RunState>, (subs, events, n, out): (i32, i32, i32, i32)| {
            Box::new(async move { Ok(poll_oneoff(&mut c, subs, events, n, out).await) })
        },
    )?;
    linker.func_wrap(
        MODULE,
        "proc_exit",
        |_c: Caller<'_, RunState>, code: i32| -> wasmtime::Result<()> {
            Err(wasmtime::Error::new(wasmtime_wasi::I32Exit(code)))
        },
    )?;
    linker.func_wrap(MODULE, "sched_yield", |_c: Caller<'_, RunState>| -> i32 {
        ESUCCESS
    })?;
    linker.func_wrap(
        MODULE,
        "sock_accept",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32, _d: i32| -> i32 { ENOTSOCK },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_recv",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32, _g: i32| -> i32 {
            ENOTSOCK
        },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_send",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32, _d: i32, _e: i32, _f: i32| -> i32 { ENOTSOCK },
    )?;
    linker.func_wrap(
        MODULE,
        "sock_shutdown",
        |_c: Caller<'_, RunState>, _a: i32, _b: i32| -> i32 { ENOTSOCK },
    )?;
    Ok(())
}

/// `poll_oneoff`: descriptors are always ready (every read and write here
/// completes at once); clocks are slept on, never past the run's deadline
/// (the epoch callback then ends the run at its next check).
async fn poll_oneoff(
    c: &mut Caller<'_, RunState>,
    subs: i32,
    events: i32,
    n: i32,
    out: i32,
) -> i32 {
    let n = n as u32;
    if n == 0 || n > MAX_SUBSCRIPTIONS {
        return EINVAL;
    }
    struct Sub {
        userdata: u64,
        tag: u8,
        wait: Option<Duration>,
    }
    let mut list = Vec::with_capacity(n as usize);
    let errno = with(c, |mem, p1, _| {
        for i in 0..n {
            let at = (subs as u32).wrapping_add(i * 48) as i32;
            let b = mem.bytes(at, 48)?;
            let userdata = u64::from_le_bytes(b[0..8].try_into().map_err(|_| EFAULT)?);
            let tag = b[8];
            let wait = if tag == 0 {
                let id = i32::from_le_bytes(b[16..20].try_into().map_err(|_| EFAULT)?);
                let timeout = u64::from_le_bytes(b[24..32].try_into().map_err(|_| EFAULT)?);
                let flags = u16::from_le_bytes(b[40..42].try_into().map_err(|_| EFAULT)?);
                let rel = if flags & 1 != 0 {
                    timeout.saturating_sub(clock_now(p1, id)?)
                } else {
                    timeout
                };
                Some(Duration::from_nanos(rel))
            } else {
                None
            };
            list.push(Sub {
                userdata,
                tag,
                wait,
            });
        }
        Ok(())
    });
    if errno != ESUCCESS {
        return errno;
    }
    let ready_fds: Vec<&Sub> = list.iter().filter(|s| s.tag != 0).collect();
    let fired: Vec<(u64, u8)> = if !ready_fds.is_empty() {
        ready_fds.iter().map(|s| (s.userdata, s.tag)).collect()
    } else {
        let shortest = list.iter().filter_map(|s| s.wait).min().unwrap_or_default();
        let frozen = c.data().p1.as_ref().is_some_and(|p| p.frozen);
        if !frozen {
            let deadline = c.data().deadline;
            let until = Instant::now()
                .checked_add(shortest)
                .map_or(deadline, |t| t.min(deadline));
            tokio::time::sleep_until(until.into()).await;
        }
        list.iter()
            .filter(|s| s.wait == Some(shortest))
            .map(|s| (s.userdata, s.tag))
            .collect()
    };
    with(c, |mem, _, _| {
        for (i, (userdata, tag)) in fired.iter().enumerate() {
            let mut e = [0u8; 32];
            e[0..8].copy_from_slice(&userdata.to_le_bytes());
            e[10] = *tag;
            mem.put((events as u32).wrapping_add(i as u32 * 32) as i32, &e)?;
        }
        mem.put_u32(out, fired.len() as u32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iovecs_naming_the_same_memory_move_a_bounded_amount() {
        // 1,000 iovecs over the same 1 MiB: a gather would copy 1,000 MiB.
        let mut memory = vec![7u8; 2 << 20];
        let iovs: Vec<(i32, u32)> = (0..1000).map(|_| (4096, 1 << 20)).collect();
        let mem = Mem(&mut memory);
        let data = gather(&mem, &iovs).expect("in bounds");
        assert_eq!(data.len(), MAX_IO);
        let mut mem = Mem(&mut memory);
        let mut served = 0usize;
        let n = read_into(&mut mem, &iovs, |len| {
            served += len;
            Ok(vec![1u8; len])
        })
        .expect("in bounds");
        assert_eq!((n, served), (MAX_IO, MAX_IO));
    }

    #[test]
    fn pointers_past_memory_are_faults_not_panics() {
        let mut memory = vec![0u8; 64];
        let mem = Mem(&mut memory);
        assert_eq!(mem.bytes(60, 8).err(), Some(EFAULT));
        assert_eq!(mem.bytes(-1, 1).err(), Some(EFAULT));
        assert_eq!(mem.iovs(0, 2000).err(), Some(EINVAL));
        assert_eq!(mem.path(0, 5000).err(), Some(ENAMETOOLONG));
        let mut memory = b"a\xffb".to_vec();
        let mem = Mem(&mut memory);
        assert_eq!(mem.path(0, 3).err(), Some(EILSEQ));
    }
}
