//! Tests of the pool's pure parts: re-capping a worker's claims, the
//! per-caller shares, and which endings keep a worker.

use super::*;
use crate::envelope::Envelope;
use crate::run::{Artifact, RefusedArtifact};
use crate::run::{RunResult, Status};
use crate::tier::{Evidence, Isolation, Tier};

fn result() -> RunResult {
    let iso = Isolation {
        tier: Tier::Container,
        provider: "wasm+bwrap".into(),
        wrapper: Some("bwrap".into()),
        evidence: Evidence {
            observed_at_unix: 0,
            summary: String::new(),
            checks: Vec::new(),
            worker: None,
        },
    };
    RunResult::refused("r".into(), iso, "x", "y")
}

fn artifact(path: &str, content: &str, claimed: u64) -> Artifact {
    Artifact {
        path: path.into(),
        size: claimed,
        sha256: "f".repeat(64),
        content: content.into(),
    }
}

/// An honest worker's result needs no correction (so its worker is
/// kept for the caller's next run).
#[test]
fn an_honest_result_needs_no_correction() {
    let env = Envelope::default();
    let mut r = result();
    r.stdout = "hello".into();
    r.result = Some("2".into());
    let mut a = artifact("out.txt", "abc", 3);
    a.sha256 = crate::component_cache::content_hash(b"abc");
    r.artifacts = vec![a];
    assert_eq!(sanitize(&mut r, &env), 0);
    assert_eq!(r.artifacts.len(), 1);
}

/// A caller's share is counted while its guards live and released with
/// them; at the cap, a reservation is refused.
#[test]
fn shares_are_capped_per_caller_and_released_on_drop() {
    let c = Arc::new(Counts::default());
    let a1 = c.reserve("alice", 2).expect("first");
    let a2 = c.reserve("alice", 2).expect("second");
    assert!(c.reserve("alice", 2).is_none(), "alice is at her cap");
    let b = c.reserve("bob", 2).expect("bob has his own share");
    assert_eq!(c.held_by("alice"), 2);
    drop(a1);
    assert_eq!(c.held_by("alice"), 1);
    drop((a2, b));
    assert_eq!(c.held_by("alice"), 0);
    assert!(
        c.per_caller.lock().expect("lock").is_empty(),
        "no entry is left for a caller with no worker"
    );
}

#[test]
fn only_clean_endings_keep_a_worker() {
    for s in Status::ALL {
        let keep = reusable_after(s);
        let expected = matches!(
            s,
            Status::Ok
                | Status::Error
                | Status::Timeout
                | Status::CpuExhausted
                | Status::OutputTruncated
        );
        assert_eq!(keep, expected, "{s:?}");
    }
}

/// What a lying worker reports is re-capped to the envelope and
/// re-checked: outputs, paths, sizes, hashes, counts, error texts.
#[test]
fn sanitize_recaps_what_a_worker_claims() {
    let env = Envelope {
        stdout_bytes: 4,
        stderr_bytes: 2,
        result_bytes: 3,
        artifact_files: 2,
        artifact_bytes: 5,
        ..Envelope::default()
    };
    let mut r = result();
    r.stdout = "héllo world".into();
    r.stderr = "errors".into();
    r.result = Some("123456".into());
    r.artifacts = vec![
        artifact("../../etc/passwd", "root:x", 1),
        artifact("ok.txt", "abc", 999),
        artifact("two.txt", "defg", 0),
        artifact("three.txt", "h", 0),
    ];
    r.artifacts_refused = (0..10)
        .map(|i| RefusedArtifact {
            path: format!("{}{i}", "p".repeat(1000)),
            reason: "r".repeat(500),
        })
        .collect();
    if let Some(e) = &mut r.error {
        e.code = "c".repeat(1000);
        e.message = "m".repeat(10_000);
    }
    assert!(sanitize(&mut r, &env) >= 5, "every lie is counted");
    // "hé" is 3 bytes; cutting at 4 would split nothing, at a char
    // boundary always.
    assert!(r.stdout.len() <= 4 && r.stdout_truncated, "{:?}", r.stdout);
    assert_eq!(r.stderr, "er");
    assert!(r.stderr_truncated);
    assert_eq!(r.result.as_deref(), Some("123"));
    assert!(r.result_truncated);
    let paths: Vec<&str> = r.artifacts.iter().map(|a| a.path.as_str()).collect();
    // The escaping path is refused; of the rest, at most 2 files and
    // 5 bytes.
    assert_eq!(paths, ["ok.txt"], "{paths:?}");
    assert!(r.artifacts_truncated);
    let ok = &r.artifacts[0];
    assert_eq!(ok.size, 3, "the size is recomputed");
    assert_eq!(
        ok.sha256,
        crate::component_cache::content_hash(b"abc"),
        "the hash is recomputed"
    );
    assert!(
        r.artifacts_refused
            .iter()
            .any(|a| a.reason == "invalid_path_from_worker")
    );
    assert!(r.artifacts_refused.len() <= 3);
    assert!(
        r.artifacts_refused
            .iter()
            .all(|a| a.path.chars().count() <= 256 && a.reason.chars().count() <= 64)
    );
    let e = r.error.as_ref().expect("error kept");
    assert!(e.code.chars().count() <= 64 && e.message.chars().count() <= 2048);
    assert_eq!(r.stdout_bytes, r.stdout.as_bytes());
}
