//! The daemon bench's Workspace rows (#36): plimsoll-client's fixed steps
//! through daemons with the shell guest, against the library.

use super::*;

/// CodeExecutor's Python step (`Run{project}`): the daemon's fresh Python
/// run, without a shell.
const PYTHON_STEP: &str =
    r#"python3 -c 'import runpy; runpy.run_path(".plimsoll/code.py", run_name="__main__")'"#;

/// A `SessionRun{project}` as `Workspace` sends it: one step, its files,
/// its artifacts, the floor and timeout it states.
fn session_project(
    session: &str,
    step: &str,
    files: &[(&str, &str)],
    artifacts: &[&str],
) -> String {
    let files: Vec<_> = files
        .iter()
        .map(|(p, c)| serde_json::json!({"path": p, "content": c}))
        .collect();
    let mut project = serde_json::json!({"steps": [step]});
    if !files.is_empty() {
        project["files"] = files.into();
    }
    if !artifacts.is_empty() {
        project["artifacts"] = artifacts.into();
    }
    serde_json::json!({
        "protocol": 4,
        "minimumIsolation": "process",
        "timeoutMs": 120000,
        "project": project,
        "sessionId": session,
    })
    .to_string()
}

/// The one step report of a project answer, after checking the outcome.
fn step_of(v: &serde_json::Value) -> &serde_json::Value {
    // `SessionRun` answers `{run: {project}}`, `Run` `{project}`.
    let p = if v["run"].is_null() {
        &v["project"]
    } else {
        &v["run"]["project"]
    };
    assert_eq!(p["outcome"], "PROJECT_OUTCOME_COMPLETED", "{v}");
    let step = &p["steps"][0];
    assert_eq!(step["exitCode"].as_i64().unwrap_or(0), 0, "{v}");
    step
}

