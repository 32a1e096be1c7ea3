//! The daemon tests' harness: the real `plimsolld` binary on loopback
//! ports with a temporary state directory, callers and grants, and a plain
//! HTTP/1.1 client over a socket.
#![allow(dead_code)]

#[path = "tmpfs.rs"]
pub mod tmpfs;
#[path = "upstream.rs"]
pub mod upstream;

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- harness

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn guests_dir() -> PathBuf {
    std::env::var_os("PLIMSOLL_GUESTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/guests"))
}

/// Components the daemon registers by name.
pub fn components_dir() -> PathBuf {
    let dir = repo().join("target/test-daemon-components");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for name in ["hello", "spin"] {
        let src = guests_dir().join(format!("{name}.wasm"));
        assert!(
            src.is_file(),
            "{} is missing; build the guests first with `make guests`",
            src.display()
        );
        let dst = dir.join(format!("{name}.wasm"));
        if !dst.is_file() {
            std::fs::copy(&src, &dst).expect("copy guest");
        }
    }
    dir
}

pub fn sha(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

pub const ALICE: &str = "alice-token-7c1f0e9d8b2a";
pub const BOB: &str = "bob-token-3e4d5c6b7a81";
pub const CAROL: &str = "carol-token-no-scopes-55";

/// A callers file: alice may run and use `orders`; bob may run but use no
/// profile; carol may only read info. `extra` is merged into every caller.
pub fn clients_json(extra: &str) -> String {
    format!(
        r#"{{"clients": [
        {{"id": "alice", "token_sha256": "{}", "scopes": ["code:run", "info:read"], "grant_profiles": ["orders"]{extra}}},
        {{"id": "bob", "token_sha256": "{}", "scopes": ["code:run"]{extra}}},
        {{"id": "carol", "token_sha256": "{}", "scopes": ["info:read"]{extra}}}
    ]}}"#,
        sha(ALICE),
        sha(BOB),
        sha(CAROL)
    )
}

pub struct Daemon {
    pub child: Child,
    pub addr: SocketAddr,
    pub metrics: Option<SocketAddr>,
    pub state: PathBuf,
    pub stderr: Arc<Mutex<String>>,
    pub _tmp: tempfile::TempDir,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Daemon {
    pub fn audit(&self) -> String {
        std::fs::read_to_string(self.state.join("audit.jsonl")).unwrap_or_default()
    }

    pub fn sigterm(&mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let t = Instant::now();
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st;
            }
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "the daemon did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

pub struct Setup {
    pub env: Vec<(String, String)>,
    pub tmp: tempfile::TempDir,
    /// `RLIMIT_NOFILE` for the daemon, when set (`ulimit -n`).
    pub nofile: Option<u64>,
}

impl Setup {
    /// A daemon with the `wasm` provider, the interpreters, `hello` and
    /// `spin`, the callers above, and a grants file naming `upstream`.
    pub fn new(upstream: Option<SocketAddr>) -> Setup {
        let tmp = tempfile::tempdir().expect("tempdir");
        let state = tmp.path().join("state");
        std::fs::create_dir_all(&state).expect("state");
        let clients = tmp.path().join("clients.json");
        std::fs::write(&clients, clients_json("")).expect("clients");
        let up = upstream.unwrap_or_else(|| "127.0.0.1:9".parse().expect("addr"));
        let grants = tmp.path().join("grants.json");
        std::fs::write(
            &grants,
            format!(
                r#"{{"profiles": {{"orders": {{"base_url": "http://{up}", "allow": ["GET /v1/orders/*"],
                    "token": {{"type": "static", "env": "ORDERS_TOKEN"}}, "max_calls": 100}}}}}}"#
            ),
        )
        .expect("grants");
        // Fuel enough that only a run's deadline ends a busy guest (as
        // `support::TEST_FUEL` in the library's tests); a test may still
        // set its own envelope.
        let envelope = tmp.path().join("envelope.json");
        let test_envelope = plimsoll::Envelope {
            fuel: 10_000_000_000_000,
            ..plimsoll::Envelope::default()
        };
        std::fs::write(
            &envelope,
            serde_json::to_string(&test_envelope).expect("json"),
        )
        .expect("envelope");
        let cache = repo().join("target/test-cache");
        let env = vec![
            ("SANDBOX_PROVIDER", "wasm".to_string()),
            ("PLIMSOLL_LISTEN", "127.0.0.1:0".into()),
            ("PLIMSOLL_METRICS_ADDR", "127.0.0.1:0".into()),
            ("PLIMSOLL_STATE_DIR", state.display().to_string()),
            ("PLIMSOLL_CACHE_DIR", cache.display().to_string()),
            ("PLIMSOLL_GUESTS_DIR", guests_dir().display().to_string()),
            (
                "PLIMSOLL_COMPONENTS_DIR",
                components_dir().display().to_string(),
            ),
            ("PLIMSOLL_CLIENTS_FILE", clients.display().to_string()),
            ("PLIMSOLL_GRANTS_FILE", grants.display().to_string()),
            ("PLIMSOLL_ENVELOPE_FILE", envelope.display().to_string()),
            ("ORDERS_TOKEN", upstream::STATIC_TOKEN.into()),
            ("PLIMSOLL_LOG", "warn".into()),
        ];
        Setup {
            env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            tmp,
            nofile: None,
        }
    }

    pub fn set(mut self, k: &str, v: impl Into<String>) -> Setup {
        self.env.retain(|(key, _)| key != k);
        self.env.push((k.to_string(), v.into()));
        self
    }

    pub fn unset(mut self, k: &str) -> Setup {
        self.env.retain(|(key, _)| key != k);
        self
    }

    pub fn clients(self, extra: &str) -> Setup {
        let p = self.tmp.path().join("clients.json");
        std::fs::write(&p, clients_json(extra)).expect("clients");
        self
    }

    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.tmp.path().join(name);
        std::fs::write(&p, text).expect("write");
        p.display().to_string()
    }

    pub fn command(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_plimsolld"));
        cmd.env_clear();
        for k in ["PATH", "HOME"] {
            if let Some(v) = std::env::var_os(k) {
                cmd.env(k, v);
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(n) = self.nofile {
            use std::os::unix::process::CommandExt;
            // SAFETY: setrlimit(2) between fork and exec touches only the
            // child's own limits and allocates nothing.
            unsafe {
                cmd.pre_exec(move || {
                    let lim = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        cmd
    }

    /// Starts the daemon, waits for its "listening on" line, then for its
    /// guests to be compiled and its provider to have started (as a health
    /// check on `/readyz` would).
    pub fn start(self) -> Daemon {
        let d = self.start_unready();
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(300) {
            match try_call(d.addr, "GET", "/readyz", None, None) {
                Ok(r) if r.status == 200 => break,
                // Still compiling or starting: wait; any other reason (a
                // disabled provider, a draining daemon) is the test's.
                Ok(r) if r.body.contains("compiling") || r.body.contains("starting") => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => break,
            }
        }
        d
    }

    /// Starts the daemon and waits only for its "listening on" line.
    pub fn start_unready(self) -> Daemon {
        let mut child = self.command().spawn().expect("spawn plimsolld");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let err = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = tx.send(line.clone());
                }
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        });
        // A hardened daemon compiles its guests before it listens: on a cold
        // cache, under the load of the whole suite, minutes.
        let line = match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(l) => l,
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "plimsolld did not start: {}",
                    stderr.lock().map(|s| s.clone()).unwrap_or_default()
                );
            }
        };
        let addr = line
            .split("://")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|a| a.parse().ok())
            .expect("api address in the listening line");
        let metrics = line
            .split("metrics: http://")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|a| a.parse().ok());
        let state = self
            .env
            .iter()
            .find(|(k, _)| k == "PLIMSOLL_STATE_DIR")
            .map(|(_, v)| PathBuf::from(v))
            .expect("state");
        Daemon {
            child,
            addr,
            metrics,
            state,
            stderr,
            _tmp: self.tmp,
        }
    }

    /// Runs the daemon expecting it to refuse to start.
    pub fn refused(self) -> (i32, String) {
        let mut child = self.command().spawn().expect("spawn plimsolld");
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        let st = child.wait().expect("wait");
        (st.code().unwrap_or(-1), err)
    }
}

