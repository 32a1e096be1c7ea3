//! Interpreter guests through the whole library path: a fresh instance per
//! run (`1+1`), and an evaluation inside a kept session.
//!
//! `make bench` runs it after building the guests. Prints p50/p90/p99 over
//! single runs, then criterion's statistics.

use criterion::{Criterion, criterion_group, criterion_main};
use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn guests_dir() -> PathBuf {
    std::env::var_os("PLIMSOLL_GUESTS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests"))
}

fn percentiles(label: &str, n: usize, mut one: impl FnMut()) {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = Instant::now();
            one();
            t.elapsed()
        })
        .collect();
    times.sort();
    let p = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    println!(
        "{label}: p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms over {} runs",
        p(0.5).as_secs_f64() * 1e3,
        p(0.9).as_secs_f64() * 1e3,
        p(0.99).as_secs_f64() * 1e3,
        times.len()
    );
}

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
            in_session,
        );
        g.bench_function(format!("{}_session_eval_1+1", lang.as_str()), |b| {
            b.iter(in_session)
        });
        s.close_session("bench", &info.session_id);
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
