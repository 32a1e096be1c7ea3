//! Admission: who is given a worker. Two caps hold at every moment —
//! `max` workers alive in all (warm, bound, busy or starting) and
//! `max_per_caller` held by one caller — counted by guards that release
//! their place when the worker they count is dropped, whichever way it
//! ends.
//!
//! A caller is served, in order: its own idle worker, a warm one bound to
//! it now, a worker still starting (waited for at the cap), or a new one;
//! at the cap the least recently used idle worker of another caller is
//! retired to make room, so idle workers are never a reason to refuse.
//! Past both, the run is refused with `worker_pool_exhausted`.

use super::{Pool, Pooled, START_TIMEOUT};
use crate::run::ErrorInfo;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The pool's counts, apart from the pool itself so that a worker's guards
/// never keep the pool (and with it every other worker) alive.
#[derive(Default)]
pub(super) struct Counts {
    /// Workers alive: idle, bound, busy or starting.
    pub(super) alive: AtomicUsize,
    /// Workers bound to each caller, busy or idle.
    pub(super) per_caller: Mutex<HashMap<String, usize>>,
}

impl Counts {
    /// Reserves one of `caller`'s `cap` workers.
    pub(super) fn reserve(self: &Arc<Self>, caller: &str, cap: usize) -> Option<ShareGuard> {
        let mut m = self.per_caller.lock().unwrap_or_else(|p| p.into_inner());
        let n = m.entry(caller.to_owned()).or_insert(0);
        if *n >= cap {
            return None;
        }
        *n += 1;
        Some(ShareGuard {
            counts: self.clone(),
            caller: caller.to_owned(),
        })
    }

    pub(super) fn held_by(&self, caller: &str) -> usize {
        self.per_caller
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(caller)
            .copied()
            .unwrap_or(0)
    }
}

/// Counts a live worker until dropped.
pub(super) struct AliveGuard(pub(super) Arc<Counts>);
impl Drop for AliveGuard {
    fn drop(&mut self) {
        self.0.alive.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Counts a worker in its caller's share until dropped.
pub(super) struct ShareGuard {
    counts: Arc<Counts>,
    caller: String,
}
impl Drop for ShareGuard {
    fn drop(&mut self) {
        let mut m = self
            .counts
            .per_caller
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(&self.caller);
            }
        }
    }
}

impl Pool {
    /// Retires the least recently used idle worker bound to a caller other
    /// than `caller`, to make room. Returns whether there was one.
    fn evict_for(&self, caller: &str) -> bool {
        let victim = {
            let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
            let oldest = bound
                .iter()
                .filter(|(c, _)| c.as_str() != caller)
                .filter_map(|(c, q)| q.front().map(|p| (c.clone(), p.last_used)))
                .min_by_key(|(_, t)| *t)
                .map(|(c, _)| c);
            let Some(c) = oldest else { return false };
            let victim = bound.get_mut(&c).and_then(VecDeque::pop_front);
            if bound.get(&c).is_some_and(VecDeque::is_empty) {
                bound.remove(&c);
            }
            victim
        };
        victim.is_some()
    }

    pub(super) fn exhausted(&self, message: String) -> ErrorInfo {
        ErrorInfo {
            code: "worker_pool_exhausted".into(),
            message,
        }
    }

    /// A worker bound to `caller`: its own idle one, else a warm one bound
    /// now, else a new one, within the caps.
    pub(super) async fn take(pool: &Arc<Pool>, caller: &str) -> Result<Pooled, ErrorInfo> {
        if let Some(p) = pool.take_bound(caller) {
            return Ok(p);
        }
        let Some(share) = pool.counts.reserve(caller, pool.config.max_per_caller) else {
            return Err(pool.exhausted(format!(
                "this caller already holds its share of {} {} workers (of {} in all); try again shortly",
                pool.config.max_per_caller,
                pool.wrapper.name(),
                pool.config.max
            )));
        };
        if let Some(mut p) = Pool::take_unbound(pool) {
            p.share = Some(share);
            return Ok(p);
        }
        // None warm. If one is starting and the cap is reached, wait for
        // it rather than refuse (it is milliseconds away).
        let waited = Instant::now();
        while pool.alive() >= pool.config.max
            && pool.starting.load(Ordering::Acquire) > 0
            && waited.elapsed() < START_TIMEOUT
        {
            tokio::time::sleep(Duration::from_millis(2)).await;
            if let Some(mut p) = Pool::take_unbound(pool) {
                p.share = Some(share);
                return Ok(p);
            }
        }
        // At the cap, another caller's idle worker makes room: idle
        // workers are never a reason to refuse.
        if pool.alive() >= pool.config.max {
            pool.evict_for(caller);
        }
        let mut p = pool.start_now().await?;
        Pool::refill(pool);
        p.share = Some(share);
        Ok(p)
    }
}
