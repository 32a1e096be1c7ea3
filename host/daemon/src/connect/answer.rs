//! A finished run in the protocol's terms: outputs and exit codes, the
//! result JSON, the evidence and the sealed record.

use super::*;

/// A finished run's output in the protocol's terms (docs/protocol.md has
/// the table): the guest's raw bytes, its exit code, and for a stop the
/// host imposed a non-zero code with the reason on stderr.
pub(super) fn output(r: &RunResult, notebook: bool) -> Output {
    let mut stdout = r.stdout_bytes.clone();
    let mut stderr = r.stderr_bytes.clone();
    let note = |stderr: &mut Vec<u8>, text: &str| {
        if !text.is_empty() && !String::from_utf8_lossy(stderr).contains(text) {
            if !stderr.is_empty() && !stderr.ends_with(b"\n") {
                stderr.push(b'\n');
            }
            stderr.extend_from_slice(text.as_bytes());
            if !text.ends_with('\n') {
                stderr.push(b'\n');
            }
        }
    };
    let message = r.error.as_ref().map(|e| e.message.as_str()).unwrap_or("");
    let (exit_code, timed_out) = match r.status {
        Status::Ok => {
            if notebook && let Some(v) = r.result.as_deref().filter(|v| !v.is_empty()) {
                stdout.extend_from_slice(v.as_bytes());
                stdout.push(b'\n');
            }
            (r.exit_code.unwrap_or(0), false)
        }
        Status::Error => {
            // A script's non-zero status is its own outcome: what it
            // printed says why.
            if r.error_code() != Some(plimsoll::run::EXIT_STATUS) {
                note(&mut stderr, message);
            }
            (
                if notebook {
                    1
                } else {
                    r.exit_code.filter(|c| *c != 0).unwrap_or(1)
                },
                false,
            )
        }
        Status::Timeout => {
            note(&mut stderr, "plimsoll: the run's time ran out");
            (124, true)
        }
        other => {
            let code = match other {
                Status::CpuExhausted => 152,
                Status::MemoryExhausted => 137,
                Status::DiskExhausted => 153,
                Status::OutputTruncated => 141,
                _ => 134,
            };
            note(
                &mut stderr,
                &format!("plimsoll: {}: {message}", other.as_str()),
            );
            (code, false)
        }
    };
    Output {
        exit_code,
        timed_out,
        stdout,
        stderr,
        stdout_truncated: r.stdout_truncated,
        stderr_truncated: r.stderr_truncated,
    }
}

pub(super) fn output_json(o: &Output) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    if !o.stdout.is_empty() {
        m.insert("stdout".into(), b64(&o.stdout).into());
    }
    if !o.stderr.is_empty() {
        m.insert("stderr".into(), b64(&o.stderr).into());
    }
    if o.exit_code != 0 {
        m.insert("exitCode".into(), o.exit_code.into());
    }
    for (k, v) in [
        ("timedOut", o.timed_out),
        ("stdoutTruncated", o.stdout_truncated),
        ("stderrTruncated", o.stderr_truncated),
    ] {
        if v {
            m.insert(k.into(), true.into());
        }
    }
    m
}

