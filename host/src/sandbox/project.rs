//! Projects: files placed in a workspace, then shell steps run in order in
//! it, then named files read back — in a workspace of their own
//! ([`Sandbox::run_project_as`]) or in a session's
//! ([`Sandbox::run_project_in_session`]).
//!
//! Guarantees: every step is a fresh instance of the shell guest (one
//! process per command, as on a machine), over the same workspace; the
//! steps share one wall-time budget (the request's, from the first step);
//! a step ends the project unless it exits 0; a placement failure runs no
//! step (`setup_failed`); the artifacts are read after the last step that
//! ran, in request order, absent ones left out; a refusal before anything
//! ran is reported as one, with nothing run.

use super::Sandbox;
use crate::grant::GrantSet;
use crate::live_session::SessionOptions;
use crate::run::{Artifact, ErrorInfo, InputFile, Language, RunRequest, RunResult, Status};
use crate::session::Turn;
use crate::tier::Isolation;
use std::time::{Duration, Instant};

/// At most this many steps in one project (the protocol's client sends 20).
pub const MAX_STEPS: usize = 64;

/// A project: what to place, what to run, what to read back.
#[derive(Debug, Clone, Default)]
pub struct ProjectRequest {
    /// Files placed in the workspace before the first step.
    pub files: Vec<InputFile>,
    /// Shell text, one step each, run in order.
    pub steps: Vec<String>,
    /// Workspace paths read back after the last step that ran.
    pub capture: Vec<String>,
    /// Grant profiles the steps' programs may call through.
    pub grants: Vec<String>,
    /// Limits lowering the operator's envelope; `wall_time_ms` bounds the
    /// whole project.
    pub limits: crate::envelope::Limits,
    /// The caller's isolation floor.
    pub minimum_isolation: Option<crate::tier::Tier>,
}

/// How a project ended, as the protocol names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProjectOutcome {
    /// Every step that ran, ran to its end (a non-zero exit is a step's
    /// outcome, not the project's).
    Completed,
    /// No step began: a file could not be placed, or the run was refused.
    SetupFailed,
    /// The wall time ended a step.
    TimedOut,
    /// The sandbox failed under a step (its worker was lost).
    RunnerFailed,
}

/// One step that ran.
#[derive(Debug)]
pub struct StepRun {
    /// The step's text, as given.
    pub command: String,
    /// The step, as a run of the shell guest. Its `artifacts` and
    /// `captured` are empty: the files a project answers are the final
    /// step's, in [`ProjectResult::captured`].
    pub result: RunResult,
}

/// What a project did.
#[derive(Debug)]
pub struct ProjectResult {
    /// How it ended.
    pub outcome: ProjectOutcome,
    /// Why, when it did not complete.
    pub detail: String,
    /// Why nothing ran, when the request was refused before any step
    /// (its `error` names the reason, as a run's would).
    pub refused: Option<RunResult>,
    /// The steps that ran, in order.
    pub steps: Vec<StepRun>,
    /// The named files that exist after the last step, in request order.
    pub captured: Vec<Artifact>,
    /// Some named files were left out for the artifact caps.
    pub artifacts_truncated: bool,
    /// The isolation the steps ran at.
    pub isolation: Isolation,
    /// The shell guest's identity.
    pub guest: Option<String>,
    /// Nothing ran because the project's files could not be placed (the
    /// protocol's `setup_failed`), as opposed to a request refused before
    /// any placement was tried (`refused` says why in both cases).
    pub placement_failed: bool,
}

impl ProjectResult {
    fn refused(r: RunResult) -> ProjectResult {
        ProjectResult {
            outcome: ProjectOutcome::SetupFailed,
            detail: r
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_default(),
            isolation: r.isolation.clone(),
            guest: r.guest.clone(),
            refused: Some(r),
            steps: Vec::new(),
            captured: Vec::new(),
            artifacts_truncated: false,
            placement_failed: false,
        }
    }
}

/// A check of a project request that needs no guest.
fn check(req: &ProjectRequest, env: &crate::envelope::Envelope) -> Result<(), ErrorInfo> {
    let bad = |m: String| {
        Err(ErrorInfo {
            code: "invalid_request".into(),
            message: m,
        })
    };
    if req.steps.is_empty() {
        return bad("a project needs a step".into());
    }
    if req.steps.len() > MAX_STEPS {
        return bad(format!("a project has at most {MAX_STEPS} steps"));
    }
    // The steps are the project's code: together they fit the code cap,
    // as one run's code does.
    let total: u64 = req.steps.iter().map(|s| s.len() as u64).sum();
    if total > env.code_bytes {
        return bad(format!(
            "the project's steps are {total} bytes together; the code limit is {}",
            env.code_bytes
        ));
    }
    Ok(())
}

