//! The daemon's cost over the library call: JavaScript `1+1` over HTTP with
//! 1, 8 and 64 concurrent clients (each on its own keep-alive connection),
//! against the library's `Sandbox::run_as` with the same concurrency, in
//! the same run.
//!
//! Then the shell guest's Workspace calls (#36): `exec("echo hi")`, `read`
//! and `write` of 1 KiB as plimsoll-client's `Workspace` sends them
//! (`SessionRun{project}` with its fixed steps), through two more daemons
//! that have the shell guest, against the library's
//! `run_project_in_session`; and `exec("python3 -c 'print(1)'")` against
//! the daemon's fresh Python run.
//!
//! `make bench-daemon` (or `cargo bench -p plimsolld --bench daemon`).
//! `PLIMSOLL_BENCH_SECS` sets the seconds per measurement (default 3).

#[path = "daemon_fleet.rs"]
mod fleet;
#[path = "support/listen.rs"]
mod listen;
#[path = "support/steps.rs"]
mod steps;
#[path = "daemon_workspace.rs"]
mod workspace;

use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn guests_dir() -> PathBuf {
    std::env::var_os("PLIMSOLL_GUESTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/guests"))
}

const BODY: &str = r#"{"language":"javascript","code":"1+1"}"#;
/// The same run in plimsoll protocol 4 (Connect, `Run`).
const CONNECT_BODY: &str = r#"{"protocol":4,"javascript":{"code":"1+1"}}"#;

struct Stats {
    runs_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
}

fn stats(mut lat: Vec<Duration>, wall: Duration) -> Stats {
    lat.sort();
    let pick = |q: f64| {
        let i = ((lat.len() as f64 - 1.0) * q).round() as usize;
        lat.get(i)
            .map(|d| d.as_secs_f64() * 1e6)
            .unwrap_or(f64::NAN)
    };
    Stats {
        runs_per_sec: lat.len() as f64 / wall.as_secs_f64(),
        p50_us: pick(0.50),
        p99_us: pick(0.99),
    }
}

/// One keep-alive connection: POST, read exactly one response.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    /// The last response's body.
    body: Vec<u8>,
    /// Protocol calls sent (each gets its own request id).
    calls: u64,
}

impl Conn {
    fn open(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        Conn {
            reader: BufReader::new(s.try_clone().expect("clone")),
            writer: s,
            body: Vec::new(),
            calls: 0,
        }
    }

    fn post(&mut self) -> u16 {
        self.post_to("/v1/runs", BODY, "")
    }

    /// A protocol 4 `Run` of the same code, with its request id.
    fn post_connect(&mut self) -> u16 {
        self.post_to(
            "/plimsoll.v1.SandboxService/Run",
            CONNECT_BODY,
            "Plimsoll-Request-Id: 0123456789abcdef0123456789abcdef\r\n",
        )
    }

    fn post_to(&mut self, path: &str, body: &str, headers: &str) -> u16 {
        let req = format!(
            "POST {path} HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        self.writer.write_all(req.as_bytes()).expect("write");
        listen::read_response(&mut self.reader, &mut self.body)
    }

    /// A protocol 4 call of `procedure` with `body`; the answer's JSON.
    fn connect(&mut self, procedure: &str, body: &str) -> serde_json::Value {
        self.calls += 1;
        let status = self.post_to(
            &format!("/plimsoll.v1.SandboxService/{procedure}"),
            body,
            &format!("Plimsoll-Request-Id: {:032x}\r\n", self.calls),
        );
        let v: serde_json::Value = serde_json::from_slice(&self.body).expect("a JSON answer");
        assert_eq!(status, 200, "{procedure}: {v}");
        v
    }
}

fn over_http(addr: SocketAddr, clients: usize, secs: Duration) -> Stats {
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Conn::open(addr);
                let mut lat = Vec::new();
                let t0 = Instant::now();
                while t0.elapsed() < secs {
                    let t = Instant::now();
                    let status = c.post();
                    assert_eq!(status, 200, "the daemon refused a benchmark run");
                    lat.push(t.elapsed());
                }
                lat
            })
        })
        .collect();
    let lat: Vec<Duration> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("client"))
        .collect();
    stats(lat, start.elapsed())
}

