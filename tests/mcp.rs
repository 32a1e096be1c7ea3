//! `plimsoll mcp` with real MCP clients: the official Python SDK (`mcp`,
//! pinned in the Makefile's `clients`) over stdio, running
//! tests/mcp/mcp_checks.py against the real binary.

mod support;

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn client_python() -> PathBuf {
    let p = repo().join("target/clients/venv/bin/python");
    let ok = p.is_file()
        && Command::new(&p)
            .args(["-c", "import mcp"])
            .status()
            .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} with the MCP Python SDK is missing: the MCP tests drive `plimsoll mcp` with the real client; install it with `make clients`",
        p.display()
    );
    p
}

/// Runs the checks script; returns its stdout.
fn checks(script: &str, extra_args: &str) -> String {
    let out = Command::new(client_python())
        .arg(repo().join("tests/mcp").join(script))
        .env("PLIMSOLL_BIN", env!("CARGO_BIN_EXE_plimsoll"))
        .env("PLIMSOLL_MCP_ARGS", extra_args)
        .env("PLIMSOLL_GUESTS_DIR", support::guests_dir())
        .env(
            "PLIMSOLL_STATE_DIR",
            support::guests_dir().join("../test-state"),
        )
        .env_remove("SANDBOX_PROVIDER")
        .env_remove("SANDBOX_MIN_ISOLATION")
        .output()
        .expect("run the MCP checks");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{stdout}");
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "the MCP checks failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_python_sdk_drives_plimsoll_mcp_over_stdio() {
    let out = checks("mcp_checks.py", "");
    for must in [
        "ok   grant: the credential is nowhere in the answer",
        "ok   cancel: the run stopped",
        "ok   disabled: says how to opt in",
        "ok   sessions belong to their connection",
    ] {
        assert!(out.contains(must), "{must} did not run:\n{out}");
    }
}

/// The MCP Inspector's CLI (`@modelcontextprotocol/inspector`, pinned in
/// the Makefile's `clients`): one method per process, against a fresh
/// `plimsoll mcp --provider wasm`. Returns its exit status and stdout.
fn inspector(method_args: &[&str]) -> (bool, String) {
    let bin = repo().join("target/clients/inspector/node_modules/.bin/mcp-inspector");
    assert!(
        bin.is_file(),
        "{} is missing: the MCP tests check `plimsoll mcp` with the MCP Inspector's CLI too; install it with `make clients`",
        bin.display()
    );
    let guests = format!("PLIMSOLL_GUESTS_DIR={}", support::guests_dir().display());
    let state = format!(
        "PLIMSOLL_STATE_DIR={}",
        support::guests_dir().join("../test-state").display()
    );
    let out = Command::new(bin)
        .args(["--cli", "-e", &guests, "-e", &state])
        .arg(env!("CARGO_BIN_EXE_plimsoll"))
        .args(["mcp", "--provider", "wasm"])
        .args(method_args)
        .output()
        .expect("run the MCP Inspector");
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        // The Inspector reports its errors on stderr.
        text.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    (out.status.success(), text)
}

fn json_of(text: &str) -> serde_json::Value {
    // The first JSON value (an error's own line may follow it).
    let start = text.find('{').unwrap_or(0);
    let mut values =
        serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
    match values.next() {
        Some(Ok(v)) => v,
        other => panic!("{other:?}: {text}"),
    }
}

#[test]
fn the_mcp_inspector_agrees_over_stdio() {
    let (ok, out) = inspector(&["--method", "tools/list"]);
    assert!(ok, "{out}");
    let v = json_of(&out);
    let mut names: Vec<&str> = v["tools"]
        .as_array()
        .map(|t| t.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "close_session",
            "fork_session",
            "open_session",
            "resume_session",
            "run_cell",
            "run_code",
            "snapshot_session"
        ]
    );

    let call = |lang: &str, code: &str, more: &[&str]| {
        let lang = format!("language={lang}");
        let code = format!("code={code}");
        let mut args = vec![
            "--method",
            "tools/call",
            "--tool-name",
            "run_code",
            "--tool-arg",
            lang.as_str(),
            "--tool-arg",
            code.as_str(),
        ];
        args.extend_from_slice(more);
        inspector(&args)
    };
    let (ok, out) = call("python", "print(6*7)", &[]);
    let v = json_of(&out);
    assert!(ok, "{out}");
    assert_eq!(v["structuredContent"]["stdout"], "42\n", "{out}");
    assert_eq!(v["structuredContent"]["isolation"]["tier"], "process");
    let (ok, out) = call("javascript", "1+1", &[]);
    assert!(ok, "{out}");
    assert_eq!(json_of(&out)["structuredContent"]["result"], "2", "{out}");
    // A hostile run is a tool error with its typed status.
    let (ok, out) = call("javascript", "for(;;){}", &["--tool-arg", "timeout_ms=300"]);
    assert!(!ok, "{out}");
    let v = json_of(&out);
    assert_eq!(v["isError"], true, "{out}");
    assert!(
        matches!(
            v["structuredContent"]["status"].as_str(),
            Some("timeout" | "cpu_exhausted")
        ),
        "{out}"
    );
    // An unknown tool is an error, not a crash.
    let (ok, out) = inspector(&["--method", "tools/call", "--tool-name", "rm_rf"]);
    assert!(!ok && out.contains("not found"), "{out}");
}

