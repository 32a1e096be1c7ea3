//! The README is a test (issue #35): every command its `sh` blocks show
//! runs as written, from the checkout, against the built tree, and what
//! the README says it does is checked. `make demo` and `make test` are CI
//! steps of their own (`.ci/run`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The commands of the README's `sh` blocks, `\`-continued lines joined.
fn commands() -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_sh = line.trim() == "```sh";
            continue;
        }
        if !in_sh || line.trim().is_empty() {
            continue;
        }
        let line = code_of(line);
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            continue;
        }
        pending.push_str(line);
        // A single-quoted argument may span lines (`python3 -c '…'`).
        if pending.matches('\'').count() % 2 == 1 {
            pending.push('\n');
            continue;
        }
        out.push(std::mem::take(&mut pending));
    }
    out
}

/// The command without its trailing comment.
fn code_of(cmd: &str) -> &str {
    match cmd.find("   #") {
        Some(i) => cmd[..i].trim_end(),
        None => cmd.trim_end(),
    }
}

/// The built binaries' directory, for a target directory outside the
/// checkout (CI's): `target/release/` in a command means that.
fn release_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_plimsolld"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn shell(cmd: &str) -> Command {
    let release = release_dir();
    let cmd = if repo().join("target/release/plimsolld") == release.join("plimsolld") {
        cmd.to_owned()
    } else {
        cmd.replace("target/release/", &format!("{}/", release.display()))
    };
    let mut c = Command::new("bash");
    c.arg("-c").arg(cmd).current_dir(repo());
    // As a person's shell has it: none of the variables `cargo test` sets
    // for its tests (a nested `cargo build` would see another build).
    c.env_clear();
    for k in [
        "HOME",
        "CARGO_HOME",
        "RUSTUP_HOME",
        "CARGO_TARGET_DIR",
        "LANG",
        "USER",
        "TERM",
    ] {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    // `pip` and `python3` are the pinned clients' (`make clients`).
    let venv = repo().join("target/clients/venv/bin");
    let path = std::env::var("PATH").unwrap_or_default();
    c.env("PATH", format!("{}:{path}", venv.display()));
    c
}

/// A command the README starts in the background (`… &`), in a process
/// group of its own, which is ended with the test.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        // SAFETY: kill(2) on the process group this test created.
        unsafe {
            libc::kill(-(self.0.id() as i32), libc::SIGTERM);
        }
        let _ = self.0.wait();
    }
}

/// What the README says each command does, as text its output holds.
fn expected(cmd: &str) -> &'static [&'static str] {
    let table: &[(&str, &[&str])] = &[
        ("hello.wasm", &["hello from plimsoll"]),
        ("spin.wasm", &["\"status\": \"timeout\""]),
        ("demo.py", &["units by sku", "host files are out of reach"]),
        ("--json guests/examples/scripts/demo.js", &["\"result\""]),
        ("x = 41", &["42"]),
        ("demo_pandas.py", &["figure-1.png"]),
        ("pd.Series", &["6"]),
        ("localhost:8080/v1/runs", &["\"result\":\"[2,4,6]\""]),
        ("demo.sh", &["apple 5", "9\n"]),
        ("--language sh", &["/work/d"]),
        ("Workspace(Client", &["/work/src", "42"]),
        ("from plimsoll_client import Client", &["42"]),
    ];
    table
        .iter()
        .find(|(k, _)| cmd.contains(k))
        .map(|(_, v)| *v)
        .unwrap_or(&[])
}

#[test]
fn every_command_the_readme_shows_runs_as_written() {
    let cmds = commands();
    assert!(cmds.len() >= 12, "the README's commands: {cmds:#?}");
    let mut daemons = Vec::new();
    let mut checked = 0;
    for cmd in &cmds {
        let code = code_of(cmd);
        if code.starts_with("make ") {
            continue;
        }
        if let Some(background) = code.strip_suffix('&') {
            use std::os::unix::process::CommandExt;
            let child = shell(background.trim())
                .process_group(0)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{code}: {e}"));
            daemons.push(Background(child));
            continue;
        }
        let t = std::time::Instant::now();
        let out = shell(code)
            .output()
            .unwrap_or_else(|e| panic!("{code}: {e}"));
        eprintln!(
            "{:>6.1} s  {} check(s)  {code}",
            t.elapsed().as_secs_f64(),
            expected(code).len()
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let timeout_run = code.contains("--timeout-ms");
        assert!(
            out.status.success() || timeout_run,
            "`{code}` failed ({:?}):\n{stdout}\n{stderr}",
            out.status
        );
        for want in expected(code) {
            assert!(
                stdout.contains(want) || stderr.contains(want),
                "`{code}` did not print {want:?}:\n{stdout}\n{stderr}"
            );
            checked += 1;
        }
        if code.contains(" batch ") {
            let results =
                std::fs::read_to_string(repo().join("target/results.jsonl")).expect("results");
            for id in ["py-1", "js-1", "pandas-1"] {
                let line = results
                    .lines()
                    .rev()
                    .find(|l| l.contains(&format!("\"id\":\"{id}\"")))
                    .unwrap_or_else(|| panic!("no result for {id}: {results}"));
                assert!(line.contains("\"status\":\"ok\""), "{id}: {line}");
            }
            checked += 1;
        }
        if code.contains(" preinit ") {
            assert!(repo().join("target/javascript-preinit.wasm").is_file());
            checked += 1;
        }
    }
    assert!(
        checked >= 10,
        "only {checked} documented outcomes were checked"
    );
    drop(daemons);
    std::thread::sleep(Duration::from_millis(100));
}