fn in_library(
    rt: &tokio::runtime::Runtime,
    sb: &Arc<Sandbox>,
    clients: usize,
    secs: Duration,
) -> Stats {
    let req = Arc::new(RunRequest::code(Language::Javascript, "1+1"));
    let start = Instant::now();
    let lat = rt.block_on(async {
        let tasks: Vec<_> = (0..clients)
            .map(|_| {
                let sb = sb.clone();
                let req = req.clone();
                tokio::spawn(async move {
                    let mut lat = Vec::new();
                    let t0 = Instant::now();
                    while t0.elapsed() < secs {
                        let t = Instant::now();
                        let r = sb.run_as("bench", &req).await;
                        assert_eq!(r.status, plimsoll::Status::Ok);
                        lat.push(t.elapsed());
                    }
                    lat
                })
            })
            .collect();
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.expect("task"));
        }
        all
    });
    stats(lat, start.elapsed())
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("daemon: benchmark");
        return;
    }
    let secs = Duration::from_secs(
        std::env::var("PLIMSOLL_BENCH_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3),
    );
    let js = guests_dir().join("javascript.wasm");
    assert!(
        js.is_file(),
        "{} is missing: run `make guests`",
        js.display()
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let cache = repo().join("target/test-cache");
    // The state directory (audit log, ledger) is on the same file system a
    // deployment would use: PLIMSOLL_BENCH_STATE_DIR, else the temp dir.
    let state = std::env::var_os("PLIMSOLL_BENCH_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("state"));
    let (mut always, addr_always) = start_daemon(&state.join("always"), &cache, &js, "always");
    let (mut batch, addr_batch) = start_daemon(&state.join("batch"), &cache, &js, "batch");

    let sandbox = Arc::new(
        Sandbox::new(SandboxConfig {
            provider: ProviderKind::Wasm,
            interpreters: vec![(Language::Javascript, js.clone())],
            runtime: RuntimeConfig {
                cache_dir: Some(cache.clone()),
                workspace_dir: tmp.path().join("work"),
                ..RuntimeConfig::default()
            },
            ..SandboxConfig::default()
        })
        .expect("sandbox"),
    );
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // Warm every path.
    let _ = over_http(addr_always, 1, Duration::from_millis(300));
    let _ = over_http(addr_batch, 1, Duration::from_millis(300));
    let _ = in_library(&rt, &sandbox, 1, Duration::from_millis(300));

    println!(
        "JavaScript 1+1, {} s per cell; audit log on {} (`always`: fdatasync before each answer; `batch`: within 100 ms)",
        secs.as_secs(),
        state.display()
    );
    println!(
        "| clients | library runs/s | library p50 / p99 | daemon `always` runs/s | p50 / p99 | daemon `batch` runs/s | p50 / p99 | p50 added (`always` / `batch`) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|");
    let row = |clients: usize, lib: &Stats, a: &Stats, b: &Stats| {
        println!(
            "| {clients} | {:.0} | {:.0} / {:.0} µs | {:.0} | {:.0} / {:.0} µs | {:.0} | {:.0} / {:.0} µs | {:+.0} / {:+.0} µs |",
            lib.runs_per_sec,
            lib.p50_us,
            lib.p99_us,
            a.runs_per_sec,
            a.p50_us,
            a.p99_us,
            b.runs_per_sec,
            b.p50_us,
            b.p99_us,
            a.p50_us - lib.p50_us,
            b.p50_us - lib.p50_us
        );
    };
    // One client: the three paths interleaved call by call, so that all
    // three see the same machine (this VM's speed drifts by tens of percent
    // over seconds).
    {
        let req = RunRequest::code(Language::Javascript, "1+1");
        let (mut ca, mut cb) = (Conn::open(addr_always), Conn::open(addr_batch));
        let (mut l, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
        let t0 = Instant::now();
        while t0.elapsed() < secs * 3 {
            let t = Instant::now();
            let r = rt.block_on(sandbox.run_as("bench", &req));
            assert_eq!(r.status, plimsoll::Status::Ok);
            l.push(t.elapsed());
            let t = Instant::now();
            assert_eq!(ca.post(), 200);
            a.push(t.elapsed());
            let t = Instant::now();
            assert_eq!(cb.post(), 200);
            b.push(t.elapsed());
        }
        let wall = t0.elapsed() / 3;
        row(1, &stats(l, wall), &stats(a, wall), &stats(b, wall));
    }
    // The protocol's path against REST, on one daemon (`batch`), one
    // client, interleaved call by call: the wire, the digests and the
    // record are the only difference.
    let (rest, connect) = {
        let (mut cr, mut cc) = (Conn::open(addr_batch), Conn::open(addr_batch));
        let (mut r, mut c) = (Vec::new(), Vec::new());
        let t0 = Instant::now();
        while t0.elapsed() < secs * 2 {
            let t = Instant::now();
            assert_eq!(cr.post(), 200);
            r.push(t.elapsed());
            let t = Instant::now();
            assert_eq!(
                cc.post_connect(),
                200,
                "the daemon refused a protocol 4 run"
            );
            c.push(t.elapsed());
        }
        let wall = t0.elapsed() / 2;
        (stats(r, wall), stats(c, wall))
    };
    for clients in [8usize, 64] {
        let lib = in_library(&rt, &sandbox, clients, secs);
        let a = over_http(addr_always, clients, secs);
        let b = over_http(addr_batch, clients, secs);
        row(clients, &lib, &a, &b);
    }
    println!();
    println!(
        "| one client, daemon `batch` | REST `/v1/runs` p50 / p99 | protocol 4 `Run` p50 / p99 | protocol 4 added at p50 |"
    );
    println!("|---|---:|---:|---:|");
    println!(
        "| JavaScript `1+1` | {:.0} / {:.0} µs | {:.0} / {:.0} µs | {:+.0} µs |",
        rest.p50_us,
        rest.p99_us,
        connect.p50_us,
        connect.p99_us,
        connect.p50_us - rest.p50_us
    );
    for child in [&mut always, &mut batch] {
        stop(child);
    }
    drop(sandbox);
    workspace::workspace(&rt, &state, &cache, tmp.path(), secs);
    fleet::fleet(&state, &cache, &js, tmp.path(), secs);
}

fn stop(child: &mut std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}

fn start_daemon(
    state: &Path,
    cache: &Path,
    js: &Path,
    sync: &str,
) -> (std::process::Child, SocketAddr) {
    start_daemon_with(state, cache, &[("PLIMSOLL_JAVASCRIPT_COMPONENT", js)], sync)
}

/// A `batch` daemon with JavaScript and the settings `env`.
fn start_daemon_env(
    state: &Path,
    cache: &Path,
    js: &Path,
    env: &[(&str, &str)],
) -> (std::process::Child, SocketAddr) {
    let owned: Vec<(String, PathBuf)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), PathBuf::from(v)))
        .collect();
    let mut all: Vec<(&str, &Path)> = vec![("PLIMSOLL_JAVASCRIPT_COMPONENT", js)];
    all.extend(owned.iter().map(|(k, v)| (k.as_str(), v.as_path())));
    start_daemon_with(state, cache, &all, "batch")
}

/// A `plimsolld` with the components in `components` (environment
/// variable, path).
fn start_daemon_with(
    state: &Path,
    cache: &Path,
    components: &[(&str, &Path)],
    sync: &str,
) -> (std::process::Child, SocketAddr) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_plimsolld"));
    cmd.env_clear();
    for (var, path) in components {
        cmd.env(var, path);
    }
    listen::spawn_listening(
        cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SANDBOX_PROVIDER", "wasm")
            .env("PLIMSOLL_INSECURE", "1")
            .env("PLIMSOLL_LISTEN", "127.0.0.1:0")
            .env("PLIMSOLL_METRICS_ADDR", "off")
            .env("PLIMSOLL_STATE_DIR", state)
            .env("PLIMSOLL_CACHE_DIR", cache)
            .env("PLIMSOLL_AUDIT_SYNC", sync)
            .env("PLIMSOLL_LOG", "error"),
    )
}
