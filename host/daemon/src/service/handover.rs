//! Sessions that move when their node drains (docs/operations.md, "A
//! fleet"): with snapshots and the fleet's key (`PLIMSOLL_FLEET_KEY_FILE`),
//! a draining node snapshots each open session, seals it with what it had
//! left and its place in its chain of records, and leaves it in the shared
//! state; the next call for it, wherever the balancer sends it, takes it
//! (once), opens it under the same id with the same state and is served —
//! the caller sees no error.
//!
//! Guarantees: a handed-over session opens only for its own caller (the
//! seal's associated data names the caller and the session's fingerprint,
//! and the key it is left under names the caller); it opens under that
//! caller's caps like any open, at this node's tier, checked against the
//! floor; a call waits for a session its node is still handing over at
//! most [`WAIT`], and at most the caller's `max_concurrent` of its calls
//! wait at once on a node; nothing here logs an id, and the audit names
//! sessions by fingerprint only.

use super::sessions::{Chain, Chained};
use super::{App, fingerprint};
use crate::callers::Caller;
use crate::error::ApiError;
use crate::fleet::handover::{ChainState, Header};
use crate::fleet::{Lost, Node};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a call waits for a session its node is still handing over.
pub const WAIT: Duration = Duration::from_secs(15);
/// How often it looks.
const POLL: Duration = Duration::from_millis(100);
/// The largest session handed over (sealed); a larger one is lost with its
/// node, as without a handover.
pub const MAX_SEALED: usize = 64 << 20;

/// What a call for a session not open here found.
#[derive(Debug, PartialEq, Eq)]
pub enum Adopted {
    /// It was handed over, and is open here now.
    Here,
    /// Its node could not hand it over: lost, drained.
    Unmovable,
    /// It lives on another node now (a call for it reached this one).
    Elsewhere,
    /// Nothing was handed over (the usual answers follow).
    Nothing,
}

/// Counts a caller's calls waiting for handovers on this node.
#[derive(Debug, Default)]
pub struct Waiters(std::sync::Mutex<std::collections::HashMap<String, u32>>);

struct Waiting<'a> {
    of: &'a Waiters,
    caller: String,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut m = self.of.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.caller);
            }
        }
    }
}

impl Waiters {
    fn enter(&self, caller: &Caller) -> Option<Waiting<'_>> {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(caller.id.clone()).or_insert(0);
        if *n >= caller.max_concurrent.max(1) {
            return None;
        }
        *n += 1;
        Some(Waiting {
            of: self,
            caller: caller.id.clone(),
        })
    }
}

impl App {
    /// Whether this node hands its sessions over when it drains: a fleet
    /// with its key, and snapshots.
    pub fn hands_over(&self) -> bool {
        self.fleet.is_some() && self.fleet_key.is_some() && self.snapshots.is_some()
    }

