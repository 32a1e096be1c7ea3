//! The worker's seccomp allow-list, built with `seccompiler`.
//!
//! Only the system calls a wasmtime worker makes are allowed; anything else
//! fails with `EPERM` (not a kill: a call we did not foresee must fail the
//! run cleanly, not lose the worker). No socket (only an `AF_UNIX` socket
//! pair, which tokio's signal driver makes to itself), no ptrace, no mount,
//! no bpf, no keyring, no process creation beyond threads:
//!
//! * `clone` only with `CLONE_THREAD` and without any `CLONE_NEW*` flag:
//!   threads, never a new process or a namespace (which would give an
//!   escaped guest more kernel surface); `unshare` and `setns` not at all;
//! * `clone3` answers `ENOSYS` (its flags live in memory, where a filter
//!   cannot look), so that libc falls back to `clone`;
//! * `ioctl` only for the requests the worker makes: `TCGETS` (is stderr a
//!   terminal), `FIONBIO`, `FIOCLEX`/`FIONCLEX` (the standard library's
//!   descriptor flags) and `PAGEMAP_SCAN` on its own `/proc/self/pagemap`
//!   (wasmtime's pooling allocator resets only the pages an instance
//!   wrote).

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};
use std::collections::BTreeMap;

/// The allowed system calls.
fn allowed() -> Vec<i64> {
    use libc::*;
    vec![
        SYS_read,
        SYS_write,
        SYS_readv,
        SYS_writev,
        SYS_pread64,
        SYS_pwrite64,
        SYS_preadv,
        SYS_pwritev,
        SYS_close,
        SYS_close_range,
        SYS_fstat,
        SYS_newfstatat,
        SYS_statx,
        SYS_lseek,
        SYS_mmap,
        SYS_munmap,
        SYS_mprotect,
        SYS_madvise,
        SYS_mremap,
        SYS_msync,
        SYS_mincore,
        SYS_brk,
        SYS_rt_sigaction,
        SYS_rt_sigprocmask,
        SYS_rt_sigreturn,
        SYS_sigaltstack,
        SYS_futex,
        SYS_set_robust_list,
        SYS_get_robust_list,
        SYS_rseq,
        SYS_exit,
        SYS_exit_group,
        SYS_getpid,
        SYS_gettid,
        SYS_getppid,
        SYS_getuid,
        SYS_geteuid,
        SYS_getgid,
        SYS_getegid,
        SYS_tgkill,
        SYS_sched_yield,
        SYS_sched_getaffinity,
        SYS_getrandom,
        SYS_clock_gettime,
        SYS_clock_getres,
        SYS_clock_nanosleep,
        SYS_nanosleep,
        SYS_gettimeofday,
        SYS_openat,
        SYS_open,
        SYS_dup,
        SYS_dup2,
        SYS_dup3,
        SYS_fcntl,
        SYS_flock,
        SYS_fsync,
        SYS_fdatasync,
        SYS_ftruncate,
        SYS_fallocate,
        SYS_getdents64,
        SYS_mkdirat,
        SYS_mkdir,
        SYS_unlinkat,
        SYS_unlink,
        SYS_rmdir,
        SYS_renameat,
        SYS_renameat2,
        SYS_rename,
        SYS_linkat,
        SYS_symlinkat,
        SYS_readlinkat,
        SYS_readlink,
        SYS_fchmod,
        SYS_fchmodat,
        SYS_utimensat,
        SYS_faccessat,
        SYS_faccessat2,
        SYS_access,
        SYS_statfs,
        SYS_fstatfs,
        SYS_getcwd,
        SYS_chdir,
        SYS_fchdir,
        SYS_uname,
        SYS_prlimit64,
        SYS_getrlimit,
        SYS_prctl,
        SYS_arch_prctl,
        SYS_set_tid_address,
        SYS_epoll_create1,
        SYS_epoll_ctl,
        SYS_epoll_wait,
        SYS_epoll_pwait,
        SYS_epoll_pwait2,
        SYS_eventfd2,
        SYS_pipe2,
        SYS_poll,
        SYS_ppoll,
        SYS_memfd_create,
        SYS_membarrier,
        SYS_getrusage,
        SYS_sysinfo,
        SYS_restart_syscall,
        SYS_sched_getparam,
        SYS_sched_getscheduler,
        SYS_timerfd_create,
        SYS_timerfd_settime,
        SYS_copy_file_range,
        SYS_sendfile,
        SYS_fadvise64,
        SYS_fchown,
        // bubblewrap installs the filter and then execs the worker; its
        // pid-1 reaper inside the pid namespace waits for it.
        SYS_execve,
        SYS_wait4,
        SYS_waitid,
    ]
}

