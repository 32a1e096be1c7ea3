//! A small tmpfs mounted for one test, to make a file system fill up for
//! real. Mounting needs root (CI runs as root); without it `mount` returns
//! `None` and the caller skips, saying so.

use std::path::{Path, PathBuf};

/// A mounted tmpfs, lazily unmounted when dropped.
pub struct SmallTmpfs(PathBuf);

impl SmallTmpfs {
    /// Mounts a tmpfs with `options` (e.g. `size=256k`) at `at`, creating
    /// the directory. `None` when it cannot be mounted here.
    pub fn mount(at: &Path, options: &str) -> Option<SmallTmpfs> {
        std::fs::create_dir_all(at).ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|st| st.success());
        if !mounted {
            eprintln!("SKIP: cannot mount a small tmpfs here (needs root); CI runs as root");
            return None;
        }
        Some(SmallTmpfs(at.to_path_buf()))
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}
