//! `wasm+microvm`: the worker as the `/init` of a QEMU `microvm` guest,
//! tier `vm`.
//!
//! Each worker is one VM: QEMU's `microvm` machine (no PCI, no firmware, no
//! network device) boots the kernel of Debian's own kernel package with an
//! initramfs that holds only `plimsoll-worker` (the same binary the other
//! boundaries run, with the shared libraries `ldd` names for it), the
//! `virtio_mmio`/`virtio_console` modules and the precompiled guest images.
//! The worker talks to the supervisor over one virtio-serial port, which
//! QEMU connects to its own stdin/stdout (`-chardev stdio`), so the pool
//! treats a VM like any other worker process.
//!
//! Around the VM: QEMU runs with its own seccomp sandbox (`-sandbox on`, no
//! spawning, no privilege changes) and, when the supervisor is root, as
//! `SANDBOX_GUEST_UID` with no supplementary groups (plus `kvm` under KVM);
//! the kernel and initramfs reach it as inherited file descriptors, so it
//! needs no access to the supervisor's directories.
//!
//! **Accelerator.** KVM when `/dev/kvm` can run a normal kernel. Where it
//! cannot — no `/dev/kvm`, no vmx/svm, or a PVM-backed `/dev/kvm`
//! (`kvm_pvm`, which cannot boot a stock kernel) — the provider refuses to
//! start, unless `PLIMSOLL_MICROVM_ALLOW_TCG=1` allows QEMU's software
//! emulation (TCG: the same boundary, far slower; about 3 s per boot). The
//! accelerator is named in the evidence and checked from inside the VM.
//!
//! The VM image (kernel and modules) is built by
//! `host/microvm/build-image.sh` into `PLIMSOLL_MICROVM_IMAGE` (default
//! `~/.cache/plimsoll/microvm`). The VM's worker is
//! `PLIMSOLL_MICROVM_WORKER` (a static build, say), else the normal worker
//! itself: one build of the host serves every boundary.

use super::{Launch, Prepared, Wrapper, WrapperError};
use crate::cpu::CpuTarget;
use crate::tier::Tier;
use crate::worker::observe::{Expectations, VmExpectations, boot_id};
use crate::worker::protocol::PORT_NAME;
use crate::wrapper::initramfs::Archive;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The oldest QEMU whose `microvm` machine has what we use.
const MIN_QEMU: (u32, u32) = (7, 0);
/// Guest RAM in MiB (`PLIMSOLL_MICROVM_MEMORY_MIB`). QEMU touches only what
/// the guest uses.
const DEFAULT_MEMORY_MIB: u64 = 1024;
/// [`Wrapper::hang_grace`] under QEMU's software emulation.
const TCG_HANG_GRACE: std::time::Duration = std::time::Duration::from_secs(15);
/// Initramfs archives kept for reuse (see [`Microvm::initramfs`]).
const KEPT_ARCHIVES: usize = 2;
/// Most entries of core images one VM carries.
const MAX_BUNDLE_FILES: usize = crate::scientific::MAX_DATA_FILES + 64;

/// The microVM wrapper.
pub struct Microvm {
    qemu: PathBuf,
    version: String,
    accel: &'static str,
    accel_note: String,
    kernel: PathBuf,
    modules: PathBuf,
    kernel_package: String,
    worker: PathBuf,
    /// The shared libraries the worker needs, placed at their own paths.
    worker_libs: Vec<PathBuf>,
    memory_mib: u64,
    /// Where initramfs archives are written (unnamed files) and QEMU's logs.
    work: PathBuf,
    /// The archives kept and the inputs each was built from, most
    /// recently used last.
    initramfs: Mutex<Vec<(String, std::fs::File)>>,
    kvm_gid: Option<u32>,
    /// The host's TSC frequency, told to a TCG guest.
    tsc_khz: Option<u64>,
}

