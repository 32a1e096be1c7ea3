//! Interpreter guests through the whole library path: a fresh instance per
//! run (`1+1`), and an evaluation inside a kept session.
//!
//! `make bench` runs it after building the guests. Prints p50/p90/p99 over
//! single runs, then criterion's statistics.

mod support;

use criterion::{Criterion, criterion_group, criterion_main};
use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::time::Duration;
use support::{guests_dir, percentiles, print_percentiles, private_bytes};

/// The floor for an interpreter component: the same engine configuration
/// (fuel off), a bare WASI context with memory pipes, the broker import
/// stubbed to trap, `InstancePre`, one `eval`, drop. No workspace, envelope
/// or classification: what wasmtime itself costs for this component.
mod bare {
    use crate::support::BareState as State;
    use plimsoll::engine::SandboxEngine;
    use wasmtime::Store;
    use wasmtime::component::{Component, Instance, InstancePre, Linker};

    pub struct Bare {
        engine: SandboxEngine,
        pre: InstancePre<State>,
    }

    impl Bare {
        pub fn new(path: &std::path::Path) -> Bare {
            let keep = std::env::var("PLIMSOLL_KEEP_RESIDENT_MIB")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            let engine = SandboxEngine::new(plimsoll::EngineOptions {
                fuel: false,
                keep_resident_bytes: keep << 20,
                ..Default::default()
            })
            .expect("engine");
            let mut linker = Linker::new(engine.engine());
            wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("link");
            let component = Component::from_file(engine.engine(), path).expect("compile");
            // `1+1` never calls the broker: a stub that traps is enough.
            let mut broker = linker
                .instance("plimsoll:sandbox/broker@0.1.1")
                .expect("broker");
            for name in ["call", "call-origin"] {
                broker
                    .func_new(name, |_, _, _, _| {
                        Err(wasmtime::Error::msg("no broker in the floor"))
                    })
                    .expect("stub");
            }
            let pre = linker.instantiate_pre(&component).expect("pre");
            Bare { engine, pre }
        }

        /// A fresh store and instance, as every run gets.
        async fn start(&self) -> (Store<State>, Instance) {
            let mut store = Store::new(self.engine.engine(), State::new());
            store.set_epoch_deadline(u64::MAX / 2);
            let instance = self
                .pre
                .instantiate_async(&mut store)
                .await
                .expect("instantiate");
            (store, instance)
        }

        /// Calls `eval(code)` and checks it succeeded.
        async fn call(store: &mut Store<State>, instance: &Instance, code: &str) {
            let eval = instance
                .get_typed_func::<(&str,), (Result<String, String>,)>(&mut *store, "eval")
                .expect("eval export");
            let (r,) = eval.call_async(&mut *store, (code,)).await.expect("call");
            assert!(r.is_ok(), "{r:?}");
        }

        /// Instantiates, then times only the `eval` call (instantiation and
        /// teardown excluded): what a run costs once its instance is ready.
        pub async fn eval_only(&self, code: &str) -> std::time::Duration {
            let (mut store, instance) = self.start().await;
            let t = std::time::Instant::now();
            Self::call(&mut store, &instance, code).await;
            t.elapsed()
        }

        /// A whole run: instantiate, `eval`, drop.
        pub async fn eval(&self, code: &str) {
            let (mut store, instance) = self.start().await;
            Self::call(&mut store, &instance, code).await;
        }
    }
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
    let interpreters_for_floor = interpreters.clone();
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
    // Extra components to measure at the floor (experiments): a
    // colon-separated list of paths in PLIMSOLL_BENCH_FLOOR_EXTRA.
    let extra = std::env::var("PLIMSOLL_BENCH_FLOOR_EXTRA").unwrap_or_default();
    let floors = interpreters_for_floor
        .iter()
        .map(|(l, p)| (l.as_str().to_string(), p.clone()))
        .chain(
            extra
                .split(':')
                .filter(|p| !p.is_empty())
                .map(|p| (p.to_string(), std::path::PathBuf::from(p))),
        );
    for (label, path) in floors {
        let floor = bare::Bare::new(&path);
        percentiles(
            &format!("{label}_bare_wasmtime_floor_1+1"),
            1000,
            "ms",
            || rt.block_on(floor.eval("1+1")),
        );
        let mut only: Vec<_> = (0..1000)
            .map(|_| rt.block_on(floor.eval_only("1+1")))
            .collect();
        only.sort();
        println!(
            "{label}_bare_eval_only_1+1: p50 {:.3} ms",
            only[500].as_secs_f64() * 1e3
        );
    }
    if std::env::var_os("PLIMSOLL_BENCH_FLOOR_ONLY").is_some() {
        return;
    }
    for lang in langs {
        let req = RunRequest::code(lang, "1+1");
        let fresh = || {
            let r = rt.block_on(s.run(&req));
            assert_eq!(r.status, Status::Ok, "{r:?}");
        };
        // The same with 20 ms between runs, as a caller that does
        // something between runs (an agent loop) sees it: the background
        // refill of pre-instantiated instances (`warm_instances`) has
        // finished by the next run. Back to back (above), it competes with
        // the runs for the process's memory map.
        percentiles_apart(
            &format!("{}_fresh_instance_1+1_20ms_apart", lang.as_str()),
            fresh,
        );
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
        // The same evaluation after 20 ms of sleep each time: what an idle
        // gap costs on this machine by itself (caches and TLB after an idle
        // vCPU), with no instantiation, claim or teardown involved. Compare
        // it with `_fresh_instance_1+1_20ms_apart`.
        percentiles_apart(
            &format!("{}_session_eval_1+1_20ms_apart", lang.as_str()),
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

/// Times 300 calls of `f`, each after 20 ms of sleep (the timer covers
/// the call only), and prints their percentiles in ms.
fn percentiles_apart(label: &str, mut f: impl FnMut()) {
    let times = (0..300)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(20));
            let t = std::time::Instant::now();
            f();
            t.elapsed()
        })
        .collect();
    print_percentiles(label, "ms", times);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
