//! The daemon's configuration, from the environment.
//!
//! Every setting has a default that is safe: with nothing set the provider
//! is `disabled` (nothing runs) and the daemon refuses to start without a
//! callers file unless `PLIMSOLL_INSECURE=1` and it listens on loopback
//! only.

use plimsoll::SandboxConfig;
use plimsoll::config::ConfigError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Where the API listens.
pub const LISTEN_ENV: &str = "PLIMSOLL_LISTEN";
/// Where `/metrics` listens (`off` disables it).
pub const METRICS_ADDR_ENV: &str = "PLIMSOLL_METRICS_ADDR";
/// The TLS certificate chain (PEM).
pub const TLS_CERT_ENV: &str = "PLIMSOLL_TLS_CERT";
/// The TLS private key (PEM).
pub const TLS_KEY_ENV: &str = "PLIMSOLL_TLS_KEY";
/// The callers file.
pub const CLIENTS_FILE_ENV: &str = "PLIMSOLL_CLIENTS_FILE";
/// `1`: run without a callers file (loopback listeners only).
pub const INSECURE_ENV: &str = "PLIMSOLL_INSECURE";
/// `1`: refuse to start unless every hardened-mode condition holds.
pub const HARDENED_ENV: &str = "PLIMSOLL_HARDENED";
/// The audit log (JSON lines, appended).
pub const AUDIT_LOG_ENV: &str = "PLIMSOLL_AUDIT_LOG";
/// `always` (default): each audit record is synced before the answer;
/// `batch`: written before the answer, synced within 100 ms.
pub const AUDIT_SYNC_ENV: &str = "PLIMSOLL_AUDIT_SYNC";
/// A directory of components registered by file stem (`hello.wasm` →
/// `hello`).
pub const COMPONENTS_DIR_ENV: &str = "PLIMSOLL_COMPONENTS_DIR";
/// Comma-separated guest identities every served guest must be one of.
pub const GUEST_PINS_ENV: &str = "PLIMSOLL_GUEST_PINS";
/// The largest request body accepted, in bytes.
pub const MAX_BODY_ENV: &str = "PLIMSOLL_MAX_BODY_BYTES";
/// Bytes of request bodies held at once; more are shed with 503.
pub const MAX_BODY_IN_FLIGHT_ENV: &str = "PLIMSOLL_MAX_BODY_BYTES_IN_FLIGHT";
/// Runs in flight across all callers; more are shed with 503.
pub const MAX_INFLIGHT_ENV: &str = "PLIMSOLL_MAX_INFLIGHT";
/// Open connections per listener; more are closed at accept.
pub const MAX_CONNECTIONS_ENV: &str = "PLIMSOLL_MAX_CONNECTIONS";
/// Connections one peer address may hold before authenticating.
pub const MAX_UNAUTHENTICATED_PER_PEER_ENV: &str = "PLIMSOLL_MAX_UNAUTHENTICATED_PER_PEER";
/// Protocol sessions one owner of one caller may hold (0: no cap).
pub const MAX_SESSIONS_PER_OWNER_ENV: &str = "SANDBOX_MAX_SESSIONS_PER_OWNER";
/// Seconds a client has to send its request head.
pub const HEADER_TIMEOUT_ENV: &str = "PLIMSOLL_HEADER_TIMEOUT_SECS";
/// Seconds SIGTERM waits for in-flight runs.
pub const DRAIN_SECS_ENV: &str = "PLIMSOLL_DRAIN_SECS";
/// This node's tag in a fleet: 4 lowercase hex digits (its ordinal).
pub const NODE_TAG_ENV: &str = "PLIMSOLL_NODE_TAG";
/// The fleet's shared state: `redis://…` (or `rediss://…`).
pub const SHARED_STATE_URL_ENV: &str = "PLIMSOLL_SHARED_STATE_URL";
/// PEM certificates to verify a `rediss://` shared state against, instead
/// of the system's trust store.
pub const SHARED_STATE_CA_FILE_ENV: &str = "PLIMSOLL_SHARED_STATE_CA_FILE";
/// `local` (default) or `closed`: what to do while the shared state does
/// not answer.
pub const SHARED_STATE_FAILURE_ENV: &str = "PLIMSOLL_SHARED_STATE_FAILURE";
/// How many nodes share the callers' limits (they are divided by it while
/// the shared state does not answer).
pub const FLEET_SIZE_ENV: &str = "PLIMSOLL_FLEET_SIZE";
/// Where the agent-check port listens (`ready`, `drain`, `down`).
pub const AGENT_ADDR_ENV: &str = "PLIMSOLL_AGENT_ADDR";
/// The fleet's key (a file of 64 hex digits): with it, a draining node
/// hands its sessions over, sealed, to the nodes that stay.
pub const FLEET_KEY_FILE_ENV: &str = "PLIMSOLL_FLEET_KEY_FILE";
/// Seconds SIGTERM keeps serving calls on open sessions (0: none).
pub const SESSION_DRAIN_SECS_ENV: &str = "PLIMSOLL_SESSION_DRAIN_SECS";
/// Where session snapshots are kept (default: `snapshots` in the state
/// directory).
pub const SNAPSHOT_DIR_ENV: &str = "PLIMSOLL_SNAPSHOT_DIR";
/// How long a snapshot is kept, seconds (default 7 days).
pub const SNAPSHOT_TTL_ENV: &str = "PLIMSOLL_SNAPSHOT_TTL";
/// Snapshots one caller may hold (default 64).
pub const SNAPSHOTS_PER_CALLER_ENV: &str = "PLIMSOLL_SNAPSHOTS_PER_CALLER";
/// Bytes of snapshots one caller may hold (default 2 GiB).
pub const SNAPSHOT_BYTES_PER_CALLER_ENV: &str = "PLIMSOLL_SNAPSHOT_BYTES_PER_CALLER";
/// Bytes of snapshots the host keeps in all (default 16 GiB).
pub const SNAPSHOT_BYTES_TOTAL_ENV: &str = "PLIMSOLL_SNAPSHOT_BYTES_TOTAL";
/// The largest archive `POST /v1/snapshots/import` accepts (default
/// 512 MiB).
pub const SNAPSHOT_MAX_BYTES_ENV: &str = "PLIMSOLL_SNAPSHOT_MAX_BYTES";

