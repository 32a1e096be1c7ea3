//! The smoke test: what a worker observes of its own boundary, from inside
//! it, and how the supervisor judges that against what a wrapper promises.
//!
//! The observation is made by the worker process itself — the process that
//! will run guests — so it sees what a guest escaping the engine would see.
//! It is this daemon's observation, not a third party's attestation.

use crate::tier::EvidenceCheck;

/// Paths the worker tries to write; only the workspace root may succeed.
pub const WRITE_PROBES: &[&str] = &[
    "/", "/tmp", "/etc", "/usr", "/root", "/guests", "/dev/shm", "/var/tmp",
];

/// The workspace root inside every wrapper.
pub const WORK_ROOT: &str = "/work";

pub use crate::worker::protocol::Observation;

/// Most descriptors listed in an observation.
pub const MAX_LISTED_FDS: usize = 64;

fn open_fds() -> Vec<String> {
    let mut out = Vec::new();
    let pid = std::process::id();
    let Ok(rd) = std::fs::read_dir("/proc/self/fd") else {
        return out;
    };
    let mut entries: Vec<(u32, String)> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n: u32 = e.file_name().to_str()?.parse().ok()?;
            let target = std::fs::read_link(e.path())
                .map(|t| t.to_string_lossy().chars().take(160).collect())
                .unwrap_or_else(|_| "?".into());
            Some((n, target))
        })
        .collect();
    entries.sort();
    for (n, target) in entries {
        // The listing's own directory descriptor.
        if target == format!("/proc/{pid}/fd") || target == "/proc/self/fd" {
            continue;
        }
        if out.len() >= MAX_LISTED_FDS {
            out.push("…".into());
            break;
        }
        out.push(format!("{n} -> {target}"));
    }
    out
}

/// Whether descriptor `entry` (`N -> target`) is one a worker is expected
/// to hold: stdio, its engine's own (epoll/eventfd/timerfd, the socket
/// pair tokio's signal driver makes, pipes), its guest images, its own
/// page map, wasmtime's memory-image memfd.
pub fn expected_fd(entry: &str, pid: u32) -> bool {
    let Some((n, target)) = entry.split_once(" -> ") else {
        return false;
    };
    if matches!(n, "0" | "1" | "2") {
        return true;
    }
    target.starts_with("pipe:")
        || target.starts_with("socket:")
        || matches!(
            target,
            "anon_inode:[eventpoll]" | "anon_inode:[eventfd]" | "anon_inode:[timerfd]"
        )
        || (target.starts_with("/guests/") && target.ends_with(".cwasm"))
        || target == format!("/proc/{pid}/pagemap")
        || target.starts_with("/memfd:wasm-memory-image")
}

fn status_field(status: &str, name: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .map(|v| v.trim().to_owned())
}

// glibc and musl spell getrlimit's resource type differently.
#[cfg(target_env = "gnu")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type Resource = libc::c_int;

fn rlimit(resource: Resource) -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(resource, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(r.rlim_cur)
}

fn can_create_in(dir: &str) -> bool {
    let p = std::path::Path::new(dir).join(format!(".plimsoll-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&p);
            true
        }
        Err(_) => false,
    }
}

