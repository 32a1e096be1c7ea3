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
        ["close_session", "open_session", "run_cell", "run_code"]
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
