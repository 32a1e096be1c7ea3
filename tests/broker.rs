//! The broker against a real HTTP upstream on loopback.
//!
//! The upstream records everything it receives. Allowed calls must arrive
//! with the credential; denied calls must never arrive; after every run the
//! guest's linear memory, its outputs, the result JSON and the CallTrace are
//! searched for the credentials, which must not be there.

mod support;

use plimsoll::envelope::Limits;
use plimsoll::trace::CallOutcome;
use plimsoll::{Blob, RunRequest, RunResult, Sandbox, Status};
use std::time::Duration;
use support::upstream::*;
use support::*;

struct Fixture {
    _dir: tempfile::TempDir,
    sandbox: Sandbox,
    upstream: Upstream,
    /// A loopback listener no grant names; nothing may connect to it.
    other: std::net::TcpListener,
}

async fn fixture() -> Fixture {
    let (upstream, addr) = start_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let sandbox = sandbox_in(dir.path(), |c| c.grants = profiles(addr));
    let other = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    other.set_nonblocking(true).expect("nonblocking");
    Fixture {
        _dir: dir,
        sandbox,
        upstream,
        other,
    }
}

/// Escapes a field for the broker_caller guest's line protocol.
fn esc(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

fn line(method: &str, api: &str, path: &str, headers: &[(&str, &str)]) -> String {
    let mut l = format!("{}\t{}\t{}", esc(method), esc(api), esc(path));
    for (n, v) in headers {
        l.push_str(&format!("\t{}: {}", esc(n), esc(v)));
    }
    l.push('\n');
    l
}

async fn call_lines(
    f: &Fixture,
    grants: &[&str],
    lines: &str,
    limits: Limits,
    caller: &str,
) -> RunResult {
    let req = RunRequest {
        stdin: Blob::from(format!("{lines}DUMP\n")),
        grants: grants.iter().map(|g| g.to_string()).collect(),
        limits,
        ..RunRequest::component("broker_caller")
    };
    let r = f.sandbox.run_as(caller, &req).await;
    assert_no_secret_anywhere(&r, &f.upstream);
    r
}

/// The credentials must appear nowhere the guest or a caller can see: not
/// in the guest's memory (dumped by the guest itself as an artifact), its
/// stdout or stderr, the result JSON or the CallTrace.
fn assert_no_secret_anywhere(r: &RunResult, up: &Upstream) {
    let mut secrets = vec![STATIC_TOKEN.to_owned(), JWT_SECRET.to_owned()];
    // Every token the upstream received (minted JWTs included).
    for s in up.seen() {
        for (n, v) in s.headers {
            if n == "authorization" {
                secrets.push(v.trim_start_matches("Bearer ").to_owned());
            }
        }
    }
    let json = serde_json::to_string(r).expect("json");
    let trace = serde_json::to_string(&r.calls).expect("json");
    let memory = r
        .artifacts
        .iter()
        .find(|a| a.path == "memory.bin")
        .map(|a| a.content.as_bytes().to_vec())
        .unwrap_or_default();
    assert!(
        memory.len() > 65536,
        "the guest dumped its memory ({} bytes)",
        memory.len()
    );
    for secret in &secrets {
        for (what, hay) in [
            ("stdout", r.stdout.as_bytes()),
            ("stderr", r.stderr.as_bytes()),
            ("result JSON", json.as_bytes()),
            ("CallTrace", trace.as_bytes()),
            ("guest memory", memory.as_slice()),
        ] {
            assert!(
                !hay.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "a credential was found in the {what}"
            );
        }
    }
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allowed_call_arrives_with_the_credential_and_nothing_else_leaks() {
    let f = fixture().await;
    let r = call_lines(
        &f,
        &["orders"],
        &line(
            "get",
            "orders",
            "/v1/orders/42?expand=items",
            &[("Accept", "application/json"), ("X-Request-Id", "r-1")],
        ),
        Limits::default(),
        "local",
    )
    .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert!(r.stdout.starts_with("ok 200 "), "{}", r.stdout);
    assert!(r.stdout.contains(CANARY));
    let seen = f.upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].target, "/v1/orders/42?expand=items");
    let auth: Vec<_> = seen[0]
        .headers
        .iter()
        .filter(|(n, _)| n == "authorization")
        .collect();
    assert_eq!(auth.len(), 1);
    assert_eq!(auth[0].1, format!("Bearer {STATIC_TOKEN}"));
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(n, v)| n == "x-request-id" && v == "r-1")
    );
    // The CallTrace has the template, never the raw path or the query.
    let row = &r.calls.rows[0];
    assert_eq!(row.outcome, CallOutcome::Delivered);
    assert_eq!(row.grant.as_deref(), Some("orders"));
    assert_eq!(row.method.as_deref(), Some("GET"));
    assert_eq!(row.route.as_deref(), Some("/v1/orders/*"));
    assert_eq!(row.status, Some(200));
    // (Its numbers, such as a latency, may hold any digits.)
    let mut calls = r.calls.clone();
    for row in &mut calls.rows {
        row.latency_us = 0;
        row.response_bytes = 0;
    }
    let trace = serde_json::to_string(&calls).expect("json");
    assert!(
        !trace.contains("42") && !trace.contains("expand"),
        "{trace}"
    );
    // The scan can find things: the upstream's canary is in guest memory.
    let memory = &r
        .artifacts
        .iter()
        .find(|a| a.path == "memory.bin")
        .expect("dump")
        .content;
    assert!(
        contains(memory.as_bytes(), CANARY),
        "the memory scan sees what the guest received"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minted_jwt_names_the_caller_and_never_reaches_the_guest() {
    let f = fixture().await;
    let r = call_lines(
        &f,
        &["minted"],
        &line("GET", "minted", "/v1/orders/7", &[]),
        Limits::default(),
        "alice",
    )
    .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert!(r.stdout.starts_with("ok 200"), "{}", r.stdout);
    let seen = f.upstream.seen();
    let auth = seen[0]
        .headers
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.clone())
        .expect("authorization");
    let token = auth.strip_prefix("Bearer ").expect("bearer");
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3);
    use base64::Engine as _;
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(parts[1])
            .expect("b64"),
    )
    .expect("claims");
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["aud"], "orders");
    assert_eq!(claims["scope"], "orders:read");
    let life = claims["exp"].as_u64().unwrap_or(0) - claims["iat"].as_u64().unwrap_or(0);
    assert_eq!(life, 15, "min(ttl 600 s, run 10 s + 5 s)");
    // Another caller may not use this profile.
    let refused = f
        .sandbox
        .run_as(
            "mallory",
            &RunRequest {
                grants: vec!["minted".into()],
                ..RunRequest::component("broker_caller")
            },
        )
        .await;
    assert_eq!(refused.error_code(), Some("grant_not_allowed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_and_header_tricks_are_denied_traced_and_never_sent() {
    let f = fixture().await;
    let long = format!("/v1/orders/{}", "a".repeat(10 * 1024));
    let many: Vec<(String, String)> = (0..40)
        .map(|i| (format!("x-h{i}"), "v".to_owned()))
        .collect();
    let many_refs: Vec<(&str, &str)> = many.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    // (name, method, path, headers)
    type Trick<'a> = (&'a str, &'a str, &'a str, Vec<(&'a str, &'a str)>);
    let tricks: Vec<Trick> = vec![
        ("dotdot", "GET", "/v1/orders/1/../admin", vec![]),
        ("encoded dotdot", "GET", "/v1/orders/%2e%2e", vec![]),
        ("encoded dotdot upper", "GET", "/v1/orders/%2E%2E", vec![]),
        ("encoded dot", "GET", "/v1/orders/%2e", vec![]),
        ("encoded slash", "GET", "/v1/orders/1%2Fadmin", vec![]),
        ("encoded slash lower", "GET", "/v1/orders/1%2fadmin", vec![]),
        ("encoded backslash", "GET", "/v1/orders/1%5cadmin", vec![]),
        ("encoded nul", "GET", "/v1/orders/%00", vec![]),
        (
            "encoded crlf",
            "GET",
            "/v1/orders/1%0d%0aX-Injected:%201",
            vec![],
        ),
        ("encoded unreserved", "GET", "/v1/orders/%61", vec![]),
        ("double slash prefix", "GET", "//v1/orders/1", vec![]),
        ("double slash inside", "GET", "/v1//orders/1", vec![]),
        ("trailing slash", "GET", "/v1/orders/1/", vec![]),
        ("dot segment", "GET", "/v1/orders/.", vec![]),
        ("mixed case", "GET", "/V1/Orders/1", vec![]),
        ("fullwidth digit", "GET", "/v1/orders/\u{ff11}", vec![]),
        ("fullwidth solidus", "GET", "/v1/orders\u{ff0f}1", vec![]),
        ("division slash", "GET", "/v1/orders\u{2215}1", vec![]),
        ("10 KB path", "GET", long.as_str(), vec![]),
        ("fragment", "GET", "/v1/orders/1#x", vec![]),
        ("backslash", "GET", "/v1/orders/1\\..\\admin", vec![]),
        (
            "raw crlf",
            "GET",
            "/v1/orders/1 HTTP/1.1\r\nHost: evil",
            vec![],
        ),
        ("relative", "GET", "v1/orders/1", vec![]),
        (
            "absolute form",
            "GET",
            "http://127.0.0.1:1/v1/orders/1",
            vec![],
        ),
        ("route not granted", "GET", "/v1/admin", vec![]),
        ("extra segment", "GET", "/v1/orders/1/items", vec![]),
        ("method not granted", "DELETE", "/v1/orders/1", vec![]),
        ("unknown method", "OPTIONS", "/v1/orders/1", vec![]),
        ("method with space", "GET ", "/v1/orders/1", vec![]),
        (
            "authorization from guest",
            "GET",
            "/v1/orders/1",
            vec![("Authorization", "Bearer stolen")],
        ),
        (
            "host header",
            "GET",
            "/v1/orders/1",
            vec![("Host", "evil.example")],
        ),
        (
            "duplicate host",
            "GET",
            "/v1/orders/1",
            vec![("Host", "a"), ("host", "b")],
        ),
        ("cookie", "GET", "/v1/orders/1", vec![("Cookie", "a=b")]),
        (
            "proxy header",
            "GET",
            "/v1/orders/1",
            vec![("Proxy-Authorization", "x")],
        ),
        (
            "crlf in header value",
            "GET",
            "/v1/orders/1",
            vec![("X-Note", "a\r\nX-Injected: 1")],
        ),
        (
            "lf in header value",
            "GET",
            "/v1/orders/1",
            vec![("X-Note", "a\nb")],
        ),
        (
            "transfer-encoding",
            "GET",
            "/v1/orders/1",
            vec![("Transfer-Encoding", "chunked")],
        ),
        (
            "content-length",
            "GET",
            "/v1/orders/1",
            vec![("Content-Length", "0")],
        ),
        (
            "connection",
            "GET",
            "/v1/orders/1",
            vec![("Connection", "close")],
        ),
        (
            "forwarded-for",
            "GET",
            "/v1/orders/1",
            vec![("X-Forwarded-For", "10.0.0.1")],
        ),
        (
            "method override",
            "GET",
            "/v1/orders/1",
            vec![("X-HTTP-Method-Override", "DELETE")],
        ),
        (
            "duplicate accept",
            "GET",
            "/v1/orders/1",
            vec![("Accept", "a"), ("accept", "b")],
        ),
        (
            "header name with colon",
            "GET",
            "/v1/orders/1",
            vec![("X-A:b", "c")],
        ),
        ("40 headers", "GET", "/v1/orders/1", many_refs),
    ];
    assert!(tricks.len() >= 30);
    let mut lines = String::new();
    for (_, m, p, h) in &tricks {
        lines.push_str(&line(m, "orders", p, h));
    }
    // Unknown grant names, including one with control characters.
    lines.push_str(&line("GET", "admin", "/v1/orders/1", &[]));
    lines.push_str(&line("GET", "orders\r\n", "/v1/orders/1", &[]));
    let r = call_lines(&f, &["orders"], &lines, Limits::default(), "local").await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let outputs: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with("dumped"))
        .collect();
    assert_eq!(outputs.len(), tricks.len() + 2);
    for (i, out) in outputs.iter().enumerate() {
        let name = tricks.get(i).map(|t| t.0).unwrap_or("unknown grant");
        assert_eq!(*out, "err denied", "trick {name:?} got {out:?}");
        assert_eq!(
            r.calls.rows[i].outcome,
            CallOutcome::Denied,
            "trick {name:?} not traced as denied"
        );
        assert!(r.calls.rows[i].reason.is_some());
    }
    assert!(
        f.upstream.seen().is_empty(),
        "a denied call reached the upstream: {:?}",
        f.upstream.seen()
    );
    // The trace echoes none of the tricks.
    let trace = serde_json::to_string(&r.calls).expect("json");
    for needle in ["admin", "evil", "stolen", "Injected", "%2e", "10.0.0.1"] {
        assert!(!trace.contains(needle), "trace contains {needle}: {trace}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_and_size_caps_hold() {
    let f = fixture().await;
    // The profile's own budget (3 calls).
    let lines: String = (0..5)
        .map(|i| line("GET", "tiny", &format!("/v1/orders/{i}"), &[]))
        .collect();
    let r = call_lines(&f, &["tiny"], &lines, Limits::default(), "local").await;
    let outs: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with("dumped"))
        .collect();
    assert_eq!(&outs[3..], ["err budget_exhausted", "err budget_exhausted"]);
    assert_eq!(f.upstream.seen().len(), 3);
    assert_eq!(r.calls.count(CallOutcome::BudgetExhausted), 2);
    f.upstream.clear();
    // The run's budget (envelope), across grants.
    let lines: String = (0..4)
        .map(|i| line("GET", "orders", &format!("/v1/orders/{i}"), &[]))
        .collect();
    let r = call_lines(
        &f,
        &["orders"],
        &lines,
        Limits {
            broker_calls: Some(2),
            ..Limits::default()
        },
        "local",
    )
    .await;
    assert_eq!(r.calls.count(CallOutcome::BudgetExhausted), 2);
    assert_eq!(f.upstream.seen().len(), 2);
    f.upstream.clear();

    // 1 MiB is sent; 1 MiB + 1 is refused before anything is sent.
    let exact = format!("POST\torders\t/v1/orders\tbody={}\n", 1 << 20);
    let over = format!("POST\torders\t/v1/orders\tbody={}\n", (1 << 20) + 1);
    let r = call_lines(
        &f,
        &["orders"],
        &format!("{exact}{over}"),
        Limits::default(),
        "local",
    )
    .await;
    let outs: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with("dumped"))
        .collect();
    assert!(outs[0].starts_with("ok 200"), "{outs:?}");
    assert_eq!(outs[1], "err request_too_large");
    assert_eq!(r.calls.rows[1].outcome, CallOutcome::RequestTooLarge);
    let seen = f.upstream.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].body_len, 1 << 20);
    f.upstream.clear();

    // A 4 MiB response is delivered; 4 MiB + 1 is refused.
    let lines = format!(
        "{}{}",
        line("GET", "orders", "/big/exact", &[]),
        line("GET", "orders", "/big/over", &[])
    );
    let r = call_lines(&f, &["orders"], &lines, Limits::default(), "local").await;
    let outs: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with("dumped"))
        .collect();
    assert!(
        outs[0].starts_with(&format!("ok 200 {}", 4 << 20)),
        "{outs:?}"
    );
    assert_eq!(outs[1], "err response_too_large");
    assert_eq!(r.calls.rows[1].outcome, CallOutcome::ResponseTooLarge);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_upstreams_time_out_inside_the_run_and_redirects_are_not_followed() {
    let f = fixture().await;
    let lines = format!(
        "{}{}{}",
        line("GET", "orders", "/slow/1", &[]),
        line("GET", "orders", "/moved/1", &[]),
        line("GET", "orders", "/v1/orders/1", &[])
    );
    let started = std::time::Instant::now();
    let r = call_lines(
        &f,
        &["orders"],
        &lines,
        Limits {
            broker_call_ms: Some(400),
            wall_time_ms: Some(5_000),
            ..Limits::default()
        },
        "local",
    )
    .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let outs: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with("dumped"))
        .collect();
    assert_eq!(outs[0], "err timeout");
    assert!(outs[1].starts_with("ok 302"), "{outs:?}");
    assert!(outs[2].starts_with("ok 200"), "{outs:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the timeout held: {:?}",
        started.elapsed()
    );
    assert_eq!(r.calls.rows[0].outcome, CallOutcome::Timeout);
    // The redirect was handed back, not followed.
    assert!(f.upstream.seen().iter().all(|s| s.target != "/v1/admin"));
    // set-cookie never reaches the guest (the guest prints only the body,
    // so check the trace and outputs do not carry it either).
    assert!(!r.stdout.contains("upstream-cookie"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_sheds_calls_without_reaching_the_upstream() {
    let f = fixture().await;
    let lines = format!(
        "{}{}",
        line("GET", "orders", "/limited/1", &[]),
        line("GET", "orders", "/v1/orders/1", &[])
    );
    let r = call_lines(&f, &["orders"], &lines, Limits::default(), "local").await;
    let outs: Vec<&str> = r
        .stdout
        .lines()
        .filter(|l| !l.starts_with("dumped"))
        .collect();
    assert!(outs[0].starts_with("ok 429"), "{outs:?}");
    assert_eq!(outs[1], "err upstream");
    assert_eq!(r.calls.rows[1].outcome, CallOutcome::Shed);
    assert_eq!(
        f.upstream.seen().len(),
        1,
        "the shed call never left the host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_forbidden_grant_requests_are_refused_before_running() {
    let f = fixture().await;
    let r = f
        .sandbox
        .run(&RunRequest {
            grants: vec!["nope".into()],
            ..RunRequest::component("marker")
        })
        .await;
    assert_eq!(r.error_code(), Some("unknown_grant"));
    let r = f
        .sandbox
        .run(&RunRequest {
            grants: vec!["orders".into(), "orders".into()],
            ..RunRequest::component("marker")
        })
        .await;
    assert_eq!(r.status, Status::Refused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standard_wasi_http_requests_pass_the_same_gate() {
    let f = fixture().await;
    let port = f.upstream.addr.map(|a| a.port()).unwrap_or(0);
    let authority = format!("127.0.0.1:{port}");
    let lines = [
        // Allowed: the grant whose origin this is, a granted route.
        format!("http\t{authority}\t/v1/orders/5?x=1\tx-request-id: abc"),
        // Same origin, a route the grant does not list.
        format!("http\t{authority}\t/v1/admin"),
        // Same origin, a non-canonical path.
        format!("http\t{authority}\t/v1/orders/%2e%2e"),
        // The guest's own Authorization header.
        format!("http\t{authority}\t/v1/orders/6\tauthorization: Bearer stolen"),
        // An origin no grant names (a real listener that must see nothing).
        format!(
            "http\t127.0.0.1:{}\t/v1/orders/5",
            f.other.local_addr().map(|a| a.port()).unwrap_or(1)
        ),
        // https to the same authority is another origin.
        format!("https\t{authority}\t/v1/orders/5"),
    ]
    .join("\n");
    let r = f
        .sandbox
        .run(&RunRequest {
            stdin: Blob::from(lines),
            grants: vec!["orders".into()],
            ..RunRequest::component("http_caller")
        })
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let outs: Vec<&str> = r.stdout.lines().collect();
    assert!(outs[0].starts_with("ok 200 "), "{outs:?}");
    assert!(outs[0].contains("/v1/orders/5"));
    for (i, o) in outs.iter().enumerate().skip(1) {
        assert!(
            o.starts_with("err ") && o.contains("HttpRequestDenied"),
            "line {i}: {o}"
        );
    }
    let seen = f.upstream.seen();
    assert_eq!(
        seen.len(),
        1,
        "only the allowed request left the host: {seen:?}"
    );
    assert_eq!(seen[0].target, "/v1/orders/5?x=1");
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(n, v)| n == "authorization" && v == &format!("Bearer {STATIC_TOKEN}"))
    );
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(n, v)| n == "x-request-id" && v == "abc")
    );
    assert!(matches!(f.other.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
    // Every request is in the CallTrace, as metadata.
    assert_eq!(r.calls.total(), 6);
    assert_eq!(r.calls.rows[0].outcome, CallOutcome::Delivered);
    assert_eq!(r.calls.rows[0].route.as_deref(), Some("/v1/orders/*"));
    assert_eq!(r.calls.count(CallOutcome::Denied), 5);
    let json = serde_json::to_string(&r).expect("json");
    assert!(!json.contains(STATIC_TOKEN) && !json.contains("stolen") && !json.contains("admin"));
}

/// An upstream that echoes the request hands the injected credential back,
/// raw or re-encoded, in the body, a header or a trailer, under any transfer
/// or content coding: every such answer is withheld, traced as
/// `credential_reflected`, and no form of the credential reaches the
/// guest's memory, outputs or result — for the static token and the minted
/// JWT, through the broker import and through `wasi:http`. An answer in a
/// coding the host cannot decode is withheld as `undecodable`; a compressed
/// answer without the credential arrives byte-exact (issue #34).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflected_credential_is_withheld_in_every_encoding() {
    let f = fixture().await;
    for (grant, caller) in [("orders", "local"), ("minted", "alice")] {
        f.upstream.clear();
        let modes: Vec<&str> = ECHO_MODES
            .iter()
            .chain(UNDECODABLE_MODES)
            .chain(CLEAN_MODES)
            .copied()
            .collect();
        let lines: String = modes
            .iter()
            .map(|m| line("GET", grant, &format!("/v1/echo/{m}"), &[]))
            .collect::<String>()
            + &line("GET", grant, "/v1/orders/1", &[]);
        let r = call_lines(&f, &[grant], &lines, Limits::default(), caller).await;
        assert_eq!(r.status, Status::Ok, "{r:?}");
        let outs: Vec<&str> = r.stdout.lines().collect();
        for (i, mode) in modes.iter().enumerate() {
            let (want_out, want_outcome) = if ECHO_MODES.contains(mode) {
                ("err upstream".to_owned(), CallOutcome::CredentialReflected)
            } else if UNDECODABLE_MODES.contains(mode) {
                ("err upstream".to_owned(), CallOutcome::Undecodable)
            } else {
                (
                    format!("ok 200 {}", clean_body(mode).len()),
                    CallOutcome::Delivered,
                )
            };
            assert!(
                outs[i].starts_with(&want_out),
                "{grant} {mode}: {}",
                outs[i]
            );
            assert_eq!(r.calls.rows[i].outcome, want_outcome, "{grant} {mode}");
            if want_outcome != CallOutcome::Delivered {
                assert_eq!(r.calls.rows[i].status, None, "{grant} {mode}");
            }
        }
        // An answer without the credential still gets through.
        assert!(outs[modes.len()].starts_with("ok 200 "), "{outs:?}");
        assert_eq!(
            f.upstream.seen().len(),
            modes.len() + 1,
            "every call was made; only the answers were withheld"
        );
        // The broker asked for an answer it can check.
        assert!(f.upstream.seen().iter().all(|s| {
            s.headers
                .iter()
                .any(|(n, v)| n == "accept-encoding" && v == "identity")
        }));
        // Besides the raw scan of `call_lines`, no encoded form either.
        let json = serde_json::to_string(&r).expect("json");
        for s in f.upstream.seen() {
            for (n, v) in &s.headers {
                if n == "authorization" {
                    let token = v.trim_start_matches("Bearer ");
                    for form in plimsoll::grant::reflection::patterns(token.as_bytes()) {
                        let form = String::from_utf8_lossy(&form).into_owned();
                        assert!(!json.contains(&form), "{grant}: an encoded form leaked");
                    }
                }
            }
        }
    }

    // wasi:http goes through the same check.
    let port = f.upstream.addr.map(|a| a.port()).unwrap_or(0);
    let lines = ["raw", "base64", "header"]
        .iter()
        .map(|m| format!("http\t127.0.0.1:{port}\t/v1/echo/{m}"))
        .collect::<Vec<_>>()
        .join("\n");
    let r = f
        .sandbox
        .run(&RunRequest {
            stdin: Blob::from(lines),
            grants: vec!["orders".into()],
            ..RunRequest::component("http_caller")
        })
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.calls.count(CallOutcome::CredentialReflected), 3, "{r:?}");
    assert!(
        r.stdout.lines().all(|l| l.starts_with("err ")),
        "{}",
        r.stdout
    );
    let json = serde_json::to_string(&r).expect("json");
    assert!(!json.contains(STATIC_TOKEN));
}