/// `CLONE_NEW*`: the flags that make namespaces.
const CLONE_NAMESPACES: u64 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWCGROUP
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET) as u64
    | 0x80; // CLONE_NEWTIME

/// `PAGEMAP_SCAN`: `_IOWR('f', 16, struct pm_scan_arg)` (96 bytes).
pub const PAGEMAP_SCAN: u64 = (3 << 30) | (96 << 16) | ((b'f' as u64) << 8) | 16;

/// The `ioctl` requests the worker may make. (The casts are for musl, where
/// libc types these constants differently from glibc.)
#[allow(clippy::unnecessary_cast)]
pub const ALLOWED_IOCTLS: &[u64] = &[
    libc::TCGETS as u64,
    libc::FIONBIO as u64,
    libc::FIOCLEX as u64,
    libc::FIONCLEX as u64,
    PAGEMAP_SCAN,
];

fn arg_rule(
    arg: u8,
    len: seccompiler::SeccompCmpArgLen,
    op: seccompiler::SeccompCmpOp,
    value: u64,
) -> Result<seccompiler::SeccompRule, String> {
    seccompiler::SeccompRule::new(vec![
        seccompiler::SeccompCondition::new(arg, len, op, value).map_err(|e| e.to_string())?,
    ])
    .map_err(|e| e.to_string())
}

/// The compiled filter for this architecture.
pub fn worker_filter() -> Result<BpfProgram, String> {
    use seccompiler::{SeccompCmpArgLen, SeccompCmpOp};
    let mut rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
        allowed().into_iter().map(|n| (n, Vec::new())).collect();
    // Threads, never processes or namespaces.
    rules.insert(
        libc::SYS_clone,
        vec![arg_rule(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(CLONE_NAMESPACES | libc::CLONE_THREAD as u64),
            libc::CLONE_THREAD as u64,
        )?],
    );
    let ioctls = ALLOWED_IOCTLS
        .iter()
        .map(|&req| arg_rule(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, req))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(libc::SYS_ioctl, ioctls);
    // tokio's signal driver makes an AF_UNIX socket pair to itself; no
    // other socket of any kind is allowed.
    let unix_only = seccompiler::SeccompRule::new(vec![
        seccompiler::SeccompCondition::new(
            0,
            seccompiler::SeccompCmpArgLen::Dword,
            seccompiler::SeccompCmpOp::Eq,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| e.to_string())?,
    ])
    .map_err(|e| e.to_string())?;
    rules.insert(libc::SYS_socketpair, vec![unix_only]);
    let arch = if cfg!(target_arch = "x86_64") {
        TargetArch::x86_64
    } else if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else {
        return Err("seccomp filters are built for x86_64 and aarch64 only".into());
    };
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .map_err(|e| e.to_string())?;
    let program: BpfProgram = filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())?;
    Ok(with_clone3_enosys(program))
}

