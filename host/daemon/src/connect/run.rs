//! `Run`: one run in a fresh sandbox — JavaScript, or a project (files,
//! steps, artifacts). CodeExecutor's two exact steps run their interpreter
//! directly; any other steps run in the shell guest, each in a fresh
//! instance over the project's workspace.

use super::*;
use plimsoll::sandbox::project::{ProjectOutcome, ProjectRequest, ProjectResult};

/// What ran, for the answer and the record.
pub(super) struct Ran {
    /// The run (for a shell project: its last step, with the whole
    /// project's wall time) that the audit line and the quotas see.
    pub(super) summary: RunResult,
    pub(super) result: ResultFacts,
    /// Nothing ran, and the answer is the summary's error.
    pub(super) failed: bool,
}

pub(super) async fn run(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
    started: Instant,
    pre: PreLease,
) -> Result<Value, ConnectError> {
    let env = Envelope::read(m)?;
    let payload = payload(m)?;
    let facts = env.facts(&payload);
    let (mut req, identity, shape) = match &payload {
        Payload::Javascript {
            code,
            grant_profile,
        } => {
            let identity = identity_of(app, Language::Javascript)
                .ok_or_else(|| unsupported("this daemon has no JavaScript interpreter"))?;
            let mut req = RunRequest::code(Language::Javascript, code.clone());
            if !grant_profile.is_empty() {
                req.grants = vec![grant_profile.clone()];
            }
            (req, identity, Shape::Javascript)
        }
        Payload::Project {
            grant_profile,
            files,
            steps,
            artifacts,
        } => {
            if steps.is_empty() {
                return Err(invalid("a project needs a step"));
            }
            let (language, code, shape) = match steps.as_slice() {
                [one] if one == PYTHON_STEP => (
                    Language::Python,
                    PYTHON_STEP_CODE.to_owned(),
                    Shape::Interpreter(one.clone()),
                ),
                [one] if one == NODE_STEP => (
                    Language::Javascript,
                    node_step_code(),
                    Shape::Interpreter(one.clone()),
                ),
                _ => (
                    Language::Shell,
                    steps.join("\n"),
                    Shape::Shell(steps.clone()),
                ),
            };
            // The project environment is the interpreters and the shell
            // together: one identity (Describe states it) whichever of
            // them runs the steps.
            let guest = identity_of(app, language).ok_or_else(|| {
                unsupported(if language == Language::Shell {
                    "this daemon has no shell guest".to_owned()
                } else {
                    format!("this daemon has no {} interpreter", language.as_str())
                })
            })?;
            let identity = session_identity(app);
            let mut req = RunRequest::code(language, code);
            req.files = input_files(files);
            req.capture = artifacts.clone();
            if !grant_profile.is_empty() {
                req.grants = vec![grant_profile.clone()];
            }
            if language != Language::Shell {
                // The library checks the guest's own identity again
                // immediately before dispatch.
                req.require_identity = Some(guest);
            }
            (req, identity, shape)
        }
        Payload::Module { .. } => {
            return Err(unsupported("this daemon runs no modules"));
        }
        Payload::Cell { .. } => {
            return Err(invalid("a cell runs only in a session (SessionRun)"));
        }
        Payload::None => return Err(invalid("the payload is empty")),
    };
    check_profiles(caller, &req.grants).map_err(from_api)?;
    env.check_software(&identity)?;
    req.limits = env.limits(caller);
    req.minimum_isolation = env.floor;
    if matches!(shape, Shape::Javascript) {
        // The library checks it again immediately before dispatch.
        req.require_identity = Some(identity.clone());
    }
    let permit = app
        .admit_run_with(caller, &mut req, pre)
        .await
        .map_err(from_api)?;
    let started_ms = now_ms();
    let ran = match &shape {
        Shape::Shell(steps) => {
            let preq = ProjectRequest {
                files: req.files.clone(),
                steps: steps.clone(),
                capture: req.capture.clone(),
                grants: req.grants.clone(),
                limits: req.limits,
                minimum_isolation: req.minimum_isolation,
            };
            let p = app.sandbox.run_project_as(&caller.id, &preq).await;
            project_ran(p, started)
        }
        Shape::Interpreter(command) => {
            let r = app.sandbox.run_as(&caller.id, &req).await;
            // On CodeExecutor's fixed steps the step text is the daemon's:
            // a request error is the files' (their placement, or the code
            // file's size), and no step began.
            if r.status == Status::Refused && r.error_code() == Some("invalid_request") {
                let detail = r
                    .error
                    .as_ref()
                    .map(|e| e.message.clone())
                    .unwrap_or_default();
                Ran {
                    failed: false,
                    result: ResultFacts::Project {
                        outcome: 2,
                        outcome_detail: detail,
                        artifacts_truncated: false,
                        steps: Vec::new(),
                        artifacts: Vec::new(),
                    },
                    summary: r,
                }
            } else {
                let mut out = output(&r, false);
                if r.status == Status::Ok && req.language == Some(Language::Javascript) {
                    // `__plimsoll_main` answers with node's exit status.
                    out.exit_code = exit_status_of(&r);
                }
                let result = ResultFacts::Project {
                    outcome: if out.timed_out { 3 } else { 1 },
                    outcome_detail: String::new(),
                    artifacts_truncated: r.artifacts_truncated,
                    steps: vec![Step {
                        command: command.clone(),
                        output: out,
                        duration_ms: r.usage.wall_ms.round() as i64,
                    }],
                    artifacts: r
                        .captured
                        .iter()
                        .map(|a| (a.path.clone(), a.content.as_bytes().to_vec()))
                        .collect(),
                };
                let failed = matches!(r.status, Status::Refused | Status::WorkerLost);
                Ran {
                    summary: r,
                    result,
                    failed,
                }
            }
        }
        Shape::Javascript => {
            let r = app.sandbox.run_as(&caller.id, &req).await;
            let out = output(&r, false);
            let failed = matches!(r.status, Status::Refused | Status::WorkerLost);
            Ran {
                summary: r,
                result: ResultFacts::Javascript(out),
                failed,
            }
        }
    };
    let ended_ms = now_ms();
    app.run_done(permit);
    let r = &ran.summary;
    let mut audit = app.run_record("run", caller, &req, r, started);
    audit.protocol = Some("connect");
    audit.trace_id = env.trace_id.clone();
    if ran.failed {
        app.settle(caller, &req, r, audit).await.map_err(from_api)?;
        return Err(run_error(r));
    }
    let iso = &r.isolation;
    let ev = Evidence {
        provider: iso.provider.clone(),
        isolation: iso.tier.as_str().to_owned(),
        environment: r.guest.clone().unwrap_or_default(),
        software_identity: identity,
    };
    let rec = RunRecord {
        request_sha256: facts.digest(),
        software_rule_id: env.rule_id(),
        started_unix_ms: started_ms,
        ended_unix_ms: ended_ms,
        ..RunRecord::default()
    };
    let (body, rec) = run_response(&ran.result, &ev, rec, ended_ms - started_ms);
    audit.record_sha256 = Some(rec.record_sha256.clone());
    app.settle(caller, &req, r, audit).await.map_err(from_api)?;
    Ok(body)
}