/// What runs each step: a fresh workspace's live session, or a session of
/// the table.
enum Place<'a> {
    Own(Box<dyn crate::live_session::LiveSession>),
    Session { caller: &'a str, id: &'a str },
}

impl Sandbox {
    /// Runs a project in a workspace of its own, for `caller`.
    pub async fn run_project_as(&self, caller: &str, req: &ProjectRequest) -> ProjectResult {
        let run_id = crate::run::new_run_id();
        let refuse = |code: &str, message: String| {
            ProjectResult::refused(RunResult::refused(
                run_id.clone(),
                self.isolation(),
                code,
                message,
            ))
        };
        let env = match self.envelope.lowered_by(&req.limits) {
            Ok(env) => env,
            Err(e) => return refuse("invalid_limits", e.to_string()),
        };
        if let Err(e) = check(req, &env) {
            return refuse(&e.code, e.message);
        }
        let probe = RunRequest {
            limits: req.limits,
            minimum_isolation: req.minimum_isolation,
            ..RunRequest::default()
        };
        let deadline = self.deadline_of(&probe);
        let shell = match self.interpreter_by(Language::Shell, None, deadline).await {
            Ok(g) => g,
            Err(e) => return refuse(&e.code, e.message),
        };
        if let Err(e) = self.provider.ready(deadline).await {
            return refuse(&e.code, e.message);
        }
        if let Err(e) = self.check_provider(&probe) {
            return refuse(&e.code, e.message);
        }
        let opts = SessionOptions {
            keep_on_failure: true,
            ..SessionOptions::single(shell.clone())
        };
        let live = match self.provider.open_session(caller, &opts, &env).await {
            Ok(l) => l,
            Err(e) => {
                let mut r = RunResult::refused(run_id, self.isolation(), &e.code, e.message);
                r.guest = Some(shell.identity().to_owned());
                return ProjectResult::refused(r);
            }
        };
        let mut place = Place::Own(live);
        let out = self.steps(&mut place, caller, req, &env).await;
        // Dropped here, not on the reaper thread: a wrapped provider's
        // worker (and the caller's share of the pool) is given back before
        // the answer, so the caller's next project finds it free.
        drop(place);
        out
    }

    /// Runs a project in `caller`'s session `session_id` (which must have
    /// the shell guest), on its files, each step in its turn.
    pub async fn run_project_in_session(
        &self,
        caller: &str,
        session_id: &str,
        req: &ProjectRequest,
    ) -> ProjectResult {
        let run_id = crate::run::new_run_id();
        let env = match self.envelope.lowered_by(&req.limits) {
            Ok(env) => env,
            Err(e) => {
                return ProjectResult::refused(RunResult::refused(
                    run_id,
                    self.isolation(),
                    "invalid_limits",
                    e.to_string(),
                ));
            }
        };
        if let Err(e) = check(req, &env) {
            return ProjectResult::refused(RunResult::refused(
                run_id,
                self.isolation(),
                &e.code,
                e.message,
            ));
        }
        let mut place = Place::Session {
            caller,
            id: session_id,
        };
        self.steps(&mut place, caller, req, &env).await
    }

