//! plimsolld answers at once (issue #35): it listens before its guests are
//! compiled, `/healthz` is live from the start, `/readyz` and `/v1/info`
//! say which guests are ready, a run for a guest still compiling waits
//! within its wall time or is refused `warming_up` with `Retry-After`, and
//! the log names each guest with its compile time.

#[path = "support/daemon.rs"]
mod harness;

use harness::*;
use std::time::{Duration, Instant};

/// A daemon whose component cache is empty and which sees no build cache:
/// every guest must be compiled.
fn cold() -> Setup {
    let setup = Setup::new(None);
    let guests = setup.tmp.path().join("guests");
    std::fs::create_dir_all(&guests).expect("mkdir");
    for name in ["python", "javascript"] {
        std::fs::copy(
            guests_dir().join(format!("{name}.wasm")),
            guests.join(format!("{name}.wasm")),
        )
        .expect("copy a guest");
    }
    let cache = setup.tmp.path().join("empty-cache");
    setup
        .set("PLIMSOLL_GUESTS_DIR", guests.display().to_string())
        .set("PLIMSOLL_CACHE_DIR", cache.display().to_string())
        .unset("PLIMSOLL_COMPONENTS_DIR")
        .set("PLIMSOLL_LOG", "info")
}

#[test]
fn the_daemon_listens_at_once_and_compiles_its_guests_in_the_background() {
    let spawned = Instant::now();
    let d = cold().start_unready();
    // Live from the start, whatever is compiling.
    let health = call(d.addr, "GET", "/healthz", None, None);
    let live_after = spawned.elapsed();
    assert_eq!(health.status, 200, "{}", health.body);
    eprintln!("/healthz answered {live_after:?} after the spawn");
    assert!(
        live_after < Duration::from_secs(2),
        "/healthz took {live_after:?} (the target is under 1 s; 2 s allows for a loaded machine)"
    );
    // Not ready while CPython compiles; the answer names what is missing.
    let ready = call(d.addr, "GET", "/readyz", None, None);
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert_eq!(
        ready.json()["guests"]["python"],
        "loading",
        "{}",
        ready.body
    );
    // A run that cannot wait long enough is refused, marked, with a hint.
    let r = run(
        &d,
        ALICE,
        r#"{"language": "python", "code": "1+1", "limits": {"wall_time_ms": 300}}"#,
    );
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.code(), "warming_up", "{}", r.body);
    assert!(r.retry_after() > 0);
    // /v1/info says so too.
    let info = call(d.addr, "GET", "/v1/info", Some(ALICE), None);
    assert_eq!(info.status, 200, "{}", info.body);
    assert_eq!(
        info.json()["guest_states"]["python"],
        "loading",
        "{}",
        info.body
    );
    // A run waits for the guest within its wall time (10 s); one that
    // still finds it compiling is told to come back, and then runs.
    let t = Instant::now();
    let r = loop {
        let r = run(&d, ALICE, r#"{"language": "python", "code": "6*7"}"#);
        if r.status != 503 || t.elapsed() > Duration::from_secs(120) {
            break r;
        }
        assert_eq!(r.code(), "warming_up", "{}", r.body);
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"], "42", "{}", r.body);
    // Ready once everything is compiled.
    let t = Instant::now();
    loop {
        let ready = call(d.addr, "GET", "/readyz", None, None);
        if ready.status == 200 {
            assert_eq!(ready.json()["guests"]["javascript"], "ready");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(120), "{}", ready.body);
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = d.stderr.lock().map(|s| s.clone()).unwrap_or_default();
    for guest in ["python", "javascript"] {
        assert!(
            log.lines()
                .any(|l| l.contains(&format!("guest {guest} ready in")) && l.contains(" s")),
            "no line names {guest} and its compile time:\n{log}"
        );
    }
}
