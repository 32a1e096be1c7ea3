//! Per-run latency at each tier this build has, in one run: `1+1` in
//! JavaScript and Python in-process (`wasm`) and in bubblewrap workers
//! (`wasm+bwrap`), gVisor workers (`wasm+gvisor`) and QEMU microVMs
//! (`wasm+microvm`, under TCG where KVM cannot boot a kernel): in the
//! caller's own worker (reused, spaced and back to back), in a fresh
//! worker per run from a warm pool (`PLIMSOLL_WORKER_MAX_RUNS=1`), in a
//! cold worker per run, and what a user would do without plimsoll: start
//! `python3` per run, bare, under bubblewrap and under `runsc do`.
//!
//! `make bench-wrappers` (or `cargo bench -p plimsoll --bench wrappers`).

use plimsoll::provider::WorkerConfig;
use plimsoll::{Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig, Status};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn p50(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v.get(v.len() / 2)
        .map(|d| d.as_secs_f64() * 1e3)
        .unwrap_or(f64::NAN)
}

fn sandbox(provider: ProviderKind, warm: usize, max_runs: u32, dir: &Path) -> Sandbox {
    let guests = repo().join("target/guests");
    Sandbox::new(SandboxConfig {
        provider,
        interpreters: vec![
            (Language::Python, guests.join("python.wasm")),
            (Language::Javascript, guests.join("javascript.wasm")),
        ],
        runtime: RuntimeConfig {
            cache_dir: Some(repo().join("target/test-cache")),
            workspace_dir: dir.join("work"),
            ..RuntimeConfig::default()
        },
        workers: WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm,
            max: 16,
            image_dir: Some(repo().join("target/test-worker-images")),
            microvm: Some(plimsoll::wrapper::microvm::MicrovmSettings {
                // The bench measures whatever accelerator works here; the
                // row says which.
                allow_tcg: true,
                ..plimsoll::wrapper::microvm::MicrovmSettings::from_env()
            }),
            max_runs,
            ..WorkerConfig::default()
        },
        ..SandboxConfig::default()
    })
    .expect("sandbox")
}

/// `n` runs of `1+1`, each after `gap` (so that a warm pool is refilled).
fn runs(rt: &tokio::runtime::Runtime, s: &Sandbox, lang: Language, n: usize, gap: Duration) -> f64 {
    let req = RunRequest::code(lang, "1+1");
    let mut lat = Vec::new();
    for _ in 0..n {
        std::thread::sleep(gap);
        let t = Instant::now();
        let r = rt.block_on(s.run(&req));
        assert_eq!(r.status, Status::Ok, "{:?}", r.error);
        lat.push(t.elapsed());
    }
    p50(lat)
}

/// `n` evaluations of `1+1` in one session, each after `gap`.
fn evals(
    rt: &tokio::runtime::Runtime,
    s: &Sandbox,
    lang: Language,
    n: usize,
    gap: Duration,
) -> f64 {
    let open = RunRequest::code(lang, "");
    let info = rt
        .block_on(s.open_session("bench", &open))
        .expect("open a session");
    let req = RunRequest::code(lang, "1+1");
    let mut lat = Vec::new();
    for _ in 0..n {
        std::thread::sleep(gap);
        let t = Instant::now();
        let r = rt.block_on(s.run_in_session("bench", &info.session_id, &req));
        assert_eq!(r.status, Status::Ok, "{:?}", r.error);
        lat.push(t.elapsed());
    }
    s.close_session("bench", &info.session_id);
    p50(lat)
}