/// Observes this process's boundary.
pub fn observe() -> Observation {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mut net = Vec::new();
    let mut net_readable = false;
    if let Ok(dev) = std::fs::read_to_string("/proc/net/dev") {
        net_readable = true;
        for line in dev.lines().skip(2) {
            if let Some((name, _)) = line.split_once(':') {
                net.push(name.trim().to_owned());
            }
        }
    } else if let Ok(rd) = std::fs::read_dir("/sys/class/net") {
        net_readable = true;
        net.extend(rd.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned())));
    }
    net.sort();
    let writable = WRITE_PROBES
        .iter()
        .filter(|d| can_create_in(d))
        .map(|d| d.to_string())
        .collect();
    // Processes, not kernel threads: inside a VM the guest kernel's own
    // threads are listed too, and they have an empty command line. One we
    // cannot read counts as a process.
    let visible_pids = std::fs::read_dir("/proc")
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    e.file_name()
                        .to_string_lossy()
                        .bytes()
                        .all(|b| b.is_ascii_digit())
                })
                .filter(|e| std::fs::read(e.path().join("cmdline")).map_or(true, |c| !c.is_empty()))
                .count()
        })
        .unwrap_or(0);
    // SAFETY: uname writes into the struct we own.
    let kernel = unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) == 0 {
            let f = |s: &[libc::c_char]| {
                std::ffi::CStr::from_ptr(s.as_ptr())
                    .to_string_lossy()
                    .into_owned()
            };
            format!("{} {} {}", f(&u.sysname), f(&u.release), f(&u.version))
        } else {
            String::new()
        }
    };
    Observation {
        // SAFETY: getuid/getgid/getpid cannot fail.
        uid: unsafe { libc::getuid() },
        gid: unsafe { libc::getgid() },
        env_vars: std::env::vars_os()
            .map(|(k, _)| k.to_string_lossy().chars().take(64).collect())
            .collect(),
        net_interfaces: net,
        net_readable,
        writable,
        work_writable: can_create_in(WORK_ROOT),
        seccomp: status_field(&status, "Seccomp:").and_then(|v| v.parse().ok()),
        no_new_privs: status_field(&status, "NoNewPrivs:").and_then(|v| v.parse().ok()),
        cap_eff: status_field(&status, "CapEff:"),
        pid: std::process::id(),
        visible_pids,
        kernel,
        nofile: rlimit(libc::RLIMIT_NOFILE),
        fsize: rlimit(libc::RLIMIT_FSIZE),
        host_passwd_readable: std::fs::read_to_string("/etc/passwd")
            .is_ok_and(|s| s.contains("root:")),
        boot_id: boot_id(),
        cpu_hypervisor: std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
            c.lines()
                .filter(|l| l.starts_with("flags"))
                .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
        }),
        clocksources: std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/available_clocksource",
        )
        .map(|s| s.trim().chars().take(200).collect())
        .unwrap_or_default(),
        wall_clock_unix: unix_now(),
        cpu_features: crate::cpu::detected_features(),
        open_fds: open_fds(),
    }
}

/// The check that the boundary's CPU has every feature the guest images
/// were compiled for (`cpu`, the engine's level).
pub fn judge_cpu(o: &Observation, cpu: crate::cpu::CpuTarget) -> EvidenceCheck {
    let needed = cpu.features().unwrap_or_default();
    let missing: Vec<&str> = needed
        .iter()
        .map(|(_, f)| *f)
        .filter(|f| !o.cpu_features.iter().any(|have| have == f))
        .collect();
    let have = if o.cpu_features.is_empty() {
        "none of the extensions wasmtime uses".to_string()
    } else {
        o.cpu_features.join(" ")
    };
    EvidenceCheck {
        name: "cpu".into(),
        passed: missing.is_empty(),
        observed: if missing.is_empty() {
            format!("images compiled for CPU level {cpu}; the boundary's CPU has {have}")
        } else {
            format!(
                "images compiled for CPU level {cpu} need {}, which the boundary's CPU lacks (it has {have})",
                missing.join(" ")
            )
        },
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// This kernel's boot id (empty if it cannot be read).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().chars().take(64).collect())
        .unwrap_or_default()
}

/// [`boot_id`] read again after each run, through a descriptor opened
/// once: one `pread` per run instead of five system calls (each is dear
/// under a user-space kernel). The kernel answers a `pread` of this file
/// afresh every time.
pub fn boot_id_again() -> String {
    use std::os::unix::fs::FileExt;
    static FILE: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    let Some(f) = FILE
        .get_or_init(|| std::fs::File::open("/proc/sys/kernel/random/boot_id").ok())
        .as_ref()
    else {
        return boot_id();
    };
    let mut buf = [0u8; 64];
    match f.read_at(&mut buf, 0) {
        Ok(n) => String::from_utf8_lossy(&buf[..n]).trim().to_owned(),
        Err(_) => boot_id(),
    }
}

/// What a virtual-machine wrapper promises on top of the rest.
#[derive(Debug, Clone)]
pub struct VmExpectations {
    /// The host's boot id: the worker's kernel must have booted on its own.
    pub host_boot_id: String,
    /// `kvm` or `tcg`: the accelerator the wrapper chose.
    pub accelerator: &'static str,
    /// Why that accelerator (for the evidence).
    pub accelerator_note: String,
}

/// What a wrapper promises, to judge an observation against.
#[derive(Debug, Clone)]
pub struct Expectations {
    /// The uid the worker must run as.
    pub uid: u32,
    /// Whether a seccomp filter must be in force (bwrap installs ours;
    /// gVisor's own kernel is the boundary there).
    pub seccomp: bool,
    /// The host's own `uname -srv`; a user-space kernel must differ.
    pub host_kernel: Option<String>,
    /// Environment variable names the wrapper itself sets (bubblewrap sets
    /// `PWD`, runsc `HOME`); nothing of the host's environment may appear.
    pub wrapper_env: &'static [&'static str],
    /// For a VM: what its own kernel must show.
    pub vm: Option<VmExpectations>,
}

