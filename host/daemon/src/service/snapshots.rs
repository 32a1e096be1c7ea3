//! Session snapshots for every wire: take, pause, resume, fork, read,
//! delete, export and import, each audited with fingerprints only.
//!
//! Guarantees: a snapshot belongs to its caller (another caller's id
//! answers as an unknown one, [`plimsoll::snapshot::store`]); a resume or
//! a fork opens sessions under the caller's session cap like any open;
//! an imported archive is verified whole — every part's digest, every
//! size bounded before it is allocated, the guests this daemon runs —
//! before it is kept; no audit line, metric or error names a snapshot id,
//! a session id or anything inside a snapshot.

use super::{App, SessionOpen, fingerprint};
use crate::callers::Caller;
use crate::error::ApiError;
use plimsoll::RunRequest;
use plimsoll::session::SessionInfo;
use plimsoll::snapshot::store::{Meta, SnapshotStore, valid_id};
use std::sync::Arc;
use std::time::Instant;

fn from(e: plimsoll::run::ErrorInfo) -> ApiError {
    ApiError::new(&e.code, e.message)
}

fn unknown() -> ApiError {
    ApiError::new(
        plimsoll::snapshot::UNKNOWN,
        "no snapshot with that id for this caller",
    )
}

impl App {
    fn store(&self) -> Result<&Arc<SnapshotStore>, ApiError> {
        self.snapshots.as_ref().ok_or_else(|| {
            ApiError::new(
                plimsoll::snapshot::UNAVAILABLE,
                "this daemon keeps no snapshots (its snapshot directory could not be opened)",
            )
        })
    }

    async fn audit_snapshot(
        &self,
        event: &'static str,
        caller: &Caller,
        session: Option<&str>,
        meta: Option<&Meta>,
        outcome: Result<(), &str>,
        started: Instant,
    ) -> Result<(), ApiError> {
        let mut rec = self.base_record(event, caller, &self.sandbox.isolation());
        rec.session_id = session.map(fingerprint);
        rec.snapshot = meta.map(|m| fingerprint(&m.id));
        rec.snapshot_bytes = meta.map(|m| m.bytes);
        rec.handling_ms = started.elapsed().as_secs_f64() * 1e3;
        match outcome {
            Ok(()) => rec.outcome = "ok".into(),
            Err(code) => {
                rec.outcome = "refused".into();
                rec.error_code = Some(code.to_owned());
            }
        }
        self.audit
            .record(&rec)
            .await
            .map_err(|e| ApiError::new("audit_unavailable", e.to_string()))
    }

    /// Snapshots `caller`'s session `id` (and closes it when `pause`).
    pub async fn snapshot_session(
        &self,
        caller: &Caller,
        id: &str,
        pause: bool,
    ) -> Result<Meta, ApiError> {
        let started = Instant::now();
        self.check_audit()?;
        let event = if pause { "session_pause" } else { "snapshot" };
        let store = self.store()?.clone();
        let taken = self.sandbox.snapshot_session(&caller.id, id).await;
        let kept = taken.map_err(from).and_then(|s| {
            store
                .put(&caller.id, &s.archive, s.identities, &s.taken_at)
                .map_err(from)
        });
        let meta = match kept {
            Ok(m) => m,
            Err(e) => {
                self.audit_snapshot(event, caller, Some(id), None, Err(&e.code), started)
                    .await?;
                return Err(e);
            }
        };
        self.audit_snapshot(event, caller, Some(id), Some(&meta), Ok(()), started)
            .await?;
        if pause {
            self.close_session(caller, id, None).await;
        }
        Ok(meta)
    }

    /// Opens a session for `caller` from its snapshot `snapshot_id`,
    /// under its session cap, audited as `session_resume`.
    pub async fn resume_session(
        &self,
        caller: &Caller,
        snapshot_id: &str,
        req: RunRequest,
    ) -> Result<SessionInfo, ApiError> {
        let started = Instant::now();
        if !valid_id(snapshot_id) {
            return Err(unknown());
        }
        let (meta, bytes) = self.store()?.get(&caller.id, snapshot_id).map_err(from)?;
        let o = SessionOpen {
            req,
            ..SessionOpen::default()
        };
        self.open_session_through(
            caller,
            o,
            started,
            "session_resume",
            Some(fingerprint(&meta.id)),
            move |sb, c, r| Box::pin(async move { sb.resume_session(c, bytes, r).await }),
        )
        .await
    }

