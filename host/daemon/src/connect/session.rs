//! `OpenSession`, `SessionRun` and `CloseSession`: the protocol's sessions,
//! their turns and their record chains.

use super::*;

pub(super) fn session_id(m: &Msg<'_>) -> Result<String, ConnectError> {
    m.str("sessionId").map_err(|e| invalid(e.0))
}

/// The answer for a session that is not (or no longer) this caller's to
/// use: its end when the library remembers one, else `NOT_FOUND` — the
/// same for an unknown id and another caller's.
pub(super) fn gone(app: &App, caller: &Caller, id: &str) -> ConnectError {
    match app.sandbox.session_ended(&caller.id, id) {
        Some(end) => ConnectError::session_ended(End::of(end), end.as_str()),
        None => ConnectError::session_ended(End::NotFound, ""),
    }
}

/// [`gone`] for a session this node has never held: in a fleet, one of a
/// lost node's is `BOUNDARY_FAILED` (its node died or restarted) or
/// `SHUTDOWN` (its node drained), which plimsoll-client raises as
/// `SessionEndedError`; one whose node is alive is `unavailable`, to try
/// again; anything else `NOT_FOUND`.
pub(super) async fn gone_from_here(app: &App, caller: &Caller, id: &str) -> ConnectError {
    if app.sandbox.session_ended(&caller.id, id).is_some() {
        return gone(app, caller, id);
    }
    match app.whereabouts(id).await {
        crate::fleet::Whereabouts::Unknown => gone(app, caller, id),
        crate::fleet::Whereabouts::Elsewhere => ConnectError::refused(
            "unavailable",
            Reason::Capacity,
            "the session's node is alive but this call reached another; try again",
        ),
        crate::fleet::Whereabouts::Lost(why) => {
            app.metrics.session_lost(why.as_str());
            let end = match why {
                crate::fleet::Lost::NodeDrained => End::Shutdown,
                _ => End::BoundaryFailed,
            };
            ConnectError::session_ended(end, why.as_str())
        }
    }
}

/// `caller`'s protocol session `id` on this node: one open (or ended)
/// here, or one its draining node handed over, taken now; else the answer
/// of [`gone_from_here`].
async fn chained_here(
    app: &App,
    caller: &Caller,
    id: &str,
) -> Result<std::sync::Arc<crate::service::sessions::Chained>, ConnectError> {
    if !valid_session_id(id) {
        return Err(gone(app, caller, id));
    }
    if let Some(s) = app.chains.get(&caller.id, id) {
        return Ok(s);
    }
    use crate::service::handover::Adopted;
    match app
        .adopt_if_handed_over(caller, id)
        .await
        .map_err(from_api)?
    {
        Adopted::Here => app
            .chains
            .get(&caller.id, id)
            .ok_or_else(|| gone(app, caller, id)),
        Adopted::Unmovable => {
            app.metrics
                .session_lost(crate::fleet::Lost::NodeDrained.as_str());
            Err(ConnectError::session_ended(
                End::Shutdown,
                crate::fleet::Lost::NodeDrained.as_str(),
            ))
        }
        Adopted::Elsewhere => Err(ConnectError::refused(
            "unavailable",
            Reason::Capacity,
            "the session's node is alive but this call reached another; try again",
        )),
        Adopted::Nothing => Err(gone_from_here(app, caller, id).await),
    }
}

