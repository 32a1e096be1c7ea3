//! The guest's memory, bounds-checked, and the shapes preview 1 writes
//! into it (iovecs, paths, filestats).
//!
//! Guarantees: every pointer and length is checked against the memory
//! before a byte is read or written (`EFAULT`, never a panic); a path is
//! at most [`MAX_PATH`] bytes of UTF-8 without NUL; an iovec list has at
//! most [`MAX_IOVS`] entries; one read or write moves at most [`MAX_IO`]
//! bytes however often its iovecs name the same memory.

use super::abi::{EFAULT, EILSEQ, EINVAL, ENAMETOOLONG, ESUCCESS};
use super::fds::P1State;
use crate::state::RunState;
use wasmtime::Caller;

/// Longest path accepted.
pub(super) const MAX_PATH: u32 = 4096;
/// Most iovecs in one call (Linux's `IOV_MAX`).
pub(super) const MAX_IOVS: u32 = 1024;
/// Most bytes one read or write moves (the rest is a short count, as
/// POSIX allows): an iovec list may name the same memory many times over,
/// and the host must not copy more than this for one call.
pub(super) const MAX_IO: usize = 16 << 20;

/// The guest's memory, bounds-checked.
pub(super) struct Mem<'a>(pub(super) &'a mut [u8]);

impl Mem<'_> {
    pub(super) fn range(&self, ptr: i32, len: u32) -> Result<std::ops::Range<usize>, i32> {
        let start = ptr as u32 as usize;
        let end = start.checked_add(len as usize).ok_or(EFAULT)?;
        if end > self.0.len() {
            return Err(EFAULT);
        }
        Ok(start..end)
    }
    pub(super) fn bytes(&self, ptr: i32, len: u32) -> Result<&[u8], i32> {
        let r = self.range(ptr, len)?;
        Ok(&self.0[r])
    }
    pub(super) fn bytes_mut(&mut self, ptr: i32, len: u32) -> Result<&mut [u8], i32> {
        let r = self.range(ptr, len)?;
        Ok(&mut self.0[r])
    }
    pub(super) fn u32(&self, ptr: i32) -> Result<u32, i32> {
        let b = self.bytes(ptr, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    pub(super) fn put(&mut self, ptr: i32, data: &[u8]) -> Result<(), i32> {
        let len = u32::try_from(data.len()).map_err(|_| EFAULT)?;
        self.bytes_mut(ptr, len)?.copy_from_slice(data);
        Ok(())
    }
    pub(super) fn put_u32(&mut self, ptr: i32, v: u32) -> Result<(), i32> {
        self.put(ptr, &v.to_le_bytes())
    }
    pub(super) fn put_u64(&mut self, ptr: i32, v: u64) -> Result<(), i32> {
        self.put(ptr, &v.to_le_bytes())
    }
    pub(super) fn path(&self, ptr: i32, len: i32) -> Result<String, i32> {
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
    pub(super) fn iovs(&self, ptr: i32, count: i32) -> Result<Vec<(i32, u32)>, i32> {
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
pub(super) fn with<F>(caller: &mut Caller<'_, RunState>, f: F) -> i32
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

pub(super) fn filestat(
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

pub(super) fn read_into(
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

pub(super) fn gather(mem: &Mem<'_>, iovs: &[(i32, u32)]) -> Result<Vec<u8>, i32> {
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
