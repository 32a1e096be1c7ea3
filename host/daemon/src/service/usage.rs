//! A caller's use of its limits, as `/v1/info` shows it: in a fleet whose
//! shared state answers, the fleet's (every node shows the same); else
//! this node's own counters.

use super::App;
use serde::Serialize;

/// A caller's use of its limits.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CallerUsage {
    /// `fleet` (counted in the fleet's shared state) or `node` (this
    /// daemon's own counters: no fleet, or its shared state does not
    /// answer).
    pub scope: &'static str,
    /// Runs in flight (a fleet counts its leases).
    pub runs_in_flight: u64,
    /// Open sessions.
    pub sessions_open: u64,
}

impl App {
    /// `caller`'s run milliseconds today and its use now: the fleet's when
    /// its shared state answers, else this node's.
    pub async fn usage_of(&self, caller: &crate::callers::Caller) -> (u64, CallerUsage) {
        if let Some(f) = &self.fleet
            && let Ok((ms, runs, sessions)) = f.usage(&caller.id).await
        {
            return (
                ms,
                CallerUsage {
                    scope: "fleet",
                    runs_in_flight: runs,
                    sessions_open: sessions,
                },
            );
        }
        (
            self.quotas.ledger.used_ms(&caller.id),
            CallerUsage {
                scope: "node",
                runs_in_flight: self.quotas.caller_inflight(caller) as u64,
                sessions_open: self.sandbox.session_count(&caller.id) as u64,
            },
        )
    }
}
