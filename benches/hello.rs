//! Fresh-instance runs of the `hello` guest through the whole library path
//! (workspace, WASI context, capture, envelope, classification), with the
//! pooling allocator and with wasmtime's default on-demand allocator, plus
//! throughput on all cores.
//!
//! Run with `make bench` (or `cargo bench -p plimsoll --bench hello` after
//! `make guests`). Figures are recorded in docs/benchmarks.md.

mod support;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use plimsoll::{
    EngineOptions, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status,
};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{guests_dir, percentiles};

fn sandbox(dir: &Path, pooling: bool, fuel: bool) -> Sandbox {
    let s = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            engine: EngineOptions {
                pooling,
                fuel,
                ..EngineOptions::default()
            },
            cache_dir: Some(dir.join("components")),
            // The library's default: a tmpfs when the machine has one.
            workspace_dir: plimsoll::config::default_work_dir(dir),
            ..RuntimeConfig::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let bytes = std::fs::read(guests_dir().join("hello.wasm"))
        .expect("hello.wasm: run `make guests` first");
    s.register("hello", &bytes).expect("register hello");
    s
}

/// The floor: the same engine configuration, a bare WASI context (memory
/// pipes, no workspace, no envelope, no classification), instantiate from
/// `InstancePre`, call `run`, drop.
mod bare {
    use crate::support::BareState as State;
    use plimsoll::engine::SandboxEngine;
    use wasmtime::Store;
    use wasmtime::component::{Component, Linker};
    use wasmtime_wasi::p2::bindings::CommandPre;

    pub struct Bare {
        engine: SandboxEngine,
        pre: CommandPre<State>,
    }

    impl Bare {
        pub fn new(bytes: &[u8]) -> Bare {
            let engine = SandboxEngine::new(plimsoll::EngineOptions {
                fuel: false,
                ..Default::default()
            })
            .expect("engine");
            let mut linker = Linker::new(engine.engine());
            wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("link");
            let component = Component::new(engine.engine(), bytes).expect("compile");
            let pre =
                CommandPre::new(linker.instantiate_pre(&component).expect("pre")).expect("command");
            Bare { engine, pre }
        }

        pub async fn run(&self) {
            let mut store = Store::new(self.engine.engine(), State::new());
            store.set_epoch_deadline(u64::MAX / 2);
            let cmd = self
                .pre
                .instantiate_async(&mut store)
                .await
                .expect("instantiate");
            let r = cmd.wasi_cli_run().call_run(&mut store).await.expect("run");
            assert!(r.is_ok());
        }
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let req = RunRequest::component("hello");

    let mut g = c.benchmark_group("hello_fresh_instance");
    g.throughput(Throughput::Elements(1));
    let bytes = std::fs::read(guests_dir().join("hello.wasm")).expect("hello.wasm");
    let floor = bare::Bare::new(&bytes);
    percentiles("bare_wasmtime_floor", 3000, "µs", || {
        rt.block_on(floor.run())
    });
    g.bench_function("bare_wasmtime_floor", |b| {
        b.iter(|| rt.block_on(floor.run()))
    });
    for (label, pooling, fuel) in [
        ("pooling_fuel", true, true),
        ("pooling_nofuel", true, false),
        ("ondemand_fuel", false, true),
    ] {
        let s = sandbox(dir.path(), pooling, fuel);
        percentiles(label, 3000, "µs", || {
            let r = rt.block_on(s.run(&req));
            assert_eq!(r.status, Status::Ok);
        });
        g.bench_function(label, |b| {
            b.iter(|| {
                let r = rt.block_on(s.run(&req));
                assert_eq!(r.status, Status::Ok);
            })
        });
    }
    g.finish();

    // Throughput on all cores: many runs in flight on a multi-thread
    // runtime with one worker per core.
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mrt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .expect("runtime");
    let s = Arc::new(sandbox(dir.path(), true, true));
    let mut g = c.benchmark_group("hello_all_cores");
    g.throughput(Throughput::Elements(1));
    g.bench_function(format!("{cores}_workers"), |b| {
        b.iter_custom(|iters| {
            let s = s.clone();
            mrt.block_on(async move {
                let started = Instant::now();
                let per_task = iters.div_ceil(cores as u64 * 4);
                let mut tasks = Vec::new();
                for _ in 0..cores * 4 {
                    let s = s.clone();
                    tasks.push(tokio::spawn(async move {
                        let req = RunRequest::component("hello");
                        for _ in 0..per_task {
                            let r = s.run(&req).await;
                            assert_eq!(r.status, Status::Ok);
                        }
                    }));
                }
                for t in tasks {
                    t.await.expect("task");
                }
                started
                    .elapsed()
                    .mul_f64(iters as f64 / (per_task * cores as u64 * 4) as f64)
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(4));
    targets = bench
}
criterion_main!(benches);
