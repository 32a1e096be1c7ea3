//! The shell guest (#36) through the library: a fresh `echo hi`,
//! `python3 -c 'print(1)'` started by the shell against the Python fresh
//! run, the Workspace client's fixed `exec`, `read` and `write` steps in a
//! session, `bash -c 'echo hi'` under bubblewrap from this process (the
//! peer), and what a session's shell costs in private memory. Every
//! comparison is interleaved call by call in one run, because this VM's
//! speed drifts by tens of percent between minutes.
//!
//! `make bench` runs it after building the guests (or `cargo bench -p
//! plimsoll --bench shell -- zzzz`: the filter skips criterion's part; the
//! percentile lines print regardless). Prints p50/p90/p99 over single
//! runs, then criterion's statistics.

#[path = "support/steps.rs"]
mod steps;
mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use plimsoll::sandbox::project::{ProjectOutcome, ProjectRequest};
use plimsoll::session::SessionOptions;
use plimsoll::{
    InputFile, Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status,
};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{guests_dir, percentiles, print_percentiles, private_bytes};

/// The file the read and write rows move (1 KiB, every byte value).
const DATA_PATH: &str = "data.bin";

/// The floor for the shell component (benches/shell_floor.rs).
#[path = "shell_floor.rs"]
mod bare;

fn file(path: &str, content: impl Into<plimsoll::blob::Blob>) -> InputFile {
    InputFile {
        path: path.into(),
        content: content.into(),
    }
}

/// `Workspace.exec(cmd)`: the EXEC step with the command as its file,
/// reading back the root and the working directory.
fn exec_project(cmd: &str) -> ProjectRequest {
    ProjectRequest {
        steps: vec![steps::EXEC_STEP.into()],
        files: vec![file(".plimsoll-shell/cmd", cmd)],
        capture: vec![".plimsoll-shell/root".into(), ".plimsoll-shell/cwd".into()],
        ..ProjectRequest::default()
    }
}

/// `Workspace.read(path)` with its default `max_bytes` (1 MiB).
fn read_project() -> ProjectRequest {
    ProjectRequest {
        steps: vec![steps::READ_STEP.into()],
        files: vec![
            file(".plimsoll-shell/a1", DATA_PATH),
            file(".plimsoll-shell/a2", "1048576"),
        ],
        capture: vec![".plimsoll-shell/out".into()],
        ..ProjectRequest::default()
    }
}

/// `Workspace.write(path, bytes)` of `data`: one WRITE_B64 step.
fn write_project(data: &[u8]) -> ProjectRequest {
    use base64::Engine as _;
    ProjectRequest {
        steps: vec![steps::WRITE_B64_STEP.into()],
        files: vec![
            file(".plimsoll-shell/a1", DATA_PATH),
            file(
                ".plimsoll-shell/in.b64",
                base64::engine::general_purpose::STANDARD.encode(data),
            ),
        ],
        ..ProjectRequest::default()
    }
}

/// Times `n` rounds of `fs`, one call of each per round in order (sleeping
/// `apart` before each call, untimed), and prints each one's percentiles
/// in ms. Returns the p50s in ms, in the order of `fs`.
fn interleaved(n: usize, apart: Option<Duration>, fs: &mut [(&str, &mut dyn FnMut())]) -> Vec<f64> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(n); fs.len()];
    for _ in 0..n {
        for (i, (_, f)) in fs.iter_mut().enumerate() {
            if let Some(gap) = apart {
                std::thread::sleep(gap);
            }
            let t = Instant::now();
            f();
            times[i].push(t.elapsed());
        }
    }
    fs.iter()
        .zip(times)
        .map(|((label, _), mut t)| {
            t.sort();
            let p50 = t[t.len() / 2].as_secs_f64() * 1e3;
            print_percentiles(label, "ms", t);
            p50
        })
        .collect()
}

/// The session a Workspace opens (`open_session(languages=["python"])` in
/// plimsolld): Python, JavaScript and, unless `shell` is false, the shell
/// over one workspace, Python started at open.
fn session_options(s: &Sandbox, shell: bool) -> SessionOptions {
    let mut guests = vec![
        s.interpreter_for(Language::Python, None).expect("python"),
        s.interpreter_for(Language::Javascript, None)
            .expect("javascript"),
    ];
    if shell {
        guests.push(s.interpreter_for(Language::Shell, None).expect("shell"));
    }
    SessionOptions {
        guests,
        start: vec![0],
        keep_on_failure: true,
        lifetime: None,
        idle_timeout: None,
        owner: None,
    }
}

