//! A fleet of plimsolld on the engines operators run (docs/operations.md,
//! "A fleet"): a real `redis-server` and `haproxy` from Debian (installed by
//! `make setup`), three plimsolld on loopback, and the pinned
//! plimsoll-client driving them through HAProxy with
//! deploy/haproxy/plimsoll.cfg, the very file operators deploy.
//!
//! Nothing is mocked: a node is killed with SIGKILL, drained with SIGTERM,
//! restarted with its tag; Redis is stopped and started again.

#[path = "support/daemon.rs"]
mod support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;

// ------------------------------------------------------------- the parts

/// A program the fleet's tests need; missing, the test says so loudly.
fn program(name: &str) -> PathBuf {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"] {
        let p = PathBuf::from(dir).join(name);
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "{name} is missing: the fleet's tests run the real Redis and HAProxy from Debian; install them with `make setup` (apt-get install redis-server haproxy)"
    );
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A real redis-server on a loopback port, with no persistence.
struct Redis {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
}

impl Redis {
    fn start() -> Redis {
        let mut r = Redis {
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().expect("tempdir"),
        };
        r.up();
        r
    }

    /// Starts it (again) on its port.
    fn up(&mut self) {
        let child = Command::new(program("redis-server"))
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let t = Instant::now();
        while self.cli(&["PING"]).trim() != "PONG" {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "redis-server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn cli(&self, args: &[&str]) -> String {
        Command::new(program("redis-cli"))
            .args(["-p", &self.port.to_string(), "--raw"])
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    }

    /// Every key and every value it holds, as text (to show what Redis
    /// sees).
    fn everything(&self) -> String {
        let mut out = String::new();
        for k in self.cli(&["KEYS", "*"]).lines().filter(|l| !l.is_empty()) {
            out.push_str(k);
            out.push('\n');
            let v = match self.cli(&["TYPE", k]).trim() {
                "string" => self.cli(&["GET", k]),
                "zset" => self.cli(&["ZRANGE", k, "0", "-1", "WITHSCORES"]),
                "hash" => self.cli(&["HGETALL", k]),
                "set" => self.cli(&["SMEMBERS", k]),
                _ => String::new(),
            };
            out.push_str(&v);
        }
        out
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One node of the fleet: where it listens, and the daemon when it runs.
struct Node {
    tag: &'static str,
    api: SocketAddr,
    agent: u16,
    daemon: Option<Daemon>,
}

const RATE: &str = "rate-token-3b9c77aa01";
const CONC: &str = "conc-token-5d1e20bb42";
const CAP: &str = "cap-token-8f0a44cc93";

/// The fleet's callers: alice and bob with room to spare, and one caller
/// per shared limit.
fn callers_json() -> String {
    let plenty = r#""rate_per_min": 100000, "max_concurrent": 64, "max_sessions": 200"#;
    format!(
        r#"{{"clients": [
        {{"id": "alice", "token_sha256": "{}", "scopes": ["code:run", "info:read"], {plenty}}},
        {{"id": "bob", "token_sha256": "{}", "scopes": ["code:run", "info:read"], {plenty}}},
        {{"id": "rate", "token_sha256": "{}", "scopes": ["code:run", "info:read"], "rate_per_min": 60, "max_concurrent": 64, "max_sessions": 8}},
        {{"id": "conc", "token_sha256": "{}", "scopes": ["code:run", "info:read"], "rate_per_min": 100000, "max_concurrent": 4, "max_sessions": 8}},
        {{"id": "cap", "token_sha256": "{}", "scopes": ["code:run", "info:read"], "rate_per_min": 100000, "max_concurrent": 8, "max_sessions": 3, "cpu_seconds_per_day": 3}}
    ]}}"#,
        sha(ALICE),
        sha(BOB),
        sha(RATE),
        sha(CONC),
        sha(CAP)
    )
}

const FLEET_KEY: &str = "4f1c2b7e9a0d3c5e8f6a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a";

/// Starts node `n` of a fleet on `redis` (`key`: with the fleet's key, so
/// that it hands its sessions over when it drains).
fn start_node(n: &mut Node, redis: &Redis, key: bool, extra: &[(&str, &str)]) {
    let s = Setup::new(None);
    s.file("clients.json", &callers_json());
    let mut s = s
        .set("PLIMSOLL_LISTEN", n.api.to_string())
        .set("PLIMSOLL_NODE_TAG", n.tag)
        .set("PLIMSOLL_SHARED_STATE_URL", redis.url())
        .set("PLIMSOLL_FLEET_SIZE", "3")
        .set("PLIMSOLL_AGENT_ADDR", format!("127.0.0.1:{}", n.agent))
        .set("PLIMSOLL_SESSION_DRAIN_SECS", "20")
        .set("PLIMSOLL_LOG", "info");
    if key {
        let k = s.file("fleet.key", FLEET_KEY);
        s = s.set("PLIMSOLL_FLEET_KEY_FILE", k);
    }
    for (k, v) in extra {
        s = s.set(k, *v);
    }
    n.daemon = Some(s.start());
}

