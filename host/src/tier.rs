//! Isolation tiers and the evidence behind a claimed tier.
//!
//! A tier names the strongest boundary between the guest and the host
//! process's own memory, as this process observed it. It is reported on every
//! result so that a caller never has to guess what ran its code.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The boundary that runs a guest, weakest first.
///
/// The order is meaningful: `Process < Container < Kernel < Vm`, and a
/// caller's `minimum_isolation` floor is compared with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// wasmtime inside the host process: an engine escape lands in the host.
    Process,
    /// A worker process inside Linux namespaces plus seccomp (bubblewrap).
    Container,
    /// A worker inside a user-space kernel (gVisor).
    Kernel,
    /// A worker inside a virtual machine with its own kernel.
    Vm,
}

impl Tier {
    /// Every tier, weakest first.
    pub const ALL: [Tier; 4] = [Tier::Process, Tier::Container, Tier::Kernel, Tier::Vm];

    /// The stable lower-case name used in JSON, flags and environment
    /// variables.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Process => "process",
            Tier::Container => "container",
            Tier::Kernel => "kernel",
            Tier::Vm => "vm",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a tier name that is not one of the four.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown isolation tier {0:?}: expected one of process, container, kernel, vm")]
pub struct UnknownTier(pub String);

impl FromStr for Tier {
    type Err = UnknownTier;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "process" => Ok(Tier::Process),
            "container" => Ok(Tier::Container),
            "kernel" => Ok(Tier::Kernel),
            "vm" => Ok(Tier::Vm),
            _ => Err(UnknownTier(s.chars().take(64).collect())),
        }
    }
}

/// One observation that supports (or fails to support) a tier claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EvidenceCheck {
    /// What was checked, e.g. `network_interfaces`.
    pub name: String,
    /// Whether the observation matched what the tier requires.
    pub passed: bool,
    /// What was observed, in a few words.
    pub observed: String,
}

/// What a provider observed about its boundary, and when.
///
/// This is the daemon's own observation, not an attestation by a third
/// party: a compromised host could lie here. It is still worth reporting,
/// because it is what this process actually checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Evidence {
    /// Unix time (seconds) of the observation.
    pub observed_at_unix: u64,
    /// A one-line summary a person can read.
    pub summary: String,
    /// The individual checks.
    pub checks: Vec<EvidenceCheck>,
    /// For a run in a worker behind an outer boundary: which worker, for
    /// whom, and how many runs it had served before this one. Absent for
    /// in-process runs and for a provider's own isolation report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<WorkerUse>,
}

/// Which worker ran a run, so that reuse is visible rather than hidden.
///
/// A worker serves the runs of exactly one caller: two results with the
/// same `worker_id` always have the same `caller`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WorkerUse {
    /// The worker's id: 64 random bits, unique per worker for the life of
    /// the daemon.
    pub worker_id: String,
    /// The caller the worker is bound to (the caller of this run).
    pub caller: String,
    /// Runs the worker had served before this one (0: a fresh worker).
    pub runs_before: u32,
    /// The most runs the operator lets one worker serve
    /// (`PLIMSOLL_WORKER_MAX_RUNS`; 1 = a fresh worker for every run).
    pub max_runs: u32,
}

/// The isolation a run actually had, attached to every result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Isolation {
    /// The tier of the boundary that ran (or would have run) the guest.
    pub tier: Tier,
    /// The provider's name: `disabled`, `wasm`, `wasm+bwrap`, …
    pub provider: String,
    /// The outer wrapper, if any (`bwrap`, `gvisor`, `microvm`).
    pub wrapper: Option<String>,
    /// What backs the tier claim.
    pub evidence: Evidence,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_ordered_weakest_first() {
        assert!(Tier::Process < Tier::Container);
        assert!(Tier::Container < Tier::Kernel);
        assert!(Tier::Kernel < Tier::Vm);
    }

    #[test]
    fn tier_names_round_trip() {
        for t in Tier::ALL {
            assert_eq!(t.as_str().parse::<Tier>().ok(), Some(t));
            let json = serde_json::to_string(&t).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", t.as_str()));
        }
        assert!("VM".parse::<Tier>().is_ok());
        assert!("hypervisor".parse::<Tier>().is_err());
    }
}
