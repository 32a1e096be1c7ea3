//! The host's default directories (data, no configuration of its own):
//! where state and run workspaces live when nothing says otherwise. A leaf
//! module, so that the runtime and the sandbox can use the defaults
//! without importing the configuration layer above them.

use std::path::PathBuf;

/// Names the state directory (precompiled components, worker images,
/// quota counters).
pub const STATE_DIR_ENV: &str = "PLIMSOLL_STATE_DIR";
/// Names the directory run workspaces are created in.
pub const WORK_DIR_ENV: &str = "PLIMSOLL_WORK_DIR";

/// The default state directory: `$PLIMSOLL_STATE_DIR`, else
/// `$XDG_STATE_HOME/plimsoll`, else `~/.local/state/plimsoll`, else a
/// per-user directory under the system temp dir.
pub fn default_state_dir() -> PathBuf {
    if let Some(p) = std::env::var_os(STATE_DIR_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if let Some(p) = std::env::var_os("XDG_STATE_HOME").filter(|p| !p.is_empty()) {
        return PathBuf::from(p).join("plimsoll");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|p| !p.is_empty()) {
        return PathBuf::from(h).join(".local/state/plimsoll");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let uid = unsafe { libc::geteuid() };
    std::env::temp_dir().join(format!("plimsoll-{uid}"))
}

/// The default workspace root: `$PLIMSOLL_WORK_DIR`, else a per-user
/// directory on the `/dev/shm` tmpfs when there is one (workspaces are
/// small and short-lived; creating and removing them on a disk costs more
/// than running a small guest), else `<state>/work`.
pub fn default_work_dir(state: &std::path::Path) -> PathBuf {
    if let Some(p) = std::env::var_os(WORK_DIR_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        // The runtime checks that this directory is ours before using it.
        return shm.join(format!("plimsoll-{uid}")).join("work");
    }
    state.join("work")
}