pub(super) async fn open_session(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
    started: Instant,
) -> Result<Value, ConnectError> {
    let bad = |e: json::Invalid| invalid(e.0);
    let env = Envelope::read(m)?;
    let hint = m.strs("languages").map_err(bad)?;
    let mut start = Vec::new();
    for l in &hint {
        match l.as_str() {
            "python" => start.push(0),
            "javascript" => start.push(1),
            _ => return Err(invalid("languages may name only javascript and python")),
        }
    }
    start.sort_unstable();
    start.dedup();
    let owner = m.str("owner").map_err(bad)?;
    let digest = owner.len() == 64 && owner.bytes().all(|b| b.is_ascii_hexdigit());
    if !owner.is_empty() && !digest {
        return Err(invalid(
            "owner must be the client's owner digest (64 hex digits)",
        ));
    }
    let ms = |name: &str| -> Result<Option<Duration>, ConnectError> {
        let v = m.int(name, 0, u32::MAX.into()).map_err(bad)?;
        Ok((v > 0).then(|| Duration::from_millis(v as u64)))
    };
    let (lifetime, idle_timeout) = (ms("lifetimeMs")?, ms("idleTimeoutMs")?);
    if !app.sandbox.supports_sessions() {
        return Err(unsupported(
            "this daemon's provider offers no sessions (the `disabled` provider, or a wrapper whose workers are not verified)",
        ));
    }
    let (py, js) = match (
        app.sandbox.interpreter_for(Language::Python, None),
        app.sandbox.interpreter_for(Language::Javascript, None),
    ) {
        (Ok(py), Ok(js)) => (py, js),
        // A guest still compiling is a capacity refusal to retry, not a
        // missing feature.
        (Err(e), _) | (_, Err(e)) if e.code == plimsoll::sandbox::WARMING_UP => {
            return Err(from_api(ApiError::new(&e.code, e.message)));
        }
        _ => return Err(unsupported("sessions need both interpreters")),
    };
    let mut guests = vec![py, js];
    // The shell that runs the session's projects (every Workspace call),
    // over the same files; it starts with its first step.
    match app.sandbox.interpreter_for(Language::Shell, None) {
        Ok(shell) => guests.push(shell),
        Err(e) if e.code == plimsoll::sandbox::WARMING_UP => {
            return Err(from_api(ApiError::new(&e.code, e.message)));
        }
        Err(_) => {}
    }
    let software = session_identity(app);
    env.check_software(&software)?;
    let per_owner = app.max_sessions_per_owner as usize;
    let open = SessionOpen {
        req: RunRequest {
            limits: env.limits(caller),
            minimum_isolation: env.floor,
            ..RunRequest::default()
        },
        opts: Some(SessionOptions {
            guests,
            start,
            keep_on_failure: true,
            lifetime,
            idle_timeout,
            owner: (!owner.is_empty() && per_owner > 0).then(|| (owner.clone(), per_owner)),
        }),
        protocol: Some("connect"),
        trace_id: env.trace_id.clone(),
        software: Some(software.clone()),
    };
    let info = app
        .open_session(caller, open, started)
        .await
        .map_err(from_api)?;
    let fp = crate::service::fingerprint(&info.session_id);
    app.chains.insert(
        info.session_id.clone(),
        Chained {
            caller: caller.id.clone(),
            fingerprint: fp.clone(),
            software_identity: software.clone(),
            chain: Default::default(),
        },
    );
    let iso = app.sandbox.isolation();
    let expires = now_ms().saturating_add(i64::try_from(info.lifetime_ms).unwrap_or(i64::MAX));
    Ok(json!({
        "sessionId": info.session_id,
        "session": fp,
        "sandbox": iso.provider,
        "isolation": iso.tier.as_str(),
        "softwareIdentity": software,
        "expiresUnixMs": expires.to_string(),
        "idleTimeoutMs": info.idle_timeout_ms.min(u32::MAX.into()),
    }))
}

