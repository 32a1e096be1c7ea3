//! What the host's virtualisation allows: whether KVM can boot a normal
//! kernel, the `kvm` group QEMU keeps, the TSC frequency a TCG guest is
//! told, and the CPU level guest images are compiled for in this tier.
//!
//! Guarantees: KVM is used only when `/dev/kvm` exists, is not PVM-backed,
//! the CPU has vmx or svm, and the device opens; images are never compiled
//! for more than the VM's vCPU has (nor than the host itself has).

use crate::cpu::CpuTarget;
use std::path::Path;

/// The host's TSC frequency in kHz, measured against the monotonic clock
/// over 50 ms.
#[cfg(target_arch = "x86_64")]
pub(super) fn host_tsc_khz() -> Option<u64> {
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
pub(super) fn host_tsc_khz() -> Option<u64> {
    None
}

/// Whether `/dev/kvm` can boot a normal kernel here, and if not, why.
pub(super) fn kvm_usable() -> Result<(), String> {
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

/// The `kvm` group's id, which QEMU keeps under KVM after dropping root.
pub(super) fn kvm_group() -> Option<u32> {
    let groups = std::fs::read_to_string("/etc/group").ok()?;
    groups.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == "kvm").then_some(())?;
        f.nth(1)?.parse().ok()
    })
}
