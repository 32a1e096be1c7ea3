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
//!
//! One concept per child: `detect` (finding QEMU, the image and the VM's
//! worker, and picking the accelerator), `accel` (what the host's KVM and
//! CPU allow), `archive` (the VM's initramfs: what goes in, archives kept
//! and swept). This module holds the wrapper, its settings, and the QEMU
//! command line a worker boots with.

mod accel;
mod archive;
mod detect;

use super::{Launch, Prepared, Wrapper, WrapperError};
use crate::tier::Tier;
use crate::worker::observe::{Expectations, VmExpectations, boot_id};
use crate::worker::protocol::PORT_NAME;
pub use accel::image_cpu;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Guest RAM in MiB (`PLIMSOLL_MICROVM_MEMORY_MIB`). QEMU touches only what
/// the guest uses.
const DEFAULT_MEMORY_MIB: u64 = 1024;
/// [`Wrapper::hang_grace`] under QEMU's software emulation.
const TCG_HANG_GRACE: std::time::Duration = std::time::Duration::from_secs(15);

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

/// Numbers QEMU's log files, per supervisor.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// `~/.cache/plimsoll/microvm`, or a system directory without a home.
fn default_image_dir() -> PathBuf {
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => PathBuf::from(h).join(".cache/plimsoll/microvm"),
        None => PathBuf::from("/var/cache/plimsoll/microvm"),
    }
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
