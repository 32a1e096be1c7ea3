//! Session snapshots on the real `plimsolld` (issue #37): snapshot, resume,
//! fork and pause over REST; a snapshot belongs to its caller; export from
//! one daemon, import into another with its own state directory, resume
//! there; forged and truncated archives refused, typed; the quota holds;
//! the audit log names snapshots by fingerprint only.

#[path = "support/daemon.rs"]
mod harness;

use harness::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A request with a binary body (or none) and the raw answer: status and
/// body bytes.
fn binary(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&[u8]>,
) -> (u16, Vec<u8>) {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nAuthorization: Bearer {token}\r\n"
    );
    if let Some(b) = body {
        head.push_str(&format!(
            "Content-Type: application/octet-stream\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    head.push_str("\r\n");
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    s.write_all(head.as_bytes()).expect("write");
    if let Some(b) = body {
        s.write_all(b).expect("write");
    }
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&buf[..split]).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let mut body = buf[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    (status, body)
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let n = usize::from_str_radix(String::from_utf8_lossy(&b[..eol]).trim(), 16).unwrap_or(0);
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[eol + 2..eol + 2 + n]);
        b = &b[eol + 2 + n + 2..];
    }
}

fn open(d: &Daemon, token: &str, body: &str) -> String {
    let r = call(d.addr, "POST", "/v1/sessions", Some(token), Some(body));
    assert_eq!(r.status, 201, "{}", r.body);
    r.json()["session_id"].as_str().unwrap_or("").to_owned()
}

fn cell(d: &Daemon, token: &str, id: &str, code: &str) -> Resp {
    let body = serde_json::json!({ "code": code }).to_string();
    call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{id}/runs"),
        Some(token),
        Some(&body),
    )
}

fn result(d: &Daemon, token: &str, id: &str, code: &str) -> String {
    let r = cell(d, token, id, code);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["result"].as_str().unwrap_or("").to_owned()
}

