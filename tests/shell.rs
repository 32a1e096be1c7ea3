//! The shell guest end to end through the library: scripts, the programs
//! it starts (`python3`, `node`), projects and sessions, in-process and
//! behind bubblewrap. The shell's own grammar and utilities are tested
//! next to their code (guests/shell); this is what the host adds.

mod support;

use plimsoll::envelope::Limits;
use plimsoll::sandbox::project::{ProjectOutcome, ProjectRequest};
use plimsoll::session::{SessionOptions, Turn};
use plimsoll::{InputFile, Language, RunRequest, RunResult, Sandbox, Status};
use std::time::{Duration, Instant};
use support::*;

fn sh(code: &str) -> RunRequest {
    RunRequest::code(Language::Shell, code)
}

async fn run(s: &Sandbox, code: &str) -> RunResult {
    s.run(&sh(code)).await
}

fn file(path: &str, content: &str) -> InputFile {
    InputFile {
        path: path.into(),
        content: content.into(),
    }
}

/// A script's exit status is its `exit_code`: 0 is `ok`; any other is
/// `error` with the code `exit_status` (what the script printed says why).
async fn scripts_and_their_exit_status(s: &Sandbox) {
    let r = run(
        s,
        "printf 'b\\na\\nb\\n' > f.txt; sort f.txt | uniq -c | sed 's/^ *//'; grep -c b f.txt; pwd",
    )
    .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout, "1 a\n2 b\n2\n/work\n");
    assert!(
        r.guest
            .as_deref()
            .is_some_and(|g| g.starts_with("shell-wasm:sha256:")),
        "{r:?}"
    );
    let r = run(s, "echo out; echo err >&2; exit 3").await;
    assert_eq!(r.status, Status::Error, "{r:?}");
    assert_eq!(r.exit_code, Some(3));
    assert_eq!(r.error_code(), Some(plimsoll::run::EXIT_STATUS));
    assert_eq!((r.stdout.as_str(), r.stderr.as_str()), ("out\n", "err\n"));
    let r = run(s, "git status").await;
    assert_eq!(r.exit_code, Some(127), "{r:?}");
    assert!(r.stderr.contains("git: not found"), "{r:?}");
}

/// `python3` and `node` are fresh interpreter instances over the run's
/// files, with the shell's argv, cwd, environment and stdin, and their
/// exit statuses passed through.
async fn programs_are_fresh_interpreters(s: &Sandbox) {
    let r = run(
        s,
        r#"mkdir -p src && cd src
printf 'import sys, os\nprint(sys.argv, os.getcwd(), os.environ.get("GREETING"))\nsys.exit(5)\n' > a.py
export GREETING=hi
python3 a.py x 'y z'; echo "py=$?"
python3 -c 'raise ValueError("boom")'; echo "raised=$?"
echo '{"n": 41}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["n"] + 1)'
echo 'import {x} from "./lib.mjs"; console.log(x, process.argv.slice(2), process.cwd()); process.exit(7)' > m.mjs
echo 'export const x = 6 * 7;' > lib.mjs
node m.mjs q; echo "node=$?"
node -e 'console.log(require("fs").readFileSync("a.py", "utf8").length > 0)'
python3 -m pip install requests; echo "pip=$?"
pip install requests; echo "pip127=$?"
echo tmp > /tmp/t.txt; python3 -c 'print(open("/tmp/t.txt").read(), end="")'
node -e 'console.log(require("fs").readFileSync("/tmp/t.txt", "utf8").trim())'
mkdir -p deep/a/b && touch deep/a/b/f deep/a/g && rm -rf deep && test ! -e deep && echo removed
"#,
    )
    .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.stdout,
        "['a.py', 'x', 'y z'] /work/src hi\npy=5\nraised=1\n42\n42 [\"q\"] /work/src\nnode=7\ntrue\npip=1\npip127=127\ntmp\ntmp\nremoved\n",
        "{r:?}"
    );
    assert!(
        r.stderr
            .contains("Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nValueError: boom"),
        "the traceback, without the host's wrapper frames: {}",
        r.stderr
    );
    assert!(!r.stderr.contains("__plimsoll_program"), "{}", r.stderr);
}

