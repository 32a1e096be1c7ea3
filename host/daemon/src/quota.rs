//! Quotas: how much each caller may ask of the daemon.
//!
//! * A rate limit per caller (`governor`), answered with 429 and
//!   `Retry-After`.
//! * Runs in flight per caller and across all callers: a request past
//!   either cap is shed at once (429 for the caller's cap, 503 for the
//!   host's) rather than queued, so a busy daemon's memory stays bounded.
//! * A daily allowance of run seconds per caller, kept in the state
//!   directory so that a restart does not reset it.

use crate::callers::Caller;
use governor::{DefaultDirectRateLimiter, Quota};
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Why a request was shed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// The caller's rate limit; try again after this many seconds.
    RateLimited { retry_after_secs: u64 },
    /// The caller already has `max_concurrent` runs in flight.
    CallerConcurrency,
    /// The host already has `PLIMSOLL_MAX_INFLIGHT` runs in flight.
    HostConcurrency,
    /// The caller's run seconds for today are spent.
    CpuAllowance { retry_after_secs: u64 },
    /// The fleet's shared state does not answer and the daemon fails
    /// closed (`PLIMSOLL_SHARED_STATE_FAILURE=closed`).
    SharedStateDown,
}

impl Shed {
    /// The stable error code (and metrics label).
    pub fn code(self) -> &'static str {
        match self {
            Shed::RateLimited { .. } => "rate_limited",
            Shed::CallerConcurrency => "concurrency_limit",
            Shed::HostConcurrency => "busy",
            Shed::CpuAllowance { .. } => "cpu_allowance_exhausted",
            Shed::SharedStateDown => "quota_unavailable",
        }
    }
}

struct CallerQuota {
    rate: DefaultDirectRateLimiter,
    inflight: Arc<Semaphore>,
    /// Serialises opening sessions, so that the cap cannot be raced.
    sessions: tokio::sync::Mutex<()>,
}

/// A run's right to proceed; released when dropped.
pub struct RunPermit {
    /// The caller's place on this node; `None` when the fleet's shared
    /// state holds it as a lease.
    _caller: Option<OwnedSemaphorePermit>,
    _host: OwnedSemaphorePermit,
    _lease: Option<Lease>,
}

/// A run's place under its caller's cap in the fleet's shared state,
/// renewed while it is held, given back when it is dropped (and by itself
/// when its time is up, should this node die first).
pub struct Lease {
    shared: Arc<crate::fleet::Shared>,
    caller: String,
    id: String,
    live: Arc<Mutex<HashMap<String, String>>>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.live
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
        let (shared, caller, id) = (
            self.shared.clone(),
            std::mem::take(&mut self.caller),
            std::mem::take(&mut self.id),
        );
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            h.spawn(async move {
                let _ = shared.settle(&caller, &id, 0).await;
            });
        }
    }
}

/// Every caller's quotas and the host-wide cap.
pub struct Quotas {
    callers: HashMap<String, CallerQuota>,
    host: Arc<Semaphore>,
    max_inflight: usize,
    /// Run seconds used today.
    pub ledger: CpuLedger,
    share: u32,
    /// This node's leases in the fleet's shared state (lease id →
    /// caller), renewed every second while their runs go on.
    leases: Arc<Mutex<HashMap<String, String>>>,
}