/// Which runner a `Run` takes.
enum Shape {
    Javascript,
    /// One of CodeExecutor's exact steps, run by its interpreter.
    Interpreter(String),
    /// Shell steps.
    Shell(Vec<String>),
}

/// What `node .plimsoll/code.mjs` runs: the JavaScript guest's program
/// entry point on that file, as an ES module.
fn node_step_code() -> String {
    let spec = json!({
        "mode": "file",
        "file": "/work/.plimsoll/code.mjs",
        "argv": ["/usr/bin/node", "/work/.plimsoll/code.mjs"],
        "cwd": "/work",
        "env": { "HOME": "/work", "PATH": "/usr/local/bin:/usr/bin:/bin" },
    });
    format!("globalThis.__plimsoll_main({spec})")
}

/// The exit status a program entry point answered with (0–255).
fn exit_status_of(r: &RunResult) -> i32 {
    r.result
        .as_deref()
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|v| (0..=255).contains(v))
        .unwrap_or(1)
}

/// A shell project's answer: each step's output, the outcome, the
/// artifacts; and the run the audit line sees.
pub(super) fn project_ran(p: ProjectResult, started: Instant) -> Ran {
    if let Some(r) = p.refused {
        // Placing the files failed: no step began. Any other refusal
        // (too many steps, a step too long, the floor) is the request's
        // error.
        let setup = p.placement_failed;
        let detail = p.detail;
        return Ran {
            failed: !setup,
            result: ResultFacts::Project {
                outcome: if setup { 2 } else { 0 },
                outcome_detail: detail,
                artifacts_truncated: false,
                steps: Vec::new(),
                artifacts: Vec::new(),
            },
            summary: r,
        };
    }
    let outcome = match p.outcome {
        ProjectOutcome::Completed => 1,
        ProjectOutcome::SetupFailed => 2,
        ProjectOutcome::TimedOut => 3,
        ProjectOutcome::RunnerFailed => 5,
    };
    let steps: Vec<Step> = p
        .steps
        .iter()
        .map(|s| Step {
            command: s.command.clone(),
            output: output(&s.result, false),
            duration_ms: s.result.usage.wall_ms.round() as i64,
        })
        .collect();
    let artifacts = p
        .captured
        .iter()
        .map(|a| (a.path.clone(), a.content.as_bytes().to_vec()))
        .collect();
    let mut summary = match p.steps.into_iter().last() {
        Some(s) => s.result,
        None => RunResult::refused(
            plimsoll::run::new_run_id(),
            p.isolation.clone(),
            "runner_failed",
            p.detail.clone(),
        ),
    };
    summary.usage.wall_ms = started.elapsed().as_secs_f64() * 1e3;
    Ran {
        summary,
        failed: false,
        result: ResultFacts::Project {
            outcome,
            outcome_detail: p.detail,
            artifacts_truncated: p.artifacts_truncated,
            steps,
            artifacts,
        },
    }
}