/// Past its output cap the shell runs on (the truncation is marked), so
/// what a script does after printing too much still happens.
async fn past_the_output_cap_the_script_runs_on(s: &Sandbox) {
    let mut req =
        sh("yes | head -c 100000; python3 -c 'print(\"p\" * 5000)'; echo saved > after.txt");
    req.limits = Limits {
        stdout_bytes: Some(1000),
        ..Limits::default()
    };
    req.capture = vec!["after.txt".into()];
    let r = s.run(&req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert!(r.stdout_truncated && r.stdout.len() == 1000, "{r:?}");
    assert_eq!(r.captured.len(), 1, "{r:?}");
    assert_eq!(r.captured[0].content.as_bytes(), b"saved\n");
}

/// A loop past the wall time is a timeout, in the shell or in a program it
/// started; the sandbox runs the next script as ever.
async fn a_timeout_is_a_timeout(s: &Sandbox) {
    for code in ["while true; do :; done", "python3 -c 'while True: pass'"] {
        let started = Instant::now();
        let mut req = sh(code);
        req.limits = Limits {
            wall_time_ms: Some(700),
            ..Limits::default()
        };
        let r = s.run(&req).await;
        assert_eq!(r.status, Status::Timeout, "{code}: {r:?}");
        assert!(started.elapsed() < Duration::from_secs(10), "{code}");
    }
    assert_eq!(run(s, "echo fine").await.stdout, "fine\n");
}

/// Hostile shell text ends in an error or a limit of its own run; the next
/// run works.
async fn hostile_text_ends_in_an_error_or_a_limit(s: &Sandbox) {
    let deep = "(".repeat(200_000) + &")".repeat(200_000);
    let long = format!("echo {}", "((((".repeat(1 << 20));
    let cases: Vec<(&str, RunRequest)> = vec![
        ("200,000 nested parentheses", {
            let mut r = sh(". ./deep.sh");
            r.files = vec![file("deep.sh", &deep)];
            r
        }),
        ("a 4 MiB command", {
            let mut r = sh(". ./long.sh");
            r.files = vec![file("long.sh", &long)];
            r
        }),
        ("a fork bomb", sh("f(){ f | f; }; f")),
        ("yes | head", sh("yes | head -n 3")),
    ];
    for (name, mut req) in cases {
        req.limits = Limits {
            wall_time_ms: Some(5_000),
            ..Limits::default()
        };
        let started = Instant::now();
        let r = s.run(&req).await;
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name} took {:?}",
            started.elapsed()
        );
        assert_ne!(r.status, Status::Refused, "{name}: {r:?}");
        if name == "yes | head" {
            assert_eq!(r.stdout, "y\ny\ny\n", "{r:?}");
        } else {
            assert_ne!(r.status, Status::Ok, "{name} succeeded: {r:?}");
        }
        assert_eq!(run(s, "echo next").await.stdout, "next\n", "after {name}");
    }
}

