//! Session rules every wire shares: ids are checked before they are looked
//! up, opens are serialized per caller and capped (the caller's own cap, an
//! owner's replacement rule, the host's total), every open and close is
//! audited by fingerprint, and a session opened through the protocol is
//! reachable only through the protocol ([`Chains`]: its calls are links of
//! a record chain that a call by another wire would break).

use super::App;
use super::accounting::fingerprint;
use crate::callers::Caller;
use crate::error::ApiError;
use crate::fleet::shared::Down;
use plimsoll::RunRequest;
use plimsoll::run::Language;
use plimsoll::session::{SessionInfo, SessionOptions};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Whether `id` has the shape of a session id (32 hex digits): anything
/// else is unknown without a lookup.
pub fn valid_session_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What a wire asks for when it opens a session.
#[derive(Debug, Clone, Default)]
pub struct SessionOpen {
    /// The language or interpreter component, the floor and the limits.
    pub req: RunRequest,
    /// Several interpreters over one workspace, an owner, timeouts: the
    /// protocol's sessions. `None`: the one guest `req` names.
    pub opts: Option<SessionOptions>,
    /// The wire, for the audit log (`None`: REST).
    pub protocol: Option<&'static str>,
    /// The trace id the caller sent, for the audit log.
    pub trace_id: Option<String>,
    /// The identity the audit log names for what the session runs
    /// (default: its first guest's).
    pub software: Option<String>,
}

impl App {
    /// Opens a session for `caller`, within its cap: one open per caller
    /// at a time; at the cap only a replacement of the owner's least
    /// recently used session (the protocol's `owner` rule) makes room. The
    /// open is audited; a session whose record cannot be written is closed
    /// again and refused.
    pub async fn open_session(
        &self,
        caller: &Caller,
        o: SessionOpen,
        started: Instant,
    ) -> Result<SessionInfo, ApiError> {
        let opts = o.opts.clone();
        self.open_session_through(
            caller,
            o,
            started,
            "session_open",
            None,
            move |sb, c, req| {
                Box::pin(async move {
                    match &opts {
                        Some(opts) => sb.open_session_with(c, opts, req).await,
                        None => sb.open_session(c, req).await,
                    }
                })
            },
        )
        .await
    }

