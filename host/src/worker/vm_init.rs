//! The worker as `/init` of a microVM (the `wasm+microvm` wrapper).
//!
//! The VM's initramfs holds only this static binary, two kernel modules and
//! the precompiled guest images. Started by the kernel as pid 1 and as root,
//! the worker prepares its own small world and then gives up root for good
//! before it reads a single frame:
//!
//! 1. mounts `/proc`, `/sys` and `/dev` (devtmpfs), and a size-capped tmpfs
//!    workspace at `/work`;
//! 2. loads `virtio_ring`, `virtio`, `virtio_mmio` and `virtio_console` (in
//!    the order of `/modules/order`), so that the virtio-serial port to the
//!    supervisor appears;
//! 3. opens that port (named `plimsoll.0` by the host) as its stdin and
//!    stdout, and the console as stderr;
//! 4. clears its environment, sets its rlimits, drops to
//!    `SANDBOX_GUEST_UID` (uid and gid, no supplementary groups, no
//!    capabilities) and sets no-new-privileges.
//!
//! Settings come from the kernel command line (`plimsoll.uid=`,
//! `plimsoll.work_bytes=`), which the supervisor writes. When the worker
//! returns, pid 1 exits, the kernel panics with `panic=-1`, and QEMU (run
//! with `-no-reboot`) exits: a VM serves exactly one worker life.

use crate::worker::observe::WORK_ROOT;
use std::ffi::CString;
use std::time::{Duration, Instant};

pub use crate::worker::protocol::PORT_NAME;

/// Whether this process is a VM's init: pid 1, started as `/init` (the
/// kernel's `rdinit`). Pid 1 alone is not enough: under gVisor the worker
/// is pid 1 of its own pid namespace too.
pub fn is_vm_init() -> bool {
    std::process::id() == 1 && std::env::args_os().next().is_some_and(|a| a == "/init")
}

fn cstr(s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{s:?} contains a NUL"))
}

fn mount(
    source: &str,
    target: &str,
    fstype: &str,
    flags: libc::c_ulong,
    data: &str,
) -> Result<(), String> {
    let _ = std::fs::create_dir_all(target);
    let (s, t, f, d) = (cstr(source)?, cstr(target)?, cstr(fstype)?, cstr(data)?);
    // SAFETY: every pointer is a valid NUL-terminated string that outlives
    // the call.
    let rc = unsafe { libc::mount(s.as_ptr(), t.as_ptr(), f.as_ptr(), flags, d.as_ptr().cast()) };
    if rc != 0 {
        return Err(format!(
            "mount {fstype} on {target}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn load_modules() -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let order = std::fs::read_to_string("/modules/order").unwrap_or_default();
    for name in order.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let path = format!("/modules/{name}");
        let f = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
        let params = cstr("")?;
        // SAFETY: finit_module reads the open file and the empty parameter
        // string; both outlive the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_finit_module,
                f.as_raw_fd(),
                params.as_ptr(),
                0 as libc::c_int,
            )
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EEXIST) {
                return Err(format!("loading {name}: {e}"));
            }
        }
    }
    Ok(())
}

/// The `plimsoll.KEY=` value of the kernel command line.
fn cmdline_value(cmdline: &str, key: &str) -> Option<String> {
    let prefix = format!("plimsoll.{key}=");
    cmdline
        .split_whitespace()
        .find_map(|t| t.strip_prefix(&prefix))
        .map(str::to_owned)
}