fn command(n: usize, argv: &[&str]) -> f64 {
    let mut lat = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        let out = std::process::Command::new(argv[0])
            .args(&argv[1..])
            .output()
            .expect("spawn");
        assert!(out.status.success(), "{argv:?}");
        lat.push(t.elapsed());
    }
    p50(lat)
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("wrappers: benchmark");
        return;
    }
    let n: usize = std::env::var("PLIMSOLL_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let tmp = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let gap = Duration::from_millis(150);
    let b2b = Duration::ZERO;
    let inproc = sandbox(ProviderKind::Wasm, 0, 1, tmp.path());
    let bound = sandbox(ProviderKind::WasmBwrap, 2, 1000, tmp.path());
    let fresh = sandbox(ProviderKind::WasmBwrap, 2, 1, tmp.path());
    let cold = sandbox(ProviderKind::WasmBwrap, 0, 1, tmp.path());
    let gvisor = sandbox(ProviderKind::WasmGvisor, 2, 1000, tmp.path());
    let gvisor_fresh = sandbox(ProviderKind::WasmGvisor, 2, 1, tmp.path());
    let gvisor_cold = sandbox(ProviderKind::WasmGvisor, 0, 1, tmp.path());
    // Warm-up.
    for s in [
        &inproc,
        &bound,
        &fresh,
        &cold,
        &gvisor,
        &gvisor_fresh,
        &gvisor_cold,
    ] {
        let _ = runs(&rt, s, Language::Javascript, 2, gap);
        let _ = runs(&rt, s, Language::Python, 2, gap);
    }
    println!("p50 per run, ms ({n} runs each; spaced = 150 ms between runs)");
    println!("| what | JavaScript `1+1` | Python `1+1` |");
    println!("|---|---:|---:|");
    let row = |what: &str, js: f64, py: f64| println!("| {what} | {js:.2} | {py:.2} |");
    let both = |s: &Sandbox, n: usize, gap: Duration| {
        (
            runs(&rt, s, Language::Javascript, n, gap),
            runs(&rt, s, Language::Python, n, gap),
        )
    };
    let sessions = |s: &Sandbox, n: usize, gap: Duration| {
        (
            evals(&rt, s, Language::Javascript, n, gap),
            evals(&rt, s, Language::Python, n, gap),
        )
    };
    let (ij, ip) = both(&inproc, n, gap);
    row("`wasm` (in-process, tier process), spaced", ij, ip);
    let (ibj, ibp) = both(&inproc, n, b2b);
    row("`wasm`, back to back", ibj, ibp);
    let (wj, wp) = both(&bound, n, gap);
    row(
        "`wasm+bwrap`, the caller's worker (tier container), spaced",
        wj,
        wp,
    );
    row("bwrap over in-process, spaced", wj - ij, wp - ip);
    let (wbj, wbp) = both(&bound, n, b2b);
    row("`wasm+bwrap`, the caller's worker, back to back", wbj, wbp);
    row("bwrap over in-process, back to back", wbj - ibj, wbp - ibp);
    let (sj, sp) = sessions(&inproc, n, gap);
    row("session evaluation, `wasm` (in-process)", sj, sp);
    let (sj, sp) = sessions(&bound, n, gap);
    row("session evaluation, `wasm+bwrap`", sj, sp);
    let (fj, fp) = both(&fresh, n, gap);
    row(
        "`wasm+bwrap`, a fresh warm worker per run (max runs 1)",
        fj,
        fp,
    );
    let (cj, cp) = both(&cold, n / 2, gap);
    row("`wasm+bwrap`, cold worker per run", cj, cp);
    let (gj, gp) = both(&gvisor, n, gap);
    row(
        "`wasm+gvisor`, the caller's worker (tier kernel), spaced",
        gj,
        gp,
    );
    row("gVisor over in-process, spaced", gj - ij, gp - ip);
    let (gbj, gbp) = both(&gvisor, n, b2b);
    row("`wasm+gvisor`, the caller's worker, back to back", gbj, gbp);
    row("gVisor over in-process, back to back", gbj - ibj, gbp - ibp);
    let (sj, sp) = sessions(&gvisor, n, gap);
    row("session evaluation, `wasm+gvisor`", sj, sp);
    let (gfj, gfp) = both(&gvisor_fresh, n, Duration::from_millis(400));
    row(
        "`wasm+gvisor`, a fresh warm worker per run (max runs 1, 400 ms apart)",
        gfj,
        gfp,
    );
    let (gcj, gcp) = both(&gvisor_cold, n / 4, gap);
    row("`wasm+gvisor`, cold worker per run", gcj, gcp);
    // `-S`: no site-packages, so that the host's `.pth` files do not count.
    let py = command(n / 2, &["python3", "-S", "-c", "print(1+1)"]);
    let bw = command(
        n / 2,
        &[
            "bwrap",
            "--unshare-all",
            "--die-with-parent",
            "--ro-bind",
            "/usr",
            "/usr",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/bin",
            "/bin",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "python3",
            "-S",
            "-c",
            "print(1+1)",
        ],
    );
    let rs = command(
        n / 4,
        &[
            "runsc",
            "--network=none",
            "do",
            "python3",
            "-S",
            "-c",
            "print(1+1)",
        ],
    );
    println!("| `python3 -S -c` per run (no sandbox) | – | {py:.2} |");
    println!("| `python3 -S -c` under bubblewrap per run | – | {bw:.2} |");
    println!("| `python3 -S -c` under `runsc do` per run | – | {rs:.2} |");
    drop((bound, fresh, cold, gvisor, gvisor_fresh, gvisor_cold));

    // The microVM last: its boots take seconds under TCG, so it gets few
    // runs, each after a gap long enough for the warm pool to refill.
    if std::env::var_os("PLIMSOLL_BENCH_SKIP_MICROVM").is_some() {
        return;
    }
    let vm = sandbox(ProviderKind::WasmMicrovm, 1, 1000, tmp.path());
    let accel = vm
        .isolation()
        .evidence
        .checks
        .iter()
        .find(|c| c.name == "accelerator")
        .map(|c| c.observed.split(' ').next().unwrap_or("?").to_owned())
        .unwrap_or_default();
    let _ = both(&vm, 2, gap);
    let (vj, vp) = both(&vm, n / 2, gap);
    row(
        &format!("`wasm+microvm` ({accel}), the caller's VM (tier vm), spaced"),
        vj,
        vp,
    );
    row("microVM over in-process, spaced", vj - ij, vp - ip);
    let (vbj, vbp) = both(&vm, n / 2, b2b);
    row(
        &format!("`wasm+microvm` ({accel}), the caller's VM, back to back"),
        vbj,
        vbp,
    );
    let (sj, sp) = sessions(&vm, n / 2, gap);
    row(
        &format!("session evaluation, `wasm+microvm` ({accel})"),
        sj,
        sp,
    );
    drop(vm);
    let vm_fresh = sandbox(ProviderKind::WasmMicrovm, 2, 1, tmp.path());
    let vn = (n / 8).max(3);
    let vgap = Duration::from_secs(15);
    let _ = runs(&rt, &vm_fresh, Language::Javascript, 1, vgap);
    let (vfj, vfp) = both(&vm_fresh, vn, vgap);
    row(
        &format!("`wasm+microvm` ({accel}), a fresh warm VM per run (max runs 1), {vn} runs"),
        vfj,
        vfp,
    );
    drop(vm_fresh);
    let vm_cold = sandbox(ProviderKind::WasmMicrovm, 0, 1, tmp.path());
    let (vcj, vcp) = both(&vm_cold, 3, gap);
    row(
        &format!("`wasm+microvm` ({accel}), cold VM per run, 3 runs"),
        vcj,
        vcp,
    );
}
