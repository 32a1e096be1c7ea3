//! The wrapped providers with their real parts: `plimsoll-worker` processes
//! in bubblewrap namespaces under our seccomp filter, in gVisor, and as the
//! `/init` of QEMU microVMs. Each test needs its wrapper; on a machine
//! without it the test says so and is skipped (CI installs bubblewrap,
//! runsc and QEMU and builds the VM image, so CI never skips).

mod support;

use plimsoll::envelope::Limits;
use plimsoll::provider::WorkerConfig;
use plimsoll::worker::pool::PoolConfig;
use plimsoll::wrapper::microvm::MicrovmSettings;
use plimsoll::{Language, ProviderKind, RunRequest, Sandbox, Status, Tier};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use support::{guest_bytes, sandbox_in, with_limits};

fn bwrap_usable() -> bool {
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
    }
    ok
}

fn workers(warm: usize, max: usize) -> WorkerConfig {
    WorkerConfig {
        worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
        warm,
        max,
        image_dir: Some(support::guests_dir().join("../test-worker-images")),
        ..WorkerConfig::default()
    }
}

fn bwrap_sandbox(dir: &std::path::Path, warm: usize, max: usize) -> Sandbox {
    bwrap_with(dir, workers(warm, max))
}

/// A `wasm+bwrap` sandbox in `dir` with these worker settings.
fn bwrap_with(dir: &std::path::Path, workers: WorkerConfig) -> Sandbox {
    sandbox_in(dir, |c| {
        c.provider = ProviderKind::WasmBwrap;
        c.workers = workers;
    })
}

/// One bwrap sandbox for the tests that need nothing special.
fn shared() -> Option<&'static Sandbox> {
    if !bwrap_usable() {
        return None;
    }
    static S: OnceLock<(tempfile::TempDir, Sandbox)> = OnceLock::new();
    Some(
        &S.get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let s = bwrap_sandbox(dir.path(), 2, 16);
            (dir, s)
        })
        .1,
    )
}

fn req(component: &str) -> RunRequest {
    RunRequest::component(component)
}