pub(super) async fn session_run(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
    started: Instant,
    pre: PreLease,
) -> Result<Value, ConnectError> {
    let env = Envelope::read(m)?;
    let id = session_id(m)?;
    let payload = payload(m)?;
    let work = match &payload {
        Payload::Cell {
            language,
            code,
            files,
        } => {
            let language = match language.as_str() {
                "python" => Language::Python,
                "javascript" => Language::Javascript,
                _ => return Err(invalid("a cell's language is javascript or python")),
            };
            if code.is_empty() {
                return Err(invalid("a cell needs code"));
            }
            Work::Cell {
                language,
                code: code.clone(),
                files: files.clone(),
            }
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
            Work::Project {
                files: files.clone(),
                steps: steps.clone(),
                artifacts: artifacts.clone(),
                grant_profile: grant_profile.clone(),
            }
        }
        Payload::Javascript {
            code,
            grant_profile,
        } => Work::Javascript {
            code: code.clone(),
            grant_profile: grant_profile.clone(),
        },
        Payload::None => return Err(invalid("the payload is empty")),
        Payload::Module { .. } => {
            return Err(unsupported("this daemon runs no modules"));
        }
    };
    let facts = env.facts(&payload);
    let session = chained_here(app, caller, &id).await?;
    env.check_software(&session.software_identity)?;
    let mut req = match &work {
        Work::Cell {
            language,
            code,
            files,
        } => RunRequest {
            language: Some(*language),
            code: Some(code.clone()),
            files: input_files(files),
            ..RunRequest::default()
        },
        Work::Project {
            files,
            steps,
            artifacts,
            grant_profile,
        } => RunRequest {
            language: Some(Language::Shell),
            code: Some(steps.join("\n")),
            files: input_files(files),
            capture: artifacts.clone(),
            grants: profiles(grant_profile),
            ..RunRequest::default()
        },
        Work::Javascript {
            code,
            grant_profile,
        } => RunRequest {
            language: Some(Language::Shell),
            code: Some(node_script(code)),
            grants: profiles(grant_profile),
            ..RunRequest::default()
        },
    };
    if !matches!(work, Work::Cell { .. })
        && app.sandbox.interpreter_for(Language::Shell, None).is_err()
    {
        return Err(unsupported(
            "this daemon has no shell guest: a session runs cells only",
        ));
    }
    check_profiles(caller, &req.grants).map_err(from_api)?;
    req.limits = env.limits(caller);
    req.minimum_isolation = env.floor;
    // Admitted before it waits, so that a caller's calls queued on its
    // sessions count against its own concurrency cap: the queue is bounded
    // per caller, and no one else's runs wait for it.
    let permit = app
        .admit_run_with(caller, &mut req, pre)
        .await
        .map_err(from_api)?;
    // One call at a time, in arrival order; the chain moves under it.
    let mut chain = session.chain.lock().await;
    if !app.sandbox.session_open(&caller.id, &id) {
        return Err(gone(app, caller, &id));
    }
    let started_ms = now_ms();
    let (summary, result, setup_failed) = match &work {
        Work::Cell { .. } => {
            let ev = app
                .sandbox
                .evaluate(&caller.id, &id, &req, Turn::Wait)
                .await;
            let result = ResultFacts::Cell {
                output: output(&ev.result, true),
                interpreter_started: ev.interpreter_started,
                interpreter_ended: ev.interpreter_ended,
            };
            (ev.result, result, false)
        }
        Work::Project { .. } | Work::Javascript { .. } => {
            let steps = match &work {
                Work::Project { steps, .. } => steps.clone(),
                _ => vec![req.code.clone().unwrap_or_default()],
            };
            let preq = plimsoll::sandbox::project::ProjectRequest {
                files: req.files.clone(),
                steps,
                capture: req.capture.clone(),
                grants: req.grants.clone(),
                limits: req.limits,
                minimum_isolation: req.minimum_isolation,
            };
            let p = app
                .sandbox
                .run_project_in_session(&caller.id, &id, &preq)
                .await;
            let ran = super::run::project_ran(p, started);
            let setup = matches!(ran.result, ResultFacts::Project { outcome: 2, .. });
            let result = match (&work, ran.result) {
                (Work::Javascript { .. }, ResultFacts::Project { steps, .. }) => {
                    match steps.into_iter().next() {
                        Some(s) => ResultFacts::Javascript(s.output),
                        None => ResultFacts::Javascript(output(&ran.summary, false)),
                    }
                }
                (_, r) => r,
            };
            (ran.summary, result, setup)
        }
    };
    let ended_ms = now_ms();
    app.run_done(permit);
    app.metrics.set_sessions(app.sandbox.session_total());
    let r = &summary;
    let mut audit = app.run_record("session_run", caller, &req, r, started);
    audit.protocol = Some("connect");
    audit.trace_id = env.trace_id.clone();
    if r.status == Status::Refused && !setup_failed {
        let _ = app.settle(caller, &req, r, audit).await;
        if r.error_code() == Some("unknown_session") {
            return Err(gone(app, caller, &id));
        }
        return Err(run_error(r));
    }
    let iso = &r.isolation;
    let evidence = Evidence {
        provider: iso.provider.clone(),
        isolation: iso.tier.as_str().to_owned(),
        environment: r.guest.clone().unwrap_or_default(),
        software_identity: session.software_identity.clone(),
    };
    let base = RunRecord {
        request_sha256: facts.digest(),
        software_rule_id: env.rule_id(),
        started_unix_ms: started_ms,
        ended_unix_ms: ended_ms,
        session: session.fingerprint.clone(),
        sequence: chain.calls + 1,
        previous_sha256: chain.last.clone(),
        ..RunRecord::default()
    };
    let (body, rec) = run_response(&result, &evidence, base.clone(), ended_ms - started_ms);
    audit.record_sha256 = Some(rec.record_sha256.clone());
    if let Err(e) = app.settle(caller, &req, r, audit).await {
        // The cell ran and cannot be answered: its record continues the
        // chain, unanswered, so the client can account for it.
        let unanswered = RunRecord {
            version: record::VERSION,
            unanswered: "unavailable".into(),
            provider: evidence.provider,
            isolation: evidence.isolation,
            environment: evidence.environment,
            software_identity: evidence.software_identity,
            ..base
        }
        .seal();
        chain.calls = unanswered.sequence;
        chain.last = unanswered.record_sha256.clone();
        let mut c = ConnectError::unmarked("unavailable", e.message);
        c.unanswered = Some(Box::new(unanswered));
        return Err(c);
    }
    chain.calls = rec.sequence;
    chain.last = rec.record_sha256.clone();
    let mut out = json!({ "run": body });
    if let Some(end) = app.sandbox.session_ended(&caller.id, &id) {
        out["ended"] = End::of(end).json_name().into();
        out["endDetail"] = end.as_str().into();
    }
    Ok(out)
}