/// A project: files placed, steps in fresh shells in order, stopping at
/// the first that fails; the artifacts read after the last step that ran,
/// in request order, absent ones left out.
async fn projects_run_their_steps_in_order(s: &Sandbox) {
    let req = ProjectRequest {
        files: vec![file("in/data.txt", "3\n1\n2\n")],
        steps: vec![
            "sort -n in/data.txt > sorted.txt; X=1".into(),
            "echo \"x=${X:-unset}\" > x.txt; python3 -c 'open(\"py.txt\", \"w\").write(\"from python\")'".into(),
            "false".into(),
            "echo never > never.txt".into(),
        ],
        capture: vec![
            "py.txt".into(),
            "sorted.txt".into(),
            "never.txt".into(),
            "x.txt".into(),
        ],
        ..ProjectRequest::default()
    };
    let p = s.run_project_as("local", &req).await;
    assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
    assert_eq!(p.steps.len(), 3, "{p:?}");
    assert_eq!(p.steps[2].result.exit_code, Some(1));
    let got: Vec<(&str, &[u8])> = p
        .captured
        .iter()
        .map(|a| (a.path.as_str(), a.content.as_bytes()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("py.txt", &b"from python"[..]),
            ("sorted.txt", b"1\n2\n3\n"),
            // Each step is a fresh shell: the variable did not carry over.
            ("x.txt", b"x=unset\n"),
        ]
    );
    // A file that cannot be placed: no step runs.
    let req = ProjectRequest {
        files: vec![file("big.txt", &"x".repeat(4096))],
        steps: vec!["echo ran > ran.txt".into()],
        limits: Limits {
            workspace_bytes: Some(1024),
            ..Limits::default()
        },
        ..ProjectRequest::default()
    };
    let p = s.run_project_as("local", &req).await;
    assert_eq!(p.outcome, ProjectOutcome::SetupFailed, "{p:?}");
    assert!(p.steps.is_empty() && p.refused.is_some(), "{p:?}");
    // The wall time bounds the whole project.
    let req = ProjectRequest {
        steps: vec!["sleep 0.4".into(), "sleep 0.4".into(), "sleep 0.4".into()],
        limits: Limits {
            wall_time_ms: Some(1_000),
            ..Limits::default()
        },
        ..ProjectRequest::default()
    };
    let p = s.run_project_as("local", &req).await;
    assert_eq!(p.outcome, ProjectOutcome::TimedOut, "{p:?}");
    assert_eq!(p.steps.len(), 3, "{p:?}");
    // Only the final step's files are kept: an earlier step's artifacts
    // and captures are dropped as soon as it ends (a project holds one
    // step's files at a time, not 64 of them).
    let req = ProjectRequest {
        steps: vec![
            "mkdir -p out && yes x | head -c 100000 > out/a && cp out/a kept".into(),
            "true".into(),
            "echo last > out/b".into(),
        ],
        capture: vec!["kept".into()],
        ..ProjectRequest::default()
    };
    let p = s.run_project_as("local", &req).await;
    assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
    assert_eq!(p.steps.len(), 3, "{p:?}");
    for step in &p.steps {
        assert!(
            step.result.captured.is_empty() && step.result.artifacts.is_empty(),
            "{:?}",
            step.result
        );
    }
    assert_eq!(p.captured.len(), 1, "{p:?}");
    assert_eq!(p.captured[0].content.as_bytes().len(), 100_000);
    // The steps are the project's code: together they fit its cap.
    let req = ProjectRequest {
        steps: vec!["echo 1".repeat(100), "echo 2".repeat(100)],
        limits: Limits {
            code_bytes: Some(1_000),
            ..Limits::default()
        },
        ..ProjectRequest::default()
    };
    let p = s.run_project_as("local", &req).await;
    assert!(p.steps.is_empty(), "{p:?}");
    let refused = p.refused.as_ref().expect("refused");
    assert_eq!(refused.error_code(), Some("invalid_request"), "{p:?}");
}

/// The programs a shell starts spend the run's one fuel budget: a loop of
/// spinning `python3`s ends when the run's fuel is spent, not after every
/// child has spent a budget of its own.
async fn programs_share_the_runs_fuel(s: &Sandbox) {
    let fuel = 500_000_000;
    let limits = Limits {
        fuel: Some(fuel),
        wall_time_ms: Some(10_000),
        ..Limits::default()
    };
    let spin = "python3 -c 'while 1: pass'";
    let one = Instant::now();
    let r = s
        .run(&RunRequest {
            limits,
            ..sh(&format!("{spin}; echo \"child=$?\""))
        })
        .await;
    let one = one.elapsed();
    // The child spends what the shell has, and its status says so.
    assert!(
        r.stdout.contains("child=152") || r.status == Status::CpuExhausted,
        "{r:?}"
    );
    let ten = Instant::now();
    let r = s
        .run(&RunRequest {
            limits,
            ..sh(&format!(
                "for i in 1 2 3 4 5 6 7 8 9 10; do {spin}; echo \"child $i=$?\"; done"
            ))
        })
        .await;
    let ten = ten.elapsed();
    // Ten budgets would take about ten times as long as one; one budget
    // for the whole run takes about as long as one child.
    assert!(
        ten < one * 4,
        "ten children took {ten:?}, one took {one:?}: {r:?}"
    );
    assert!(
        r.status == Status::CpuExhausted || r.exit_code == Some(152),
        "{r:?}"
    );
    assert!(r.usage.fuel.is_none_or(|f| f <= fuel), "{r:?}");
}