/// The host's TSC frequency in kHz, measured against the monotonic clock
/// over 50 ms.
#[cfg(target_arch = "x86_64")]
fn host_tsc_khz() -> Option<u64> {
    let start = std::time::Instant::now();
    // SAFETY: rdtsc has no preconditions on x86_64.
    let a = unsafe { core::arch::x86_64::_rdtsc() };
    std::thread::sleep(std::time::Duration::from_millis(50));
    // SAFETY: as above.
    let b = unsafe { core::arch::x86_64::_rdtsc() };
    let ns = start.elapsed().as_nanos();
    let khz = u128::from(b.checked_sub(a)?) * 1_000_000 / ns.max(1);
    u64::try_from(khz).ok().filter(|&k| k > 100_000)
}

#[cfg(not(target_arch = "x86_64"))]
fn host_tsc_khz() -> Option<u64> {
    None
}

static SEQ: AtomicU64 = AtomicU64::new(0);

fn parse_version(text: &str) -> Option<(u32, u32, String)> {
    // "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)"
    let v = text
        .lines()
        .next()?
        .split("version ")
        .nth(1)?
        .split_whitespace()
        .next()?;
    let mut parts = v.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor, v.to_owned()))
}

/// Whether `/dev/kvm` can boot a normal kernel here, and if not, why.
fn kvm_usable() -> Result<(), String> {
    if !Path::new("/dev/kvm").exists() {
        return Err("there is no /dev/kvm".into());
    }
    if Path::new("/sys/module/kvm_pvm").exists() {
        return Err(
            "/dev/kvm here is PVM-backed (module kvm_pvm): it cannot boot a normal kernel".into(),
        );
    }
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let hw = cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    if !hw {
        return Err("the CPU has no hardware virtualisation (vmx/svm)".into());
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .map_err(|e| format!("cannot open /dev/kvm: {e}"))?;
    Ok(())
}

/// The CPU level guest images are compiled for in the VM tier.
///
/// The worker runs on the VM's vCPU, not on the host's CPU. Under TCG
/// that is QEMU's emulated `max` model, which lacks AVX-512 and other
/// recent extensions whatever the host has; images compiled with the
/// host's features would not load inside. So the supervisor compiles for
/// `x86-64-v2` under TCG (QEMU's TCG has every v2 feature) and for at most
/// `x86-64-v3` under KVM (`-cpu host` passes those through), never for
/// more than the host itself has. The smoke test's `cpu` check confirms
/// from inside the VM that its CPU has every feature the images use.
pub fn image_cpu() -> CpuTarget {
    let cap = if kvm_usable().is_ok() {
        CpuTarget::X86_64V3
    } else {
        CpuTarget::X86_64V2
    };
    CpuTarget::highest_here(cap)
}

fn kvm_group() -> Option<u32> {
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == "kvm").then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

fn default_image_dir() -> PathBuf {
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h).join(".cache/plimsoll/microvm"),
        None => PathBuf::from("/var/cache/plimsoll/microvm"),
    }
}

/// The VM's `/init`: `PLIMSOLL_MICROVM_WORKER`, else the normal worker
/// itself; with the shared libraries it needs (none for a static build),
/// which the initramfs carries at the paths `ldd` names.
fn vm_worker(
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
    let libs = super::shared_libraries(&candidate)?;
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

/// The microVM's settings, from the environment by default.
#[derive(Debug, Clone)]
pub struct MicrovmSettings {
    /// QEMU (`PLIMSOLL_QEMU`, default `qemu-system-x86_64`).
    pub qemu: PathBuf,
    /// The kernel and modules (`PLIMSOLL_MICROVM_IMAGE`).
    pub image: PathBuf,
    /// The VM's worker (`PLIMSOLL_MICROVM_WORKER`); `None` = the normal
    /// worker.
    pub worker: Option<PathBuf>,
    /// Whether software emulation may be used when KVM cannot
    /// (`PLIMSOLL_MICROVM_ALLOW_TCG=1`).
    pub allow_tcg: bool,
    /// Guest RAM in MiB (`PLIMSOLL_MICROVM_MEMORY_MIB`, 128–65536).
    pub memory_mib: u64,
}

impl MicrovmSettings {
    /// Reads the `PLIMSOLL_*` variables above.
    pub fn from_env() -> MicrovmSettings {
        let path = |k: &str| {
            std::env::var_os(k)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
        };
        MicrovmSettings {
            qemu: path("PLIMSOLL_QEMU").unwrap_or_else(|| "qemu-system-x86_64".into()),
            image: path("PLIMSOLL_MICROVM_IMAGE").unwrap_or_else(default_image_dir),
            worker: path("PLIMSOLL_MICROVM_WORKER"),
            allow_tcg: std::env::var("PLIMSOLL_MICROVM_ALLOW_TCG").is_ok_and(|v| v == "1"),
            memory_mib: std::env::var("PLIMSOLL_MICROVM_MEMORY_MIB")
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|&m| (128..=65536).contains(&m))
                .unwrap_or(DEFAULT_MEMORY_MIB),
        }
    }
}