    /// [`App::open_session`] whose session `open` makes (a new one, or
    /// one resumed from a snapshot), audited as `event` (with the
    /// snapshot's fingerprint, when it comes from one).
    pub async fn open_session_through(
        &self,
        caller: &Caller,
        mut o: SessionOpen,
        started: Instant,
        event: &'static str,
        snapshot: Option<String>,
        open: impl for<'a> FnOnce(
            &'a plimsoll::Sandbox,
            &'a str,
            &'a RunRequest,
        ) -> plimsoll::provider::BoxFuture<
            'a,
            Result<SessionInfo, plimsoll::run::ErrorInfo>,
        >,
    ) -> Result<SessionInfo, ApiError> {
        self.bind_to_caller(caller, &mut o.req)?;
        self.check_audit()?;
        let Some(_lock) = self.quotas.session_lock(caller).await else {
            return Err(ApiError::new("forbidden", "unknown caller"));
        };
        self.forget_stale_chains();
        let limit = || {
            self.metrics.shed("session_limit");
            ApiError::new(
                "session_limit",
                format!(
                    "this caller already has its maximum of {} open sessions",
                    caller.max_sessions
                ),
            )
            .retry_after(1)
        };
        let max = caller.max_sessions as usize;
        // At the caller's cap only a replacement can make room: the owner
        // must be at its own cap, or nothing would be replaced and the new
        // session would be closed again at once.
        let replaces = o
            .opts
            .as_ref()
            .and_then(|opts| opts.owner.as_ref())
            .is_some_and(|(tag, cap)| {
                self.sandbox.session_count_for_owner(&caller.id, tag) >= *cap
            });
        if self.sandbox.session_count(&caller.id) >= max && !replaces {
            return Err(limit());
        }
        // In a fleet the cap is the fleet's: a place is taken there (as a
        // pending token, made the session's fingerprint once it opened).
        let mut pending: Option<String> = None;
        if let Some(f) = &self.fleet
            && !replaces
        {
            let token = format!("pending:{}", plimsoll::run::new_run_id());
            let placed = match f.up() {
                true => {
                    f.open_session(&caller.id, caller.max_sessions, &token)
                        .await
                }
                false => Err(Down::Unreachable),
            };
            match placed {
                Ok(true) => pending = Some(token),
                Ok(false) => return Err(limit()),
                Err(Down::Slow) => {
                    // The place may have been taken: give it back.
                    let (f, caller) = (f.clone(), caller.id.clone());
                    tokio::spawn(async move {
                        let _ = f.close_session(&caller, &token).await;
                    });
                    return Err(self.shed(crate::quota::Shed::SharedStateDown));
                }
                Err(Down::Unreachable) => {
                    self.when_down()?;
                    let share = (max / self.quotas.share() as usize).max(1);
                    if self.sandbox.session_count(&caller.id) >= share {
                        return Err(limit());
                    }
                }
            }
        }
        let iso = self.sandbox.isolation();
        let opened = open(&self.sandbox, &caller.id, &o.req).await;
        if let (Some(f), Some(token)) = (&self.fleet, &pending) {
            if let Ok(info) = &opened {
                let _ = f
                    .open_session(&caller.id, u32::MAX, &fingerprint(&info.session_id))
                    .await;
            }
            let _ = f.close_session(&caller.id, token).await;
        }
        self.metrics.set_sessions(self.sandbox.session_total());
        let mut rec = self.base_record(event, caller, &iso);
        rec.snapshot = snapshot;
        rec.protocol = o.protocol;
        rec.trace_id = o.trace_id.clone();
        rec.language = o.req.language.map(Language::as_str);
        rec.handling_ms = started.elapsed().as_secs_f64() * 1e3;
        let info = match opened {
            Ok(info) => info,
            Err(e) => {
                rec.outcome = "refused".into();
                rec.error_code = Some(e.code.clone());
                let _ = self.audit.record(&rec).await;
                return Err(ApiError::new(&e.code, e.message));
            }
        };
        if self.sandbox.session_count(&caller.id) > max {
            self.sandbox.close_session(&caller.id, &info.session_id);
            return Err(limit());
        }
        rec.session_id = Some(fingerprint(&info.session_id));
        rec.guest = Some(o.software.unwrap_or_else(|| info.guest.clone()));
        rec.outcome = "ok".into();
        if let Err(e) = self.audit.record(&rec).await {
            self.sandbox.close_session(&caller.id, &info.session_id);
            return Err(ApiError::new("audit_unavailable", e.to_string()));
        }
        Ok(info)
    }

    /// Closes `caller`'s session `id` and audits the close; false when
    /// there was none. The session is closed whatever happens to the
    /// record (a failed write still marks the log unhealthy, which stops
    /// further runs).
    pub async fn close_session(
        &self,
        caller: &Caller,
        id: &str,
        protocol: Option<&'static str>,
    ) -> bool {
        let closed = valid_session_id(id) && self.sandbox.close_session(&caller.id, id);
        self.metrics.set_sessions(self.sandbox.session_total());
        if closed {
            self.audit_close(caller, id, protocol).await;
        }
        closed
    }

    /// In a fleet, gives a closed session's place under its caller's cap
    /// back (and, for one handed over to this node, where it lived).
    pub async fn release_place(&self, caller: &Caller, id: &str) {
        let (Some(f), Some(me)) = (&self.fleet, self.node) else {
            return;
        };
        let fp = fingerprint(id);
        let _ = f.close_session(&caller.id, &fp).await;
        if crate::fleet::Node::of_id(id) != Some((me.tag, me.epoch)) {
            let _ = f.clear_at(&caller.id, &fp).await;
        }
    }

    /// What follows every wire's close of a session: its place in the
    /// fleet given back ([`App::release_place`]) and the audit record.
    pub async fn audit_close(&self, caller: &Caller, id: &str, protocol: Option<&'static str>) {
        self.release_place(caller, id).await;
        let mut rec = self.base_record("session_close", caller, &self.sandbox.isolation());
        rec.protocol = protocol;
        rec.session_id = Some(fingerprint(id));
        rec.outcome = "ok".into();
        let _ = self.audit.record(&rec).await;
    }

    /// Whether `caller`'s session `id` belongs to the protocol's record
    /// chains, and so is not reachable through another wire (it answers
    /// there as an unknown session).
    pub fn chained(&self, caller: &Caller, id: &str) -> bool {
        self.chains.get(&caller.id, id).is_some()
    }

    /// Forgets the chains of sessions the library no longer knows.
    pub fn forget_stale_chains(&self) {
        let sb = &self.sandbox;
        self.chains.retain(|caller, id| {
            sb.session_open(caller, id) || sb.session_ended(caller, id).is_some()
        });
    }
}

/// A protocol session's place in its chain: calls answered (or unanswered
/// but recorded) so far, and the last record's digest.
#[derive(Debug, Default)]
pub struct Chain {
    pub calls: u64,
    pub last: String,
}

/// One protocol session's record chain and what it was opened with.
#[derive(Debug)]
pub struct Chained {
    pub caller: String,
    pub fingerprint: String,
    pub software_identity: String,
    /// Held for the whole of a call: calls run one at a time, in arrival
    /// order (tokio's mutex is fair).
    pub chain: tokio::sync::Mutex<Chain>,
}

/// The protocol's sessions, by id: only what a record needs, for as long
/// as the library knows the session (open, or a tombstone). The library
/// keeps the interpreters and the workspace ([`plimsoll::session`]).
#[derive(Debug, Default)]
pub struct Chains {
    map: Mutex<HashMap<String, Arc<Chained>>>,
}

impl Chains {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Chained>>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a session the library just opened.
    pub fn insert(&self, id: String, s: Chained) {
        self.lock().insert(id, Arc::new(s));
    }

    /// `caller`'s session `id`; `None` for an unknown id and for another
    /// caller's alike.
    pub fn get(&self, caller: &str, id: &str) -> Option<Arc<Chained>> {
        self.lock().get(id).filter(|s| s.caller == caller).cloned()
    }

    /// Forgets `id`.
    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Forgets every session `known` no longer vouches for: the table
    /// never outgrows the library's, which is bounded.
    pub fn retain(&self, known: impl Fn(&str, &str) -> bool) {
        self.lock().retain(|id, s| known(&s.caller, id));
    }
}
