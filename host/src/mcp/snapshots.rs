//! The snapshot tools: `snapshot_session`, `resume_session`,
//! `fork_session` ([`crate::snapshot`]).
//!
//! Guarantees: only a session this connection holds is snapshotted or
//! forked (another's answers as unknown); a resumed or forked session
//! belongs to this connection and takes its places under the
//! connection's cap before anything is awaited; a snapshot id belongs to
//! the caller, so another connection of the same caller may resume it.

use super::args::{ForkSessionArgs, ResumeSessionArgs, SnapshotSessionArgs};
use super::backend::Backend;
use super::{MAX_SESSIONS_PER_CONNECTION, McpServer, render};
use crate::run::Language;
use crate::session::SessionInfo;
use rmcp::ErrorData;
use rmcp::model::CallToolResult;
use serde_json::json;

/// The most forks one call makes (within the connection's cap).
const MAX_FORKS: usize = 8;

impl McpServer {
    fn unknown_session() -> CallToolResult {
        render::refusal(
            "not_found",
            "no open session of this connection has that id",
        )
    }

    /// Records sessions this connection now holds.
    fn hold(&self, infos: &[SessionInfo]) {
        for info in infos {
            self.sessions
                .open
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(info.session_id.clone());
            if Language::from_identity(&info.guest) == Some(Language::Shell) {
                self.sessions
                    .shells
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(info.session_id.clone());
            }
        }
    }

    fn opened(infos: &[SessionInfo], text: String) -> CallToolResult {
        let sessions: Vec<_> = infos
            .iter()
            .map(|i| {
                json!({
                    "session": i.session_id,
                    "guest": i.guest,
                    "idle_timeout_sec": i.idle_timeout_sec,
                    "lifetime_sec": i.lifetime_sec,
                })
            })
            .collect();
        render::structured(json!({ "sessions": sessions }), text)
    }

    /// `snapshot_session`.
    pub(super) async fn snapshot_session(
        &self,
        b: &dyn Backend,
        args: SnapshotSessionArgs,
    ) -> Result<CallToolResult, ErrorData> {
        if !self.sessions.holds(&args.session) {
            return Ok(Self::unknown_session());
        }
        match b.snapshot_session(&args.session).await {
            Ok(m) => Ok(render::structured(
                json!({
                    "snapshot": m.id,
                    "bytes": m.bytes,
                    "guests": m.identities,
                    "taken_at": m.taken_at,
                }),
                format!(
                    "snapshot {} taken ({} bytes); the session goes on unchanged. Resume it with resume_session.",
                    m.id, m.bytes
                ),
            )),
            Err(e) => Ok(render::refusal(&e.code, &e.message)),
        }
    }

    /// `resume_session`.
    pub(super) async fn resume_session(
        &self,
        b: &dyn Backend,
        args: ResumeSessionArgs,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(_slot) = self.sessions.reserve() else {
            return Ok(full());
        };
        match b.resume_session(&args.snapshot).await {
            Ok(info) => {
                self.hold(std::slice::from_ref(&info));
                let text = format!(
                    "session {} resumed from the snapshot ({}); it starts exactly where the snapshot was taken",
                    info.session_id, info.guest
                );
                let mut r = Self::opened(std::slice::from_ref(&info), text);
                if let Some(v) = r.structured_content.as_mut() {
                    v["session"] = json!(info.session_id);
                }
                Ok(r)
            }
            Err(e) => Ok(render::refusal(&e.code, &e.message)),
        }
    }

    /// `fork_session`.
    pub(super) async fn fork_session(
        &self,
        b: &dyn Backend,
        args: ForkSessionArgs,
    ) -> Result<CallToolResult, ErrorData> {
        if !self.sessions.holds(&args.session) {
            return Ok(Self::unknown_session());
        }
        let n = args.count.unwrap_or(1);
        if n == 0 || n > MAX_FORKS {
            return Ok(render::refusal(
                "invalid_request",
                &format!("count must be 1 to {MAX_FORKS}"),
            ));
        }
        // Every fork's place first.
        let mut slots = Vec::with_capacity(n);
        for _ in 0..n {
            match self.sessions.reserve() {
                Some(s) => slots.push(s),
                None => return Ok(full()),
            }
        }
        match b.fork_session(&args.session, n).await {
            Ok(infos) => {
                self.hold(&infos);
                let text = format!(
                    "{} sessions forked: {}",
                    infos.len(),
                    infos
                        .iter()
                        .map(|i| i.session_id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                Ok(Self::opened(&infos, text))
            }
            Err(e) => Ok(render::refusal(&e.code, &e.message)),
        }
    }
}

fn full() -> CallToolResult {
    render::refusal(
        "too_many_sessions",
        &format!(
            "this connection holds {MAX_SESSIONS_PER_CONNECTION} open sessions; close one first"
        ),
    )
}
