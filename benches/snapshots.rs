//! Session snapshots (#37) through the library, in-process: a Python
//! session after `x = list(range(100_000))` — the snapshot, a resume, a
//! fork of 8 — against a fresh Python `1+1` run, interleaved call by call
//! in one run (this VM's speed drifts by tens of percent between
//! minutes), and the archive's size.
//!
//! `cargo bench -p plimsoll --bench snapshots` after `make guests`.
//! Prints p50/p90/p99 of each row and the ratios.

mod support;

use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::time::{Duration, Instant};
use support::{guests_dir, print_percentiles};

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let interpreters = vec![
        (Language::Python, guests_dir().join("python.wasm")),
        (Language::Javascript, guests_dir().join("javascript.wasm")),
    ];
    let s = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            cache_dir: Some(guests_dir().join("../test-cache")),
            workspace_dir: plimsoll::config::default_work_dir(dir.path()),
            ..RuntimeConfig::default()
        },
        interpreters,
        sessions: plimsoll::session::SessionLimits {
            per_caller: 64,
            total: 64,
            ..Default::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let caller = "bench";
    let open = RunRequest {
        language: Some(Language::Python),
        ..RunRequest::default()
    };
    let info = rt.block_on(s.open_session(caller, &open)).expect("open");
    let cell = RunRequest {
        code: Some("x = list(range(100_000))".into()),
        ..RunRequest::default()
    };
    let r = rt.block_on(s.run_in_session(caller, &info.session_id, &cell));
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let fresh = RunRequest::code(Language::Python, "1+1");
    // Warm-up: the base, the caches, the warm pool.
    let first = rt
        .block_on(s.snapshot_session(caller, &info.session_id))
        .expect("snapshot");
    println!(
        "snapshot_bytes after x = list(range(100_000)): {} bytes ({:.2} MB; target ≤ 2 MB)",
        first.archive.bytes.len(),
        first.archive.bytes.len() as f64 / 1e6
    );
    phases(&first.archive.bytes);
    for _ in 0..5 {
        let f = rt
            .block_on(s.resume_session(caller, first.archive.bytes.clone(), &RunRequest::default()))
            .expect("resume");
        s.close_session(caller, &f.session_id);
        let _ = rt.block_on(s.run(&fresh));
    }
    let n = 40;
    let (mut t_fresh, mut t_snap, mut t_resume, mut t_fork) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        std::thread::sleep(Duration::from_millis(20));
        let t = Instant::now();
        let r = rt.block_on(s.run(&fresh));
        t_fresh.push(t.elapsed());
        assert_eq!(r.status, Status::Ok);

        let t = Instant::now();
        let snap = rt
            .block_on(s.snapshot_session(caller, &info.session_id))
            .expect("snapshot");
        t_snap.push(t.elapsed());

        let t = Instant::now();
        let f = rt
            .block_on(s.resume_session(caller, snap.archive.bytes, &RunRequest::default()))
            .expect("resume");
        t_resume.push(t.elapsed());
        s.close_session(caller, &f.session_id);

        if i % 4 == 0 {
            let t = Instant::now();
            let forks = rt
                .block_on(s.fork_session(caller, &info.session_id, 8, &RunRequest::default()))
                .expect("fork");
            t_fork.push(t.elapsed());
            for f in forks {
                s.close_session(caller, &f.session_id);
            }
        }
    }
    let p50 = |v: &[Duration]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e3
    };
    let (f, sn, re, fk) = (p50(&t_fresh), p50(&t_snap), p50(&t_resume), p50(&t_fork));
    print_percentiles("python fresh 1+1 (20 ms apart)", "ms", t_fresh);
    print_percentiles("snapshot (target ≤ 10 ms)", "ms", t_snap);
    print_percentiles("resume (target ≤ 5 ms)", "ms", t_resume);
    print_percentiles("fork of 8 (target ≤ 40 ms)", "ms", t_fork);
    println!(
        "ratios to the fresh run of the same run: snapshot {:.1}x, resume {:.1}x, fork of 8 {:.1}x (fresh p50 {f:.3} ms)",
        sn / f,
        re / f,
        fk / f
    );
}

/// Where the archive's time goes: decoding it (digests, zstd) and
/// encoding it again.
fn phases(bytes: &[u8]) {
    let caps = plimsoll::snapshot::archive::Caps {
        total_bytes: 1 << 33,
        memory_bytes: 4 << 30,
        workspace_bytes: 1 << 30,
        workspace_entries: 1 << 20,
    };
    let t = Instant::now();
    let (_, image) = plimsoll::snapshot::archive::decode(bytes, &caps).expect("decode");
    let d = t.elapsed();
    let raw: usize = image
        .guests
        .iter()
        .filter_map(|g| g.instance.as_ref())
        .flat_map(|i| i.memories.iter().map(|m| m.data.len()))
        .sum();
    let t = Instant::now();
    let _ = plimsoll::snapshot::archive::encode(&image, 1).expect("encode");
    println!(
        "phases: decode {d:?}, encode {:?}, dirty bytes {raw}",
        t.elapsed()
    );
}
