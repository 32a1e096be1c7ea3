//! The audit log: one JSON line per run, durable before the run's answer
//! is sent.
//!
//! Records go to a writer thread that appends every record waiting, calls
//! `fdatasync` once for the lot, and only then acknowledges each one (group
//! commit: one sync serves many concurrent runs). A handler sends its
//! answer only after the acknowledgement, so every answered run has a
//! durable line. If a write or a sync fails the log marks itself unhealthy
//! and the daemon refuses further runs: it never runs unaudited.
//!
//! With `PLIMSOLL_AUDIT_SYNC=batch` the writer acknowledges a record once
//! it is written (in the kernel's page cache: it survives a crash of the
//! daemon) and syncs at most [`BATCH_SYNC`] later; a crash of the whole
//! machine can then lose the last [`BATCH_SYNC`] of records. The default,
//! `always`, syncs before acknowledging.
//!
//! Records hold metadata only: sizes and a hash of the code, never the code,
//! a body, a path the guest chose, or a credential.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};

/// Records waiting for the writer; more are refused (the daemon answers
/// 503) rather than queued without bound.
const QUEUE: usize = 8192;

/// How long `batch` mode may leave written records unsynced.
pub const BATCH_SYNC: std::time::Duration = std::time::Duration::from_millis(100);

/// When a record counts as durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// `fdatasync` before the answer (the default).
    Always,
    /// `write` before the answer, `fdatasync` within [`BATCH_SYNC`].
    Batch,
}

impl std::str::FromStr for SyncMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "always" => Ok(SyncMode::Always),
            "batch" => Ok(SyncMode::Batch),
            _ => Err("expected `always` or `batch`".into()),
        }
    }
}

/// One line of the audit log.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AuditRecord {
    /// RFC 3339 UTC time the record was made.
    pub time: String,
    /// `run`, `session_open`, `session_run`, `session_close`,
    /// `daemon_start`, `daemon_stop`.
    pub event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The session's fingerprint (SHA-256 of its id, hex), never the id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// `connect` for a call of plimsoll protocol 4; absent for REST.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<&'static str>,
    /// The caller's trace id (protocol 4), when valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
    /// The run record's digest (protocol 4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    pub provider: String,
    pub tier: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guest: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<&'static str>,
    pub grant_profiles: Vec<String>,
    /// Length of the submitted code, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_bytes: Option<u64>,
    /// SHA-256 of the submitted code, hex. Never the code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_sha256: Option<String>,
    /// The run's status (`ok`, `timeout`, `refused`, …) or the operation's
    /// result.
    pub outcome: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Wall time of the run, ms.
    pub wall_ms: f64,
    /// Instantiation time, ms.
    pub instantiate_ms: f64,
    /// Time the request spent in the daemon before its answer, ms.
    pub handling_ms: f64,
    /// Broker calls by outcome.
    pub broker_calls: BTreeMap<&'static str, u64>,
    /// Broker calls beyond the trace's row cap (counted, outcome unknown).
    #[serde(skip_serializing_if = "is_zero")]
    pub broker_calls_uncounted: u64,
    /// The fleet node that wrote the record (`PLIMSOLL_NODE_TAG`), and its
    /// boot epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub epoch: Option<String>,
    /// A snapshot's fingerprint (SHA-256 of its id, hex), never the id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// A snapshot's archive size, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_bytes: Option<u64>,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The current time as RFC 3339 UTC with milliseconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now()).to_string()
}

/// Why a record could not be made durable.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuditError {
    #[error("the audit log cannot be written; runs are refused until the operator fixes it")]
    Unhealthy,
    #[error("the audit log is backed up; try again shortly")]
    Busy,
}

enum Msg {
    Record(Vec<u8>, tokio::sync::oneshot::Sender<bool>),
    Stop,
}

/// The audit log handle. Cheap to clone.
#[derive(Clone)]
pub struct AuditLog {
    tx: SyncSender<Msg>,
    healthy: Arc<AtomicBool>,
    thread: Arc<std::sync::Mutex<Option<std::thread::JoinHandle<()>>>>,
    path: PathBuf,
}

