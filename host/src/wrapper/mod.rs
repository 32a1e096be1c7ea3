//! Wrappers: the outer boundaries a worker runs in. Each one builds the
//! command that starts `plimsoll-worker` inside its boundary and says what
//! the smoke test must observe there. Isolation itself is delegated to the
//! wrapper tools; plimsoll decides what may run and proves what it got.
//!
//! * [`bwrap`]: bubblewrap namespaces + our seccomp allow-list, tier
//!   `container`.
//! * [`gvisor`]: gVisor's `runsc` (a user-space kernel), tier `kernel`.
//! * [`microvm`]: a QEMU `microvm` guest whose `/init` is the worker, tier
//!   `vm` (its initramfs is written by [`initramfs`]).

pub mod bwrap;
pub mod gvisor;
pub mod initramfs;
pub mod microvm;
pub mod seccomp;

use crate::tier::Tier;
use crate::worker::observe::Expectations;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

/// The uid guests' workers run as (`SANDBOX_GUEST_UID`).
pub const GUEST_UID_ENV: &str = "SANDBOX_GUEST_UID";
/// The default guest uid.
pub const DEFAULT_GUEST_UID: u32 = 61000;

/// What a wrapper needs to start one worker.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The `plimsoll-worker` binary on the host.
    pub worker_bin: PathBuf,
    /// Shared libraries the worker needs (host paths, mounted read-only at
    /// the same paths).
    pub libs: Vec<PathBuf>,
    /// The directory of precompiled guest images (mounted read-only at
    /// `/guests`).
    pub image_dir: PathBuf,
    /// The component images (file names in `image_dir`) this worker is
    /// started with. A wrapper that mounts `image_dir` shows every file in
    /// it anyway; a VM's initramfs carries only these, not the images of
    /// earlier builds that the directory still holds.
    pub images: Vec<String>,
    /// Core-module guests' directories in `image_dir` this worker must see
    /// (a wrapper that mounts `image_dir` shows them anyway; a VM's
    /// initramfs carries only these).
    pub bundles: Vec<String>,
    /// Size of the worker's tmpfs workspace root.
    pub workspace_bytes: u64,
    /// The uid (and gid) inside.
    pub uid: u32,
}

/// A command ready to spawn, and what must live until it has started.
pub struct Prepared {
    pub command: tokio::process::Command,
    /// File descriptors the child inherits (closed here after the spawn).
    pub keep: Vec<OwnedFd>,
    /// Runs after the worker is gone (e.g. `runsc delete`).
    pub cleanup: Option<Box<dyn FnOnce() + Send>>,
    /// A file where the wrapper tool writes its own errors; its tail is
    /// quoted when a worker fails to start.
    pub diagnostics: Option<PathBuf>,
}

/// The last `max` characters of a wrapper's diagnostics file, on one line.
pub fn diagnostics_tail(path: &std::path::Path, max: usize) -> String {
    use std::io::{Read, Seek, SeekFrom};
    // Only the tail is read: the file is written by a tool that a guest may
    // provoke into complaining, so its size is not ours to trust.
    let want = (max as u64).saturating_mul(4);
    let mut text = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if f.seek(SeekFrom::Start(len.saturating_sub(want))).is_ok() {
            let _ = f.take(want).read_to_end(&mut text);
        }
    }
    let s = String::from_utf8_lossy(&text);
    let s: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let skip = s.chars().count().saturating_sub(max);
    s.chars().skip(skip).collect()
}

/// Why a wrapper cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
pub enum WrapperError {
    #[error(
        "{tool} is not installed or cannot run ({why}); install it (Debian: apt-get install {package})"
    )]
    Missing {
        tool: &'static str,
        package: &'static str,
        why: String,
    },
    #[error("{tool} {found} is too old; {need} or newer is required")]
    TooOld {
        tool: &'static str,
        found: String,
        need: &'static str,
    },
    #[error("{0}")]
    Setup(String),
}

/// An outer boundary.
pub trait Wrapper: Send + Sync + 'static {
    /// `bwrap`, `gvisor`, `microvm`.
    fn name(&self) -> &'static str;
    /// The tier it gives once its smoke test passed.
    fn tier(&self) -> Tier;
    /// The wrapper tool's version, for the evidence.
    fn version(&self) -> String;
    /// The command that starts one worker inside the boundary.
    fn prepare(&self, launch: &Launch) -> Result<Prepared, WrapperError>;
    /// What the smoke test must observe inside.
    fn expectations(&self, uid: u32) -> Expectations;
    /// Whether a worker sees only the guest images that existed when it
    /// started (a VM's initramfs), rather than the live image directory.
    /// The pool then never hands such a worker a run of a newer image.
    fn images_fixed_at_start(&self) -> bool {
        false
    }
    /// How long past a run's wall time a silent worker is waited for
    /// before it is killed as hung: its own teardown (a trapped guest's
    /// memory freed, the result written back) must fit. [`HANG_GRACE`]
    /// unless the boundary is known to be slower.
    fn hang_grace(&self) -> std::time::Duration {
        HANG_GRACE
    }
}

/// The default [`Wrapper::hang_grace`].
pub const HANG_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Where a worker's stderr goes: nowhere, unless `PLIMSOLL_WORKER_STDERR`
/// is set (debugging). Guest output never goes there: the worker captures
/// it into the result.
pub fn worker_stderr() -> std::process::Stdio {
    if std::env::var_os("PLIMSOLL_WORKER_STDERR").is_some() {
        std::process::Stdio::inherit()
    } else {
        std::process::Stdio::null()
    }
}

/// Reads `SANDBOX_GUEST_UID` (default 61000) and refuses a uid that
/// `/etc/passwd` or `/etc/group` of the host already has: a worker must not
/// share an identity with anything real on the host.
pub fn guest_uid() -> Result<u32, WrapperError> {
    let uid = match std::env::var(GUEST_UID_ENV) {
        Ok(v) if !v.trim().is_empty() => v
            .trim()
            .parse::<u32>()
            .map_err(|_| WrapperError::Setup(format!("{GUEST_UID_ENV} must be a number")))?,
        _ => DEFAULT_GUEST_UID,
    };
    if uid == 0 {
        return Err(WrapperError::Setup(format!("{GUEST_UID_ENV} may not be 0")));
    }
    for file in ["/etc/passwd", "/etc/group"] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let taken = text.lines().any(|l| {
            l.split(':')
                .nth(2)
                .is_some_and(|id| id.trim() == uid.to_string())
        });
        if taken {
            return Err(WrapperError::Setup(format!(
                "{GUEST_UID_ENV}={uid} is already used in {file}; pick an id nothing on this host uses"
            )));
        }
    }
    Ok(uid)
}

/// The shared libraries `bin` loads (from `ldd`), so that a wrapper can
/// mount exactly those and nothing else of the host.
pub fn shared_libraries(bin: &std::path::Path) -> Result<Vec<PathBuf>, WrapperError> {
    let out = std::process::Command::new("ldd")
        .arg(bin)
        .output()
        .map_err(|e| WrapperError::Missing {
            tool: "ldd",
            package: "libc-bin",
            why: e.to_string(),
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    if text.contains("not a dynamic executable") || text.contains("statically linked") {
        return Ok(Vec::new());
    }
    let mut libs = Vec::new();
    for line in text.lines() {
        // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)" or
        // "/lib64/ld-linux-x86-64.so.2 (0x…)".
        let path = match line.split_once("=>") {
            Some((_, rhs)) => rhs.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path
            && p.starts_with('/')
        {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}