pub struct Resp {
    pub status: u16,
    pub headers: HashMap<String, String>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
    /// The `Retry-After` header in seconds; panics when it is missing.
    pub fn retry_after(&self) -> u64 {
        self.headers
            .get("retry-after")
            .and_then(|v| v.parse().ok())
            .expect("Retry-After")
    }

    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or("").to_string()
    }
}

pub fn exchange<S: Read + Write>(mut s: S, raw: &[u8]) -> std::io::Result<Resp> {
    s.write_all(raw)?;
    s.flush()?;
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no response head: {text:?}")))?;
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("bad status line"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Ok(Resp {
        status,
        headers,
        body: body.to_string(),
    })
}

pub fn raw_request(method: &str, path: &str, token: Option<&str>, body: Option<&str>) -> Vec<u8> {
    let mut r = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    if let Some(t) = token {
        r.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some(b) = body {
        r.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    r.push_str("\r\n");
    let mut out = r.into_bytes();
    if let Some(b) = body {
        out.extend_from_slice(b.as_bytes());
    }
    out
}

pub fn try_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> std::io::Result<Resp> {
    let s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    exchange(s, &raw_request(method, path, token, body))
}

pub fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> Resp {
    try_call(addr, method, path, token, body).expect("HTTP exchange")
}

pub fn run(d: &Daemon, token: &str, body: &str) -> Resp {
    call(d.addr, "POST", "/v1/runs", Some(token), Some(body))
}

pub const JS_ONE_PLUS_ONE: &str = r#"{"language": "javascript", "code": "1+1"}"#;

// ------------------------------------------------------------------ TLS

/// A test CA and a leaf certificate for `localhost` it signed, with the
/// leaf's key.
pub fn test_pki() -> (rcgen::Certificate, rcgen::Certificate, rcgen::KeyPair) {
    let ca_key = rcgen::KeyPair::generate().expect("ca key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "plimsoll test CA");
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let leaf_key = rcgen::KeyPair::generate().expect("leaf key");
    let leaf_params =
        rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("leaf params");
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).expect("leaf");
    (ca, leaf, leaf_key)
}