fn b64(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The shell guest's Workspace calls (#36) through `plimsolld`, one client
/// on keep-alive connections, against the library's
/// `run_project_in_session` with the same project, interleaved call by
/// call: `exec("echo hi")`, `read` and `write` of 1 KiB through both
/// audit modes, and `exec("python3 -c 'print(1)'")` against the daemon's
/// fresh Python run (CodeExecutor's step, no shell).
pub(crate) fn workspace(
    rt: &tokio::runtime::Runtime,
    state: &Path,
    cache: &Path,
    tmp: &Path,
    secs: Duration,
) {
    let components: Vec<(&str, PathBuf)> = [
        ("PLIMSOLL_PYTHON_COMPONENT", "python.wasm"),
        ("PLIMSOLL_JAVASCRIPT_COMPONENT", "javascript.wasm"),
        ("PLIMSOLL_SHELL_COMPONENT", "shell.wasm"),
    ]
    .into_iter()
    .map(|(v, f)| (v, guests_dir().join(f)))
    .collect();
    if let Some((_, p)) = components.iter().find(|(_, p)| !p.is_file()) {
        println!(
            "\nSKIP the Workspace rows: {} is missing (run `make guests`)",
            p.display()
        );
        return;
    }
    let refs: Vec<(&str, &Path)> = components.iter().map(|(v, p)| (*v, p.as_path())).collect();
    let (mut always, addr_always) =
        start_daemon_with(&state.join("ws-always"), cache, &refs, "always");
    let (mut batch, addr_batch) = start_daemon_with(&state.join("ws-batch"), cache, &refs, "batch");
    let sandbox = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        interpreters: vec![
            (Language::Python, components[0].1.clone()),
            (Language::Javascript, components[1].1.clone()),
            (Language::Shell, components[2].1.clone()),
        ],
        runtime: RuntimeConfig {
            cache_dir: Some(cache.to_path_buf()),
            workspace_dir: tmp.join("ws-work"),
            ..RuntimeConfig::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let far = Instant::now() + Duration::from_secs(600);
    let guests: Vec<_> = [Language::Python, Language::Javascript, Language::Shell]
        .into_iter()
        .map(|l| {
            rt.block_on(sandbox.interpreter_by(l, None, far))
                .unwrap_or_else(|e| panic!("{}: {e:?}", l.as_str()))
        })
        .collect();
    let opts = plimsoll::session::SessionOptions {
        guests,
        start: vec![0],
        keep_on_failure: true,
        lifetime: None,
        idle_timeout: None,
        owner: None,
    };
    let lib_session = rt
        .block_on(sandbox.open_session_with("bench", &opts, &RunRequest::default()))
        .expect("library session")
        .session_id;
    // A Workspace's session on each daemon: `open_session(languages=["python"])`.
    let open = |addr| {
        let mut c = Conn::open(addr);
        // The daemon compiles its guests in the background at start.
        let t0 = Instant::now();
        let v = loop {
            let status = c.post_to(
                "/plimsoll.v1.SandboxService/OpenSession",
                r#"{"protocol":4,"minimumIsolation":"process","languages":["python"]}"#,
                "",
            );
            let v: serde_json::Value = serde_json::from_slice(&c.body).expect("json");
            if status == 200 {
                break v;
            }
            assert!(t0.elapsed() < Duration::from_secs(600), "OpenSession: {v}");
            std::thread::sleep(Duration::from_millis(200));
        };
        let id = v["sessionId"].as_str().expect("sessionId").to_string();
        (c, id)
    };
    let (mut ca, sa) = open(addr_always);
    let (mut cb, sb) = open(addr_batch);

    let data: Vec<u8> = (0..1024u32).map(|i| (i % 256) as u8).collect();
    let data_b64 = b64(&data);
    let exec_of = |s: &str, cmd: &str| {
        session_project(
            s,
            steps::EXEC_STEP,
            &[(".plimsoll-shell/cmd", cmd)],
            &[".plimsoll-shell/root", ".plimsoll-shell/cwd"],
        )
    };
    let read_of = |s: &str| {
        session_project(
            s,
            steps::READ_STEP,
            &[
                (".plimsoll-shell/a1", "data.bin"),
                (".plimsoll-shell/a2", "1048576"),
            ],
            &[".plimsoll-shell/out"],
        )
    };
    let write_of = |s: &str| {
        session_project(
            s,
            steps::WRITE_B64_STEP,
            &[
                (".plimsoll-shell/a1", "data.bin"),
                (".plimsoll-shell/in.b64", &data_b64),
            ],
            &[],
        )
    };
    let (exec_a, exec_b) = (exec_of(&sa, "echo hi"), exec_of(&sb, "echo hi"));
    let (read_a, read_b) = (read_of(&sa), read_of(&sb));
    let (write_a, write_b) = (write_of(&sa), write_of(&sb));
    let py_exec_b = exec_of(&sb, "python3 -c 'print(1)'");
    let py_run_b = serde_json::json!({
        "protocol": 4,
        "minimumIsolation": "process",
        "timeoutMs": 30000,
        "project": {
            "steps": [PYTHON_STEP],
            "files": [{"path": ".plimsoll/code.py", "content": "print(1)"}],
        },
    })
    .to_string();
    let lib = |req: &plimsoll::sandbox::project::ProjectRequest| {
        let p = rt.block_on(sandbox.run_project_in_session("bench", &lib_session, req));
        assert_eq!(
            p.outcome,
            plimsoll::sandbox::project::ProjectOutcome::Completed,
            "{p:?}"
        );
        assert_eq!(p.steps[0].result.exit_code, Some(0), "{p:?}");
        p
    };
    let lib_exec = plimsoll::sandbox::project::ProjectRequest {
        steps: vec![steps::EXEC_STEP.into()],
        files: vec![plimsoll::InputFile {
            path: ".plimsoll-shell/cmd".into(),
            content: "echo hi".into(),
        }],
        capture: vec![".plimsoll-shell/root".into(), ".plimsoll-shell/cwd".into()],
        ..Default::default()
    };
    let hi = b64(b"hi\n");
    let one = b64(b"1\n");
    let exec = |c: &mut Conn, body: &str, out: &str| {
        let v = c.connect("SessionRun", body);
        assert_eq!(step_of(&v)["stdout"], out, "{v}");
        assert_eq!(
            v["run"]["project"]["artifacts"].as_array().map(Vec::len),
            Some(2),
            "{v}"
        );
    };
    let read = |c: &mut Conn, body: &str| {
        let v = c.connect("SessionRun", body);
        step_of(&v);
        assert_eq!(
            v["run"]["project"]["artifacts"][0]["content"], data_b64,
            "{v}"
        );
    };
    let write = |c: &mut Conn, body: &str| {
        let v = c.connect("SessionRun", body);
        step_of(&v);
    };
    let run_python = |c: &mut Conn| {
        let v = c.connect("Run", &py_run_b);
        assert_eq!(step_of(&v)["stdout"], one, "{v}");
    };
    // Warm every path; the file the reads read.
    for _ in 0..30 {
        lib(&lib_exec);
        exec(&mut ca, &exec_a, &hi);
        exec(&mut cb, &exec_b, &hi);
        write(&mut ca, &write_a);
        write(&mut cb, &write_b);
        read(&mut ca, &read_a);
        read(&mut cb, &read_b);
        exec(&mut cb, &py_exec_b, &one);
        run_python(&mut cb);
    }

    let mut lat: Vec<Vec<Duration>> = vec![Vec::new(); 7];
    let t0 = Instant::now();
    while t0.elapsed() < secs * 7 {
        let mut time = |i: usize, f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            lat[i].push(t.elapsed());
        };
        time(0, &mut || {
            lib(&lib_exec);
        });
        time(1, &mut || exec(&mut ca, &exec_a, &hi));
        time(2, &mut || exec(&mut cb, &exec_b, &hi));
        time(3, &mut || read(&mut ca, &read_a));
        time(4, &mut || read(&mut cb, &read_b));
        time(5, &mut || write(&mut ca, &write_a));
        time(6, &mut || write(&mut cb, &write_b));
    }
    let wall = t0.elapsed() / 7;
    let st: Vec<Stats> = lat.into_iter().map(|l| stats(l, wall)).collect();
    let (mut pe, mut pr) = (Vec::new(), Vec::new());
    let t0 = Instant::now();
    while t0.elapsed() < secs * 2 {
        let t = Instant::now();
        exec(&mut cb, &py_exec_b, &one);
        pe.push(t.elapsed());
        let t = Instant::now();
        run_python(&mut cb);
        pr.push(t.elapsed());
    }
    let wall = t0.elapsed() / 2;
    let (pe, pr) = (stats(pe, wall), stats(pr, wall));

    println!();
    println!(
        "Workspace calls through plimsolld (protocol 4 `SessionRun{{project}}`, one client, keep-alive), interleaved call by call, {} s:",
        secs.as_secs() * 7
    );
    println!(
        "| call | library `run_project_in_session` p50 / p99 | daemon `always` p50 / p99 | daemon `batch` p50 / p99 |"
    );
    println!("|---|---:|---:|---:|");
    let ms = |s: &Stats| format!("{:.2} / {:.2} ms", s.p50_us / 1e3, s.p99_us / 1e3);
    println!(
        "| `exec(\"echo hi\")` | {} | {} | {} |",
        ms(&st[0]),
        ms(&st[1]),
        ms(&st[2])
    );
    println!("| `read` 1 KiB | | {} | {} |", ms(&st[3]), ms(&st[4]));
    println!("| `write` 1 KiB | | {} | {} |", ms(&st[5]), ms(&st[6]));
    println!();
    println!(
        "daemon `batch`, interleaved, {} s: `exec(\"python3 -c 'print(1)'\")` {} against the fresh Python run (CodeExecutor's step, `Run{{project}}`) {}: {:+.2} ms at p50 (target ≤ +1 ms)",
        secs.as_secs() * 2,
        ms(&pe),
        ms(&pr),
        (pe.p50_us - pr.p50_us) / 1e3
    );
    rt.block_on(async {
        sandbox.close_session("bench", &lib_session);
    });
    stop(&mut always);
    stop(&mut batch);
}