/// Asserts that `iso`'s evidence has each named check, and that it passed.
fn assert_checks_pass(iso: &plimsoll::Isolation, names: &[&str]) {
    for name in names {
        let c = iso
            .evidence
            .checks
            .iter()
            .find(|c| c.name == *name)
            .unwrap_or_else(|| panic!("no `{name}` check: {:#?}", iso.evidence));
        assert!(c.passed, "{name}: {}", c.observed);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smoke_test_passes_and_its_evidence_is_in_every_result() {
    let Some(s) = shared() else { return };
    let iso = s.isolation();
    assert_eq!(iso.tier, Tier::Container, "{:#?}", iso.evidence);
    assert_eq!(iso.provider, "wasm+bwrap");
    assert_eq!(iso.wrapper.as_deref(), Some("bwrap"));
    assert_checks_pass(
        &iso,
        &[
            "wrapper",
            "network_interfaces",
            "writable_paths",
            "environment",
            "uid",
            "capabilities",
            "pid_namespace",
            "host_files",
            "seccomp",
            "limits",
        ],
    );
    let uid_check = iso.evidence.checks.iter().find(|c| c.name == "uid");
    assert!(uid_check.is_some_and(|c| c.observed.contains("61000")));

    let r = s.run(&req("hello")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    assert_eq!(r.stdout, "hello from plimsoll\n");
    let used = r
        .isolation
        .evidence
        .worker
        .clone()
        .expect("the worker is named");
    assert_eq!(used.caller, plimsoll::sandbox::LOCAL_CALLER);
    assert_eq!(
        without_worker(&r.isolation),
        iso,
        "the result carries the evidence of the wrapper that ran it"
    );
}

/// `iso` without the worker that ran the run (the provider's own
/// isolation names none).
fn without_worker(iso: &plimsoll::Isolation) -> plimsoll::Isolation {
    let mut iso = iso.clone();
    iso.evidence.worker = None;
    iso
}

/// The worker a result names.
fn worker_of(r: &plimsoll::RunResult) -> plimsoll::tier::WorkerUse {
    r.isolation
        .evidence
        .worker
        .clone()
        .unwrap_or_else(|| panic!("no worker in the evidence: {:?}", r.isolation.evidence))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_serves_one_caller_and_is_retired_after_a_trap() {
    if !bwrap_usable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let images = dir.path().join("images");
    let s = std::sync::Arc::new(bwrap_with(
        dir.path(),
        WorkerConfig {
            image_dir: Some(images.clone()),
            ..workers(1, 6)
        },
    ));
    let ok = |r: &plimsoll::RunResult| assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    // Alice's runs reuse her worker; its evidence counts them.
    let a1 = s.run_as("alice", &req("hello")).await;
    ok(&a1);
    let a2 = s.run_as("alice", &req("hello")).await;
    ok(&a2);
    let (w1, w2) = (worker_of(&a1), worker_of(&a2));
    assert_eq!(w1.caller, "alice");
    assert_eq!(
        w1.worker_id, w2.worker_id,
        "alice's second run reuses her worker"
    );
    assert_eq!((w1.runs_before, w2.runs_before), (0, 1));
    assert!(
        a2.usage
            .worker_wait_ms
            .is_some_and(|w| w <= a2.usage.wall_ms)
    );
    // Bob never gets it, one after the other or at once.
    let b1 = s.run_as("bob", &req("hello")).await;
    ok(&b1);
    assert_ne!(worker_of(&b1).worker_id, w1.worker_id);
    assert_eq!(worker_of(&b1).caller, "bob");
    let (s1, s2) = (s.clone(), s.clone());
    let (ra, rb) = tokio::join!(
        async move { s1.run_as("alice", &req("hello")).await },
        async move { s2.run_as("bob", &req("hello")).await },
    );
    ok(&ra);
    ok(&rb);
    assert_eq!(worker_of(&ra).worker_id, w1.worker_id);
    assert_eq!(worker_of(&rb).worker_id, worker_of(&b1).worker_id);
    // Alice and Bob each hold a sandbox of their own: two workers in two
    // pid namespaces, besides the warm one.
    let pids = worker_pids(&images);
    let namespaces: std::collections::HashSet<String> = pids
        .iter()
        .filter_map(|p| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok())
        .map(|l| l.display().to_string())
        .collect();
    assert!(
        namespaces.len() >= 2 && namespaces.len() == pids.len(),
        "every worker has a pid namespace of its own: {pids:?} {namespaces:?}"
    );
    // A trap retires Alice's worker; her next run gets a fresh one.
    let trap = s.run_as("alice", &req("stackoverflow")).await;
    assert_eq!(trap.status, Status::Trap, "{:?}", trap.error);
    assert_eq!(worker_of(&trap).worker_id, w1.worker_id);
    let a3 = s.run_as("alice", &req("hello")).await;
    ok(&a3);
    assert_ne!(
        worker_of(&a3).worker_id,
        w1.worker_id,
        "the trapped worker is retired"
    );
    assert_eq!(worker_of(&a3).runs_before, 0);
    // A guest's own failure is an outcome, not a reason to retire.
    let failed = s.run_as("alice", &req("fail")).await;
    assert_eq!(failed.status, Status::Error);
    let a4 = s.run_as("alice", &req("hello")).await;
    assert_eq!(worker_of(&a4).worker_id, worker_of(&a3).worker_id);
    assert_eq!(worker_of(&a4).runs_before, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_runs_one_gives_a_fresh_worker_every_run_and_idle_workers_are_retired() {
    if !bwrap_usable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let once = bwrap_with(
        dir.path(),
        WorkerConfig {
            image_dir: Some(dir.path().join("images")),
            max_runs: 1,
            ..workers(1, 4)
        },
    );
    let mut seen = std::collections::HashSet::new();
    for _ in 0..3 {
        let r = once.run(&req("hello")).await;
        assert_eq!(r.status, Status::Ok, "{:?}", r.error);
        let w = worker_of(&r);
        assert_eq!((w.runs_before, w.max_runs), (0, 1));
        assert!(seen.insert(w.worker_id), "a worker served a second run");
    }
    assert!(
        once.isolation()
            .evidence
            .summary
            .contains("a fresh worker for every run")
    );
    drop(once);

    let dir = tempfile::tempdir().expect("tempdir");
    let idle = bwrap_with(
        dir.path(),
        WorkerConfig {
            image_dir: Some(dir.path().join("images")),
            idle: Duration::from_secs(1),
            ..workers(0, 4)
        },
    );
    let first = idle.run(&req("hello")).await;
    assert_eq!(first.status, Status::Ok, "{:?}", first.error);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let later = idle.run(&req("hello")).await;
    assert_eq!(later.status, Status::Ok, "{:?}", later.error);
    assert_ne!(
        worker_of(&first).worker_id,
        worker_of(&later).worker_id,
        "a worker idle past its idle time is retired"
    );
    drop(idle);

    // Warm workers that reach their age are replaced: the warm set does
    // not drain away while no run comes.
    let dir = tempfile::tempdir().expect("tempdir");
    let aging = bwrap_with(
        dir.path(),
        WorkerConfig {
            image_dir: Some(dir.path().join("images")),
            max_age: Duration::from_secs(1),
            ..workers(1, 4)
        },
    );
    let t = Instant::now();
    while aging.idle_workers() != Some(1) {
        assert!(t.elapsed() < Duration::from_secs(30), "no warm worker");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let t = Instant::now();
    while aging.idle_workers() != Some(1) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the aged warm worker was not replaced"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = aging.run(&req("hello")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_pool_makes_room_for_a_new_caller_and_caps_each_callers_share() {
    if !bwrap_usable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let s = std::sync::Arc::new(bwrap_with(
        dir.path(),
        WorkerConfig {
            image_dir: Some(dir.path().join("images")),
            ..workers(0, 2)
        },
    ));
    // Two callers hold the pool's two workers, idle.
    let a = s.run_as("alice", &req("hello")).await;
    let b = s.run_as("bob", &req("hello")).await;
    assert_eq!((a.status, b.status), (Status::Ok, Status::Ok));
    // A third caller is served: the least recently used idle worker
    // (Alice's) makes room.
    let c = s.run_as("carol", &req("hello")).await;
    assert_eq!(c.status, Status::Ok, "{:?}", c.error);
    let a2 = s.run_as("alice", &req("hello")).await;
    assert_eq!(a2.status, Status::Ok, "{:?}", a2.error);
    assert_ne!(worker_of(&a2).worker_id, worker_of(&a).worker_id);
    // One caller may hold half the pool: a second run of Alice's at once
    // is refused with a clear error instead of taking Bob's share.
    let s2 = s.clone();
    let busy = tokio::spawn(async move {
        s2.run_as(
            "alice",
            &with_limits(
                req("spin"),
                Limits {
                    wall_time_ms: Some(1500),
                    ..Limits::default()
                },
            ),
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let second = s.run_as("alice", &req("hello")).await;
    assert_eq!(
        second.error_code(),
        Some("worker_pool_exhausted"),
        "{:?}",
        second.error
    );
    assert!(
        second
            .error
            .as_ref()
            .is_some_and(|e| e.message.contains("share")),
        "{:?}",
        second.error
    );
    let other = s.run_as("dave", &req("hello")).await;
    assert_eq!(other.status, Status::Ok, "{:?}", other.error);
    // The spin ends at its wall time or, on a fast idle machine, out of
    // fuel first (what the guest is written to get: either is a limit).
    let spun = busy.await.expect("busy").status;
    assert!(
        matches!(spun, Status::Timeout | Status::CpuExhausted),
        "{spun:?}"
    );
}

/// Hostile guests and scripts, each with the outcome it must get, run under
/// the wrapper of `s`, which must report `tier` for every one.
async fn assert_hostile_outcomes(s: &Sandbox, tier: Tier) {
    let cases: Vec<(&str, RunRequest, Status)> = vec![
        (
            "infinite loop",
            with_limits(
                req("spin"),
                Limits {
                    wall_time_ms: Some(500),
                    ..Limits::default()
                },
            ),
            Status::Timeout,
        ),
        (
            "memory bomb",
            with_limits(
                req("membomb"),
                Limits {
                    memory_bytes: Some(64 << 20),
                    ..Limits::default()
                },
            ),
            Status::MemoryExhausted,
        ),
        ("stack overflow", req("stackoverflow"), Status::Trap),
        (
            "stdout flood",
            with_limits(
                req("flood"),
                Limits {
                    stdout_bytes: Some(100_000),
                    ..Limits::default()
                },
            ),
            Status::OutputTruncated,
        ),
        ("non-zero exit", req("fail"), Status::Error),
        (
            "python while True",
            with_limits(
                RunRequest::code(Language::Python, "while True: pass"),
                Limits {
                    wall_time_ms: Some(800),
                    ..Limits::default()
                },
            ),
            Status::Timeout,
        ),
        (
            "python reads /etc/passwd",
            RunRequest::code(Language::Python, "open('/etc/passwd').read()"),
            Status::Error,
        ),
        (
            "javascript endless loop",
            with_limits(
                RunRequest::code(Language::Javascript, "for(;;){}"),
                Limits {
                    wall_time_ms: Some(800),
                    ..Limits::default()
                },
            ),
            Status::Timeout,
        ),
    ];
    // A run includes waiting for a warm worker; under TCG a VM boot takes
    // seconds of CPU, and these runs use VMs faster than two cores boot
    // them.
    let limit = if tier == Tier::Vm {
        Duration::from_secs(90)
    } else {
        Duration::from_secs(20)
    };
    for (what, request, want) in cases {
        let t = Instant::now();
        let r = s.run(&request).await;
        assert_eq!(r.status, want, "{what}: {:?} {}", r.error, r.stderr);
        assert!(t.elapsed() < limit, "{what} took {:?}", t.elapsed());
        assert_eq!(r.isolation.tier, tier);
    }
    let r = s.run(&req("escape")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    assert!(
        !r.stdout.contains("LEAK") && r.stdout.contains("blocked absolute /etc/passwd"),
        "escape inside {tier}: {}",
        r.stdout
    );
    let r = s.run(&RunRequest::code(Language::Python, "6 * 7")).await;
    assert_eq!(
        r.result.as_deref(),
        Some("42"),
        "{:?} {}",
        r.error,
        r.stderr
    );
    let r = s
        .run(&RunRequest::code(Language::Javascript, "6 * 7"))
        .await;
    assert_eq!(
        r.result.as_deref(),
        Some("42"),
        "{:?} {}",
        r.error,
        r.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_guests_end_in_their_typed_outcome_inside_bwrap() {
    let Some(s) = shared() else { return };
    assert_hostile_outcomes(s, Tier::Container).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kernel_floor_is_refused_and_a_container_floor_accepted() {
    let Some(s) = shared() else { return };
    let mut r = req("hello");
    r.minimum_isolation = Some(Tier::Kernel);
    let out = s.run(&r).await;
    assert_eq!(out.status, Status::Refused);
    assert_eq!(out.error_code(), Some("insufficient_isolation"));
    r.minimum_isolation = Some(Tier::Container);
    assert_eq!(s.run(&r).await.status, Status::Ok);
}

/// Sessions under the wrapper of `s` (tier `tier`): state persists across
/// evaluations, another caller can neither reach nor see it, each
/// session's worker is its caller's, and a runaway cell ends only its
/// session.
async fn assert_sessions_hold(s: &Sandbox, tier: Tier) {
    let py = |code: &str| RunRequest::code(Language::Python, code);
    let js = |code: &str| RunRequest::code(Language::Javascript, code);
    let a = s
        .open_session("alice", &py(""))
        .await
        .expect("alice's session");
    let r = s
        .run_in_session("alice", &a.session_id, &py("x = 41"))
        .await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    let r = s.run_in_session("alice", &a.session_id, &py("x + 1")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    assert_eq!(r.result.as_deref(), Some("42"));
    assert_eq!(r.isolation.tier, tier);
    assert_eq!(r.session_id.as_deref(), Some(a.session_id.as_str()));
    let wa = worker_of(&r);
    assert_eq!((wa.caller.as_str(), wa.runs_before), ("alice", 1));
    // Bob cannot reach Alice's session, and his own does not see `x`.
    let r = s.run_in_session("bob", &a.session_id, &py("x")).await;
    assert_eq!(r.error_code(), Some("unknown_session"));
    let b = s.open_session("bob", &py("")).await.expect("bob's session");
    let r = s.run_in_session("bob", &b.session_id, &py("x")).await;
    assert_eq!(r.status, Status::Error, "{:?}", r.result);
    assert!(
        r.error
            .as_ref()
            .is_some_and(|e| e.message.contains("NameError")),
        "{:?}",
        r.error
    );
    assert_ne!(
        worker_of(&r).worker_id,
        wa.worker_id,
        "two callers never share a worker"
    );
    assert_eq!(worker_of(&r).caller, "bob");
    // A JavaScript session keeps its globals too.
    let j = s
        .open_session("alice", &js(""))
        .await
        .expect("a JavaScript session");
    let r = s
        .run_in_session("alice", &j.session_id, &js("globalThis.n = 6; n"))
        .await;
    assert_eq!(r.result.as_deref(), Some("6"), "{:?}", r.error);
    let r = s.run_in_session("alice", &j.session_id, &js("n * 7")).await;
    assert_eq!(r.result.as_deref(), Some("42"), "{:?}", r.error);
    assert_ne!(
        worker_of(&r).worker_id,
        wa.worker_id,
        "a worker holds one session"
    );
    // A runaway cell ends its session, and only that one.
    let r = s
        .run_in_session(
            "alice",
            &j.session_id,
            &with_limits(
                js("for (;;) {}"),
                Limits {
                    wall_time_ms: Some(400),
                    ..Limits::default()
                },
            ),
        )
        .await;
    assert_eq!(r.status, Status::Timeout, "{:?}", r.error);
    assert!(r.session_closed);
    assert!(!s.session_open("alice", &j.session_id));
    let r = s.run_in_session("alice", &a.session_id, &py("x")).await;
    assert_eq!(r.result.as_deref(), Some("41"), "{:?}", r.error);
    assert!(s.close_session("alice", &a.session_id));
    assert!(s.close_session("bob", &b.session_id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_state_inside_bwrap_and_stay_their_callers() {
    let Some(s) = shared() else { return };
    assert!(s.supports_sessions());
    assert_sessions_hold(s, Tier::Container).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_whose_worker_dies_ends_as_boundary_failed() {
    if !bwrap_usable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let images = dir.path().join("images");
    let s = bwrap_with(
        dir.path(),
        WorkerConfig {
            image_dir: Some(images.clone()),
            ..workers(0, 4)
        },
    );
    let py = |code: &str| RunRequest::code(Language::Python, code);
    let a = s.open_session("alice", &py("")).await.expect("open");
    let r = s.run_in_session("alice", &a.session_id, &py("x = 1")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    // The session's worker is the only one alive.
    let pids = worker_pids(&images);
    assert_eq!(pids.len(), 1, "{pids:?}");
    // SAFETY: kill(2) on a worker process this test's sandbox started.
    unsafe {
        libc::kill(pids[0], libc::SIGKILL);
    }
    let r = s.run_in_session("alice", &a.session_id, &py("x")).await;
    assert_eq!(r.status, Status::WorkerLost, "{:?}", r.error);
    assert!(r.session_closed);
    assert_eq!(
        s.session_ended("alice", &a.session_id),
        Some(plimsoll::session::SessionEnd::BoundaryFailed)
    );
    assert_eq!(s.session_ended("bob", &a.session_id), None);
    // The provider keeps serving: a new session, and a run.
    let b = s
        .open_session("alice", &py(""))
        .await
        .expect("a new session");
    let r = s
        .run_in_session("alice", &b.session_id, &py("2 * 21"))
        .await;
    assert_eq!(r.result.as_deref(), Some("42"), "{:?}", r.error);
    assert!(s.close_session("alice", &b.session_id));
    assert_eq!(s.run_as("alice", &req("hello")).await.status, Status::Ok);
}

/// Processes named one of `comms` whose `/guests` is mounted from
/// `images` (each test that signals workers has its own image directory,
/// so it never hits another test's).
fn pids_with_guests(images: &std::path::Path, comms: &[&str]) -> Vec<(i32, String)> {
    let needle = images.display().to_string();
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let comm = comm.trim().to_owned();
        if !comms.contains(&comm.as_str()) {
            continue;
        }
        let mounts = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
        if mounts
            .lines()
            .any(|l| l.contains(&needle) && l.contains(" /guests "))
        {
            pids.push((pid, comm));
        }
    }
    pids
}

/// Workers of `images`.
fn worker_pids(images: &std::path::Path) -> Vec<i32> {
    pids_with_guests(images, &["plimsoll-worker"])
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// Every process of a bwrap sandbox of `images`: the namespace's init (a
/// `bwrap`) and the worker.
fn sandbox_pids(images: &std::path::Path) -> Vec<(i32, String)> {
    pids_with_guests(images, &["plimsoll-worker", "bwrap"])
}

/// Waits up to 5 s for no process of a sandbox of `images` to be left.
async fn assert_no_sandbox_left(images: &std::path::Path, after: &str) {
    let t = Instant::now();
    loop {
        let left = sandbox_pids(images);
        if left.is_empty() {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "after {after}: processes of ended sandboxes are still alive: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_or_stopped_mid_run_fails_only_that_run() {
    if !bwrap_usable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let images = dir.path().join("images");
    // No warm workers and no reuse: the only worker alive is the one
    // running.
    let s = std::sync::Arc::new(bwrap_with(
        dir.path(),
        WorkerConfig {
            image_dir: Some(images.clone()),
            max_runs: 1,
            ..workers(0, 4)
        },
    ));
    for signal in [libc::SIGKILL, libc::SIGSTOP] {
        let before = worker_pids(&images);
        let s2 = s.clone();
        let run = tokio::spawn(async move {
            s2.run(&with_limits(
                req("spin"),
                Limits {
                    wall_time_ms: Some(1500),
                    ..Limits::default()
                },
            ))
            .await
        });
        // Wait for the run's worker to appear, then signal it.
        let t = Instant::now();
        let victim = loop {
            let now: Vec<i32> = worker_pids(&images)
                .into_iter()
                .filter(|p| !before.contains(p))
                .collect();
            if let Some(p) = now.first() {
                break *p;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "no worker appeared");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        // SAFETY: kill(2) on a worker process this test's sandbox started.
        unsafe {
            libc::kill(victim, signal);
        }
        let r = run.await.expect("run task");
        assert_eq!(
            r.status,
            Status::WorkerLost,
            "signal {signal}: {:?}",
            r.error
        );
        assert_eq!(r.error_code(), Some("worker_lost"));
        if signal == libc::SIGSTOP {
            // SAFETY: as above; let the stopped worker be reaped.
            unsafe {
                libc::kill(victim, libc::SIGKILL);
            }
        }
        // The provider keeps serving.
        let ok = s.run(&req("hello")).await;
        assert_eq!(
            ok.status,
            Status::Ok,
            "after signal {signal}: {:?}",
            ok.error
        );
        // Nothing of either sandbox is left: not the killed or stopped
        // worker's namespace init, not the one that served `hello`.
        assert_no_sandbox_left(&images, &format!("signal {signal}")).await;
    }
    // A worker that hangs past its wall time is killed with its sandbox.
    let hung = s
        .run(&with_limits(
            req("spin"),
            Limits {
                wall_time_ms: Some(300),
                ..Limits::default()
            },
        ))
        .await;
    assert!(
        matches!(hung.status, Status::Timeout | Status::WorkerLost),
        "{:?}",
        hung.status
    );
    assert_no_sandbox_left(&images, "a timed-out run").await;
    // Dropping the provider (the supervisor going away) ends every sandbox.
    drop(s);
    assert_no_sandbox_left(&images, "the supervisor's end").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_worker_pool_sheds_with_a_clear_error() {
    if !bwrap_usable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let s = std::sync::Arc::new(bwrap_sandbox(dir.path(), 1, 1));
    // Let the one warm worker finish starting.
    assert_eq!(s.run(&req("hello")).await.status, Status::Ok);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let s2 = s.clone();
    let busy = tokio::spawn(async move {
        s2.run(&with_limits(
            req("spin"),
            Limits {
                wall_time_ms: Some(1500),
                ..Limits::default()
            },
        ))
        .await
    });
    tokio::time::sleep(Duration::from_millis(400)).await;
    let r = s.run(&req("hello")).await;
    assert_eq!(r.status, Status::Refused);
    assert_eq!(
        r.error_code(),
        Some("worker_pool_exhausted"),
        "{:?}",
        r.error
    );
    assert_eq!(busy.await.expect("busy").status, Status::Timeout);
    // Capacity returns once the run is over.
    let t = Instant::now();
    loop {
        let r = s.run(&req("hello")).await;
        if r.status == Status::Ok {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "{:?}", r.error);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A test wrapper with no boundary of its own: the command `argv` builds
/// from the launch, started as is, claiming the container tier and judged
/// against the uid and a seccomp filter (which the worker behind it must
/// report, truly or not).
struct Scripted {
    name: &'static str,
    argv: Box<Argv>,
}

/// Builds a scripted worker's command line from its launch.
type Argv = dyn Fn(&plimsoll::wrapper::Launch) -> Vec<std::ffi::OsString> + Send + Sync;

impl plimsoll::wrapper::Wrapper for Scripted {
    fn name(&self) -> &'static str {
        self.name
    }
    fn tier(&self) -> Tier {
        Tier::Container
    }
    fn version(&self) -> String {
        format!("{} 1", self.name)
    }
    fn prepare(
        &self,
        l: &plimsoll::wrapper::Launch,
    ) -> Result<plimsoll::wrapper::Prepared, plimsoll::wrapper::WrapperError> {
        let argv = (self.argv)(l);
        let (program, args) = argv.split_first().expect("a command");
        let mut c = tokio::process::Command::new(program);
        c.args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        Ok(plimsoll::wrapper::Prepared {
            command: c,
            keep: Vec::new(),
            cleanup: None,
            diagnostics: None,
        })
    }
    fn expectations(&self, uid: u32) -> plimsoll::worker::observe::Expectations {
        plimsoll::worker::observe::Expectations {
            uid,
            seccomp: true,
            host_kernel: None,
            wrapper_env: &[],
            vm: None,
        }
    }
}

fn scripted(
    name: &'static str,
    argv: impl Fn(&plimsoll::wrapper::Launch) -> Vec<std::ffi::OsString> + Send + Sync + 'static,
) -> std::sync::Arc<dyn plimsoll::wrapper::Wrapper> {
    std::sync::Arc::new(Scripted {
        name,
        argv: Box::new(argv),
    })
}

/// A pool of one worker at a time, one run per worker, its images in `dir`.
fn test_pool_config(dir: &std::path::Path) -> PoolConfig {
    PoolConfig {
        worker_bin: env!("CARGO_BIN_EXE_plimsoll-worker").into(),
        image_dir: dir.join("images"),
        warm: 0,
        max: 1,
        workspace_bytes: 1 << 20,
        max_per_caller: 1,
        max_runs: 1,
        max_age: Duration::from_secs(60),
        idle: Duration::from_secs(60),
    }
}

/// The frame proxy of [`a_worker_that_lies_in_a_result_is_retired`]: runs
/// the real worker, passes every frame through, rewrites its smoke-test
/// observation into a passing one (the proxy's own sandbox is a plain
/// bwrap, not the product's), and forges the run id of the worker's second
/// result.
const LYING_PROXY: &str = r#"
import json, struct, subprocess, sys, threading
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def up():
    src = sys.stdin.buffer
    while True:
        b = src.read1(65536)
        if not b:
            break
        child.stdin.write(b)
        child.stdin.flush()
    child.stdin.close()
threading.Thread(target=up, daemon=True).start()
out, done = sys.stdout.buffer, 0
while True:
    head = child.stdout.read(4)
    if len(head) < 4:
        break
    body = child.stdout.read(struct.unpack(">I", head)[0])
    msg = json.loads(body)
    if msg.get("type") == "observed":
        o = msg["observation"]
        o.update(uid=61000, gid=61000, env_vars=[], net_interfaces=["lo"], writable=[],
                 work_writable=True, seccomp=2, no_new_privs=1, cap_eff="0000000000000000",
                 pid=2, visible_pids=2, nofile=1024, host_passwd_readable=False, open_fds=[])
    if msg.get("type") == "done":
        done += 1
        if done == 2:
            msg["result"]["run_id"] = "forged"
    body = json.dumps(msg).encode()
    out.write(struct.pack(">I", len(body)) + body)
    out.flush()
import os
os._exit(0)
"#;

/// A worker whose result lies (here: the run id of another run) is
/// retired: that run is answered with the supervisor's own run id, and the
/// caller's next run gets a fresh worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_lies_in_a_result_is_retired() {
    if !bwrap_usable() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let proxy = dir.path().join("proxy.py");
    std::fs::write(&proxy, LYING_PROXY).expect("proxy");
    let rt = plimsoll::Runtime::new(plimsoll::RuntimeConfig {
        workspace_dir: dir.path().join("work"),
        cache_dir: Some(support::shared_cache_dir()),
        ..plimsoll::RuntimeConfig::default()
    })
    .expect("runtime");
    let hello = rt.load(&guest_bytes("hello")).expect("hello");
    let liar = scripted("liar", move |l| {
        let mut argv: Vec<std::ffi::OsString> = vec!["python3".into(), proxy.clone().into()];
        for a in [
            "bwrap",
            "--dev-bind",
            "/",
            "/",
            "--tmpfs",
            "/work",
            "--ro-bind",
        ] {
            argv.push(a.into());
        }
        argv.push(l.image_dir.clone().into());
        argv.push("/guests".into());
        argv.push("--ro-bind".into());
        argv.push(l.worker_bin.clone().into());
        argv.push("/plimsoll-worker".into());
        argv.push("/plimsoll-worker".into());
        argv
    });
    let pool = plimsoll::worker::pool::Pool::start(
        liar,
        rt,
        PoolConfig {
            max: 2,
            max_per_caller: 2,
            max_runs: 100,
            ..test_pool_config(dir.path())
        },
        61000,
        "test",
        std::slice::from_ref(&hello),
    )
    .await
    .expect("the proxied worker passes the (rewritten) smoke test");
    let run = |id: &str| {
        let (pool, hello, id) = (pool.clone(), hello.clone(), id.to_owned());
        async move {
            plimsoll::worker::pool::Pool::run(
                &pool,
                "alice",
                &hello,
                &req("hello"),
                &plimsoll::Envelope::default(),
                plimsoll::grant::GrantSet::empty(),
                id,
            )
            .await
        }
    };
    let first = run("run-1").await;
    assert_eq!(first.status, Status::Ok, "{:?}", first.error);
    let lied = run("run-2").await;
    assert_eq!(
        lied.run_id, "run-2",
        "the supervisor's run id, never the worker's"
    );
    assert_eq!(worker_of(&lied).worker_id, worker_of(&first).worker_id);
    let next = run("run-3").await;
    assert_eq!(next.status, Status::Ok, "{:?}", next.error);
    assert_ne!(
        worker_of(&next).worker_id,
        worker_of(&first).worker_id,
        "the lying worker was retired"
    );
    assert_eq!(worker_of(&next).runs_before, 0);
}

/// Starts a pool whose "worker" is `/bin/sh -c script` (no boundary: the
/// pool must refuse it before any smoke test matters).
async fn fake_worker_pool(script: String) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let rt = plimsoll::Runtime::new(plimsoll::RuntimeConfig {
        workspace_dir: dir.path().join("work"),
        ..plimsoll::RuntimeConfig::default()
    })
    .map_err(|e| e.to_string())?;
    let hello = rt.load(&guest_bytes("hello")).map_err(|e| e.to_string())?;
    plimsoll::worker::pool::Pool::start(
        scripted("fake", move |_| {
            vec!["/bin/sh".into(), "-c".into(), script.clone().into()]
        }),
        rt,
        test_pool_config(dir.path()),
        61000,
        "test",
        &[hello],
    )
    .await
    .map(|_| ())
    .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_lies_about_its_protocol_version_is_refused() {
    let frame = r#"{"type":"ready","protocol":99,"version":"9.9","loaded":0}"#;
    let len = (frame.len() as u32).to_be_bytes();
    let prefix: String = len.iter().map(|b| format!("\\{b:03o}")).collect();
    let script = format!("cat >/dev/null & printf '{prefix}{frame}'; sleep 5");
    let e = fake_worker_pool(script)
        .await
        .expect_err("a lying worker must not start");
    assert!(e.contains("protocol 99"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_writes_garbage_is_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = plimsoll::Runtime::new(plimsoll::RuntimeConfig {
        workspace_dir: dir.path().join("work"),
        ..plimsoll::RuntimeConfig::default()
    })
    .expect("runtime");
    let hello = rt.load(&guest_bytes("hello")).expect("hello");
    let started = plimsoll::worker::pool::Pool::start(
        scripted("garbage", |_| {
            vec![
                "/bin/sh".into(),
                "-c".into(),
                "cat >/dev/null & printf '\\000\\000\\000\\010notjson!'; sleep 5".into(),
            ]
        }),
        rt,
        test_pool_config(dir.path()),
        61000,
        "test",
        &[hello],
    )
    .await;
    let e = started.err().expect("a garbage worker must not start");
    assert!(e.to_string().contains("protocol"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broker_calls_cross_to_the_supervisor_and_the_worker_never_holds_a_credential() {
    use support::upstream::{CANARY, STATIC_TOKEN, profiles, start_upstream};
    if !bwrap_usable() {
        return;
    }
    let (up, addr) = start_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let images = dir.path().join("images");
    let s = sandbox_in(dir.path(), |c| {
        c.provider = ProviderKind::WasmBwrap;
        c.grants = profiles(addr);
        c.workers = WorkerConfig {
            image_dir: Some(images.clone()),
            ..workers(1, 4)
        };
    });
    let req = RunRequest {
        stdin: plimsoll::Blob::from(
            "GET\torders\t/v1/orders/7\nGET\torders\t/v1/admin\nGET\torders\t/v1/echo/raw\nGET\torders\t/v1/echo/base64\nDUMP\n".to_string(),
        ),
        grants: vec!["orders".into()],
        ..RunRequest::component("broker_caller")
    };
    let r = s.run(&req).await;
    assert_eq!(r.status, Status::Ok, "{:?} {}", r.error, r.stderr);
    assert_eq!(r.isolation.tier, Tier::Container);
    // The supervisor's trace: one delivered, one denied, and two answers
    // that echoed the credential withheld before they crossed to the worker.
    let outcomes: Vec<_> = r.calls.rows.iter().map(|c| c.outcome.as_str()).collect();
    assert_eq!(
        outcomes,
        [
            "delivered",
            "denied",
            "credential_reflected",
            "credential_reflected"
        ],
        "{:?}",
        r.calls
    );
    assert_eq!(r.calls.rows[0].route.as_deref(), Some("/v1/orders/*"));
    // The upstream got the calls with the credential, and only the allowed ones.
    let seen = up.seen();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(n, v)| n == "authorization" && v.contains(STATIC_TOKEN))
    );
    // The response reached the guest; the credential did not.
    assert!(r.stdout.contains(CANARY), "{}", r.stdout);
    let memory = r
        .artifacts
        .iter()
        .find(|a| a.path == "memory.bin")
        .map(|a| a.content.as_bytes().to_vec())
        .unwrap_or_default();
    assert!(memory.len() > 65536, "the guest dumped its memory");
    let json = serde_json::to_string(&r).expect("json");
    for (what, hay) in [
        ("guest memory", memory.as_slice()),
        ("result", json.as_bytes()),
    ] {
        assert!(
            !hay.windows(STATIC_TOKEN.len())
                .any(|w| w == STATIC_TOKEN.as_bytes()),
            "the credential is in the {what}"
        );
    }
}

// ------------------------------------------------------------------ gVisor

fn runsc_usable() -> bool {
    let ok = std::process::Command::new("runsc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: gVisor's runsc is missing (apt-get install runsc); .ci/run installs it");
    }
    ok
}

fn gvisor_shared() -> Option<&'static Sandbox> {
    if !runsc_usable() {
        return None;
    }
    static S: OnceLock<(tempfile::TempDir, Sandbox)> = OnceLock::new();
    Some(
        &S.get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let s = sandbox_in(dir.path(), |c| {
                c.provider = ProviderKind::WasmGvisor;
                c.workers = WorkerConfig {
                    image_dir: Some(dir.path().join("images")),
                    ..workers(2, 8)
                };
            });
            (dir, s)
        })
        .1,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gvisor_proves_the_kernel_tier_and_runs_guests_inside_it() {
    let Some(s) = gvisor_shared() else { return };
    let iso = s.isolation();
    assert_eq!(iso.tier, Tier::Kernel, "{:#?}", iso.evidence);
    assert_eq!(iso.provider, "wasm+gvisor");
    assert_eq!(iso.wrapper.as_deref(), Some("gvisor"));
    assert_checks_pass(
        &iso,
        &[
            "wrapper",
            "network_interfaces",
            "writable_paths",
            "environment",
            "uid",
            "capabilities",
            "host_files",
            "kernel",
        ],
    );
    let wrapper = iso.evidence.checks.iter().find(|c| c.name == "wrapper");
    assert!(wrapper.is_some_and(|c| c.observed.contains("platform")));

    let r = s.run(&req("hello")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    assert_eq!(r.stdout, "hello from plimsoll\n");
    assert_eq!(without_worker(&r.isolation), iso);

    // A kernel floor is met here; a vm floor is not.
    let mut floor = req("hello");
    floor.minimum_isolation = Some(Tier::Kernel);
    assert_eq!(s.run(&floor).await.status, Status::Ok);
    floor.minimum_isolation = Some(Tier::Vm);
    assert_eq!(
        s.run(&floor).await.error_code(),
        Some("insufficient_isolation")
    );

    assert_hostile_outcomes(s, Tier::Kernel).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_state_inside_gvisor_and_stay_their_callers() {
    let Some(s) = gvisor_shared() else { return };
    assert_sessions_hold(s, Tier::Kernel).await;
}

// ----------------------------------------------------------------- microVM

/// The microVM settings for this machine, or `None` (with the reason
/// printed) when a part is missing. TCG is allowed here: on this machine
/// class `/dev/kvm` is PVM-backed and cannot boot a normal kernel, and the
/// evidence must then say TCG.
fn microvm_settings() -> Option<MicrovmSettings> {
    let mut s = MicrovmSettings::from_env();
    s.allow_tcg = true;
    let qemu = std::process::Command::new(&s.qemu)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !qemu {
        eprintln!(
            "SKIP: QEMU is missing (apt-get install qemu-system-x86); .ci/run installs it (make microvm)"
        );
        return None;
    }
    if !s.image.join("vmlinuz").is_file() {
        eprintln!(
            "SKIP: no microVM image in {} (make microvm builds it from Debian's kernel package); .ci/run builds it",
            s.image.display()
        );
        return None;
    }
    Some(s)
}

fn microvm_sandbox(
    dir: &std::path::Path,
    settings: MicrovmSettings,
    warm: usize,
    max: usize,
) -> Result<Sandbox, plimsoll::SandboxError> {
    support::try_sandbox_in(dir, |c| {
        c.provider = ProviderKind::WasmMicrovm;
        c.workers = WorkerConfig {
            image_dir: Some(dir.join("images")),
            microvm: Some(settings),
            ..workers(warm, max)
        };
    })
}

fn microvm_shared() -> Option<&'static Sandbox> {
    let settings = microvm_settings()?;
    static S: OnceLock<(tempfile::TempDir, Sandbox)> = OnceLock::new();
    Some(
        &S.get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let s = microvm_sandbox(dir.path(), settings, 2, 6).expect("microvm sandbox");
            (dir, s)
        })
        .1,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn microvm_proves_the_vm_tier_and_runs_guests_inside_it() {
    let Some(s) = microvm_shared() else { return };
    let iso = s.isolation();
    assert_eq!(iso.tier, Tier::Vm, "{:#?}", iso.evidence);
    assert_eq!(iso.provider, "wasm+microvm");
    assert_eq!(iso.wrapper.as_deref(), Some("microvm"));
    assert_checks_pass(
        &iso,
        &[
            "wrapper",
            "network_interfaces",
            "writable_paths",
            "environment",
            "uid",
            "capabilities",
            "pid_namespace",
            "host_files",
            "virtual_machine",
            "clock",
            "accelerator",
            "limits",
            "cpu",
        ],
    );
    let check = |name: &str| {
        iso.evidence
            .checks
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.observed.clone())
            .unwrap_or_default()
    };
    // The evidence names the accelerator, and why.
    assert!(
        check("wrapper").contains("accelerator"),
        "{}",
        check("wrapper")
    );
    if check("wrapper").contains("accelerator tcg") {
        assert!(
            check("accelerator").contains("PLIMSOLL_MICROVM_ALLOW_TCG"),
            "{}",
            check("accelerator")
        );
        // Images for QEMU's vCPU, not the host's (which may have AVX-512).
        assert!(check("cpu").contains("x86-64-v2"), "{}", check("cpu"));
    }

    // A component that was not in the VMs' initramfs yet: the pool boots
    // one that has it.
    let r = s.run(&req("hello")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    assert_eq!(r.stdout, "hello from plimsoll\n");
    assert_eq!(without_worker(&r.isolation), iso);

    let mut floor = req("hello");
    floor.minimum_isolation = Some(Tier::Vm);
    assert_eq!(s.run(&floor).await.status, Status::Ok);

    assert_hostile_outcomes(s, Tier::Vm).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_keep_state_inside_a_microvm_and_stay_their_callers() {
    let Some(s) = microvm_shared() else { return };
    assert_sessions_hold(s, Tier::Vm).await;
}

/// The shell guest inside a microVM: a pipeline of its utilities, and
/// `python3` and `node` started from it (fresh interpreter instances of
/// the same worker, inside the same VM), at tier `vm`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shell_and_its_programs_run_inside_a_microvm() {
    let Some(settings) = microvm_settings() else {
        return;
    };
    // TCG runs the interpreters an order of magnitude slower than KVM: a
    // sandbox of its own, whose envelope allows two minutes.
    let dir = tempfile::tempdir().expect("tempdir");
    let s = support::try_sandbox_in(dir.path(), |c| {
        c.provider = ProviderKind::WasmMicrovm;
        c.envelope.wall_time_ms = 120_000;
        c.workers = WorkerConfig {
            image_dir: Some(dir.path().join("images")),
            microvm: Some(settings),
            ..workers(1, 1)
        };
    })
    .expect("microvm sandbox");
    let mut req = RunRequest::code(
        Language::Shell,
        "printf 'b\\na\\n' > f && sort f | tr '\\n' , && python3 -c 'print(6*7)' && node -e 'console.log(1+1)'",
    );
    req.minimum_isolation = Some(Tier::Vm);
    let r = s.run(&req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.stdout, "a,b,42\n2\n", "{r:?}");
    assert_eq!(r.isolation.tier, Tier::Vm);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn microvm_refuses_to_start_on_an_unusable_kvm_unless_tcg_is_allowed() {
    let Some(mut settings) = microvm_settings() else {
        return;
    };
    let pvm = std::path::Path::new("/sys/module/kvm_pvm").exists()
        || !std::path::Path::new("/dev/kvm").exists();
    if !pvm {
        eprintln!("SKIP: this machine may have a usable KVM; the refusal is for machines without");
        return;
    }
    settings.allow_tcg = false;
    let dir = tempfile::tempdir().expect("tempdir");
    let e = microvm_sandbox(dir.path(), settings, 1, 2)
        .err()
        .expect("a microVM provider without KVM and without TCG allowed must not start")
        .to_string();
    assert!(e.contains("PLIMSOLL_MICROVM_ALLOW_TCG=1"), "{e}");
    assert!(e.contains("kvm") || e.contains("KVM"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_image_that_does_not_boot_is_refused_with_its_cause() {
    let Some(mut settings) = microvm_settings() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let image = dir.path().join("bad-image");
    std::fs::create_dir_all(image.join("modules")).expect("mkdir");
    std::fs::write(image.join("vmlinuz"), b"not a kernel at all").expect("write");
    std::fs::copy(
        settings.image.join("modules/order"),
        image.join("modules/order"),
    )
    .expect("copy");
    for m in std::fs::read_to_string(settings.image.join("modules/order"))
        .expect("order")
        .lines()
    {
        std::fs::copy(
            settings.image.join("modules").join(m),
            image.join("modules").join(m),
        )
        .expect("copy module");
    }
    settings.image = image;
    let t = Instant::now();
    let e = microvm_sandbox(dir.path(), settings, 1, 2)
        .err()
        .expect("a VM that cannot boot must not give a provider")
        .to_string();
    assert!(e.contains("wasm+microvm"), "{e}");
    assert!(
        e.contains("microvm said"),
        "the cause is quoted from QEMU: {e}"
    );
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
}

/// QEMU processes whose stderr log lies under `dir` (each test has its
/// own directory, so it never hits another test's VMs).
fn qemu_pids(dir: &std::path::Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !comm.starts_with("qemu-system") {
            continue;
        }
        if std::fs::read_link(format!("/proc/{pid}/fd/2")).is_ok_and(|p| p.starts_with(dir)) {
            pids.push(pid);
        }
    }
    pids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_killed_mid_run_fails_only_that_run() {
    let Some(settings) = microvm_settings() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let s = std::sync::Arc::new(microvm_sandbox(dir.path(), settings, 1, 3).expect("sandbox"));
    // A first, short run writes the component's image, so the VM the pool
    // boots next has it; give that VM time to boot (TCG: a few seconds).
    let short = s
        .run(&with_limits(
            req("spin"),
            Limits {
                wall_time_ms: Some(200),
                ..Limits::default()
            },
        ))
        .await;
    assert_eq!(short.status, Status::Timeout, "{:?}", short.error);
    let t = Instant::now();
    while s.idle_workers() != Some(1) {
        assert!(t.elapsed() < Duration::from_secs(120), "no VM became warm");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let s2 = s.clone();
    let run = tokio::spawn(async move {
        s2.run(&with_limits(
            req("spin"),
            Limits {
                wall_time_ms: Some(8000),
                ..Limits::default()
            },
        ))
        .await
    });
    // The run took the warm VM and its guest spins: kill every VM of this
    // sandbox (the run's, and the replacement being booted).
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let victims = qemu_pids(dir.path());
    assert!(!victims.is_empty(), "no VM found");
    for victim in victims {
        // SAFETY: kill(2) on a QEMU process this test's sandbox started.
        unsafe {
            libc::kill(victim, libc::SIGKILL);
        }
    }
    let r = run.await.expect("run task");
    assert_eq!(r.status, Status::WorkerLost, "{:?}", r.error);
    let ok = s.run(&req("hello")).await;
    assert_eq!(ok.status, Status::Ok, "after the kill: {:?}", ok.error);
}
