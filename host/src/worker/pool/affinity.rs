//! Caller affinity: a worker the pool tracks ([`Pooled`]), its binding to
//! one caller, and the idle queues it waits in.
//!
//! Guarantees: a worker is bound by its caller's first run on it and keeps
//! that caller's share until it is dropped; it is never handed back
//! unbound nor to a second caller. An idle bound worker is taken most
//! recently used first; one past its age or idle time is retired instead
//! of served. After a run, only a clean ending ([`reusable_after`]) lets a
//! worker serve its caller again.

use super::Pool;
use super::PoolConfig;
use super::admission::{AliveGuard, ShareGuard};
use super::process::Worker;
use crate::run::Status;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// A worker the pool tracks, with what the pool knows of it.
pub(super) struct Pooled {
    pub(super) worker: Worker,
    pub(super) id: String,
    pub(super) born: Instant,
    pub(super) last_used: Instant,
    /// Runs it has served.
    pub(super) runs: u32,
    _alive: AliveGuard,
    /// Its caller's share, once bound; a bound worker never loses it.
    pub(super) share: Option<ShareGuard>,
}

impl Pooled {
    pub(super) fn new(worker: Worker, alive: AliveGuard) -> Pooled {
        let now = Instant::now();
        Pooled {
            worker,
            id: new_worker_id(),
            born: now,
            last_used: now,
            runs: 0,
            _alive: alive,
            share: None,
        }
    }

    /// Whether it has outlived its age or its idle time.
    pub(super) fn expired(&self, config: &PoolConfig, now: Instant) -> bool {
        now.duration_since(self.born) >= config.max_age
            || (self.share.is_some() && now.duration_since(self.last_used) >= config.idle)
    }
}

/// 64 random bits, hex: a worker's id.
fn new_worker_id() -> String {
    let mut b = [0u8; 8];
    if getrandom::fill(&mut b).is_err() {
        // The clock and a counter, if the kernel's entropy is unavailable:
        // ids must be unique, not secret.
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        b = (t ^ N.fetch_add(1, Ordering::Relaxed).rotate_left(48)).to_be_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Whether a worker may serve its caller's next run after a run that ended
/// this way: not after a trap, memory or disk exhaustion, a refusal it
/// made itself, or a loss.
pub(super) fn reusable_after(status: Status) -> bool {
    matches!(
        status,
        Status::Ok
            | Status::Error
            | Status::Timeout
            | Status::CpuExhausted
            | Status::OutputTruncated
    )
}

impl Pool {
    /// `caller`'s most recently used idle worker that has not expired
    /// (expired ones found on the way are retired).
    pub(super) fn take_bound(&self, caller: &str) -> Option<Pooled> {
        let now = Instant::now();
        let mut retired = Vec::new();
        let found = {
            let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
            let q = bound.get_mut(caller)?;
            let mut found = None;
            while let Some(p) = q.pop_back() {
                if p.expired(&self.config, now) {
                    retired.push(p);
                } else {
                    found = Some(p);
                    break;
                }
            }
            if q.is_empty() {
                bound.remove(caller);
            }
            found
        };
        drop(retired);
        found
    }

    /// A warm unbound worker, if there is one (and a replacement is
    /// started).
    pub(super) fn take_unbound(pool: &Arc<Pool>) -> Option<Pooled> {
        let p = pool
            .unbound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front()?;
        Pool::refill(pool);
        Some(p)
    }

    /// Puts `caller`'s worker back for its next run.
    pub(super) fn give_back(&self, caller: &str, mut p: Pooled) {
        p.last_used = Instant::now();
        self.bound
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(caller.to_owned())
            .or_default()
            .push_back(p);
    }
}
