//! Standard HTTP in the interpreters (issue #25): `fetch` in JavaScript,
//! `urllib.request`, `http.client` and `requests` in both Python guests,
//! each through the run's grants, against a real loopback upstream.
//!
//! Each guest runs one cell that makes the same calls every way it has and
//! prints what each call gave (a value, or the exception's type, class
//! chain and message). The checks: every granted call reached the upstream
//! with the credential the guest never saw; a route outside the grant, an
//! origin outside every grant, a redirect to one, a 5 MiB answer over the
//! cap and an upstream slower than the call's timeout each fail in the
//! guest's own terms (the standard library's exceptions, `TypeError` for
//! `fetch`), with the host's reason; every call is in the CallTrace; and
//! nothing reached the second upstream, which no grant names.

mod support;

use plimsoll::envelope::Limits;
use plimsoll::trace::CallOutcome;
use plimsoll::{Language, RunRequest, RunResult, Sandbox, Status};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::OnceLock;
use support::upstream::*;
use support::*;

/// The upstream the grant names, and one no grant names.
struct Upstreams {
    granted: Upstream,
    addr: SocketAddr,
    elsewhere: Upstream,
    other: SocketAddr,
}

async fn upstreams() -> Upstreams {
    let (granted, addr) = start_upstream().await;
    let (elsewhere, other) = start_upstream().await;
    Upstreams {
        granted,
        addr,
        elsewhere,
        other,
    }
}

fn sandbox(u: &Upstreams, scientific: bool) -> (tempfile::TempDir, Sandbox) {
    let dir = tempfile::tempdir().expect("tempdir");
    let addr = u.addr;
    let s = sandbox_in(dir.path(), |c| {
        c.grants = profiles(addr);
        if scientific {
            let d = guests_dir().join("scientific");
            assert!(
                d.join("scientific.wasm").is_file(),
                "{} is missing; build the guests first with `make guests`",
                d.display()
            );
            c.scientific = Some(d);
        }
    });
    (dir, s)
}

/// The request: the cell, the `orders` grant, and a per-call timeout of
/// one second (the upstream's `/slow/1` answers after three).
fn request(language: Language, code: String, scientific: bool) -> RunRequest {
    let mut r = RunRequest::code(language, code);
    if scientific {
        r.guest = Some("scientific".into());
    }
    r.grants = vec!["orders".into()];
    r.limits = Limits {
        broker_call_ms: Some(1000),
        ..Limits::default()
    };
    r
}

fn fill(template: &str, u: &Upstreams) -> String {
    template
        .replace("ADDR", &u.addr.to_string())
        .replace("HOST", &u.addr.ip().to_string())
        .replace("PORT", &u.addr.port().to_string())
        .replace("OTHER", &u.other.to_string())
}

const PYTHON_CELL: &str = r#"
import http.client, json, time, urllib.error, urllib.request
import plimsoll, requests

A = "http://ADDR"
O = "http://OTHER"
out = {}

def attempt(name, f):
    t = time.monotonic()
    try:
        out[name] = {"ok": True, "value": f()}
    except BaseException as e:
        out[name] = {
            "ok": False,
            "type": type(e).__name__,
            "mro": [c.__name__ for c in type(e).__mro__],
            "message": str(e),
        }
    out[name]["seconds"] = time.monotonic() - t

def via_http_client(path):
    c = http.client.HTTPConnection("HOST", PORT, timeout=5)
    c.request("GET", path, headers={"x-request-id": "r3"})
    r = c.getresponse()
    return [r.status, json.loads(r.read())["order"], r.getheader("content-type")]

def via_urllib(url, **kw):
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Accept": "application/json"}), **kw) as r:
        return [r.status, json.loads(r.read())["order"]]

attempt("plimsoll", lambda: plimsoll.get("orders", "/v1/orders/1").json()["order"])
attempt("urllib", lambda: via_urllib(A + "/v1/orders/2?x=1"))
attempt("http_client", lambda: via_http_client("/v1/orders/3"))
attempt("requests", lambda: (lambda r: [r.status_code, r.json()["order"], r.headers["Content-Type"]])(
    requests.get(A + "/v1/orders/4", params={"q": "a b"}, timeout=5)))
attempt("requests_post", lambda: requests.post(A + "/v1/orders", json={"item": 7}).status_code)
attempt("urllib_route", lambda: via_urllib(A + "/v1/admin"))
attempt("requests_route", lambda: requests.get(A + "/v1/admin"))
attempt("http_client_origin", lambda: (lambda c: (c.request("GET", "/v1/orders/5"), c.getresponse()))(
    http.client.HTTPConnection("OTHER".split(":")[0], int("OTHER".split(":")[1]))))
