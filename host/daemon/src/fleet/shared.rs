//! The state a fleet's nodes share, in Redis (or Valkey):
//! `PLIMSOLL_SHARED_STATE_URL=redis://…`.
//!
//! Per caller: the request rate (GCRA), runs in flight as leases that
//! expire by themselves (a node killed mid-run frees its slots within the
//! lease time), the daily allowance of run time, and the open sessions (by
//! fingerprint, never by id). Per fleet: the node registry, `tag → epoch`,
//! renewed every second and gone 3 s after its node stops renewing it, and
//! a tombstone for 10 minutes after a node drains. Each check is one
//! atomic script run on the server's clock (`TIME`), so every node agrees
//! on "now" and "today"; every key names its caller inside `{…}` so a
//! Redis Cluster keeps a caller's keys together.
//!
//! The registry and the sessions handed over between nodes are in
//! [`super::registry`].
//!
//! What Redis sees: caller ids, session fingerprints, node tags and
//! epochs, counts and times — never code, paths, bodies or credentials.
//!
//! When Redis does not answer (each call is bounded by [`CALL_TIMEOUT`]),
//! `PLIMSOLL_SHARED_STATE_FAILURE` decides: `local` (the default) serves
//! under each caller's limits divided by the fleet's size, from this
//! node's own counters; `closed` refuses, typed (`quota_unavailable`).
//! [`Shared::up`] says which, and `plimsoll_shared_state_up` shows it.
//! Redis counts as down when it refuses or drops the connection, or when
//! the node's heartbeat (every second) gets no answer in time; while it is
//! down no check waits for it, and the first heartbeat it answers brings
//! the fleet's counters back. A check that merely times out while Redis
//! counts as up is refused with `quota_unavailable` (the lease it may have
//! taken is given back): serving it from this node's counters could run
//! more than the caller's cap fleet-wide.

use super::Node;
use super::scripts::*;
use redis::aio::ConnectionManager;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The longest one call to Redis may take before it counts as down.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(300);
/// How long a node's registry entry lives without renewal.
pub const REGISTRY_TTL_MS: u64 = 3_000;
/// How long a run's lease lives without renewal (its node renews it every
/// second while the run goes on): a node killed mid-run frees its
/// caller's slot by then.
pub const LEASE_TTL_MS: u64 = 10_000;
/// How long a session's place under its caller's cap lives without
/// renewal (renewed every second while it is open).
pub const SESSION_TTL_MS: u64 = 15_000;
/// How long a drained node's tombstone lives, and a handed-over session
/// waits to be picked up.
pub const DRAINED_TTL_SECS: u64 = 600;
/// The longest one transfer of a handed-over session may take.
pub const BULK_TIMEOUT: Duration = Duration::from_secs(10);

/// What to do while Redis does not answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureMode {
    /// Serve under the limits divided by the fleet size.
    Local,
    /// Refuse (`quota_unavailable`).
    Closed,
}

impl std::str::FromStr for FailureMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "" | "local" => Ok(FailureMode::Local),
            "closed" => Ok(FailureMode::Closed),
            _ => Err("expected local or closed".into()),
        }
    }
}

/// What [`Shared::rate_and_admit`] decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateAdmit {
    Leased,
    RateLimited { retry_after_secs: u64 },
    AtCap,
    AllowanceSpent { retry_after_secs: u64 },
}

/// The shared state, and whether Redis answers.
pub struct Shared {
    pub(super) conn: ConnectionManager,
    /// A second connection for handed-over sessions (megabytes), so that
    /// they never hold up the quota checks behind them.
    pub(super) bulk: ConnectionManager,
    /// A third for what happens after a run's answer (its lease given
    /// back, its time charged), so that it never queues ahead of the next
    /// run's checks.
    tail: ConnectionManager,
    pub(super) node: Node,
    /// How many nodes the limits are divided among while Redis is down.
    pub fleet_size: u32,
    pub failure: FailureMode,
    up: Arc<AtomicBool>,
    rate: redis::Script,
    admit: redis::Script,
    rate_admit: redis::Script,
    settle: redis::Script,
    session_open: redis::Script,
    session_renew: redis::Script,
    usage: redis::Script,
}

/// Why a call to Redis failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Down {
    /// Redis refused or dropped the connection, or answered with an
    /// error: it counts as down until the next heartbeat reaches it.
    #[error("the shared state cannot be reached")]
    Unreachable,
    /// No answer within [`CALL_TIMEOUT`]: the call may or may not have
    /// taken effect. A check that fails so is refused (never served from
    /// this node's counters on top of what the fleet may have granted);
    /// only the heartbeat's own timeout marks Redis down.
    #[error("the shared state did not answer in time")]
    Slow,
}

pub(super) fn key(caller: &str, what: &str) -> String {
    // The caller id is the callers file's, checked there; braces make a
    // Redis Cluster keep one caller's keys in one slot.
    format!("pl:{{{caller}}}:{what}")
}