/// Judges `o`: one check per property, each with what was observed.
pub fn judge(o: &Observation, want: &Expectations) -> Vec<EvidenceCheck> {
    let mut checks = Vec::new();
    let mut check = |name: &str, passed: bool, observed: String| {
        checks.push(EvidenceCheck {
            name: name.into(),
            passed,
            observed,
        })
    };
    let only_lo = o.net_interfaces.iter().all(|n| n == "lo");
    check(
        "network_interfaces",
        only_lo,
        if o.net_interfaces.is_empty() {
            if o.net_readable {
                "none".into()
            } else {
                "none visible (no /proc/net/dev, no /sys/class/net)".into()
            }
        } else {
            o.net_interfaces.join(", ")
        },
    );
    check(
        "writable_paths",
        o.writable.is_empty() && o.work_writable,
        format!(
            "workspace {}; outside it: {}",
            if o.work_writable {
                "writable"
            } else {
                "NOT writable"
            },
            if o.writable.is_empty() {
                "none".to_string()
            } else {
                o.writable.join(", ")
            }
        ),
    );
    check(
        "environment",
        o.env_vars
            .iter()
            .all(|k| want.wrapper_env.contains(&k.as_str())),
        if o.env_vars.is_empty() {
            "empty".into()
        } else {
            format!("only {}", o.env_vars.join(", "))
        },
    );
    check(
        "uid",
        o.uid == want.uid && o.gid == want.uid,
        format!("uid {} gid {}", o.uid, o.gid),
    );
    check(
        "capabilities",
        o.cap_eff
            .as_deref()
            .is_none_or(|c| c.trim_start_matches('0').is_empty()),
        format!("CapEff {}", o.cap_eff.as_deref().unwrap_or("not reported")),
    );
    check(
        "pid_namespace",
        o.visible_pids <= 8,
        format!("pid {}, {} processes visible", o.pid, o.visible_pids),
    );
    check(
        "host_files",
        !o.host_passwd_readable,
        if o.host_passwd_readable {
            "the host's /etc/passwd is readable".into()
        } else {
            "no host /etc/passwd".into()
        },
    );
    if want.seccomp {
        check(
            "seccomp",
            o.seccomp == Some(2) && o.no_new_privs == Some(1),
            format!(
                "Seccomp {} NoNewPrivs {}",
                o.seccomp
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into()),
                o.no_new_privs
                    .map(|v| v.to_string())
                    .unwrap_or_else(|| "-".into())
            ),
        );
    }
    if let Some(host) = &want.host_kernel {
        check(
            "kernel",
            &o.kernel != host,
            format!("worker sees `{}`; host runs `{host}`", o.kernel),
        );
    }
    if let Some(vm) = &want.vm {
        let own_boot = !o.boot_id.is_empty() && o.boot_id != vm.host_boot_id;
        check(
            "virtual_machine",
            own_boot && o.cpu_hypervisor,
            format!(
                "{}; {}; kernel `{}`",
                if own_boot {
                    "a boot of its own (boot id differs from the host's)"
                } else {
                    "SAME boot as the host"
                },
                if o.cpu_hypervisor {
                    "the CPU reports a hypervisor"
                } else {
                    "NO hypervisor flag"
                },
                o.kernel
            ),
        );
        // Guests read the VM's wall clock; it must be the host's (from the
        // emulated RTC), not 1970.
        let skew = o.wall_clock_unix.abs_diff(unix_now());
        check(
            "clock",
            skew <= 120,
            format!("the VM's wall clock is {skew} s from the host's"),
        );
        // kvm-clock is offered only when KVM backs the vCPU.
        let kvm_seen = o.clocksources.split_whitespace().any(|c| c == "kvm-clock");
        check(
            "accelerator",
            kvm_seen == (vm.accelerator == "kvm"),
            format!(
                "{} (clock sources: {}); {}",
                if kvm_seen { "kvm" } else { "tcg" },
                if o.clocksources.is_empty() {
                    "none readable"
                } else {
                    &o.clocksources
                },
                vm.accelerator_note
            ),
        );
    }
    let unexpected: Vec<&str> = o
        .open_fds
        .iter()
        .filter(|e| !expected_fd(e, o.pid))
        .map(String::as_str)
        .collect();
    check(
        "descriptors",
        unexpected.is_empty(),
        if unexpected.is_empty() {
            format!(
                "{} open, all expected (stdio, the engine's own, guest images)",
                o.open_fds.len()
            )
        } else {
            format!(
                "{} open; unexpected: {}",
                o.open_fds.len(),
                unexpected.join(", ")
            )
        },
    );
    check(
        "limits",
        o.nofile.is_some_and(|n| n <= 4096),
        format!(
            "RLIMIT_NOFILE {}, RLIMIT_FSIZE {}",
            o.nofile
                .map(|v| v.to_string())
                .unwrap_or_else(|| "unlimited".into()),
            o.fsize
                .map(|v| v.to_string())
                .unwrap_or_else(|| "unlimited".into())
        ),
    );
    checks
}

