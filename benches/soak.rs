//! Soak: N mixed runs (one in five hostile) through a real `plimsolld`
//! with three callers at once, then the checks that matter after a long
//! day: every run answered, exactly one audit line per answered run, the
//! daemon's RSS and open file descriptors flat, no workspace left on disk.
//!
//! `make soak` (`PLIMSOLL_SOAK_RUNS`, default 5000; `PLIMSOLL_SOAK_CLIENTS`,
//! default 8; `PLIMSOLL_SOAK_PROVIDER`, default `wasm`). One job in a
//! hundred is a session instead (open, three evaluations that must see the
//! session's state, close). Under a wrapped provider it also checks, from
//! every result's evidence, that no worker ever served two callers, and
//! that the number of workers stays within the pool's cap. Exits non-zero
//! when a check fails.

#[path = "support/listen.rs"]
mod listen;

use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const TOKENS: [&str; 3] = [
    "soak-a-token-1111",
    "soak-b-token-2222",
    "soak-c-token-3333",
];

/// The job mix: (body, what the run must end as).
fn job(i: usize) -> (String, &'static str) {
    let hostile = i % 5 == 4;
    if hostile {
        match (i / 5) % 5 {
            0 => (
                r#"{"component":"spin","limits":{"wall_time_ms":200}}"#.into(),
                "timeout",
            ),
            1 => (
                r#"{"component":"membomb","limits":{"memory_bytes":33554432}}"#.into(),
                "memory_exhausted",
            ),
            2 => (
                r#"{"component":"flood","limits":{"stdout_bytes":10000}}"#.into(),
                "output_truncated",
            ),
            3 => (
                r#"{"language":"python","code":"while True: pass","limits":{"wall_time_ms":200}}"#
                    .into(),
                "timeout",
            ),
            _ => (r#"{"component":"stackoverflow"}"#.into(), "trap"),
        }
    } else {
        match i % 3 {
            0 => (
                format!(r#"{{"language":"javascript","code":"{i} + 1"}}"#),
                "ok",
            ),
            1 => (
                format!(r#"{{"language":"python","code":"sum(range({i}))"}}"#),
                "ok",
            ),
            _ => (r#"{"component":"hello"}"#.into(), "ok"),
        }
    }
}

fn post(addr: SocketAddr, token: &str, body: &str) -> std::io::Result<(u16, String)> {
    request(addr, "POST", "/v1/runs", token, body)
}

fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: &str,
    body: &str,
) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: soak\r\nConnection: close\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut buf = String::new();
    s.read_to_string(&mut buf)?;
    let status = buf
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = buf
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// One session: open, set `x`, read it back twice, close. `Err` says what
/// went wrong.
fn session(addr: SocketAddr, token: &str, i: usize) -> Result<Vec<serde_json::Value>, String> {
    let lang = if i.is_multiple_of(2) {
        "python"
    } else {
        "javascript"
    };
    let (code, status) = request(
        addr,
        "POST",
        "/v1/sessions",
        token,
        &format!(r#"{{"language":"{lang}"}}"#),
    )
    .map_err(|e| e.to_string())?;
    if code != 201 {
        return Err(format!("open: HTTP {code} {status}"));
    }
    let v: serde_json::Value = serde_json::from_str(&status).unwrap_or_default();
    let id = v["session_id"].as_str().ok_or("no session id")?.to_owned();
    let path = format!("/v1/sessions/{id}/runs");
    let set = if lang == "python" {
        format!("x = {i}")
    } else {
        format!("globalThis.x = {i}; 0")
    };
    let mut results = Vec::new();
    for (code_text, want) in [
        (set, None),
        ("x + 1".to_owned(), Some((i + 1).to_string())),
        ("x + 2".to_owned(), Some((i + 2).to_string())),
    ] {
        let body = serde_json::json!({ "code": code_text }).to_string();
        let (code, text) = request(addr, "POST", &path, token, &body).map_err(|e| e.to_string())?;
        let r: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if code != 200 || r["status"] != "ok" {
            return Err(format!("evaluation: HTTP {code} {text}"));
        }
        if let Some(w) = want
            && r["result"].as_str() != Some(w.as_str())
        {
            return Err(format!("the session lost its state: {text}"));
        }
        results.push(r);
    }
    let (code, _) = request(addr, "DELETE", &format!("/v1/sessions/{id}"), token, "")
        .map_err(|e| e.to_string())?;
    if code != 204 {
        return Err(format!("close: HTTP {code}"));
    }
    Ok(results)
}

/// `plimsoll-worker` processes under `pid`.
fn worker_count(pid: u32) -> usize {
    let parent = |p: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        let rest = stat.rsplit_once(')')?.1;
        rest.split_whitespace().nth(1)?.parse().ok()
    };
    let mut n = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
        if comm.trim() != "plimsoll-worker" {
            continue;
        }
        let mut up = parent(p);
        for _ in 0..8 {
            match up {
                Some(q) if q == pid => {
                    n += 1;
                    break;
                }
                Some(q) if q > 1 => up = parent(q),
                _ => break,
            }
        }
    }
    n
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("soak: benchmark");
        return;
    }
    let n: usize = std::env::var("PLIMSOLL_SOAK_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    let clients: usize = std::env::var("PLIMSOLL_SOAK_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let provider = std::env::var("PLIMSOLL_SOAK_PROVIDER").unwrap_or_else(|_| "wasm".into());
    let wrapped = provider != "wasm";
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    let work = tmp.path().join("work");
    let comps = tmp.path().join("components");
    std::fs::create_dir_all(&comps).expect("mkdir");
    let guests = repo().join("target/guests");
    for g in ["hello", "spin", "membomb", "flood", "stackoverflow"] {
        std::fs::copy(
            guests.join(format!("{g}.wasm")),
            comps.join(format!("{g}.wasm")),
        )
        .expect("guest (run `make guests`)");
    }
    let clients_file = tmp.path().join("clients.json");
    let entries: Vec<String> = TOKENS
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                r#"{{"id":"soak{i}","token_sha256":"{}","scopes":["code:run"],"rate_per_min":1000000,"max_concurrent":64}}"#,
                hex::encode(Sha256::digest(t.as_bytes()))
            )
        })
        .collect();
    std::fs::write(
        &clients_file,
        format!(r#"{{"clients":[{}]}}"#, entries.join(",")),
    )
    .expect("clients");
    let (mut child, addr) = listen::spawn_listening(
        Command::new(env!("CARGO_BIN_EXE_plimsolld"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("SANDBOX_PROVIDER", &provider)
            .env("SANDBOX_MAX_SESSIONS_PER_CALLER", "16")
            .env("PLIMSOLL_LISTEN", "127.0.0.1:0")
            .env("PLIMSOLL_METRICS_ADDR", "off")
            .env("PLIMSOLL_STATE_DIR", &state)
            .env("PLIMSOLL_WORK_DIR", &work)
            .env("PLIMSOLL_CACHE_DIR", repo().join("target/test-cache"))
            .env("PLIMSOLL_GUESTS_DIR", &guests)
            .env("PLIMSOLL_COMPONENTS_DIR", &comps)
            .env("PLIMSOLL_CLIENTS_FILE", &clients_file)
            .env("PLIMSOLL_LOG", "error"),
    );
    let pid = child.id();

    let next = Arc::new(AtomicUsize::new(0));
    let answered = Arc::new(Mutex::new(Vec::<String>::new()));
    let wrong = Arc::new(Mutex::new(Vec::<String>::new()));
    let lost = Arc::new(AtomicUsize::new(0));
    // worker id → the callers it served, from the evidence.
    let served = Arc::new(Mutex::new(std::collections::BTreeMap::<
        String,
        BTreeSet<String>,
    >::new()));
    let sessions_ok = Arc::new(AtomicUsize::new(0));
    let sessions_bad = Arc::new(Mutex::new(Vec::<String>::new()));
    let started = Instant::now();
    let mut baseline = None;
    let workers: Vec<_> = (0..clients)
        .map(|c| {
            let (next, answered, wrong, lost) =
                (next.clone(), answered.clone(), wrong.clone(), lost.clone());
            let (served, sessions_ok, sessions_bad) =
                (served.clone(), sessions_ok.clone(), sessions_bad.clone());
            let note = move |v: &serde_json::Value| {
                let w = &v["isolation"]["evidence"]["worker"];
                if let (Some(id), Some(caller)) = (w["worker_id"].as_str(), w["caller"].as_str()) {
                    served
                        .lock()
                        .expect("lock")
                        .entry(id.to_owned())
                        .or_default()
                        .insert(caller.to_owned());
                }
            };
            std::thread::spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    if i % 100 == 50 {
                        match session(addr, TOKENS[(i + c) % 3], i) {
                            Ok(results) => {
                                results.iter().for_each(&note);
                                sessions_ok.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => sessions_bad
                                .lock()
                                .expect("lock")
                                .push(format!("job {i}: {e}")),
                        }
                        continue;
                    }
                    let (body, want) = job(i);
                    match post(addr, TOKENS[(i + c) % 3], &body) {
                        Ok((200, text)) => {
                            let v: serde_json::Value =
                                serde_json::from_str(&text).unwrap_or_default();
                            note(&v);
                            if let Some(id) = v["run_id"].as_str() {
                                answered.lock().expect("lock").push(id.to_string());
                            }
                            if v["status"] != want {
                                wrong
                                    .lock()
                                    .expect("lock")
                                    .push(format!("job {i}: wanted {want}, got {}", v["status"]));
                            }
                        }
                        Ok((code, text)) => wrong
                            .lock()
                            .expect("lock")
                            .push(format!("job {i}: HTTP {code} {text}")),
                        Err(_) => {
                            lost.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    // Baseline after the first tenth (caches, pools and allocator warm).
    while next.load(Ordering::Relaxed) < n / 10 {
        std::thread::sleep(Duration::from_millis(50));
    }
    baseline.get_or_insert((rss_kib(pid), fds(pid)));
    let workers0 = worker_count(pid);
    let mut workers_max = workers0;
    while workers.iter().any(|w| !w.is_finished()) {
        workers_max = workers_max.max(worker_count(pid));
        std::thread::sleep(Duration::from_millis(200));
    }
    for w in workers {
        let _ = w.join();
    }
    let workers1 = worker_count(pid);
    let wall = started.elapsed();
    std::thread::sleep(Duration::from_millis(500));
    let (rss0, fd0) = baseline.unwrap_or((0, 0));
    let (rss1, fd1) = (rss_kib(pid), fds(pid));
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
    let _ = child.wait();
    let audit = std::fs::read_to_string(state.join("audit.jsonl")).unwrap_or_default();
    let audited: Vec<String> = audit
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "run")
        .filter_map(|v| v["run_id"].as_str().map(str::to_owned))
        .collect();
    let answered = answered.lock().expect("lock").clone();
    let a: BTreeSet<_> = answered.iter().cloned().collect();
    let b: BTreeSet<_> = audited.iter().cloned().collect();
    let leftover = std::fs::read_dir(&work).map(|d| d.count()).unwrap_or(0);
    let wrong = wrong.lock().expect("lock").clone();
    let lost = lost.load(Ordering::Relaxed);
    let rss_growth_mib = (rss1 as f64 - rss0 as f64) / 1024.0;
    let sessions_want = (0..n).filter(|i| i % 100 == 50).count();
    let runs_want = n - sessions_want;
    let served = served.lock().expect("lock").clone();
    let shared: Vec<&String> = served
        .iter()
        .filter(|(_, callers)| callers.len() > 1)
        .map(|(id, _)| id)
        .collect();
    let sessions_bad = sessions_bad.lock().expect("lock").clone();
    let sessions_ok = sessions_ok.load(Ordering::Relaxed);
    let mut checks = vec![
        (
            "every run answered",
            lost == 0 && answered.len() == runs_want,
            format!("{} of {runs_want} answered, {lost} lost", answered.len()),
        ),
        (
            "every outcome as expected",
            wrong.is_empty(),
            format!(
                "{} unexpected{}",
                wrong.len(),
                wrong
                    .first()
                    .map(|w| format!(", first: {w}"))
                    .unwrap_or_default()
            ),
        ),
        (
            "one audit line per answered run",
            a == b && audited.len() == answered.len(),
            format!("{} lines, {} answered", audited.len(), answered.len()),
        ),
        (
            "RSS flat (≤ 64 MiB growth after warm-up)",
            rss_growth_mib <= 64.0,
            format!(
                "{:.0} → {:.0} MiB ({rss_growth_mib:+.1})",
                rss0 as f64 / 1024.0,
                rss1 as f64 / 1024.0
            ),
        ),
        (
            "open fds flat (±16)",
            fd1 <= fd0 + 16,
            format!("{fd0} → {fd1}"),
        ),
        (
            "no workspace left on disk",
            leftover == 0,
            format!("{leftover} entries under the work dir"),
        ),
        (
            "every session kept its state",
            sessions_bad.is_empty() && sessions_ok == sessions_want,
            format!(
                "{sessions_ok} of {sessions_want}{}",
                sessions_bad
                    .first()
                    .map(|w| format!(", first failure: {w}"))
                    .unwrap_or_default()
            ),
        ),
    ];
    if wrapped {
        checks.push((
            "no worker served two callers (from the evidence)",
            shared.is_empty() && !served.is_empty(),
            format!(
                "{} workers seen, {} served two callers",
                served.len(),
                shared.len()
            ),
        ));
        checks.push((
            "worker count flat (≤ PLIMSOLL_WORKER_MAX = 16)",
            workers_max <= 16 && workers1 <= 16,
            format!("{workers0} after warm-up, at most {workers_max}, {workers1} at the end"),
        ));
    }
    println!(
        "soak ({provider}): {runs_want} runs (one in five hostile) and {sessions_want} sessions, {clients} clients, 3 callers, {:.1} s, {:.0} jobs/s",
        wall.as_secs_f64(),
        n as f64 / wall.as_secs_f64()
    );
    println!("| check | result | observed |");
    println!("|---|---|---|");
    let mut ok = true;
    for (what, passed, observed) in &checks {
        ok &= passed;
        println!(
            "| {what} | {} | {observed} |",
            if *passed { "pass" } else { "FAIL" }
        );
    }
    if !ok {
        std::process::exit(1);
    }
}