attempt("urllib_origin", lambda: via_urllib(O + "/v1/orders/5"))
attempt("requests_origin", lambda: requests.get(O + "/v1/orders/5"))
attempt("urllib_redirect", lambda: via_urllib(A + "/moved/away?to=" + O + "/steal"))
attempt("requests_redirect", lambda: requests.get(A + "/moved/away?to=" + O + "/steal"))
attempt("requests_big", lambda: len(requests.get(A + "/big/five").content))
attempt("urllib_big", lambda: len(urllib.request.urlopen(A + "/big/five").read()))
attempt("requests_slow", lambda: requests.get(A + "/slow/1", timeout=0.3).text)
attempt("urllib_slow", lambda: urllib.request.urlopen(A + "/slow/1").read())
print(json.dumps(out))
"#;

const JAVASCRIPT_CELL: &str = r#"
const A = "http://ADDR", O = "http://OTHER";
const out = {};
async function attempt(name, f) {
    const t = Date.now();
    try {
        out[name] = { ok: true, value: await f() };
    } catch (e) {
        out[name] = {
            ok: false,
            type: e.name,
            message: String(e.message),
            cause: e.cause ? e.cause.name : null,
            reason: e.cause ? String(e.cause.reason ?? e.cause.message) : null,
        };
    }
    out[name].seconds = (Date.now() - t) / 1000;
}
await attempt("plimsoll", async () => (await plimsoll.get("orders", "/v1/orders/1")).json().order);
await attempt("fetch", async () => {
    const r = await fetch(A + "/v1/orders/2?x=1", { headers: { "X-Request-Id": "j2" } });
    return [r.status, r.ok, (await r.json()).order, r.headers.get("Content-Type")];
});
await attempt("fetch_post", async () => {
    const r = await fetch(new Request(A + "/v1/orders", {
        method: "POST", body: JSON.stringify({ item: 7 }), headers: { "content-type": "application/json" },
    }));
    return [r.status, (await r.arrayBuffer()).byteLength > 0];
});
await attempt("fetch_route", () => fetch(A + "/v1/admin"));
await attempt("fetch_origin", () => fetch(O + "/v1/orders/5"));
await attempt("fetch_redirect", () => fetch(A + "/moved/away?to=" + O + "/steal"));
await attempt("fetch_manual", async () => (await fetch(A + "/moved/away?to=" + O + "/steal", { redirect: "manual" })).status);
await attempt("fetch_big", async () => (await (await fetch(A + "/big/five")).text()).length);
await attempt("fetch_slow", () => fetch(A + "/slow/1", { signal: AbortSignal.timeout(300) }));
console.log(JSON.stringify(out));
"#;

/// Runs `cell` and returns the result and the cell's report.
async fn run_cell(s: &Sandbox, req: &RunRequest) -> (RunResult, Value) {
    let r = s.run(req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let report: Value = serde_json::from_str(r.stdout.trim())
        .unwrap_or_else(|e| panic!("the cell's report is not JSON ({e}): {}", r.stdout));
    if std::env::var_os("PLIMSOLL_TEST_VERBOSE").is_some() {
        eprintln!("{report:#}\n{:?}", r.usage);
    }
    (r, report)
}

fn entry<'a>(report: &'a Value, name: &str) -> &'a Value {
    report
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {report}"))
}

fn value<'a>(report: &'a Value, name: &str) -> &'a Value {
    let e = entry(report, name);
    assert_eq!(e["ok"], true, "{name} failed: {e}");
    &e["value"]
}

/// A failed attempt: its report, after checking that it failed with a
/// message holding `reason`.
fn failed<'a>(report: &'a Value, name: &str, reason: &str) -> &'a Value {
    let e = entry(report, name);
    assert_eq!(e["ok"], false, "{name} should have failed: {e}");
    let said = format!("{} {}", e["message"], e["reason"]);
    assert!(
        said.to_lowercase().contains(&reason.to_lowercase()),
        "{name}: {reason:?} not in {e}"
    );
    e
}

fn has_class(e: &Value, class: &str) -> bool {
    e["mro"]
        .as_array()
        .is_some_and(|m| m.iter().any(|c| c == class))
}