/// Everything the daemon needs to start.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// The library's configuration (provider, envelope, grants, …).
    pub sandbox: SandboxConfig,
    /// Whether `PLIMSOLL_ENVELOPE_FILE` set the envelope explicitly.
    pub explicit_envelope: bool,
    /// The API listener.
    pub listen: SocketAddr,
    /// The metrics listener, unless disabled.
    pub metrics: Option<SocketAddr>,
    /// TLS certificate and key files.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The callers file.
    pub clients_file: Option<PathBuf>,
    /// `PLIMSOLL_INSECURE=1`.
    pub insecure: bool,
    /// `PLIMSOLL_HARDENED=1`.
    pub hardened: bool,
    /// The audit log.
    pub audit_log: PathBuf,
    /// When an audit record counts as durable.
    pub audit_sync: crate::audit::SyncMode,
    /// Whether `PLIMSOLL_AUDIT_LOG` named it (rather than the default).
    pub explicit_audit_log: bool,
    /// The state directory (quota counters, component cache).
    pub state_dir: PathBuf,
    /// Components to register by name.
    pub components_dir: Option<PathBuf>,
    /// Guest identities that may be served; empty = not pinned.
    pub guest_pins: Vec<String>,
    /// Largest request body, bytes.
    pub max_body_bytes: usize,
    /// Bytes of request bodies held at once.
    pub max_body_in_flight: u64,
    /// Runs in flight across all callers.
    pub max_inflight: usize,
    /// Open connections per listener.
    pub max_connections: usize,
    /// Connections one peer may hold before authenticating (the oldest is
    /// replaced past it; see `server.rs`).
    pub max_unauthenticated_per_peer: usize,
    /// Protocol sessions one owner may hold (`SANDBOX_MAX_SESSIONS_PER_OWNER`).
    pub max_sessions_per_owner: u32,
    /// How long SIGTERM waits for in-flight runs.
    pub drain: Duration,
    /// How long a client may take to send its request head (slowloris).
    pub header_timeout: Duration,
    /// How long a client may take to send its request body.
    pub body_timeout: Duration,
    /// Where snapshots are kept, and their quotas and expiry.
    pub snapshot_dir: PathBuf,
    pub snapshot_limits: plimsoll::snapshot::store::StoreLimits,
    /// The largest archive an import accepts, bytes.
    pub snapshot_max_bytes: usize,
    /// This node's tag in a fleet (`PLIMSOLL_NODE_TAG`).
    pub node_tag: Option<String>,
    /// The fleet's shared state (`PLIMSOLL_SHARED_STATE_URL`; its
    /// password is never logged).
    pub shared_state_url: Option<String>,
    pub shared_state_failure: crate::fleet::FailureMode,
    /// The CA file for a `rediss://` shared state
    /// (`PLIMSOLL_SHARED_STATE_CA_FILE`).
    pub shared_state_ca_file: Option<PathBuf>,
    pub fleet_size: u32,
    pub agent_addr: Option<SocketAddr>,
    /// The fleet's key file (`PLIMSOLL_FLEET_KEY_FILE`).
    pub fleet_key_file: Option<PathBuf>,
    /// How long SIGTERM keeps serving open sessions' calls.
    pub session_drain: Duration,
}

