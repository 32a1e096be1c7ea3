//! End-to-end tests of `plimsolld`: the real binary on loopback ports, a
//! real HTTP client (HTTP/1.1 over a socket, and over rustls for TLS), the
//! real guests, and a real upstream for broker calls.

#[path = "support/daemon.rs"]
mod harness;

use harness::*;
use harness::{tmpfs, upstream};

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ------------------------------------------------------------ auth & scope

#[test]
fn tokens_missing_wrong_and_unscoped_are_refused() {
    let d = Setup::new(None).start();
    let r = call(d.addr, "POST", "/v1/runs", None, Some(JS_ONE_PLUS_ONE));
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.code(), "unauthorized");
    assert_eq!(
        r.headers.get("www-authenticate").map(String::as_str),
        Some("Bearer")
    );

    let wrong = "sk-wrong-token-SECRET-4242";
    let r = run(&d, wrong, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 401);
    assert!(!r.body.contains(wrong), "an error echoed the token");

    let r = run(&d, CAROL, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.code(), "forbidden");

    let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok");
    assert_eq!(r.json()["result"], "2");

    // bob may run, but not with alice's grant profile.
    let r = run(
        &d,
        BOB,
        r#"{"language": "javascript", "code": "1", "grants": ["orders"]}"#,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.code(), "grant_not_allowed");

    // info needs a token; it shows the caller its own limits.
    assert_eq!(call(d.addr, "GET", "/v1/info", None, None).status, 401);
    let r = call(d.addr, "GET", "/v1/info", Some(CAROL), None);
    assert_eq!(r.status, 200, "{}", r.body);
    let info = r.json();
    assert_eq!(info["caller"]["id"], "carol");
    assert_eq!(info["isolation"]["tier"], "process");
    assert!(
        info["guests"]["javascript"]
            .as_str()
            .is_some_and(|g| g.starts_with("quickjs-wasm:sha256:"))
    );
    // Health needs no token.
    assert_eq!(call(d.addr, "GET", "/healthz", None, None).status, 200);
    assert_eq!(call(d.addr, "GET", "/readyz", None, None).status, 200);
}

// ------------------------------------------------------------------ quotas

#[test]
fn the_rate_limit_answers_429_with_retry_after() {
    let d = Setup::new(None).clients(r#", "rate_per_min": 3"#).start();
    for _ in 0..3 {
        assert_eq!(run(&d, ALICE, JS_ONE_PLUS_ONE).status, 200);
    }
    let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.code(), "rate_limited");
    let retry = r.retry_after();
    assert!((1..=60).contains(&retry), "{retry}");
    // Another caller's budget is its own.
    assert_eq!(run(&d, BOB, JS_ONE_PLUS_ONE).status, 200);
}

const SPIN_1S: &str = r#"{"component": "spin", "limits": {"wall_time_ms": 1500}}"#;

/// Starts a request on another thread; returns once it is in flight.
fn in_background(
    addr: SocketAddr,
    token: &'static str,
    body: &'static str,
) -> std::thread::JoinHandle<Resp> {
    let h = std::thread::spawn(move || call(addr, "POST", "/v1/runs", Some(token), Some(body)));
    std::thread::sleep(Duration::from_millis(400));
    h
}

#[test]
fn concurrency_caps_shed_instead_of_queueing() {
    let d = Setup::new(None)
        .clients(r#", "max_concurrent": 1"#)
        .set("PLIMSOLL_MAX_INFLIGHT", "2")
        .start();
    let first = in_background(d.addr, ALICE, SPIN_1S);
    // alice's one slot is taken: 429.
    let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.code(), "concurrency_limit");
    // bob takes the host's second slot; a third run finds the host full: 503.
    let second = in_background(d.addr, BOB, SPIN_1S);
    let r = call(
        d.addr,
        "POST",
        "/v1/runs",
        Some(ALICE),
        Some(JS_ONE_PLUS_ONE),
    );
    assert!(r.status == 429 || r.status == 503, "{}", r.body);
    let first = first.join().expect("first");
    let second = second.join().expect("second");
    assert_eq!(first.json()["status"], "timeout", "{}", first.body);
    assert_eq!(second.json()["status"], "timeout", "{}", second.body);
    // With the slots free again, runs go through.
    assert_eq!(run(&d, ALICE, JS_ONE_PLUS_ONE).status, 200);
    let metrics = call(d.metrics.expect("metrics"), "GET", "/metrics", None, None);
    assert!(
        metrics
            .body
            .contains("plimsoll_shed_requests_total{reason=\"concurrency_limit\"}"),
        "{}",
        metrics.body
    );
}

#[test]
fn the_host_wide_cap_sheds_with_503() {
    let d = Setup::new(None).set("PLIMSOLL_MAX_INFLIGHT", "1").start();
    let first = in_background(d.addr, ALICE, SPIN_1S);
    let r = run(&d, BOB, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.code(), "busy");
    assert!(r.headers.contains_key("retry-after"));
    let _ = first.join();
}

#[test]
fn the_daily_allowance_is_spent_and_survives_a_restart() {
    let setup = Setup::new(None).clients(r#", "cpu_seconds_per_day": 1"#);
    let env = setup.env.clone();
    let mut d = setup.start();
    let r = run(&d, ALICE, SPIN_1S);
    assert_eq!(r.json()["status"], "timeout", "{}", r.body);
    let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.code(), "cpu_allowance_exhausted");
    assert!(r.headers.contains_key("retry-after"));
    assert!(d.sigterm().success());
    // Same state directory, new process: still spent.
    let mut again = Setup::new(None).clients(r#", "cpu_seconds_per_day": 1"#);
    again.env = env;
    let d2 = again.start();
    let r = run(&d2, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.code(), "cpu_allowance_exhausted");
    assert_eq!(run(&d2, BOB, JS_ONE_PLUS_ONE).status, 200);
}

/// libfaketime, preloaded into the daemon to step its wall clock while it
/// runs (Debian package `libfaketime`, which `make setup` installs).
const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

/// The wall clock stepped back two days, then forward three, while the
/// daemon runs (libfaketime; the monotonic clock is left alone, as an NTP
/// step leaves it). Stated behaviour (docs/security-testing.md): every
/// deadline is monotonic, so a run's timeout fires after its own duration
/// whatever the wall clock does; a step back does not hand out a fresh
/// daily allowance; a step forward past midnight starts the new UTC day;
/// every answered run keeps exactly one audit record, stamped with the
/// (stepped) wall time.
#[test]
fn a_wall_clock_step_moves_no_deadline_and_loses_no_audit_record() {
    if !Path::new(LIBFAKETIME).exists() {
        eprintln!(
            "SKIP: {LIBFAKETIME} is missing (apt-get install libfaketime; `make setup` does)"
        );
        return;
    }
    let setup = Setup::new(None).clients(r#", "cpu_seconds_per_day": 1"#);
    // Enough fuel that only the deadline can end the spin, however fast
    // the machine.
    let envelope = setup.file(
        "envelope.json",
        &serde_json::to_string(&plimsoll::Envelope {
            fuel: 1_000_000_000_000,
            ..plimsoll::Envelope::default()
        })
        .expect("json"),
    );
    let setup = setup.set("PLIMSOLL_ENVELOPE_FILE", envelope);
    let clock = setup.file("faketime", "+0");
    let d = setup
        .set("LD_PRELOAD", LIBFAKETIME)
        .set("FAKETIME_TIMESTAMP_FILE", clock.clone())
        .set("FAKETIME_NO_CACHE", "1")
        .set("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        .start();
    let step = |offset: &str| std::fs::write(&clock, offset).expect("step the clock");
    let mut answered: Vec<String> = Vec::new();
    // A 1.5 s run timed with this process's own (unfaked) clocks: the
    // deadline neither fires early nor waits for the wall clock to catch up.
    let spin = |token: &str, answered: &mut Vec<String>| {
        let t = Instant::now();
        let r = run(&d, token, SPIN_1S);
        let took = t.elapsed();
        assert_eq!(r.json()["status"], "timeout", "{}", r.body);
        assert!(
            took >= Duration::from_millis(1400) && took < Duration::from_secs(8),
            "a 1.5 s deadline took {took:?}"
        );
        answered.push(r.json()["run_id"].as_str().expect("run id").to_string());
    };

    spin(ALICE, &mut answered); // alice spends her 1 s allowance
    step("-172800");
    spin(BOB, &mut answered);
    let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(
        r.status, 429,
        "a step back gave a fresh allowance: {}",
        r.body
    );
    assert_eq!(r.code(), "cpu_allowance_exhausted");
    let retry = r.retry_after();
    assert!(
        retry > 2 * 86_400 && retry <= 3 * 86_400,
        "Retry-After {retry} s does not reach the end of the ledger's day"
    );

    step("+259200");
    spin(BOB, &mut answered);
    let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 200, "no new day after a step forward: {}", r.body);
    answered.push(r.json()["run_id"].as_str().expect("run id").to_string());

    // One record per answered run, in order, stamped with the stepped wall
    // time: back two days, then forward three (RFC 3339 UTC sorts as text).
    let audit = d.audit();
    let runs: Vec<(String, String)> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "run")
        .filter_map(|v| Some((v["run_id"].as_str()?.into(), v["time"].as_str()?.into())))
        .collect();
    let ids: Vec<&String> = runs.iter().map(|(id, _)| id).collect();
    assert_eq!(ids, answered.iter().collect::<Vec<_>>(), "{audit}");
    let day = |t: &str| -> u64 {
        humantime::parse_rfc3339(t)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs() / 86_400)
            .unwrap_or_else(|| panic!("audit time {t}"))
    };
    let days: Vec<u64> = runs.iter().map(|(_, t)| day(t)).collect();
    // (One day more or less if the real clock passes midnight meanwhile.)
    assert!(
        days[1] + 2 == days[0] || days[1] + 1 == days[0],
        "the step back is not in the audit times: {days:?}"
    );
    assert!(
        days[2] == days[0] + 3 || days[2] == days[0] + 4,
        "the step forward is not in the audit times: {days:?}"
    );
    assert_eq!(days[2], days[3]);
}