/// What every guest must show: the credential reached the upstream on
/// every granted call and nowhere else; nothing reached the other
/// upstream; the result does not hold the credential.
fn common_checks(u: &Upstreams, r: &RunResult, granted_paths: &[&str]) {
    let seen = u.granted.seen();
    for path in granted_paths {
        let call = seen
            .iter()
            .find(|s| s.target.starts_with(path))
            .unwrap_or_else(|| panic!("{path} never reached the upstream: {seen:?}"));
        assert!(
            call.headers
                .iter()
                .any(|(n, v)| n == "authorization" && v == &format!("Bearer {STATIC_TOKEN}")),
            "{path} went without the credential: {call:?}"
        );
        assert!(
            call.headers
                .iter()
                .all(|(n, v)| n != "accept-encoding" || v == "identity"),
            "{call:?}"
        );
    }
    assert!(
        !seen.iter().any(|s| s.target.starts_with("/v1/admin")),
        "a route outside the grant was sent: {seen:?}"
    );
    assert!(
        u.elsewhere.seen().is_empty(),
        "a request reached the upstream no grant names: {:?}",
        u.elsewhere.seen()
    );
    let json = serde_json::to_string(r).expect("json");
    assert!(
        !json.contains(STATIC_TOKEN),
        "the credential is in the result"
    );
    assert!(r.calls.count(CallOutcome::Denied) >= 3, "{:?}", r.calls);
    assert!(
        r.calls.count(CallOutcome::ResponseTooLarge) >= 1,
        "{:?}",
        r.calls
    );
    assert!(r.calls.count(CallOutcome::Timeout) >= 1, "{:?}", r.calls);
}

/// The one POST reached the upstream with its body, `body`.
fn posted(u: &Upstreams, body: &[u8]) {
    let post = u
        .granted
        .seen()
        .into_iter()
        .find(|s| s.method == "POST")
        .expect("the POST reached the upstream");
    assert_eq!(post.body_len, body.len(), "{post:?}");
}

