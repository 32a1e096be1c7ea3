//! The budgets of one tree, and the changes that grow or shrink what it
//! holds: writes, appends, sizes.
//!
//! Guarantees: every byte of contents (a file at its apparent size: a hole
//! is charged) and every name and entry is charged against the byte and
//! entry budgets before the change is made; a change past a budget fails
//! with [`TreeError::NoSpace`], changes nothing and raises the
//! refused-for-space flag (a run that then fails ended `disk_exhausted`);
//! no offset or size past `i64::MAX` is accepted
//! ([`TreeError::FileTooLarge`]); a refund never underflows.

use super::tree::{Kind, Tree};
use super::{NodeId, TreeError};

/// The budgets of one tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes of contents and names.
    pub bytes: u64,
    /// Nodes, the root not counted.
    pub entries: u64,
    /// Handles open at once.
    pub handles: u32,
}

impl Tree {
    pub(super) fn charge(&mut self, bytes: u64, entries: u64) -> Result<(), TreeError> {
        let b = self.bytes.checked_add(bytes).ok_or(TreeError::NoSpace)?;
        let e = self
            .entries
            .checked_add(entries)
            .ok_or(TreeError::NoSpace)?;
        if b > self.budget.bytes || e > self.budget.entries {
            self.refused_space = true;
            return Err(TreeError::NoSpace);
        }
        self.bytes = b;
        self.entries = e;
        Ok(())
    }

    pub(super) fn refund(&mut self, bytes: u64, entries: u64) {
        self.bytes = self.bytes.saturating_sub(bytes);
        self.entries = self.entries.saturating_sub(entries);
    }

    pub(super) fn set_size_of(&mut self, id: NodeId, size: u64) -> Result<(), TreeError> {
        if size > i64::MAX as u64 {
            return Err(TreeError::FileTooLarge);
        }
        let now = self.now_ns;
        let old = match &self.node(id)?.kind {
            Kind::File(d) => d.len() as u64,
            Kind::Dir(_) => return Err(TreeError::IsDirectory),
        };
        if size > old {
            self.charge(size - old, 0)?;
        } else {
            self.refund(old - size, 0);
        }
        // Within the byte budget, which a usize holds.
        let size = usize::try_from(size).map_err(|_| TreeError::FileTooLarge)?;
        let n = self.node_mut(id)?;
        if let Kind::File(d) = &mut n.kind {
            d.resize(size, 0);
            if size < d.capacity() / 2 {
                d.shrink_to_fit();
            }
        }
        n.mtime_ns = now;
        Ok(())
    }

    /// Truncates or extends (with zeros) a file.
    pub fn set_size(&mut self, id: NodeId, size: u64) -> Result<(), TreeError> {
        self.set_size_of(id, size)
    }

    /// Writes `data` at `offset`, growing the file (a hole is zeros,
    /// charged at its size). Returns the bytes written: all of them, or
    /// nothing and [`TreeError::NoSpace`].
    pub fn write(&mut self, id: NodeId, offset: u64, data: &[u8]) -> Result<usize, TreeError> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|e| *e <= i64::MAX as u64)
            .ok_or(TreeError::FileTooLarge)?;
        let old = self.stat(id)?.size;
        if end > old {
            self.set_size_of(id, end)?;
        }
        let now = self.now_ns;
        let n = self.node_mut(id)?;
        if let Kind::File(d) = &mut n.kind {
            // `end` fits: the file is at least that long now.
            let start = offset as usize;
            d[start..start + data.len()].copy_from_slice(data);
        }
        n.mtime_ns = now;
        Ok(data.len())
    }

    /// Appends `data`; returns the offset it was written at.
    pub fn append(&mut self, id: NodeId, data: &[u8]) -> Result<u64, TreeError> {
        let at = self.stat(id)?.size;
        self.write(id, at, data)?;
        Ok(at)
    }
}
