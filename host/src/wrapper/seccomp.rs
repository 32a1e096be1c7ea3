//! The worker's seccomp allow-list, built with `seccompiler`.
//!
//! Only the system calls a wasmtime worker makes are allowed; anything else
//! fails with `EPERM` (not a kill: a call we did not foresee must fail the
//! run cleanly, not lose the worker). No socket (only an `AF_UNIX` socket
//! pair, which tokio's signal driver makes to itself), no ptrace, no mount,
//! no bpf, no keyring, no process creation beyond threads.

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
        SYS_ioctl,
        SYS_futex,
        SYS_set_robust_list,
        SYS_get_robust_list,
        SYS_rseq,
        SYS_clone,
        SYS_clone3,
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

/// The compiled filter for this architecture.
pub fn worker_filter() -> Result<BpfProgram, String> {
    let mut rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
        allowed().into_iter().map(|n| (n, Vec::new())).collect();
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
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| e.to_string())
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
}
