//! A stream over one file: reads from or writes at its offset, or appends.
//!
//! Guarantees: a stream holds its file as a handle does (the file lives
//! while the stream does, and is let go when it is dropped); one read
//! returns at most [`super::MAX_READ`] bytes; every write is charged to
//! the workspace at the write; the stream is always ready.

use super::{MAX_READ, now_ns};
use crate::memtree::{Handle, NodeId, Owner};
use crate::workspace::Workspace;
use std::sync::Arc;
use wasmtime_wasi::p2::{InputStream, OutputStream, Pollable};
use wasmtime_wasi::p2::{StreamError, StreamResult};

/// A stream over one file: reads from or writes at its offset, or appends
/// (`offset: None`). It holds the file as a handle does.
pub(super) struct Stream {
    pub(super) ws: Arc<Workspace>,
    pub(super) owner: Owner,
    pub(super) handle: Handle,
    pub(super) node: NodeId,
    pub(super) offset: Option<u64>,
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
