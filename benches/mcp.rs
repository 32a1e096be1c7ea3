//! `plimsoll mcp` over stdio against the library call, in one run:
//! JavaScript `1+1` through `tools/call run_code` (a real `plimsoll mcp`
//! process, spoken to with newline-delimited JSON-RPC as any MCP client
//! does), and the same request through `Sandbox::run` in this process.
//! The two are interleaved call by call, because this VM's speed drifts.

use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn guests() -> PathBuf {
    std::env::var_os("PLIMSOLL_GUESTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests"))
}

fn p50(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("mcp: benchmark");
        return;
    }
    let n: usize = std::env::var("PLIMSOLL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let state = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_plimsoll"))
        .args(["mcp", "--provider", "wasm"])
        .env("PLIMSOLL_GUESTS_DIR", guests())
        .env("PLIMSOLL_STATE_DIR", guests().join("../test-state"))
        .env("PLIMSOLL_WORK_DIR", state.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("plimsoll mcp");
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let send = |to: &mut std::process::ChildStdin, v: serde_json::Value| {
        writeln!(to, "{v}").expect("write");
        to.flush().expect("flush");
    };
    send(
        &mut to,
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "plimsoll-bench", "version": "0"}}}),
    );
    line.clear();
    from.read_line(&mut line).expect("initialize answer");
    send(
        &mut to,
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let s = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        interpreters: vec![(Language::Javascript, guests().join("javascript.wasm"))],
        runtime: RuntimeConfig {
            cache_dir: Some(guests().join("../test-cache")),
            workspace_dir: dir.path().join("work"),
            ..RuntimeConfig::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let req = RunRequest::code(Language::Javascript, "1+1");
    let (mut mcp, mut lib) = (Vec::new(), Vec::new());
    for i in 0..(n + 50) {
        let t = Instant::now();
        send(
            &mut to,
            serde_json::json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": "run_code", "arguments": {"language": "javascript", "code": "1+1"}}}),
        );
        line.clear();
        from.read_line(&mut line).expect("answer");
        let took = t.elapsed();
        assert!(line.contains("\"status\":\"ok\""), "{line}");
        let t = Instant::now();
        let r = rt.block_on(s.run(&req));
        let lib_took = t.elapsed();
        assert_eq!(r.status, Status::Ok);
        if i >= 50 {
            mcp.push(took);
            lib.push(lib_took);
        }
    }
    drop(to);
    let _ = child.wait();
    let (m, l) = (p50(mcp), p50(lib));
    println!("JavaScript `1+1`, p50 over {n} calls, interleaved:");
    println!("| path | p50 µs |");
    println!("|---|---:|");
    println!("| library `Sandbox::run` (this process) | {l:.0} |");
    println!("| `plimsoll mcp` over stdio, `tools/call run_code` | {m:.0} |");
    println!("| MCP layer added | {:+.0} |", m - l);
}