/// What a `SessionRun` asks for.
enum Work {
    /// A cell in the session's notebook interpreter.
    Cell {
        language: Language,
        code: String,
        files: Vec<File>,
    },
    /// Shell steps on the session's files.
    Project {
        files: Vec<File>,
        steps: Vec<String>,
        artifacts: Vec<String>,
        grant_profile: String,
    },
    /// A script in a fresh JavaScript instance on the session's files
    /// (`node -e`, started by the shell).
    Javascript { code: String, grant_profile: String },
}

fn profiles(p: &str) -> Vec<String> {
    if p.is_empty() {
        Vec::new()
    } else {
        vec![p.to_owned()]
    }
}

/// The shell text that runs `code` as `node -e` does, the code one
/// single-quoted word (a `'` in it closes, escapes and reopens the quote).
fn node_script(code: &str) -> String {
    format!("node -e '{}'", code.replace('\'', "'\\''"))
}

pub(super) async fn close_session(
    app: &App,
    caller: &Caller,
    m: &Msg<'_>,
) -> Result<Value, ConnectError> {
    let id = session_id(m)?;
    let session = chained_here(app, caller, &id).await?;
    // After any call in progress: its record is the last.
    let chain = session.chain.lock().await;
    let end = if app.sandbox.close_session(&caller.id, &id) {
        End::Closed
    } else {
        match app.sandbox.session_ended(&caller.id, &id) {
            Some(e) => End::of(e),
            None => End::Expired,
        }
    };
    app.chains.remove(&id);
    app.metrics.set_sessions(app.sandbox.session_total());
    // The session is closed whatever happens to the record; a failed write
    // still marks the log unhealthy, which stops further runs.
    app.audit_close(caller, &id, Some("connect")).await;
    let mut out = json!({
        "session": session.fingerprint,
        "ended": end.json_name(),
    });
    if chain.calls > 0 {
        out["calls"] = chain.calls.to_string().into();
        out["lastRecordSha256"] = chain.last.clone().into();
    }
    Ok(out)
}