/// Whether `bwrap` can make its namespaces here.
fn bwrap_works() -> bool {
    Command::new("bwrap")
        .args(["--unshare-all", "--ro-bind", "/", "/", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn bench(c: &mut Criterion) {
    let mut interpreters = Vec::new();
    for (l, f) in [
        (Language::Python, "python.wasm"),
        (Language::Javascript, "javascript.wasm"),
        (Language::Shell, "shell.wasm"),
    ] {
        let p = guests_dir().join(f);
        if !p.is_file() {
            println!(
                "SKIP the shell bench: {} is missing (run `make guests`)",
                p.display()
            );
            return;
        }
        interpreters.push((l, p));
    }
    assert_eq!(
        (
            steps::EXEC_STEP.len(),
            steps::READ_STEP.len(),
            steps::WRITE_B64_STEP.len()
        ),
        (437, 151, 196),
        "the fixed steps must be the client's bytes"
    );

    // The floor: wasmtime alone, for the shell component.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    {
        let floor = bare::Bare::new(&interpreters[2].1);
        percentiles("shell_bare_wasmtime_floor_echo_hi", 1000, "ms", || {
            rt.block_on(floor.eval("echo hi"))
        });
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let s = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            engine: plimsoll::EngineOptions {
                keep_resident_bytes: std::env::var("PLIMSOLL_KEEP_RESIDENT_MIB")
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                    .map(|mib| mib << 20)
                    // The library's default, as a user gets it.
                    .unwrap_or(plimsoll::engine::DEFAULT_KEEP_RESIDENT),
                warm_instances: std::env::var("PLIMSOLL_WARM_INSTANCES")
                    .ok()
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(plimsoll::engine::DEFAULT_WARM_INSTANCES),
                ..Default::default()
            },
            cache_dir: Some(guests_dir().join("../test-cache")),
            workspace_dir: plimsoll::config::default_work_dir(dir.path()),
            ..RuntimeConfig::default()
        },
        interpreters,
        sessions: plimsoll::session::SessionLimits {
            per_caller: 64,
            ..Default::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    // Every guest compiled (or loaded from the cache) before timing.
    let far = Instant::now() + Duration::from_secs(600);
    for l in [Language::Python, Language::Javascript, Language::Shell] {
        rt.block_on(s.interpreter_by(l, None, far))
            .unwrap_or_else(|e| panic!("{}: {e:?}", l.as_str()));
    }

    let check = |r: &plimsoll::RunResult, out: &str| {
        assert_eq!(r.status, Status::Ok, "{r:?}");
        assert_eq!(r.stdout, out, "{r:?}");
    };
    let echo = RunRequest::code(Language::Shell, "echo hi");
    let py_fresh = RunRequest::code(Language::Python, "print(1)");
    let py_in_shell = RunRequest::code(Language::Shell, "python3 -c 'print(1)'");
    let mut shell_echo = || check(&rt.block_on(s.run(&echo)), "hi\n");
    let mut python = || check(&rt.block_on(s.run(&py_fresh)), "1\n");
    let mut python_via_shell = || check(&rt.block_on(s.run(&py_in_shell)), "1\n");
    for _ in 0..20 {
        shell_echo();
        python();
        python_via_shell();
    }

    if std::env::var_os("PLIMSOLL_BENCH_SHELL_PROBE").is_some() {
        let src = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/executor/child.rs"),
        )
        .unwrap();
        let marker = "const PYTHON_PROGRAM: &str = r#\"";
        let start = src.find(marker).unwrap() + marker.len();
        let end = start + src[start..].find("\"#;").unwrap();
        let program = &src[start..end];
        let spec = serde_json::json!({"args": ["-c", "print(1)"], "cwd": "/work", "env": {"HOME": "/work", "PATH": "/usr/local/bin:/usr/bin:/bin", "SHELL": "/bin/sh", "PWD": "/work", "USER": "root", "LOGNAME": "root"}}).to_string();
        let lit = serde_json::Value::String(spec).to_string();
        let cell = format!("{program}\n__plimsoll_program({lit})\n");
        let child_cell = RunRequest::code(Language::Python, cell.as_str());
        let timed = format!(
            "import time\n_t0 = time.perf_counter_ns()\n_c = compile({:?}, '<x>', 'exec')\n_t1 = time.perf_counter_ns()\nexec(_c)\n_t2 = time.perf_counter_ns()\n__plimsoll_program({lit})\n_t3 = time.perf_counter_ns()\nprint((_t1 - _t0) // 1000, (_t3 - _t2) // 1000)",
            program
        );
        let timed_req = RunRequest::code(Language::Python, timed.as_str());
        let mut child_cell_run = || check(&rt.block_on(s.run(&child_cell)), "1\n");
        let mut compile_us = Vec::new();
        let mut call_us = Vec::new();
        let mut timed_run = || {
            let r = rt.block_on(s.run(&timed_req));
            assert_eq!(r.status, Status::Ok, "{r:?}");
            let mut it = r.stdout.lines();
            assert_eq!(it.next(), Some("1"));
            let v: Vec<u64> = it
                .next()
                .unwrap()
                .split(' ')
                .map(|x| x.parse().unwrap())
                .collect();
            compile_us.push(v[0]);
            call_us.push(v[1]);
        };
        // The wrapper precompiled: marshal'd by one run, loaded by the cell.
        let dump = rt.block_on(s.run(&RunRequest::code(
            Language::Python,
            format!("import marshal\nprint(marshal.dumps(compile({:?}, '<plimsoll-program>', 'exec')).hex())", program).as_str(),
        )));
        assert_eq!(dump.status, Status::Ok, "{dump:?}");
        let hex = dump.stdout.trim().to_string();
        let pre_cell = format!(
            "exec(__import__('marshal').loads(bytes.fromhex('{hex}')))\n__plimsoll_program({lit})\n"
        );
        let pre_req = RunRequest::code(Language::Python, pre_cell.as_str());
        let mut pre_run = || check(&rt.block_on(s.run(&pre_req)), "1\n");
        let grep_req = RunRequest::code(
            Language::Shell,
            "export -p | grep -Ev '^export (PWD|OLDPWD|__plimsoll_)' > /dev/null",
        );
        let mut grep_run = || check(&rt.block_on(s.run(&grep_req)), "");
        let mut exec_fresh_req = RunRequest::code(Language::Shell, steps::EXEC_STEP);
        exec_fresh_req.files = vec![file(".plimsoll-shell/cmd", "echo hi")];
        exec_fresh_req.capture = vec![".plimsoll-shell/root".into(), ".plimsoll-shell/cwd".into()];
        let mut exec_fresh = || check(&rt.block_on(s.run(&exec_fresh_req)), "hi\n");
        let pinfo = rt
            .block_on(s.open_session_with(
                "probe",
                &session_options(&s, true),
                &RunRequest::default(),
            ))
            .expect("session");
        let pid = pinfo.session_id.clone();
        let plain = ProjectRequest {
            steps: vec!["echo hi".into()],
            ..ProjectRequest::default()
        };
        let exec_p = exec_project("echo hi");
        let mut sess_plain = || {
            let p = rt.block_on(s.run_project_in_session("probe", &pid, &plain));
            assert_eq!(p.steps[0].result.stdout, "hi\n");
        };
        let mut sess_exec = || {
            let p = rt.block_on(s.run_project_in_session("probe", &pid, &exec_p));
            assert_eq!(p.steps[0].result.stdout, "hi\n");
        };
        interleaved(
            500,
            None,
            &mut [
                ("probe_shell_echo", &mut shell_echo),
                ("probe_shell_grep_env", &mut grep_run),
                ("probe_shell_exec_step_fresh", &mut exec_fresh),
                ("probe_session_plain_echo", &mut sess_plain),
                ("probe_session_exec_step", &mut sess_exec),
            ],
        );
        let js = RunRequest::code(Language::Javascript, "1+1");
        let mut js_run = || assert_eq!(rt.block_on(s.run(&js)).status, Status::Ok);
        for apart in [None, Some(Duration::from_millis(20))] {
            println!("== probe, apart {apart:?}");
            interleaved(
                300,
                apart,
                &mut [
                    ("probe_python_fresh_print(1)", &mut python),
                    ("probe_python_fresh_child_cell", &mut child_cell_run),
                    ("probe_shell_python3", &mut python_via_shell),
                    ("probe_shell_echo", &mut shell_echo),
                    ("probe_js_1+1", &mut js_run),
                    ("probe_timed", &mut timed_run),
                    ("probe_python_fresh_precompiled_wrapper", &mut pre_run),
                ],
            );
        }
        compile_us.sort();
        call_us.sort();
        println!(
            "in the guest: compile of the wrapper p50 {} µs, the call p50 {} µs",
            compile_us[compile_us.len() / 2],
            call_us[call_us.len() / 2]
        );
        return;
    }
    // A Workspace's session: its fixed steps, on its files.
    let info = rt
        .block_on(s.open_session_with("bench", &session_options(&s, true), &RunRequest::default()))
        .expect("session");
    let id = info.session_id.clone();
    let data: Vec<u8> = (0..1024u32).map(|i| (i % 256) as u8).collect();
    let (exec_echo, exec_python, read, write) = (
        exec_project("echo hi"),
        exec_project("python3 -c 'print(1)'"),
        read_project(),
        write_project(&data),
    );
    let project = |req: &ProjectRequest| {
        let p = rt.block_on(s.run_project_in_session("bench", &id, req));
        assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
        assert_eq!(p.steps.len(), 1, "{p:?}");
        assert_eq!(p.steps[0].result.exit_code, Some(0), "{p:?}");
        p
    };
    let mut session_exec_echo = || {
        let p = project(&exec_echo);
        assert_eq!(p.steps[0].result.stdout, "hi\n");
        assert_eq!(p.captured.len(), 2, "{p:?}");
    };
    let mut session_exec_python = || {
        let p = project(&exec_python);
        assert_eq!(p.steps[0].result.stdout, "1\n");
    };
    let mut session_write = || {
        project(&write);
    };
    let mut session_read = || {
        let p = project(&read);
        assert_eq!(p.captured.len(), 1, "{p:?}");
        assert_eq!(p.captured[0].content.as_bytes(), &data[..]);
    };
    session_write();
    for _ in 0..20 {
        session_exec_echo();
        session_exec_python();
        session_read();
        session_write();
    }

    // The peer, spawned from this process as a `docker exec` would be
    // (docker is absent on this machine class).
    let bwrap = bwrap_works();
    if !bwrap {
        println!(
            "SKIP bash_under_bwrap_echo_hi: !!! bubblewrap is missing or cannot create namespaces here (apt-get install bubblewrap): the peer row is NOT measured !!!"
        );
    }
    let spawn = |cmd: &mut Command| {
        let out = cmd
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .expect("spawn");
        assert!(out.status.success() && out.stdout == b"hi\n", "{out:?}");
    };
    let mut bash_bwrap = || {
        spawn(Command::new("bwrap").args([
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "bash",
            "-c",
            "echo hi",
        ]))
    };
    let mut bash_bare = || spawn(Command::new("bash").args(["-c", "echo hi"]));

    println!("== fresh runs, back to back, interleaved call by call (1,000 rounds)");
    let back = interleaved(
        1000,
        None,
        &mut [
            ("shell_fresh_echo_hi", &mut shell_echo),
            ("python_fresh_print(1)", &mut python),
            ("shell_fresh_python3_-c_print(1)", &mut python_via_shell),
        ],
    );
    println!(
        "python3 through the shell over the Python fresh run, back to back: {:+.3} ms (target ≤ +1 ms)",
        back[2] - back[1]
    );
    println!("== fresh runs 20 ms apart, interleaved (300 rounds)");
    let apart = interleaved(
        300,
        Some(Duration::from_millis(20)),
        &mut [
            ("shell_fresh_echo_hi_20ms_apart", &mut shell_echo),
            ("python_fresh_print(1)_20ms_apart", &mut python),
            (
                "shell_fresh_python3_-c_print(1)_20ms_apart",
                &mut python_via_shell,
            ),
        ],
    );
    println!(
        "python3 through the shell over the Python fresh run, 20 ms apart: {:+.3} ms (target ≤ +1 ms)",
        apart[2] - apart[1]
    );
    println!("== a Workspace session's fixed steps, back to back, interleaved (1,000 rounds)");
    let ws = interleaved(
        1000,
        None,
        &mut [
            ("session_exec_echo_hi", &mut session_exec_echo),
            ("session_read_1KiB", &mut session_read),
            ("session_write_1KiB", &mut session_write),
            ("session_exec_python3_-c_print(1)", &mut session_exec_python),
            ("python_fresh_print(1)_beside_the_session", &mut python),
        ],
    );
    println!(
        "session exec of python3 over the Python fresh run: {:+.3} ms (target ≤ +1 ms); read {:.3} ms, write {:.3} ms (target ≤ 2 ms)",
        ws[3] - ws[4],
        ws[1],
        ws[2]
    );
    println!("== the same 20 ms apart (300 rounds)");
    let _ = interleaved(
        300,
        Some(Duration::from_millis(20)),
        &mut [
            ("session_exec_echo_hi_20ms_apart", &mut session_exec_echo),
            ("session_read_1KiB_20ms_apart", &mut session_read),
            ("session_write_1KiB_20ms_apart", &mut session_write),
        ],
    );
    println!("== the peer: a process per command, spawned from this process (300 rounds)");
    let mut peers: Vec<(&str, &mut dyn FnMut())> = vec![
        ("shell_fresh_echo_hi_beside_the_peer", &mut shell_echo),
        ("bash_-c_echo_hi_spawned", &mut bash_bare),
    ];
    if bwrap {
        peers.push(("bash_-c_echo_hi_under_bwrap", &mut bash_bwrap));
    }
    let p = interleaved(300, None, &mut peers);
    if bwrap {
        println!("bash under bwrap over the shell guest: {:.1}×", p[2] / p[0]);
    }

    let mut g = c.benchmark_group("shell");
    g.bench_function("shell_fresh_echo_hi", |b| b.iter(&mut shell_echo));
    g.bench_function("session_exec_echo_hi", |b| b.iter(&mut session_exec_echo));
    g.bench_function("session_read_1KiB", |b| b.iter(&mut session_read));
    g.bench_function("session_write_1KiB", |b| b.iter(&mut session_write));
    g.finish();
    s.close_session("bench", &id);

    idle_memory(&s, &rt, &data);
}

/// Private memory of idle Workspace sessions: 16 sessions of each kind
/// open at once, this process's private pages before and after, per
/// session. Kinds: Python and JavaScript only; the same with the shell
/// guest, unused; the shell after a Workspace's first calls (`exec`,
/// `write` and `read` of 1 KiB). One warm-up round, then three rounds
/// alternating the kinds; the median of each kind is printed.
fn idle_memory(s: &Sandbox, rt: &tokio::runtime::Runtime, data: &[u8]) {
    let cell = RunRequest {
        code: Some("1+1".into()),
        language: Some(Language::Python),
        ..RunRequest::default()
    };
    let (exec, write, read) = (
        exec_project("cd /work && export GREETING=hi && echo hi"),
        write_project(data),
        read_project(),
    );
    let kinds: [(&str, bool, bool); 3] = [
        ("python+javascript", false, false),
        ("python+javascript+shell, shell unused", true, false),
        (
            "python+javascript+shell, after exec, write, read",
            true,
            true,
        ),
    ];
    let settle = || std::thread::sleep(Duration::from_millis(300));
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for round in 0..4 {
        for (k, (_, shell, used)) in kinds.iter().enumerate() {
            settle();
            let before = private_bytes();
            let mut open = Vec::new();
            for _ in 0..16 {
                let info = rt
                    .block_on(s.open_session_with(
                        "idle",
                        &session_options(s, *shell),
                        &RunRequest::default(),
                    ))
                    .expect("session");
                let r = rt
                    .block_on(s.evaluate(
                        "idle",
                        &info.session_id,
                        &cell,
                        plimsoll::session::Turn::Wait,
                    ))
                    .result;
                assert_eq!(r.status, Status::Ok, "{r:?}");
                if *used {
                    for req in [&exec, &write, &read] {
                        let p =
                            rt.block_on(s.run_project_in_session("idle", &info.session_id, req));
                        assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
                        assert_eq!(p.steps[0].result.exit_code, Some(0), "{p:?}");
                    }
                }
                open.push(info.session_id);
            }
            settle();
            let mib = private_bytes().saturating_sub(before) as f64 / 16.0 / (1 << 20) as f64;
            if round > 0 {
                per[k].push(mib);
            }
            for id in open {
                s.close_session("idle", &id);
            }
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let m: Vec<f64> = per.iter_mut().map(median).collect();
    for ((label, _, _), (mib, all)) in kinds.iter().zip(m.iter().zip(&per)) {
        println!(
            "idle_session_private_memory {label}: {mib:.3} MiB per session (16 open; rounds {all:.3?})"
        );
    }
    println!(
        "the shell's share of an idle session: {:+.3} MiB unused, {:+.3} MiB after its calls (target ≤ 1 MiB)",
        m[1] - m[0],
        m[2] - m[0]
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
