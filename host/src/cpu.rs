//! Which CPU an engine compiles for.
//!
//! Cranelift tunes code to the CPU it runs on unless told otherwise, and
//! wasmtime refuses to load code that uses an instruction set extension
//! the loading CPU lacks. That is right for an engine that compiles and
//! runs on one machine, and wrong for the supervisor of a boundary whose
//! CPU is another one: a microVM under QEMU's software emulation has no
//! AVX-512, whatever the host has, so images compiled with the host's
//! features cannot load inside it.
//!
//! A [`CpuTarget`] other than [`CpuTarget::Native`] fixes the instruction
//! set to one of the x86-64 micro-architecture levels (the psABI's
//! `x86-64`, `x86-64-v2`, `x86-64-v3`): the engine compiles with exactly
//! those Cranelift settings, and it treats the CPU as having *only* them
//! when it checks a precompiled image, so an image built for a wider level
//! is refused even on a CPU that could run it. The level is part of the
//! engine's compatibility digest, so an image for one level is never
//! offered to an engine of another.

use serde::{Deserialize, Serialize};

/// The instruction set an engine compiles for and accepts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CpuTarget {
    /// Whatever the CPU this process runs on has (Cranelift's detection).
    #[default]
    #[serde(rename = "native")]
    Native,
    /// The x86-64 baseline: SSE2 and nothing newer.
    #[serde(rename = "x86-64")]
    X86_64,
    /// `x86-64-v2`: adds CMPXCHG16B, SSE3, SSSE3, SSE4.1, SSE4.2, POPCNT.
    #[serde(rename = "x86-64-v2")]
    X86_64V2,
    /// `x86-64-v3`: adds AVX, AVX2, FMA, BMI1, BMI2, LZCNT to v2.
    #[serde(rename = "x86-64-v3")]
    X86_64V3,
}

/// The `x86-64-v2` features as (Cranelift setting, CPU feature) pairs.
const V2: &[(&str, &str)] = &[
    ("has_cmpxchg16b", "cmpxchg16b"),
    ("has_sse3", "sse3"),
    ("has_ssse3", "ssse3"),
    ("has_sse41", "sse4.1"),
    ("has_sse42", "sse4.2"),
    ("has_popcnt", "popcnt"),
];

/// What `x86-64-v3` adds to v2.
const V3: &[(&str, &str)] = &[
    ("has_avx", "avx"),
    ("has_avx2", "avx2"),
    ("has_fma", "fma"),
    ("has_bmi1", "bmi1"),
    ("has_bmi2", "bmi2"),
    ("has_lzcnt", "lzcnt"),
];

impl CpuTarget {
    /// The name used in configuration and evidence (`native`, `x86-64-v2`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CpuTarget::Native => "native",
            CpuTarget::X86_64 => "x86-64",
            CpuTarget::X86_64V2 => "x86-64-v2",
            CpuTarget::X86_64V3 => "x86-64-v3",
        }
    }

    /// Parses [`CpuTarget::as_str`]'s names.
    pub fn parse(s: &str) -> Option<CpuTarget> {
        [
            CpuTarget::Native,
            CpuTarget::X86_64,
            CpuTarget::X86_64V2,
            CpuTarget::X86_64V3,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }

    /// The (Cranelift setting, CPU feature) pairs of a fixed level; `None`
    /// for [`CpuTarget::Native`].
    pub fn features(self) -> Option<Vec<(&'static str, &'static str)>> {
        match self {
            CpuTarget::Native => None,
            CpuTarget::X86_64 => Some(Vec::new()),
            CpuTarget::X86_64V2 => Some(V2.to_vec()),
            CpuTarget::X86_64V3 => Some(V2.iter().chain(V3).copied().collect()),
        }
    }

    /// The CPU features (`/proc/cpuinfo`-style names as wasmtime asks for
    /// them, e.g. `sse4.1`) this level needs that the CPU running this
    /// process lacks. Empty for [`CpuTarget::Native`].
    pub fn missing_here(self) -> Vec<&'static str> {
        self.features()
            .unwrap_or_default()
            .into_iter()
            .filter(|(_, f)| detect(f) != Some(true))
            .map(|(_, f)| f)
            .collect()
    }

    /// The widest fixed level, at most `cap`, that the CPU running this
    /// process has (at least [`CpuTarget::X86_64`]).
    pub fn highest_here(cap: CpuTarget) -> CpuTarget {
        let order = [CpuTarget::X86_64V3, CpuTarget::X86_64V2, CpuTarget::X86_64];
        order
            .into_iter()
            .skip_while(|t| *t != cap && cap != CpuTarget::Native)
            .find(|t| t.missing_here().is_empty())
            .unwrap_or(CpuTarget::X86_64)
    }

    /// The detection function an engine of this level hands wasmtime: the
    /// CPU's answer, narrowed to the level. Saying "no" to a feature the
    /// CPU has is always safe; saying "yes" to one it lacks never happens.
    pub(crate) fn detector(self) -> fn(&str) -> Option<bool> {
        match self {
            CpuTarget::Native => detect,
            CpuTarget::X86_64 => |f| within(CpuTarget::X86_64, f),
            CpuTarget::X86_64V2 => |f| within(CpuTarget::X86_64V2, f),
            CpuTarget::X86_64V3 => |f| within(CpuTarget::X86_64V3, f),
        }
    }
}

