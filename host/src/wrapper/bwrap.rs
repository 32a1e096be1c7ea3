//! `wasm+bwrap`: the worker in bubblewrap namespaces with our seccomp
//! allow-list. Tier `container`.
//!
//! Every namespace is unshared (user, pid, net, ipc, uts, cgroup where the
//! kernel allows), the user namespace maps the worker to the guest uid,
//! capabilities are dropped, the environment is cleared, the worker dies
//! with its supervisor and gets a new session (no terminal). Its file system
//! is a read-only root holding only the worker binary, the shared libraries
//! it loads, and the guest images; `/work` is a size-capped tmpfs; `/proc`
//! and a minimal `/dev` are bubblewrap's own.

use super::{Launch, Prepared, Wrapper, WrapperError};
use crate::tier::Tier;
use crate::worker::observe::{Expectations, WORK_ROOT};
use std::io::{Seek, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Stdio;

/// The bubblewrap wrapper.
pub struct Bwrap {
    binary: String,
    version: String,
    filter: Vec<u8>,
}

impl Bwrap {
    /// Finds `bwrap` (or `$PLIMSOLL_BWRAP`), checks its version (0.6 or
    /// newer, for `--size`), and compiles the seccomp filter.
    pub fn detect() -> Result<Bwrap, WrapperError> {
        let binary = std::env::var("PLIMSOLL_BWRAP").unwrap_or_else(|_| "bwrap".into());
        let out = std::process::Command::new(&binary)
            .arg("--version")
            .output()
            .map_err(|e| WrapperError::Missing {
                tool: "bubblewrap",
                package: "bubblewrap",
                why: e.to_string(),
            })?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let version = text.strip_prefix("bubblewrap ").unwrap_or(&text).to_owned();
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        if !out.status.success() || (major, minor) < (0, 6) {
            return Err(WrapperError::TooOld {
                tool: "bubblewrap",
                found: if version.is_empty() {
                    "(no version)".into()
                } else {
                    version
                },
                need: "0.6",
            });
        }
        let filter = super::seccomp::worker_filter_bytes().map_err(WrapperError::Setup)?;
        Ok(Bwrap {
            binary,
            version,
            filter,
        })
    }
}

/// The descriptor number bubblewrap is told to read the filter from. Each
/// spawn's own filter is `dup2`ed onto it in the child, between fork and
/// exec; the memfd itself is close-on-exec, so no other worker spawned
/// while it is open inherits it.
const SECCOMP_FD: libc::c_int = 3;

fn memfd_with(bytes: &[u8]) -> Result<OwnedFd, WrapperError> {
    let name = c"plimsoll-seccomp";
    // SAFETY: memfd_create with a valid C string. Close-on-exec: only the
    // child it is made for gets it, through `dup2` in `pre_exec`.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(WrapperError::Setup(format!(
            "memfd_create: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: fd is a fresh descriptor we own.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut f = std::fs::File::from(owned);
    f.write_all(bytes)
        .and_then(|_| f.rewind())
        .map_err(|e| WrapperError::Setup(format!("seccomp filter: {e}")))?;
    Ok(OwnedFd::from(f))
}

impl Wrapper for Bwrap {
    fn name(&self) -> &'static str {
        "bwrap"
    }

    fn tier(&self) -> Tier {
        Tier::Container
    }

    fn version(&self) -> String {
        format!("bubblewrap {}", self.version)
    }

    fn prepare(&self, l: &Launch) -> Result<Prepared, WrapperError> {
        let fd = memfd_with(&self.filter)?;
        let mut c = tokio::process::Command::new(&self.binary);
        let uid = l.uid.to_string();
        c.args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--uid",
            &uid,
            "--gid",
            &uid,
            "--hostname",
            "plimsoll",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            "--cap-drop",
            "ALL",
        ]);
        c.arg("--ro-bind")
            .arg(&l.worker_bin)
            .arg("/plimsoll-worker");
        for lib in &l.libs {
            c.arg("--ro-bind").arg(lib).arg(lib);
        }
        c.arg("--ro-bind").arg(&l.image_dir).arg("/guests");
        c.args(["--proc", "/proc", "--dev", "/dev"]);
        c.arg("--size")
            .arg(l.workspace_bytes.to_string())
            .args(["--tmpfs", WORK_ROOT]);
        // /dev is bubblewrap's own tmpfs (with /dev/shm on it): read-only
        // like the root.
        c.args(["--remount-ro", "/", "--remount-ro", "/dev"]);
        c.arg("--seccomp").arg(SECCOMP_FD.to_string());
        c.args(["--chdir", "/", "/plimsoll-worker"]);
        c.env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(super::worker_stderr())
            .kill_on_drop(true);
        let filter_fd = fd.as_raw_fd();
        // SAFETY: dup2, fcntl and setrlimit are async-signal-safe; they only
        // touch the child's own descriptor table and limits before exec.
        unsafe {
            c.pre_exec(move || {
                if filter_fd == SECCOMP_FD {
                    // Already there: just let it survive exec.
                    if libc::fcntl(SECCOMP_FD, libc::F_SETFD, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                } else if libc::dup2(filter_fd, SECCOMP_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let set = |res, v: u64| {
                    let r = libc::rlimit {
                        rlim_cur: v,
                        rlim_max: v,
                    };
                    libc::setrlimit(res, &r);
                };
                set(libc::RLIMIT_NOFILE, 1024);
                set(libc::RLIMIT_CORE, 0);
                Ok(())
            });
        }
        Ok(Prepared {
            command: c,
            keep: vec![fd],
            cleanup: None,
            diagnostics: None,
        })
    }

    fn expectations(&self, uid: u32) -> Expectations {
        Expectations {
            uid,
            seccomp: true,
            host_kernel: None,
            wrapper_env: &["PWD"],
            vm: None,
        }
    }
}