    /// For a call on `caller`'s session `id` that is not open here: takes
    /// it if its draining node handed it over (waiting for one still being
    /// handed over), and opens it here.
    pub async fn adopt_if_handed_over(
        &self,
        caller: &Caller,
        id: &str,
    ) -> Result<Adopted, ApiError> {
        let (Some(f), Some(key), Some(me)) = (&self.fleet, &self.fleet_key, self.node) else {
            return Ok(Adopted::Nothing);
        };
        let Some((tag, epoch)) = Node::of_id(id) else {
            return Ok(Adopted::Nothing);
        };
        if tag == me.tag && epoch == me.epoch {
            return Ok(Adopted::Nothing);
        }
        let fp = fingerprint(id);
        let Some(_waiting) = self.handover_waiters.enter(caller) else {
            return Err(self.shed(crate::quota::Shed::CallerConcurrency));
        };
        let until = Instant::now() + WAIT;
        loop {
            match f.take_moved(&caller.id, &fp, MAX_SEALED).await {
                Ok(Some(sealed)) if sealed.is_empty() => return Ok(Adopted::Unmovable),
                Ok(Some(sealed)) => return self.adopt(caller, id, &fp, key, sealed).await,
                Ok(None) => {}
                Err(_) => return Ok(Adopted::Nothing),
            }
            match f.at(&caller.id, &fp).await {
                Ok(Some(t)) if t == me.tag && self.sandbox.session_open(&caller.id, id) => {
                    return Ok(Adopted::Here);
                }
                Ok(Some(t)) if t != me.tag && f.live_epoch(t).await.ok().flatten().is_some() => {
                    return Ok(Adopted::Elsewhere);
                }
                _ => {}
            }
            if !f.migrating(tag, epoch).await.unwrap_or(false) || Instant::now() >= until {
                return Ok(Adopted::Nothing);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    async fn adopt(
        &self,
        caller: &Caller,
        id: &str,
        fp: &str,
        key: &crate::fleet::handover::Key,
        sealed: Vec<u8>,
    ) -> Result<Adopted, ApiError> {
        let started = Instant::now();
        let (header, archive) = match key.open(&caller.id, fp, sealed) {
            Ok(v) => v,
            Err(e) => {
                self.audit_handover(
                    "session_adopt",
                    caller,
                    fp,
                    Err("snapshot_invalid"),
                    started,
                )
                .await;
                return Err(ApiError::new(plimsoll::snapshot::INVALID, e.to_string()));
            }
        };
        // Never to a weaker boundary than the one it ran behind.
        let here = self.sandbox.isolation().tier;
        match header.tier.parse::<plimsoll::Tier>() {
            Ok(t) if here >= t => {}
            _ => {
                self.audit_handover(
                    "session_adopt",
                    caller,
                    fp,
                    Err("insufficient_isolation"),
                    started,
                )
                .await;
                return Ok(Adopted::Unmovable);
            }
        }
        let terms = plimsoll::sandbox::snapshots::Terms {
            lifetime_left: Duration::from_millis(header.lifetime_left_ms),
            idle_timeout: Duration::from_millis(header.idle_timeout_ms),
        };
        let mut req = plimsoll::RunRequest::default();
        self.bind_to_caller(caller, &mut req)?;
        let opened = self
            .sandbox
            .adopt_session(&caller.id, id, archive, terms, &req)
            .await;
        let info = match opened {
            Ok(info) => info,
            Err(e) => {
                self.audit_handover("session_adopt", caller, fp, Err(&e.code), started)
                    .await;
                return Ok(Adopted::Unmovable);
            }
        };
        if let Some(c) = header.chain {
            self.chains.insert(
                id.to_owned(),
                Chained {
                    caller: caller.id.clone(),
                    fingerprint: fp.to_owned(),
                    software_identity: c.software_identity,
                    chain: tokio::sync::Mutex::new(Chain {
                        calls: c.calls,
                        last: c.last,
                    }),
                },
            );
        }
        if let Some(f) = &self.fleet {
            let _ = f.open_session(&caller.id, u32::MAX, fp).await;
            let _ = f.set_at(&caller.id, fp, info.lifetime_ms).await;
        }
        self.metrics.set_sessions(self.sandbox.session_total());
        self.audit_handover("session_adopt", caller, fp, Ok(()), started)
            .await;
        Ok(Adopted::Here)
    }

    async fn audit_handover(
        &self,
        event: &'static str,
        caller: &Caller,
        fp: &str,
        outcome: Result<(), &str>,
        started: Instant,
    ) {
        let mut rec = self.base_record(event, caller, &self.sandbox.isolation());
        rec.session_id = Some(fp.to_owned());
        rec.handling_ms = started.elapsed().as_secs_f64() * 1e3;
        match outcome {
            Ok(()) => rec.outcome = "ok".into(),
            Err(code) => {
                rec.outcome = "refused".into();
                rec.error_code = Some(code.to_owned());
            }
        }
        let _ = self.audit.record(&rec).await;
    }

    /// Hands every open session over (a draining node, [`App::hands_over`]):
    /// each in its turn — after the call in progress on it — snapshotted,
    /// sealed and left in the shared state, then ended here. One that
    /// cannot be is marked so, and ended: calls for it are told it was
    /// lost with its node. Returns how many were handed over.
    pub async fn hand_over_sessions(&self) -> usize {
        let (Some(f), Some(key)) = (&self.fleet, &self.fleet_key) else {
            return 0;
        };
        let mut moved = 0;
        for (caller_id, id) in self.sandbox.open_sessions() {
            let Some(caller) = self.callers.iter().find(|c| c.id == caller_id).cloned() else {
                continue;
            };
            let started = Instant::now();
            let fp = fingerprint(&id);
            let chained = self.chains.get(&caller_id, &id);
            // A protocol session's call in progress finishes first; none
            // starts after (its record would not follow).
            let guard = match &chained {
                Some(c) => Some(c.chain.lock().await),
                None => None,
            };
            let sealed = self
                .seal_session(&caller, &id, &fp, key, &chained, &guard)
                .await;
            let put = match &sealed {
                Ok(s) => f.put_moved(&caller_id, &fp, s).await,
                Err(_) => f.put_moved(&caller_id, &fp, &[]).await,
            };
            self.sandbox.hand_over_session(&caller_id, &id);
            drop(guard);
            let outcome = match (&sealed, &put) {
                (Ok(_), Ok(())) => {
                    moved += 1;
                    Ok(())
                }
                (Err(code), _) => Err(code.as_str()),
                (_, Err(_)) => Err("quota_unavailable"),
            };
            if outcome.is_err() {
                let _ = f.close_session(&caller_id, &fp).await;
            }
            self.audit_handover("session_handover", &caller, &fp, outcome, started)
                .await;
        }
        self.metrics.set_sessions(self.sandbox.session_total());
        moved
    }

    async fn seal_session(
        &self,
        caller: &Arc<Caller>,
        id: &str,
        fp: &str,
        key: &crate::fleet::handover::Key,
        chained: &Option<Arc<Chained>>,
        guard: &Option<tokio::sync::MutexGuard<'_, Chain>>,
    ) -> Result<Vec<u8>, String> {
        let terms = self
            .sandbox
            .session_terms(&caller.id, id)
            .ok_or_else(|| "unknown_session".to_owned())?;
        let snap = self
            .sandbox
            .snapshot_session(&caller.id, id)
            .await
            .map_err(|e| e.code)?;
        let chain = match (chained, guard) {
            (Some(c), Some(g)) => Some(ChainState {
                calls: g.calls,
                last: g.last.clone(),
                software_identity: c.software_identity.clone(),
            }),
            _ => None,
        };
        let header = Header {
            lifetime_left_ms: u64::try_from(terms.lifetime_left.as_millis()).unwrap_or(u64::MAX),
            idle_timeout_ms: u64::try_from(terms.idle_timeout.as_millis()).unwrap_or(u64::MAX),
            chain,
            tier: snap.taken_at.clone(),
        };
        let sealed = key
            .seal(&caller.id, fp, &header, &snap.archive.bytes)
            .map_err(|_| plimsoll::snapshot::UNAVAILABLE.to_owned())?;
        if sealed.len() > MAX_SEALED {
            return Err(plimsoll::snapshot::TOO_LARGE.to_owned());
        }
        Ok(sealed)
    }

    /// The answer for a handed-over session that could not be moved.
    pub fn unmovable(&self) -> ApiError {
        self.metrics.session_lost(Lost::NodeDrained.as_str());
        let mut e = ApiError::new(
            "session_lost",
            "the session's node drained and could not hand it over: the session ended with it",
        );
        e.reason = Some(Lost::NodeDrained.as_str().to_owned());
        e
    }
}
