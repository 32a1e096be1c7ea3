//! Captured stdout and stderr with a byte cap.
//!
//! A guest that writes past its cap is stopped at once with
//! [`OutputLimitExceeded`] (the run ends as `output_truncated`) instead of
//! being allowed to spin until its wall time runs out. Everything written up
//! to the cap is kept.

use bytes::Bytes;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// The largest single write permit handed to the guest. Bounded so that a
/// guest's write buffer, not ours, holds anything larger.
const WRITE_PERMIT: usize = 64 * 1024;

/// The error that ends a run whose output passed its cap.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("{stream} passed its cap of {cap} bytes")]
pub struct OutputLimitExceeded {
    pub stream: &'static str,
    pub cap: u64,
}

#[derive(Debug)]
struct State {
    buf: Vec<u8>,
    cap: u64,
    truncated: bool,
    /// Past the cap, drop writes instead of failing them.
    soft: bool,
}

/// One captured output stream (stdout or stderr). Cheap to clone; clones
/// share the buffer, as WASI requires of the streams it hands out.
#[derive(Debug, Clone)]
pub struct CappedOutput {
    name: &'static str,
    state: Arc<Mutex<State>>,
}

pub use crate::run::Captured;

impl CappedOutput {
    /// A stream named `name` (for error messages) that keeps `cap` bytes.
    pub fn new(name: &'static str, cap: u64) -> Self {
        CappedOutput {
            name,
            state: Arc::new(Mutex::new(State {
                buf: Vec::new(),
                cap,
                truncated: false,
                soft: false,
            })),
        }
    }

    /// A stream like [`CappedOutput::new`] that, past its cap, accepts
    /// writes and drops them (marking the truncation) instead of failing
    /// them: the writer never learns of the cap and runs on.
    pub fn soft(name: &'static str, cap: u64) -> Self {
        let out = CappedOutput::new(name, cap);
        out.lock().soft = true;
        out
    }

    /// Makes this stream soft (see [`CappedOutput::soft`]) from now on.
    pub fn make_soft(&self) {
        self.lock().soft = true;
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked mid-write; the
        // buffer is still a valid prefix, so keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes what was written so far and starts again with a new cap. Used
    /// between evaluations of one session.
    pub fn take(&self, next_cap: u64) -> Captured {
        let mut st = self.lock();
        let out = Captured {
            bytes: std::mem::take(&mut st.buf),
            truncated: st.truncated,
        };
        st.truncated = false;
        st.cap = next_cap;
        out
    }

    /// Appends as much of `data` as fits (a preview-1 guest's
    /// `fd_write`). Returns an error when some of it did not fit.
    pub(crate) fn append_bytes(&self, data: &[u8]) -> Result<(), OutputLimitExceeded> {
        self.append(data)
    }

    /// Appends as much of `data` as fits. Returns an error when some of it
    /// did not fit.
    fn append(&self, data: &[u8]) -> Result<(), OutputLimitExceeded> {
        let mut st = self.lock();
        let room =
            usize::try_from(st.cap.saturating_sub(st.buf.len() as u64)).unwrap_or(usize::MAX);
        if data.len() <= room {
            st.buf.extend_from_slice(data);
            return Ok(());
        }
        st.buf.extend_from_slice(&data[..room]);
        st.truncated = true;
        if st.soft {
            return Ok(());
        }
        Err(OutputLimitExceeded {
            stream: self.name,
            cap: st.cap,
        })
    }
}

impl IsTerminal for CappedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.append(&bytes)
            .map_err(|e| StreamError::Trap(wasmtime::Error::new(e)))
    }
    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }
    fn check_write(&mut self) -> Result<usize, StreamError> {
        let st = self.lock();
        if st.truncated && !st.soft {
            return Err(StreamError::Closed);
        }
        Ok(WRITE_PERMIT)
    }
}

impl AsyncWrite for CappedOutput {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.append(buf) {
            Ok(()) => Poll::Ready(Ok(buf.len())),
            Err(e) => Poll::Ready(Err(std::io::Error::other(e))),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_the_cap_and_flags_the_rest() {
        let mut out = CappedOutput::new("stdout", 5);
        assert!(out.write(Bytes::from_static(b"abc")).is_ok());
        assert!(matches!(
            out.write(Bytes::from_static(b"defg")),
            Err(StreamError::Trap(_))
        ));
        assert!(matches!(out.check_write(), Err(StreamError::Closed)));
        let got = out.take(10);
        assert_eq!(got.bytes, b"abcde");
        assert!(got.truncated);
        // After `take`, the stream starts afresh with the new cap.
        assert!(out.write(Bytes::from_static(b"0123456789")).is_ok());
        assert!(!out.take(1).truncated);
    }

    #[test]
    fn the_trap_names_the_stream() {
        let mut out = CappedOutput::new("stderr", 0);
        let Err(StreamError::Trap(e)) = out.write(Bytes::from_static(b"x")) else {
            panic!("expected a trap");
        };
        let limit = e.downcast_ref::<OutputLimitExceeded>().copied();
        assert_eq!(limit.map(|l| l.stream), Some("stderr"));
    }
}
