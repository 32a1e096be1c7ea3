//! `Run`: one run in a fresh sandbox.

use super::*;

pub(super) async fn run(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
    started: Instant,
) -> Result<Value, ConnectError> {
    let env = Envelope::read(m)?;
    let payload = payload(m)?;
    let facts = env.facts(&payload);
    let (mut req, identity, project) = match &payload {
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
            (req, identity, None)
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
            if steps.len() != 1 || steps[0] != PYTHON_STEP {
                return Err(unsupported(
                    "this daemon runs exactly one project step, CodeExecutor's Python step; the JavaScript step (node, ES modules) and shell steps are not supported",
                ));
            }
            let identity = identity_of(app, Language::Python)
                .ok_or_else(|| unsupported("this daemon has no Python interpreter"))?;
            let mut req = RunRequest::code(Language::Python, PYTHON_STEP_CODE);
            req.files = input_files(files);
            req.capture = artifacts.clone();
            if !grant_profile.is_empty() {
                req.grants = vec![grant_profile.clone()];
            }
            (req, identity, Some(steps[0].clone()))
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
    // The library checks it again immediately before dispatch.
    req.require_identity = Some(identity.clone());
    let permit = app.admit_run(caller, &mut req).map_err(from_api)?;
    let started_ms = now_ms();
    let r = app.sandbox.run_as(&caller.id, &req).await;
    let ended_ms = now_ms();
    app.run_done(permit);
    let mut audit = app.run_record("run", caller, &req, &r, started);
    audit.protocol = Some("connect");
    audit.trace_id = env.trace_id.clone();
    if matches!(r.status, Status::Refused | Status::WorkerLost) {
        app.settle(caller, &req, &r, audit)
            .await
            .map_err(from_api)?;
        return Err(run_error(&r));
    }
    let out = output(&r, false);
    let result = match project {
        None => ResultFacts::Javascript(out),
        Some(command) => ResultFacts::Project {
            outcome: if out.timed_out { 3 } else { 1 },
            outcome_detail: String::new(),
            artifacts_truncated: r.artifacts_truncated,
            steps: vec![Step {
                command,
                output: out,
                duration_ms: r.usage.wall_ms.round() as i64,
            }],
            artifacts: r
                .captured
                .iter()
                .map(|a| (a.path.clone(), a.content.as_bytes().to_vec()))
                .collect(),
        },
    };
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
    let (body, rec) = run_response(&result, &ev, rec, ended_ms - started_ms);
    audit.record_sha256 = Some(rec.record_sha256.clone());
    app.settle(caller, &req, &r, audit)
        .await
        .map_err(from_api)?;
    Ok(body)
}