/// A setting the daemon could not use.
#[derive(Debug, thiserror::Error)]
pub enum DaemonConfigError {
    #[error(transparent)]
    Sandbox(#[from] ConfigError),
    #[error("{name}: {message}")]
    Invalid { name: &'static str, message: String },
}

fn var(name: &'static str) -> Result<Option<String>, DaemonConfigError> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v.trim().to_owned())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(DaemonConfigError::Invalid {
            name,
            message: "not valid UTF-8".into(),
        }),
    }
}

fn flag(name: &'static str) -> Result<bool, DaemonConfigError> {
    match var(name)?.as_deref() {
        None | Some("0") | Some("false") => Ok(false),
        Some("1") | Some("true") => Ok(true),
        Some(_) => Err(DaemonConfigError::Invalid {
            name,
            message: "expected 1 or 0".into(),
        }),
    }
}

fn addr(name: &'static str, v: &str) -> Result<SocketAddr, DaemonConfigError> {
    v.parse().map_err(|_| DaemonConfigError::Invalid {
        name,
        message: "expected an IP address and port, e.g. 127.0.0.1:8080".into(),
    })
}

fn number<T: std::str::FromStr>(name: &'static str, default: T) -> Result<T, DaemonConfigError> {
    match var(name)? {
        None => Ok(default),
        Some(v) => v.parse().map_err(|_| DaemonConfigError::Invalid {
            name,
            message: "expected a whole number".into(),
        }),
    }
}

