//! The VM's initramfs: the worker as `/init` with the shared libraries it
//! needs, the kernel modules, and the guest images this worker loads.
//!
//! Guarantees: only the named images and bundles go in (never the rest of
//! the image directory), each a regular file or directory, at most
//! [`MAX_BUNDLE_FILES`] entries of core images; no library outside the
//! usual library directories or with `.`/`..` in its path; the root is
//! not writable by everyone; an archive is an unnamed file, so nothing is
//! left behind however the supervisor ends, and one is rebuilt only when
//! its inputs change; archives named by supervisors that are gone are
//! swept.

use super::Microvm;
use crate::wrapper::initramfs::Archive;
use crate::wrapper::{Launch, WrapperError};
use std::path::{Path, PathBuf};

/// Initramfs archives kept for reuse (see [`Microvm::initramfs`]).
const KEPT_ARCHIVES: usize = 2;
/// Most entries of core images one VM carries.
const MAX_BUNDLE_FILES: usize = crate::scientific::MAX_DATA_FILES + 64;

/// The VM's `/init`: `PLIMSOLL_MICROVM_WORKER`, else the normal worker
/// itself; with the shared libraries it needs (none for a static build),
/// which the initramfs carries at the paths `ldd` names.
pub(super) fn vm_worker(
    worker_bin: &Path,
    chosen: Option<&Path>,
) -> Result<(PathBuf, Vec<PathBuf>), WrapperError> {
    let candidate = chosen.unwrap_or(worker_bin).to_path_buf();
    if !candidate.is_file() {
        return Err(WrapperError::Setup(format!(
            "the VM's worker {} does not exist: build it with `cargo build --release -p plimsoll -p plimsolld` (make build does) or set PLIMSOLL_MICROVM_WORKER",
            candidate.display()
        )));
    }
    let libs = crate::wrapper::shared_libraries(&candidate)?;
    for lib in &libs {
        if vm_path(lib).is_none() {
            return Err(WrapperError::Setup(format!(
                "{} needs {}, which cannot be placed in the VM",
                candidate.display(),
                lib.display()
            )));
        }
    }
    Ok((candidate, libs))
}

/// Where a host library goes in the initramfs: its absolute path, made
/// relative (`/lib64/ld-linux-x86-64.so.2` → `lib64/ld-linux-x86-64.so.2`),
/// with the directories to create first. `None` for a path with `.`, `..`
/// or empty components, or outside the usual library directories.
fn vm_path(lib: &Path) -> Option<(Vec<String>, String)> {
    let s = lib.to_str()?;
    let rel = s.strip_prefix('/')?;
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.len() < 2
        || parts
            .iter()
            .any(|p| p.is_empty() || *p == "." || *p == "..")
        || !matches!(parts[0], "lib" | "lib64" | "usr")
    {
        return None;
    }
    let dirs = (1..parts.len()).map(|i| parts[..i].join("/")).collect();
    Some((dirs, rel.to_owned()))
}

impl Microvm {
    /// The component images a VM is built with: `names` (the worker's
    /// images, file names in `dir`), each a regular file. Nothing else of
    /// the directory (earlier builds' images) goes into the VM.
    fn images(dir: &Path, names: &[String]) -> Result<Vec<(String, PathBuf, u64)>, WrapperError> {
        let mut v = Vec::with_capacity(names.len());
        for name in names {
            if name.contains('/') || name.starts_with('.') || !name.ends_with(".cwasm") {
                return Err(WrapperError::Setup(format!(
                    "microVM initramfs: {name:?} is not a component image's name"
                )));
            }
            let path = dir.join(name);
            let md = std::fs::metadata(&path)
                .map_err(|e| WrapperError::Setup(format!("{}: {e}", path.display())))?;
            if md.is_file() {
                v.push((name.clone(), path, md.len()));
            }
        }
        v.sort();
        v.dedup();
        Ok(v)
    }

    /// The files of the core-module bundles `names` (directories in
    /// `dir`): each directory and regular file below them, as its path
    /// relative to `dir`, its host path and its size (`None` for a
    /// directory). Links and other kinds are left out; at most
    /// [`MAX_BUNDLE_FILES`] entries.
    fn bundles(
        dir: &Path,
        names: &[String],
    ) -> Result<Vec<(String, PathBuf, Option<u64>)>, WrapperError> {
        let bad = |m: String| WrapperError::Setup(format!("microVM initramfs: {m}"));
        let mut out = Vec::new();
        let mut stack: Vec<String> = Vec::new();
        for n in names {
            if n.contains('/') || n.starts_with('.') || !n.ends_with(".core") {
                return Err(bad(format!("{n:?} is not a core image's name")));
            }
            stack.push(n.clone());
        }
        while let Some(rel) = stack.pop() {
            let host = dir.join(&rel);
            out.push((rel.clone(), host.clone(), None));
            let rd =
                std::fs::read_dir(&host).map_err(|e| bad(format!("{}: {e}", host.display())))?;
            let mut entries: Vec<_> = rd.flatten().collect();
            entries.sort_by_key(|e| e.file_name());
            for e in entries {
                let name = e.file_name().to_string_lossy().into_owned();
                let Ok(ft) = e.file_type() else { continue };
                let child = format!("{rel}/{name}");
                if ft.is_dir() {
                    stack.push(child);
                } else if ft.is_file() {
                    let len = e.metadata().map(|m| m.len()).unwrap_or(0);
                    out.push((child, e.path(), Some(len)));
                }
                if out.len() > MAX_BUNDLE_FILES {
                    return Err(bad(format!(
                        "{rel} holds more than {MAX_BUNDLE_FILES} entries"
                    )));
                }
            }
        }
        Ok(out)
    }