/// Puts `clone3 → ENOSYS` in front of `program` (seccompiler gives every
/// rule the same action). Its jumps are relative, so the program behind is
/// unchanged; on another architecture the prefix falls through to it.
fn with_clone3_enosys(program: BpfProgram) -> BpfProgram {
    use seccompiler::sock_filter;
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let arch: u32 = if cfg!(target_arch = "aarch64") {
        0xC000_00B7
    } else {
        0xC000_003E
    };
    let ins = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    let mut out = vec![
        // A = seccomp_data.arch
        ins(LD_W_ABS, 0, 0, 4),
        ins(JEQ_K, 0, 3, arch),
        // A = seccomp_data.nr
        ins(LD_W_ABS, 0, 0, 0),
        ins(JEQ_K, 0, 1, libc::SYS_clone3 as u32),
        ins(RET_K, 0, 0, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ];
    out.extend(program);
    out
}

/// The filter as the bytes bubblewrap reads from `--seccomp FD`: the
/// `struct sock_filter` array in native byte order.
pub fn worker_filter_bytes() -> Result<Vec<u8>, String> {
    let prog = worker_filter()?;
    let mut out = Vec::with_capacity(prog.len() * 8);
    for ins in prog {
        out.extend_from_slice(&ins.code.to_ne_bytes());
        out.push(ins.jt);
        out.push(ins.jf);
        out.extend_from_slice(&ins.k.to_ne_bytes());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_filter_compiles() {
        let bytes = super::worker_filter_bytes().expect("filter");
        assert!(!bytes.is_empty() && bytes.len().is_multiple_of(8));
    }

    /// The filter as the worker gets it, tried from inside: this test
    /// runs itself again as a child process that installs the filter on
    /// its own thread and reports what each probe got.
    #[test]
    fn inside_the_filter_namespaces_and_unlisted_ioctls_are_refused() {
        if std::env::var_os("PLIMSOLL_SECCOMP_PROBE").is_some() {
            return probe();
        }
        let exe = std::env::current_exe().expect("test binary");
        let out = std::process::Command::new(exe)
            .args([
                "--exact",
                "wrapper::seccomp::tests::inside_the_filter_namespaces_and_unlisted_ioctls_are_refused",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("PLIMSOLL_SECCOMP_PROBE", "1")
            .output()
            .expect("run the probe");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for want in [
            "unshare EPERM",
            "clone-newnet EPERM",
            "clone-newuser EPERM",
            "clone3 ENOSYS",
            "fork EPERM",
            "ioctl-tiocsti EPERM",
            "ioctl-tcgets allowed",
            "thread ok",
            "socket EPERM",
        ] {
            assert!(text.contains(want), "missing {want:?} in:\n{text}");
        }
    }

    fn probe() {
        let prog = super::worker_filter().expect("filter");
        seccompiler::apply_filter(&prog).expect("install the filter");
        let errno = |r: libc::c_long| {
            if r < 0 {
                match std::io::Error::last_os_error().raw_os_error() {
                    Some(libc::EPERM) => "EPERM",
                    Some(libc::ENOSYS) => "ENOSYS",
                    _ => "other error",
                }
            } else {
                "allowed"
            }
        };
        // SAFETY: each probe is a system call with arguments that are
        // harmless whether it succeeds or not (a refused clone never runs
        // a child; a successful one would exit at once, below).
        unsafe {
            let r = libc::unshare(libc::CLONE_NEWUSER) as libc::c_long;
            println!("unshare {}", errno(r));
            for (name, flag) in [
                ("newnet", libc::CLONE_NEWNET),
                ("newuser", libc::CLONE_NEWUSER),
            ] {
                let r = libc::syscall(
                    libc::SYS_clone,
                    (flag | libc::SIGCHLD) as libc::c_ulong,
                    0,
                    0,
                    0,
                    0,
                );
                if r == 0 {
                    libc::_exit(0);
                }
                println!("clone-{name} {}", errno(r));
            }
            let r = libc::syscall(libc::SYS_clone3, std::ptr::null::<u8>(), 0usize);
            println!("clone3 {}", errno(r));
            // fork(): clone with SIGCHLD and no CLONE_THREAD.
            let r = libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0, 0, 0, 0);
            if r == 0 {
                libc::_exit(0);
            }
            println!("fork {}", errno(r));
            let c = 0u8;
            let r = libc::ioctl(2, libc::TIOCSTI, &c) as libc::c_long;
            println!("ioctl-tiocsti {}", errno(r));
            let mut t: libc::termios = std::mem::zeroed();
            let r = libc::ioctl(2, libc::TCGETS, &mut t) as libc::c_long;
            // Not a terminal is fine: the filter let the call through.
            let got =
                if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOTTY) {
                    "allowed"
                } else {
                    errno(r)
                };
            println!("ioctl-tcgets {got}");
            let r = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0) as libc::c_long;
            println!("socket {}", errno(r));
        }
        // Threads still start (clone without namespace flags, or clone3's
        // ENOSYS fallback).
        let t = std::thread::spawn(|| 7).join().unwrap_or(0);
        println!("thread {}", if t == 7 { "ok" } else { "failed" });
    }
}