#[test]
fn snapshots_over_rest_belong_to_their_caller_and_move_between_daemons() {
    let d = Setup::new(None)
        .clients(r#", "max_sessions": 6, "max_concurrent": 8, "rate_per_min": 6000"#)
        .set("PLIMSOLL_SNAPSHOTS_PER_CALLER", "4")
        .start();
    let id = open(&d, ALICE, r#"{"language": "python"}"#);
    result(
        &d,
        ALICE,
        &id,
        "x = 41\nsquares = (i * i for i in range(5)); next(squares)",
    );
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{id}/snapshot"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let snap = r.json()["snapshot_id"].as_str().unwrap_or("").to_owned();
    assert_eq!(snap.len(), 64);
    assert!(
        r.json()["guest_identity"]
            .as_str()
            .is_some_and(|g| g.starts_with("python-wasm:sha256:")),
        "{}",
        r.body
    );
    // The session goes on unchanged.
    assert_eq!(result(&d, ALICE, &id, "x + 1"), "42");

    // Another caller's id answers exactly like a random one.
    let theirs = call(
        d.addr,
        "GET",
        &format!("/v1/snapshots/{snap}"),
        Some(BOB),
        None,
    );
    let random = call(
        d.addr,
        "GET",
        &format!("/v1/snapshots/{}", "ab".repeat(32)),
        Some(BOB),
        None,
    );
    assert_eq!(
        (theirs.status, theirs.body.clone()),
        (random.status, random.body)
    );
    assert_eq!(theirs.code(), "unknown_snapshot");
    let r = call(
        d.addr,
        "POST",
        "/v1/sessions",
        Some(BOB),
        Some(&format!(r#"{{"from_snapshot": "{snap}"}}"#)),
    );
    assert_eq!(
        (r.status, r.code()),
        (404, "unknown_snapshot".into()),
        "{}",
        r.body
    );

    // Resume: the next evaluation sees the state as it was.
    let resumed = open(&d, ALICE, &format!(r#"{{"from_snapshot": "{snap}"}}"#));
    assert_eq!(result(&d, ALICE, &resumed, "x, next(squares)"), "(41, 1)");
    let r = call(
        d.addr,
        "POST",
        "/v1/sessions",
        Some(ALICE),
        Some(&format!(
            r#"{{"from_snapshot": "{snap}", "language": "javascript"}}"#
        )),
    );
    assert_eq!(
        (r.status, r.code()),
        (400, "invalid_request".into()),
        "{}",
        r.body
    );

    // Fork: each fork counts against the cap (6: two open now).
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{id}/fork"),
        Some(ALICE),
        Some(r#"{"count": 5}"#),
    );
    assert_eq!(
        (r.status, r.code()),
        (429, "session_limit".into()),
        "{}",
        r.body
    );
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{id}/fork"),
        Some(ALICE),
        Some(r#"{"count": 2}"#),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let forks: Vec<String> = r.json()["sessions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s["session_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(forks.len(), 2);
    result(&d, ALICE, &forks[0], "x = 0");
    assert_eq!(result(&d, ALICE, &forks[1], "x"), "41");

    // Export, and import into another daemon with its own state directory.
    let (status, archive) = binary(
        d.addr,
        "GET",
        &format!("/v1/snapshots/{snap}/export"),
        ALICE,
        None,
    );
    assert_eq!(status, 200);
    let e = Setup::new(None).start();
    let (status, body) = binary(
        e.addr,
        "POST",
        "/v1/snapshots/import",
        ALICE,
        Some(&archive),
    );
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let there: serde_json::Value = serde_json::from_slice(&body).expect("json");
    let there_id = there["snapshot_id"].as_str().unwrap_or("").to_owned();
    let moved = open(&e, ALICE, &format!(r#"{{"from_snapshot": "{there_id}"}}"#));
    assert_eq!(result(&e, ALICE, &moved, "x, next(squares)"), "(41, 1)");
    // Forged and truncated archives: refused, typed, nothing kept.
    let mut forged = archive.clone();
    let at = forged.len() - 50;
    forged[at] ^= 0x10;
    for bad in [
        forged,
        archive[..archive.len() / 3].to_vec(),
        b"not a snapshot".to_vec(),
    ] {
        let (status, body) = binary(e.addr, "POST", "/v1/snapshots/import", ALICE, Some(&bad));
        let v: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(
            (status, v["code"].as_str()),
            (400, Some("snapshot_invalid")),
            "{v}"
        );
    }
    assert_eq!(
        run(&e, ALICE, JS_ONE_PLUS_ONE).status,
        200,
        "the daemon serves on"
    );

    // Pause: a snapshot, then the session is gone.
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{id}/pause"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(cell(&d, ALICE, &id, "x").status, 404);
    let paused = r.json()["snapshot_id"].as_str().unwrap_or("").to_owned();

    // The caller's quota (4): two kept, two more, then refused, typed.
    let other = open(&d, ALICE, r#"{"language": "javascript"}"#);
    let mut kept = vec![snap.clone(), paused.clone()];
    for code in ["globalThis.a = 1", "globalThis.b = 2", "globalThis.c = 3"] {
        result(&d, ALICE, &other, code);
        let r = call(
            d.addr,
            "POST",
            &format!("/v1/sessions/{other}/snapshot"),
            Some(ALICE),
            None,
        );
        if kept.len() < 4 {
            assert_eq!(r.status, 201, "{}", r.body);
            kept.push(r.json()["snapshot_id"].as_str().unwrap_or("").to_owned());
        } else {
            assert_eq!(
                (r.status, r.code()),
                (429, "snapshot_quota".into()),
                "{}",
                r.body
            );
        }
    }
    let r = call(
        d.addr,
        "DELETE",
        &format!("/v1/snapshots/{}", kept[2]),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 204);
    let r = call(
        d.addr,
        "GET",
        &format!("/v1/snapshots/{}", kept[2]),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 404);

    // The audit log names snapshots and sessions by fingerprint only.
    let audit = d.audit();
    for event in [
        "\"snapshot\"",
        "\"session_resume\"",
        "\"session_fork\"",
        "\"session_pause\"",
        "\"snapshot_export\"",
        "\"snapshot_delete\"",
    ] {
        assert!(audit.contains(event), "no {event} line:\n{audit}");
    }
    for secret in kept.iter().chain([&id, &resumed, &forks[0]]) {
        assert!(
            !audit.contains(secret.as_str()),
            "an id is in the audit log"
        );
    }
    assert!(e.audit().contains("\"snapshot_import\""));
}

/// A protocol-4 session can be snapshotted over REST with the same id
/// rules, and resumed as a REST session.
#[test]
fn a_protocol_session_is_snapshotted_over_rest() {
    let d = Setup::new(None).start();
    let r = call(
        d.addr,
        "POST",
        "/plimsoll.v1.SandboxService/OpenSession",
        Some(ALICE),
        Some(r#"{"protocol": 4, "minimumIsolation": "process"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.json()["sessionId"].as_str().unwrap_or("").to_owned();
    let body = serde_json::json!({
        "protocol": 4, "sessionId": id,
        "cell": {"language": "python", "code": "y = 'kept'"},
    });
    let r = call(
        d.addr,
        "POST",
        "/plimsoll.v1.SandboxService/SessionRun",
        Some(ALICE),
        Some(&body.to_string()),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{id}/snapshot"),
        Some(ALICE),
        None,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let snap = r.json()["snapshot_id"].as_str().unwrap_or("").to_owned();
    let n = r.json()["guest_identities"].as_array().map(Vec::len);
    assert_eq!(n, Some(3), "python, javascript and the shell: {}", r.body);
    let resumed = open(&d, ALICE, &format!(r#"{{"from_snapshot": "{snap}"}}"#));
    let r = call(
        d.addr,
        "POST",
        &format!("/v1/sessions/{resumed}/runs"),
        Some(ALICE),
        Some(r#"{"language": "python", "code": "y"}"#),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"], "'kept'", "{}", r.body);
}
