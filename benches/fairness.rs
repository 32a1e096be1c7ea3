//! One caller unable to slow another (#40): a second caller's JavaScript
//! `1+1` p50/p99 over HTTP alone, then while a first caller keeps 64
//! keep-alive clients busy on the same daemon (its `max_concurrent` and
//! rate set high enough that only the daemon's own scheduling stands
//! between them). Target: the second caller's p99 under load within 2× of
//! its p99 alone. Same run, same daemon, interleaved phases.
//!
//! `make bench-daemon` (or `cargo bench -p plimsolld --bench fairness`).
//! `PLIMSOLL_BENCH_SECS` sets the seconds per phase (default 5).

#[path = "support/listen.rs"]
mod listen;

use sha2::{Digest, Sha256};
use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const HEAVY: &str = "heavy-caller-token-0a1b2c3d4e5f";
const LIGHT: &str = "light-caller-token-f5e4d3c2b1a0";
const BODY: &str = r#"{"language":"javascript","code":"1+1"}"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sha(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// One keep-alive connection of one caller.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    token: &'static str,
}

impl Conn {
    fn open(addr: SocketAddr, token: &'static str) -> Conn {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_nodelay(true).expect("nodelay");
        Conn {
            reader: BufReader::new(s.try_clone().expect("clone")),
            writer: s,
            token,
        }
    }

    /// POSTs one run; its status.
    fn run(&mut self) -> u16 {
        let req = format!(
            "POST /v1/runs HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{BODY}",
            self.token,
            BODY.len()
        );
        self.writer.write_all(req.as_bytes()).expect("write");
        let mut body = Vec::new();
        listen::read_response(&mut self.reader, &mut body)
    }
}

fn pct(lat: &mut [Duration], q: f64) -> f64 {
    lat.sort();
    let i = ((lat.len() as f64 - 1.0) * q).round() as usize;
    lat.get(i)
        .map(|d| d.as_secs_f64() * 1e6)
        .unwrap_or(f64::NAN)
}

/// The light caller, one client, for `secs`: its latencies.
fn light(addr: SocketAddr, secs: Duration) -> Vec<Duration> {
    let mut c = Conn::open(addr, LIGHT);
    let mut lat = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < secs {
        let t = Instant::now();
        assert_eq!(c.run(), 200, "the light caller was refused");
        lat.push(t.elapsed());
    }
    lat
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("fairness: benchmark");
        return;
    }
    let secs = Duration::from_secs(
        std::env::var("PLIMSOLL_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(5),
    );
    let guests = std::env::var_os("PLIMSOLL_GUESTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/guests"));
    let js = guests.join("javascript.wasm");
    assert!(js.exists(), "{}: run `make guests`", js.display());
    let tmp = tempfile::tempdir().expect("tempdir");
    let clients = tmp.path().join("clients.json");
    std::fs::write(
        &clients,
        format!(
            r#"{{"clients": [
              {{"id": "heavy", "token_sha256": "{}", "scopes": ["code:run"], "rate_per_min": 10000000, "max_concurrent": 64}},
              {{"id": "light", "token_sha256": "{}", "scopes": ["code:run"], "rate_per_min": 10000000, "max_concurrent": 4}}
            ]}}"#,
            sha(HEAVY),
            sha(LIGHT)
        ),
    )
    .expect("clients file");
    let (mut child, addr) = listen::spawn_listening(
        Command::new(env!("CARGO_BIN_EXE_plimsolld"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("PLIMSOLL_JAVASCRIPT_COMPONENT", &js)
            .env("SANDBOX_PROVIDER", "wasm")
            .env("PLIMSOLL_CLIENTS_FILE", &clients)
            .env("PLIMSOLL_LISTEN", "127.0.0.1:0")
            .env("PLIMSOLL_METRICS_ADDR", "off")
            .env("PLIMSOLL_STATE_DIR", tmp.path().join("state"))
            .env("PLIMSOLL_CACHE_DIR", guests.join("../test-cache"))
            .env("PLIMSOLL_AUDIT_SYNC", "batch")
            .env("PLIMSOLL_LOG", "error"),
    );
    // Warm up both callers.
    let _ = light(addr, Duration::from_millis(500));

    let mut alone = light(addr, secs);
    let stop = Arc::new(AtomicBool::new(false));
    let heavy_runs = Arc::new(AtomicU64::new(0));
    let heavy: Vec<_> = (0..64)
        .map(|_| {
            let (stop, runs) = (stop.clone(), heavy_runs.clone());
            std::thread::spawn(move || {
                let mut c = Conn::open(addr, HEAVY);
                while !stop.load(Ordering::Relaxed) {
                    if c.run() == 200 {
                        runs.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let before = heavy_runs.load(Ordering::Relaxed);
    let mut loaded = light(addr, secs);
    let heavy_rate = (heavy_runs.load(Ordering::Relaxed) - before) as f64 / secs.as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for h in heavy {
        let _ = h.join();
    }
    let _ = child.kill();
    let _ = child.wait();
    let (a50, a99) = (pct(&mut alone, 0.5), pct(&mut alone, 0.99));
    let (l50, l99) = (pct(&mut loaded, 0.5), pct(&mut loaded, 0.99));
    println!(
        "fairness: light caller alone p50 {a50:.0} µs p99 {a99:.0} µs ({} runs); \
         with heavy at 64 clients ({heavy_rate:.0} runs/s) p50 {l50:.0} µs p99 {l99:.0} µs ({} runs): \
         p99 {:.2}× alone (target ≤ 2×)",
        alone.len(),
        loaded.len(),
        l99 / a99
    );
}
