//! Session snapshots (issue #37), end to end through the library: a
//! session's exact state — generators mid-iteration, closures, class
//! instances, the random generators' states, big buffers, files — resumed
//! twice and forked, each copy independent; never a replay (a granted
//! call made before the snapshot is not made again, and no credential is
//! in the archive); and every bad archive refused, typed.

mod support;

use plimsoll::run::{ErrorInfo, RunRequest};
use plimsoll::snapshot::archive::{self, Caps};
use plimsoll::{Language, Limits, Sandbox, Status};
use support::upstream::*;
use support::*;

fn open_req(language: Language) -> RunRequest {
    RunRequest {
        language: Some(language),
        ..RunRequest::default()
    }
}

fn cell(code: &str) -> RunRequest {
    RunRequest {
        code: Some(code.into()),
        limits: Limits {
            wall_time_ms: Some(10_000),
            ..Limits::default()
        },
        ..RunRequest::default()
    }
}

async fn eval(s: &Sandbox, caller: &str, id: &str, code: &str) -> String {
    let r = s.run_in_session(caller, id, &cell(code)).await;
    assert_eq!(r.status, Status::Ok, "{code}: {r:?}");
    r.result.unwrap_or_default()
}

fn caps() -> Caps {
    Caps {
        total_bytes: 1 << 32,
        memory_bytes: 4 << 30,
        workspace_bytes: 1 << 30,
        workspace_entries: 100_000,
    }
}

/// The scenario: state of every kind survives a resume, twice;
/// the copies continue the original's random stream; each copy's changes
/// stay its own; the granted call made before is not made again and its
/// credential is in no part of the archive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_session_resumes_exactly_twice_and_never_replays() {
    // Its own caller: its sessions count against its own cap.
    let caller = "a_python_session_resumes_exactly_twice_and_never_replays";
    let rt = tokio::runtime::Handle::current();
    let (up, addr) = start_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| c.grants = profiles(addr));
    let _ = rt;
    let info = s
        .open_session(caller, &open_req(Language::Python))
        .await
        .expect("open");
    let id = info.session_id.clone();
    eval(
        &s,
        caller,
        &id,
        "g = (i*i for i in range(10)); next(g); next(g)",
    )
    .await;
    eval(&s, caller, &id, "k = 10\nf = lambda x: x + k").await;
    eval(&s, caller,
        &id,
        "class P:\n    def __init__(self, a): self.a = a\n    def twice(self): return 2 * self.a\np = P(21)",
    )
    .await;
    eval(
        &s,
        caller,
        &id,
        "import random, os\nrandom.seed(7); random.random()",
    )
    .await;
    eval(
        &s,
        caller,
        &id,
        "big = bytearray(50 * 1024 * 1024); big[12345] = 7",
    )
    .await;
    eval(
        &s,
        caller,
        &id,
        "open('/work/notes.txt', 'w').write('kept')",
    )
    .await;
    // Values drawn without a seed, and a granted call, before the
    // snapshot.
    eval(&s, caller, &id, "drawn = (random.random(), os.urandom(8))").await;
    let granted = {
        let mut r = cell("import plimsoll\nplimsoll.get('orders', '/v1/orders/7').status");
        r.grants = vec!["orders".into()];
        r
    };
    let r = s.run_in_session(caller, &id, &granted).await;
    assert_eq!(r.result.as_deref(), Some("200"), "{r:?}");
    let calls_before = up.seen().len();
    let drawn = eval(&s, caller, &id, "drawn").await;

    let snap = s.snapshot_session(caller, &id).await.expect("snapshot");
    assert!(
        snap.archive.bytes.len() < 8 << 20,
        "a snapshot keeps only what changed: {} bytes",
        snap.archive.bytes.len()
    );
    // No part of the archive holds the credential, compressed or not.
    let (_, image) = archive::decode(&snap.archive.bytes, &caps()).expect("decode");
    let token = STATIC_TOKEN.as_bytes();
    let holds = |b: &[u8]| b.windows(token.len()).any(|w| w == token);
    assert!(!holds(&snap.archive.bytes));
    for g in &image.guests {
        if let Some(i) = &g.instance {
            for m in &i.memories {
                assert!(!holds(&m.data), "the credential is in a snapshot's memory");
            }
        }
    }
    // What the original's next draws are.
    let original_next = eval(&s, caller, &id, "(next(g), random.random())").await;

    let mut forks = Vec::new();
    for _ in 0..2 {
        let f = s
            .resume_session(caller, snap.archive.bytes.clone(), &RunRequest::default())
            .await
            .expect("resume");
        forks.push(f.session_id);
    }
    for f in &forks {
        assert_eq!(
            eval(&s, caller, f, "(next(g), random.random())").await,
            original_next
        );
        assert_eq!(
            eval(&s, caller, f, "f(5), p.twice(), big[12345], len(big)").await,
            "(15, 42, 7, 52428800)"
        );
        assert_eq!(
            eval(&s, caller, f, "open('/work/notes.txt').read()").await,
            "'kept'"
        );
        assert_eq!(eval(&s, caller, f, "drawn").await, drawn);
        let r = s
            .run_in_session(
                caller,
                f,
                &cell("import sys\nprint('out'); print('err', file=sys.stderr)"),
            )
            .await;
        assert_eq!(
            (r.stdout.as_str(), r.stderr.as_str()),
            ("out\n", "err\n"),
            "{r:?}"
        );
    }
    // Each copy's changes are its own.
    eval(
        &s,
        caller,
        &forks[0],
        "k = 1000\nopen('/work/notes.txt', 'w').write('fork 0')",
    )
    .await;
    assert_eq!(
        eval(
            &s,
            caller,
            &forks[1],
            "f(5), open('/work/notes.txt').read()"
        )
        .await,
        "(15, 'kept')"
    );
    assert_eq!(
        eval(&s, caller, &id, "f(5), open('/work/notes.txt').read()").await,
        "(15, 'kept')"
    );
    assert_eq!(eval(&s, caller, &forks[0], "f(5)").await, "1005");
    // Nothing was replayed: the upstream saw no second call.
    assert_eq!(up.seen().len(), calls_before);
}