impl AuditLog {
    /// Opens (creating, mode 0600) `path` for appending and proves it
    /// writable by appending a `daemon_start` record and syncing it.
    pub fn open(path: &Path, start: AuditRecord, mode: SyncMode) -> std::io::Result<AuditLog> {
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .open(path)?;
        let mut line = serde_json::to_vec(&start).map_err(std::io::Error::other)?;
        line.push(b'\n');
        file.write_all(&line)?;
        file.sync_data()?;
        let (tx, rx) = std::sync::mpsc::sync_channel(QUEUE);
        let healthy = Arc::new(AtomicBool::new(true));
        let h = healthy.clone();
        let thread = std::thread::Builder::new()
            .name("plimsolld-audit".into())
            .spawn(move || writer(file, rx, h, mode))?;
        Ok(AuditLog {
            tx,
            healthy,
            thread: Arc::new(std::sync::Mutex::new(Some(thread))),
            path: path.to_owned(),
        })
    }

    /// Whether every write so far succeeded.
    pub fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Acquire)
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `rec` and waits until it is on disk.
    pub async fn record(&self, rec: &AuditRecord) -> Result<(), AuditError> {
        if !self.healthy() {
            return Err(AuditError::Unhealthy);
        }
        let mut line = serde_json::to_vec(rec).map_err(|_| AuditError::Unhealthy)?;
        line.push(b'\n');
        let (ack, done) = tokio::sync::oneshot::channel();
        match self.tx.try_send(Msg::Record(line, ack)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(AuditError::Busy),
            Err(TrySendError::Disconnected(_)) => return Err(AuditError::Unhealthy),
        }
        match done.await {
            Ok(true) => Ok(()),
            _ => Err(AuditError::Unhealthy),
        }
    }

    /// Writes `stop`, then stops the writer after every queued record is
    /// durable.
    pub async fn close(&self, stop: AuditRecord) {
        let _ = self.record(&stop).await;
        let _ = self.tx.send(Msg::Stop);
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = handle {
            let _ = tokio::task::spawn_blocking(move || h.join()).await;
        }
    }
}

fn writer(mut file: File, rx: Receiver<Msg>, healthy: Arc<AtomicBool>, mode: SyncMode) {
    let mut stop = false;
    let mut unsynced = false;
    // The length up to the last whole record: a write that fails half-way
    // (a full disk) is cut back to it, so the log never ends in a torn
    // line.
    let mut good_len = file.metadata().map(|m| m.len()).unwrap_or(0);
    while !stop {
        let first = match rx.recv_timeout(BATCH_SYNC) {
            Ok(m) => m,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if unsynced {
                    unsynced = false;
                    if file.sync_data().is_err() {
                        healthy.store(false, Ordering::Release);
                    }
                }
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut batch = Vec::new();
        let mut msg = Some(first);
        // Take everything already waiting: one sync covers the lot.
        while let Some(m) = msg.take() {
            match m {
                Msg::Record(line, ack) => batch.push((line, ack)),
                Msg::Stop => stop = true,
            }
            if batch.len() >= 1024 || stop {
                break;
            }
            msg = rx.try_recv().ok();
        }
        let sync_now = mode == SyncMode::Always || stop;
        let ok = healthy.load(Ordering::Acquire) && {
            let mut buf = Vec::with_capacity(batch.iter().map(|(l, _)| l.len()).sum());
            for (l, _) in &batch {
                buf.extend_from_slice(l);
            }
            let written = file.write_all(&buf).is_ok();
            if written {
                good_len += buf.len() as u64;
            } else {
                let _ = file.set_len(good_len);
            }
            unsynced |= written && !buf.is_empty();
            written && (!sync_now || !std::mem::take(&mut unsynced) || file.sync_data().is_ok())
        };
        if !ok {
            healthy.store(false, Ordering::Release);
            tracing::error!("the audit log could not be written; refusing runs from now on");
        }
        for (_, ack) in batch {
            let _ = ack.send(ok);
        }
    }
    if unsynced {
        let _ = file.sync_data();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn records_are_lines_on_disk_once_acknowledged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        let start = AuditRecord {
            event: "daemon_start",
            ..AuditRecord::default()
        };
        let log = AuditLog::open(&path, start, SyncMode::Always).expect("open");
        let rec = AuditRecord {
            event: "run",
            run_id: Some("r1".into()),
            outcome: "ok".into(),
            ..AuditRecord::default()
        };
        log.record(&rec).await.expect("durable");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[1].contains("\"run_id\":\"r1\""));
        log.close(AuditRecord::default()).await;
    }

    #[tokio::test]
    async fn a_log_that_cannot_be_written_refuses_to_open() {
        // /dev/full accepts open() and fails every write with ENOSPC.
        if !Path::new("/dev/full").exists() {
            eprintln!("SKIP: /dev/full is missing on this machine");
            return;
        }
        let r = AuditLog::open(
            Path::new("/dev/full"),
            AuditRecord::default(),
            SyncMode::Always,
        );
        assert!(r.is_err());
    }
}
