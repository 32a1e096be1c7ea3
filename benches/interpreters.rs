//! Interpreter guests through the whole library path: a fresh instance per
//! run (`1+1`), and an evaluation inside a kept session.
//!
//! `make bench` runs it after building the guests. Prints p50/p90/p99 over
//! single runs, then criterion's statistics.

mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::time::Duration;
use support::{guests_dir, percentiles};

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut interpreters = Vec::new();
    for (l, f) in [
        (Language::Python, "python.wasm"),
        (Language::Javascript, "javascript.wasm"),
    ] {
        let p = guests_dir().join(f);
        if p.is_file() {
            interpreters.push((l, p));
        } else {
            println!(
                "SKIP {}: {} is missing (run `make guests`)",
                l.as_str(),
                p.display()
            );
        }
    }
    let langs: Vec<Language> = interpreters.iter().map(|(l, _)| *l).collect();
    let s = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            cache_dir: Some(guests_dir().join("../test-cache")),
            workspace_dir: plimsoll::config::default_work_dir(dir.path()),
            ..RuntimeConfig::default()
        },
        interpreters,
        sessions: plimsoll::session::SessionLimits {
            per_caller: 32,
            ..Default::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    let mut g = c.benchmark_group("interpreter");
    for lang in langs {
        let req = RunRequest::code(lang, "1+1");
        let fresh = || {
            let r = rt.block_on(s.run(&req));
            assert_eq!(r.status, Status::Ok, "{r:?}");
        };
        percentiles(
            &format!("{}_fresh_instance_1+1", lang.as_str()),
            1000,
            "ms",
            fresh,
        );
        g.bench_function(format!("{}_fresh_instance_1+1", lang.as_str()), |b| {
            b.iter(fresh)
        });

        let info = rt
            .block_on(s.open_session("bench", &RunRequest::code(lang, "")))
            .expect("session");
        let cell = RunRequest {
            code: Some("1+1".into()),
            ..RunRequest::default()
        };
        let in_session = || {
            let r = rt.block_on(s.run_in_session("bench", &info.session_id, &cell));
            assert_eq!(r.status, Status::Ok, "{r:?}");
        };
        percentiles(
            &format!("{}_session_eval_1+1", lang.as_str()),
            3000,
            "ms",
            in_session,
        );
        g.bench_function(format!("{}_session_eval_1+1", lang.as_str()), |b| {
            b.iter(in_session)
        });
        s.close_session("bench", &info.session_id);

        // Private memory of idle sessions: open 16, evaluate a cell in each,
        // and compare this process's private pages before and after.
        let before = private_bytes();
        let mut open = Vec::new();
        for _ in 0..16 {
            let info = rt
                .block_on(s.open_session("idle", &RunRequest::code(lang, "")))
                .expect("session");
            let r = rt.block_on(s.run_in_session("idle", &info.session_id, &cell));
            assert_eq!(r.status, Status::Ok);
            open.push(info);
        }
        let per = private_bytes().saturating_sub(before) / 16;
        println!(
            "{}_idle_session_private_memory: {:.2} MiB per session (16 sessions)",
            lang.as_str(),
            per as f64 / (1 << 20) as f64
        );
        for info in open {
            s.close_session("idle", &info.session_id);
        }
    }
    g.finish();
}

/// Private (not shared) resident bytes of this process, from
/// /proc/self/smaps_rollup: what one more session really costs, unlike RSS,
/// which counts the shared copy-on-write image in every mapping.
fn private_bytes() -> u64 {
    let text = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with("Private_Clean:") || l.starts_with("Private_Dirty:"))
        .filter_map(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .sum::<u64>()
        * 1024
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
