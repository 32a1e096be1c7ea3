//! Standard HTTP in the interpreters against `plimsoll.call`, in one run:
//! the same granted GET of a small JSON body from a loopback upstream,
//! made each way from inside a guest, interleaved call by call (this VM's
//! speed drifts), timed inside the guest with its own monotonic clock.
//!
//! Python (both guests): `plimsoll.get`, `requests.get`, a reused
//! `requests.Session().get`, `urllib.request.urlopen` and `http.client`.
//! JavaScript: `plimsoll.get` and `fetch`. Each figure is the p50 of one
//! call, in µs; the column that matters is each way's extra cost over
//! `plimsoll.get` (target: ≤ 200 µs for `fetch` and `requests.get`).
//!
//! Run with `cargo bench -p plimsoll --bench std_http`
//! (`PLIMSOLL_BENCH_RUNS` sets the calls per way, default 300). Figures are
//! in docs/benchmarks.md.

use bytes::Bytes;
use http_body_util::Full;
use plimsoll::grant::GrantProfiles;
use plimsoll::{
    Envelope, Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status,
};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

fn guests() -> PathBuf {
    std::env::var_os("PLIMSOLL_GUESTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests"))
}

/// An upstream that answers every request with the same small JSON body.
async fn upstream() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let svc = hyper::service::service_fn(|_req| async {
                    Ok::<_, Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from_static(br#"{"id":1,"ok":true}"#)))
                            .unwrap_or_default(),
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    addr
}

const PYTHON: &str = r#"
import http.client, json, time, urllib.request
import plimsoll, requests
URL = "http://ADDR/v1/items/1"
session = requests.Session()
def via_http_client():
    c = http.client.HTTPConnection("HOST", PORT)
    c.request("GET", "/v1/items/1")
    return c.getresponse().read()
ways = {
    "plimsoll.get": lambda: plimsoll.get("items", "/v1/items/1").json(),
    "requests.get": lambda: requests.get(URL).json(),
    "requests.Session().get": lambda: session.get(URL).json(),
    "urllib.request.urlopen": lambda: json.loads(urllib.request.urlopen(URL).read()),
    "http.client": via_http_client,
}
for f in ways.values():
    f()
times = {k: [] for k in ways}
for _ in range(CALLS):
    for k, f in ways.items():
        t = time.perf_counter()
        f()
        times[k].append(time.perf_counter() - t)
print(json.dumps({k: sorted(v)[len(v) // 2] * 1e6 for k, v in times.items()}))
"#;

const JAVASCRIPT: &str = r#"
const URL_ = "http://ADDR/v1/items/1";
const ways = {
    "plimsoll.get": async () => (await plimsoll.get("items", "/v1/items/1")).json(),
    "fetch": async () => (await fetch(URL_)).json(),
};
for (const f of Object.values(ways)) await f();
const times = {};
for (const k of Object.keys(ways)) times[k] = [];
// Date.now() is in ms: time blocks of calls, then divide.
const now = typeof performance !== "undefined" && performance.now ? () => performance.now() : () => Date.now();
const BLOCK = 25;
for (let i = 0; i < CALLS / BLOCK; i++) {
    for (const [k, f] of Object.entries(ways)) {
        const t = now();
        for (let j = 0; j < BLOCK; j++) await f();
        const e = now() - t;
        times[k].push(e * 1000 / BLOCK);
    }
}
const p50 = (v) => v.sort((a, b) => a - b)[v.length >> 1];
const out = {};
for (const k of Object.keys(times)) out[k] = p50(times[k]);
console.log(JSON.stringify(out));
"#;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("std_http: benchmark");
        return;
    }
    let n: usize = std::env::var("PLIMSOLL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let addr = upstream().await;
        let json = format!(
            r#"{{"profiles": {{"items": {{"base_url": "http://{addr}", "allow": ["GET /v1/items/*"], "token": {{"type": "static", "env": "T"}}, "max_calls": 1000000}}}}}}"#
        );
        let grants = GrantProfiles::from_json(&json, &|k| {
            (k == "T").then(|| "bench-token-0123456789abcdef".to_owned())
        })
        .expect("grants");
        let state = tempfile::tempdir().expect("tempdir");
        let g = guests();
        let scientific = g.join("scientific");
        let s = Sandbox::new(SandboxConfig {
            provider: ProviderKind::Wasm,
            runtime: RuntimeConfig {
                cache_dir: Some(g.join("../test-cache")),
                workspace_dir: state.path().join("work"),
                ..RuntimeConfig::default()
            },
            envelope: Envelope {
                broker_calls: 100_000,
                wall_time_ms: 600_000,
                fuel: 500_000_000_000_000,
                ..Envelope::default()
            },
            interpreters: vec![
                (Language::Python, g.join("python.wasm")),
                (Language::Javascript, g.join("javascript.wasm")),
            ],
            scientific: scientific
                .join("scientific.wasm")
                .is_file()
                .then_some(scientific),
            grants,
            ..SandboxConfig::default()
        })
        .expect("sandbox");
        let fill = |t: &str| {
            t.replace("ADDR", &addr.to_string())
                .replace("HOST", &addr.ip().to_string())
                .replace("PORT", &addr.port().to_string())
                .replace("CALLS", &n.to_string())
        };
        println!("# a granted GET of an 18-byte JSON body from loopback, p50 per call ({n} calls each way, interleaved)");
        println!("| guest | way | p50 µs | over plimsoll.get |");
        println!("|---|---|---:|---:|");
        let cases = [
            ("python", Language::Python, None, PYTHON),
            ("scientific", Language::Python, Some("scientific"), PYTHON),
            ("javascript", Language::Javascript, None, JAVASCRIPT),
        ];
        for (label, language, guest, template) in cases {
            if guest.is_some() && s.scientific().is_none() {
                println!("| {label} | (not built) | | |");
                continue;
            }
            let mut req = RunRequest::code(language, fill(template));
            req.guest = guest.map(str::to_owned);
            req.grants = vec!["items".into()];
            let r = s.run(&req).await;
            assert_eq!(r.status, Status::Ok, "{label}: {:?} {}", r.error, r.stderr);
            let figures: serde_json::Map<String, serde_json::Value> =
                serde_json::from_str(r.stdout.trim()).expect("figures");
            let floor = figures
                .get("plimsoll.get")
                .and_then(|v| v.as_f64())
                .unwrap_or(f64::NAN);
            for (way, v) in &figures {
                let us = v.as_f64().unwrap_or(f64::NAN);
                println!("| {label} | `{way}` | {us:.0} | {:+.0} |", us - floor);
            }
        }
    });
}