// ---------------------------------------------------------------- sessions

#[test]
fn sessions_keep_state_belong_to_their_caller_and_are_capped() {
    let d = Setup::new(None).clients(r#", "max_sessions": 2"#).start();
    let open = |token: &str| {
        call(
            d.addr,
            "POST",
            "/v1/sessions",
            Some(token),
            Some(r#"{"language": "javascript"}"#),
        )
    };
    let r = open(ALICE);
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["session_id"].as_str().expect("id").to_string();
    let path = format!("/v1/sessions/{id}/runs");
    let r = call(
        d.addr,
        "POST",
        &path,
        Some(ALICE),
        Some(r#"{"code": "globalThis.x = 41; 0"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        d.addr,
        "POST",
        &path,
        Some(ALICE),
        Some(r#"{"code": "x + 1"}"#),
    );
    assert_eq!(r.json()["result"], "42", "{}", r.body);

    // bob cannot use alice's session: it does not exist for him.
    let r = call(d.addr, "POST", &path, Some(BOB), Some(r#"{"code": "x"}"#));
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.code(), "unknown_session");
    let r = call(
        d.addr,
        "DELETE",
        &format!("/v1/sessions/{id}"),
        Some(BOB),
        None,
    );
    assert_eq!(r.status, 404);

    // The cap: alice has one open, may open one more, not a third.
    assert_eq!(open(ALICE).status, 201);
    let r = open(ALICE);
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.code(), "session_limit");
    // bob's sessions are his own count.
    assert_eq!(open(BOB).status, 201);

    // Closing frees a place; the closed id is gone.
    let r = call(
        d.addr,
        "DELETE",
        &format!("/v1/sessions/{id}"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 204);
    assert_eq!(
        call(d.addr, "POST", &path, Some(ALICE), Some(r#"{"code": "1"}"#)).status,
        404
    );
    assert_eq!(open(ALICE).status, 201);
    let audit = d.audit();
    assert!(audit.contains("\"event\":\"session_open\""));
    assert!(audit.contains("\"event\":\"session_run\""));
    assert!(audit.contains("\"event\":\"session_close\""));
}

/// Opens a Python session for `token` over REST; its runs' path.
fn python_session_runs(d: &Daemon, token: &str) -> String {
    let r = call(
        d.addr,
        "POST",
        "/v1/sessions",
        Some(token),
        Some(r#"{"language": "python"}"#),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let v = r.json();
    let id = v["session_id"].as_str().expect("id");
    format!("/v1/sessions/{id}/runs")
}

/// Whether bubblewrap can make namespaces here (it says so loudly when
/// not; CI installs it).
fn bwrap_usable() -> bool {
    let ok = Command::new("bwrap")
        .args(["--unshare-user", "--ro-bind", "/", "/", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: bubblewrap is missing or cannot create namespaces; .ci/run installs it");
    }
    ok
}

/// Behind bubblewrap, over REST: each caller's runs share a worker that is
/// only theirs (checked from the evidence), and sessions keep state in a
/// worker of their caller's.
#[test]
fn behind_bwrap_workers_and_sessions_belong_to_one_caller() {
    if !bwrap_usable() {
        return;
    }
    let d = Setup::new(None)
        .set("SANDBOX_PROVIDER", "wasm+bwrap")
        .set("PLIMSOLL_WORKER_POOL", "1")
        .start();
    let code = r#"{"language": "python", "code": "1+1"}"#;
    let worker = |r: &Resp| {
        assert_eq!(r.status, 200, "{}", r.body);
        let j = r.json();
        assert_eq!(j["status"], "ok", "{}", r.body);
        assert_eq!(j["isolation"]["tier"], "container", "{}", r.body);
        let w = &j["isolation"]["evidence"]["worker"];
        (
            w["worker_id"].as_str().expect("worker id").to_owned(),
            w["caller"].as_str().expect("caller").to_owned(),
            w["runs_before"].as_u64().expect("runs before"),
        )
    };
    let a1 = worker(&run(&d, ALICE, code));
    let a2 = worker(&run(&d, ALICE, code));
    let b1 = worker(&run(&d, BOB, code));
    assert_eq!(
        (a1.1.as_str(), a2.1.as_str(), b1.1.as_str()),
        ("alice", "alice", "bob")
    );
    assert_eq!(a1.0, a2.0, "alice's runs reuse her worker");
    assert_eq!(a2.2, a1.2 + 1);
    assert_ne!(a1.0, b1.0, "bob never gets alice's worker");

    let path = python_session_runs(&d, ALICE);
    let r = call(
        d.addr,
        "POST",
        &path,
        Some(ALICE),
        Some(r#"{"code": "x = 41"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        d.addr,
        "POST",
        &path,
        Some(ALICE),
        Some(r#"{"code": "x + 1"}"#),
    );
    assert_eq!(r.json()["result"], "42", "{}", r.body);
    assert_eq!(
        r.json()["isolation"]["evidence"]["worker"]["caller"],
        "alice"
    );
    let r = call(d.addr, "POST", &path, Some(BOB), Some(r#"{"code": "x"}"#));
    assert_eq!(r.status, 404, "{}", r.body);
}

// ------------------------------------------------------------------- floor

#[test]
fn the_isolation_floor_refuses_before_anything_runs() {
    let d = Setup::new(None).start();
    let r = run(
        &d,
        ALICE,
        r#"{"component": "hello", "minimum_isolation": "kernel"}"#,
    );
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.code(), "insufficient_isolation");
    let run_id = r.json()["run_id"].as_str().expect("run id").to_string();
    let audit = d.audit();
    let line = audit
        .lines()
        .find(|l| l.contains(&run_id))
        .expect("the refusal is audited");
    assert!(line.contains("\"outcome\":\"refused\""), "{line}");
    assert!(line.contains("\"wall_ms\":0.0"), "{line}");

    // Operator-wide floor.
    let d = Setup::new(None)
        .set("SANDBOX_MIN_ISOLATION", "container")
        .start();
    let r = run(&d, ALICE, r#"{"component": "hello"}"#);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.code(), "insufficient_isolation");
}

#[test]
fn the_disabled_provider_runs_nothing() {
    let d = Setup::new(None).unset("SANDBOX_PROVIDER").start();
    let r = run(&d, ALICE, r#"{"component": "hello"}"#);
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.code(), "provider_disabled");
    assert_eq!(call(d.addr, "GET", "/readyz", None, None).status, 503);
}

// ----------------------------------------------------- start-up refusals

#[test]
fn without_a_callers_file_only_insecure_loopback_starts() {
    let (code, err) = Setup::new(None).unset("PLIMSOLL_CLIENTS_FILE").refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("PLIMSOLL_CLIENTS_FILE"), "{err}");

    let (code, err) = Setup::new(None)
        .unset("PLIMSOLL_CLIENTS_FILE")
        .set("PLIMSOLL_INSECURE", "1")
        .set("PLIMSOLL_LISTEN", "0.0.0.0:0")
        .refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("loopback"), "{err}");

    let d = Setup::new(None)
        .unset("PLIMSOLL_CLIENTS_FILE")
        .set("PLIMSOLL_INSECURE", "1")
        .set("PLIMSOLL_LOG", "info")
        .start();
    assert!(
        d.stderr
            .lock()
            .map(|s| s.contains("INSECURE MODE"))
            .unwrap_or(false)
    );
    assert_eq!(
        call(d.addr, "POST", "/v1/runs", None, Some(JS_ONE_PLUS_ONE)).status,
        200
    );
}

#[test]
fn a_plain_listener_off_loopback_is_refused() {
    let (code, err) = Setup::new(None)
        .set("PLIMSOLL_LISTEN", "0.0.0.0:0")
        .refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("no TLS"), "{err}");
    let (code, err) = Setup::new(None)
        .set("PLIMSOLL_METRICS_ADDR", "0.0.0.0:0")
        .refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("metrics"), "{err}");
}

#[test]
fn an_audit_log_that_cannot_be_written_stops_the_start() {
    if !Path::new("/dev/full").exists() {
        eprintln!("SKIP: /dev/full is missing on this machine");
        return;
    }
    let (code, err) = Setup::new(None)
        .set("PLIMSOLL_AUDIT_LOG", "/dev/full")
        .refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("audit log"), "{err}");
}

/// An audit log whose file system fills while the daemon runs: the run
/// whose record cannot be written is not answered with its result (503
/// `audit_unavailable`), every later run is refused before it executes, and
/// no run is ever answered without its record. Recovery is a restart.
#[test]
fn an_audit_log_that_fills_at_run_time_fails_closed() {
    let s = Setup::new(None);
    let small = s.tmp.path().join("small");
    let Some(_mounted) = tmpfs::SmallTmpfs::mount(&small, "size=256k") else {
        return;
    };
    let log = small.join("audit.jsonl");
    let d = s
        .set("PLIMSOLL_AUDIT_LOG", log.display().to_string())
        .start();
    let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 200, "{}", r.body);
    let before = std::fs::read_to_string(&log).expect("log").lines().count();
    // Fill the file system from outside the daemon.
    let mut filler = std::fs::File::create(small.join("filler")).expect("filler");
    while filler.write_all(&[0u8; 4096]).is_ok() {}
    drop(filler);
    // The last page of the log may still hold a record or two; past that,
    // every run is refused.
    let mut answered = 0;
    let mut refused = 0;
    for _ in 0..40 {
        let r = run(&d, ALICE, JS_ONE_PLUS_ONE);
        match r.status {
            200 => {
                assert_eq!(refused, 0, "a run was answered after the log failed");
                answered += 1;
            }
            503 => {
                assert_eq!(r.code(), "audit_unavailable", "{}", r.body);
                refused += 1;
            }
            other => panic!("{other}: {}", r.body),
        }
    }
    assert!(refused >= 30, "answered {answered}, refused {refused}");
    // Every answered run has its record, no refused run has one, and the
    // log ends in a whole line.
    let after = std::fs::read_to_string(&log).expect("log");
    assert_eq!(after.lines().count(), before + answered, "{after}");
    assert!(after.is_empty() || after.ends_with('\n'));
    assert!(
        after
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok())
    );
}

// ---------------------------------------------------------- hardened mode

/// Everything hardened mode asks for that this machine can give: only the
/// provider (in-process `wasm`) falls short.
fn hardened() -> Setup {
    let s = Setup::new(None).clients(
        r#", "rate_per_min": 600, "max_concurrent": 4, "max_sessions": 2, "cpu_seconds_per_day": 3600"#,
    );
    let envelope = serde_json::to_string(&plimsoll::Envelope::default()).expect("json");
    let env_file = s.file("envelope.json", &envelope);
    let audit = s.tmp.path().join("state/audit.jsonl").display().to_string();
    let mut pins = Vec::new();
    for name in ["python", "javascript", "shell", "hello", "spin"] {
        let bytes = std::fs::read(guests_dir().join(format!("{name}.wasm"))).expect("guest");
        let family = match name {
            "python" => "python-wasm",
            "javascript" => "quickjs-wasm",
            "shell" => "shell-wasm",
            _ => "component",
        };
        pins.push(format!(
            "{family}:sha256:{}",
            hex::encode(Sha256::digest(&bytes))
        ));
    }
    s.set("PLIMSOLL_HARDENED", "1")
        .set("PLIMSOLL_ENVELOPE_FILE", env_file)
        .set("PLIMSOLL_AUDIT_LOG", audit)
        .set("PLIMSOLL_GUEST_PINS", pins.join(","))
}

/// Starts `setup` in hardened mode; returns the unmet condition ids.
fn hardened_unmet(setup: Setup) -> BTreeSet<String> {
    let (code, err) = setup.refused();
    assert_ne!(
        code, 0,
        "hardened mode started with the in-process provider: {err}"
    );
    assert!(err.contains("hardened mode"), "{err}");
    let ids = [
        "isolation",
        "callers",
        "insecure",
        "tls",
        "pinned_guests",
        "envelope",
        "rate_limit",
        "concurrency",
        "session_cap",
        "cpu_allowance",
        "audit_log",
        "shared_state",
    ];
    ids.iter()
        .filter(|id| err.contains(&format!("  - {id}:")))
        .map(|s| s.to_string())
        .collect()
}

fn only(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

#[test]
fn hardened_isolation_the_in_process_provider_never_satisfies_it() {
    let (_, err) = hardened().refused();
    assert!(err.contains("can never satisfy hardened mode"), "{err}");
    assert_eq!(hardened_unmet(hardened()), only(&["isolation"]));
}

#[test]
fn hardened_callers_a_callers_file_is_required() {
    let s = hardened().unset("PLIMSOLL_CLIENTS_FILE");
    assert_eq!(hardened_unmet(s), only(&["isolation", "callers"]));
}

#[test]
fn hardened_insecure_is_refused() {
    let s = hardened().set("PLIMSOLL_INSECURE", "1");
    assert_eq!(hardened_unmet(s), only(&["isolation", "insecure"]));
}

#[test]
fn hardened_tls_on_every_non_loopback_listener() {
    let s = hardened().set("PLIMSOLL_LISTEN", "0.0.0.0:0");
    assert!(hardened_unmet(s).contains("tls"));
}

#[test]
fn hardened_pinned_guests_are_required() {
    let s = hardened().unset("PLIMSOLL_GUEST_PINS");
    assert_eq!(hardened_unmet(s), only(&["isolation", "pinned_guests"]));
    let s = hardened().set(
        "PLIMSOLL_GUEST_PINS",
        format!("component:sha256:{}", "0".repeat(64)),
    );
    assert_eq!(hardened_unmet(s), only(&["isolation", "pinned_guests"]));
}

#[test]
fn hardened_envelope_must_be_explicit() {
    let s = hardened().unset("PLIMSOLL_ENVELOPE_FILE");
    assert_eq!(hardened_unmet(s), only(&["isolation", "envelope"]));
}

#[test]
fn hardened_rate_limit_per_caller() {
    let s = hardened()
        .clients(r#", "max_concurrent": 4, "max_sessions": 2, "cpu_seconds_per_day": 3600"#);
    assert_eq!(hardened_unmet(s), only(&["isolation", "rate_limit"]));
}

#[test]
fn hardened_concurrency_cap_per_caller() {
    let s = hardened()
        .clients(r#", "rate_per_min": 60, "max_sessions": 2, "cpu_seconds_per_day": 3600"#);
    assert_eq!(hardened_unmet(s), only(&["isolation", "concurrency"]));
}

#[test]
fn hardened_session_cap_per_caller() {
    let s = hardened()
        .clients(r#", "rate_per_min": 60, "max_concurrent": 4, "cpu_seconds_per_day": 3600"#);
    assert_eq!(hardened_unmet(s), only(&["isolation", "session_cap"]));
}

#[test]
fn hardened_cpu_allowance_per_caller() {
    let s = hardened().clients(r#", "rate_per_min": 60, "max_concurrent": 4, "max_sessions": 2"#);
    assert_eq!(hardened_unmet(s), only(&["isolation", "cpu_allowance"]));
}

#[test]
fn hardened_audit_log_must_be_explicit() {
    let s = hardened().unset("PLIMSOLL_AUDIT_LOG");
    assert_eq!(hardened_unmet(s), only(&["isolation", "audit_log"]));
}

#[test]
fn hardened_shared_state_must_fail_closed() {
    // Refused before the daemon connects to it: nothing listens there.
    let fleet = || {
        hardened()
            .set("PLIMSOLL_NODE_TAG", "0001")
            .set("PLIMSOLL_SHARED_STATE_URL", "redis://127.0.0.1:9/")
    };
    assert_eq!(
        hardened_unmet(fleet()),
        only(&["isolation", "shared_state"])
    );
    let s = fleet().set("PLIMSOLL_SHARED_STATE_FAILURE", "local");
    assert_eq!(hardened_unmet(s), only(&["isolation", "shared_state"]));
    let s = fleet().set("PLIMSOLL_SHARED_STATE_FAILURE", "closed");
    assert_eq!(hardened_unmet(s), only(&["isolation"]));
}

#[test]
fn hardened_lists_every_unmet_condition_at_once() {
    let s = hardened()
        .unset("PLIMSOLL_CLIENTS_FILE")
        .unset("PLIMSOLL_ENVELOPE_FILE")
        .unset("PLIMSOLL_GUEST_PINS")
        .unset("PLIMSOLL_AUDIT_LOG");
    assert_eq!(
        hardened_unmet(s),
        only(&[
            "isolation",
            "callers",
            "pinned_guests",
            "envelope",
            "audit_log"
        ])
    );
}

// --------------------------------------------------------------------- TLS

#[test]
fn tls_handshake_against_a_test_ca() {
    let (ca, leaf, leaf_key) = test_pki();

    let s = Setup::new(None);
    let cert = s.file("cert.pem", &leaf.pem());
    let key = s.file("key.pem", &leaf_key.serialize_pem());
    let d = s
        .set("PLIMSOLL_TLS_CERT", cert)
        .set("PLIMSOLL_TLS_KEY", key)
        .start();

    let tls_call = |roots: rustls::RootCertStore| -> std::io::Result<Resp> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(std::io::Error::other)?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name =
            rustls::pki_types::ServerName::try_from("localhost").map_err(std::io::Error::other)?;
        let conn =
            rustls::ClientConnection::new(Arc::new(config), name).map_err(std::io::Error::other)?;
        let sock = TcpStream::connect(d.addr)?;
        sock.set_read_timeout(Some(Duration::from_secs(30)))?;
        exchange(
            rustls::StreamOwned::new(conn, sock),
            &raw_request("POST", "/v1/runs", Some(ALICE), Some(JS_ONE_PLUS_ONE)),
        )
    };
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).expect("add CA");
    let r = tls_call(roots).expect("TLS exchange with the test CA");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"], "2");

    // A client that does not trust the CA gets no answer.
    assert!(tls_call(rustls::RootCertStore::empty()).is_err());
    // Plain HTTP on the TLS port gets no API answer.
    let plain = try_call(d.addr, "GET", "/healthz", None, None);
    assert!(plain.map(|r| r.status != 200).unwrap_or(true));
}

// -------------------------------------------- metrics, audit: metadata only

#[test]
fn metrics_and_audit_hold_no_raw_path_query_code_or_secret() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (up, addr) = rt.block_on(upstream::start_upstream());
    let d = Setup::new(Some(addr)).start();
    let code = r#"
        const MARKER = "CODE-MARKER-77aa";
        const ok = await plimsoll.get("orders", "/v1/orders/RAWPATH-9c9c?q=RAWQUERY-8d8d");
        let denied = "no";
        try { await plimsoll.get("orders", "/admin/RAWPATH-DENIED-7e7e"); } catch (e) { denied = e.name; }
        [ok.status, denied].join(",")
    "#;
    let body = serde_json::json!({"language": "javascript", "code": code, "grants": ["orders"]});
    let r = run(&d, ALICE, &body.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"], "\"200,Denied\"", "{}", r.body);
    // The upstream did get the raw path and the credential…
    let seen = up.seen();
    assert!(seen.iter().any(|s| s.target.contains("RAWPATH-9c9c")));
    assert!(
        seen.iter()
            .flat_map(|s| s.headers.iter())
            .any(|(_, v)| v.contains(upstream::STATIC_TOKEN))
    );
    // …and none of that is in the metrics or the audit log.
    let metrics = call(d.metrics.expect("metrics"), "GET", "/metrics", None, None).body;
    assert!(
        metrics.contains("route=\"/v1/orders/*\""),
        "the route template is a label: {metrics}"
    );
    assert!(metrics.contains("outcome=\"denied\""), "{metrics}");
    let audit = d.audit();
    assert!(
        audit.contains(&sha(code)),
        "the audit log has the code's hash"
    );
    assert!(audit.contains("\"delivered\":1"), "{audit}");
    for (what, text) in [("metrics", &metrics), ("audit log", &audit)] {
        for needle in [
            "RAWPATH",
            "RAWQUERY",
            "CODE-MARKER",
            upstream::STATIC_TOKEN,
            upstream::CANARY,
            ALICE,
        ] {
            assert!(!text.contains(needle), "{what} contains {needle}");
        }
    }
}

// ---------------------------------------------------------------- bad input

#[test]
fn bad_input_gets_a_clear_4xx_and_others_are_unaffected() {
    let d = Setup::new(None)
        .set("PLIMSOLL_MAX_BODY_BYTES", "4096")
        .start();
    for (body, code) in [
        ("{", "invalid_json"),
        ("[1,2]", "invalid_json"),
        (r#"{"language": 7, "code": "1"}"#, "invalid_json"),
        (
            r#"{"language": "javascript", "code": "1", "surprise": true}"#,
            "invalid_json",
        ),
        (r#"{"language": "cobol", "code": "1"}"#, "invalid_json"),
        (r#"{"language": "javascript"}"#, "invalid_request"),
        (
            r#"{"language": "javascript", "code": "1", "limits": {"wall_time_ms": 999999999}}"#,
            "invalid_limits",
        ),
        (r#"{"component": "nope"}"#, "unknown_component"),
    ] {
        let r = run(&d, ALICE, body);
        assert!(
            (400..500).contains(&r.status),
            "{body}: {} {}",
            r.status,
            r.body
        );
        assert_eq!(r.code(), code, "{body}: {}", r.body);
    }
    let secret = "sk-in-the-body-SECRET";
    let r = run(
        &d,
        ALICE,
        &format!(r#"{{"language": "javascript", "code": 5, "x": "{secret}"}}"#),
    );
    assert!(!r.body.contains(secret), "{}", r.body);
    let big = format!(
        r#"{{"language": "javascript", "code": "{}"}}"#,
        "1".repeat(10_000)
    );
    let r = run(&d, ALICE, &big);
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.code(), "body_too_large");
    let r = call(d.addr, "GET", "/nowhere", None, None);
    assert_eq!(r.status, 404);
    // Wrong content type.
    let s = TcpStream::connect(d.addr).expect("connect");
    let raw = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {ALICE}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{{}}"
    );
    let r = exchange(s, raw.as_bytes()).expect("exchange");
    assert_eq!(r.status, 415, "{}", r.body);
    assert_eq!(run(&d, BOB, JS_ONE_PLUS_ONE).status, 200);
}

#[test]
fn slowloris_and_connection_floods_do_not_starve_other_callers() {
    let d = Setup::new(None)
        .set("PLIMSOLL_HEADER_TIMEOUT_SECS", "1")
        .start();
    // 300 idle connections and one that trickles its head.
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(s) = TcpStream::connect(d.addr) {
            idle.push(s);
        }
    }
    let mut slow = TcpStream::connect(d.addr).expect("connect");
    slow.write_all(b"POST /v1/runs HTTP/1.1\r\nHost: x\r\n")
        .expect("partial head");
    // Meanwhile a well-behaved caller is served at once.
    let t = Instant::now();
    let r = run(&d, BOB, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(t.elapsed() < Duration::from_secs(5));
    // The trickling connection is cut after the head timeout.
    std::thread::sleep(Duration::from_millis(2500));
    slow.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = slow.write_all(b"X-Late: 1\r\n");
    let mut buf = [0u8; 512];
    // Cut means: closed (EOF or reset) or answered 408. A read that times
    // out means the daemon is still waiting on the slow client: a failure.
    match slow.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => {
            let answer = String::from_utf8_lossy(&buf[..n]);
            assert!(
                answer.starts_with("HTTP/1.1 408"),
                "a slow head was answered, not cut: {answer:?}"
            );
        }
        Err(e) => assert!(
            !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "a slow head was not cut: the connection is still open ({e})"
        ),
    }
    drop(idle);
    assert_eq!(run(&d, BOB, JS_ONE_PLUS_ONE).status, 200);
}

// --------------------------------------------------------------- lifecycle

#[test]
fn sigterm_under_load_audits_exactly_the_runs_that_answered() {
    let mut d = Setup::new(None)
        .clients(r#", "max_concurrent": 64, "rate_per_min": 100000"#)
        .start();
    let addr = d.addr;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let answered = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut workers = Vec::new();
    for i in 0..6 {
        let stop = stop.clone();
        let answered = answered.clone();
        let token = if i % 2 == 0 { ALICE } else { BOB };
        workers.push(std::thread::spawn(move || {
            let body =
                r#"{"language": "javascript", "code": "let i = 0; while (i < 200000) i++; i"}"#;
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match try_call(addr, "POST", "/v1/runs", Some(token), Some(body)) {
                    Ok(r) => {
                        if let Some(id) = serde_json::from_str::<serde_json::Value>(&r.body)
                            .ok()
                            .and_then(|v| v["run_id"].as_str().map(str::to_owned))
                        {
                            if let Ok(mut a) = answered.lock() {
                                a.push(id);
                            }
                            n += 1;
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            n
        }));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let status = d.sigterm();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let total: usize = workers.into_iter().map(|w| w.join().unwrap_or(0)).sum();
    assert!(
        status.success(),
        "the daemon did not exit cleanly: {status:?}"
    );
    assert!(total > 5, "too little load to mean anything: {total} runs");
    let audit = d.audit();
    let audited: BTreeSet<String> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "run")
        .filter_map(|v| v["run_id"].as_str().map(str::to_owned))
        .collect();
    let answered: BTreeSet<String> = answered
        .lock()
        .map(|a| a.iter().cloned().collect())
        .unwrap_or_default();
    let missing: Vec<_> = answered.difference(&audited).collect();
    let extra: Vec<_> = audited.difference(&answered).collect();
    assert!(
        missing.is_empty(),
        "answered without an audit line: {missing:?}"
    );
    assert!(extra.is_empty(), "audited but never answered: {extra:?}");
    assert!(
        audit
            .lines()
            .last()
            .is_some_and(|l| l.contains("daemon_stop"))
    );
}

// ------------------------------------------------------------------ OpenAPI

#[test]
fn the_openapi_document_in_docs_is_current() {
    let out = Command::new(env!("CARGO_BIN_EXE_plimsolld"))
        .arg("--openapi")
        .output()
        .expect("plimsolld --openapi");
    assert!(out.status.success());
    let generated = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let doc: serde_json::Value = serde_json::from_str(&generated).expect("JSON");
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.")));
    for p in [
        "/v1/runs",
        "/v1/sessions",
        "/v1/sessions/{id}/runs",
        "/v1/sessions/{id}",
        "/v1/info",
    ] {
        assert!(doc["paths"][p].is_object(), "{p} is missing");
    }
    assert!(doc["components"]["schemas"]["RunRequest"].is_object());
    let file = repo().join("docs/openapi.json");
    let kept = std::fs::read_to_string(&file).unwrap_or_default();
    assert_eq!(
        kept.trim(),
        generated,
        "docs/openapi.json is stale: regenerate it with `make openapi`"
    );
}

#[test]
fn hardened_mode_starts_when_every_condition_holds_with_gvisor() {
    let runsc = Command::new("runsc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !runsc {
        eprintln!("SKIP: gVisor's runsc is missing (apt-get install runsc); .ci/run installs it");
        return;
    }
    let d = hardened()
        .set("SANDBOX_PROVIDER", "wasm+gvisor")
        .set("PLIMSOLL_WORKER_POOL", "1")
        .start();
    let r = run(
        &d,
        ALICE,
        r#"{"component": "hello", "minimum_isolation": "kernel"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["isolation"]["tier"], "kernel");
    assert_eq!(v["isolation"]["wrapper"], "gvisor");
    let info = call(d.addr, "GET", "/v1/info", Some(ALICE), None).json();
    assert_eq!(info["isolation"]["tier"], "kernel");
    assert!(
        info["isolation"]["evidence"]["checks"]
            .as_array()
            .is_some_and(|c| c.iter().all(|c| c["passed"] == true)),
        "{info}"
    );
}

/// A `POST /v1/runs` of `token` declaring `declared` body bytes and sending
/// only `sent` of them; the connection stays open.
fn partial_upload(addr: SocketAddr, token: &str, declared: usize, sent: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    let head = format!(
        "POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {declared}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).expect("head");
    s.write_all(sent).expect("part of the body");
    s
}

/// How many of `uploads` were answered 503 `busy`.
fn answered_busy(uploads: &mut [TcpStream]) -> usize {
    let mut busy = 0;
    for s in uploads {
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .expect("timeout");
        let mut buf = [0u8; 2048];
        if let Ok(n) = s.read(&mut buf)
            && String::from_utf8_lossy(&buf[..n]).contains("\"busy\"")
        {
            busy += 1;
        }
    }
    busy
}

#[test]
fn request_bodies_in_flight_are_bounded_across_connections() {
    let d = Setup::new(None)
        .set("PLIMSOLL_MAX_BODY_BYTES", "4096")
        .set("PLIMSOLL_MAX_BODY_BYTES_IN_FLIGHT", "8192")
        .start();
    // Two uploads of alice's each declare a 4000-byte body and send only a
    // little: a declared length reserves nothing, so together they hold
    // two KiB, not the whole budget.
    let held: Vec<TcpStream> = (0..2)
        .map(|_| partial_upload(d.addr, ALICE, 4000, b"{\"language\""))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let r = run(&d, BOB, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 200, "{}", r.body);
    // Bodies that arrive in full are bounded all the same: alice's share
    // (8 KiB / 3 callers, at least one 4 KiB body) does not fit three
    // 4000-byte bodies at once.
    let mut full: Vec<TcpStream> = (0..3)
        .map(|_| partial_upload(d.addr, ALICE, 4000, &[b' '; 3999]))
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let busy = answered_busy(&mut full);
    assert!(busy >= 1, "three full bodies fit alice's share");
    let r = run(&d, BOB, JS_ONE_PLUS_ONE);
    assert_eq!(r.status, 200, "{}", r.body);
    drop(held);
    drop(full);
}

/// docs/api.md: no error message echoes a value from the body. Every
/// string field a request can carry holds a marker, for each error code a
/// body can provoke; no answer contains the marker.
#[test]
fn no_error_message_echoes_a_value_from_the_body() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (_up, addr) = rt.block_on(upstream::start_upstream());
    let d = Setup::new(Some(addr)).start();
    const M: &str = "ECHO-MARKER-31f7";
    let cases: Vec<(&str, &str, String)> = vec![
        (
            ALICE,
            "grant_not_allowed",
            format!(r#"{{"language": "javascript", "code": "1", "grants": ["orders", "{M}-g"]}}"#),
        ),
        (
            BOB,
            "grant_not_allowed",
            format!(
                r#"{{"language": "javascript", "code": "'{M}'", "grants": ["minted"], "stdin": "{M}"}}"#
            ),
        ),
        (
            ALICE,
            "invalid_request",
            format!(
                r#"{{"language": "javascript", "code": "1", "grants": ["orders", "orders"], "stdin": "{M}"}}"#
            ),
        ),
        (
            ALICE,
            "identity_mismatch",
            format!(
                r#"{{"language": "javascript", "code": "'{M}'", "require_identity": "{M}-id"}}"#
            ),
        ),
        (
            ALICE,
            "unknown_component",
            format!(r#"{{"component": "{M}-c", "stdin": "{M}"}}"#),
        ),
        (
            ALICE,
            "invalid_json",
            format!(r#"{{"language": "javascript", "code": "1", "{M}-field": "{M}"}}"#),
        ),
        (
            ALICE,
            "invalid_json",
            format!(r#"{{"language": "{M}", "code": "1"}}"#),
        ),
        (
            ALICE,
            "invalid_request",
            format!(r#"{{"language": "javascript", "stdin": "{M}"}}"#),
        ),
        (
            ALICE,
            "invalid_limits",
            format!(
                r#"{{"language": "javascript", "code": "'{M}'", "limits": {{"wall_time_ms": 999999999}}}}"#
            ),
        ),
    ];
    for (token, code, body) in &cases {
        let r = run(&d, token, body);
        assert!(
            (400..500).contains(&r.status),
            "{code}: {} {}",
            r.status,
            r.body
        );
        assert_eq!(r.code(), *code, "{}", r.body);
        assert!(!r.body.contains(M), "{code} echoed a value: {}", r.body);
    }
    // The same for sessions, and the session's id in the path.
    let r = call(
        d.addr,
        "POST",
        "/v1/sessions",
        Some(ALICE),
        Some(&format!(
            r#"{{"language": "python", "require_identity": "{M}"}}"#
        )),
    );
    assert_eq!(r.code(), "identity_mismatch", "{}", r.body);
    assert!(!r.body.contains(M), "{}", r.body);
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{M}/runs"),
        Some(ALICE),
        Some(r#"{"code": "1"}"#),
    );
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(!r.body.contains(M), "{}", r.body);
}

/// A session evaluation that names another language is refused, and the
/// audit log and metrics name the language that ran, never the claim.
#[test]
fn a_session_run_that_names_another_language_is_refused() {
    let d = Setup::new(None).start();
    let path = python_session_runs(&d, ALICE);
    let r = call(
        d.addr,
        "POST",
        &path,
        Some(ALICE),
        Some(r#"{"language": "javascript", "code": "[1,2].length"}"#),
    );
    assert_eq!(r.code(), "invalid_request", "{}", r.body);
    let r = call(
        d.addr,
        "POST",
        &path,
        Some(ALICE),
        Some(r#"{"language": "python", "code": "len([1, 2])"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"], "2", "{}", r.body);
    let r = call(d.addr, "POST", &path, Some(ALICE), Some(r#"{"code": "3"}"#));
    assert_eq!(r.status, 200, "{}", r.body);
    let audit = d.audit();
    let session_runs: Vec<&str> = audit
        .lines()
        .filter(|l| l.contains("\"session_run\""))
        .collect();
    assert!(session_runs.len() >= 3, "{audit}");
    for l in &session_runs {
        assert!(!l.contains("\"language\":\"javascript\""), "{l}");
    }
    assert!(
        session_runs
            .iter()
            .filter(|l| l.contains("\"language\":\"python\""))
            .count()
            >= 2,
        "{audit}"
    );
    let metrics = call(d.metrics.expect("metrics"), "GET", "/metrics", None, None).body;
    assert!(!metrics.contains("language=\"javascript\""), "{metrics}");
}

/// A connection from a chosen loopback source address (all of 127/8 is
/// loopback), so that a test can be "another peer".
fn connect_from(source: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    // SAFETY: plain socket calls on a descriptor this function owns.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        use std::os::fd::FromRawFd;
        let stream = TcpStream::from_raw_fd(fd);
        let bind = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 0,
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(source),
            },
            sin_zero: [0; 8],
        };
        if libc::bind(
            fd,
            (&bind as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        let std::net::IpAddr::V4(ip) = to.ip() else {
            return Err(std::io::Error::other("IPv4 only"));
        };
        let dest = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: to.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(ip.octets()),
            },
            sin_zero: [0; 8],
        };
        if libc::connect(
            fd,
            (&dest as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stream)
    }
}

/// One caller that holds slow uploads declaring bodies that add up to the
/// whole in-flight budget holds only what it has sent, and at most its
/// share: another caller's runs all succeed meanwhile.
#[test]
fn one_callers_slow_uploads_do_not_starve_another_caller() {
    let d = Setup::new(None)
        .set("PLIMSOLL_MAX_BODY_BYTES", "262144")
        .set("PLIMSOLL_MAX_BODY_BYTES_IN_FLIGHT", "1048576")
        .start();
    // 16 uploads of a declared 256 KiB each (16 × 256 KiB = 4 × the
    // budget), each sending 64 KiB and then nothing.
    let mut slow: Vec<TcpStream> = (0..16)
        .map(|_| partial_upload(d.addr, ALICE, 262_144, &[b' '; 65536]))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // bob is served, with a body of real size, every time.
    let big_code = format!(
        r#"{{"language": "javascript", "code": "'{}'.length"}}"#,
        "x".repeat(100 * 1024)
    );
    for _ in 0..5 {
        let t = Instant::now();
        let r = run(&d, BOB, &big_code);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["result"], "102400");
        assert!(t.elapsed() < Duration::from_secs(10));
    }
    // alice herself is held to her share: her slow uploads were refused
    // `busy` once her share was spent, or are still pending.
    let busy = answered_busy(&mut slow);
    assert!(busy > 0, "alice's share did not bind");
    drop(slow);
}

/// Idle connections that never authenticate cannot keep other callers
/// out: from one other peer they are capped (the oldest replaced), from
/// the caller's own address a new connection replaces the oldest idle one,
/// and every run of the caller succeeds.
#[test]
fn idle_unauthenticated_connections_do_not_starve_other_callers() {
    let d = Setup::new(None)
        .set("PLIMSOLL_MAX_CONNECTIONS", "256")
        .set("PLIMSOLL_MAX_UNAUTHENTICATED_PER_PEER", "16")
        .set("PLIMSOLL_HEADER_TIMEOUT_SECS", "30")
        .start();
    // 300 idle connections from 127.0.0.2 (more than the whole cap) and
    // 100 from 127.0.0.1, the caller's own address.
    let mut idle = Vec::new();
    for _ in 0..300 {
        if let Ok(s) = connect_from([127, 0, 0, 2], d.addr) {
            idle.push(s);
        }
    }
    assert!(
        idle.len() >= 250,
        "the flood itself connected: {}",
        idle.len()
    );
    for _ in 0..100 {
        if let Ok(s) = TcpStream::connect(d.addr) {
            idle.push(s);
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    for i in 0..20 {
        let t = Instant::now();
        let r = try_call(d.addr, "POST", "/v1/runs", Some(BOB), Some(JS_ONE_PLUS_ONE))
            .unwrap_or_else(|e| panic!("run {i} under the flood: {e}"));
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(t.elapsed() < Duration::from_secs(5), "run {i} was slow");
    }
    // The flood's peers were cut down to their caps: most of the idle
    // connections are closed by now.
    let mut closed = 0;
    for s in &mut idle {
        s.set_read_timeout(Some(Duration::from_millis(20)))
            .expect("timeout");
        let mut b = [0u8; 1];
        // A timeout is an open connection; EOF or a reset is a closed one.
        match s.read(&mut b) {
            Ok(0) => closed += 1,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => closed += 1,
            _ => {}
        }
    }
    assert!(
        closed >= idle.len() - 2 * 16 - 4,
        "{closed} of {} closed",
        idle.len()
    );
}

// ------------------------------------------------------ plimsoll protocol 4

/// The virtualenv with the pinned plimsoll-client (`make clients`).
fn client_python() -> PathBuf {
    let p = repo().join("target/clients/venv/bin/python");
    assert!(
        p.is_file(),
        "{} is missing: the protocol tests drive plimsolld with the real plimsoll-client 0.23.0 from PyPI; install it with `make clients`",
        p.display()
    );
    p
}

fn run_client_checks(url: &str, extra: &[(&str, String)]) -> String {
    let mut cmd = Command::new(client_python());
    cmd.arg(repo().join("tests/protocol/client_checks.py"))
        .env("PLIMSOLL_URL", url)
        .env("PLIMSOLL_TOKEN", ALICE)
        .env("PLIMSOLL_OTHER_TOKEN", BOB);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the client checks");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "the client checks failed over {url}:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("all checks passed"), "{stdout}");
    // The in-process provider offers everything the checks cover: none may
    // have been skipped.
    for must in [
        "cell: javascript reads what python wrote",
        "cell: the files live on",
        "owner cap: the oldest idle session was replaced",
        "unknown and another caller's session: not_found, the same",
        "CodeExecutor: the named artifact",
        "grant: the credential is nowhere in the answer",
        "floor above the tier: refused, isolation",
    ] {
        assert!(
            stdout.contains(&format!("ok   {must}")),
            "{must} did not run:\n{stdout}"
        );
    }
    stdout
}

#[test]
fn the_real_plimsoll_client_drives_the_daemon_over_http_and_tls() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (up, addr) = rt.block_on(upstream::start_upstream());
    let d = Setup::new(Some(addr)).start();
    run_client_checks(
        &format!("http://{}", d.addr),
        &[("PLIMSOLL_SECRET", upstream::STATIC_TOKEN.to_string())],
    );
    // The grant's call reached the real upstream, with the credential the
    // host injected.
    assert!(
        up.seen().iter().any(|s| s.target == "/v1/orders/7"
            && s.headers
                .iter()
                .any(|(k, v)| k == "authorization" && v.contains(upstream::STATIC_TOKEN))),
        "{:?}",
        up.seen()
    );
    // Metadata only: sessions by fingerprint, never by id; no secret.
    let audit = d.audit();
    assert!(!audit.contains(upstream::STATIC_TOKEN));
    let mut fingerprints = 0;
    for line in audit.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("audit JSON");
        if let Some(s) = v["session_id"].as_str() {
            assert!(s.len() == 64, "a raw session id in the audit log: {line}");
            fingerprints += 1;
        }
        if v["protocol"] == "connect" && v["event"] == "run" && v["outcome"] != "refused" {
            assert!(
                v["record_sha256"].as_str().is_some_and(|r| r.len() == 64),
                "{line}"
            );
        }
    }
    assert!(fingerprints > 0, "no session in the audit log:\n{audit}");
    drop(d);

    // The same checks over TLS, with a private CA the client is given.
    let (ca, leaf, leaf_key) = test_pki();
    let s = Setup::new(Some(addr));
    let cert = s.file("cert.pem", &leaf.pem());
    let key = s.file("key.pem", &leaf_key.serialize_pem());
    let ca_file = s.file("ca.pem", &ca.pem());
    let d = s
        .set("PLIMSOLL_TLS_CERT", cert)
        .set("PLIMSOLL_TLS_KEY", key)
        .start();
    run_client_checks(
        &format!("https://localhost:{}", d.addr.port()),
        &[
            ("PLIMSOLL_CA", ca_file),
            ("PLIMSOLL_SECRET", upstream::STATIC_TOKEN.to_string()),
        ],
    );
}

/// The same client checks against a daemon whose provider is `wasm+bwrap`:
/// protocol 4 sessions (two interpreters over one workspace) live in a
/// worker of their caller's.
#[test]
fn the_real_plimsoll_client_drives_sessions_behind_bwrap() {
    if !bwrap_usable() {
        return;
    }
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (_up, addr) = rt.block_on(upstream::start_upstream());
    let d = Setup::new(Some(addr))
        .set("SANDBOX_PROVIDER", "wasm+bwrap")
        .set("PLIMSOLL_WORKER_POOL", "1")
        .start();
    run_client_checks(
        &format!("http://{}", d.addr),
        &[("PLIMSOLL_SECRET", upstream::STATIC_TOKEN.to_string())],
    );
}

/// A daemon for the agent-workspace checks: the default envelope with a
/// longer wall time. The adapters ask for 120 s a call (the daemon clamps it
/// to the envelope's), and a 3 MB transfer through the shell guest's base64
/// steps, or a step that starts interpreter children, must not meet the
/// default 10 s on a loaded two-core machine; the timeout check asks for 1 s
/// itself.
fn workspace_setup() -> Setup {
    let s = Setup::new(None);
    let envelope = s.file(
        "envelope.json",
        &serde_json::to_string(&plimsoll::Envelope {
            wall_time_ms: 60_000,
            ..plimsoll::Envelope::default()
        })
        .expect("json"),
    );
    s.set("PLIMSOLL_ENVELOPE_FILE", envelope)
}

/// Runs tests/protocol/workspace_checks.py (the real client's `Workspace`,
/// `CodeExecutor`, the Claude Managed Agents tools and the OpenAI Agents SDK
/// provider) against `url`, at the isolation floor `floor`.
fn run_workspace_checks(url: &str, floor: &str) -> String {
    let out = Command::new(client_python())
        .arg(repo().join("tests/protocol/workspace_checks.py"))
        .env("PLIMSOLL_URL", url)
        .env("PLIMSOLL_TOKEN", ALICE)
        .env("PLIMSOLL_FLOOR", floor)
        .output()
        .expect("run the workspace checks");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "the workspace checks failed over {url} (`make clients` installs the pinned \
         plimsoll-client, anthropic and openai-agents):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every provider these run against offers all the checks cover: none
    // may have been skipped.
    for must in [
        "describe: projects run javascript and python",
        "workspace root: learned from the sandbox",
        "exec: cwd and exported variables carry over, unexported ones do not",
        "exec: exit N ends the command with N",
        "exec: an unknown command is 127, not found",
        "exec: rm -rf of a tree with entries",
        "read: 3 MB of binary, byte-exact",
        "read: a missing file is FileNotFoundError",
        "edit: the file",
        "glob: a shell pattern in a directory",
        "glob: ** matches at every depth",
        "grep: matches as path:line:text",
        "grep: no match is empty (exit 1)",
        "grep: a bad pattern is ValueError (exit 2)",
        "grep: output past the cap is marked",
        "persist: binary files byte-exact in the tar",
        "hydrate: 3 MB of binary in the second session",
        "python3 -c: sys.exit(5) is 5",
        "python3 file.py args: sys.exit(5) is 5",
        "python3: an uncaught exception is exit 1 with the traceback",
        "node file.mjs from the shell: an ES-module import, argv, fs",
        "python3 and node see the shell's /tmp",
        "Session.run_project: stops at the first non-zero step",
        "Session.run_javascript: require('fs') over the session's files",
        "cells and the shell share the files, the cell interpreter keeps its state",
        "Session.run_javascript: the client README's /tmp example",
        "exec: a timed-out command is 124 and timed out",
        "exec: works after a timeout, state kept",
        "exec: the state after a cut command is saved",
        "hostile: a 4 MiB command of ((((, then a working command and the files",
        "hostile: a fork-bomb function, then a working command and the files",
        "hostile: yes | head -n 3",
        "hostile: yes | head -n 3, then a working command and the files",
        "close: the summary matches the chain",
        "Client.run_project: completed, stops at the first non-zero step",
        "Client.run_project: artifacts in request order, absent ones omitted",
        "CodeExecutor javascript: relative and absolute ES-module imports, a file artifact",
        "code tool: javascript runs",
        "CodeExecutor: a rule of Describe's project identity admits its python and javascript steps",
        "anthropic bash: output",
        "anthropic bash: cd and export persist",
        "anthropic read: whole file, absolute path",
        "anthropic write",
        "anthropic edit",
        "anthropic glob: **",
        "anthropic grep",
        "anthropic bash: restart opened a fresh sandbox",
        "anthropic: leaving the bash tool closes the session",
        "openai start: the manifest's file is written",
        "openai exec: sh -lc text",
        "openai write/read: binary, byte-exact",
        "openai ls: ls -la parsed",
        "openai mkdir: without parents a missing parent fails",
        "openai mv",
        "openai same_file: two files",
        "openai rm",
        "openai rm: recursive, a tree with entries (rm -rf --)",
        "openai: the SDK's runtime helper installs and runs (workspace fingerprint)",
        "openai persist_workspace: a tar",
        "openai hydrate into a new session",
        "openai delete: the second session is closed",
    ] {
        assert!(
            stdout.contains(&format!("ok   {must}\n")),
            "{must} did not run:\n{stdout}"
        );
    }
    stdout
}

/// Agent workspaces at tier `process`: every `Workspace` operation of the
/// real plimsoll-client 0.23.0 (each a session project whose step is shell
/// text, run by the shell guest), `python3`/`node` from the shell, limits
/// and hostile text, `run_project`, JavaScript projects, and the Claude
/// Managed Agents and OpenAI Agents SDK adapters driven without a model.
#[test]
fn the_real_plimsoll_client_drives_agent_workspaces() {
    let d = workspace_setup().start();
    run_workspace_checks(&format!("http://{}", d.addr), "process");
}

/// The same workspace checks behind bubblewrap (`wasm+bwrap`, tier
/// `container`, asked for as the floor): the shell guest and its
/// interpreter children run in a worker of the caller's.
#[test]
fn the_real_plimsoll_client_drives_agent_workspaces_behind_bwrap() {
    if !bwrap_usable() {
        return;
    }
    let d = workspace_setup()
        .set("SANDBOX_PROVIDER", "wasm+bwrap")
        .set("PLIMSOLL_WORKER_POOL", "1")
        .start();
    run_workspace_checks(&format!("http://{}", d.addr), "container");
}

/// The same workspace checks behind gVisor (`wasm+gvisor`, tier `kernel`,
/// the floor the framework adapters default to).
#[test]
fn the_real_plimsoll_client_drives_agent_workspaces_behind_gvisor() {
    let runsc = Command::new("runsc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runsc,
        "gVisor's runsc is missing: the kernel tier's workspace checks need it (apt-get install runsc; make setup and .ci/run install it)"
    );
    let d = workspace_setup()
        .set("SANDBOX_PROVIDER", "wasm+gvisor")
        .set("PLIMSOLL_WORKER_POOL", "1")
        .start();
    run_workspace_checks(&format!("http://{}", d.addr), "kernel");
}

/// The same client checks with the scientific guest as the operator's
/// Python (`PLIMSOLL_PYTHON_GUEST=scientific`): projects and session cells
/// run it, and `Describe` names it.
#[test]
fn the_real_plimsoll_client_drives_the_scientific_guest() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (_up, addr) = rt.block_on(upstream::start_upstream());
    let d = Setup::new(Some(addr))
        .set("PLIMSOLL_PYTHON_GUEST", "scientific")
        .set(
            "PLIMSOLL_SCIENTIFIC_DIR",
            guests_dir().join("scientific").display().to_string(),
        )
        .start();
    let stdout = run_client_checks(
        &format!("http://{}", d.addr),
        &[
            ("PLIMSOLL_SECRET", upstream::STATIC_TOKEN.to_string()),
            ("PLIMSOLL_EXPECT_SCIENTIFIC", "1".to_string()),
        ],
    );
    for must in [
        "scientific: a project imports pandas",
        "scientific: the project's run names the scientific guest",
        "scientific: a session keeps numpy state",
    ] {
        assert!(
            stdout.contains(&format!("ok   {must}")),
            "{must}:\n{stdout}"
        );
    }
}

/// `/mcp` on a real plimsolld, driven by the official Python MCP SDK over
/// streamable HTTP (tests/mcp/http_checks.py): tokens as for REST, runs and
/// sessions of the caller, a grant whose credential is in no answer, a
/// 100 MiB body and a 10,000-call batch refused typed, metadata-only audit.
#[test]
fn the_mcp_python_sdk_drives_the_daemon_over_streamable_http() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let (up, addr) = rt.block_on(upstream::start_upstream());
    let d = Setup::new(Some(addr)).start();
    let out = Command::new(client_python())
        .arg(repo().join("tests/mcp/http_checks.py"))
        .env("PLIMSOLL_MCP_URL", format!("http://{}/mcp", d.addr))
        .env("PLIMSOLL_TOKEN", ALICE)
        .env("PLIMSOLL_OTHER_TOKEN", BOB)
        .env("PLIMSOLL_NOSCOPE_TOKEN", CAROL)
        .env("PLIMSOLL_SECRET", upstream::STATIC_TOKEN)
        .output()
        .expect("run the MCP HTTP checks");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "the MCP HTTP checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        up.seen().iter().any(|s| s
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && v.contains(upstream::STATIC_TOKEN))),
        "the grant call did not reach the upstream with the credential"
    );
    let audit = d.audit();
    assert!(!audit.contains(upstream::STATIC_TOKEN));
    let mcp_runs = audit
        .lines()
        .filter(|l| l.contains("\"protocol\":\"mcp\"") && l.contains("\"event\":\"run\""))
        .count();
    assert!(mcp_runs >= 4, "MCP runs are audited:\n{audit}");
    // The canceled run's record is written when its future is dropped.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let audit = d.audit();
        if audit
            .lines()
            .any(|l| l.contains("\"protocol\":\"mcp\"") && l.contains("\"outcome\":\"canceled\""))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no canceled run in the audit log:\n{audit}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A Connect call with a request id; `body` is sent as is.
fn connect_call(d: &Daemon, procedure: &str, id: &str, body: &[u8]) -> Resp {
    let mut raw = format!(
        "POST /plimsoll.v1.SandboxService/{procedure} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Authorization: Bearer {ALICE}\r\nContent-Type: application/json\r\nPlimsoll-Request-Id: {id}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body);
    let s = TcpStream::connect(d.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    exchange(s, &raw).expect("exchange")
}

/// The `NotDispatched` reason in a Connect error's details, if any.
fn not_dispatched_reason(r: &Resp) -> Option<u8> {
    use base64::Engine as _;
    let v = r.json();
    v["details"].as_array()?.iter().find_map(|d| {
        if d["type"] != "plimsoll.v1.NotDispatched" {
            return None;
        }
        let b = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(d["value"].as_str()?)
            .ok()?;
        (b.len() == 2 && b[0] == 0x08).then_some(b[1])
    })
}

#[test]
fn protocol_bad_input_is_refused_typed_and_marked_and_nothing_runs() {
    let d = Setup::new(None).start();
    let id = "0123456789abcdef0123456789abcdef";
    let many_files: String = (0..10_000)
        .map(|i| format!(r#"{{"path":"f{i}.txt","content":"x"}}"#))
        .collect::<Vec<_>>()
        .join(",");
    let many = format!(
        r#"{{"protocol":4,"project":{{"files":[{many_files}],"steps":["{}"]}}}}"#,
        plimsolld::connect::PYTHON_STEP.replace('"', "\\\"")
    );
    // (procedure, body, Connect code, reason number, header mark)
    let cases: Vec<(&str, String, &str, u8, Option<&str>)> = vec![
        (
            "Run",
            "not json".into(),
            "invalid_argument",
            1,
            Some("request"),
        ),
        (
            "Run",
            r#"{"protocol":4,"protocol":4,"javascript":{"code":"1"}}"#.into(),
            "invalid_argument",
            1,
            Some("request"),
        ),
        (
            "Run",
            r#"{"protocol":4,"timeoutMs":99999999999999999999,"javascript":{"code":"1"}}"#.into(),
            "invalid_argument",
            1,
            None,
        ),
        (
            "Run",
            r#"{"protocol":4,"timeoutMs":"18446744073709551616","javascript":{"code":"1"}}"#.into(),
            "invalid_argument",
            1,
            None,
        ),
        (
            "Run",
            r#"{"javascript":{"code":"1"}}"#.into(),
            "invalid_argument",
            3,
            None,
        ),
        (
            "Run",
            r#"{"protocol":5,"javascript":{"code":"1"}}"#.into(),
            "unimplemented",
            3,
            None,
        ),
        (
            "Run",
            r#"{"protocol":4,"cell":{"language":"python","code":"1"}}"#.into(),
            "invalid_argument",
            1,
            None,
        ),
        (
            "Run",
            r#"{"protocol":4,"module":{"model":"m","rows":[{"values":[1]}],"endTime":1,"step":1}}"#
                .into(),
            "unimplemented",
            4,
            None,
        ),
        ("Run", many, "invalid_argument", 1, None),
        (
            "Frobnicate",
            "{}".into(),
            "unimplemented",
            4,
            Some("unsupported"),
        ),
    ];
    for (procedure, body, code, reason, mark) in &cases {
        let r = connect_call(&d, procedure, id, body.as_bytes());
        let what = format!("{procedure} {}", &body[..body.len().min(80)]);
        assert_eq!(r.code(), *code, "{what}: {}", r.body);
        assert_eq!(
            not_dispatched_reason(&r),
            Some(*reason),
            "{what}: {}",
            r.body
        );
        assert_eq!(
            r.headers.get("plimsoll-request-id").map(String::as_str),
            Some(id),
            "{what}"
        );
        assert_eq!(
            r.headers.get("plimsoll-not-dispatched").map(String::as_str),
            *mark,
            "{what}"
        );
        assert!(
            r.headers
                .get("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "{what}"
        );
    }
    // 33 MiB: refused on its declared length, before it is read.
    let mut raw = format!(
        "POST /plimsoll.v1.SandboxService/Run HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
         Authorization: Bearer {ALICE}\r\nContent-Type: application/json\r\nPlimsoll-Request-Id: {id}\r\n\
         Content-Length: {}\r\n\r\n",
        33usize << 20
    )
    .into_bytes();
    raw.extend_from_slice(&[b' '; 4096]);
    let s = TcpStream::connect(d.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let r = exchange(s, &raw).expect("exchange");
    assert_eq!(r.code(), "resource_exhausted", "{}", r.body);
    assert_eq!(not_dispatched_reason(&r), Some(1));
    assert_eq!(
        r.headers.get("plimsoll-not-dispatched").map(String::as_str),
        Some("request")
    );
    // An id that is not 32 lowercase hex digits is not echoed.
    let r = connect_call(&d, "Describe", "NOT-AN-ID", b"{}");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!r.headers.contains_key("plimsoll-request-id"));
    // Nothing ran, and the daemon still serves.
    assert!(!d.audit().contains(r#""event":"run""#), "{}", d.audit());
    let r = connect_call(
        &d,
        "Run",
        id,
        br#"{"protocol":"4","timeout_ms":"5000","javascript":{"code":"console.log(6*7)","grant_profile":null},"unknownField":1}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["javascript"]["stdout"], "NDIK");
}

#[test]
fn a_session_call_that_ran_but_could_not_be_audited_continues_the_chain_unanswered() {
    let s = Setup::new(None);
    let small = s.tmp.path().join("small");
    let Some(_mounted) = tmpfs::SmallTmpfs::mount(&small, "size=256k") else {
        return;
    };
    let log = small.join("audit.jsonl");
    let d = s
        .set("PLIMSOLL_AUDIT_LOG", log.display().to_string())
        .start();
    let out = Command::new(client_python())
        .arg(repo().join("tests/protocol/unanswered.py"))
        .env("PLIMSOLL_URL", format!("http://{}", d.addr))
        .env("PLIMSOLL_TOKEN", ALICE)
        .env("PLIMSOLL_FILL", small.join("filler"))
        .output()
        .expect("run the client");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn protocol_calls_of_one_session_wait_their_turn_and_chain_in_order() {
    let d = Setup::new(None).start();
    let id = "00112233445566778899aabbccddeeff";
    let r = connect_call(
        &d,
        "OpenSession",
        id,
        br#"{"protocol":4,"languages":["python"]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let session = r.json()["sessionId"].as_str().expect("id").to_string();
    // Four calls at once, each busy for a while: none is answered busy,
    // and their records are the chain's links 1 to 4, each after the last.
    let addr = d.addr;
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let session = session.clone();
            std::thread::spawn(move || {
                let body = format!(
                    r#"{{"protocol":4,"sessionId":"{session}","cell":{{"language":"python","code":"import time\ntime.sleep(0.2)\n{i}"}}}}"#
                );
                let mut raw = format!(
                    "POST /plimsoll.v1.SandboxService/SessionRun HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\
                     Authorization: Bearer {ALICE}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                raw.extend_from_slice(body.as_bytes());
                let s = TcpStream::connect(addr).expect("connect");
                s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
                exchange(s, &raw).expect("exchange")
            })
        })
        .collect();
    let mut links = Vec::new();
    for h in handles {
        let r = h.join().expect("thread");
        assert_eq!(r.status, 200, "{}", r.body);
        let rec = r.json()["run"]["record"].clone();
        links.push((
            rec["sequence"]
                .as_str()
                .and_then(|s| s.parse::<u64>().ok())
                .expect("sequence"),
            rec["previousSha256"].as_str().unwrap_or("").to_string(),
            rec["recordSha256"].as_str().expect("digest").to_string(),
        ));
    }
    links.sort();
    assert_eq!(links.iter().map(|l| l.0).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(links[0].1, "");
    for w in links.windows(2) {
        assert_eq!(w[1].1, w[0].2, "link {} does not follow {}", w[1].0, w[0].0);
    }
    // The REST API does not reach a protocol session: a call there would
    // be missing from its chain.
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{session}/runs"),
        Some(ALICE),
        Some(r#"{"language": "python", "code": "1"}"#),
    );
    assert_eq!(r.code(), "unknown_session", "{}", r.body);
    let r = call(
        d.addr,
        "DELETE",
        &format!("/v1/sessions/{session}"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.code(), "unknown_session", "{}", r.body);
    let r = connect_call(
        &d,
        "CloseSession",
        id,
        format!(r#"{{"protocol":4,"sessionId":"{session}"}}"#).as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["calls"], "4");
    assert_eq!(r.json()["lastRecordSha256"], links[3].2.as_str());
    assert_eq!(r.json()["ended"], "SESSION_END_CLOSED");
}

#[test]
fn a_caller_holding_every_file_it_may_leaves_others_and_the_daemon_unaffected() {
    // Under systemd's default soft limit: the guest's files are not the
    // daemon's descriptors, so one caller opening a thousand of them takes
    // none of the 1,024 the daemon has.
    let mut s = Setup::new(None);
    s.nofile = Some(1024);
    let d = s.start();
    let hog = r#"{"language": "python", "code": "fs = []\ntry:\n    while True:\n        fs.append(open(f'f{len(fs)}', 'w'))\nexcept OSError as e:\n    import errno, time\n    print(len(fs), errno.errorcode[e.errno])\n    time.sleep(1)"}"#;
    let addr = d.addr;
    let hogs: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || call(addr, "POST", "/v1/runs", Some(ALICE), Some(hog))))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // Another caller, while the two runs hold a thousand files each.
    for _ in 0..5 {
        let r = run(
            &d,
            BOB,
            r#"{"language": "python", "code": "open('x', 'w').write('ok'); open('x').read()"}"#,
        );
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.json()["result"], "'ok'", "{}", r.body);
    }
    for h in hogs {
        let r = h.join().expect("hog");
        assert_eq!(r.status, 200, "{}", r.body);
        let out = r.json()["stdout"].as_str().unwrap_or("").to_string();
        assert!(out.ends_with("EDQUOT\n"), "{out}");
        let held: usize = out
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(held >= 1000, "{out}");
    }
    // The daemon's own files still work: its audit log took every line.
    assert_eq!(
        d.audit()
            .lines()
            .filter(|l| l.contains(r#""event":"run""#))
            .count(),
        7
    );
}

// -------------------------------------------------------------- scientific

/// The scientific Python guest over REST: a run and a session that name
/// it, and `/v1/info` naming its identity.
#[test]
fn the_scientific_guest_runs_over_rest_in_runs_and_sessions() {
    assert!(
        guests_dir().join("scientific/scientific.wasm").is_file(),
        "the scientific guest is missing; build the guests first with `make guests`"
    );
    let d = Setup::new(None).start();
    let r = run(
        &d,
        ALICE,
        r#"{"language": "python", "guest": "scientific", "code": "import numpy as np\nint(np.arange(5).sum())"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok", "{}", r.body);
    assert_eq!(r.json()["result"], "10");
    let identity = r.json()["guest"].as_str().unwrap_or_default().to_owned();
    assert!(identity.starts_with("wasi-python:sha256:"), "{identity}");
    let info = call(d.addr, "GET", "/v1/info", Some(ALICE), None).json();
    assert_eq!(info["guests"]["python/scientific"], identity.as_str());

    let r = call(
        d.addr,
        "POST",
        "/v1/sessions",
        Some(ALICE),
        Some(r#"{"language": "python", "guest": "scientific"}"#),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.json()["session_id"].as_str().expect("id").to_string();
    let path = format!("/v1/sessions/{id}/runs");
    let cell = |code: &str| {
        call(
            d.addr,
            "POST",
            &path,
            Some(ALICE),
            Some(&serde_json::json!({ "code": code }).to_string()),
        )
    };
    let r = cell("import pandas as pd\ndf = pd.DataFrame({'x': [1.5, 2.5]})");
    assert_eq!(r.json()["status"], "ok", "{}", r.body);
    let r = cell("float(df.x.mean())");
    assert_eq!(r.json()["result"], "2.0", "{}", r.body);
    assert_eq!(r.json()["guest"], identity.as_str());
}
