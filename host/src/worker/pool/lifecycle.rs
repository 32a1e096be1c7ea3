//! A worker's life in the pool: started (the smoke test runs again in
//! every new worker), kept warm, and retired.
//!
//! Guarantees: a worker whose smoke-test checks do not all pass, or whose
//! kernel is not the one the pool was verified with, is never offered;
//! a start counts against `max` from the moment it begins; the warm set is
//! refilled in the background up to `warm`; once a second, for as long as
//! the pool exists (the sweeper holds it weakly), idle workers past their
//! age or idle time are retired, outside every lock.

use super::admission::AliveGuard;
use super::affinity::Pooled;
use super::process::Worker;
use super::{Pool, WorkerError};
use crate::run::ErrorInfo;
use crate::worker::observe::judge;
use crate::worker::protocol::{GuestImage, ImageKind};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

impl Pool {
    /// Starts a worker and runs the smoke test in it: a worker whose
    /// checks do not all pass, or whose kernel is not the one the pool was
    /// verified with, is never offered.
    async fn launch(&self) -> Result<Worker, WorkerError> {
        self.launch_with(&[]).await
    }

    /// [`Pool::launch`], for a worker that also carries `extra`'s core
    /// images.
    async fn launch_with(&self, extra: &[GuestImage]) -> Result<Worker, WorkerError> {
        let mut images = self.guest_images();
        let mut launch = self.launch.clone();
        for i in extra {
            if i.kind == ImageKind::Core && !images.contains(i) {
                if let Some(name) = i.path.strip_prefix("/guests/") {
                    launch.bundles.push(name.to_owned());
                }
                images.push(i.clone());
            }
        }
        let mut w = Worker::spawn(&self.wrapper, &launch, self.engine, images).await?;
        let o = w.observe().await?;
        let mut failed: Vec<String> = judge(&o, &self.expectations)
            .into_iter()
            .chain([crate::worker::observe::judge_cpu(&o, self.engine.cpu)])
            .filter(|c| !c.passed)
            .map(|c| c.name)
            .collect();
        if o.kernel != self.kernel {
            failed.push("kernel_changed".into());
        }
        if !failed.is_empty() {
            return Err(WorkerError::Failed(format!(
                "the smoke test failed in a new worker ({}); it was retired",
                failed.join(", ")
            )));
        }
        w.boot_id = o.boot_id;
        Ok(w)
    }

    /// Retires idle workers past their idle time or age, every second,
    /// for as long as the pool exists, and refills the warm set.
    pub(super) fn start_sweeper(pool: &Arc<Pool>) {
        let weak = Arc::downgrade(pool);
        pool.handle.spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(pool) = weak.upgrade() else { return };
                let retired = pool.sweep();
                let any = !retired.is_empty();
                // Killed outside every lock; their places free up here.
                drop(retired);
                // Warm workers that reached their age are replaced, so the
                // warm set does not drain away while no run comes.
                if any {
                    Pool::refill(&pool);
                }
                drop(pool);
            }
        });
    }

    /// Takes the expired workers out of the pool (the caller drops them).
    fn sweep(&self) -> Vec<Pooled> {
        let now = Instant::now();
        let mut out = Vec::new();
        let mut bound = self.bound.lock().unwrap_or_else(|p| p.into_inner());
        for q in bound.values_mut() {
            let (old, keep): (Vec<Pooled>, Vec<Pooled>) =
                q.drain(..).partition(|p| p.expired(&self.config, now));
            out.extend(old);
            q.extend(keep);
        }
        bound.retain(|_, q| !q.is_empty());
        drop(bound);
        let mut unbound = self.unbound.lock().unwrap_or_else(|p| p.into_inner());
        let (old, keep): (Vec<Pooled>, Vec<Pooled>) = unbound
            .drain(..)
            .partition(|p| p.expired(&self.config, now));
        unbound.extend(keep);
        drop(unbound);
        out.extend(old);
        out
    }

    /// Starts workers in the background until `warm` are idle or
    /// starting.
    pub(super) fn refill(pool: &Arc<Pool>) {
        loop {
            let idle = pool.idle();
            let starting = pool.starting.load(Ordering::Acquire);
            if idle + starting >= pool.config.warm {
                return;
            }
            let alive = pool.counts.alive.load(Ordering::Acquire);
            if alive >= pool.config.max {
                return;
            }
            if pool
                .counts
                .alive
                .compare_exchange(alive, alive + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            let guard = AliveGuard(pool.counts.clone());
            pool.starting.fetch_add(1, Ordering::AcqRel);
            let p = pool.clone();
            pool.handle.spawn(async move {
                let started = p.launch().await;
                p.starting.fetch_sub(1, Ordering::AcqRel);
                match started {
                    Ok(w) if !p.can_run_every_image(&w) => {
                        // An image was added while it booted: retire it and
                        // start one that has every image.
                        drop(w);
                        drop(guard);
                        Pool::refill(&p);
                    }
                    Ok(w) => p
                        .unbound
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push_back(Pooled::new(w, guard)),
                    Err(e) => {
                        // The pool's own target, as before this module was
                        // split out of it (filters and log lines name it).
                        tracing::warn!(
                            target: "plimsoll::worker::pool",
                            "a {} worker failed to start: {e}",
                            p.wrapper.name()
                        );
                        drop(guard);
                    }
                }
            });
        }
    }

    /// Starts a worker now (smoke test included), within the cap on live
    /// workers.
    pub(super) async fn start_now(&self) -> Result<Pooled, ErrorInfo> {
        self.start_now_with(&[]).await
    }

    /// [`Pool::start_now`], for a worker that also carries `extra`'s core
    /// images.
    pub(super) async fn start_now_with(&self, extra: &[GuestImage]) -> Result<Pooled, ErrorInfo> {
        let alive = self.counts.alive.fetch_add(1, Ordering::AcqRel);
        let guard = AliveGuard(self.counts.clone());
        if alive >= self.config.max {
            return Err(self.exhausted(format!(
                "all {} {} workers are busy; try again shortly",
                self.config.max,
                self.wrapper.name()
            )));
        }
        let w = self.launch_with(extra).await.map_err(|e| ErrorInfo {
            code: "worker_unavailable".into(),
            message: format!("could not start a {} worker: {e}", self.wrapper.name()),
        })?;
        Ok(Pooled::new(w, guard))
    }
}