    /// The steps of `req` in `place`, in order, under one wall-time budget.
    async fn steps(
        &self,
        place: &mut Place<'_>,
        caller: &str,
        req: &ProjectRequest,
        env: &crate::envelope::Envelope,
    ) -> ProjectResult {
        let started = Instant::now();
        let budget = Duration::from_millis(env.wall_time_ms);
        let mut result = ProjectResult {
            outcome: ProjectOutcome::Completed,
            detail: String::new(),
            refused: None,
            steps: Vec::new(),
            captured: Vec::new(),
            artifacts_truncated: false,
            isolation: self.isolation(),
            guest: None,
            placement_failed: false,
        };
        // One budget of fuel and output for the whole project, as for one
        // run: each step gets what the steps before it left.
        let (mut fuel_left, mut stdout_left, mut stderr_left) =
            (env.fuel, env.stdout_bytes, env.stderr_bytes);
        for (i, step) in req.steps.iter().enumerate() {
            let left = budget.saturating_sub(started.elapsed());
            let last = i + 1 == req.steps.len();
            let mut limits = req.limits;
            // At least a millisecond: a step with no time left times out.
            limits.wall_time_ms = Some(u64::try_from(left.as_millis()).unwrap_or(u64::MAX).max(1));
            // At least one unit (a limit of 0 is refused): a step with no
            // fuel left ends out of fuel, one with no output left is cut.
            limits.fuel = Some(fuel_left.max(1));
            limits.stdout_bytes = Some(stdout_left.max(1));
            limits.stderr_bytes = Some(stderr_left.max(1));
            let step_req = RunRequest {
                language: Some(Language::Shell),
                code: Some(step.clone()),
                files: if i == 0 {
                    req.files.clone()
                } else {
                    Vec::new()
                },
                capture: req.capture.clone(),
                grants: req.grants.clone(),
                limits,
                minimum_isolation: req.minimum_isolation,
                ..RunRequest::default()
            };
            let r = match place {
                Place::Own(live) => {
                    // The floor, immediately before each step.
                    if let Err(e) = self.check_provider(&step_req) {
                        let r = RunResult::refused(
                            crate::run::new_run_id(),
                            self.isolation(),
                            &e.code,
                            e.message,
                        );
                        if i == 0 {
                            return ProjectResult::refused(r);
                        }
                        result.outcome = ProjectOutcome::RunnerFailed;
                        result.detail = r.error.map(|e| e.message).unwrap_or_default();
                        break;
                    }
                    let step_env = match self.envelope.lowered_by(&step_req.limits) {
                        Ok(e) => e,
                        Err(e) => {
                            return ProjectResult::refused(RunResult::refused(
                                crate::run::new_run_id(),
                                self.isolation(),
                                "invalid_limits",
                                e.to_string(),
                            ));
                        }
                    };
                    let grants = match GrantSet::resolve(
                        &self.grants,
                        &step_req.grants,
                        caller,
                        Duration::from_millis(step_env.wall_time_ms),
                    ) {
                        Ok(g) => g,
                        Err(e) => {
                            return ProjectResult::refused(RunResult::refused(
                                crate::run::new_run_id(),
                                self.isolation(),
                                e.code(),
                                e.to_string(),
                            ));
                        }
                    };
                    let iso = self.provider.isolation();
                    live.eval(
                        0,
                        &step_req,
                        &step_env,
                        grants,
                        iso,
                        crate::run::new_run_id(),
                    )
                    .await
                    .result
                }
                Place::Session { caller, id } => {
                    self.evaluate(caller, id, &step_req, Turn::Wait)
                        .await
                        .result
                }
            };
            if r.status == Status::Refused {
                if i == 0 {
                    // The files are placed with the first step: a request
                    // error there is theirs.
                    let placement =
                        !req.files.is_empty() && r.error_code() == Some("invalid_request");
                    let mut p = ProjectResult::refused(r);
                    p.placement_failed = placement;
                    return p;
                }
                result.outcome = ProjectOutcome::RunnerFailed;
                result.detail = r.error.map(|e| e.message).unwrap_or_default();
                break;
            }
            let mut r = r;
            fuel_left = fuel_left.saturating_sub(r.usage.fuel.unwrap_or(0));
            stdout_left =
                stdout_left.saturating_sub(r.stdout_bytes.len().max(r.stdout.len()) as u64);
            stderr_left =
                stderr_left.saturating_sub(r.stderr_bytes.len().max(r.stderr.len()) as u64);
            result.isolation = r.isolation.clone();
            result.guest = r.guest.clone();
            let ended = match r.status {
                Status::Ok => r.exit_code.unwrap_or(0) != 0,
                Status::Timeout => {
                    result.outcome = ProjectOutcome::TimedOut;
                    result.detail = "the project's wall time ran out".into();
                    true
                }
                Status::WorkerLost => {
                    result.outcome = ProjectOutcome::RunnerFailed;
                    result.detail = r
                        .error
                        .as_ref()
                        .map(|e| e.message.clone())
                        .unwrap_or_default();
                    true
                }
                _ => true,
            };
            if ended || last {
                result.captured = std::mem::take(&mut r.captured);
                result.artifacts_truncated = r.artifacts_truncated;
            }
            // Only the final step's files are answered: an earlier step's
            // are dropped now, so that a project holds one step's files at
            // a time, not 64 of them.
            r.captured.clear();
            r.artifacts.clear();
            r.artifacts_refused.clear();
            result.steps.push(StepRun {
                command: step.clone(),
                result: r,
            });
            if ended {
                break;
            }
        }
        result
    }
}