/// The host's `uname -srv`, for comparison with a worker's.
pub fn host_kernel() -> String {
    observe_kernel()
}

fn observe_kernel() -> String {
    // SAFETY: uname writes into the struct we own.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        let f = |s: &[libc::c_char]| {
            std::ffi::CStr::from_ptr(s.as_ptr())
                .to_string_lossy()
                .into_owned()
        };
        format!("{} {} {}", f(&u.sysname), f(&u.release), f(&u.version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptors check refuses exactly the leaks the review found:
    /// another worker's seccomp memfd and a page map of another process.
    #[test]
    fn unexpected_descriptors_are_named() {
        for ok in [
            "0 -> pipe:[12]",
            "2 -> /dev/console",
            "4 -> anon_inode:[eventpoll]",
            "5 -> /guests/ab-cd.cwasm",
            "6 -> /proc/2/pagemap",
            "7 -> /memfd:wasm-memory-image (deleted)",
        ] {
            assert!(expected_fd(ok, 2), "{ok}");
        }
        for leak in [
            "15 -> /memfd:plimsoll-seccomp (deleted)",
            "9 -> /proc/4242/pagemap",
            "8 -> /etc/passwd",
            "10 -> /work",
            "garbage",
        ] {
            assert!(!expected_fd(leak, 2), "{leak}");
        }
        let o = Observation {
            pid: 2,
            open_fds: vec!["15 -> /memfd:plimsoll-seccomp (deleted)".into()],
            ..Observation::default()
        };
        let want = Expectations {
            uid: 0,
            seccomp: false,
            host_kernel: None,
            wrapper_env: &[],
            vm: None,
        };
        let check = judge(&o, &want)
            .into_iter()
            .find(|c| c.name == "descriptors")
            .expect("a descriptors check");
        assert!(!check.passed);
        assert!(
            check.observed.contains("plimsoll-seccomp"),
            "{}",
            check.observed
        );
    }
}
