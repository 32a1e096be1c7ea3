//! Faults outside the guest, each with its stated behaviour
//! (docs/security-testing.md): an upstream that is down, resets the
//! connection, answers garbage or stalls; a workspace file system that
//! fills up. In every case the run ends in a typed outcome, the call is
//! traced, nothing leaks, and the host keeps serving the next run.
//!
//! Worker faults (killed, frozen, garbage frames) are in `tests/wrappers.rs`;
//! an oversized response and a slow upstream's timeout in `tests/broker.rs`;
//! an unwritable audit log in `tests/daemon.rs`.

mod support;

use plimsoll::grant::GrantProfiles;
use plimsoll::trace::CallOutcome;
use plimsoll::{Language, RunRequest, Sandbox, Status};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::time::{Duration, Instant};

/// A loopback listener that does `behave` with every connection, on a
/// thread of its own, until the test ends.
fn fault_server(behave: fn(std::net::TcpStream)) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || behave(s));
        }
    });
    addr
}

/// A port nothing listens on (bound, then closed).
fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let a = l.local_addr().expect("addr");
    drop(l);
    a
}

fn read_head(s: &mut std::net::TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut buf = [0u8; 4096];
    let _ = s.read(&mut buf);
}

fn profiles(apis: &[(&str, SocketAddr)]) -> GrantProfiles {
    let body: Vec<String> = apis
        .iter()
        .map(|(name, addr)| {
            format!(
                r#""{name}": {{"base_url": "http://{addr}", "allow": ["GET /x/*"], "token": {{"type": "static", "env": "T"}}, "max_calls": 10}}"#
            )
        })
        .collect();
    GrantProfiles::from_json(
        &format!(r#"{{"profiles": {{{}}}}}"#, body.join(",")),
        &|_| Some("sk-fault-test-credential-3141592653".into()),
    )
    .expect("grants")
}

fn call(api: &str) -> RunRequest {
    RunRequest {
        grants: vec![api.into()],
        ..RunRequest::code(
            Language::Python,
            format!(
                "import plimsoll\ntry:\n    plimsoll.call('{api}', 'GET', '/x/1')\n    print('DELIVERED')\nexcept plimsoll.BrokerError as e:\n    print('raised', type(e).__name__)\n"
            ),
        )
    }
}

async fn assert_serves(s: &Sandbox) {
    let r = s.run(&RunRequest::code(Language::Python, "6*7")).await;
    assert_eq!(r.result.as_deref(), Some("42"), "{:?}", r.error);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_upstream_fails_the_call_not_the_run() {
    let reset = fault_server(|mut s| {
        read_head(&mut s);
        // SO_LINGER 0: close with a TCP reset rather than a FIN.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
        let linger = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: setsockopt on a socket we own, with a valid struct.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                (&linger as *const libc::linger).cast(),
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
        drop(s);
    });
    let garbage = fault_server(|mut s| {
        read_head(&mut s);
        let _ = s.write_all(b"SSH-2.0-not-http\r\n\x00\x01\x02garbage\r\n\r\n");
    });
    let half = fault_server(|mut s| {
        read_head(&mut s);
        // A status line and then nothing: the connection closes mid-head.
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort");
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let s = support::sandbox_in(dir.path(), |c| {
        c.grants = profiles(&[
            ("down", closed_port()),
            ("reset", reset),
            ("garbage", garbage),
            ("half", half),
        ])
    });
    for api in ["down", "reset", "garbage", "half"] {
        let t = Instant::now();
        let r = s.run(&call(api)).await;
        assert_eq!(r.status, Status::Ok, "{api}: {:?} {}", r.error, r.stderr);
        assert!(
            r.stdout.contains("raised UpstreamError") || r.stdout.contains("raised Timeout"),
            "{api}: {}",
            r.stdout
        );
        assert!(!r.stdout.contains("DELIVERED"), "{api}");
        let row = r.calls.rows.first().expect("the call is traced");
        assert!(
            matches!(
                row.outcome,
                CallOutcome::UpstreamError | CallOutcome::Timeout
            ),
            "{api}: {:?}",
            row.outcome
        );
        let json = serde_json::to_string(&r).expect("json");
        assert!(
            !json.contains("sk-fault-test-credential"),
            "{api}: credential in the result"
        );
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{api}: {:?}",
            t.elapsed()
        );
        assert_serves(&s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upstream_holds_only_its_own_run() {
    // Accepts and never answers.
    let stall = fault_server(|mut s| {
        read_head(&mut s);
        std::thread::sleep(Duration::from_secs(30));
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let s = std::sync::Arc::new(support::sandbox_in(dir.path(), |c| {
        c.grants = profiles(&[("stall", stall)])
    }));
    let mut req = call("stall");
    req.limits.broker_call_ms = Some(1500);
    let s2 = s.clone();
    let stalled = tokio::spawn(async move { s2.run(&req).await });
    // Meanwhile other runs are served at their usual speed.
    tokio::time::sleep(Duration::from_millis(200)).await;
    for _ in 0..5 {
        let t = Instant::now();
        assert_serves(&s).await;
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    }
    let r = stalled.await.expect("task");
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
    assert!(r.stdout.contains("raised Timeout"), "{}", r.stdout);
    assert_eq!(
        r.calls.rows.first().map(|c| c.outcome),
        Some(CallOutcome::Timeout)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_workspace_file_system_fails_the_writer_and_nothing_else() {
    // A real file system that fills: a 2 MiB tmpfs as the workspace root.
    // Mounting needs root; without it the test says so.
    let dir = tempfile::tempdir().expect("tempdir");
    let mnt = dir.path().join("small");
    let Some(_mounted) = support::tmpfs::SmallTmpfs::mount(&mnt, "size=2m,mode=0700") else {
        return;
    };
    let s = support::sandbox_in(dir.path(), |c| {
        c.runtime.workspace_dir = mnt.join("work");
    });
    // The envelope would allow 64 MiB; the file system has 2.
    let mut fill = RunRequest::code(
        Language::Python,
        "n = 0\ntry:\n    with open('/work/fill', 'wb') as f:\n        for i in range(64):\n            f.write(b'z' * (1 << 20)); f.flush(); n += 1\nexcept OSError as e:\n    print('stopped', n, type(e).__name__)\n",
    );
    fill.limits.workspace_bytes = Some(64 << 20);
    let r = s.run(&fill).await;
    assert!(
        matches!(r.status, Status::Ok | Status::Error | Status::DiskExhausted),
        "{:?} {:?}",
        r.status,
        r.error
    );
    // The write failed on the full file system (the guest saw an OSError),
    // or the run ended on it.
    assert!(
        r.stdout.contains("stopped") || r.status != Status::Ok,
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("stopped 64"), "{}", r.stdout);
    // The full file system was the run's own: it is gone with the run, and
    // the next run has room.
    assert_serves(&s).await;
    // Workspaces are removed off the run's path by the reaper.
    plimsoll::reaper::flush(Duration::from_secs(5));
    let left: Vec<_> = std::fs::read_dir(mnt.join("work"))
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "workspaces left behind: {left:?}");
}