    /// Opens `n` sessions from one snapshot of `caller`'s session `id`.
    pub async fn fork_session(
        &self,
        caller: &Caller,
        id: &str,
        n: usize,
        mut req: RunRequest,
    ) -> Result<Vec<SessionInfo>, ApiError> {
        let started = Instant::now();
        self.bind_to_caller(caller, &mut req)?;
        self.check_audit()?;
        let open = self.sandbox.session_count(&caller.id);
        if open.saturating_add(n) > caller.max_sessions as usize {
            return Err(ApiError::new(
                "session_limit",
                format!(
                    "{n} forks would pass this caller's maximum of {} open sessions",
                    caller.max_sessions
                ),
            )
            .retry_after(1));
        }
        let forked = self
            .sandbox
            .fork_session(&caller.id, id, n, &req)
            .await
            .map_err(from);
        self.metrics.set_sessions(self.sandbox.session_total());
        let outcome = forked.as_ref().map(|_| ()).map_err(|e| e.code.as_str());
        self.audit_snapshot("session_fork", caller, Some(id), None, outcome, started)
            .await?;
        let infos = forked?;
        for info in &infos {
            let mut rec = self.base_record("session_open", caller, &self.sandbox.isolation());
            rec.session_id = Some(fingerprint(&info.session_id));
            rec.guest = Some(info.guest.clone());
            rec.outcome = "ok".into();
            if let Err(e) = self.audit.record(&rec).await {
                for i in &infos {
                    self.sandbox.close_session(&caller.id, &i.session_id);
                }
                return Err(ApiError::new("audit_unavailable", e.to_string()));
            }
        }
        Ok(infos)
    }

    /// `caller`'s snapshot `id`.
    pub fn snapshot_meta(&self, caller: &Caller, id: &str) -> Result<Meta, ApiError> {
        if !valid_id(id) {
            return Err(unknown());
        }
        self.store()?.meta(&caller.id, id).map_err(from)
    }

    /// Deletes `caller`'s snapshot `id`.
    pub async fn delete_snapshot(&self, caller: &Caller, id: &str) -> Result<(), ApiError> {
        let started = Instant::now();
        if !valid_id(id) {
            return Err(unknown());
        }
        let meta = self.store()?.delete(&caller.id, id).map_err(from)?;
        self.audit_snapshot(
            "snapshot_delete",
            caller,
            None,
            Some(&meta),
            Ok(()),
            started,
        )
        .await
    }

    /// `caller`'s snapshot `id` as a portable archive.
    pub async fn export_snapshot(&self, caller: &Caller, id: &str) -> Result<Vec<u8>, ApiError> {
        let started = Instant::now();
        self.check_audit()?;
        if !valid_id(id) {
            return Err(unknown());
        }
        let (meta, bytes) = self.store()?.get(&caller.id, id).map_err(from)?;
        self.audit_snapshot(
            "snapshot_export",
            caller,
            None,
            Some(&meta),
            Ok(()),
            started,
        )
        .await?;
        Ok(bytes)
    }

    /// Keeps an archive another daemon exported, verified whole first.
    pub async fn import_snapshot(&self, caller: &Caller, bytes: Vec<u8>) -> Result<Meta, ApiError> {
        let started = Instant::now();
        self.check_audit()?;
        let store = self.store()?.clone();
        let caps = self
            .sandbox
            .snapshot_caps(&RunRequest::default())
            .map_err(from)?;
        let checked = tokio::task::spawn_blocking(move || {
            plimsoll::snapshot::archive::decode(&bytes, &caps).map(|(id, image)| (id, image, bytes))
        })
        .await
        .map_err(|_| ApiError::new(plimsoll::snapshot::INVALID, "the archive could not be read"));
        let (id, image, bytes) = match checked
            .and_then(|r| r.map_err(|e| ApiError::new(plimsoll::snapshot::INVALID, e.to_string())))
        {
            Ok(x) => x,
            Err(e) => {
                self.audit_snapshot("snapshot_import", caller, None, None, Err(&e.code), started)
                    .await?;
                return Err(e);
            }
        };
        let identities: Vec<String> = image.guests.iter().map(|g| g.identity.clone()).collect();
        let archive = plimsoll::snapshot::archive::Archive { id, bytes };
        let kept = store
            .put(&caller.id, &archive, identities, &image.taken_at)
            .map_err(from);
        let outcome = kept.as_ref().map(|_| ()).map_err(|e| e.code.as_str());
        self.audit_snapshot(
            "snapshot_import",
            caller,
            None,
            kept.as_ref().ok(),
            outcome,
            started,
        )
        .await?;
        kept
    }
}