/// The device node of the port named [`PORT_NAME`]; the module binds its
/// devices asynchronously, so wait a little for it.
fn find_port(limit: Duration) -> Result<String, String> {
    let start = Instant::now();
    loop {
        if let Ok(rd) = std::fs::read_dir("/sys/class/virtio-ports") {
            for e in rd.flatten() {
                let name = std::fs::read_to_string(e.path().join("name")).unwrap_or_default();
                if name.trim() == PORT_NAME {
                    let dev = format!("/dev/{}", e.file_name().to_string_lossy());
                    if std::path::Path::new(&dev).exists() {
                        return Ok(dev);
                    }
                }
            }
        }
        if start.elapsed() > limit {
            return Err(format!(
                "no virtio-serial port named {PORT_NAME} appeared within {limit:?}"
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn open_onto(path: &str, fds: &[libc::c_int]) -> Result<(), String> {
    let p = cstr(path)?;
    // SAFETY: open with a valid path; the fd is ours.
    let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR | libc::O_NOCTTY) };
    if fd < 0 {
        return Err(format!("open {path}: {}", std::io::Error::last_os_error()));
    }
    for &target in fds {
        // SAFETY: dup2 of an fd we own onto a standard descriptor.
        if unsafe { libc::dup2(fd, target) } < 0 {
            return Err(format!("dup2 {path}: {}", std::io::Error::last_os_error()));
        }
    }
    if !fds.contains(&fd) {
        // SAFETY: closing the fd we opened above, now duplicated.
        unsafe { libc::close(fd) };
    }
    Ok(())
}

fn set_limit(resource: libc::c_int, value: u64) -> Result<(), String> {
    let r = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads the struct we own. The cast covers glibc's
    // and musl's different spellings of the resource type.
    #[allow(clippy::useless_conversion)]
    let rc = unsafe { libc::setrlimit(resource as _, &r) };
    if rc != 0 {
        return Err(format!(
            "setrlimit {resource}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn drop_privileges(uid: u32) -> Result<(), String> {
    // SAFETY: plain system calls on this process's credentials; every
    // result is checked.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setresgid(uid, uid, uid) != 0
            || libc::setresuid(uid, uid, uid) != 0
        {
            return Err(format!(
                "dropping to uid {uid}: {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(format!(
                "no-new-privileges: {}",
                std::io::Error::last_os_error()
            ));
        }
        if libc::getuid() != uid || libc::geteuid() != uid || libc::getgid() != uid {
            return Err("the uid did not change".into());
        }
    }
    Ok(())
}

/// Prepares the VM's world (see the module docs). On success stdin and
/// stdout are the port to the supervisor and the process runs as the guest
/// uid. Must run before any other thread exists.
pub fn prepare() -> Result<(), String> {
    use libc::{MS_NODEV as NODEV, MS_NOEXEC as NOEXEC, MS_NOSUID as NOSUID};
    mount("proc", "/proc", "proc", NOSUID | NODEV | NOEXEC, "")?;
    mount("sysfs", "/sys", "sysfs", NOSUID | NODEV | NOEXEC, "")?;
    mount("devtmpfs", "/dev", "devtmpfs", NOSUID | NOEXEC, "mode=0755")?;
    // The console first, so that a failure below can be read there.
    let _ = open_onto("/dev/console", &[2]);
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    let uid = cmdline_value(&cmdline, "uid")
        .and_then(|v| v.parse::<u32>().ok())
        .filter(|&u| u != 0)
        .ok_or("plimsoll.uid= is missing or 0 on the kernel command line")?;
    let work_bytes = cmdline_value(&cmdline, "work_bytes")
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or("plimsoll.work_bytes= is missing on the kernel command line")?;
    mount(
        "tmpfs",
        WORK_ROOT,
        "tmpfs",
        NOSUID | NODEV | NOEXEC,
        &format!("size={work_bytes},mode=0700,uid={uid},gid={uid}"),
    )?;
    load_modules()?;
    let port = find_port(Duration::from_secs(20))?;
    open_onto(&port, &[0, 1])?;
    // Nothing of the kernel's environment (HOME, TERM, unknown boot
    // parameters) reaches the worker.
    let keys: Vec<_> = std::env::vars_os().map(|(k, _)| k).collect();
    for k in keys {
        // SAFETY: no other thread exists yet (this runs first in main).
        unsafe { std::env::remove_var(k) };
    }
    set_limit(libc::RLIMIT_NOFILE as libc::c_int, 1024)?;
    set_limit(libc::RLIMIT_CORE as libc::c_int, 0)?;
    drop_privileges(uid)?;
    std::env::set_current_dir("/").map_err(|e| format!("chdir /: {e}"))?;
    Ok(())
}

/// Tells the supervisor why set-up failed, over the port if it can be
/// opened (the console is not read by anyone in normal operation).
pub fn report_failure(message: &str) {
    if let Ok(port) = find_port(Duration::from_secs(5))
        && let Ok(mut f) = std::fs::OpenOptions::new().write(true).open(port)
    {
        let _ = crate::worker::protocol::write_blocking(
            &mut f,
            &crate::worker::protocol::FromWorker::Failed {
                message: format!("microVM set-up failed: {message}"),
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::cmdline_value;

    #[test]
    fn reads_only_our_keys() {
        let c = "console=ttyS0 plimsoll.uid=61000 quiet plimsoll.work_bytes=1048576";
        assert_eq!(cmdline_value(c, "uid").as_deref(), Some("61000"));
        assert_eq!(cmdline_value(c, "work_bytes").as_deref(), Some("1048576"));
        assert_eq!(cmdline_value(c, "console"), None);
        assert_eq!(cmdline_value("xplimsoll.uid=1", "uid"), None);
    }
}
