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

#[path = "support/listen.rs"]
mod listen;

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
    workspace(&rt, &state, &cache, tmp.path(), secs);
    fleet(&state, &cache, &js, tmp.path(), secs);
}

/// A program the fleet rows need (Debian's redis-server and haproxy,
/// `make setup`).
fn program(name: &str) -> PathBuf {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is missing: the fleet rows run the real Redis and HAProxy; `make setup` installs them")
        })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The fleet's costs (#38): the shared checks in Redis against a single
/// node, one client interleaved call by call; and three nodes behind
/// HAProxy against one node behind it, 64 clients.
fn fleet(state: &Path, cache: &Path, js: &Path, tmp: &Path, secs: Duration) {
    let redis_port = free_port();
    let mut redis = Command::new(program("redis-server"))
        .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(tmp)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server");
    let t = Instant::now();
    while TcpStream::connect(("127.0.0.1", redis_port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("redis://127.0.0.1:{redis_port}/");
    let node = |i: usize, agent: u16| {
        let tag = format!("{i:04x}");
        let agent = format!("127.0.0.1:{agent}");
        let st = state.join(format!("fleet-{i}"));
        let env: Vec<(&str, &str)> = vec![
            ("PLIMSOLL_NODE_TAG", &tag),
            ("PLIMSOLL_SHARED_STATE_URL", &url),
            ("PLIMSOLL_FLEET_SIZE", "3"),
            ("PLIMSOLL_AGENT_ADDR", &agent),
        ];
        start_daemon_env(&st, cache, js, &env)
    };
    let (mut single, addr_single) = start_daemon(&state.join("fleet-single"), cache, js, "batch");
    let agents: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut nodes: Vec<(std::process::Child, SocketAddr)> =
        (0..3).map(|i| node(i, agents[i])).collect();
    let _ = over_http(addr_single, 1, Duration::from_millis(300));
    let _ = over_http(nodes[0].1, 1, Duration::from_millis(300));
    // One client, interleaved: the shared checks are the only difference.
    let (one, shared) = {
        let (mut a, mut b) = (Conn::open(addr_single), Conn::open(nodes[0].1));
        let (mut la, mut lb) = (Vec::new(), Vec::new());
        let t0 = Instant::now();
        while t0.elapsed() < secs * 2 {
            let t = Instant::now();
            assert_eq!(a.post(), 200);
            la.push(t.elapsed());
            let t = Instant::now();
            assert_eq!(b.post(), 200, "the fleet node refused a run");
            lb.push(t.elapsed());
        }
        // Each side's own time: one client, one call at a time.
        let (wa, wb) = (la.iter().sum(), lb.iter().sum());
        (stats(la, wa), stats(lb, wb))
    };
    // HAProxy with the deployed config, in front of one node and of three.
    let haproxy = |nodes: &[(std::process::Child, SocketAddr)], agents: &[u16]| {
        let bind = format!("127.0.0.1:{}", free_port());
        let mut cmd = Command::new(program("haproxy"));
        cmd.arg("-db")
            .arg("-f")
            .arg(repo().join("deploy/haproxy/plimsoll.cfg"))
            .env("PLIMSOLL_HAPROXY_BIND", &bind)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (i, &agent) in agents.iter().enumerate() {
            // Absent nodes point at a closed port: HAProxy marks them down.
            let (api, agent) = match nodes.get(i) {
                Some((_, a)) => (a.to_string(), agent),
                None => (format!("127.0.0.1:{}", free_port()), free_port()),
            };
            cmd.env(format!("PLIMSOLL_NODE_{i:04x}"), api)
                .env(format!("PLIMSOLL_AGENT_PORT_{i:04x}"), agent.to_string());
        }
        let child = cmd.spawn().expect("haproxy");
        let addr: SocketAddr = bind.parse().expect("addr");
        // Its checks mark the nodes up within a second or two.
        std::thread::sleep(Duration::from_secs(3));
        (child, addr)
    };
    let (mut lb1, addr1) = haproxy(&nodes[..1], &agents);
    let _ = over_http(addr1, 8, Duration::from_millis(500));
    let behind_one = over_http(addr1, 64, secs);
    let _ = lb1.kill();
    let _ = lb1.wait();
    let (mut lb3, addr3) = haproxy(&nodes, &agents);
    let _ = over_http(addr3, 8, Duration::from_millis(500));
    let behind_three = over_http(addr3, 64, secs);
    let _ = lb3.kill();
    let _ = lb3.wait();
    println!();
    println!("| the fleet (#38), JavaScript `1+1`, REST | runs/s | p50 / p99 | against |");
    println!("|---|---:|---:|---|");
    println!(
        "| single node, 1 client | {:.0} | {:.0} / {:.0} µs | |",
        one.runs_per_sec, one.p50_us, one.p99_us
    );
    println!(
        "| fleet node (Redis: rate + lease; settle off the answer's path), 1 client | {:.0} | {:.0} / {:.0} µs | {:+.0} µs at p50 |",
        shared.runs_per_sec,
        shared.p50_us,
        shared.p99_us,
        shared.p50_us - one.p50_us
    );
    println!(
        "| HAProxy → 1 fleet node, 64 clients | {:.0} | {:.0} / {:.0} µs | |",
        behind_one.runs_per_sec, behind_one.p50_us, behind_one.p99_us
    );
    println!(
        "| HAProxy → 3 fleet nodes, 64 clients | {:.0} | {:.0} / {:.0} µs | {:.2}× the one node |",
        behind_three.runs_per_sec,
        behind_three.p50_us,
        behind_three.p99_us,
        behind_three.runs_per_sec / behind_one.runs_per_sec
    );
    stop(&mut single);
    for (c, _) in nodes.iter_mut() {
        stop(c);
    }
    let _ = redis.kill();
    let _ = redis.wait();
}

fn stop(child: &mut std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let _ = child.wait();
}

/// The Workspace client's fixed steps (plimsoll-client 0.23.0,
/// `workspace.py`), byte for byte.
const EXEC_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; pwd > "$__plimsoll_s/root"; [ -f "$__plimsoll_s/env" ] && . "$__plimsoll_s/env"; [ -f "$__plimsoll_s/cwd" ] && cd "$(cat "$__plimsoll_s/cwd")" 2>/dev/null; . "$__plimsoll_s/cmd"; __plimsoll_rc=$?; export -p | grep -Ev '^export (PWD|OLDPWD|__plimsoll_)' > "$__plimsoll_s/env.new"; mv "$__plimsoll_s/env.new" "$__plimsoll_s/env"; pwd > "$__plimsoll_s/cwd"; exit $__plimsoll_rc"#;
const READ_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; head -c "$(cat "$__plimsoll_s/a2")" -- "$(cat "$__plimsoll_s/a1")" > "$__plimsoll_s/out""#;
const WRITE_B64_STEP: &str = r#"__plimsoll_s="$PWD/.plimsoll-shell"; mkdir -p "$__plimsoll_s"; __plimsoll_p="$(cat "$__plimsoll_s/a1")"; mkdir -p "$(dirname "$__plimsoll_p")" && base64 -d "$__plimsoll_s/in.b64" > "$__plimsoll_p""#;
/// CodeExecutor's Python step (`Run{project}`): the daemon's fresh Python
/// run, without a shell.
const PYTHON_STEP: &str =
    r#"python3 -c 'import runpy; runpy.run_path(".plimsoll/code.py", run_name="__main__")'"#;

/// A `SessionRun{project}` as `Workspace` sends it: one step, its files,
/// its artifacts, the floor and timeout it states.
fn session_project(
    session: &str,
    step: &str,
    files: &[(&str, &str)],
    artifacts: &[&str],
) -> String {
    let files: Vec<_> = files
        .iter()
        .map(|(p, c)| serde_json::json!({"path": p, "content": c}))
        .collect();
    let mut project = serde_json::json!({"steps": [step]});
    if !files.is_empty() {
        project["files"] = files.into();
    }
    if !artifacts.is_empty() {
        project["artifacts"] = artifacts.into();
    }
    serde_json::json!({
        "protocol": 4,
        "minimumIsolation": "process",
        "timeoutMs": 120000,
        "project": project,
        "sessionId": session,
    })
    .to_string()
}

/// The one step report of a project answer, after checking the outcome.
fn step_of(v: &serde_json::Value) -> &serde_json::Value {
    // `SessionRun` answers `{run: {project}}`, `Run` `{project}`.
    let p = if v["run"].is_null() {
        &v["project"]
    } else {
        &v["run"]["project"]
    };
    assert_eq!(p["outcome"], "PROJECT_OUTCOME_COMPLETED", "{v}");
    let step = &p["steps"][0];
    assert_eq!(step["exitCode"].as_i64().unwrap_or(0), 0, "{v}");
    step
}

fn b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The shell guest's Workspace calls (#36) through `plimsolld`, one client
/// on keep-alive connections, against the library's
/// `run_project_in_session` with the same project, interleaved call by
/// call: `exec("echo hi")`, `read` and `write` of 1 KiB through both
/// audit modes, and `exec("python3 -c 'print(1)'")` against the daemon's
/// fresh Python run (CodeExecutor's step, no shell).
fn workspace(rt: &tokio::runtime::Runtime, state: &Path, cache: &Path, tmp: &Path, secs: Duration) {
    let components: Vec<(&str, PathBuf)> = [
        ("PLIMSOLL_PYTHON_COMPONENT", "python.wasm"),
        ("PLIMSOLL_JAVASCRIPT_COMPONENT", "javascript.wasm"),
        ("PLIMSOLL_SHELL_COMPONENT", "shell.wasm"),
    ]
    .into_iter()
    .map(|(v, f)| (v, guests_dir().join(f)))
    .collect();
    if let Some((_, p)) = components.iter().find(|(_, p)| !p.is_file()) {
        println!(
            "\nSKIP the Workspace rows: {} is missing (run `make guests`)",
            p.display()
        );
        return;
    }
    let refs: Vec<(&str, &Path)> = components.iter().map(|(v, p)| (*v, p.as_path())).collect();
    let (mut always, addr_always) =
        start_daemon_with(&state.join("ws-always"), cache, &refs, "always");
    let (mut batch, addr_batch) = start_daemon_with(&state.join("ws-batch"), cache, &refs, "batch");
    let sandbox = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        interpreters: vec![
            (Language::Python, components[0].1.clone()),
            (Language::Javascript, components[1].1.clone()),
            (Language::Shell, components[2].1.clone()),
        ],
        runtime: RuntimeConfig {
            cache_dir: Some(cache.to_path_buf()),
            workspace_dir: tmp.join("ws-work"),
            ..RuntimeConfig::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let far = Instant::now() + Duration::from_secs(600);
    let guests: Vec<_> = [Language::Python, Language::Javascript, Language::Shell]
        .into_iter()
        .map(|l| {
            rt.block_on(sandbox.interpreter_by(l, None, far))
                .unwrap_or_else(|e| panic!("{}: {e:?}", l.as_str()))
        })
        .collect();
    let opts = plimsoll::session::SessionOptions {
        guests,
        start: vec![0],
        keep_on_failure: true,
        lifetime: None,
        idle_timeout: None,
        owner: None,
    };
    let lib_session = rt
        .block_on(sandbox.open_session_with("bench", &opts, &RunRequest::default()))
        .expect("library session")
        .session_id;
    // A Workspace's session on each daemon: `open_session(languages=["python"])`.
    let open = |addr| {
        let mut c = Conn::open(addr);
        // The daemon compiles its guests in the background at start.
        let t0 = Instant::now();
        let v = loop {
            let status = c.post_to(
                "/plimsoll.v1.SandboxService/OpenSession",
                r#"{"protocol":4,"minimumIsolation":"process","languages":["python"]}"#,
                "",
            );
            let v: serde_json::Value = serde_json::from_slice(&c.body).expect("json");
            if status == 200 {
                break v;
            }
            assert!(t0.elapsed() < Duration::from_secs(600), "OpenSession: {v}");
            std::thread::sleep(Duration::from_millis(200));
        };
        let id = v["sessionId"].as_str().expect("sessionId").to_string();
        (c, id)
    };
    let (mut ca, sa) = open(addr_always);
    let (mut cb, sb) = open(addr_batch);

    let data: Vec<u8> = (0..1024u32).map(|i| (i % 256) as u8).collect();
    let data_b64 = b64(&data);
    let exec_of = |s: &str, cmd: &str| {
        session_project(
            s,
            EXEC_STEP,
            &[(".plimsoll-shell/cmd", cmd)],
            &[".plimsoll-shell/root", ".plimsoll-shell/cwd"],
        )
    };
    let read_of = |s: &str| {
        session_project(
            s,
            READ_STEP,
            &[
                (".plimsoll-shell/a1", "data.bin"),
                (".plimsoll-shell/a2", "1048576"),
            ],
            &[".plimsoll-shell/out"],
        )
    };
    let write_of = |s: &str| {
        session_project(
            s,
            WRITE_B64_STEP,
            &[
                (".plimsoll-shell/a1", "data.bin"),
                (".plimsoll-shell/in.b64", &data_b64),
            ],
            &[],
        )
    };
    let (exec_a, exec_b) = (exec_of(&sa, "echo hi"), exec_of(&sb, "echo hi"));
    let (read_a, read_b) = (read_of(&sa), read_of(&sb));
    let (write_a, write_b) = (write_of(&sa), write_of(&sb));
    let py_exec_b = exec_of(&sb, "python3 -c 'print(1)'");
    let py_run_b = serde_json::json!({
        "protocol": 4,
        "minimumIsolation": "process",
        "timeoutMs": 30000,
        "project": {
            "steps": [PYTHON_STEP],
            "files": [{"path": ".plimsoll/code.py", "content": "print(1)"}],
        },
    })
    .to_string();
    let lib = |req: &plimsoll::sandbox::project::ProjectRequest| {
        let p = rt.block_on(sandbox.run_project_in_session("bench", &lib_session, req));
        assert_eq!(
            p.outcome,
            plimsoll::sandbox::project::ProjectOutcome::Completed,
            "{p:?}"
        );
        assert_eq!(p.steps[0].result.exit_code, Some(0), "{p:?}");
        p
    };
    let lib_exec = plimsoll::sandbox::project::ProjectRequest {
        steps: vec![EXEC_STEP.into()],
        files: vec![plimsoll::InputFile {
            path: ".plimsoll-shell/cmd".into(),
            content: "echo hi".into(),
        }],
        capture: vec![".plimsoll-shell/root".into(), ".plimsoll-shell/cwd".into()],
        ..Default::default()
    };
    let hi = b64(b"hi\n");
    let one = b64(b"1\n");
    let exec = |c: &mut Conn, body: &str, out: &str| {
        let v = c.connect("SessionRun", body);
        assert_eq!(step_of(&v)["stdout"], out, "{v}");
        assert_eq!(
            v["run"]["project"]["artifacts"].as_array().map(Vec::len),
            Some(2),
            "{v}"
        );
    };
    let read = |c: &mut Conn, body: &str| {
        let v = c.connect("SessionRun", body);
        step_of(&v);
        assert_eq!(
            v["run"]["project"]["artifacts"][0]["content"], data_b64,
            "{v}"
        );
    };
    let write = |c: &mut Conn, body: &str| {
        let v = c.connect("SessionRun", body);
        step_of(&v);
    };
    let run_python = |c: &mut Conn| {
        let v = c.connect("Run", &py_run_b);
        assert_eq!(step_of(&v)["stdout"], one, "{v}");
    };
    // Warm every path; the file the reads read.
    for _ in 0..30 {
        lib(&lib_exec);
        exec(&mut ca, &exec_a, &hi);
        exec(&mut cb, &exec_b, &hi);
        write(&mut ca, &write_a);
        write(&mut cb, &write_b);
        read(&mut ca, &read_a);
        read(&mut cb, &read_b);
        exec(&mut cb, &py_exec_b, &one);
        run_python(&mut cb);
    }

    let mut lat: Vec<Vec<Duration>> = vec![Vec::new(); 7];
    let t0 = Instant::now();
    while t0.elapsed() < secs * 7 {
        let mut time = |i: usize, f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            lat[i].push(t.elapsed());
        };
        time(0, &mut || {
            lib(&lib_exec);
        });
        time(1, &mut || exec(&mut ca, &exec_a, &hi));
        time(2, &mut || exec(&mut cb, &exec_b, &hi));
        time(3, &mut || read(&mut ca, &read_a));
        time(4, &mut || read(&mut cb, &read_b));
        time(5, &mut || write(&mut ca, &write_a));
        time(6, &mut || write(&mut cb, &write_b));
    }
    let wall = t0.elapsed() / 7;
    let st: Vec<Stats> = lat.into_iter().map(|l| stats(l, wall)).collect();
    let (mut pe, mut pr) = (Vec::new(), Vec::new());
    let t0 = Instant::now();
    while t0.elapsed() < secs * 2 {
        let t = Instant::now();
        exec(&mut cb, &py_exec_b, &one);
        pe.push(t.elapsed());
        let t = Instant::now();
        run_python(&mut cb);
        pr.push(t.elapsed());
    }
    let wall = t0.elapsed() / 2;
    let (pe, pr) = (stats(pe, wall), stats(pr, wall));

    println!();
    println!(
        "Workspace calls through plimsolld (protocol 4 `SessionRun{{project}}`, one client, keep-alive), interleaved call by call, {} s:",
        secs.as_secs() * 7
    );
    println!(
        "| call | library `run_project_in_session` p50 / p99 | daemon `always` p50 / p99 | daemon `batch` p50 / p99 |"
    );
    println!("|---|---:|---:|---:|");
    let ms = |s: &Stats| format!("{:.2} / {:.2} ms", s.p50_us / 1e3, s.p99_us / 1e3);
    println!(
        "| `exec(\"echo hi\")` | {} | {} | {} |",
        ms(&st[0]),
        ms(&st[1]),
        ms(&st[2])
    );
    println!("| `read` 1 KiB | | {} | {} |", ms(&st[3]), ms(&st[4]));
    println!("| `write` 1 KiB | | {} | {} |", ms(&st[5]), ms(&st[6]));
    println!();
    println!(
        "daemon `batch`, interleaved, {} s: `exec(\"python3 -c 'print(1)'\")` {} against the fresh Python run (CodeExecutor's step, `Run{{project}}`) {}: {:+.2} ms at p50 (target ≤ +1 ms)",
        secs.as_secs() * 2,
        ms(&pe),
        ms(&pr),
        (pe.p50_us - pr.p50_us) / 1e3
    );
    rt.block_on(async {
        sandbox.close_session("bench", &lib_session);
    });
    stop(&mut always);
    stop(&mut batch);
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