/// JavaScript: closures, a `Map`, a generator mid-iteration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_javascript_session_resumes_with_its_closures_and_generators() {
    // Its own caller: its sessions count against its own cap.
    let caller = "a_javascript_session_resumes_with_its_closures_and_generators";
    let s = shared();
    let info = s
        .open_session(caller, &open_req(Language::Javascript))
        .await
        .expect("open");
    let id = info.session_id;
    eval(
        s,
        caller,
        &id,
        "globalThis.counter = (() => { let n = 0; return () => ++n; })(); counter(); counter();",
    )
    .await;
    eval(
        s,
        caller,
        &id,
        "globalThis.m = new Map([['a', 1], ['b', 2]]); m.set('c', 3);",
    )
    .await;
    eval(s, caller,
        &id,
        "globalThis.gen = (function* () { let i = 0; while (true) yield i++; })(); gen.next(); gen.next();",
    )
    .await;
    let snap = s.snapshot_session(caller, &id).await.expect("snapshot");
    let f = s
        .resume_session(caller, snap.archive.bytes.clone(), &RunRequest::default())
        .await
        .expect("resume");
    assert_eq!(
        eval(
            s,
            caller,
            &f.session_id,
            "[counter(), [...m.keys()].join(''), gen.next().value]"
        )
        .await,
        "[3,\"abc\",2]"
    );
    // Its standard streams and files work as in any session.
    let r = s
        .run_in_session(
            caller,
            &f.session_id,
            &cell("console.log('out'); console.error('err'); require('fs').writeFileSync('/work/j.txt', 'j'); require('fs').readFileSync('/work/j.txt', 'utf8')"),
        )
        .await;
    assert_eq!(
        (r.stdout.as_str(), r.stderr.as_str()),
        ("out\n", "err\n"),
        "{r:?}"
    );
    assert_eq!(r.result.as_deref(), Some("\"j\""), "{r:?}");
}

