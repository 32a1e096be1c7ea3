//! Regression tests for the security review of this round (issue #34), on
//! the real `plimsolld`: caps hold against concurrent bursts on every wire,
//! no session id reaches the log at any level, no error quotes a value the
//! request carried, an exhausted worker pool is a capacity refusal, and an
//! idle daemon gives memory back after sessions close.

#[path = "support/daemon.rs"]
mod harness;

use harness::*;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Sends `n` requests at once (each on its own connection, released by one
/// barrier); returns every answer.
fn burst(n: usize, f: impl Fn(usize) -> Resp + Send + Sync + 'static) -> Vec<Resp> {
    let f = Arc::new(f);
    let gate = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (f, gate) = (f.clone(), gate.clone());
            std::thread::spawn(move || {
                gate.wait();
                f(i)
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("a request thread"))
        .collect()
}

const OPEN_PROTOCOL: &str = r#"{"protocol": 4, "minimumIsolation": "process"}"#;

fn protocol(d: &Daemon, token: &str, procedure: &str, body: &str) -> Resp {
    call(
        d.addr,
        "POST",
        &format!("/plimsoll.v1.SandboxService/{procedure}"),
        Some(token),
        Some(body),
    )
}

/// Whether a protocol answer is marked as refused before anything ran
/// (the `NotDispatched` detail the client reads).
fn not_dispatched(r: &Resp) -> bool {
    r.json()["details"]
        .as_array()
        .is_some_and(|d| d.iter().any(|x| x["type"] == "plimsoll.v1.NotDispatched"))
}

fn client_python() -> std::path::PathBuf {
    let p = repo().join("target/clients/venv/bin/python");
    assert!(
        p.is_file(),
        "{} is missing: install the pinned clients with `make clients`",
        p.display()
    );
    p
}

/// Twelve opens at once against each cap: REST and the protocol against
/// the caller's cap of 4, both against the host's total of 6 across
/// callers, and MCP's `open_session` against the caller's cap.
#[test]
fn bursts_of_session_opens_never_pass_a_cap() {
    let d = Arc::new(
        Setup::new(None)
            .clients(r#", "max_sessions": 4, "max_concurrent": 32, "rate_per_min": 6000"#)
            .set("SANDBOX_MAX_SESSIONS", "6")
            .start(),
    );
    let dd = d.clone();
    let rest = burst(12, move |_| {
        call(
            dd.addr,
            "POST",
            "/v1/sessions",
            Some(ALICE),
            Some(r#"{"language": "javascript"}"#),
        )
    });
    let opened: Vec<String> = rest
        .iter()
        .filter(|r| r.status == 201)
        .map(|r| r.json()["session_id"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(opened.len(), 4, "REST opened past the caller's cap of 4");
    for r in rest.iter().filter(|r| r.status != 201) {
        assert_eq!(
            (r.status, r.code()),
            (429, "session_limit".into()),
            "{}",
            r.body
        );
    }
    // Bob's protocol opens meet the host's total of 6 (Alice holds 4).
    let dd = d.clone();
    let proto = burst(12, move |_| {
        protocol(&dd, BOB, "OpenSession", OPEN_PROTOCOL)
    });
    let ok = proto.iter().filter(|r| r.status == 200).count();
    assert_eq!(ok, 2, "the host's total of 6 was passed");
    for r in proto.iter().filter(|r| r.status != 200) {
        assert_eq!(r.status, 429, "{}", r.body);
        assert!(not_dispatched(r), "{}", r.body);
    }
    // Alice frees her places; then MCP's burst meets her cap of 4.
    for id in &opened {
        let r = call(
            d.addr,
            "DELETE",
            &format!("/v1/sessions/{id}"),
            Some(ALICE),
            None,
        );
        assert_eq!(r.status, 204, "{}", r.body);
    }
    let out = Command::new(client_python())
        .arg(repo().join("tests/mcp/burst_checks.py"))
        .env("PLIMSOLL_MCP_URL", format!("http://{}/mcp", d.addr))
        .env("PLIMSOLL_TOKEN", ALICE)
        .env("PLIMSOLL_CAP", "4")
        .output()
        .expect("run the MCP burst");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "MCP over HTTP passed the cap:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// No session id — REST's, the protocol's, MCP's — is in the daemon's log
/// at any level, the MCP SDK's own trace included.
#[test]
fn no_session_id_is_logged_at_any_level() {
    for level in ["info", "debug", "trace", "rmcp=trace,trace"] {
        let d = Setup::new(None).set("PLIMSOLL_LOG", level).start();
        let mut ids = Vec::new();
        let r = call(
            d.addr,
            "POST",
            "/v1/sessions",
            Some(ALICE),
            Some(r#"{"language": "javascript"}"#),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        let id = r.json()["session_id"].as_str().unwrap_or("").to_owned();
        let r = call(
            d.addr,
            "POST",
            &format!("/v1/sessions/{id}/runs"),
            Some(ALICE),
            Some(r#"{"code": "1+1"}"#),
        );
        assert_eq!(r.status, 200, "{}", r.body);
        ids.push(id);
        let r = protocol(&d, ALICE, "OpenSession", OPEN_PROTOCOL);
        assert_eq!(r.status, 200, "{}", r.body);
        ids.push(r.json()["sessionId"].as_str().unwrap_or("").to_owned());
        let out = Command::new(client_python())
            .arg(repo().join("tests/mcp/burst_checks.py"))
            .env("PLIMSOLL_MCP_URL", format!("http://{}/mcp", d.addr))
            .env("PLIMSOLL_TOKEN", BOB)
            .env("PLIMSOLL_CAP", "4")
            .output()
            .expect("run an MCP session");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{stdout}");
        for line in stdout.lines() {
            if let Some(id) = line.strip_prefix("mcp session ") {
                ids.push(id.trim().to_owned());
            }
        }
        assert_eq!(ids.len(), 3, "{stdout}");
        std::thread::sleep(Duration::from_millis(300));
        let log = d.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        assert!(
            !log.is_empty() || level == "info",
            "nothing was logged at {level}"
        );
        for id in &ids {
            assert!(!id.is_empty());
            assert!(
                !log.contains(id.as_str()),
                "a session id is in the log at {level}"
            );
        }
    }
}

/// A marker in every string field of every request kind, each set so that
/// the request is refused: no answer quotes it.
#[test]
fn no_error_quotes_a_value_of_the_request() {
    const M: &str = "MARKq7z";
    let d = Setup::new(None).start();
    let rest_runs = [
        format!(r#"{{"language": "{M}", "code": "1"}}"#),
        format!(r#"{{"language": "python", "code": "1", "guest": "{M}"}}"#),
        format!(r#"{{"component": "{M}"}}"#),
        format!(r#"{{"language": "python", "code": "1", "grants": ["{M}"]}}"#),
        format!(
            r#"{{"language": "python", "code": "1", "files": [{{"path": "../{M}", "content": "x"}}]}}"#
        ),
        format!(
            r#"{{"language": "python", "code": "1", "files": [{{"path": "{M}", "content": "x"}}, {{"path": "{M}", "content": "y"}}]}}"#
        ),
        format!(r#"{{"language": "python", "code": "1", "require_identity": "{M}"}}"#),
        format!(r#"{{"language": "python", "code": "1", "minimum_isolation": "{M}"}}"#),
        format!(r#"{{"language": "python", "code": "1", "limits": {{"{M}": 1}}}}"#),
        format!(r#"{{"language": "python", "code": "1", "{M}": 1}}"#),
        format!(r#"{{"component": "hello", "stdin": "{M}", "grants": ["{M}"]}}"#),
        format!(r#"{{"language": "python", "code": "1", "limits": {{"wall_time_ms": "{M}"}}}}"#),
        // Scalars, which serde quotes in backticks: never echoed either.
        r#"{"language": 987654321, "code": "1"}"#.to_string(),
        r#"{"language": "python", "code": 987654321}"#.to_string(),
        r#"{"language": "python", "code": "1", "limits": {"wall_time_ms": 987654321987654321987}}"#
            .to_string(),
        r#"{"language": "python", "code": "1", "limits": {"fuel": -987654321}}"#.to_string(),
        r#"{"language": "python", "code": "1", "stdin": 987654321.5}"#.to_string(),
        format!(
            r#"{{"language": "python", "code": "1", "files": [{{"path": "a", "content": "x", "{M}": 1}}]}}"#
        ),
    ];
    let mut answers = Vec::new();
    for body in &rest_runs {
        answers.push((body.clone(), run(&d, ALICE, body)));
    }
    for body in [
        format!(r#"{{"language": "python", "guest": "{M}"}}"#),
        format!(r#"{{"language": "{M}"}}"#),
        format!(r#"{{"component": "{M}"}}"#),
    ] {
        let r = call(d.addr, "POST", "/v1/sessions", Some(ALICE), Some(&body));
        answers.push((body, r));
    }
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{M}/runs"),
        Some(ALICE),
        Some(r#"{"code": "1"}"#),
    );
    answers.push(("session path".into(), r));
    // A session's own runs: every string and scalar of the body.
    let r = call(
        d.addr,
        "POST",
        "/v1/sessions",
        Some(ALICE),
        Some(r#"{"language": "javascript"}"#),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let sid = r.json()["session_id"].as_str().unwrap_or("").to_owned();
    for body in [
        format!(r#"{{"code": "1", "language": "{M}"}}"#),
        format!(r#"{{"code": "1", "{M}": true}}"#),
        r#"{"code": 987654321}"#.to_string(),
        format!(r#"{{"code": "1", "files": [{{"path": "/../{M}", "content": "x"}}]}}"#),
        format!(r#"{{"code": "1", "grants": ["{M}"]}}"#),
    ] {
        let r = call(
            d.addr,
            "POST",
            &format!("/v1/sessions/{sid}/runs"),
            Some(ALICE),
            Some(&body),
        );
        answers.push((format!("session run {body}"), r));
    }
    let protocol_calls = [
        (
            "Run",
            format!(r#"{{"protocol": 4, "javascript": {{"code": "1", "grantProfile": "{M}"}}}}"#),
        ),
        (
            "Run",
            format!(
                r#"{{"protocol": 4, "minimumIsolation": "{M}", "javascript": {{"code": "1"}}}}"#
            ),
        ),
        (
            "Run",
            format!(
                r#"{{"protocol": 4, "traceId": "{M}!", "javascript": {{"code": "1", "grantProfile": "{M}"}}}}"#
            ),
        ),
        (
            "Run",
            format!(
                r#"{{"protocol": 4, "softwareRule": {{"mode": "{M}", "identities": ["{M}"]}}, "javascript": {{"code": "1"}}}}"#
            ),
        ),
        (
            "Run",
            format!(
                r#"{{"protocol": 4, "softwareRule": {{"mode": "exact", "identities": ["{M}"]}}, "javascript": {{"code": "1"}}}}"#
            ),
        ),
        (
            "Run",
            format!(
                r#"{{"protocol": 4, "project": {{"steps": ["true"], "files": [{{"path": "../{M}", "content": "x"}}]}}}}"#
            ),
        ),
        (
            "Run",
            format!(
                r#"{{"protocol": 4, "project": {{"steps": ["true"], "files": [{{"path": "{M}", "content": "x"}}, {{"path": "{M}", "content": "y"}}]}}}}"#
            ),
        ),
        (
            "Run",
            r#"{"protocol": 987654321, "javascript": {"code": "1"}}"#.to_string(),
        ),
        (
            "OpenSession",
            format!(r#"{{"protocol": 4, "languages": ["{M}"]}}"#),
        ),
        (
            "OpenSession",
            format!(r#"{{"protocol": 4, "owner": "{M}"}}"#),
        ),
        (
            "SessionRun",
            format!(
                r#"{{"protocol": 4, "sessionId": "{M}", "cell": {{"language": "python", "code": "1"}}}}"#
            ),
        ),
        (
            "SessionRun",
            format!(
                r#"{{"protocol": 4, "sessionId": "{}", "cell": {{"language": "{M}", "code": "1"}}}}"#,
                "0".repeat(32)
            ),
        ),
        (
            "CloseSession",
            format!(r#"{{"protocol": 4, "sessionId": "{M}"}}"#),
        ),
        (M, r#"{"protocol": 4}"#.to_string()),
    ];
    for (procedure, body) in &protocol_calls {
        let r = protocol(&d, ALICE, procedure, body);
        answers.push((format!("{procedure} {body}"), r));
    }
    for (what, r) in &answers {
        // A project whose files cannot be placed is answered (HTTP 200)
        // with the `setup_failed` outcome and no step run, as the client
        // expects; every other request here is refused.
        let setup_failed = r.status == 200 && r.body.contains("PROJECT_OUTCOME_SETUP_FAILED");
        assert!(
            r.status >= 400 || setup_failed,
            "{what} was not refused: {}",
            r.body
        );
        let head: String = r.headers.values().cloned().collect::<Vec<_>>().join(" ");
        assert!(
            !r.body.contains(M) && !r.body.contains("987654321") && !head.contains(M),
            "{what}: the answer quotes the request: {}",
            r.body
        );
    }
    let out = Command::new(client_python())
        .arg(repo().join("tests/mcp/marker_checks.py"))
        .env("PLIMSOLL_MCP_URL", format!("http://{}/mcp", d.addr))
        .env("PLIMSOLL_TOKEN", ALICE)
        .env("PLIMSOLL_MARK", M)
        .output()
        .expect("run the MCP marker checks");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains("all calls answered"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in stdout.lines().filter(|l| l.starts_with("answer ")) {
        assert!(
            !line.contains(M),
            "an MCP answer quotes the request: {line}"
        );
    }
}

/// Behind bubblewrap with two workers (one each run): twelve slow runs at
/// once hold at most two workers, and the rest are told the pool is
/// exhausted — a capacity refusal, 503 with `Retry-After`, marked not
/// dispatched over the protocol.
#[test]
fn an_exhausted_worker_pool_is_a_capacity_refusal() {
    let ok = Command::new("bwrap")
        .args(["--unshare-user", "--ro-bind", "/", "/", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: bubblewrap cannot run here; .ci/run installs it");
        return;
    }
    let d = Arc::new(
        Setup::new(None)
            .clients(r#", "max_concurrent": 32, "rate_per_min": 6000"#)
            .set("SANDBOX_PROVIDER", "wasm+bwrap")
            .set(
                "PLIMSOLL_WORKER_BIN",
                env!("CARGO_BIN_EXE_plimsolld").replace("plimsolld", "plimsoll-worker"),
            )
            .set("PLIMSOLL_WORKER_POOL", "0")
            .set("PLIMSOLL_WORKER_MAX", "2")
            .set("PLIMSOLL_WORKER_MAX_PER_CALLER", "2")
            .set("PLIMSOLL_WORKER_MAX_RUNS", "1")
            .start(),
    );
    let dd = d.clone();
    let answers = burst(12, move |_| {
        run(
            &dd,
            ALICE,
            r#"{"component": "spin", "limits": {"wall_time_ms": 1500}}"#,
        )
    });
    let ran = answers.iter().filter(|r| r.status == 200).count();
    assert!((1..=2).contains(&ran), "{ran} runs held a worker at once");
    for r in answers.iter().filter(|r| r.status != 200) {
        assert_eq!(
            (r.status, r.code()),
            (503, "worker_pool_exhausted".into()),
            "{}",
            r.body
        );
        assert!(r.retry_after() >= 1);
    }
    // The protocol marks it: nothing ran.
    let dd = d.clone();
    let answers = burst(6, move |_| {
        protocol(
            &dd,
            ALICE,
            "Run",
            r#"{"protocol": 4, "minimumIsolation": "process", "timeoutMs": 1500, "javascript": {"code": "for(;;){}"}}"#,
        )
    });
    let refused: Vec<&Resp> = answers.iter().filter(|r| r.status == 503).collect();
    assert!(
        !refused.is_empty(),
        "no refusal among six runs on two workers"
    );
    for r in refused {
        assert!(not_dispatched(r), "{}", r.body);
        assert!(r.retry_after() >= 1);
    }
}

fn rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

/// Ten rounds of full sessions (each holding 20 MB of Python objects and an
/// 8 MB file) leave an idle daemon within 64 MiB of where one round left it.
#[test]
fn an_idle_daemon_gives_memory_back_after_sessions_close() {
    let d = Setup::new(None)
        .clients(r#", "max_sessions": 4, "max_concurrent": 8, "rate_per_min": 6000"#)
        .start();
    let pid = d.child.id();
    let round = || {
        let mut ids = Vec::new();
        for _ in 0..4 {
            let r = call(
                d.addr,
                "POST",
                "/v1/sessions",
                Some(ALICE),
                Some(r#"{"language": "python"}"#),
            );
            assert_eq!(r.status, 201, "{}", r.body);
            ids.push(r.json()["session_id"].as_str().unwrap_or("").to_owned());
        }
        for id in &ids {
            let r = call(
                d.addr,
                "POST",
                &format!("/v1/sessions/{id}/runs"),
                Some(ALICE),
                Some(
                    r#"{"code": "big = [bytes(1000) for _ in range(20000)]\nopen('/work/f.bin', 'wb').write(b'x' * (8 << 20))\nlen(big)"}"#,
                ),
            );
            assert_eq!(r.status, 200, "{}", r.body);
            assert_eq!(r.json()["result"], "20000", "{}", r.body);
        }
        for id in &ids {
            let r = call(
                d.addr,
                "DELETE",
                &format!("/v1/sessions/{id}"),
                Some(ALICE),
                None,
            );
            assert_eq!(r.status, 204, "{}", r.body);
        }
    };
    let settle = || {
        // The housekeeping tick trims once the sessions are gone.
        let t = Instant::now();
        let mut last = rss_bytes(pid);
        while t.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(500));
            last = rss_bytes(pid);
        }
        last
    };
    // The baseline is a fresh daemon that has loaded its Python guest
    // (one plain run) and opened no session.
    let r = call(
        d.addr,
        "POST",
        "/v1/runs",
        Some(ALICE),
        Some(r#"{"language": "python", "code": "1+1"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let fresh = settle();
    for _ in 0..10 {
        round();
    }
    let after_ten = settle();
    eprintln!(
        "RSS of the fresh daemon {} MiB, after ten rounds of full sessions {} MiB",
        fresh >> 20,
        after_ten >> 20
    );
    assert!(
        after_ten <= fresh + (64 << 20),
        "an idle daemon kept {} MiB more than a fresh one after ten rounds",
        (after_ten.saturating_sub(fresh)) >> 20
    );
}

/// The dead-interpreter scenario of the review, on the wire: in a protocol
/// session, a cell holds 1,000 descriptors and a 40 MiB deleted-but-open
/// file; the next cell times out and its interpreter is discarded; the
/// cell after that, in a fresh interpreter, gets every descriptor and byte
/// back (issue #34, finding 3).
#[test]
fn a_protocol_sessions_dead_interpreter_gives_back_its_handles() {
    use base64::Engine;
    let d = Setup::new(None).start();
    let r = protocol(&d, ALICE, "OpenSession", OPEN_PROTOCOL);
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.json()["sessionId"].as_str().unwrap_or("").to_owned();
    let cell = |code: &str, timeout_ms: u32| {
        let body = serde_json::json!({
            "protocol": 4,
            "sessionId": id,
            "timeoutMs": timeout_ms,
            "cell": {"language": "python", "code": code},
        });
        let r = protocol(&d, ALICE, "SessionRun", &body.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
        let c = r.json()["run"]["cell"].clone();
        let out = base64::engine::general_purpose::STANDARD
            .decode(c["stdout"].as_str().unwrap_or(""))
            .unwrap_or_default();
        (c, String::from_utf8_lossy(&out).into_owned())
    };
    let (_, out) = cell(
        "import os\n\
         held = [open('/work/f%d' % i, 'w') for i in range(1000)]\n\
         big = open('/work/big.bin', 'wb')\n\
         big.write(b'x' * (40 << 20)); big.flush()\n\
         os.remove('/work/big.bin')\n\
         print(len(held))",
        10_000,
    );
    assert_eq!(out.trim(), "1000");
    let (c, _) = cell("while True: pass", 300);
    assert_eq!(c["timedOut"], true, "{c}");
    let (c, out) = cell(
        "import os\n\
         held = [open('/work/g%d' % i, 'w') for i in range(1000)]\n\
         f = open('/work/thirty.bin', 'wb'); f.write(b'y' * (30 << 20)); f.close()\n\
         print(len(held), os.path.getsize('/work/thirty.bin'))",
        10_000,
    );
    assert_eq!(out.trim(), "1000 31457280", "{c}");
}
