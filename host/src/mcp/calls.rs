//! Each tool's call: `run_code`, `open_session`, `run_cell`,
//! `close_session`, and what a run in flight does meanwhile.
//!
//! Guarantees: a run reports progress every [`PROGRESS_EVERY`] to a client
//! that asked for it (a client that stopped reading loses its notes, not
//! the run); a client's cancellation drops the run, which tears its
//! instance or worker down, and the answer is `canceled`; a cell is never
//! stopped halfway; a session another connection opened answers as an
//! unknown one; a model's timeout is cut to the operator's, not refused.

use super::args::{
    CloseSessionArgs, OpenSessionArgs, RunCellArgs, RunCodeArgs, check_code, guest_name,
    input_files, language,
};
use super::backend::Backend;
use super::{MAX_SESSIONS_PER_CONNECTION, McpServer, PROGRESS_EVERY, render};
use crate::blob::Blob;
use crate::envelope::Limits;
use crate::run::{RunRequest, RunResult, Status};
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::json;
use std::time::{Duration, Instant};

impl McpServer {
    /// `run_code`: a fresh instance, as `Sandbox::run`.
    pub(super) async fn run_code(
        &self,
        b: &dyn Backend,
        args: RunCodeArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        check_code(&args.code)?;
        let mut req = RunRequest::code(language(&args.language)?, args.code);
        req.files = input_files(args.files)?;
        req.stdin = Blob::from(args.stdin.unwrap_or_default());
        req.grants = args.grants;
        req.guest = guest_name(args.guest);
        if let Some(ms) = args.timeout_ms {
            // A model's guess at a timeout is cut to the operator's, not
            // refused (as the plimsoll protocol does); 0 is refused by the
            // envelope as for every request.
            req.limits = Limits {
                wall_time_ms: Some(ms.min(b.max_wall_time_ms())),
                ..Limits::default()
            };
        }
        let budget = req.limits.wall_time_ms;
        let r = self
            .in_flight(b.run(req), budget, ctx)
            .await
            .unwrap_or_else(|| canceled(&b.isolation()));
        Ok(self.render(&r))
    }

    /// `open_session`: a session bound to this connection.
    pub(super) async fn open_session(
        &self,
        b: &dyn Backend,
        args: OpenSessionArgs,
    ) -> Result<CallToolResult, ErrorData> {
        let lang = language(&args.language)?;
        // The slot is taken before the open is awaited, so concurrent calls
        // on one connection cannot pass the cap together.
        let Some(_slot) = self.sessions.reserve() else {
            return Ok(render::refusal(
                "too_many_sessions",
                &format!(
                    "this connection holds {MAX_SESSIONS_PER_CONNECTION} open sessions; close one first"
                ),
            ));
        };
        let req = RunRequest {
            language: Some(lang),
            guest: guest_name(args.guest),
            ..RunRequest::default()
        };
        match b.open_session(req).await {
            Ok(info) => {
                self.sessions
                    .open
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(info.session_id.clone());
                if lang == crate::run::Language::Shell {
                    self.sessions
                        .shells
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(info.session_id.clone());
                }
                let tier = b.isolation().tier;
                Ok(render::structured(
                    json!({
                        "session": info.session_id,
                        "language": lang.as_str(),
                        "guest": info.guest,
                        "isolation": {"tier": tier.as_str()},
                        "idle_timeout_sec": info.idle_timeout_sec,
                        "lifetime_sec": info.lifetime_sec,
                    }),
                    format!(
                        "session {} opened ({} on {}, isolation {}); it closes after {} s idle or {} s in all",
                        info.session_id,
                        lang.as_str(),
                        info.guest,
                        tier,
                        info.idle_timeout_sec,
                        info.lifetime_sec
                    ),
                ))
            }
            Err(e) => Ok(render::refusal(&e.code, &e.message)),
        }
    }

