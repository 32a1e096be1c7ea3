//! Accounting: what every answered run leaves behind, whatever wire it
//! came by: its charge to the caller's daily allowance, its metrics, and
//! its audit record, durable before the answer leaves. Records hold
//! metadata only: a session's fingerprint, never its id; the code's digest
//! and size, never the code.

use super::App;
use crate::audit::{AuditRecord, now_rfc3339};
use crate::callers::Caller;
use crate::error::ApiError;
use plimsoll::run::Language;
use plimsoll::trace::CallOutcome;
use plimsoll::{Isolation, RunRequest, RunResult, Status};
use sha2::{Digest, Sha256};
use std::time::Instant;

/// A session's fingerprint: what audit lines, metrics and records name a
/// session by (its id is a capability, never written down).
pub fn fingerprint(session_id: &str) -> String {
    hex::encode(Sha256::digest(session_id.as_bytes()))
}

impl App {
    pub fn base_record(
        &self,
        event: &'static str,
        caller: &Caller,
        iso: &Isolation,
    ) -> AuditRecord {
        AuditRecord {
            time: now_rfc3339(),
            event,
            caller: Some(caller.id.clone()),
            provider: iso.provider.clone(),
            tier: iso.tier.as_str().to_owned(),
            node: self.node.map(|n| n.tag_hex()),
            epoch: self.node.map(|n| n.epoch_hex()),
            ..AuditRecord::default()
        }
    }

    pub fn run_record(
        &self,
        event: &'static str,
        caller: &Caller,
        req: &RunRequest,
        r: &RunResult,
        started: Instant,
    ) -> AuditRecord {
        let mut rec = self.base_record(event, caller, &r.isolation);
        rec.run_id = Some(r.run_id.clone());
        // The session's fingerprint, never its id (a capability).
        rec.session_id = r.session_id.as_deref().map(fingerprint);
        rec.guest = r.guest.clone();
        // What ran, never what the caller claimed.
        rec.language = ran_language(req, r);
        rec.grant_profiles = req.grants.clone();
        if let Some(code) = &req.code {
            rec.code_bytes = Some(code.len() as u64);
            rec.code_sha256 = Some(hex::encode(Sha256::digest(code.as_bytes())));
        }
        rec.outcome = r.status.as_str().to_owned();
        rec.error_code = r.error.as_ref().map(|e| e.code.clone());
        rec.exit_code = r.exit_code;
        rec.wall_ms = r.usage.wall_ms;
        rec.instantiate_ms = r.usage.instantiate_ms;
        rec.handling_ms = started.elapsed().as_secs_f64() * 1e3;
        for o in CallOutcome::ALL {
            let n = r.calls.count(o);
            if n > 0 {
                rec.broker_calls.insert(o.as_str(), n);
            }
        }
        rec.broker_calls_uncounted = r.calls.dropped;
        rec
    }
}

impl App {
    /// Charges a finished run to its caller's allowance, counts it, and
    /// makes its audit record `rec` durable. An error means the run must
    /// not be answered with its result.
    pub async fn settle(
        &self,
        caller: &Caller,
        req: &RunRequest,
        r: &RunResult,
        rec: AuditRecord,
    ) -> Result<(), ApiError> {
        if r.status != Status::Refused {
            let ms = r.usage.wall_ms.ceil() as u64;
            self.quotas.ledger.charge(&caller.id, ms);
            // The fleet's allowance, off the answer's path.
            if let Some(f) = &self.fleet {
                let (f, id) = (f.clone(), caller.id.clone());
                tokio::spawn(async move {
                    let _ = f.settle(&id, "", ms).await;
                });
            }
        }
        let language = ran_language(req, r).unwrap_or("component");
        self.metrics.run(&caller.id, language, r);
        self.audit
            .record(&rec)
            .await
            .map_err(|e| ApiError::new("audit_unavailable", e.to_string()))
    }
}

/// The language of the guest that ran (from its identity); for a run that
/// resolved no guest, the request's (a closed set of names either way).
pub fn ran_language(req: &RunRequest, r: &RunResult) -> Option<&'static str> {
    match r.guest.as_deref() {
        Some(identity) => Language::from_identity(identity).map(Language::as_str),
        None => req.language.map(Language::as_str),
    }
}