impl Shared {
    /// Connects to `url` (a `redis://` or `rediss://` URL; its password is
    /// never logged). A `rediss://` URL is TLS (rustls), verified against
    /// `roots` (PEM, `PLIMSOLL_SHARED_STATE_CA_FILE`) when given, else the
    /// system's trust store. Fails at start if Redis cannot be reached at
    /// all, or its certificate is not trusted.
    pub async fn connect(
        url: &str,
        roots: Option<Vec<u8>>,
        node: Node,
        fleet_size: u32,
        failure: FailureMode,
    ) -> Result<Shared, String> {
        let bad_url =
            |_| "PLIMSOLL_SHARED_STATE_URL is not a valid redis:// or rediss:// URL".to_owned();
        let client = match roots {
            None => redis::Client::open(url).map_err(bad_url)?,
            Some(_) if !url.starts_with("rediss://") => {
                return Err(
                    "PLIMSOLL_SHARED_STATE_CA_FILE is set but PLIMSOLL_SHARED_STATE_URL is not a rediss:// (TLS) URL"
                        .to_owned(),
                );
            }
            Some(pem) => redis::Client::build_with_tls(
                url,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem),
                },
            )
            .map_err(|_| {
                "PLIMSOLL_SHARED_STATE_URL or PLIMSOLL_SHARED_STATE_CA_FILE is not valid (a rediss:// URL, PEM certificates)"
                    .to_owned()
            })?,
        };
        let manager = |timeout: Duration| {
            let config = redis::aio::ConnectionManagerConfig::new()
                .set_connection_timeout(Some(Duration::from_secs(2)))
                .set_response_timeout(Some(timeout));
            let client = client.clone();
            async move {
                tokio::time::timeout(
                    Duration::from_secs(5),
                    ConnectionManager::new_with_config(client, config),
                )
                .await
                .map_err(|_| "the shared state (Redis) did not answer at start".to_owned())?
                .map_err(|e| {
                    // The kind only: the error's text may hold the URL.
                    format!(
                        "the shared state (Redis) refused the connection at start ({:?})",
                        e.kind()
                    )
                })
            }
        };
        let conn = manager(CALL_TIMEOUT).await?;
        let bulk = manager(BULK_TIMEOUT).await?;
        let tail = manager(CALL_TIMEOUT).await?;
        Ok(Shared {
            conn,
            bulk,
            tail,
            node,
            fleet_size: fleet_size.max(1),
            failure,
            up: Arc::new(AtomicBool::new(true)),
            rate: redis::Script::new(RATE),
            admit: redis::Script::new(ADMIT),
            rate_admit: redis::Script::new(RATE_ADMIT),
            settle: redis::Script::new(SETTLE),
            session_open: redis::Script::new(SESSION_OPEN),
            session_renew: redis::Script::new(SESSION_RENEW),
            usage: redis::Script::new(USAGE),
        })
    }

    /// This node.
    pub fn node(&self) -> Node {
        self.node
    }

    /// Whether Redis answered the last call.
    pub fn up(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }

    pub(super) async fn run<T: redis::FromRedisValue>(
        &self,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, Down> {
        self.run_as(false, f).await
    }

    /// One call, bounded by [`CALL_TIMEOUT`]; `heartbeat`: a timeout marks
    /// Redis down too (other calls' timeouts do not: a slow answer under
    /// load is not an outage).
    pub(super) async fn run_as<T: redis::FromRedisValue>(
        &self,
        heartbeat: bool,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, Down> {
        match tokio::time::timeout(CALL_TIMEOUT, f).await {
            Ok(Ok(v)) => {
                self.up.store(true, Ordering::Release);
                Ok(v)
            }
            // redis-rs's own response timeout is a slow answer too.
            Ok(Err(e)) if !e.is_timeout() => {
                self.up.store(false, Ordering::Release);
                Err(Down::Unreachable)
            }
            _ => {
                if heartbeat {
                    self.up.store(false, Ordering::Release);
                }
                Err(Down::Slow)
            }
        }
    }

    pub(super) async fn run_bulk<T: redis::FromRedisValue>(
        &self,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, Down> {
        match tokio::time::timeout(BULK_TIMEOUT, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err(Down::Unreachable),
            Err(_) => Err(Down::Slow),
        }
    }

    /// Spends one request of `caller`'s rate: `Ok(0)` admitted, `Ok(n)`
    /// wait `n` seconds.
    pub async fn check_rate(&self, caller: &str, per_min: u32) -> Result<u64, Down> {
        let mut c = self.conn.clone();
        let mut inv = self.rate.key(key(caller, "rate"));
        inv.arg(per_min.max(1));
        self.run(inv.invoke_async::<i64>(&mut c))
            .await
            .map(|v| v.max(0) as u64)
    }

    /// Takes a lease for one of `caller`'s runs: `Ok(0)` leased, `Ok(-1)`
    /// at its concurrency cap, `Ok(n > 0)` its allowance is spent for `n`
    /// more seconds.
    pub async fn admit(
        &self,
        caller: &str,
        max_concurrent: u32,
        lease: &str,
        lease_ms: u64,
        allowance_ms: Option<u64>,
    ) -> Result<i64, Down> {
        let mut c = self.conn.clone();
        let mut inv = self.admit.key(key(caller, "leases"));
        inv.key(key(caller, "cpu"))
            .arg(max_concurrent)
            .arg(lease)
            .arg(lease_ms)
            .arg(allowance_ms.map(|a| a as i64).unwrap_or(-1));
        self.run(inv.invoke_async::<i64>(&mut c)).await
    }

    /// Spends one request of `caller`'s rate and, if it is admitted, takes
    /// `lease` for its run — one round trip for [`Shared::check_rate`] and
    /// [`Shared::admit`].
    pub async fn rate_and_admit(
        &self,
        caller: &str,
        per_min: u32,
        max_concurrent: u32,
        lease: &str,
        lease_ms: u64,
        allowance_ms: Option<u64>,
    ) -> Result<RateAdmit, Down> {
        let mut c = self.conn.clone();
        let mut inv = self.rate_admit.key(key(caller, "rate"));
        inv.key(key(caller, "leases"))
            .key(key(caller, "cpu"))
            .arg(per_min.max(1))
            .arg(max_concurrent)
            .arg(lease)
            .arg(lease_ms)
            .arg(allowance_ms.map(|a| a as i64).unwrap_or(-1));
        let v: Vec<i64> = self.run(inv.invoke_async(&mut c)).await?;
        let n = v.get(1).copied().unwrap_or(0).max(1) as u64;
        Ok(match v.first().copied() {
            Some(0) => RateAdmit::Leased,
            Some(1) => RateAdmit::RateLimited {
                retry_after_secs: n,
            },
            Some(3) => RateAdmit::AllowanceSpent {
                retry_after_secs: n,
            },
            _ => RateAdmit::AtCap,
        })
    }

    /// Gives `lease` back and charges `ms` of run time to `caller`.
    pub async fn settle(&self, caller: &str, lease: &str, ms: u64) -> Result<(), Down> {
        let mut c = self.tail.clone();
        let mut inv = self.settle.key(key(caller, "leases"));
        inv.key(key(caller, "cpu")).arg(lease).arg(ms);
        self.run(inv.invoke_async::<i64>(&mut c)).await.map(|_| ())
    }

    /// Takes a place under `caller`'s session cap for `member` (a session
    /// fingerprint, or a pending open's token): `Ok(true)` placed.
    pub async fn open_session(&self, caller: &str, max: u32, member: &str) -> Result<bool, Down> {
        let mut c = self.conn.clone();
        let mut inv = self.session_open.key(key(caller, "sessions"));
        inv.arg(max).arg(member).arg(SESSION_TTL_MS);
        self.run(inv.invoke_async::<i64>(&mut c))
            .await
            .map(|v| v == 0)
    }

    /// Gives `member`'s place back.
    pub async fn close_session(&self, caller: &str, member: &str) -> Result<(), Down> {
        let mut c = self.conn.clone();
        let cmd = redis::cmd("ZREM")
            .arg(key(caller, "sessions"))
            .arg(member)
            .to_owned();
        self.run(cmd.query_async::<i64>(&mut c)).await.map(|_| ())
    }

    /// Keeps the places of `members` (this node's open sessions of
    /// `caller`) for another [`SESSION_TTL_MS`].
    pub async fn renew_sessions(&self, caller: &str, members: &[String]) -> Result<(), Down> {
        self.renew(caller, "sessions", SESSION_TTL_MS, members)
            .await
    }

    /// Keeps `leases` (this node's runs of `caller` still going) for
    /// another [`LEASE_TTL_MS`].
    pub async fn renew_leases(&self, caller: &str, leases: &[String]) -> Result<(), Down> {
        self.renew(caller, "leases", LEASE_TTL_MS, leases).await
    }

    /// Renews each of `members` still in `caller`'s set `what` for `ms`
    /// (their number is bounded by the caller's cap on this node).
    async fn renew(
        &self,
        caller: &str,
        what: &str,
        ms: u64,
        members: &[String],
    ) -> Result<(), Down> {
        if members.is_empty() {
            return Ok(());
        }
        let mut c = self.conn.clone();
        let mut inv = self.session_renew.key(key(caller, what));
        inv.arg(ms);
        for m in members {
            inv.arg(m);
        }
        self.run(inv.invoke_async::<i64>(&mut c)).await.map(|_| ())
    }

    /// `caller`'s run milliseconds today, runs in flight and open sessions,
    /// fleet-wide.
    pub async fn usage(&self, caller: &str) -> Result<(u64, u64, u64), Down> {
        let mut c = self.conn.clone();
        let mut inv = self.usage.key(key(caller, "leases"));
        inv.key(key(caller, "cpu")).key(key(caller, "sessions"));
        let v: Vec<i64> = self.run(inv.invoke_async(&mut c)).await?;
        let at = |i: usize| v.get(i).copied().unwrap_or(0).max(0) as u64;
        Ok((at(0), at(1), at(2)))
    }
}