/// HAProxy with deploy/haproxy/plimsoll.cfg in front of `nodes`, and a
/// stats socket the test reads the servers' states from.
struct Haproxy {
    child: Child,
    addr: SocketAddr,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Haproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Haproxy {
    fn start(nodes: &[Node]) -> Haproxy {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("stats.sock");
        let extra = dir.path().join("stats.cfg");
        std::fs::write(
            &extra,
            format!(
                "global\n    stats socket {} mode 600 level admin\n",
                socket.display()
            ),
        )
        .expect("stats cfg");
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        let mut cmd = Command::new(program("haproxy"));
        cmd.arg("-db")
            .arg("-f")
            .arg(repo().join("deploy/haproxy/plimsoll.cfg"))
            .arg("-f")
            .arg(&extra)
            .env("PLIMSOLL_HAPROXY_BIND", addr.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for n in nodes {
            cmd.env(format!("PLIMSOLL_NODE_{}", n.tag), n.api.to_string())
                .env(
                    format!("PLIMSOLL_AGENT_PORT_{}", n.tag),
                    n.agent.to_string(),
                );
        }
        let child = cmd.spawn().expect("spawn haproxy");
        let h = Haproxy {
            child,
            addr,
            socket,
            _dir: dir,
        };
        h.wait_for(|s| s.values().all(|st| st == "UP"), "every server UP");
        h
    }

    /// Each server's status (`UP`, `DOWN`, `DRAIN`, …), by tag.
    fn servers(&self) -> BTreeMap<String, String> {
        let Ok(mut s) = std::os::unix::net::UnixStream::connect(&self.socket) else {
            return BTreeMap::new();
        };
        let _ = s.write_all(b"show stat\n");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        let mut lines = text.lines();
        let head: Vec<&str> = lines
            .next()
            .unwrap_or("")
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let col = |name: &str| head.iter().position(|h| *h == name);
        let (Some(px), Some(sv), Some(st)) = (col("pxname"), col("svname"), col("status")) else {
            return BTreeMap::new();
        };
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| {
                f.get(px) == Some(&"plimsolld") && f.get(sv).is_some_and(|s| s.starts_with('n'))
            })
            .map(|f| (f[sv].trim_start_matches('n').to_owned(), f[st].to_owned()))
            .collect()
    }

    fn wait_for(&self, ok: impl Fn(&BTreeMap<String, String>) -> bool, what: &str) {
        let t = Instant::now();
        loop {
            let s = self.servers();
            if !s.is_empty() && ok(&s) {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "HAProxy: {what}: {s:?}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The pinned plimsoll-client, driven one command at a time
/// (tests/protocol/cluster_checks.py).
struct Driver {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Driver {
    fn start(url: &str) -> Driver {
        let python = repo().join("target/clients/venv/bin/python");
        assert!(
            python.is_file(),
            "{} is missing: the fleet's tests drive it with the real plimsoll-client 0.23.0; install it with `make clients`",
            python.display()
        );
        let mut child = Command::new(python)
            .arg(repo().join("tests/protocol/cluster_checks.py"))
            .env("PLIMSOLL_URL", url)
            .env("PLIMSOLL_TOKEN", ALICE)
            .env("PLIMSOLL_OTHER_TOKEN", BOB)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the client driver");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut d = Driver {
            child,
            stdin,
            stdout,
        };
        let ready = d.read();
        assert!(ready.get("ready").is_some(), "{ready}");
        d
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        let _ = self.stdout.read_line(&mut line);
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("the driver said {line:?}: {e}"))
    }

    fn ask(&mut self, m: Value) -> Value {
        writeln!(self.stdin, "{m}").expect("write to the driver");
        self.stdin.flush().expect("flush");
        self.read()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{}", json!({"op": "quit"}));
        let _ = self.child.wait();
    }
}

// ------------------------------------------------------------- helpers

fn tag_of(id: &str) -> &str {
    &id[..4]
}

/// Audit lines of `d` with `event`.
fn audit_lines(d: &Daemon, event: &str) -> Vec<Value> {
    d.audit()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["event"] == event)
        .collect()
}

fn js_run(addr: SocketAddr, token: &str, code: &str) -> Resp {
    let body = json!({"language": "javascript", "code": code}).to_string();
    call(addr, "POST", "/v1/runs", Some(token), Some(&body))
}

/// `n` calls of `f` at once, each on its own thread.
fn parallel<T: Send + 'static>(n: usize, f: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = Arc::new(f);
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let f = f.clone();
            std::thread::spawn(move || f(i))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("thread"))
        .collect()
}

fn metric(d: &Daemon, name: &str) -> Option<f64> {
    let m = d.metrics?;
    let r = try_call(m, "GET", "/metrics", None, None).ok()?;
    r.body
        .lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn info(addr: SocketAddr, token: &str) -> Value {
    call(addr, "GET", "/v1/info", Some(token), None).json()
}

fn rest_open(addr: SocketAddr, token: &str) -> Resp {
    call(
        addr,
        "POST",
        "/v1/sessions",
        Some(token),
        Some(r#"{"language": "python"}"#),
    )
}

// ------------------------------------------------------------- the fleet

#[test]
fn a_fleet_on_redis_behind_haproxy_routes_shares_its_limits_and_names_lost_sessions() {
    let redis = Redis::start();
    let mut nodes: Vec<Node> = ["0000", "0001", "0002"]
        .into_iter()
        .map(|tag| Node {
            tag,
            api: format!("127.0.0.1:{}", free_port()).parse().expect("addr"),
            agent: free_port(),
            daemon: None,
        })
        .collect();
    // Every node holds the fleet's key (it hands its sessions over when it
    // drains); one restarts without it below, to drain by serving.
    for n in nodes.iter_mut() {
        start_node(n, &redis, true, &[]);
    }
    let lb = Haproxy::start(&nodes);
    let url = format!("http://{}", lb.addr);
    let mut client = Driver::start(&url);
    let d = |nodes: &Vec<Node>, i: usize| -> SocketAddr { nodes[i].api };

    // Every node names itself: audit and metrics.
    for n in &nodes {
        let dm = n.daemon.as_ref().expect("running");
        let start = audit_lines(dm, "daemon_start");
        assert_eq!(start[0]["node"], n.tag, "{start:?}");
        assert!(start[0]["epoch"].as_str().is_some_and(|e| e.len() == 4));
        assert_eq!(metric(dm, "plimsoll_shared_state_up"), Some(1.0));
        assert_eq!(metric(dm, "plimsoll_node_info"), Some(1.0));
    }

    // 1. 30 protocol sessions × 5 cells keep their state; each session's
    //    calls are served by the node that opened it.
    let opened = client.ask(json!({"op": "open", "n": 30}));
    let ids: Vec<String> = serde_json::from_value(opened["ids"].clone()).expect("ids");
    assert_eq!(ids.len(), 30, "{opened}");
    let tags: HashSet<&str> = ids.iter().map(|i| tag_of(i)).collect();
    assert_eq!(tags.len(), 3, "sessions on every node: {ids:?}");
    let cells = client.ask(json!({"op": "cells", "n": 5}));
    assert_eq!(cells["ok"], 30, "{cells}");
    for n in &nodes {
        let dm = n.daemon.as_ref().expect("running");
        for line in audit_lines(dm, "session_run") {
            let fp = line["session_id"].as_str().unwrap_or("");
            let id = ids
                .iter()
                .find(|i| sha(i) == fp)
                .expect("a session of the driver");
            assert_eq!(tag_of(id), n.tag, "node {} served a call of {id}", n.tag);
        }
        let served = audit_lines(dm, "session_run").len();
        let mine = ids.iter().filter(|i| tag_of(i) == n.tag).count();
        assert_eq!(served, mine * 5, "node {}", n.tag);
    }

    // 2. 300 stateless runs spread over every node.
    let runs = client.ask(json!({"op": "runs", "n": 300}));
    assert_eq!(runs["ok"], 300, "{runs}");
    for n in &nodes {
        let served = audit_lines(n.daemon.as_ref().expect("running"), "run").len();
        assert!(served >= 30, "node {} served {served} of 300 runs", n.tag);
    }

    // 3. The shared rate: 60 a minute, 150 at once → 60 (and what refilled
    //    meanwhile) admitted, over several nodes; the rest 429 with
    //    Retry-After.
    let lb_addr = lb.addr;
    let t = Instant::now();
    let answers = parallel(150, move |_| js_run(lb_addr, RATE, "1"));
    let secs = t.elapsed().as_secs() + 1;
    let admitted = answers.iter().filter(|r| r.status == 200).count() as u64;
    assert!(
        (60..=60 + secs).contains(&admitted),
        "admitted {admitted} of 150 in {secs} s"
    );
    for r in answers.iter().filter(|r| r.status != 200) {
        assert_eq!(
            (r.status, r.code().as_str()),
            (429, "rate_limited"),
            "{}",
            r.body
        );
        assert!(r.retry_after() >= 1);
    }
    let by_node: Vec<usize> = nodes
        .iter()
        .map(|n| {
            audit_lines(n.daemon.as_ref().expect("running"), "run")
                .iter()
                .filter(|l| l["caller"] == "rate")
                .count()
        })
        .collect();
    assert_eq!(
        by_node.iter().sum::<usize>() as u64,
        admitted,
        "{by_node:?}"
    );
    assert!(
        by_node.iter().filter(|n| **n > 0).count() >= 2,
        "{by_node:?}"
    );

    // 5. The shared session cap and daily allowance; every node shows the
    //    same usage.
    let caps: Vec<Resp> = (0..4).map(|_| rest_open(lb.addr, CAP)).collect();
    assert_eq!(
        caps.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![201, 201, 201, 429],
        "{:?}",
        caps.iter().map(|r| &r.body).collect::<Vec<_>>()
    );
    assert_eq!(caps[3].code(), "session_limit");
    for i in 0..3 {
        let u = info(d(&nodes, i), CAP);
        assert_eq!(u["caller"]["usage"]["scope"], "fleet", "{u}");
        assert_eq!(u["caller"]["usage"]["sessions_open"], 3, "{u}");
    }
    let first = caps[0].json()["session_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let closed = call(
        lb.addr,
        "DELETE",
        &format!("/v1/sessions/{first}"),
        Some(CAP),
        None,
    );
    assert_eq!(closed.status, 204, "{}", closed.body);
    assert_eq!(rest_open(lb.addr, CAP).status, 201, "a place came free");
    // Busy for 1.1 s a run: three spend the 3 s allowance wherever they
    // ran, the fourth is refused.
    let busy = "const t = Date.now(); while (Date.now() - t < 1100) {} 1";
    for _ in 0..3 {
        assert_eq!(js_run(lb.addr, CAP, busy).status, 200);
    }
    std::thread::sleep(Duration::from_millis(500));
    let spent = js_run(lb.addr, CAP, "1");
    assert_eq!(spent.status, 429, "{}", spent.body);
    assert_eq!(spent.code(), "cpu_allowance_exhausted");
    let used: Vec<f64> = (0..3)
        .map(|i| {
            info(d(&nodes, i), CAP)["caller"]["cpu_seconds_used_today"]
                .as_f64()
                .unwrap_or(0.0)
        })
        .collect();
    assert!(used.iter().all(|u| *u >= 3.0 && *u == used[0]), "{used:?}");

    // 4. Shared concurrency: a cap of 4, 12 slow runs at once → exactly 4.
    //    Each run holds its slot for 6 s, far longer than the 12 calls take
    //    to arrive even on a loaded machine (their times are shown).
    let slow = "const t = Date.now(); while (Date.now() - t < 6000) {} 1";
    let started = Instant::now();
    let answers = parallel(12, move |_| {
        let t = started.elapsed();
        let r = js_run(lb_addr, CONC, slow);
        (t, started.elapsed(), r)
    });
    let ran = answers.iter().filter(|(_, _, r)| r.status == 200).count();
    assert_eq!(
        ran,
        4,
        "(sent, answered, status, code): {:?}",
        answers
            .iter()
            .map(|(s, a, r)| (s, a, r.status, r.code()))
            .collect::<Vec<_>>()
    );
    for (_, _, r) in answers.iter().filter(|(_, _, r)| r.status != 200) {
        assert_eq!(r.code(), "concurrency_limit", "{}", r.body);
    }
    // Four long runs hold every slot; the node holding one is killed (it
    // also holds some of the driver's sessions): its lease frees the slot
    // within the lease's 10 s.
    let long = "const t = Date.now(); while (Date.now() - t < 8000) {} 1";
    let holders = std::thread::spawn(move || parallel(4, move |_| js_run(lb_addr, CONC, long)));
    let t = Instant::now();
    let victim = loop {
        let busy: Vec<usize> = (0..3)
            .filter(|i| {
                metric(
                    nodes[*i].daemon.as_ref().expect("running"),
                    "plimsoll_runs_in_flight",
                )
                .unwrap_or(0.0)
                    > 0.0
            })
            .collect();
        if info(lb.addr, CONC)["caller"]["usage"]["runs_in_flight"] == 4 && !busy.is_empty() {
            break busy[0];
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the long runs did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let victim_tag = nodes[victim].tag;
    let on_victim = metric(
        nodes[victim].daemon.as_ref().expect("running"),
        "plimsoll_runs_in_flight",
    )
    .unwrap_or(0.0) as usize;
    let mut killed = nodes[victim].daemon.take().expect("running");
    let _ = killed.child.kill();
    let _ = killed.child.wait();
    let killed_at = Instant::now();

    // 6. Its sessions: each next call → SessionEndedError(boundary_failed)
    //    at once; no HAProxy 503 for new work; the other sessions
    //    unaffected.
    let t = Instant::now();
    let values = client.ask(json!({"op": "value"}));
    let took = t.elapsed();
    for id in &ids {
        let v = &values[id];
        if tag_of(id) == victim_tag {
            assert_eq!(
                (v["error"].as_str(), v["reason"].as_str()),
                (Some("SessionEndedError"), Some("boundary_failed")),
                "{id}: {v}"
            );
        } else {
            assert_eq!(v["ok"], "5\n", "{id}: {v}");
        }
    }
    assert!(took < Duration::from_secs(10), "the calls took {took:?}");
    let fresh = parallel(20, move |_| js_run(lb_addr, ALICE, "6*7"));
    assert!(
        fresh.iter().all(|r| r.status == 200),
        "{:?}",
        fresh
            .iter()
            .map(|r| (r.status, r.body.clone()))
            .collect::<Vec<_>>()
    );
    // A REST call for one of them: 410, session_lost, node_lost.
    let lost_id = ids
        .iter()
        .find(|i| tag_of(i) == victim_tag)
        .expect("one")
        .clone();
    let r = call(
        lb.addr,
        "POST",
        &format!("/v1/sessions/{lost_id}/runs"),
        Some(ALICE),
        Some(r#"{"code": "1"}"#),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (410, "session_lost"),
        "{}",
        r.body
    );
    assert_eq!(r.json()["reason"], "node_lost");
    // The killed node's lease came free within its time.
    let t = Instant::now();
    loop {
        let r = js_run(lb.addr, CONC, "1");
        if r.status == 200 {
            break;
        }
        assert_eq!(r.code(), "concurrency_limit", "{}", r.body);
        assert!(
            killed_at.elapsed() < Duration::from_secs(13),
            "the killed node's lease was not freed"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!(
        "a killed node's lease freed after {:?} (tried from {:?})",
        killed_at.elapsed(),
        t.elapsed()
    );
    let held = holders.join().expect("holders");
    // The long runs on the other nodes finished; those on the killed one
    // did not.
    assert_eq!(
        held.iter().filter(|r| r.status == 200).count(),
        4 - on_victim,
        "{:?}",
        held.iter().map(|r| r.status).collect::<Vec<_>>()
    );

    // 7. The node restarts with its tag (without the fleet's key, to drain
    //    by serving below): its old sessions are node_restarted; another
    //    caller presenting a live id gets exactly what a random id gets.
    start_node(&mut nodes[victim], &redis, false, &[]);
    lb.wait_for(|s| s.values().all(|st| st == "UP"), "the restarted node UP");
    let r = call(
        lb.addr,
        "POST",
        &format!("/v1/sessions/{lost_id}/runs"),
        Some(ALICE),
        Some(r#"{"code": "1"}"#),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (410, "session_lost"),
        "{}",
        r.body
    );
    assert_eq!(r.json()["reason"], "node_restarted");
    let v = client.ask(json!({"op": "probe", "id": lost_id, "token": "own"}));
    assert_eq!(v["reason"], "boundary_failed", "{v}");
    let dead: Vec<String> = ids
        .iter()
        .filter(|i| tag_of(i) == victim_tag)
        .cloned()
        .collect();
    let _ = client.ask(json!({"op": "close", "ids": dead}));
    let live = ids
        .iter()
        .find(|i| tag_of(i) != victim_tag)
        .expect("a live one")
        .clone();
    let random = new_id();
    let same_node = format!("{}{}", &live[..8], &new_id()[8..]);
    let of_live = client.ask(json!({"op": "probe", "id": live, "token": "other"}));
    let of_random = client.ask(json!({"op": "probe", "id": random, "token": "other"}));
    let of_same = client.ask(json!({"op": "probe", "id": same_node, "token": "other"}));
    assert_eq!(
        of_live, of_random,
        "another caller's live id and a random one"
    );
    assert_eq!(of_live, of_same);
    assert_eq!(of_live["reason"], "not_found", "{of_live}");
    for (id, token) in [(&live, BOB), (&random, BOB)] {
        let r = call(
            lb.addr,
            "POST",
            &format!("/v1/sessions/{id}/runs"),
            Some(token),
            Some(r#"{"code": "1"}"#),
        );
        assert_eq!(
            (r.status, r.code().as_str()),
            (404, "unknown_session"),
            "{}",
            r.body
        );
    }

    // 8a. Drain by serving (the restarted node has no key): SIGTERM → it
    //     says drain, 100 new runs succeed elsewhere, its sessions keep
    //     answering, it exits when they close.
    let opened = client.ask(json!({"op": "open", "n": 9}));
    let fresh_ids: Vec<String> = serde_json::from_value(opened["ids"].clone()).expect("ids");
    let cells = client.ask(json!({"op": "cells", "n": 2}));
    assert!(
        cells["bad"].as_array().is_some_and(|b| b.is_empty()),
        "{cells}"
    );
    let serving: Vec<String> = fresh_ids
        .iter()
        .filter(|i| tag_of(i) == victim_tag)
        .cloned()
        .collect();
    assert!(
        !serving.is_empty(),
        "no new session on the restarted node: {fresh_ids:?}"
    );
    let want = values_of(&mut client, &serving);
    sigterm(&nodes[victim]);
    lb.wait_for(
        |s| s.get(victim_tag).is_some_and(|st| st.contains("DRAIN")),
        "the node DRAIN",
    );
    let node = nodes[victim].daemon.as_ref().expect("running");
    let runs_before = audit_lines(node, "run").len();
    let runs = client.ask(json!({"op": "runs", "n": 100}));
    assert_eq!(runs["ok"], 100, "{runs}");
    assert_eq!(
        runs_before,
        audit_lines(node, "run").len(),
        "the draining node took new runs"
    );
    assert_eq!(
        values_of(&mut client, &serving),
        want,
        "its sessions answer"
    );
    let closed = client.ask(json!({"op": "close", "ids": serving}));
    for id in &serving {
        assert_eq!(closed[id]["ok"], "closed", "{closed}");
    }
    let st = wait_exit(&mut nodes[victim], Duration::from_secs(15));
    assert!(st.success(), "{st:?}");
    // Its sessions' ids now: node_drained.
    let r = call(
        lb.addr,
        "POST",
        &format!("/v1/sessions/{}/runs", serving[0]),
        Some(ALICE),
        Some(r#"{"code": "1"}"#),
    );
    assert_eq!(
        (r.status, r.code().as_str()),
        (410, "session_lost"),
        "{}",
        r.body
    );
    assert_eq!(r.json()["reason"], "node_drained");
    start_node(&mut nodes[victim], &redis, true, &[]);
    lb.wait_for(|s| s.values().all(|st| st == "UP"), "the node back UP");

    // 8b. Drain with a handover (a node with the key): its sessions move
    //     with their state, and the client sees no error.
    let h = (0..3).find(|i| *i != victim).expect("another node");
    let h_tag = nodes[h].tag;
    let moving: Vec<String> = ids
        .iter()
        .chain(fresh_ids.iter())
        .filter(|i| tag_of(i) == h_tag)
        .cloned()
        .collect();
    assert!(!moving.is_empty());
    let want = values_of(&mut client, &moving);
    sigterm(&nodes[h]);
    // While it hands them over, and after it is gone: the same state, no
    // error.
    assert_eq!(
        values_of(&mut client, &moving),
        want,
        "the sessions kept their state while their node drained"
    );
    let st = wait_exit(&mut nodes[h], Duration::from_secs(30));
    assert!(st.success(), "{st:?}");
    assert_eq!(
        values_of(&mut client, &moving),
        want,
        "the sessions kept their state on their new nodes"
    );
    let cells = client.ask(json!({"op": "cells", "n": 1}));
    assert!(
        cells["bad"].as_array().is_some_and(|b| b.is_empty()),
        "{cells}"
    );
    let handed = audit_lines(nodes[h].daemon.as_ref().expect("ran"), "session_handover");
    assert_eq!(
        handed.iter().filter(|l| l["outcome"] == "ok").count(),
        moving.len(),
        "{handed:?}"
    );
    let adopted: usize = (0..3)
        .filter(|i| *i != h)
        .map(|i| {
            audit_lines(nodes[i].daemon.as_ref().expect("running"), "session_adopt")
                .iter()
                .filter(|l| l["outcome"] == "ok")
                .count()
        })
        .sum();
    assert_eq!(adopted, moving.len());

    // What Redis saw: fingerprints, counts, node tags, sealed sessions —
    // no session id, no code.
    let seen = redis.everything();
    for id in ids.iter().chain(fresh_ids.iter()) {
        assert!(!seen.contains(id.as_str()), "Redis holds a session id");
    }
    assert!(!seen.contains("globals()"), "Redis holds code");
    let _ = client.ask(json!({"op": "close"}));
}

/// Each session's `x`, as the client reads it.
fn values_of(client: &mut Driver, ids: &[String]) -> BTreeMap<String, String> {
    let v = client.ask(json!({"op": "value", "ids": ids}));
    ids.iter()
        .map(|id| {
            let got = &v[id];
            assert!(got.get("ok").is_some(), "{id}: {got}");
            (id.clone(), got["ok"].as_str().unwrap_or("").to_owned())
        })
        .collect()
}

fn sigterm(n: &Node) {
    let pid = n.daemon.as_ref().expect("running").child.id();
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
}

fn wait_exit(n: &mut Node, within: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Ok(Some(st)) = n.daemon.as_mut().expect("running").child.try_wait() {
            return st;
        }
        assert!(t.elapsed() < within, "node {} did not exit", n.tag);
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn new_id() -> String {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).expect("random");
    hex::encode(b)
}

// ------------------------------------------------------------------- MCP

/// One MCP request (streamable HTTP) to `addr` as a raw HTTP/1.1 exchange:
/// its status, its `Mcp-Session-Id`, and its JSON-RPC answer (from an SSE
/// `data:` line or a JSON body).
fn mcp_post(
    addr: SocketAddr,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> (u16, Option<String>, Value) {
    let body = body.to_string();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nHost: plimsoll\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        req.push_str(&format!("Mcp-Session-Id: {s}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(&body);
    let mut sock = std::net::TcpStream::connect(addr).expect("connect");
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    sock.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    let _ = sock.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let session = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("mcp-session-id")
            .then(|| v.trim().to_owned())
    });
    let json = rest
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .or_else(|| {
            rest.find('{').and_then(|i| {
                serde_json::from_str(rest[i..].trim_end_matches(['\r', '\n', '0'])).ok()
            })
        })
        .unwrap_or(Value::Null);
    (status, session, json)
}

fn mcp_initialize(addr: SocketAddr, token: &str) -> (u16, Option<String>) {
    let (status, session, _) = mcp_post(
        addr,
        token,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "cluster-test", "version": "0"}}}),
    );
    if let Some(s) = &session {
        let (st, _, _) = mcp_post(
            addr,
            token,
            Some(s),
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(st, 202, "notifications/initialized");
    }
    (status, session)
}

fn mcp_run(addr: SocketAddr, token: &str, session: &str, id: u64) -> (u16, Value) {
    let (status, _, v) = mcp_post(
        addr,
        token,
        Some(session),
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "run_code", "arguments": {"language": "javascript", "code": "6*7"}}}),
    );
    (status, v)
}

#[test]
fn mcp_sessions_stick_to_their_node_and_a_lost_one_is_mcps_unknown_session() {
    let redis = Redis::start();
    let mut nodes: Vec<Node> = ["0000", "0001", "0002"]
        .into_iter()
        .map(|tag| Node {
            tag,
            api: format!("127.0.0.1:{}", free_port()).parse().expect("addr"),
            agent: free_port(),
            daemon: None,
        })
        .collect();
    for n in nodes.iter_mut() {
        start_node(n, &redis, false, &[]);
    }
    let lb = Haproxy::start(&nodes);
    // Six sessions through the balancer; each next call on one reaches the
    // node that made it (any other node answers 404: it does not know it).
    let mut sessions = Vec::new();
    for _ in 0..6 {
        let (st, s) = mcp_initialize(lb.addr, ALICE);
        assert_eq!(st, 200, "initialize through HAProxy");
        sessions.push(s.expect("an Mcp-Session-Id"));
    }
    let mut id = 10;
    for s in &sessions {
        for _ in 0..4 {
            id += 1;
            let (st, v) = mcp_run(lb.addr, ALICE, s, id);
            assert_eq!(st, 200, "a call on an MCP session through HAProxy: {v}");
            assert!(v["result"].is_object(), "{v}");
        }
    }
    // Which node holds each: asked directly, exactly one knows it.
    let owner = |s: &str| -> Vec<usize> {
        (0..nodes.len())
            .filter(|i| nodes[*i].daemon.is_some())
            .filter(|i| {
                let (st, _) = mcp_run(nodes[*i].api, ALICE, s, 99);
                st == 200
            })
            .collect()
    };
    let owners: Vec<Vec<usize>> = sessions.iter().map(|s| owner(s)).collect();
    assert!(owners.iter().all(|o| o.len() == 1), "{owners:?}");
    let spread: HashSet<usize> = owners.iter().map(|o| o[0]).collect();
    assert!(
        spread.len() >= 2,
        "the sessions were not spread: {owners:?}"
    );
    // Its node killed: the next call on it is MCP's unknown session (404),
    // so the client initializes again, and that works at once.
    let victim = owners[0][0];
    let mut killed = nodes[victim].daemon.take().expect("running");
    let _ = killed.child.kill();
    let _ = killed.child.wait();
    let (st, v) = mcp_run(lb.addr, ALICE, &sessions[0], 1000);
    assert_eq!(st, 404, "a lost MCP session: {v}");
    let (st, again) = mcp_initialize(lb.addr, ALICE);
    assert_eq!(st, 200);
    let (st, _) = mcp_run(lb.addr, ALICE, &again.expect("a new session"), 1001);
    assert_eq!(st, 200);
    // The sessions on the other nodes are unaffected.
    for (s, o) in sessions.iter().zip(&owners) {
        if o[0] != victim {
            let (st, v) = mcp_run(lb.addr, ALICE, s, 1002);
            assert_eq!(st, 200, "{v}");
        }
    }
    // Another caller presenting a live MCP session id: 404, as for any
    // unknown one.
    let live = sessions
        .iter()
        .zip(&owners)
        .find(|(_, o)| o[0] != victim)
        .map(|(s, _)| s.clone())
        .expect("a live one");
    let (st, _) = mcp_run(lb.addr, BOB, &live, 1003);
    assert_eq!(st, 404);
}

// ------------------------------------------------------- Redis goes away

#[test]
fn while_redis_is_down_local_serves_a_share_and_closed_refuses() {
    let mut redis = Redis::start();
    let mut local = Node {
        tag: "0000",
        api: format!("127.0.0.1:{}", free_port()).parse().expect("addr"),
        agent: free_port(),
        daemon: None,
    };
    let mut closed = Node {
        tag: "0001",
        api: format!("127.0.0.1:{}", free_port()).parse().expect("addr"),
        agent: free_port(),
        daemon: None,
    };
    start_node(&mut local, &redis, false, &[]);
    start_node(
        &mut closed,
        &redis,
        false,
        &[("PLIMSOLL_SHARED_STATE_FAILURE", "closed")],
    );
    let (l, c) = (
        local.daemon.as_ref().expect("running"),
        closed.daemon.as_ref().expect("running"),
    );
    assert_eq!(js_run(l.addr, ALICE, "1").status, 200);
    assert_eq!(js_run(c.addr, ALICE, "1").status, 200);

    redis.stop();
    // local: served, under the caller's limits divided by the fleet's
    // size (60 a minute / 3 nodes = 20 here).
    let a = l.addr;
    let answers = parallel(40, move |_| js_run(a, RATE, "1"));
    let ok = answers.iter().filter(|r| r.status == 200).count();
    assert!((20..=21).contains(&ok), "{ok} of 40 served");
    assert_eq!(metric(l, "plimsoll_shared_state_up"), Some(0.0));
    assert_eq!(info(l.addr, ALICE)["caller"]["usage"]["scope"], "node");
    // closed: refused, typed, not dispatched.
    let r = js_run(c.addr, ALICE, "1");
    assert_eq!(
        (r.status, r.code().as_str()),
        (503, "quota_unavailable"),
        "{}",
        r.body
    );
    assert!(r.retry_after() >= 1);
    assert!(
        audit_lines(c, "run")
            .iter()
            .all(|x| x["error_code"] != "quota_unavailable" || x["outcome"] != "ok")
    );

    redis.up();
    let t = Instant::now();
    while metric(l, "plimsoll_shared_state_up") != Some(1.0)
        || metric(c, "plimsoll_shared_state_up") != Some(1.0)
    {
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "the shared state did not come back"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!("shared state up again after {:?}", t.elapsed());
    assert_eq!(js_run(c.addr, ALICE, "1").status, 200);
}

// ------------------------------------------------------ Redis over TLS

/// A redis-server that speaks only TLS (on `port`, loopback), with a
/// password, and the certificate of a private CA.
fn tls_redis(dir: &std::path::Path, port: u16, password: &str) -> (Child, PathBuf) {
    let (ca, leaf, leaf_key) = test_pki();
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).expect("write");
        p
    };
    let ca_file = write("ca.pem", &ca.pem());
    let cert = write("cert.pem", &leaf.pem());
    let key = write("key.pem", &leaf_key.serialize_pem());
    let child = Command::new(program("redis-server"))
        .args(["--port", "0", "--tls-port", &port.to_string()])
        .args([
            "--bind",
            "127.0.0.1 -::1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--tls-cert-file")
        .arg(&cert)
        .arg("--tls-key-file")
        .arg(&key)
        .arg("--tls-ca-cert-file")
        .arg(&ca_file)
        .args(["--tls-auth-clients", "no", "--requirepass", password])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn redis-server");
    let t = Instant::now();
    loop {
        let pong = Command::new(program("redis-cli"))
            .args(["-p", &port.to_string(), "--tls", "--cacert"])
            .arg(&ca_file)
            .args([
                "--sni",
                "localhost",
                "--no-auth-warning",
                "-a",
                password,
                "PING",
            ])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "PONG")
            .unwrap_or(false);
        if pong {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "redis-server with TLS did not start (is Debian's redis built with TLS?)"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, ca_file)
}

#[test]
fn the_shared_state_over_tls_with_a_password_verified_against_a_private_ca() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, password) = (free_port(), "pw-6c1f0e2a9b");
    let (mut redis, ca_file) = tls_redis(dir.path(), port, password);
    let url = format!("rediss://:{password}@localhost:{port}/");
    let node = |url: &str, ca: Option<&std::path::Path>| {
        let s = Setup::new(None);
        s.file("clients.json", &callers_json());
        let mut s = s
            .set("PLIMSOLL_NODE_TAG", "0001")
            .set("PLIMSOLL_SHARED_STATE_URL", url)
            .set("PLIMSOLL_SHARED_STATE_FAILURE", "closed");
        if let Some(ca) = ca {
            s = s.set("PLIMSOLL_SHARED_STATE_CA_FILE", ca.to_string_lossy());
        }
        s
    };
    // Trusted through the CA file: it serves, with the fleet's counters
    // (closed: a shared state that did not answer would refuse the run).
    let d = node(&url, Some(&ca_file)).start();
    assert_eq!(js_run(d.addr, ALICE, "6*7").status, 200);
    assert_eq!(info(d.addr, ALICE)["caller"]["usage"]["scope"], "fleet");
    let log = d.stderr.lock().map(|s| s.clone()).unwrap_or_default();
    assert!(!log.contains(password), "the password is in the log");
    drop(d);
    // The system's trust store does not know the private CA: refused at
    // start, and the password is not in the refusal.
    let (code, err) = node(&url, None).refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("shared state"), "{err}");
    assert!(!err.contains(password), "{err}");
    // A wrong password, and a CA file with a plain redis:// URL: refused.
    let wrong = format!("rediss://:not-it@localhost:{port}/");
    let (code, err) = node(&wrong, Some(&ca_file)).refused();
    assert_eq!(code, 78, "{err}");
    let plain = format!("redis://:{password}@localhost:{port}/");
    let (code, err) = node(&plain, Some(&ca_file)).refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("rediss://"), "{err}");
    let _ = redis.kill();
    let _ = redis.wait();
}

#[test]
fn a_fleet_is_refused_when_misconfigured() {
    let redis = Redis::start();
    let (code, err) = Setup::new(None)
        .set("PLIMSOLL_SHARED_STATE_URL", redis.url())
        .refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("PLIMSOLL_NODE_TAG"), "{err}");
    let (code, err) = Setup::new(None).set("PLIMSOLL_NODE_TAG", "00G1").refused();
    assert_eq!(code, 78, "{err}");
    let (code, err) = Setup::new(None)
        .set("PLIMSOLL_NODE_TAG", "0001")
        .set("PLIMSOLL_SHARED_STATE_URL", redis.url())
        .set("PLIMSOLL_SHARED_STATE_FAILURE", "lokal")
        .refused();
    assert_eq!(code, 78, "{err}");
    // Nothing answers there.
    let (code, err) = Setup::new(None)
        .set("PLIMSOLL_NODE_TAG", "0001")
        .set(
            "PLIMSOLL_SHARED_STATE_URL",
            format!("redis://127.0.0.1:{}/", free_port()),
        )
        .refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("shared state"), "{err}");
    let s = Setup::new(None);
    let k = s.file("fleet.key", "not a key");
    let (code, err) = s.set("PLIMSOLL_FLEET_KEY_FILE", k).refused();
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("64 hex"), "{err}");
}

