//! `wasm+gvisor`: the worker in gVisor's user-space kernel (`runsc`), tier
//! `kernel`.
//!
//! Each worker is one `runsc run` of a generated OCI bundle: a read-only
//! root holding only the worker, the shared libraries it loads and the guest
//! images; a size-capped tmpfs at `/work`; no network (`--network=none`);
//! an empty environment; uid and gid 61000; no capabilities;
//! no-new-privileges; its own pid, ipc, uts and mount namespaces. I/O is the
//! worker's stdin/stdout pipes, passed through by `runsc`.
//!
//! The platform is probed once per process: `kvm` when `/dev/kvm` exists
//! and a sandbox starts on it within 5 s, else `ptrace` (on PVM-backed
//! machines the KVM platform hangs). `PLIMSOLL_GVISOR_PLATFORM` forces one.

use super::{Launch, Prepared, Wrapper, WrapperError};
use crate::tier::Tier;
use crate::worker::observe::{Expectations, WORK_ROOT, host_kernel};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The gVisor wrapper.
pub struct Gvisor {
    binary: String,
    version: String,
    platform: String,
    platform_note: String,
    /// `runsc --root`: the state of this process's sandboxes.
    state: PathBuf,
    /// Bundles (one per worker) and the shared read-only rootfs.
    bundles: PathBuf,
}

/// Sandbox ids are unique per process (several providers may share a
/// `runsc --root`).
static SEQ: AtomicU64 = AtomicU64::new(0);

fn run_with_timeout(cmd: &mut std::process::Command, limit: Duration) -> Option<bool> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = std::time::Instant::now();
    loop {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st.success());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The CPU level guest images are compiled for in the gVisor tier.
///
/// gVisor's sentry shows the worker a filtered CPUID, not the host's: the
/// Debian build measured here hides AVX-VNNI (and it masks other recent
/// extensions on other CPUs), so images tuned natively to the host do not
/// load inside ("compilation setting \"has_avx_vnni\" is enabled, but not
/// available on the host"). So this tier compiles for at most
/// `x86-64-v3`, never more than the host has; the smoke test's `cpu`
/// check confirms from inside the sandbox that every feature is there.
/// Interpreter guests use no wasm SIMD to speak of, so the wider
/// extensions cost them nothing measurable (docs/benchmarks.md).
pub fn image_cpu() -> crate::cpu::CpuTarget {
    crate::cpu::CpuTarget::highest_here(crate::cpu::CpuTarget::X86_64V3)
}

impl Gvisor {
    /// Finds `runsc` (or `$PLIMSOLL_RUNSC`), reads its version and picks
    /// the platform. `work` holds the sandboxes' state and bundles.
    pub fn detect(work: &Path) -> Result<Gvisor, WrapperError> {
        let binary = std::env::var("PLIMSOLL_RUNSC").unwrap_or_else(|_| "runsc".into());
        let out = std::process::Command::new(&binary)
            .arg("--version")
            .output()
            .map_err(|e| WrapperError::Missing {
                tool: "gVisor (runsc)",
                package: "runsc",
                why: e.to_string(),
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .trim_start_matches("runsc version ")
            .to_owned();
        if !out.status.success() || version.is_empty() {
            return Err(WrapperError::Missing {
                tool: "gVisor (runsc)",
                package: "runsc",
                why: "`runsc --version` failed".into(),
            });
        }
        let state = work.join("runsc-state");
        let bundles = work.join("runsc-bundles");
        for d in [&state, &bundles] {
            std::fs::create_dir_all(d)
                .map_err(|e| WrapperError::Setup(format!("{}: {e}", d.display())))?;
        }
        let (platform, platform_note) = match std::env::var("PLIMSOLL_GVISOR_PLATFORM") {
            Ok(p) if p == "ptrace" || p == "kvm" || p == "systrap" => {
                (p.clone(), format!("{p} (PLIMSOLL_GVISOR_PLATFORM)"))
            }
            Ok(p) => {
                return Err(WrapperError::Setup(format!(
                    "PLIMSOLL_GVISOR_PLATFORM={:?}: expected ptrace, kvm or systrap",
                    p.chars().take(16).collect::<String>()
                )));
            }
            Err(_) if Path::new("/dev/kvm").exists() => {
                let probe = run_with_timeout(
                    std::process::Command::new(&binary)
                        .arg("--root")
                        .arg(&state)
                        .args(["--platform=kvm", "--network=none", "do", "true"]),
                    Duration::from_secs(5),
                );
                match probe {
                    Some(true) => ("kvm".into(), "kvm (probe passed)".into()),
                    Some(false) => ("ptrace".into(), "ptrace (the kvm probe failed)".into()),
                    None => (
                        "ptrace".into(),
                        "ptrace (the kvm probe hung for 5 s: /dev/kvm cannot run gVisor here)"
                            .into(),
                    ),
                }
            }
            Err(_) => ("ptrace".into(), "ptrace (no /dev/kvm)".into()),
        };
        Ok(Gvisor {
            binary,
            version,
            platform,
            platform_note,
            state,
            bundles,
        })
    }

    fn rootfs(&self, l: &Launch) -> Result<PathBuf, WrapperError> {
        let root = self.bundles.join("rootfs");
        let err = |e: std::io::Error| WrapperError::Setup(format!("gVisor rootfs: {e}"));
        // Mount points only: every file in it is empty, and it is mounted
        // read-only.
        for d in ["proc", "dev", "work", "guests", "tmp"] {
            std::fs::create_dir_all(root.join(d)).map_err(err)?;
        }
        let mut files = vec![PathBuf::from("/plimsoll-worker")];
        files.extend(l.libs.iter().cloned());
        for f in files {
            let p = root.join(f.strip_prefix("/").unwrap_or(&f));
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).map_err(err)?;
            }
            if !p.exists() {
                std::fs::write(&p, b"").map_err(err)?;
            }
        }
        Ok(root)
    }
}

