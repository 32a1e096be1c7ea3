//! Prometheus metrics, served as text on a listener of their own.
//!
//! Every label value comes from a closed set: run statuses, languages,
//! shed reasons, caller ids and grant profile names from the operator's
//! files, the five broker methods, and route *templates*. A raw path, a
//! query, a header or a credential never becomes a label.

use plimsoll::RunResult;
use plimsoll::trace::CallOutcome;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    outcome: &'static str,
    language: &'static str,
    caller: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LanguageLabels {
    language: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NodeLabels {
    node: String,
    epoch: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BrokerLabels {
    profile: String,
    method: String,
    route: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProfileLabels {
    profile: String,
}

fn seconds_histogram() -> Histogram {
    // 50 µs … ~13 s.
    Histogram::new(exponential_buckets(0.000_05, 2.0, 19))
}

/// The daemon's metrics.
pub struct Metrics {
    registry: Registry,
    runs: Family<RunLabels, Counter>,
    run_seconds: Family<LanguageLabels, Histogram, fn() -> Histogram>,
    instantiate_seconds: Family<LanguageLabels, Histogram, fn() -> Histogram>,
    inflight: Gauge,
    shed: Family<ReasonLabels, Counter>,
    sessions: Gauge,
    broker_calls: Family<BrokerLabels, Counter>,
    broker_seconds: Family<ProfileLabels, Histogram, fn() -> Histogram>,
    auth_failures: Family<ReasonLabels, Counter>,
    node_info: Family<NodeLabels, Gauge>,
    shared_state_up: Gauge,
    sessions_lost: Family<ReasonLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric registered.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("plimsoll");
        let runs = Family::<RunLabels, Counter>::default();
        registry.register("runs", "Runs by outcome, language and caller", runs.clone());
        let run_seconds =
            Family::<LanguageLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                seconds_histogram,
            );
        registry.register(
            "run_duration_seconds",
            "Wall time of runs",
            run_seconds.clone(),
        );
        let instantiate_seconds =
            Family::<LanguageLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                seconds_histogram,
            );
        registry.register(
            "instantiate_duration_seconds",
            "Time to instantiate the guest",
            instantiate_seconds.clone(),
        );
        let inflight = Gauge::default();
        registry.register("runs_in_flight", "Runs executing now", inflight.clone());
        let shed = Family::<ReasonLabels, Counter>::default();
        registry.register("shed_requests", "Requests shed, by reason", shed.clone());
        let sessions = Gauge::default();
        registry.register("sessions_open", "Open sessions", sessions.clone());
        let broker_calls = Family::<BrokerLabels, Counter>::default();
        registry.register(
            "broker_calls",
            "Broker calls by grant profile, method, route template and outcome",
            broker_calls.clone(),
        );
        let broker_seconds =
            Family::<ProfileLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                seconds_histogram,
            );
        registry.register(
            "broker_call_duration_seconds",
            "Latency of broker calls",
            broker_seconds.clone(),
        );
        let auth_failures = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "auth_failures",
            "Requests refused for their credentials",
            auth_failures.clone(),
        );
        let node_info = Family::<NodeLabels, Gauge>::default();
        registry.register(
            "node_info",
            "This node's tag and boot epoch in a fleet (the value is 1)",
            node_info.clone(),
        );
        let shared_state_up = Gauge::default();
        registry.register(
            "shared_state_up",
            "1 while the fleet's shared state answers, 0 while limits are served from this node's share",
            shared_state_up.clone(),
        );
        let sessions_lost = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "sessions_lost",
            "Calls for sessions whose node was lost, restarted or drained, by reason",
            sessions_lost.clone(),
        );
        Metrics {
            node_info,
            shared_state_up,
            sessions_lost,
            registry,
            runs,
            run_seconds,
            instantiate_seconds,
            inflight,
            shed,
            sessions,
            broker_calls,
            broker_seconds,
            auth_failures,
        }
    }

    /// Records a finished (or refused) run.
    pub fn run(&self, caller: &str, language: &'static str, r: &RunResult) {
        self.runs
            .get_or_create(&RunLabels {
                outcome: r.status.as_str(),
                language,
                caller: caller.to_owned(),
            })
            .inc();
        if r.status != plimsoll::Status::Refused {
            let l = LanguageLabels { language };
            self.run_seconds
                .get_or_create(&l)
                .observe(r.usage.wall_ms / 1e3);
            self.instantiate_seconds
                .get_or_create(&l)
                .observe(r.usage.instantiate_ms / 1e3);
        }
        for row in &r.calls.rows {
            let profile = row.grant.clone().unwrap_or_else(|| "none".into());
            self.broker_calls
                .get_or_create(&BrokerLabels {
                    profile: profile.clone(),
                    method: row.method.clone().unwrap_or_else(|| "other".into()),
                    route: row.route.clone().unwrap_or_else(|| "none".into()),
                    outcome: outcome_label(row.outcome),
                })
                .inc();
            self.broker_seconds
                .get_or_create(&ProfileLabels { profile })
                .observe(row.latency_us as f64 / 1e6);
        }
    }

    /// Records a shed request.
    pub fn shed(&self, reason: &'static str) {
        self.shed.get_or_create(&ReasonLabels { reason }).inc();
    }

    /// Records a refused credential (`missing`, `invalid`, `scope`).
    pub fn auth_failure(&self, reason: &'static str) {
        self.auth_failures
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// Sets the in-flight gauge.
    pub fn set_inflight(&self, n: usize) {
        self.inflight.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Sets the open-sessions gauge.
    pub fn set_sessions(&self, n: usize) {
        self.sessions.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Names this node in `plimsoll_node_info`.
    pub fn set_node(&self, node: &str, epoch: &str) {
        self.node_info
            .get_or_create(&NodeLabels {
                node: node.to_owned(),
                epoch: epoch.to_owned(),
            })
            .set(1);
    }

    /// Sets `plimsoll_shared_state_up`.
    pub fn set_shared_state_up(&self, up: bool) {
        self.shared_state_up.set(i64::from(up));
    }

    /// Counts a call for a lost session.
    pub fn session_lost(&self, reason: &'static str) {
        self.sessions_lost
            .get_or_create(&ReasonLabels { reason })
            .inc();
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

fn outcome_label(o: CallOutcome) -> &'static str {
    o.as_str()
}