/// A shell session: its files, and the working directory and exported
/// variables the persistent-shell line keeps in them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_session_resumes_with_its_cwd_and_exports() {
    // Its own caller: its sessions count against its own cap.
    let caller = "a_shell_session_resumes_with_its_cwd_and_exports";
    let s = shared();
    let info = s
        .open_session(caller, &open_req(Language::Shell))
        .await
        .expect("open");
    let line = |text: &str| {
        let (code, file) = plimsoll::run::shell_session_line(text);
        RunRequest {
            code: Some(code),
            files: vec![file],
            ..RunRequest::default()
        }
    };
    let r = s
        .run_in_session(
            caller,
            &info.session_id,
            &line("mkdir -p a/b && cd a/b && export N=7 && echo hi > f"),
        )
        .await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    let snap = s
        .snapshot_session(caller, &info.session_id)
        .await
        .expect("snapshot");
    let f = s
        .resume_session(caller, snap.archive.bytes.clone(), &RunRequest::default())
        .await
        .expect("resume");
    let r = s
        .run_in_session(caller, &f.session_id, &line("echo $N $(pwd) $(cat f)"))
        .await;
    assert_eq!(r.stdout, "7 /work/a/b hi\n", "{r:?}");
}

/// An interpreter holding a file of its own open cannot be snapshotted:
/// typed, with the reason; closed, it can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_file_is_a_typed_refusal_until_it_is_closed() {
    // Its own caller: its sessions count against its own cap.
    let caller = "an_open_file_is_a_typed_refusal_until_it_is_closed";
    let s = shared();
    let info = s
        .open_session(caller, &open_req(Language::Python))
        .await
        .expect("open");
    eval(
        s,
        caller,
        &info.session_id,
        "fh = open('/work/held.txt', 'w')",
    )
    .await;
    let e = s
        .snapshot_session(caller, &info.session_id)
        .await
        .expect_err("refused");
    assert_eq!(e.code, plimsoll::snapshot::UNAVAILABLE, "{e:?}");
    assert!(e.message.contains("open files"), "{e:?}");
    eval(s, caller, &info.session_id, "fh.close()").await;
    s.snapshot_session(caller, &info.session_id)
        .await
        .expect("a snapshot once the file is closed");
    // Another caller's session is an unknown one.
    let e = s
        .snapshot_session("bob", &info.session_id)
        .await
        .expect_err("refused");
    assert_eq!(e.code, "unknown_session");
}

/// Every bad archive is refused, typed, and the sandbox serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_archives_are_refused_and_nothing_is_loaded() {
    // Its own caller: its sessions count against its own cap.
    let caller = "bad_archives_are_refused_and_nothing_is_loaded";
    let s = shared();
    let info = s
        .open_session(caller, &open_req(Language::Python))
        .await
        .expect("open");
    eval(s, caller, &info.session_id, "x = 1").await;
    let good = s
        .snapshot_session(caller, &info.session_id)
        .await
        .expect("snapshot")
        .archive
        .bytes;
    let code = |r: Result<plimsoll::session::SessionInfo, ErrorInfo>| r.err().map(|e| e.code);
    let req = RunRequest::default();
    let mut flipped = good.clone();
    let at = flipped.len() - 100;
    flipped[at] ^= 1;
    assert_eq!(
        code(s.resume_session(caller, flipped, &req).await).as_deref(),
        Some("snapshot_invalid")
    );
    let cut = good[..good.len() / 2].to_vec();
    assert_eq!(
        code(s.resume_session(caller, cut, &req).await).as_deref(),
        Some("snapshot_invalid")
    );
    // Another build of the guest: the same archive naming another identity.
    let (_, mut image) = archive::decode(&good, &caps()).expect("decode");
    image.guests[0].identity = format!("python-wasm:sha256:{}", "0".repeat(64));
    let other = archive::encode(&image, 1).expect("encode").bytes;
    assert_eq!(
        code(s.resume_session(caller, other, &req).await).as_deref(),
        Some("snapshot_guest_mismatch")
    );
    // One that claims 1 TiB of memory: refused before anything is
    // allocated for it.
    let (_, mut image) = archive::decode(&good, &caps()).expect("decode");
    if let Some(i) = image.guests[0].instance.as_mut() {
        i.memories[0].bytes = 1 << 40;
    }
    let huge = archive::encode(&image, 1).expect("encode").bytes;
    assert_eq!(
        code(s.resume_session(caller, huge, &req).await).as_deref(),
        Some("snapshot_invalid")
    );
    // Not an archive at all.
    assert_eq!(
        code(
            s.resume_session(caller, b"PLSNAP\0\x01garbage".to_vec(), &req)
                .await
        )
        .as_deref(),
        Some("snapshot_invalid")
    );
    // And the sandbox serves on.
    let r = s.run(&RunRequest::code(Language::Python, "6 * 7")).await;
    assert_eq!(r.result.as_deref(), Some("42"));
}

