//! The Python interpreter guest, end to end through the library.

mod support;

use plimsoll::envelope::Limits;
use plimsoll::trace::CallOutcome;
use plimsoll::{Blob, InputFile, Language, RunRequest, RunResult, Status};
use std::time::{Duration, Instant};
use support::upstream::*;
use support::*;

fn py(code: &str) -> RunRequest {
    RunRequest::code(Language::Python, code)
}

async fn run(code: &str) -> RunResult {
    shared().run(&py(code)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trailing_expression_is_the_result() {
    let r = run("1+1").await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("2"));
    let identity = r.guest.clone().unwrap_or_default();
    assert!(identity.starts_with("python-wasm:sha256:"), "{identity}");

    let r = run("x = 3\nprint('x is', x)\n{'double': x * 2}").await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.stdout, "x is 3\n");
    assert_eq!(r.result.as_deref(), Some("{'double': 6}"));

    let r = run("y = 5").await;
    assert_eq!(
        r.result.as_deref(),
        Some(""),
        "no trailing expression, no value"
    );

    // A request may pin the exact interpreter it wants.
    let mut pinned = py("2*3");
    pinned.require_identity = Some(identity.clone());
    assert_eq!(shared().run(&pinned).await.result.as_deref(), Some("6"));
    pinned.require_identity = Some("python-wasm:sha256:0000".into());
    assert_eq!(
        shared().run(&pinned).await.error_code(),
        Some("identity_mismatch")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exceptions_are_errors_with_the_traceback_on_stderr() {
    let r = run("print('before')\n{}['missing']").await;
    assert_eq!(r.status, Status::Error);
    assert_eq!(r.stdout, "before\n");
    assert!(
        r.stderr.contains("Traceback") && r.stderr.contains("KeyError: 'missing'"),
        "{}",
        r.stderr
    );
    assert!(
        r.error
            .as_ref()
            .is_some_and(|e| e.message.contains("KeyError"))
    );

    let r = run("if True print(1)").await;
    assert_eq!(r.status, Status::Error);
    assert!(r.stderr.contains("SyntaxError"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standard_library_agents_use_works() {
    let code = r##"
import json, re, math, datetime, collections, itertools, functools, statistics
import decimal, fractions, hashlib, base64, csv, textwrap, dataclasses, typing, random, io

@dataclasses.dataclass
class P:
    x: int

out = [
    json.dumps({"a": [1, 2]}),
    re.sub(r"\d", "#", "a1b2"),
    math.isqrt(17),
    datetime.date(2024, 2, 29).isoformat(),
    collections.Counter("aab").most_common(1)[0][0],
    list(itertools.islice(itertools.count(), 3)),
    functools.reduce(lambda a, b: a * b, [1, 2, 3, 4]),
    statistics.mean([1, 2, 3]),
    str(decimal.Decimal("0.1") + decimal.Decimal("0.2")),
    str(fractions.Fraction(1, 3) * 3),
    hashlib.sha256(b"abc").hexdigest()[:8],
    base64.b64encode(b"hi").decode(),
    next(csv.reader(io.StringIO("a,b\n"))),
    textwrap.shorten("hello world again", 12),
    P(1).x,
    typing.get_origin(typing.List[int]) is list,
    0 <= random.random() < 1,
]
out
"##;
    let r = run(code).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.result.as_deref(),
        Some(
            "['{\"a\": [1, 2]}', 'a#b#', 4, '2024-02-29', 'a', [0, 1, 2], 24, 2, '0.3', '1', 'ba7816bf', 'aGk=', ['a', 'b'], 'hello [...]', 1, True, True]"
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_under_work_are_readable_and_writable() {
    let mut req = py(
        "data = open('/work/in.csv').read()\nopen('/work/out/upper.txt', 'w').write(data.upper())\nlen(data)",
    );
    req.files.push(InputFile {
        path: "in.csv".into(),
        content: Blob::from("a,b\n1,2\n"),
    });
    let r = shared().run(&req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("8"));
    assert_eq!(r.artifacts.len(), 1);
    assert_eq!(r.artifacts[0].content.as_bytes(), b"A,B\n1,2\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scripts_end_in_their_typed_outcome() {
    let s = shared();
    let cases: Vec<(&str, RunRequest, Status)> = vec![
        (
            "busy loop, wall time",
            with_limits(
                py("while True: pass"),
                Limits {
                    wall_time_ms: Some(800),
                    ..Limits::default()
                },
            ),
            Status::Timeout,
        ),
        (
            "busy loop, fuel",
            with_limits(
                py("while True: pass"),
                Limits {
                    fuel: Some(100_000_000),
                    ..Limits::default()
                },
            ),
            Status::CpuExhausted,
        ),
        (
            "huge string",
            with_limits(
                py("s = 'x' * 10**9"),
                Limits {
                    memory_bytes: Some(64 << 20),
                    ..Limits::default()
                },
            ),
            Status::MemoryExhausted,
        ),
        (
            "deep recursion",
            py("def f(n): return f(n+1)\nf(0)"),
            Status::Error,
        ),
        (
            "reading /etc/passwd",
            py("open('/etc/passwd').read()"),
            Status::Error,
        ),
        (
            "writing outside /work",
            py("open('/tmp/plimsoll-py-mark', 'w').write('x')"),
            Status::Error,
        ),
        (
            "endless print",
            with_limits(
                py("while True: print('x' * 1000)"),
                Limits {
                    stdout_bytes: Some(50_000),
                    ..Limits::default()
                },
            ),
            Status::OutputTruncated,
        ),
        ("fork", py("import os\nos.fork()"), Status::Error),
        (
            "exec",
            py("import subprocess\nsubprocess.run(['ls'])"),
            Status::Error,
        ),
        ("os.system", py("import os\nos.system('ls')"), Status::Error),
        ("ctypes", py("import ctypes"), Status::Error),
        (
            "socket",
            py("import socket\nsocket.create_connection(('127.0.0.1', 80))"),
            Status::Error,
        ),
        (
            "environment",
            py("import os\nassert not os.environ, dict(os.environ)"),
            Status::Ok,
        ),
    ];
    for (what, req, want) in cases {
        let started = Instant::now();
        let r = s.run(&req).await;
        assert_eq!(r.status, want, "{what}: {:?} {}", r.error, r.stderr);
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what} took {:?}",
            started.elapsed()
        );
    }
    assert!(!std::path::Path::new("/tmp/plimsoll-py-mark").exists());
    assert_eq!(
        run("1+1").await.status,
        Status::Ok,
        "the host keeps serving"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_utf8_and_oversized_code_is_refused() {
    // `code` is a string, so non-UTF-8 cannot even be expressed in JSON.
    assert!(
        serde_json::from_slice::<RunRequest>(b"{\"language\": \"python\", \"code\": \"\xff\"}")
            .is_err()
    );
    let big = "x = 1\n".repeat(200_000);
    let r = shared().run(&py(&big)).await;
    assert_eq!(r.error_code(), Some("invalid_request"));
    let r = shared()
        .run(&RunRequest {
            language: Some(Language::Python),
            ..RunRequest::default()
        })
        .await;
    assert_eq!(r.error_code(), Some("invalid_request"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plimsoll_module_calls_the_broker_under_a_grant() {
    let (upstream, addr) = start_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| c.grants = profiles(addr));
    let code = r#"
import plimsoll
r = plimsoll.get("orders", "/v1/orders/9?x=1")
try:
    plimsoll.call("orders", "DELETE", "/v1/orders/9")
    denied = None
except plimsoll.Denied as e:
    denied = type(e).__name__
try:
    plimsoll.get("orders", "/v1/orders/../admin")
except plimsoll.BrokerError as e:
    traversal = type(e).__name__
(r.status, r.json()["order"], denied, traversal)
"#;
    let mut req = py(code);
    req.grants = vec!["orders".into()];
    let r = s.run(&req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.result.as_deref(),
        Some("(200, '/v1/orders/9', 'Denied', 'Denied')")
    );
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "only the allowed call reached the upstream");
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(n, v)| n == "authorization" && v == &format!("Bearer {STATIC_TOKEN}"))
    );
    assert_eq!(r.calls.count(CallOutcome::Delivered), 1);
    assert_eq!(r.calls.count(CallOutcome::Denied), 2);
    let json = serde_json::to_string(&r).expect("json");
    assert!(!json.contains(STATIC_TOKEN));
}

/// `guests/python/cell_cases.py` checks, inside the real component's
/// CPython, that the guest's fast split of a cell at its last top-level line
/// compiles thousands of tricky cells exactly as CPython's own AST would.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cells_split_at_their_last_line_keep_their_meaning() {
    let script = include_str!("../guests/python/cell_cases.py");
    let r = run(script).await;
    assert_eq!(r.status, Status::Ok, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(" cells, 0 mismatches"), "{}", r.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_do_not_share_state() {
    let r = run("leaked = 'secret'\nleaked").await;
    assert_eq!(r.status, Status::Ok);
    let r = run("'leaked' in globals()").await;
    assert_eq!(
        r.result.as_deref(),
        Some("False"),
        "a fresh instance per run"
    );
}

fn cell(code: &str) -> RunRequest {
    RunRequest {
        code: Some(code.into()),
        ..RunRequest::default()
    }
}

/// A session's workspace is measured after every evaluation, but walked
/// only when the kernel reported a change (host/src/tree_changes.rs). A file
/// opened in one evaluation and filled in a later one changes no directory:
/// the write itself must still be seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_filling_its_workspace_through_a_file_opened_earlier_is_stopped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    let a = s.open_session("alice", &py("")).await.expect("open");
    let capped = |code: &str| RunRequest {
        code: Some(code.into()),
        limits: Limits {
            workspace_bytes: Some(1 << 20),
            ..Limits::default()
        },
        ..RunRequest::default()
    };
    let r = s
        .run_in_session(
            "alice",
            &a.session_id,
            &capped("f = open('/work/grow.bin', 'wb')"),
        )
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    // Evaluations that change nothing (measured from the last walk).
    for _ in 0..3 {
        let r = s
            .run_in_session("alice", &a.session_id, &capped("1+1"))
            .await;
        assert_eq!(r.status, Status::Ok, "{r:?}");
    }
    let r = s
        .run_in_session(
            "alice",
            &a.session_id,
            &capped("f.write(b'x' * 1000); f.flush()"),
        )
        .await;
    assert_eq!(r.status, Status::Ok, "under the cap: {r:?}");
    let r = s
        .run_in_session(
            "alice",
            &a.session_id,
            &capped("f.write(b'x' * (2 << 20)); f.flush()"),
        )
        .await;
    assert_eq!(r.status, Status::DiskExhausted, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_state_for_their_owner_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| c.sessions.per_caller = 2);
    let open = py("");
    let a = s.open_session("alice", &open).await.expect("open");
    let b = s.open_session("alice", &open).await.expect("open second");
    assert_ne!(a.session_id, b.session_id);
    assert!(a.guest.starts_with("python-wasm:sha256:"));
    // The per-caller cap.
    let third = s.open_session("alice", &open).await;
    assert_eq!(third.map_err(|e| e.code), Err("session_limit".to_owned()));

    let r = s
        .run_in_session(
            "alice",
            &a.session_id,
            &cell("counter = 1\nsecret = 'alice-only'"),
        )
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.session_id.as_deref(), Some(a.session_id.as_str()));
    let r = s
        .run_in_session("alice", &a.session_id, &cell("counter += 1\ncounter"))
        .await;
    assert_eq!(r.result.as_deref(), Some("2"), "state persists");
    // An error does not end the session.
    let r = s.run_in_session("alice", &a.session_id, &cell("1/0")).await;
    assert_eq!(r.status, Status::Error);
    assert!(!r.session_closed);
    let r = s
        .run_in_session("alice", &a.session_id, &cell("counter"))
        .await;
    assert_eq!(r.result.as_deref(), Some("2"));
    // Another session of the same caller does not see it.
    let r = s
        .run_in_session("alice", &b.session_id, &cell("'secret' in globals()"))
        .await;
    assert_eq!(r.result.as_deref(), Some("False"));
    // Another caller cannot use it, and learns nothing about it.
    let r = s
        .run_in_session("mallory", &a.session_id, &cell("secret"))
        .await;
    assert_eq!(r.error_code(), Some("unknown_session"));
    let r = s
        .run_in_session("mallory", "0123456789abcdef0123456789abcdef", &cell("1"))
        .await;
    assert_eq!(r.error_code(), Some("unknown_session"));
    assert!(!s.close_session("mallory", &a.session_id));
    // Each evaluation has its own envelope: a timeout ends the session.
    let mut spin = cell("while True: pass");
    spin.limits = Limits {
        wall_time_ms: Some(300),
        ..Limits::default()
    };
    let r = s.run_in_session("alice", &a.session_id, &spin).await;
    assert_eq!(r.status, Status::Timeout);
    assert!(r.session_closed);
    let r = s
        .run_in_session("alice", &a.session_id, &cell("counter"))
        .await;
    assert_eq!(r.error_code(), Some("unknown_session"));
    assert!(s.close_session("alice", &b.session_id));
    assert_eq!(s.session_count("alice"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_sessions_expire() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.sessions.idle_timeout = Duration::from_millis(200)
    });
    let a = s.open_session("alice", &py("")).await.expect("open");
    assert_eq!(
        s.run_in_session("alice", &a.session_id, &cell("x = 1"))
            .await
            .status,
        Status::Ok
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(s.sweep_sessions(), 0);
    let r = s.run_in_session("alice", &a.session_id, &cell("x")).await;
    assert_eq!(r.error_code(), Some("unknown_session"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_evaluation_cannot_switch_guests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    let a = s.open_session("alice", &py("")).await.expect("open");
    let mut pinned = cell("1");
    pinned.require_identity = Some("quickjs-wasm:sha256:0000".into());
    let r = s.run_in_session("alice", &a.session_id, &pinned).await;
    assert_eq!(r.error_code(), Some("identity_mismatch"));
    pinned.require_identity = Some(a.guest.clone());
    assert_eq!(
        s.run_in_session("alice", &a.session_id, &pinned)
            .await
            .result
            .as_deref(),
        Some("1")
    );
    let mut other = cell("1");
    other.component = Some("hello".into());
    let r = s.run_in_session("alice", &a.session_id, &other).await;
    assert_eq!(r.error_code(), Some("invalid_request"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_instantiated_instance_is_as_fresh_as_a_new_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| c.runtime.engine.warm_instances = 1);
    // Each run: did anything of an earlier run survive (a global, a file,
    // the working directory), does it get its own input, and its own
    // random state?
    let probe = "import os, random, sys\n\
        seen = ('secret' in globals(), os.path.exists('note.txt'), os.getcwd())\n\
        secret = 1\n\
        open('note.txt', 'w').write('x')\n\
        (seen, open('in.txt').read(), sys.stdin.read(), random.random())";
    let mut randoms = Vec::new();
    for i in 0..3 {
        // The first run finds no instance ready and asks for one.
        if i > 0 {
            wait_for_warm(&s).await;
        }
        let claimed = s.runtime().warm_instances_claimed();
        let mut req = py(probe);
        req.stdin = format!("stdin-{i}").into();
        req.files.push(InputFile {
            path: "in.txt".into(),
            content: Blob::from(format!("file-{i}").as_str()),
        });
        let r = s.run(&req).await;
        assert_eq!(r.status, Status::Ok, "{r:?}");
        let text = r.result.unwrap_or_default();
        let expect = format!("((False, False, '/work'), 'file-{i}', 'stdin-{i}', ");
        assert!(text.starts_with(&expect), "run {i}: {text}");
        randoms.push(text[expect.len()..].to_string());
        if i > 0 {
            assert_eq!(
                s.runtime().warm_instances_claimed(),
                claimed + 1,
                "run {i} did not use the pre-instantiated instance"
            );
        }
    }
    randoms.sort();
    randoms.dedup();
    assert_eq!(randoms.len(), 3, "random state repeated across instances");

    // A traceback still names the run's first cell `<cell-1>`: the empty
    // evaluation the pool makes does not count as a cell.
    wait_for_warm(&s).await;
    let r = s.run(&py("1/0")).await;
    assert_eq!(r.status, Status::Error, "{r:?}");
    assert!(r.stderr.contains("<cell-1>"), "{}", r.stderr);

    // A request that allows less memory than the instance already holds
    // does not get it: it instantiates for itself and ends as it would
    // have without the pool.
    wait_for_warm(&s).await;
    let claimed = s.runtime().warm_instances_claimed();
    let mut small = py("1+1");
    small.limits.memory_bytes = Some(8 << 20);
    let r = s.run(&small).await;
    assert_eq!(r.status, Status::MemoryExhausted, "{r:?}");
    assert_eq!(s.runtime().warm_instances_claimed(), claimed);
}

/// Pre-instantiated instances are made under the operator's table and
/// instance limits, so an operator envelope below the library's defaults
/// still lets runs claim them; a request that lowers a limit further does
/// not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_instantiated_instances_follow_the_operators_envelope() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.runtime.engine.warm_instances = 1;
        c.envelope.table_elements = 50_000;
    });
    assert_eq!(s.run(&py("1+1")).await.status, Status::Ok);
    wait_for_warm(&s).await;
    let claimed = s.runtime().warm_instances_claimed();
    let r = s.run(&py("2+2")).await;
    assert_eq!(r.result.as_deref(), Some("4"), "{r:?}");
    assert_eq!(
        s.runtime().warm_instances_claimed(),
        claimed + 1,
        "the run did not use the pre-instantiated instance"
    );

    wait_for_warm(&s).await;
    let claimed = s.runtime().warm_instances_claimed();
    let mut lower = py("3*3");
    lower.limits.table_elements = Some(40_000);
    let r = s.run(&lower).await;
    assert_eq!(r.result.as_deref(), Some("9"), "{r:?}");
    assert_eq!(s.runtime().warm_instances_claimed(), claimed);
}

/// A finished run's instance is torn down after its result is returned
/// (host/src/reaper.rs), and a closed session's after the close, so the
/// next run or session can find the only slot still taken: it must wait
/// for the teardown, not be refused `busy`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_to_back_runs_through_one_slot_wait_for_the_last_teardown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.runtime.engine.warm_instances = 0;
        c.runtime.engine.max_live_instances = 1;
    });
    for i in 0..10 {
        let r = s.run(&py(&format!("{i}*2"))).await;
        assert_eq!(r.status, Status::Ok, "run {i}: {r:?}");
        assert_eq!(r.result.as_deref(), Some(format!("{}", i * 2).as_str()));
    }
    // A closed session's instance goes the same way.
    for _ in 0..3 {
        let info = s
            .open_session("someone", &py(""))
            .await
            .expect("a session in the one slot");
        assert!(s.close_session("someone", &info.session_id));
    }
    let r = s.run(&py("6*7")).await;
    assert_eq!(r.result.as_deref(), Some("42"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_instantiated_instances_give_way_to_runs_for_pool_slots() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.runtime.engine.warm_instances = 1;
        c.runtime.engine.max_live_instances = 1;
    });
    let r = s.run(&py("1+1")).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    // The one slot now holds a pre-instantiated Python instance; a
    // JavaScript run needs a slot of its own and gets it.
    wait_for_warm(&s).await;
    let r = s.run(&RunRequest::code(Language::Javascript, "1+1")).await;
    assert_eq!(
        r.status,
        Status::Ok,
        "the warm instance kept its slot: {r:?}"
    );
    // So does a session, whether it claims a warm instance or not.
    let info = s.open_session("someone", &py("")).await.expect("a session");
    let r = s
        .run_in_session("someone", &info.session_id, &cell("2+2"))
        .await;
    assert_eq!(r.result.as_deref(), Some("4"), "{r:?}");
    assert!(r.stderr.is_empty(), "{r:?}");
}

/// A notebook session (its interpreters may end without ending it, as the
/// protocol's do) whose interpreter held 1,000 descriptors and a 40 MiB
/// deleted-but-open file when a timeout discarded it: the next interpreter
/// finds every descriptor and byte given back (issue #34), in-process and
/// behind bubblewrap.
async fn dead_interpreters_hold_nothing(s: &plimsoll::Sandbox) {
    let guest = s
        .interpreter_for(plimsoll::Language::Python, None)
        .expect("python");
    let opts = plimsoll::session::SessionOptions {
        keep_on_failure: true,
        ..plimsoll::session::SessionOptions::single(guest)
    };
    let limits = Limits {
        wall_time_ms: Some(5_000),
        ..Limits::default()
    };
    let open = RunRequest {
        limits,
        ..RunRequest::default()
    };
    let info = s
        .open_session_with("alice", &opts, &open)
        .await
        .expect("open");
    let id = info.session_id.clone();
    let run = |code: &str| RunRequest {
        code: Some(code.into()),
        limits,
        ..RunRequest::default()
    };
    let hold = "import os\n\
        held = [open('/work/f%d' % i, 'w') for i in range(1000)]\n\
        big = open('/work/big.bin', 'wb')\n\
        big.write(b'x' * (40 << 20)); big.flush()\n\
        os.remove('/work/big.bin')\n\
        len(held)";
    let r = s.run_in_session("alice", &id, &run(hold)).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("1000"));
    let r = s
        .run_in_session(
            "alice",
            &id,
            &RunRequest {
                code: Some("while True: pass".into()),
                limits: Limits {
                    wall_time_ms: Some(300),
                    ..limits
                },
                ..RunRequest::default()
            },
        )
        .await;
    assert_eq!(r.status, Status::Timeout, "{r:?}");
    assert!(
        !r.session_closed,
        "a notebook session outlives its interpreter"
    );
    let again = "import os\n\
        held = [open('/work/g%d' % i, 'w') for i in range(1000)]\n\
        f = open('/work/thirty.bin', 'wb'); f.write(b'y' * (30 << 20)); f.close()\n\
        (len(held), os.path.getsize('/work/thirty.bin'))";
    let r = s.run_in_session("alice", &id, &run(again)).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("(1000, 31457280)"));
    assert!(s.close_session("alice", &id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discarded_interpreter_gives_back_its_descriptors_and_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    dead_interpreters_hold_nothing(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discarded_interpreter_gives_back_its_descriptors_and_bytes_behind_bwrap() {
    let have = std::process::Command::new("bwrap")
        .args(["--unshare-all", "--ro-bind", "/", "/", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !have {
        eprintln!("SKIP: bubblewrap cannot run here; .ci/run installs it");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.provider = plimsoll::ProviderKind::WasmBwrap;
        c.workers = plimsoll::provider::WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm: 0,
            max: 2,
            image_dir: Some(guests_dir().join("../test-worker-images")),
            ..Default::default()
        };
    });
    assert_eq!(s.isolation().tier, plimsoll::Tier::Container);
    dead_interpreters_hold_nothing(&s).await;
}
