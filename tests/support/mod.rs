//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

pub mod conformance;
pub mod tmpfs;
pub mod upstream;

use plimsoll::envelope::Limits;
use plimsoll::{
    EngineOptions, Language, ProviderKind, RunRequest, RuntimeConfig, Sandbox, SandboxConfig,
};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Fuel enough that only a run's deadline ends a busy guest, however fast
/// the machine: the default envelope's 20 billion units last about 1.4 s of
/// a tight loop here, so a test that waits for a `timeout` must not race
/// the fuel. Tests of `cpu_exhausted` ask for less fuel in their limits.
pub const TEST_FUEL: u64 = 10_000_000_000_000;

/// The default envelope with [`TEST_FUEL`].
pub fn test_envelope() -> plimsoll::Envelope {
    plimsoll::Envelope {
        fuel: TEST_FUEL,
        ..plimsoll::Envelope::default()
    }
}

/// Where `make guests` leaves the guest components.
pub fn guests_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("PLIMSOLL_GUESTS_DIR") {
        return PathBuf::from(d);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests")
}

/// The bytes of guest `name`. Panics with how to build it when missing:
/// the guests are the project's own, so a missing one is a setup error,
/// not a reason to skip.
pub fn guest_bytes(name: &str) -> Vec<u8> {
    let p = guests_dir().join(format!("{name}.wasm"));
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "guest {} is missing ({e}); build the guests first with `make guests`",
            p.display()
        )
    })
}

/// The component cache shared by every test process: compiling the Python
/// interpreter takes seconds, loading it from the cache milliseconds.
pub fn shared_cache_dir() -> PathBuf {
    guests_dir().join("../test-cache")
}

/// The interpreter components `make guests` builds.
pub fn interpreters() -> Vec<(Language, PathBuf)> {
    let mut v = Vec::new();
    for (l, f, required) in [
        (Language::Python, "python.wasm", true),
        (Language::Javascript, "javascript.wasm", true),
        (Language::Shell, "shell.wasm", true),
    ] {
        let p = guests_dir().join(f);
        if !p.is_file() && !required {
            continue;
        }
        assert!(
            p.is_file(),
            "{} is missing; build the guests first with `make guests`",
            p.display()
        );
        v.push((l, p));
    }
    v
}

/// A sandbox with the `wasm` provider, its workspaces in `dir`, every
/// example guest registered under its name, and both interpreters.
pub fn sandbox_in(dir: &Path, tweak: impl FnOnce(&mut SandboxConfig)) -> Sandbox {
    try_sandbox_in(dir, tweak).expect("sandbox")
}

/// [`sandbox_in`], returning the error of a sandbox that cannot start.
#[allow(dead_code)]
pub fn try_sandbox_in(
    dir: &Path,
    tweak: impl FnOnce(&mut SandboxConfig),
) -> Result<Sandbox, plimsoll::SandboxError> {
    let mut cfg = SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            engine: EngineOptions {
                max_live_instances: 64,
                ..EngineOptions::default()
            },
            cache_dir: Some(shared_cache_dir()),
            workspace_dir: dir.join("work"),
            ..RuntimeConfig::default()
        },
        interpreters: interpreters(),
        envelope: test_envelope(),
        ..SandboxConfig::default()
    };
    tweak(&mut cfg);
    let sandbox = Sandbox::new(cfg)?;
    for name in EXAMPLES {
        sandbox
            .register(name, &guest_bytes(name))
            .expect("register guest");
    }
    Ok(sandbox)
}

/// Every example guest.
pub const EXAMPLES: &[&str] = &[
    "hello",
    "echo",
    "fail",
    "broker_caller",
    "spin",
    "membomb",
    "stackoverflow",
    "flood",
    "escape",
    "snoop",
    "socket",
    "bigartifact",
    "churn",
    "marker",
    "listwork",
    "http_caller",
];

/// Entries directly under `dir` (0 when it does not exist).
pub fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

/// This process's resident set size in bytes, from /proc.
pub fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .expect("VmRSS line")
}

/// One sandbox per test binary for the tests that need no special
/// configuration (its workspaces in a temporary directory).
pub fn shared() -> &'static Sandbox {
    static S: OnceLock<(tempfile::TempDir, Sandbox)> = OnceLock::new();
    &S.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = sandbox_in(dir.path(), |_| {});
        (dir, s)
    })
    .1
}

/// `r` with `limits`.
pub fn with_limits(mut r: RunRequest, limits: Limits) -> RunRequest {
    r.limits = limits;
    r
}

/// Waits (up to 60 s) until the sandbox holds a pre-instantiated instance.
#[allow(dead_code)]
pub async fn wait_for_warm(s: &plimsoll::Sandbox) {
    for _ in 0..600 {
        if s.runtime().warm_instances_ready() > 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no pre-instantiated instance became ready within 60 s");
}