impl DaemonConfig {
    /// Reads the daemon's settings and the library's (`SANDBOX_PROVIDER`,
    /// `SANDBOX_MIN_ISOLATION`, `PLIMSOLL_GRANTS_FILE`,
    /// `PLIMSOLL_ENVELOPE_FILE`, …).
    pub fn from_env() -> Result<Self, DaemonConfigError> {
        let sandbox = SandboxConfig::from_env()?;
        let explicit_envelope = var(plimsoll::config::ENVELOPE_FILE_ENV)?.is_some();
        let listen = addr(
            LISTEN_ENV,
            &var(LISTEN_ENV)?.unwrap_or_else(|| "127.0.0.1:8080".into()),
        )?;
        let metrics = match var(METRICS_ADDR_ENV)?.as_deref() {
            Some("off") => None,
            Some(v) => Some(addr(METRICS_ADDR_ENV, v)?),
            None => Some(addr(METRICS_ADDR_ENV, "127.0.0.1:9464")?),
        };
        let tls = match (var(TLS_CERT_ENV)?, var(TLS_KEY_ENV)?) {
            (Some(c), Some(k)) => Some((PathBuf::from(c), PathBuf::from(k))),
            (None, None) => None,
            _ => {
                return Err(DaemonConfigError::Invalid {
                    name: TLS_CERT_ENV,
                    message: format!("{TLS_CERT_ENV} and {TLS_KEY_ENV} go together"),
                });
            }
        };
        let state_dir = plimsoll::config::default_state_dir();
        let audit = var(AUDIT_LOG_ENV)?;
        let explicit_audit_log = audit.is_some();
        let audit_log = audit
            .map(PathBuf::from)
            .unwrap_or_else(|| state_dir.join("audit.jsonl"));
        let guest_pins = var(GUEST_PINS_ENV)?
            .map(|v| {
                v.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let snapshot_dir = var(SNAPSHOT_DIR_ENV)?
            .map(PathBuf::from)
            .unwrap_or_else(|| state_dir.join("snapshots"));
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Ok(DaemonConfig {
            sandbox,
            explicit_envelope,
            listen,
            metrics,
            tls,
            clients_file: var(CLIENTS_FILE_ENV)?.map(PathBuf::from),
            insecure: flag(INSECURE_ENV)?,
            hardened: flag(HARDENED_ENV)?,
            audit_log,
            explicit_audit_log,
            audit_sync: match var(AUDIT_SYNC_ENV)? {
                None => crate::audit::SyncMode::Always,
                Some(v) => v.parse().map_err(|message| DaemonConfigError::Invalid {
                    name: AUDIT_SYNC_ENV,
                    message,
                })?,
            },
            state_dir,
            components_dir: var(COMPONENTS_DIR_ENV)?.map(PathBuf::from),
            guest_pins,
            max_body_bytes: number(MAX_BODY_ENV, 32usize << 20)?,
            max_body_in_flight: number(MAX_BODY_IN_FLIGHT_ENV, 512u64 << 20)?,
            max_inflight: number(MAX_INFLIGHT_ENV, (cores * 32).max(64))?,
            max_connections: number(MAX_CONNECTIONS_ENV, 1024usize)?.max(4),
            max_unauthenticated_per_peer: number(
                MAX_UNAUTHENTICATED_PER_PEER_ENV,
                crate::server::DEFAULT_UNAUTHENTICATED_PER_PEER,
            )?
            .max(1),
            max_sessions_per_owner: number(MAX_SESSIONS_PER_OWNER_ENV, 2u32)?,
            drain: Duration::from_secs(number(DRAIN_SECS_ENV, 30u64)?),
            header_timeout: Duration::from_secs(number(HEADER_TIMEOUT_ENV, 10u64)?.max(1)),
            body_timeout: Duration::from_secs(30),
            snapshot_dir,
            snapshot_limits: {
                let d = plimsoll::snapshot::store::StoreLimits::default();
                plimsoll::snapshot::store::StoreLimits {
                    per_caller: number(SNAPSHOTS_PER_CALLER_ENV, d.per_caller)?,
                    per_caller_bytes: number(SNAPSHOT_BYTES_PER_CALLER_ENV, d.per_caller_bytes)?,
                    total_bytes: number(SNAPSHOT_BYTES_TOTAL_ENV, d.total_bytes)?,
                    ttl: Duration::from_secs(number(SNAPSHOT_TTL_ENV, d.ttl.as_secs())?),
                }
            },
            snapshot_max_bytes: number(SNAPSHOT_MAX_BYTES_ENV, 512usize << 20)?,
            node_tag: var(NODE_TAG_ENV)?,
            shared_state_url: var(SHARED_STATE_URL_ENV)?,
            shared_state_failure: match var(SHARED_STATE_FAILURE_ENV)? {
                None => crate::fleet::FailureMode::Local,
                Some(v) => v.parse().map_err(|message| DaemonConfigError::Invalid {
                    name: SHARED_STATE_FAILURE_ENV,
                    message,
                })?,
            },
            shared_state_ca_file: var(SHARED_STATE_CA_FILE_ENV)?.map(PathBuf::from),
            fleet_size: number(FLEET_SIZE_ENV, 1u32)?.max(1),
            agent_addr: match var(AGENT_ADDR_ENV)? {
                Some(v) => Some(addr(AGENT_ADDR_ENV, &v)?),
                None => None,
            },
            fleet_key_file: var(FLEET_KEY_FILE_ENV)?.map(PathBuf::from),
            session_drain: Duration::from_secs(number(SESSION_DRAIN_SECS_ENV, 0u64)?),
        })
    }

    /// Every listener address with whether it serves TLS.
    pub fn listeners(&self) -> Vec<(&'static str, SocketAddr, bool)> {
        let mut v = vec![("api", self.listen, self.tls.is_some())];
        if let Some(m) = self.metrics {
            v.push(("metrics", m, false));
        }
        v
    }
}