// -------------------------------------------- the deploy files validate

fn haproxy_check(cfg: &std::path::Path) -> std::process::Output {
    let mut cmd = Command::new(program("haproxy"));
    cmd.arg("-c")
        .arg("-f")
        .arg(cfg)
        .env("PLIMSOLL_HAPROXY_BIND", "127.0.0.1:18080");
    for (i, tag) in ["0000", "0001", "0002"].iter().enumerate() {
        cmd.env(
            format!("PLIMSOLL_NODE_{tag}"),
            format!("127.0.0.1:{}", 18081 + i),
        )
        .env(
            format!("PLIMSOLL_AGENT_PORT_{tag}"),
            format!("{}", 18091 + i),
        );
    }
    cmd.output().expect("haproxy -c")
}

#[test]
fn the_haproxy_config_and_the_kubernetes_manifests_validate_and_a_misspelled_copy_does_not() {
    let cfg = repo().join("deploy/haproxy/plimsoll.cfg");
    let out = haproxy_check(&cfg);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("plimsoll.cfg");
    let text = std::fs::read_to_string(&cfg).expect("cfg");
    std::fs::write(
        &bad,
        text.replace("balance leastconn", "balance leastconnn"),
    )
    .expect("write");
    assert!(
        !haproxy_check(&bad).status.success(),
        "a misspelled HAProxy config passed"
    );

    let validate = repo().join("target/clients/venv/bin/kubernetes-validate");
    assert!(
        validate.is_file(),
        "{} is missing: the manifests are validated with kubernetes-validate 1.37.0 from PyPI; install it with `make clients`",
        validate.display()
    );
    let manifests: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy/k8s"))
        .expect("deploy/k8s")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    assert!(manifests.len() >= 4, "{manifests:?}");
    let run = |files: &[PathBuf]| {
        Command::new(&validate)
            .args(["--strict", "-k", "1.32.0"])
            .args(files)
            .output()
            .expect("kubernetes-validate")
    };
    let out = run(&manifests);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let ss = repo().join("deploy/k8s/plimsolld.yaml");
    let text = std::fs::read_to_string(&ss).expect("plimsolld.yaml");
    assert!(text.contains("terminationGracePeriodSeconds"));
    let bad = dir.path().join("plimsolld.yaml");
    std::fs::write(&bad, text.replacen("replicas:", "replicaz:", 1)).expect("write");
    assert!(
        !run(&[bad]).status.success(),
        "a misspelled manifest passed"
    );
}
