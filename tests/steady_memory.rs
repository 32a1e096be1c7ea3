//! 2,000 sequential runs leave the host's resident memory flat.
//!
//! Alone in its own test binary so that no other test's allocations move
//! the measurement.

mod support;

use plimsoll::{RunRequest, Status};
use support::*;

/// How much the resident set may grow between run 200 and run 2,200.
/// A leak of one 4 KiB page per run would be 8 MiB; we allow 4 MiB of
/// allocator noise.
const RSS_GROWTH_BOUND: u64 = 4 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_sequential_runs_leave_rss_flat() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    let mut mixed = [
        RunRequest::component("hello"),
        RunRequest::component("churn"),
    ];
    mixed[0].stdin = plimsoll::Blob::from("x");
    // Warm up: pool slots, allocator arenas, lazily initialised tables.
    for i in 0..200 {
        let r = s.run(&mixed[i % 2]).await;
        assert_eq!(r.status, Status::Ok);
    }
    let before = rss_bytes();
    for i in 0..2_000 {
        let r = s.run(&mixed[i % 2]).await;
        assert_eq!(r.status, Status::Ok, "run {i}: {r:?}");
    }
    let after = rss_bytes();
    let growth = after.saturating_sub(before);
    eprintln!("RSS before {before} after {after} growth {growth}");
    assert!(
        growth <= RSS_GROWTH_BOUND,
        "RSS grew by {growth} bytes over 2,000 runs"
    );
    assert!(plimsoll::reaper::flush(std::time::Duration::from_secs(10)));
    assert_eq!(
        entries(&dir.path().join("work")),
        0,
        "every workspace was removed"
    );
}
