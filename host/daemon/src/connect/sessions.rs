//! The protocol's view of its sessions: who owns each, its fingerprint,
//! the software it runs, and its chain of records. The library keeps the
//! interpreters and the workspace ([`plimsoll::session`]); this keeps only
//! what a record needs, for as long as the library knows the session (open,
//! or a tombstone).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A session's place in its chain: calls answered (or unanswered but
/// recorded) so far, and the last record's digest.
#[derive(Debug, Default)]
pub struct Chain {
    pub calls: u64,
    pub last: String,
}

/// One protocol session.
#[derive(Debug)]
pub struct Session {
    pub caller: String,
    pub fingerprint: String,
    pub software_identity: String,
    /// Held for the whole of a call: calls run one at a time, in arrival
    /// order (tokio's mutex is fair).
    pub chain: tokio::sync::Mutex<Chain>,
}

/// The protocol's sessions, by id.
#[derive(Debug, Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

impl Sessions {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a session the library just opened.
    pub fn insert(&self, id: String, s: Session) {
        self.lock().insert(id, Arc::new(s));
    }

    /// `caller`'s session `id`; `None` for an unknown id and for another
    /// caller's alike.
    pub fn get(&self, caller: &str, id: &str) -> Option<Arc<Session>> {
        self.lock().get(id).filter(|s| s.caller == caller).cloned()
    }

    /// Forgets `id`.
    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Forgets every session `known` no longer vouches for (neither open
    /// nor a tombstone in the library): the table never outgrows the
    /// library's, which is bounded.
    pub fn retain(&self, known: impl Fn(&str, &str) -> bool) {
        self.lock().retain(|id, s| known(&s.caller, id));
    }
}