    /// Guest RAM for a VM booted from an archive of `archive_bytes`: the
    /// setting, plus twice the archive (the kernel holds the archive and
    /// the files it unpacks from it at once while it boots, and the guest
    /// images stay in its memory as files).
    pub(super) fn memory_for(&self, archive_bytes: u64) -> u64 {
        let extra = archive_bytes.div_ceil(1 << 20).saturating_mul(2);
        self.memory_mib.saturating_add(extra).min(65536)
    }

    /// The initramfs for `launch`, rebuilt only when its inputs changed
    /// (a new guest image, a rebuilt worker). The archives of the last
    /// [`KEPT_ARCHIVES`] sets of inputs are kept (a VM with a core image
    /// and one without alternate).
    pub(super) fn initramfs(&self, l: &Launch) -> Result<std::fs::File, WrapperError> {
        let err = |e: std::io::Error| WrapperError::Setup(format!("microVM initramfs: {e}"));
        let images = Microvm::images(&l.image_dir, &l.images)?;
        let bundles = Microvm::bundles(&l.image_dir, &l.bundles)?;
        let wmd = std::fs::metadata(&self.worker).map_err(err)?;
        let key = format!(
            "{}:{:?}:{}:{}",
            wmd.len(),
            wmd.modified().ok(),
            images
                .iter()
                .map(|(n, _, s)| format!("{n}={s}"))
                .collect::<Vec<_>>()
                .join(","),
            l.bundles.join(",")
        );
        let mut kept = self.initramfs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = kept.iter().position(|(k, _)| *k == key) {
            let hit = kept.remove(i);
            // A second descriptor of the same file: QEMU opens it anew
            // through /proc/self/fd, so the two share no offset.
            let opened = hit.1.try_clone().map_err(err);
            kept.push(hit);
            return opened;
        }
        // An unnamed file: nothing is left behind by a supervisor that ends,
        // however it ends; the space goes with the last descriptor.
        let file = tempfile::tempfile_in(&self.work).map_err(err)?;
        let mut a = Archive::new(std::io::BufWriter::new(file));
        // "." first: it sets the mode of the root itself, which the kernel
        // otherwise leaves writable by everyone.
        for d in [".", "proc", "sys", "dev", "work", "guests", "modules"] {
            a.dir(d, 0o755).map_err(err)?;
        }
        a.file_from("init", 0o755, &self.worker).map_err(err)?;
        let mut made = std::collections::BTreeSet::new();
        for lib in &self.worker_libs {
            let Some((dirs, rel)) = vm_path(lib) else {
                continue;
            };
            for d in dirs {
                if made.insert(d.clone()) {
                    a.dir(&d, 0o755).map_err(err)?;
                }
            }
            a.file_from(&rel, 0o555, lib).map_err(err)?;
        }
        let order = std::fs::read_to_string(self.modules.join("order")).map_err(err)?;
        a.file("modules/order", 0o444, order.as_bytes())
            .map_err(err)?;
        for m in order.lines().map(str::trim).filter(|m| !m.is_empty()) {
            if m.contains('/') || m.starts_with('.') {
                return Err(WrapperError::Setup(format!(
                    "modules/order names {m:?}, not a module file"
                )));
            }
            a.file_from(&format!("modules/{m}"), 0o444, &self.modules.join(m))
                .map_err(err)?;
        }
        for (name, src, _) in &images {
            a.file_from(&format!("guests/{name}"), 0o444, src)
                .map_err(err)?;
        }
        for (rel, src, len) in &bundles {
            match len {
                None => a.dir(&format!("guests/{rel}"), 0o555).map_err(err)?,
                Some(_) => a
                    .file_from(&format!("guests/{rel}"), 0o444, src)
                    .map_err(err)?,
            }
        }
        let file = a
            .finish()
            .map_err(err)?
            .into_inner()
            .map_err(|e| err(e.into_error()))?;
        // QEMU runs as the guest uid and opens the archive by its
        // descriptor's /proc link, which checks the file's mode.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o444))
            .map_err(err)?;
        let opened = file.try_clone().map_err(err)?;
        kept.push((key, file));
        while kept.len() > KEPT_ARCHIVES {
            kept.remove(0);
        }
        Ok(opened)
    }

    /// Removes the initramfs archives that supervisors before this one
    /// left under names (`initramfs-PID-N.cpio`, and `.tmp` halves) when
    /// the process that wrote them is gone. Archives are unnamed now.
    pub(super) fn sweep_named_archives(work: &Path) {
        let Ok(entries) = std::fs::read_dir(work) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("initramfs-"))
                .filter(|n| n.ends_with(".cpio") || n.ends_with(".tmp"))
                .and_then(|n| n.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            // SAFETY: kill with signal 0 only checks that the pid exists.
            let gone = pid > 0
                && unsafe { libc::kill(pid, 0) } != 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
            if gone {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Microvm;

    #[test]
    fn archives_named_by_dead_supervisors_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let dead = child.id();
        child.wait().expect("wait");
        let alive = std::process::id();
        let names = [
            format!("initramfs-{dead}-0.cpio"),
            format!("initramfs-{dead}-3.tmp"),
            format!("initramfs-{alive}-0.cpio"),
            format!("qemu-{dead}-0.log"),
            "initramfs-x-0.cpio".to_owned(),
        ];
        for n in &names {
            std::fs::write(dir.path().join(n), b"x").expect("write");
        }
        Microvm::sweep_named_archives(dir.path());
        let left: Vec<bool> = names.iter().map(|n| dir.path().join(n).exists()).collect();
        assert_eq!(left, [false, false, true, true, true]);
    }
}
