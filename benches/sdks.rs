//! The guest SDKs (#39) side by side: each SDK's conformance agent
//! (`make sdk-agents`) — its component size, the time to compile it the
//! first time (no component cache), and the p50/p90 of a fresh run of the
//! same conformance `hello` (`print hello`) through the library, against
//! the Rust agent's, with the part of it spent instantiating the component
//! (`usage.instantiate_ms`: the language runtime's start-up runs there).
//! Runs are interleaved language by language, one call each in turn,
//! because this VM's speed drifts between minutes.
//!
//! `cargo bench -p plimsoll --bench sdks` (or `make bench`).

use plimsoll::{ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::path::Path;
use std::time::{Duration, Instant};

const LANGUAGES: &[&str] = &["rust", "js", "python", "c", "go"];
const RUNS: usize = 300;

fn p(times: &mut [Duration], q: f64) -> f64 {
    times.sort();
    times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1e6
}

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().expect("tempdir");
    let sandbox = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            // No component cache: registering is the first run's compile.
            cache_dir: None,
            workspace_dir: plimsoll::config::default_work_dir(dir.path()),
            ..RuntimeConfig::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let mut rows = Vec::new();
    for lang in LANGUAGES {
        let path = repo.join(format!("target/sdk/{lang}/conformance.wasm"));
        let bytes = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; run `make sdk-agents`", path.display()));
        let t = Instant::now();
        sandbox.register(lang, &bytes).expect("register");
        rows.push((
            *lang,
            bytes.len(),
            t.elapsed(),
            Vec::with_capacity(RUNS),
            Vec::with_capacity(RUNS),
        ));
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let hello = |lang: &str| RunRequest {
        stdin: plimsoll::Blob::from("print 68656c6c6f\n"),
        ..RunRequest::component(lang)
    };
    // Warm-up: one run each, checked.
    for (lang, ..) in &rows {
        let r = rt.block_on(sandbox.run(&hello(lang)));
        assert_eq!(r.status, Status::Ok, "{lang}: {:?}", r.error);
        assert_eq!(r.stdout, "hello\n", "{lang}");
    }
    for _ in 0..RUNS {
        for (lang, _, _, times, inst) in rows.iter_mut() {
            let req = hello(lang);
            let t = Instant::now();
            let r = rt.block_on(sandbox.run(&req));
            times.push(t.elapsed());
            assert_eq!(r.status, Status::Ok);
            inst.push(Duration::from_secs_f64(r.usage.instantiate_ms / 1e3));
        }
    }
    let rust_p50 = p(&mut rows[0].3.clone(), 0.5);
    println!(
        "| language | component | first compile | hello p50 | p90 | vs Rust | of which instantiation (p50) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (lang, size, compile, times, inst) in rows.iter_mut() {
        let p50 = p(times, 0.5);
        let p90 = p(times, 0.9);
        println!(
            "| {lang} | {:.2} MB | {:.2} s | {:.0} µs | {:.0} µs | {:.1}× | {:.0} µs |",
            *size as f64 / 1e6,
            compile.as_secs_f64(),
            p50,
            p90,
            p50 / rust_p50,
            p(inst, 0.5)
        );
    }
}