/// A fork is one snapshot and `n` sessions, each its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_makes_independent_sessions() {
    // Its own caller: its sessions count against its own cap.
    let caller = "a_fork_makes_independent_sessions";
    let s = shared();
    let info = s
        .open_session(caller, &open_req(Language::Python))
        .await
        .expect("open");
    eval(s, caller, &info.session_id, "plan = []").await;
    let forks = s
        .fork_session(caller, &info.session_id, 2, &RunRequest::default())
        .await
        .expect("fork");
    assert_eq!(forks.len(), 2);
    eval(s, caller, &forks[0].session_id, "plan.append('a')").await;
    eval(s, caller, &forks[1].session_id, "plan.append('b')").await;
    assert_eq!(eval(s, caller, &forks[0].session_id, "plan").await, "['a']");
    assert_eq!(eval(s, caller, &forks[1].session_id, "plan").await, "['b']");
    assert_eq!(eval(s, caller, &info.session_id, "plan").await, "[]");
    for f in forks {
        assert!(s.close_session(caller, &f.session_id));
    }
}

fn wrapped(dir: &std::path::Path, kind: plimsoll::ProviderKind) -> Sandbox {
    sandbox_in(dir, |c| {
        c.provider = kind;
        c.workers = plimsoll::provider::WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm: 1,
            max: 4,
            image_dir: Some(dir.join("images")),
            ..plimsoll::provider::WorkerConfig::default()
        };
    })
}

/// A snapshot taken behind one boundary resumes behind another: under
/// bubblewrap and in-process, both ways, and inside gVisor; each resumed
/// session reports the tier it runs at now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_moves_between_tiers() {
    let caller = "across-tiers";
    let local = shared();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut tiers = vec![(
        wrapped(dir.path(), plimsoll::ProviderKind::WasmBwrap),
        plimsoll::Tier::Container,
    )];
    let runsc = std::process::Command::new("runsc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        runsc,
        "gVisor's runsc is missing (apt-get install runsc; make setup and .ci/run install it)"
    );
    let gdir = tempfile::tempdir().expect("tempdir");
    tiers.push((
        wrapped(gdir.path(), plimsoll::ProviderKind::WasmGvisor),
        plimsoll::Tier::Kernel,
    ));
    for (s, tier) in &tiers {
        assert_eq!(s.isolation().tier, *tier);
        // Taken behind the boundary, resumed in-process.
        let info = s
            .open_session(caller, &open_req(Language::Python))
            .await
            .expect("open");
        eval(
            s,
            caller,
            &info.session_id,
            "x = 41\nit = iter('abc'); next(it)",
        )
        .await;
        let snap = s
            .snapshot_session(caller, &info.session_id)
            .await
            .expect("snapshot");
        assert_eq!(snap.taken_at, tier.as_str());
        let here = local
            .resume_session(caller, snap.archive.bytes.clone(), &RunRequest::default())
            .await
            .expect("resume in-process");
        let r = local
            .run_in_session(caller, &here.session_id, &cell("x + 1, next(it)"))
            .await;
        assert_eq!(r.result.as_deref(), Some("(42, 'b')"), "{r:?}");
        assert_eq!(r.isolation.tier, plimsoll::Tier::Process);
        // Taken in-process, resumed behind the boundary.
        let snap = local
            .snapshot_session(caller, &here.session_id)
            .await
            .expect("snapshot");
        let there = s
            .resume_session(caller, snap.archive.bytes.clone(), &RunRequest::default())
            .await
            .expect("resume behind the boundary");
        let r = s
            .run_in_session(caller, &there.session_id, &cell("x + 2, next(it)"))
            .await;
        assert_eq!(r.result.as_deref(), Some("(43, 'c')"), "{r:?}");
        assert_eq!(r.isolation.tier, *tier);
        for (sb, id) in [
            (s, &info.session_id),
            (s, &there.session_id),
            (local, &here.session_id),
        ] {
            assert!(sb.close_session(caller, id));
        }
    }
}