impl Microvm {
    /// Finds QEMU, the VM image and the VM's worker, and picks the
    /// accelerator. `work` holds the initramfs archives; `worker_bin` is
    /// the normal worker.
    pub fn detect(
        work: &Path,
        worker_bin: &Path,
        settings: &MicrovmSettings,
    ) -> Result<Microvm, WrapperError> {
        let qemu = settings.qemu.clone();
        let out = std::process::Command::new(&qemu)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| WrapperError::Missing {
                tool: "QEMU (qemu-system-x86_64)",
                package: "qemu-system-x86",
                why: e.to_string(),
            })?;
        let text = String::from_utf8_lossy(&out.stdout);
        let Some((major, minor, version)) = parse_version(&text).filter(|_| out.status.success())
        else {
            return Err(WrapperError::Missing {
                tool: "QEMU (qemu-system-x86_64)",
                package: "qemu-system-x86",
                why: "`--version` did not name a version".into(),
            });
        };
        if (major, minor) < MIN_QEMU {
            return Err(WrapperError::TooOld {
                tool: "QEMU",
                found: version,
                need: "7.0",
            });
        }
        let image = settings.image.clone();
        // The uncompressed kernel boots through its PVH entry point without
        // decompressing itself (half the boot under TCG); the packaged
        // bzImage is the fallback.
        let kernel = [image.join("vmlinux"), image.join("vmlinuz")]
            .into_iter()
            .find(|k| k.is_file())
            .unwrap_or_else(|| image.join("vmlinuz"));
        let modules = image.join("modules");
        if !kernel.is_file() || !modules.join("order").is_file() {
            return Err(WrapperError::Setup(format!(
                "no microVM image in {}: build it with host/microvm/build-image.sh (make microvm-image)",
                image.display()
            )));
        }
        let kernel_package = std::fs::read_to_string(image.join("version"))
            .map(|s| s.trim().chars().take(80).collect())
            .unwrap_or_else(|_| "unknown kernel".into());
        let (worker, worker_libs) = vm_worker(worker_bin, settings.worker.as_deref())?;
        let (accel, accel_note) = match kvm_usable() {
            Ok(()) => ("kvm", "KVM (hardware virtualisation)".to_owned()),
            Err(why) if settings.allow_tcg => (
                "tcg",
                format!(
                    "TCG software emulation, allowed by PLIMSOLL_MICROVM_ALLOW_TCG=1, because {why}"
                ),
            ),
            Err(why) => {
                return Err(WrapperError::Setup(format!(
                    "wasm+microvm needs KVM, and {why}. QEMU's software emulation (TCG) gives the same boundary at a fraction of the speed (about 3 s per boot); it is used only when PLIMSOLL_MICROVM_ALLOW_TCG=1"
                )));
            }
        };
        let memory_mib = settings.memory_mib;
        let work = work.join("microvm");
        std::fs::create_dir_all(&work)
            .map_err(|e| WrapperError::Setup(format!("{}: {e}", work.display())))?;
        Microvm::sweep_named_archives(&work);
        Ok(Microvm {
            qemu,
            version,
            accel,
            accel_note,
            kernel,
            modules,
            kernel_package,
            worker,
            worker_libs,
            memory_mib,
            work,
            initramfs: Mutex::new(Vec::new()),
            kvm_gid: kvm_group(),
            tsc_khz: if accel == "tcg" { host_tsc_khz() } else { None },
        })
    }

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
    fn memory_for(&self, archive_bytes: u64) -> u64 {
        let extra = archive_bytes.div_ceil(1 << 20).saturating_mul(2);
        self.memory_mib.saturating_add(extra).min(65536)
    }

    /// The initramfs for `launch`, rebuilt only when its inputs changed
    /// (a new guest image, a rebuilt worker). The archives of the last
    /// [`KEPT_ARCHIVES`] sets of inputs are kept (a VM with a core image
    /// and one without alternate).
    fn initramfs(&self, l: &Launch) -> Result<std::fs::File, WrapperError> {
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
    fn sweep_named_archives(work: &Path) {
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

/// Opens `p` for QEMU to inherit (without close-on-exec).
fn inheritable(p: &Path) -> Result<OwnedFd, WrapperError> {
    let f =
        std::fs::File::open(p).map_err(|e| WrapperError::Setup(format!("{}: {e}", p.display())))?;
    inheritable_file(f)
}

/// `f`'s descriptor, for QEMU to inherit (without close-on-exec).
fn inheritable_file(f: std::fs::File) -> Result<OwnedFd, WrapperError> {
    let fd = OwnedFd::from(f);
    // SAFETY: clearing FD_CLOEXEC on a descriptor we own.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, 0) };
    if rc != 0 {
        return Err(WrapperError::Setup(format!(
            "fcntl: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(fd)
}

impl Wrapper for Microvm {
    fn name(&self) -> &'static str {
        "microvm"
    }

    fn tier(&self) -> Tier {
        Tier::Vm
    }

    fn version(&self) -> String {
        format!(
            "QEMU {} microvm, accelerator {}, kernel {}",
            self.version, self.accel, self.kernel_package
        )
    }

    /// Under TCG every instruction is emulated: a trapped guest's
    /// teardown that takes 0.3 s on an idle host took past 2 s on a loaded
    /// one (CI, with other VMs beside it), and the run was lost as hung.
    fn hang_grace(&self) -> std::time::Duration {
        if self.accel == "tcg" {
            TCG_HANG_GRACE
        } else {
            super::HANG_GRACE
        }
    }

    fn images_fixed_at_start(&self) -> bool {
        true
    }

    fn prepare(&self, l: &Launch) -> Result<Prepared, WrapperError> {
        let initramfs = self.initramfs(l)?;
        let archive_bytes = initramfs
            .metadata()
            .map(|m| m.len())
            .map_err(|e| WrapperError::Setup(format!("microVM initramfs: {e}")))?;
        let kernel_fd = inheritable(&self.kernel)?;
        let initrd_fd = inheritable_file(initramfs)?;
        let mut append = vec![
            "console=ttyS0".to_owned(),
            "quiet".into(),
            "panic=-1".into(),
            "reboot=t".into(),
            "rdinit=/init".into(),
            format!("plimsoll.uid={}", l.uid),
            format!("plimsoll.work_bytes={}", l.workspace_bytes),
        ];
        if let Some(khz) = self.tsc_khz {
            // Under TCG the guest reads the host's TSC but cannot calibrate
            // it (no PIT or HPET to compare with): without its frequency a
            // boot hangs in calibration, and with a wrong one the guest's
            // timers run tens of times slow. lpj is per jiffy at HZ=250.
            append.push(format!("tsc_early_khz={khz}"));
            append.push(format!("lpj={}", khz.saturating_mul(4)));
        }
        let mut c = tokio::process::Command::new(&self.qemu);
        c.arg("-M")
            // The RTC stays on: it is how the guest kernel learns the
            // wall-clock time (without it a guest's clock reads 1970).
            .arg("microvm,x-option-roms=off,isa-serial=on,rtc=on")
            .args(["-accel", self.accel])
            .args(["-cpu", if self.accel == "kvm" { "host" } else { "max" }])
            .args(["-smp", "1"])
            .arg("-m")
            .arg(format!("{}M", self.memory_for(archive_bytes)))
            .args(["-nodefaults", "-no-user-config", "-display", "none"])
            .arg("-no-reboot")
            // QEMU's own seccomp filter: no spawning, no privilege changes,
            // no obsolete system calls.
            .args([
                "-sandbox",
                "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny",
            ])
            .arg("-kernel")
            .arg(format!("/proc/self/fd/{}", kernel_fd.as_raw_fd()))
            .arg("-initrd")
            .arg(format!("/proc/self/fd/{}", initrd_fd.as_raw_fd()))
            .arg("-append")
            .arg(append.join(" "));
        // Debugging only: the guest's console on the supervisor's stderr
        // (QEMU then keeps the supervisor's uid, to be able to open it).
        let debug = std::env::var_os("PLIMSOLL_WORKER_STDERR").is_some();
        if debug {
            c.args(["-serial", "file:/dev/stderr"]);
        } else {
            c.args(["-serial", "null"]);
        }
        c.args(["-device", "virtio-serial-device,max_ports=2"])
            .args(["-chardev", "stdio,id=port,signal=off"])
            .arg("-device")
            .arg(format!("virtserialport,chardev=port,name={PORT_NAME}"));
        // QEMU's own complaints (a kernel it cannot load, a device it
        // refuses) go to a file the pool quotes when a VM fails to start.
        // The guest's console is not in it: that is guest-controlled and
        // unbounded.
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let log = self
            .work
            .join(format!("qemu-{}-{n}.log", std::process::id()));
        let stderr = if debug {
            Stdio::inherit()
        } else {
            std::fs::File::create(&log)
                .map(Stdio::from)
                .map_err(|e| WrapperError::Setup(format!("{}: {e}", log.display())))?
        };
        c.env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true);
        // SAFETY: geteuid cannot fail.
        let drop_to = (unsafe { libc::geteuid() } == 0 && !debug).then_some(l.uid);
        let groups: Vec<libc::gid_t> = match (self.accel, self.kvm_gid) {
            ("kvm", Some(g)) => vec![g],
            _ => Vec::new(),
        };
        // SAFETY: the closure runs in the child between fork and exec and
        // calls only async-signal-safe system calls.
        unsafe {
            c.pre_exec(move || {
                if let Some(uid) = drop_to
                    && (libc::setgroups(groups.len(), groups.as_ptr()) != 0
                        || libc::setresgid(uid, uid, uid) != 0
                        || libc::setresuid(uid, uid, uid) != 0)
                {
                    return Err(std::io::Error::last_os_error());
                }
                // A VM must not outlive its supervisor (bubblewrap has
                // --die-with-parent; QEMU has nothing of the kind). Set after
                // the uid change, which would clear it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let remove = log.clone();
        Ok(Prepared {
            command: c,
            keep: vec![kernel_fd, initrd_fd],
            cleanup: Some(Box::new(move || {
                let _ = std::fs::remove_file(remove);
            })),
            diagnostics: Some(log),
        })
    }

    fn expectations(&self, uid: u32) -> Expectations {
        Expectations {
            uid,
            // The VM's own kernel is the boundary; the worker inside runs
            // without a seccomp filter of ours.
            seccomp: false,
            host_kernel: None,
            wrapper_env: &[],
            vm: Some(VmExpectations {
                host_boot_id: boot_id(),
                accelerator: self.accel,
                accelerator_note: self.accel_note.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Microvm, parse_version};

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

    #[test]
    fn reads_qemu_versions() {
        let v = parse_version(
            "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright",
        );
        assert_eq!(v, Some((7, 2, "7.2.22".to_owned())));
        assert_eq!(parse_version("garbage"), None);
        assert_eq!(parse_version(""), None);
    }
}