impl std::fmt::Display for CpuTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

fn within(level: CpuTarget, feature: &str) -> Option<bool> {
    let listed = level
        .features()
        .unwrap_or_default()
        .iter()
        .any(|(_, f)| *f == feature);
    if listed {
        detect(feature)
    } else {
        // Known to wasmtime but outside the level: not there, as far as
        // this engine is concerned.
        Some(false)
    }
}

/// The CPU's own answer for the x86-64 features wasmtime asks about;
/// `None` for a name this does not know (wasmtime then refuses the code).
#[cfg(target_arch = "x86_64")]
pub fn detect(feature: &str) -> Option<bool> {
    use std::arch::is_x86_feature_detected as has;
    Some(match feature {
        "cmpxchg16b" => has!("cmpxchg16b"),
        "sse3" => has!("sse3"),
        "ssse3" => has!("ssse3"),
        "sse4.1" => has!("sse4.1"),
        "sse4.2" => has!("sse4.2"),
        "popcnt" => has!("popcnt"),
        "avx" => has!("avx"),
        "avx2" => has!("avx2"),
        "fma" => has!("fma"),
        "bmi1" => has!("bmi1"),
        "bmi2" => has!("bmi2"),
        "lzcnt" => has!("lzcnt"),
        "avxvnni" => has!("avxvnni"),
        "avx512bitalg" => has!("avx512bitalg"),
        "avx512dq" => has!("avx512dq"),
        "avx512f" => has!("avx512f"),
        "avx512vl" => has!("avx512vl"),
        "avx512vbmi" => has!("avx512vbmi"),
        "avx512vnni" => has!("avx512vnni"),
        _ => return None,
    })
}

/// Outside x86-64 nothing is fixed; every level but `native` is refused
/// when an engine is built.
#[cfg(not(target_arch = "x86_64"))]
pub fn detect(_feature: &str) -> Option<bool> {
    None
}

/// The x86-64 features this CPU has, of those wasmtime can use (for the
/// smoke test's evidence).
pub fn detected_features() -> Vec<String> {
    [
        "cmpxchg16b",
        "sse3",
        "ssse3",
        "sse4.1",
        "sse4.2",
        "popcnt",
        "avx",
        "avx2",
        "fma",
        "bmi1",
        "bmi2",
        "lzcnt",
        "avxvnni",
        "avx512bitalg",
        "avx512dq",
        "avx512f",
        "avx512vl",
        "avx512vbmi",
        "avx512vnni",
    ]
    .into_iter()
    .filter(|f| detect(f) == Some(true))
    .map(str::to_owned)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [
            CpuTarget::Native,
            CpuTarget::X86_64,
            CpuTarget::X86_64V2,
            CpuTarget::X86_64V3,
        ] {
            assert_eq!(CpuTarget::parse(t.as_str()), Some(t));
            let json = serde_json::to_string(&t).expect("serialise");
            assert_eq!(json, format!("\"{}\"", t.as_str()));
        }
        assert_eq!(CpuTarget::parse("x86-64-v4"), None);
    }

    #[test]
    fn levels_nest_and_narrow_detection() {
        let v2 = CpuTarget::X86_64V2.features().expect("fixed");
        let v3 = CpuTarget::X86_64V3.features().expect("fixed");
        assert!(v2.iter().all(|f| v3.contains(f)));
        assert!(CpuTarget::X86_64.features().expect("fixed").is_empty());
        // Outside its level a detector says no, whatever the CPU has.
        let d = CpuTarget::X86_64V2.detector();
        assert_eq!(d("avx2"), Some(false));
        assert_eq!(d("avx512f"), Some(false));
        assert_eq!(d("sse4.1"), detect("sse4.1"));
        assert_eq!(CpuTarget::X86_64.detector()("sse4.1"), Some(false));
    }
}