/// A session's shell works on the files its notebooks see, and the other
/// way round; every step is a fresh shell.
async fn a_session_shares_its_files(s: &Sandbox) {
    let py = s.interpreter_for(Language::Python, None).expect("python");
    let js = s.interpreter_for(Language::Javascript, None).expect("js");
    let shell = s.interpreter_for(Language::Shell, None).expect("shell");
    let opts = SessionOptions {
        guests: vec![py, js, shell],
        start: vec![0],
        keep_on_failure: true,
        lifetime: None,
        idle_timeout: None,
        owner: None,
    };
    let info = s
        .open_session_with("local", &opts, &RunRequest::default())
        .await
        .expect("open");
    let id = info.session_id;
    let cell = |l: Language, code: &str| RunRequest::code(l, code);
    let r = s
        .evaluate(
            "local",
            &id,
            &cell(
                Language::Python,
                "open('from_py.txt', 'w').write('py'); n = 1",
            ),
            Turn::Wait,
        )
        .await
        .result;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let p = s
        .run_project_in_session(
            "local",
            &id,
            &ProjectRequest {
                steps: vec!["cat from_py.txt; echo -n sh > from_sh.txt".into()],
                ..ProjectRequest::default()
            },
        )
        .await;
    assert_eq!(p.outcome, ProjectOutcome::Completed, "{p:?}");
    assert_eq!(p.steps[0].result.stdout, "py");
    let r = s
        .evaluate(
            "local",
            &id,
            &cell(
                Language::Javascript,
                "require('fs').readFileSync('from_sh.txt', 'utf8')",
            ),
            Turn::Wait,
        )
        .await
        .result;
    assert_eq!(r.result.as_deref(), Some("\"sh\""), "{r:?}");
    // The notebook lived on beside the shells.
    let r = s
        .evaluate("local", &id, &cell(Language::Python, "n + 1"), Turn::Wait)
        .await
        .result;
    assert_eq!(r.result.as_deref(), Some("2"), "{r:?}");
    assert!(s.close_session("local", &id));
}

async fn everything(s: &Sandbox) {
    scripts_and_their_exit_status(s).await;
    programs_are_fresh_interpreters(s).await;
    past_the_output_cap_the_script_runs_on(s).await;
    a_timeout_is_a_timeout(s).await;
    hostile_text_ends_in_an_error_or_a_limit(s).await;
    projects_run_their_steps_in_order(s).await;
    programs_share_the_runs_fuel(s).await;
    a_session_shares_its_files(s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_in_process() {
    everything(shared()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_behind_bwrap() {
    let ok = std::process::Command::new("bwrap")
        .args([
            "--unshare-user",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "true",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "SKIP: bubblewrap is missing or cannot create namespaces here (apt-get install bubblewrap); .ci/run installs it"
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.provider = plimsoll::ProviderKind::WasmBwrap;
        c.workers = plimsoll::provider::WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm: 1,
            max: 4,
            image_dir: Some(guests_dir().join("../test-worker-images")),
            ..plimsoll::provider::WorkerConfig::default()
        };
    });
    assert_eq!(s.isolation().tier, plimsoll::Tier::Container);
    scripts_and_their_exit_status(&s).await;
    programs_are_fresh_interpreters(&s).await;
    past_the_output_cap_the_script_runs_on(&s).await;
    a_timeout_is_a_timeout(&s).await;
    projects_run_their_steps_in_order(&s).await;
    a_session_shares_its_files(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_inside_gvisor() {
    let ok = std::process::Command::new("runsc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: gVisor's runsc is missing (apt-get install runsc); .ci/run installs it");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.provider = plimsoll::ProviderKind::WasmGvisor;
        c.workers = plimsoll::provider::WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm: 1,
            max: 4,
            image_dir: Some(dir.path().join("images")),
            ..plimsoll::provider::WorkerConfig::default()
        };
    });
    assert_eq!(s.isolation().tier, plimsoll::Tier::Kernel);
    scripts_and_their_exit_status(&s).await;
    programs_are_fresh_interpreters(&s).await;
    projects_run_their_steps_in_order(&s).await;
    a_session_shares_its_files(&s).await;
}

/// `programs` is linked for the shell guest alone: the same component
/// loaded as any other guest does not link.
#[test]
fn only_the_shell_is_linked_with_programs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    let e = s
        .load(&std::fs::read(guests_dir().join("shell.wasm")).expect("shell.wasm"))
        .expect_err("the shell as a plain component");
    assert!(
        e.to_string()
            .contains("imports something plimsoll does not provide"),
        "{e}"
    );
}