/// Bad input on the stdio transport, spoken raw: a line that is not
/// UTF-8, a JSON-RPC batch of 10,000 calls, a 100 MiB line, and then a
/// normal call, which is answered. The server's memory stays bounded (its
/// peak RSS is read from /proc).
#[test]
fn bad_stdio_input_is_bounded_and_the_server_keeps_serving() {
    use std::io::{BufRead, BufReader, Write};
    let state = support::guests_dir().join("../test-state");
    let mut child = Command::new(env!("CARGO_BIN_EXE_plimsoll"))
        .args(["mcp", "--provider", "wasm"])
        .env("PLIMSOLL_GUESTS_DIR", support::guests_dir())
        .env("PLIMSOLL_STATE_DIR", &state)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("plimsoll mcp");
    let mut to = child.stdin.take().expect("stdin");
    let mut from = BufReader::new(child.stdout.take().expect("stdout"));
    let answer = |from: &mut BufReader<std::process::ChildStdout>| {
        let mut line = String::new();
        from.read_line(&mut line).expect("an answer");
        serde_json::from_str::<serde_json::Value>(&line).expect("JSON")
    };
    writeln!(
        to,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"raw","version":"0"}}}}}}"#
    )
    .expect("write");
    assert_eq!(answer(&mut from)["id"], 1);
    writeln!(
        to,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .expect("write");
    // Not UTF-8.
    to.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"\xff\xfe\"}\n")
        .expect("write");
    // A batch: MCP has none; answered -32600 with id null.
    let one = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
    let batch = format!("[{}]\n", vec![one; 10_000].join(","));
    to.write_all(batch.as_bytes()).expect("write");
    let v = answer(&mut from);
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v["id"].is_null(), "{v}");
    // 100 MiB on one line: discarded at the transport's cap, unread beyond.
    let chunk = vec![b'x'; 1 << 20];
    to.write_all(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_code","arguments":{"language":"python","code":""#)
        .expect("write");
    for _ in 0..100 {
        to.write_all(&chunk).expect("write");
    }
    to.write_all(b"\"}}}\n").expect("write");
    // And the server still answers.
    writeln!(
        to,
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"run_code","arguments":{{"language":"javascript","code":"6*7"}}}}}}"#
    )
    .expect("write");
    let v = answer(&mut from);
    assert_eq!(v["id"], 5, "{v}");
    assert_eq!(v["result"]["structuredContent"]["result"], "42", "{v}");
    let peak_kib: u64 = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // The 100 MiB never sat in memory whole (the cap is 16 MiB a line).
    assert!(
        peak_kib > 0 && peak_kib < 400 << 10,
        "peak RSS {peak_kib} KiB"
    );
    drop(to);
    let _ = child.wait();
}

/// Twelve `open_session` calls sent at once on one connection open exactly
/// the caller's cap of sessions, in-process and behind bubblewrap (issue
/// #34: the cap was checked, then the open awaited, then the session
/// inserted).
#[test]
fn a_burst_of_opens_never_passes_the_session_cap() {
    let mut tiers = vec!["--provider wasm"];
    let bwrap = Command::new("bwrap")
        .args(["--unshare-all", "--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if bwrap {
        tiers.push("--provider wasm+bwrap");
    } else {
        eprintln!("SKIP (bwrap tier only): bubblewrap cannot run here; .ci/run installs it");
    }
    for args in tiers {
        let out = Command::new(client_python())
            .arg(repo().join("tests/mcp/burst_checks.py"))
            .env("PLIMSOLL_BIN", env!("CARGO_BIN_EXE_plimsoll"))
            .env("PLIMSOLL_MCP_ARGS", args)
            .env("PLIMSOLL_CAP", "4")
            .env("PLIMSOLL_GUESTS_DIR", support::guests_dir())
            .env(
                "PLIMSOLL_STATE_DIR",
                support::guests_dir().join("../test-state"),
            )
            .env("PLIMSOLL_WORKER_BIN", env!("CARGO_BIN_EXE_plimsoll-worker"))
            .env_remove("SANDBOX_PROVIDER")
            .output()
            .expect("run the burst checks");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!("{args}: {stdout}");
        assert!(
            out.status.success() && stdout.contains("all checks passed"),
            "{args}: the burst passed the cap:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