    /// `run_cell`: a cell in one of this connection's sessions.
    pub(super) async fn run_cell(
        &self,
        b: &dyn Backend,
        args: RunCellArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        check_code(&args.code)?;
        if !self.sessions.holds(&args.session) {
            // Another connection's session and an unknown one answer alike.
            return Ok(render::refusal(
                "not_found",
                "no open session of this connection has that id",
            ));
        }
        let mut files = input_files(args.files)?;
        let code = if self.sessions.is_shell(&args.session) {
            // One line of a persistent shell: the working directory and
            // exported variables carry over to the next cell.
            let (code, line) = crate::run::shell_session_line(&args.code);
            files.push(line);
            code
        } else {
            args.code
        };
        let req = RunRequest {
            code: Some(code),
            files,
            ..RunRequest::default()
        };
        // A cell is not stopped halfway (its interpreter would be left in
        // the middle of a call): it ends at its own timeout, with progress
        // reported meanwhile.
        let cell = b.run_cell(&args.session, req);
        let r = self.with_progress(cell, None, ctx).await;
        if r.session_closed {
            self.sessions.forget(&args.session);
        }
        Ok(self.render(&r))
    }

    /// `close_session`: closes one of this connection's sessions.
    pub(super) fn close_session(
        &self,
        b: &dyn Backend,
        args: CloseSessionArgs,
    ) -> Result<CallToolResult, ErrorData> {
        let was = self.sessions.holds(&args.session) && b.close_session(&args.session);
        self.sessions.forget(&args.session);
        // The id is echoed only for a session this connection held: an
        // unknown one is not repeated back.
        let answer = if was {
            json!({"session": args.session, "closed": true})
        } else {
            json!({"closed": false})
        };
        Ok(render::structured(
            answer,
            if was {
                "session closed".into()
            } else {
                "no open session of this connection has that id".into()
            },
        ))
    }

    /// `r` as a tool result, its artifacts kept for this connection.
    fn render(&self, r: &RunResult) -> CallToolResult {
        let mut store = self.artifacts.lock().unwrap_or_else(|p| p.into_inner());
        render::tool_result(r, &mut store)
    }

    /// Drives `run`, reporting progress; `None` when the client canceled
    /// the request (the run is dropped, which stops it).
    async fn in_flight(
        &self,
        run: futures::future::BoxFuture<'_, RunResult>,
        budget_ms: Option<u64>,
        ctx: &RequestContext<RoleServer>,
    ) -> Option<RunResult> {
        let ct = ctx.ct.clone();
        tokio::select! {
            r = self.with_progress(run, budget_ms, ctx) => Some(r),
            _ = ct.cancelled() => None,
        }
    }

    /// Drives `run`, reporting progress to a client that asked for it.
    async fn with_progress(
        &self,
        run: futures::future::BoxFuture<'_, RunResult>,
        budget_ms: Option<u64>,
        ctx: &RequestContext<RoleServer>,
    ) -> RunResult {
        let Some(token) = ctx.meta.get_progress_token() else {
            return run.await;
        };
        let started = Instant::now();
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
        tokio::pin!(run);
        loop {
            tokio::select! {
                r = &mut run => return r,
                _ = tick.tick() => {
                    let secs = started.elapsed().as_secs_f64();
                    let mut p = ProgressNotificationParam::new(token.clone(), secs)
                        .with_message(format!("running for {:.0} s", secs));
                    if let Some(ms) = budget_ms {
                        p = p.with_total(ms as f64 / 1e3);
                    }
                    // A client that stopped reading loses its progress
                    // notes, not the run.
                    let _ = tokio::time::timeout(
                        Duration::from_millis(200),
                        ctx.peer.notify_progress(p),
                    )
                    .await;
                }
            }
        }
    }
}

/// The result of a canceled run (the SDK drops the answer; it is what an
/// audit records).
fn canceled(iso: &crate::tier::Isolation) -> RunResult {
    let mut r = RunResult::refused(
        String::new(),
        iso.clone(),
        "canceled",
        "the client canceled the request",
    );
    r.status = Status::Canceled;
    r
}