pub(super) fn result_json(facts: &ResultFacts) -> (&'static str, Value) {
    match facts {
        ResultFacts::Javascript(o) => ("javascript", Value::Object(output_json(o))),
        ResultFacts::Cell {
            output,
            interpreter_started,
            interpreter_ended,
        } => {
            let mut m = output_json(output);
            if *interpreter_started {
                m.insert("interpreterStarted".into(), true.into());
            }
            if *interpreter_ended {
                m.insert("interpreterEnded".into(), true.into());
            }
            ("cell", Value::Object(m))
        }
        ResultFacts::Project {
            outcome,
            outcome_detail,
            artifacts_truncated,
            steps,
            artifacts,
        } => {
            let names = [
                "PROJECT_OUTCOME_UNSPECIFIED",
                "PROJECT_OUTCOME_COMPLETED",
                "PROJECT_OUTCOME_SETUP_FAILED",
                "PROJECT_OUTCOME_TIMED_OUT",
                "PROJECT_OUTCOME_PROTOCOL_ERROR",
                "PROJECT_OUTCOME_RUNNER_FAILED",
            ];
            let mut m = serde_json::Map::new();
            if let Some(n) = usize::try_from(*outcome).ok().and_then(|i| names.get(i))
                && *outcome != 0
            {
                m.insert("outcome".into(), (*n).into());
            }
            if !outcome_detail.is_empty() {
                m.insert("outcomeDetail".into(), outcome_detail.clone().into());
            }
            if *artifacts_truncated {
                m.insert("artifactsTruncated".into(), true.into());
            }
            let steps: Vec<Value> = steps
                .iter()
                .map(|s| {
                    let mut o = output_json(&s.output);
                    o.insert("command".into(), s.command.clone().into());
                    if s.duration_ms != 0 {
                        o.insert("durationMs".into(), s.duration_ms.to_string().into());
                    }
                    Value::Object(o)
                })
                .collect();
            if !steps.is_empty() {
                m.insert("steps".into(), steps.into());
            }
            let arts: Vec<Value> = artifacts
                .iter()
                .map(|(p, c)| {
                    let mut o = serde_json::Map::new();
                    o.insert("path".into(), p.clone().into());
                    if !c.is_empty() {
                        o.insert("content".into(), b64(c).into());
                    }
                    Value::Object(o)
                })
                .collect();
            if !arts.is_empty() {
                m.insert("artifacts".into(), arts.into());
            }
            ("project", Value::Object(m))
        }
    }
}

/// The evidence a response and its record state, from one value.
pub(super) struct Evidence {
    pub(super) provider: String,
    pub(super) isolation: String,
    pub(super) environment: String,
    pub(super) software_identity: String,
}

/// A RunResponse: the result, the evidence, and its sealed record.
pub(super) fn run_response(
    facts: &ResultFacts,
    ev: &Evidence,
    mut rec: RunRecord,
    duration_ms: i64,
) -> (Value, RunRecord) {
    rec.version = record::VERSION;
    rec.result_sha256 = facts.digest();
    rec.provider = ev.provider.clone();
    rec.isolation = ev.isolation.clone();
    rec.environment = ev.environment.clone();
    rec.software_identity = ev.software_identity.clone();
    let rec = rec.seal();
    let (kind, body) = result_json(facts);
    let mut m = serde_json::Map::new();
    m.insert(kind.into(), body);
    m.insert("sandbox".into(), ev.provider.clone().into());
    m.insert("isolation".into(), ev.isolation.clone().into());
    if !ev.environment.is_empty() {
        m.insert("environment".into(), ev.environment.clone().into());
    }
    if !ev.software_identity.is_empty() {
        m.insert(
            "softwareIdentity".into(),
            ev.software_identity.clone().into(),
        );
    }
    if duration_ms != 0 {
        m.insert("durationMs".into(), duration_ms.to_string().into());
    }
    m.insert("record".into(), rec.to_json());
    (Value::Object(m), rec)
}

/// A refused or lost run as a Connect error.
pub(super) fn run_error(r: &RunResult) -> ConnectError {
    match r.status {
        Status::Refused => {
            let code = r.error_code().unwrap_or("refused");
            let message = r
                .error
                .as_ref()
                .map(|e| e.message.clone())
                .unwrap_or_default();
            let mut e = from_api(ApiError::new(code, message));
            if matches!(code, "busy" | "session_limit") {
                e.retry_after = Some(1);
            }
            e
        }
        // The worker may have run the code before it was lost.
        _ => ConnectError::unmarked(
            "unavailable",
            "the worker running the code was lost; the code may have run",
        ),
    }
}
