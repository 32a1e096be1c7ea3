//! Finding what a microVM needs before any worker starts: QEMU (7.0 or
//! newer), the VM image (kernel and modules), the VM's worker, and the
//! accelerator.
//!
//! Guarantees: the provider refuses to start, naming what is missing or
//! too old, rather than fall back; TCG is used only when KVM cannot boot a
//! normal kernel and `PLIMSOLL_MICROVM_ALLOW_TCG=1` allows it, and the
//! reason is kept for the evidence.

use super::Microvm;
use super::MicrovmSettings;
use super::accel::{host_tsc_khz, kvm_group, kvm_usable};
use super::archive::vm_worker;
use crate::wrapper::WrapperError;
use std::path::Path;
use std::process::Stdio;
use std::sync::Mutex;

/// The oldest QEMU whose `microvm` machine has what we use.
const MIN_QEMU: (u32, u32) = (7, 0);

/// QEMU's version from its `--version`: (major, minor, as written).
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
}

#[cfg(test)]
mod tests {
    use super::parse_version;

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
