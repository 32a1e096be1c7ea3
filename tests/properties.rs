//! Property tests (proptest) for three invariants:
//!
//! * no non-canonical path is ever accepted, so none can match a template;
//! * a request's limits never raise the operator's envelope;
//! * every broker call that is refused is traced as refused.

use plimsoll::Envelope;
use plimsoll::bindings::broker::{CallError, Request};
use plimsoll::broker::{Broker, RunBroker};
use plimsoll::envelope::Limits;
use plimsoll::grant::GrantSet;
use plimsoll::grant::route::{Method, RouteTemplate, canonical_target};
use plimsoll::trace::CallOutcome;
use proptest::prelude::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Path material that mixes plain segments with every trick the broker must
/// refuse: dot segments, encoded dots and slashes, doubled slashes,
/// backslashes, control bytes, fragments.
fn path_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9]{1,6}".prop_map(|s| s),
        Just(".".to_string()),
        Just("..".to_string()),
        Just("%2e".to_string()),
        Just("%2E%2e".to_string()),
        Just("%2f".to_string()),
        Just("%2F".to_string()),
        Just("%5c".to_string()),
        Just("%25".to_string()),
        Just("%41".to_string()),
        Just("%00".to_string()),
        Just("\\".to_string()),
        Just("".to_string()),
        Just("#x".to_string()),
        Just("\r\n".to_string()),
        Just("\u{e9}".to_string()),
        Just("..;".to_string()),
        Just(";x=1".to_string()),
        Just("..%20".to_string()),
        Just("%20".to_string()),
        Just("...".to_string()),
        Just(".%09".to_string()),
        Just("%c0%ae".to_string()),
        Just("%c0%ae%c0%ae".to_string()),
        Just("%e0%80%ae".to_string()),
        Just("%ef%bc%8e".to_string()),
        Just("%e2%88%95".to_string()),
        Just("%c3%a9".to_string()),
        Just("a.".to_string()),
    ]
}

fn target() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(path_piece(), 0..6),
        prop::option::of("[a-z=&%0-9]{0,8}"),
    )
        .prop_map(|(pieces, query)| {
            let mut s = format!("/{}", pieces.join("/"));
            if let Some(q) = query {
                s.push('?');
                s.push_str(&q);
            }
            s
        })
}

include!("support/path_oracle.rs");

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn accepted_targets_are_canonical_and_only_they_can_match(t in target()) {
        let templates = ["GET /orders/*", "GET /orders/*/items", "GET /*", "GET /**"];
        // A refused target has no canonical form, so no template can even be
        // asked to match it; an accepted one must be canonical.
        if let Ok(c) = canonical_target(&t) {
            let path = t.split('?').next().unwrap_or("");
            prop_assert!(is_canonical_path(path), "accepted a non-canonical path: {t:?}");
            for tpl in templates {
                if let Ok(rt) = RouteTemplate::parse(tpl)
                    && rt.matches(Method::Get, &c)
                {
                    prop_assert!(is_canonical_path(path), "{tpl} matched {t:?}");
                }
            }
        }
    }

    #[test]
    fn a_request_never_raises_the_envelope(
        wall in prop::option::of(any::<u64>()),
        fuel in prop::option::of(any::<u64>()),
        memory in prop::option::of(any::<u64>()),
        stdout in prop::option::of(any::<u64>()),
        calls in prop::option::of(any::<u64>()),
        request in prop::option::of(any::<u64>()),
        workspace in prop::option::of(any::<u64>()),
    ) {
        let operator = Envelope::default();
        let limits = Limits {
            wall_time_ms: wall,
            fuel,
            memory_bytes: memory,
            stdout_bytes: stdout,
            broker_calls: calls,
            request_bytes: request,
            workspace_bytes: workspace,
            ..Limits::default()
        };
        if let Ok(env) = operator.lowered_by(&limits) {
            prop_assert!(env.is_within(&operator));
        }
    }

    #[test]
    fn every_refused_call_is_traced_as_refused(
        calls in prop::collection::vec(("[a-z\\r\\n ]{0,8}", "[A-Z]{0,7}", target()), 1..12),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let env = Envelope { broker_calls: 5, ..Envelope::default() };
        let broker = RunBroker::new(
            Arc::new(Broker::new()),
            GrantSet::empty(),
            &env,
            Instant::now() + Duration::from_secs(10),
        );
        for (i, (api, method, path)) in calls.iter().enumerate() {
            let r = rt.block_on(broker.call(api, Request {
                method: method.clone(),
                path: path.clone(),
                headers: Vec::new(),
                body: Vec::new(),
            }));
            // No grant: every call is refused (denied, or over the budget).
            prop_assert!(matches!(r, Err(CallError::Denied(_)) | Err(CallError::BudgetExhausted)));
            let trace = broker.trace();
            prop_assert_eq!(trace.total(), i as u64 + 1);
            let last = trace.rows.last().expect("a row");
            prop_assert!(matches!(last.outcome, CallOutcome::Denied | CallOutcome::BudgetExhausted));
            // Metadata only: the guest's raw path never enters the trace.
            let json = serde_json::to_string(&trace).expect("json");
            if path.len() > 3 {
                prop_assert!(!json.contains(path.as_str()));
            }
        }
    }
}
