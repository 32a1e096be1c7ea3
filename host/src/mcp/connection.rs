//! The sessions one MCP connection holds.
//!
//! Guarantees: a connection belongs to the caller of its first call; a
//! call from another caller on it is refused; it holds at most
//! [`MAX_SESSIONS_PER_CONNECTION`] sessions, open and opening together (a
//! slot is taken before an open is awaited, so concurrent opens cannot
//! pass the cap together); when the connection ends, its sessions close.

use super::MAX_SESSIONS_PER_CONNECTION;
use super::backend::Backend;
use rmcp::ErrorData;
use std::sync::{Arc, Mutex};

/// The sessions one connection opened, and the caller the connection
/// belongs to (that of its first call); dropping it (the connection's
/// end) closes the sessions.
pub struct ConnectionSessions {
    bound: Mutex<Option<Arc<dyn Backend>>>,
    pub(super) open: Mutex<Vec<String>>,
    /// Which of `open` are shell sessions: each of their cells is one line
    /// of a persistent shell ([`crate::run::shell_session_line`]).
    pub(super) shells: Mutex<Vec<String>>,
    /// Opens in flight (each holds a [`Reserved`] slot).
    opening: std::sync::atomic::AtomicUsize,
}

/// One session slot taken while its open is awaited; given back on drop
/// (by then the session, if it opened, is in `open`).
pub(super) struct Reserved<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

impl ConnectionSessions {
    pub(super) fn new() -> ConnectionSessions {
        ConnectionSessions {
            bound: Mutex::new(None),
            open: Mutex::new(Vec::new()),
            shells: Mutex::new(Vec::new()),
            opening: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// `b`, if this connection is its caller's (binding it on first use).
    pub(super) fn bind(&self, b: Arc<dyn Backend>) -> Result<Arc<dyn Backend>, ErrorData> {
        let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        match &*bound {
            Some(first) if first.caller_id() != b.caller_id() => Err(ErrorData::invalid_request(
                "this MCP connection belongs to another caller",
                None,
            )),
            Some(_) => Ok(b),
            None => {
                *bound = Some(b.clone());
                Ok(b)
            }
        }
    }

    /// A slot for one more session, or `None` when the connection holds
    /// its cap (open sessions and opens in flight together).
    pub(super) fn reserve(&self) -> Option<Reserved<'_>> {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let opening = self.opening.load(std::sync::atomic::Ordering::Acquire);
        if open.len() + opening >= MAX_SESSIONS_PER_CONNECTION {
            return None;
        }
        self.opening
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Some(Reserved(&self.opening))
    }

    /// Whether this connection opened the session `id` and holds it.
    pub(super) fn holds(&self, id: &str) -> bool {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|s| s == id)
    }

    /// Whether the session `id` this connection holds is a shell's.
    pub(super) fn is_shell(&self, id: &str) -> bool {
        self.shells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|s| s == id)
    }

    /// Lets go of the session `id` (closed, or ended by itself).
    pub(super) fn forget(&self, id: &str) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|s| s != id);
        self.shells
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|s| s != id);
    }
}

impl Drop for ConnectionSessions {
    fn drop(&mut self) {
        let open = std::mem::take(&mut *self.open.lock().unwrap_or_else(|p| p.into_inner()));
        let bound = self.bound.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(b) = bound {
            for id in open {
                b.close_session(&id);
            }
        }
    }
}