async fn python_checks(scientific: bool) {
    let u = upstreams().await;
    let (_dir, s) = sandbox(&u, scientific);
    let req = request(Language::Python, fill(PYTHON_CELL, &u), scientific);
    let (r, report) = run_cell(&s, &req).await;
    assert_eq!(value(&report, "plimsoll"), "/v1/orders/1");
    assert_eq!(
        value(&report, "urllib"),
        &serde_json::json!([200, "/v1/orders/2"])
    );
    assert_eq!(
        value(&report, "http_client"),
        &serde_json::json!([200, "/v1/orders/3", "application/json"])
    );
    assert_eq!(
        value(&report, "requests"),
        &serde_json::json!([200, "/v1/orders/4", "application/json"])
    );
    assert_eq!(value(&report, "requests_post"), 200);
    // Each refusal in the library's own exception, with the host's reason:
    // a route outside the grant; an origin no grant covers (as for an
    // unreachable host), directly and as a redirect's target (followed by
    // the library, refused there); an answer over the response cap; the
    // grant's own timeout (1 s) for urllib.
    for (name, reason, class) in [
        ("urllib_route", "no route of the grant matches", "URLError"),
        (
            "requests_route",
            "no route of the grant matches",
            "ConnectionError",
        ),
        (
            "http_client_origin",
            "no grant covers this origin",
            "OSError",
        ),
        ("urllib_origin", "no grant covers this origin", "URLError"),
        (
            "requests_origin",
            "no grant covers this origin",
            "ConnectionError",
        ),
        ("urllib_redirect", "no grant covers this origin", "URLError"),
        (
            "requests_redirect",
            "no grant covers this origin",
            "ConnectionError",
        ),
        ("requests_big", "response cap", "RequestException"),
        ("urllib_big", "response cap", "URLError"),
        ("urllib_slow", "time", "URLError"),
    ] {
        let e = failed(&report, name, reason);
        assert!(has_class(e, class), "{name}: not a {class}: {e}");
    }
    // The client's own, shorter timeout (0.3 s) holds.
    let e = failed(&report, "requests_slow", "time");
    assert!(has_class(e, "Timeout"), "{e}");
    assert!(e["seconds"].as_f64().is_some_and(|t| t < 0.9), "{e}");
    common_checks(
        &u,
        &r,
        &[
            "/v1/orders/1",
            "/v1/orders/2?x=1",
            "/v1/orders/3",
            "/v1/orders/4?q=a+b",
            "/moved/away",
        ],
    );
    posted(&u, br#"{"item": 7}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_guest_reaches_grants_through_urllib_http_client_and_requests() {
    python_checks(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scientific_guest_reaches_grants_through_urllib_http_client_and_requests() {
    python_checks(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_javascript_guest_reaches_grants_through_fetch() {
    let u = upstreams().await;
    let (_dir, s) = sandbox(&u, false);
    let req = request(Language::Javascript, fill(JAVASCRIPT_CELL, &u), false);
    let (r, report) = run_cell(&s, &req).await;
    assert_eq!(value(&report, "plimsoll"), "/v1/orders/1");
    assert_eq!(
        value(&report, "fetch"),
        &serde_json::json!([200, true, "/v1/orders/2", "application/json"])
    );
    assert_eq!(
        value(&report, "fetch_post"),
        &serde_json::json!([200, true])
    );
    for (name, reason, cause) in [
        ("fetch_route", "no route of the grant matches", "Denied"),
        ("fetch_origin", "no grant covers this origin", "Denied"),
        ("fetch_redirect", "no grant covers this origin", "Denied"),
        ("fetch_big", "response cap", "ResponseTooLarge"),
    ] {
        let e = failed(&report, name, reason);
        assert_eq!(e["type"], "TypeError", "{name}: {e}");
        assert_eq!(e["cause"], cause, "{name}: {e}");
    }
    assert_eq!(value(&report, "fetch_manual"), 302);
    let e = entry(&report, "fetch_slow");
    assert_eq!(e["ok"], false, "{e}");
    assert_eq!(e["type"], "TimeoutError", "{e}");
    assert!(e["seconds"].as_f64().is_some_and(|t| t < 0.9), "{e}");
    common_checks(&u, &r, &["/v1/orders/1", "/v1/orders/2?x=1", "/moved/away"]);
    posted(&u, br#"{"item":7}"#);
}

/// The same checks once behind a boundary: calls by URL cross from the
/// worker to the supervisor like broker calls (with the shorter timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_by_url_cross_the_bubblewrap_boundary() {
    static HAVE: OnceLock<bool> = OnceLock::new();
    let have = *HAVE.get_or_init(|| {
        std::process::Command::new("bwrap")
            .args(["--unshare-all", "--ro-bind", "/", "/", "true"])
            .status()
            .is_ok_and(|s| s.success())
    });
    if !have {
        eprintln!("SKIP: bubblewrap cannot run here; .ci/run installs it");
        return;
    }
    let u = upstreams().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let addr = u.addr;
    let s = sandbox_in(dir.path(), |c| {
        c.grants = profiles(addr);
        c.provider = plimsoll::ProviderKind::WasmBwrap;
        c.workers = plimsoll::provider::WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm: 0,
            max: 2,
            image_dir: Some(guests_dir().join("../test-worker-images")),
            ..Default::default()
        };
    });
    let req = request(Language::Javascript, fill(JAVASCRIPT_CELL, &u), false);
    let (r, report) = run_cell(&s, &req).await;
    assert_eq!(r.isolation.tier, plimsoll::Tier::Container);
    assert_eq!(
        value(&report, "fetch"),
        &serde_json::json!([200, true, "/v1/orders/2", "application/json"])
    );
    let e = entry(&report, "fetch_slow");
    assert_eq!(e["type"], "TimeoutError", "{e}");
    assert!(e["seconds"].as_f64().is_some_and(|t| t < 0.9), "{e}");
    common_checks(&u, &r, &["/v1/orders/2?x=1"]);
}

/// Every reflected form of the credential, under every coding, stays out of
/// the standard clients (issue #34): each echo answer fails in the
/// library's own terms, an undecodable one too, and a compressed answer
/// without the credential arrives byte-exact (the library decodes it, not
/// the host). In-process and behind bubblewrap.
const REFLECTION_PYTHON: &str = r#"
import hashlib, http.client, json, urllib.request
import requests

A = "http://ADDR"
MODES = MODES_JSON
out = {}
for mode in MODES:
    try:
        if LIB == "requests":
            r = requests.get(A + "/v1/echo/" + mode, timeout=5)
            body = r.content
        elif LIB == "urllib":
            with urllib.request.urlopen(A + "/v1/echo/" + mode, timeout=5) as r:
                body = r.read()
        else:
            c = http.client.HTTPConnection("HOST", PORT, timeout=5)
            c.request("GET", "/v1/echo/" + mode)
            body = c.getresponse().read()
        out[mode] = {"ok": True, "sha": hashlib.sha256(body).hexdigest()}
    except BaseException as e:
        out[mode] = {"ok": False, "type": type(e).__name__}
print(json.dumps(out))
"#;

const REFLECTION_JAVASCRIPT: &str = r#"
const A = "http://ADDR";
const out = {};
for (const mode of MODES_JSON) {
    try {
        const r = await fetch(A + "/v1/echo/" + mode);
        const b = new Uint8Array(await r.arrayBuffer());
        out[mode] = { ok: true, len: b.length, head: Array.from(b.slice(0, 2)) };
    } catch (e) {
        out[mode] = { ok: false, type: e.name };
    }
}
console.log(JSON.stringify(out));
"#;

fn echo_modes() -> Vec<&'static str> {
    ECHO_MODES
        .iter()
        .chain(UNDECODABLE_MODES)
        .chain(CLEAN_MODES)
        .copied()
        .collect()
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(b))
}

/// Runs every echo mode through each standard client of the guest in `s`
/// and checks what each got.
async fn reflection_checks(s: &Sandbox, u: &Upstreams, tier: plimsoll::Tier) {
    let modes = serde_json::to_string(&echo_modes()).expect("json");
    for lib in ["requests", "urllib", "http_client"] {
        let code = fill(REFLECTION_PYTHON, u)
            .replace("MODES_JSON", &modes)
            .replace("LIB", &format!("{lib:?}"));
        let r = s.run(&request(Language::Python, code, false)).await;
        assert_eq!(r.status, Status::Ok, "{lib}: {r:?}");
        assert_eq!(r.isolation.tier, tier);
        let report: Value = serde_json::from_str(r.stdout.trim()).expect("report");
        for mode in echo_modes() {
            let e = &report[mode];
            if CLEAN_MODES.contains(&mode) {
                assert_eq!(e["ok"], true, "{lib} {mode}: {e}");
                let body = clean_body(mode);
                // requests decodes a gzip content coding itself.
                let want = if lib == "requests" && mode == "clean-gzip" {
                    plimsoll::grant::reflection::codings::Coding::Gzip
                        .decode(&body, 1 << 20)
                        .expect("gunzip")
                } else {
                    body
                };
                assert_eq!(e["sha"], sha256_hex(&want), "{lib} {mode}: not byte-exact");
            } else {
                assert_eq!(e["ok"], false, "{lib} {mode} reached the guest: {e}");
            }
        }
        let json = serde_json::to_string(&r).expect("json");
        assert!(!json.contains(STATIC_TOKEN), "{lib}");
        assert_eq!(
            r.calls.count(CallOutcome::CredentialReflected) as usize,
            ECHO_MODES.len(),
            "{lib}: {:?}",
            r.calls
        );
        assert_eq!(
            r.calls.count(CallOutcome::Undecodable) as usize,
            UNDECODABLE_MODES.len(),
            "{lib}"
        );
    }
    let code = fill(REFLECTION_JAVASCRIPT, u).replace("MODES_JSON", &modes);
    let r = s.run(&request(Language::Javascript, code, false)).await;
    assert_eq!(r.status, Status::Ok, "fetch: {r:?}");
    let report: Value = serde_json::from_str(r.stdout.trim()).expect("report");
    for mode in echo_modes() {
        let e = &report[mode];
        if CLEAN_MODES.contains(&mode) {
            assert_eq!(e["ok"], true, "fetch {mode}: {e}");
        } else {
            assert_eq!(e["ok"], false, "fetch {mode} reached the guest: {e}");
            assert_eq!(e["type"], "TypeError", "fetch {mode}: {e}");
        }
    }
    // A .tar.gz arrives as sent, gzip.
    assert_eq!(
        report["clean-targz"]["head"],
        serde_json::json!([0x1f, 0x8b])
    );
    assert!(
        !serde_json::to_string(&r)
            .expect("json")
            .contains(STATIC_TOKEN)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflected_credential_never_reaches_a_standard_client() {
    let u = upstreams().await;
    let (_dir, s) = sandbox(&u, false);
    reflection_checks(&s, &u, plimsoll::Tier::Process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflected_credential_never_crosses_the_bubblewrap_boundary() {
    let have = std::process::Command::new("bwrap")
        .args(["--unshare-all", "--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        eprintln!("SKIP: bubblewrap cannot run here; .ci/run installs it");
        return;
    }
    let u = upstreams().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let addr = u.addr;
    let s = sandbox_in(dir.path(), |c| {
        c.grants = profiles(addr);
        c.provider = plimsoll::ProviderKind::WasmBwrap;
        c.workers = plimsoll::provider::WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm: 0,
            max: 2,
            image_dir: Some(guests_dir().join("../test-worker-images")),
            ..Default::default()
        };
    });
    reflection_checks(&s, &u, plimsoll::Tier::Container).await;
}
