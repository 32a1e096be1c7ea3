//! The `plimsoll` command line, run as a real process.

mod support;

use std::process::{Command, Output};
use support::*;

fn plimsoll() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_plimsoll"));
    c.env_remove("SANDBOX_PROVIDER")
        .env_remove("SANDBOX_MIN_ISOLATION");
    c
}

fn guest(name: &str) -> String {
    guests_dir()
        .join(format!("{name}.wasm"))
        .display()
        .to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(c: &mut Command) -> Output {
    c.output().expect("spawn plimsoll")
}

#[test]
fn runs_a_component_and_exits_with_its_code() {
    let state = tempfile::tempdir().expect("tempdir");
    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--state-dir"])
        .arg(state.path())
        .arg(guest("hello")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hello from plimsoll\n");

    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--state-dir"])
        .arg(state.path())
        .arg(guest("fail")));
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr), "failing on purpose\n");
}

#[test]
fn refuses_without_a_provider_and_says_how_to_opt_in() {
    let out = run(plimsoll().args(["run"]).arg(guest("marker")));
    assert_eq!(out.status.code(), Some(125));
    let err = text(&out.stderr);
    assert!(
        err.contains("SANDBOX_PROVIDER") && err.contains("--provider wasm"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // The environment variable opts in as well.
    let state = tempfile::tempdir().expect("tempdir");
    let out = run(plimsoll()
        .env("SANDBOX_PROVIDER", "wasm")
        .args(["run", "--state-dir"])
        .arg(state.path())
        .arg(guest("marker")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn json_result_and_files_round_trip() {
    let state = tempfile::tempdir().expect("tempdir");
    let input = state.path().join("input.txt");
    std::fs::write(&input, "file contents").expect("write");
    let stdin = state.path().join("stdin.txt");
    std::fs::write(&stdin, "from stdin").expect("write");
    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--json", "--state-dir"])
        .arg(state.path())
        .arg("--stdin")
        .arg(&stdin)
        .arg("--file")
        .arg(&input)
        .arg("--file")
        .arg(format!("{}=renamed.txt", input.display()))
        .arg(guest("echo")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    assert_eq!(v["status"], "ok");
    assert_eq!(v["stdout"], "from stdin");
    assert_eq!(v["isolation"]["tier"], "process");
    let arts = v["artifacts"].as_array().expect("artifacts");
    let names: Vec<_> = arts
        .iter()
        .map(|a| a["path"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["input.txt", "renamed.txt"]);
    assert_eq!(arts[0]["content"], "file contents");
}

#[test]
fn limits_map_to_exit_codes() {
    let state = tempfile::tempdir().expect("tempdir");
    let out = run(plimsoll()
        .args([
            "run",
            "--provider",
            "wasm",
            "--timeout-ms",
            "200",
            "--state-dir",
        ])
        .arg(state.path())
        .arg(guest("spin")));
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
    let out = run(plimsoll()
        .args([
            "run",
            "--provider",
            "wasm",
            "--memory-mb",
            "32",
            "--state-dir",
        ])
        .arg(state.path())
        .arg(guest("membomb")));
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    let out = run(plimsoll()
        .args([
            "run",
            "--provider",
            "wasm",
            "--fuel",
            "1000000",
            "--state-dir",
        ])
        .arg(state.path())
        .arg(guest("spin")));
    assert_eq!(out.status.code(), Some(152), "{}", text(&out.stderr));
    // Asking for more than the operator allows is refused, not clamped.
    let out = run(plimsoll()
        .args([
            "run",
            "--provider",
            "wasm",
            "--timeout-ms",
            "99999999",
            "--state-dir",
        ])
        .arg(state.path())
        .arg(guest("hello")));
    assert_eq!(out.status.code(), Some(125));
    assert!(text(&out.stderr).contains("wall_time_ms"));
}

#[test]
fn bad_input_is_a_clear_error() {
    let state = tempfile::tempdir().expect("tempdir");
    let junk = state.path().join("junk.wasm");
    std::fs::write(&junk, b"not wasm at all").expect("write");
    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--state-dir"])
        .arg(state.path())
        .arg(&junk));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not a valid WebAssembly component"),
        "{}",
        text(&out.stderr)
    );

    // A file name that is not UTF-8.
    use std::os::unix::ffi::OsStrExt;
    let odd = state
        .path()
        .join(std::ffi::OsStr::from_bytes(b"odd-\xff.txt"));
    std::fs::write(&odd, b"x").expect("write");
    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--state-dir"])
        .arg(state.path())
        .arg("--file")
        .arg(&odd)
        .arg(guest("hello")));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not valid UTF-8"),
        "{}",
        text(&out.stderr)
    );

    // An escaping workspace name.
    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--state-dir"])
        .arg(state.path())
        .arg("--file")
        .arg(format!("{}=../../x", junk.display()))
        .arg(guest("hello")));
    assert_eq!(out.status.code(), Some(125));
    assert!(
        text(&out.stderr).contains("not allowed"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(entries(&state.path().join("work")), 0);

    let out = run(plimsoll()
        .args(["run", "--provider", "hyperv"])
        .arg(guest("hello")));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown provider"));
}

#[test]
fn info_reports_the_provider_and_its_evidence() {
    let state = tempfile::tempdir().expect("tempdir");
    let out = run(plimsoll()
        .args(["info", "--provider", "wasm", "--state-dir"])
        .arg(state.path()));
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["isolation"]["tier"], "process");
    assert_eq!(v["provider"], "wasm");
}