impl Quotas {
    /// Quotas for `callers`, with `max_inflight` runs host-wide and the
    /// daily ledger kept in `state_dir`. Each caller's rate, concurrency
    /// and allowance here are divided by `share` (a fleet's size: this
    /// node's own counters serve only while the shared state does not
    /// answer, and then each node gets its part).
    pub fn new<'a>(
        callers: impl Iterator<Item = &'a Arc<Caller>>,
        max_inflight: usize,
        state_dir: &Path,
        share: u32,
    ) -> std::io::Result<Quotas> {
        let share = share.max(1);
        let mut map = HashMap::new();
        for c in callers {
            let per_min =
                NonZeroU32::new((c.rate_per_min / share).max(1)).unwrap_or(NonZeroU32::MIN);
            map.insert(
                c.id.clone(),
                CallerQuota {
                    rate: governor::RateLimiter::direct(Quota::per_minute(per_min)),
                    inflight: Arc::new(Semaphore::new((c.max_concurrent / share).max(1) as usize)),
                    sessions: tokio::sync::Mutex::new(()),
                },
            );
        }
        Ok(Quotas {
            callers: map,
            host: Arc::new(Semaphore::new(max_inflight)),
            max_inflight,
            ledger: CpuLedger::open(state_dir)?,
            share,
            leases: Default::default(),
        })
    }

    /// This node's live leases, by caller (to renew them).
    pub fn leases_by_caller(&self) -> HashMap<String, Vec<String>> {
        let mut out: HashMap<String, Vec<String>> = HashMap::new();
        for (id, caller) in self.leases.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            out.entry(caller.clone()).or_default().push(id.clone());
        }
        out
    }

    /// What this node's own counters divide each caller's limits by.
    pub fn share(&self) -> u32 {
        self.share
    }

    /// Holds `lease`, which the fleet's shared state granted `caller`: this
    /// node renews it every second until it is dropped.
    pub fn hold_lease(
        &self,
        shared: Arc<crate::fleet::Shared>,
        caller: &Caller,
        lease: String,
    ) -> Lease {
        self.leases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(lease.clone(), caller.id.clone());
        Lease {
            shared,
            caller: caller.id.clone(),
            id: lease,
            live: self.leases.clone(),
        }
    }

    /// Admits one run whose caller's place the fleet's shared state leased
    /// (`lease` in `shared`): the host's cap only.
    pub fn admit_leased(
        &self,
        shared: Arc<crate::fleet::Shared>,
        caller: &Caller,
        lease: String,
    ) -> Result<RunPermit, Shed> {
        let l = self.hold_lease(shared, caller, lease);
        self.admit_held(l)
    }

    /// Admits one run with a lease already held ([`Quotas::hold_lease`]):
    /// the host's cap only (the lease is given back if that refuses).
    pub fn admit_held(&self, l: Lease) -> Result<RunPermit, Shed> {
        let host = self
            .host
            .clone()
            .try_acquire_owned()
            .map_err(|_| Shed::HostConcurrency)?;
        Ok(RunPermit {
            _caller: None,
            _host: host,
            _lease: Some(l),
        })
    }

    /// Spends one request of `caller`'s rate.
    pub fn check_rate(&self, caller: &Caller) -> Result<(), Shed> {
        let Some(q) = self.callers.get(&caller.id) else {
            return Err(Shed::CallerConcurrency);
        };
        match q.rate.check() {
            Ok(()) => Ok(()),
            Err(not_until) => {
                let wait = not_until.wait_time_from(governor::clock::Clock::now(
                    &governor::clock::DefaultClock::default(),
                ));
                Err(Shed::RateLimited {
                    retry_after_secs: wait.as_secs().max(1),
                })
            }
        }
    }

    /// Admits one run of `caller`: its daily allowance, its concurrency
    /// cap, then the host's.
    pub fn admit(&self, caller: &Caller) -> Result<RunPermit, Shed> {
        if let Some(allowance) = caller.cpu_seconds_per_day
            && self.ledger.used_ms(&caller.id)
                >= allowance.saturating_mul(1000) / u64::from(self.share)
        {
            return Err(Shed::CpuAllowance {
                retry_after_secs: self.ledger.secs_until_reset(),
            });
        }
        let q = self
            .callers
            .get(&caller.id)
            .ok_or(Shed::CallerConcurrency)?;
        let own = q
            .inflight
            .clone()
            .try_acquire_owned()
            .map_err(|_| Shed::CallerConcurrency)?;
        let host = self
            .host
            .clone()
            .try_acquire_owned()
            .map_err(|_| Shed::HostConcurrency)?;
        Ok(RunPermit {
            _caller: Some(own),
            _host: host,
            _lease: None,
        })
    }

    /// `caller`'s runs in flight on this node (from its own counters).
    pub fn caller_inflight(&self, caller: &Caller) -> usize {
        let cap = (caller.max_concurrent / self.share).max(1) as usize;
        self.callers
            .get(&caller.id)
            .map_or(0, |q| cap.saturating_sub(q.inflight.available_permits()))
    }

    /// Runs in flight host-wide.
    pub fn inflight(&self) -> usize {
        self.max_inflight - self.host.available_permits()
    }

    /// Holds `caller`'s session-opening lock.
    pub async fn session_lock(&self, caller: &Caller) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        Some(self.callers.get(&caller.id)?.sessions.lock().await)
    }

    /// Waits until no run is in flight, or `deadline` passes. Returns
    /// whether all runs finished.
    pub async fn wait_idle(&self, deadline: Duration) -> bool {
        let n = u32::try_from(self.max_inflight).unwrap_or(u32::MAX);
        tokio::time::timeout(deadline, self.host.acquire_many(n))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

fn today() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() / 86_400)
        .unwrap_or(0)
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[derive(serde::Serialize, serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct LedgerFile {
    /// Days since the Unix epoch (UTC).
    day: u64,
    /// Milliseconds of runs, by caller.
    used_ms: HashMap<String, u64>,
}

/// Run milliseconds per caller for the current UTC day, persisted.
///
/// Charges are kept in memory and written to `quota-cpu.json` in the state
/// directory (atomically: a temporary file renamed over it) by
/// [`CpuLedger::flush`], which the daemon calls every second and at
/// shutdown. A crash therefore loses at most the last second's charges.
pub struct CpuLedger {
    path: PathBuf,
    inner: Mutex<(LedgerFile, bool)>,
}

impl CpuLedger {
    /// Opens the ledger in `state_dir`, keeping today's counts from an
    /// earlier run of the daemon.
    pub fn open(state_dir: &Path) -> std::io::Result<CpuLedger> {
        std::fs::create_dir_all(state_dir)?;
        let path = state_dir.join("quota-cpu.json");
        let mut file = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice::<LedgerFile>(&bytes)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => LedgerFile::default(),
            Err(e) => return Err(e),
        };
        // Only a later day starts a new ledger; see `lock`.
        if file.day < today() {
            file = LedgerFile {
                day: today(),
                used_ms: HashMap::new(),
            };
        }
        Ok(CpuLedger {
            path,
            inner: Mutex::new((file, false)),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (LedgerFile, bool)> {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        // The day only moves forward. A wall clock stepped back (an NTP
        // correction, a mistaken `date -s`) keeps charging the ledger of the
        // later day instead of handing every caller a fresh allowance; a
        // step forward past midnight starts the new day early, as the
        // allowance is defined on the host's UTC date.
        if g.0.day < today() {
            g.0 = LedgerFile {
                day: today(),
                used_ms: HashMap::new(),
            };
            g.1 = true;
        }
        g
    }

    /// Seconds until this ledger's day ends and allowances reset: the next
    /// UTC midnight, or later if the clock was stepped back behind the
    /// ledger's day. At least 1.
    pub fn secs_until_reset(&self) -> u64 {
        let day = self.lock().0.day;
        day.saturating_add(1)
            .saturating_mul(86_400)
            .saturating_sub(now_secs())
            .max(1)
    }

    /// Milliseconds `caller` used today.
    pub fn used_ms(&self, caller: &str) -> u64 {
        self.lock().0.used_ms.get(caller).copied().unwrap_or(0)
    }

    /// Charges `ms` to `caller`.
    pub fn charge(&self, caller: &str, ms: u64) {
        let mut g = self.lock();
        let e = g.0.used_ms.entry(caller.to_owned()).or_insert(0);
        *e = e.saturating_add(ms);
        g.1 = true;
    }

    /// Writes the counts if they changed since the last flush.
    pub fn flush(&self) -> std::io::Result<()> {
        let bytes = {
            let mut g = self.lock();
            if !g.1 {
                return Ok(());
            }
            g.1 = false;
            serde_json::to_vec(&g.0).map_err(std::io::Error::other)?
        };
        let tmp = self.path.with_extension("json.tmp");
        {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_data()?;
        }
        std::fs::rename(&tmp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_survives_a_reopen() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let l = CpuLedger::open(dir).expect("open");
        l.charge("a", 1500);
        l.charge("a", 500);
        l.flush().expect("flush");
        let l2 = CpuLedger::open(dir).expect("reopen");
        assert_eq!(l2.used_ms("a"), 2000);
        assert_eq!(l2.used_ms("b"), 0);
    }

    /// Writes a ledger file for `day` in which caller `a` used 7 s.
    fn ledger_file(dir: &Path, day: u64) {
        let file = LedgerFile {
            day,
            used_ms: HashMap::from([("a".to_string(), 7_000)]),
        };
        std::fs::write(
            dir.join("quota-cpu.json"),
            serde_json::to_vec(&file).expect("json"),
        )
        .expect("write");
    }

    #[test]
    fn a_ledger_from_a_later_day_is_kept_not_reset() {
        let tmp = tempfile::tempdir().expect("tempdir");
        ledger_file(tmp.path(), today() + 2);
        let l = CpuLedger::open(tmp.path()).expect("open");
        assert_eq!(
            l.used_ms("a"),
            7_000,
            "a clock stepped back reset the ledger"
        );
        assert!(l.secs_until_reset() > 2 * 86_400);
        ledger_file(tmp.path(), today() - 1);
        let l = CpuLedger::open(tmp.path()).expect("open");
        assert_eq!(l.used_ms("a"), 0, "yesterday's charges carried over");
        assert!(l.secs_until_reset() <= 86_400);
    }
}
