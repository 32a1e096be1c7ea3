//! Hardened mode (`PLIMSOLL_HARDENED=1`): the daemon starts only when every
//! condition below holds, and otherwise lists every unmet one at once.
//!
//! | id | condition |
//! |---|---|
//! | `isolation` | the provider is a verified wrapper of tier `kernel` or `vm` |
//! | `callers` | a callers file with per-caller tokens (`PLIMSOLL_CLIENTS_FILE`) |
//! | `insecure` | `PLIMSOLL_INSECURE` is off |
//! | `tls` | TLS on every listener that is not loopback |
//! | `pinned_guests` | `PLIMSOLL_GUEST_PINS` lists every guest served |
//! | `envelope` | an explicit envelope (`PLIMSOLL_ENVELOPE_FILE`) |
//! | `rate_limit` | every caller has `rate_per_min` |
//! | `concurrency` | every caller has `max_concurrent` |
//! | `session_cap` | when sessions are on, every caller has `max_sessions` |
//! | `cpu_allowance` | every caller has `cpu_seconds_per_day` |
//! | `audit_log` | an explicit audit log path (`PLIMSOLL_AUDIT_LOG`) |
//! | `shared_state` | a fleet node fails closed (`PLIMSOLL_SHARED_STATE_FAILURE=closed`) |

use crate::callers::Callers;
use crate::config::DaemonConfig;
use plimsoll::{Isolation, Tier};

/// One unmet condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmet {
    /// The condition's id (see the module's table).
    pub id: &'static str,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// What the checks look at.
pub struct Facts<'a> {
    pub config: &'a DaemonConfig,
    /// The isolation the provider proved.
    pub isolation: &'a Isolation,
    /// The callers, when a callers file was loaded.
    pub callers: Option<&'a Callers>,
    /// The identity of every guest the daemon serves.
    pub guest_identities: &'a [String],
    /// Whether sessions can be opened (an interpreter is configured).
    pub sessions_on: bool,
}

/// Every unmet hardened-mode condition, in the table's order.
pub fn unmet(f: &Facts<'_>) -> Vec<Unmet> {
    let mut out = Vec::new();
    let mut no = |id: &'static str, message: String| out.push(Unmet { id, message });
    let iso = f.isolation;
    if iso.tier < Tier::Kernel || iso.wrapper.is_none() {
        let why = if iso.provider == "wasm" {
            "the in-process `wasm` provider runs guests inside the daemon (tier `process`) and can never satisfy hardened mode".to_string()
        } else {
            format!("provider `{}` gives tier `{}`", iso.provider, iso.tier)
        };
        no(
            "isolation",
            format!(
                "isolation: {why}; hardened mode needs a wrapper whose start-up smoke test proved tier `kernel` or `vm` (SANDBOX_PROVIDER=wasm+gvisor or wasm+microvm)"
            ),
        );
    }
    let callers = f.callers.filter(|c| !c.is_open());
    if callers.is_none() {
        no(
            "callers",
            "callers: set PLIMSOLL_CLIENTS_FILE to a callers file with a token per caller".into(),
        );
    }
    if f.config.insecure {
        no(
            "insecure",
            "insecure: PLIMSOLL_INSECURE=1 (no tokens) is not allowed in hardened mode".into(),
        );
    }
    for (name, addr, tls) in f.config.listeners() {
        if !addr.ip().is_loopback() && !tls {
            no(
                "tls",
                format!(
                    "tls: the {name} listener {addr} is not loopback and has no TLS (set PLIMSOLL_TLS_CERT and PLIMSOLL_TLS_KEY, or keep the metrics listener on loopback)"
                ),
            );
        }
    }
    if f.config.guest_pins.is_empty() {
        no(
            "pinned_guests",
            "pinned_guests: set PLIMSOLL_GUEST_PINS to the identities of the guests to serve (see `plimsoll info`)".into(),
        );
    } else {
        for id in f.guest_identities {
            if !f.config.guest_pins.iter().any(|p| p == id) {
                no(
                    "pinned_guests",
                    format!("pinned_guests: guest {id} is served but not in PLIMSOLL_GUEST_PINS"),
                );
            }
        }
    }
    if !f.config.explicit_envelope {
        no(
            "envelope",
            "envelope: set PLIMSOLL_ENVELOPE_FILE to the operator's envelope (every limit explicit)".into(),
        );
    }
    if let Some(callers) = callers {
        for (id, field, wanted) in [
            ("rate_limit", "rate_per_min", true),
            ("concurrency", "max_concurrent", true),
            ("session_cap", "max_sessions", f.sessions_on),
            ("cpu_allowance", "cpu_seconds_per_day", true),
        ] {
            if !wanted {
                continue;
            }
            let missing: Vec<&str> = callers
                .iter()
                .filter(|c| !c.explicit.contains(field))
                .map(|c| c.id.as_str())
                .collect();
            if !missing.is_empty() {
                no(
                    id,
                    format!("{id}: callers without `{field}`: {}", missing.join(", ")),
                );
            }
        }
    }
    if !f.config.explicit_audit_log {
        no(
            "audit_log",
            "audit_log: set PLIMSOLL_AUDIT_LOG to the audit log's path".into(),
        );
    }
    if f.config.shared_state_url.is_some()
        && f.config.shared_state_failure != crate::fleet::FailureMode::Closed
    {
        no(
            "shared_state",
            "shared_state: a fleet node needs PLIMSOLL_SHARED_STATE_FAILURE=closed (no limits served from a node's own share while Redis does not answer)".into(),
        );
    }
    out
}