impl Wrapper for Gvisor {
    fn name(&self) -> &'static str {
        "gvisor"
    }

    fn tier(&self) -> Tier {
        Tier::Kernel
    }

    fn version(&self) -> String {
        format!("runsc {}, platform {}", self.version, self.platform_note)
    }

    fn prepare(&self, l: &Launch) -> Result<Prepared, WrapperError> {
        let rootfs = self.rootfs(l)?;
        let id = format!(
            "plimsoll-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let bundle = self.bundles.join(&id);
        std::fs::create_dir_all(&bundle)
            .map_err(|e| WrapperError::Setup(format!("gVisor bundle: {e}")))?;
        let bind = |src: &Path, dst: &str| {
            serde_json::json!({"destination": dst, "type": "bind",
                "source": src.display().to_string(), "options": ["rbind", "ro"]})
        };
        let mut mounts = vec![
            serde_json::json!({"destination": "/proc", "type": "proc", "source": "proc"}),
            serde_json::json!({"destination": WORK_ROOT, "type": "tmpfs", "source": "tmpfs",
                "options": ["nosuid", "nodev", "mode=1777", format!("size={}", l.workspace_bytes)]}),
            bind(&l.worker_bin, "/plimsoll-worker"),
            bind(&l.image_dir, "/guests"),
            // runsc mounts a writable tmpfs at /tmp unless the spec has
            // one: give it an empty read-only one.
            serde_json::json!({"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
                "options": ["ro", "nosuid", "nodev", "mode=0555", "size=4096"]}),
        ];
        for lib in &l.libs {
            mounts.push(bind(lib, &lib.display().to_string()));
        }
        let config = serde_json::json!({
            "ociVersion": "1.0.0",
            "process": {
                "terminal": false,
                "user": {"uid": l.uid, "gid": l.uid},
                "args": ["/plimsoll-worker"],
                "env": [],
                "cwd": "/",
                "capabilities": {"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []},
                "rlimits": [
                    {"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024},
                    {"type": "RLIMIT_CORE", "hard": 0, "soft": 0}
                ],
                "noNewPrivileges": true
            },
            "root": {"path": rootfs.display().to_string(), "readonly": true},
            "hostname": "plimsoll",
            "mounts": mounts,
            "linux": {"namespaces": [
                {"type": "pid"}, {"type": "network"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}
            ]}
        });
        std::fs::write(bundle.join("config.json"), config.to_string())
            .map_err(|e| WrapperError::Setup(format!("gVisor bundle: {e}")))?;
        let mut c = tokio::process::Command::new(&self.binary);
        c.arg("--root").arg(&self.state);
        c.arg(format!("--platform={}", self.platform));
        c.args(["--network=none"]);
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            c.arg("--rootless");
        }
        c.arg("run").arg("--bundle").arg(&bundle).arg(&id);
        c.env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(super::worker_stderr())
            .kill_on_drop(true);
        let binary = self.binary.clone();
        let state = self.state.clone();
        let cleanup = move || {
            // Killing `runsc run` does not stop the sandbox it started:
            // delete it by id, off the async threads.
            std::thread::spawn(move || {
                let _ = std::process::Command::new(&binary)
                    .arg("--root")
                    .arg(&state)
                    .args(["delete", "--force", &id])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
                let _ = std::fs::remove_dir_all(&bundle);
            });
        };
        Ok(Prepared {
            command: c,
            keep: Vec::new(),
            cleanup: Some(Box::new(cleanup)),
            diagnostics: None,
        })
    }

    fn expectations(&self, uid: u32) -> Expectations {
        Expectations {
            uid,
            // gVisor's own kernel is the boundary; seccomp inside it is not
            // what protects the host (runsc filters its own sentry).
            seccomp: false,
            host_kernel: Some(host_kernel()),
            wrapper_env: &["HOME"],
            vm: None,
        }
    }
}
