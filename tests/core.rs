//! End-to-end tests of the host library with real guests in real wasmtime.

mod support;

use plimsoll::envelope::Limits;
use plimsoll::trace::CallOutcome;
use plimsoll::{Blob, InputFile, ProviderKind, RunRequest, RunResult, Sandbox, Status, Tier};
use std::time::{Duration, Instant};
use support::*;

fn req(component: &str) -> RunRequest {
    RunRequest::component(component)
}

fn with_stdin(component: &str, stdin: &str) -> RunRequest {
    RunRequest {
        stdin: Blob::from(stdin),
        ..req(component)
    }
}

async fn assert_still_serving(s: &Sandbox) {
    let r = s.run(&req("hello")).await;
    assert_eq!(r.status, Status::Ok, "hello after a hostile run: {r:?}");
    assert_eq!(r.stdout, "hello from plimsoll\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_runs_and_reports_everything() {
    let s = shared();
    let r = s.run(&req("hello")).await;
    assert_eq!(r.status, Status::Ok);
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout, "hello from plimsoll\n");
    assert!(!r.stdout_truncated);
    assert_eq!(r.isolation.tier, Tier::Process);
    assert_eq!(r.isolation.provider, "wasm");
    assert!(!r.isolation.evidence.checks.is_empty());
    let hash = plimsoll::component_cache::content_hash(&guest_bytes("hello"));
    assert_eq!(
        r.guest.as_deref(),
        Some(format!("component:sha256:{hash}").as_str())
    );
    assert!(r.usage.wall_ms > 0.0);
    assert!(r.usage.fuel.is_some_and(|f| f > 0));
    assert!(r.usage.memory_peak_bytes > 0);
    assert_eq!(r.run_id.len(), 32);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_guests_end_in_their_typed_outcome_and_the_host_keeps_serving() {
    let s = shared();
    let cases: Vec<(&str, RunRequest, Status)> = vec![
        (
            "infinite loop, wall time",
            with_limits(
                req("spin"),
                Limits {
                    wall_time_ms: Some(500),
                    ..Limits::default()
                },
            ),
            Status::Timeout,
        ),
        (
            "infinite loop, fuel",
            with_limits(
                req("spin"),
                Limits {
                    fuel: Some(50_000_000),
                    ..Limits::default()
                },
            ),
            Status::CpuExhausted,
        ),
        (
            "memory bomb",
            with_limits(
                req("membomb"),
                Limits {
                    memory_bytes: Some(64 << 20),
                    ..Limits::default()
                },
            ),
            Status::MemoryExhausted,
        ),
        ("stack overflow", req("stackoverflow"), Status::Trap),
        (
            "stdout flood",
            with_limits(
                req("flood"),
                Limits {
                    stdout_bytes: Some(100_000),
                    ..Limits::default()
                },
            ),
            Status::OutputTruncated,
        ),
        (
            "workspace filler",
            with_limits(
                with_stdin("bigartifact", "512"),
                Limits {
                    workspace_bytes: Some(16 << 20),
                    ..Limits::default()
                },
            ),
            Status::DiskExhausted,
        ),
        ("non-zero exit", req("fail"), Status::Error),
    ];
    for (what, request, want) in cases {
        let started = Instant::now();
        let r = s.run(&request).await;
        assert_eq!(r.status, want, "{what}: {:?}", r.error);
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{what} took {:?}",
            started.elapsed()
        );
        assert!(
            r.error.is_some(),
            "{what}: a failed run carries a typed error"
        );
        match want {
            Status::Trap => {
                let msg = &r
                    .error
                    .as_ref()
                    .map(|e| e.message.clone())
                    .unwrap_or_default();
                assert!(msg.contains("stack"), "{what}: {msg}");
            }
            Status::OutputTruncated => {
                assert!(r.stdout_truncated);
                assert_eq!(
                    r.stdout.len(),
                    100_000,
                    "{what}: everything up to the cap is kept"
                );
            }
            Status::Error => {
                assert_eq!(r.exit_code, Some(1));
                assert_eq!(r.stderr, "failing on purpose\n");
            }
            Status::MemoryExhausted => {
                assert!(r.usage.memory_peak_bytes <= 64 << 20);
            }
            _ => {}
        }
        assert_still_serving(s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escape_attempts_are_blocked_and_symlinks_are_not_returned() {
    let s = shared();
    let mut r = req("escape");
    r.files.push(InputFile {
        path: "in.txt".into(),
        content: Blob::from("inside"),
    });
    let r = s.run(&r).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert!(!r.stdout.contains("LEAK"), "{}", r.stdout);
    assert!(!r.stdout.contains("root:"));
    assert!(r.stdout.contains("blocked absolute /etc/passwd"));
    assert!(r.stdout.contains("blocked writing outside /work"));
    // The in-memory workspace has no links of any kind: even one inside
    // the workspace is refused when the guest tries to make it.
    assert!(
        r.stdout
            .contains("blocked creating an in-workspace symlink"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("blocked creating an escaping hard link"));
    assert!(r.artifacts.is_empty(), "{:?}", r.artifacts);
    assert!(!std::path::Path::new("/tmp/plimsoll-escape-mark").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guest_sees_no_environment_and_no_arguments() {
    let s = shared();
    assert!(
        std::env::vars().count() > 0,
        "the host process has an environment"
    );
    let r = s.run(&req("snoop")).await;
    assert_eq!(r.status, Status::Ok);
    assert!(r.stdout.contains("env 0\n"), "{}", r.stdout);
    assert!(r.stdout.contains("args 0\n"), "{}", r.stdout);
    assert!(!r.stdout.contains("var "));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_and_name_lookups_are_refused() {
    let s = shared();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let r = s.run(&with_stdin("socket", &port.to_string())).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert!(!r.stdout.contains("OPEN"), "{}", r.stdout);
    assert!(r.stdout.contains("blocked tcp connect"));
    assert!(r.stdout.contains("blocked dns"));
    // Nothing reached the real listener.
    assert!(matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_round_trip_as_artifacts() {
    let s = shared();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let mut r = with_stdin("echo", "piped through\n");
    r.files = vec![
        InputFile {
            path: "notes.txt".into(),
            content: Blob::from("some notes"),
        },
        InputFile {
            path: "data.bin".into(),
            content: Blob(binary.clone()),
        },
        InputFile {
            path: "nested/ignored.txt".into(),
            content: Blob::from("not top level"),
        },
    ];
    let r = s.run(&r).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.stdout, "piped through\n");
    let names: Vec<_> = r.artifacts.iter().map(|a| a.path.as_str()).collect();
    assert_eq!(names, ["data.bin", "notes.txt"]);
    assert_eq!(r.artifacts[0].content.as_bytes(), binary.as_slice());
    assert_eq!(r.artifacts[0].size, 70_000);
    assert_eq!(r.artifacts[1].content.as_bytes(), b"some notes");
    use sha2::Digest;
    assert_eq!(
        r.artifacts[0].sha256,
        hex::encode(sha2::Sha256::digest(&binary))
    );
    // The JSON form keeps binary artifacts intact.
    let json = serde_json::to_value(&r).expect("json");
    assert!(json["artifacts"][0]["content"]["base64"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifact_caps_truncate_without_failing_the_run() {
    let s = shared();
    let r = s
        .run(&with_limits(
            with_stdin("bigartifact", "3"),
            Limits {
                artifact_bytes: Some(1 << 20),
                ..Limits::default()
            },
        ))
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert!(r.artifacts.is_empty());
    assert!(r.artifacts_truncated);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_run_sees_another_runs_workspace() {
    let s = shared();
    let mut handles = Vec::new();
    for i in 0..8 {
        let mut r = req("listwork");
        r.files.push(InputFile {
            path: format!("secret-{i}.txt"),
            content: Blob::from(format!("secret {i}")),
        });
        handles.push(async move { (i, s.run(&r).await) });
    }
    let results = futures::future::join_all(handles).await;
    for (i, r) in results {
        assert_eq!(r.status, Status::Ok);
        let lines: Vec<_> = r.stdout.lines().collect();
        assert_eq!(
            lines,
            ["/work/out", &format!("/work/secret-{i}.txt")],
            "run {i} saw {lines:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floor_refusal_executes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    // Control: the marker guest leaves its mark when it runs.
    let ran = s.run(&req("marker")).await;
    assert_eq!(ran.status, Status::Ok);
    assert_eq!(ran.artifacts.len(), 1);
    assert_eq!(ran.artifacts[0].content.as_bytes(), b"I ran");
    assert!(ran.usage.fuel.is_some_and(|f| f > 0));

    for floor in [Tier::Container, Tier::Kernel, Tier::Vm] {
        let mut r = req("marker");
        r.minimum_isolation = Some(floor);
        let refused = s.run(&r).await;
        assert_eq!(refused.status, Status::Refused);
        assert_eq!(refused.error_code(), Some("insufficient_isolation"));
        assert!(refused.artifacts.is_empty() && refused.stdout.is_empty());
        assert_eq!(refused.usage.fuel, None, "no fuel was spent");
        assert!(refused.guest.is_some() && refused.usage.instantiate_ms == 0.0);
    }

    // The operator-wide floor refuses the same way.
    let dir2 = tempfile::tempdir().expect("tempdir");
    let strict = sandbox_in(dir2.path(), |c| c.min_isolation = Some(Tier::Container));
    let refused = strict.run(&req("marker")).await;
    assert_eq!(refused.error_code(), Some("insufficient_isolation"));
    // A floor at the provider's own tier is met.
    let mut r = req("marker");
    r.minimum_isolation = Some(Tier::Process);
    assert_eq!(s.run(&r).await.status, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_disabled_provider_refuses_every_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| c.provider = ProviderKind::Disabled);
    for name in ["hello", "marker"] {
        let r = s.run(&req(name)).await;
        assert_eq!(r.status, Status::Refused);
        assert_eq!(r.error_code(), Some("provider_disabled"));
        let msg = r.error.map(|e| e.message).unwrap_or_default();
        assert!(msg.contains("SANDBOX_PROVIDER"), "{msg}");
        assert!(r.artifacts.is_empty());
    }
    assert_eq!(entries(&dir.path().join("work")), 0);
    // Nothing configured at all means disabled.
    assert_eq!(
        plimsoll::SandboxConfig::default().provider,
        ProviderKind::Disabled
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_typed_errors_and_leaves_nothing_behind() {
    use plimsoll::component_cache::LoadError;
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    let work = dir.path().join("work");

    // Components.
    assert!(matches!(
        s.load(b"definitely not wasm"),
        Err(LoadError::Invalid(_))
    ));
    assert!(
        matches!(s.load(b"\0asm\x01\x00\x00\x00"), Err(LoadError::Invalid(_))),
        "a core module is not a component"
    );
    assert!(
        matches!(
            s.load(b"\0asm\x0d\x00\x01\x00"),
            Err(LoadError::WrongWorld(_))
        ),
        "an empty component fits no world"
    );
    let native = s
        .runtime()
        .engine()
        .engine()
        .precompile_component(&guest_bytes("hello"))
        .expect("precompile");
    assert!(matches!(s.load(&native), Err(LoadError::Precompiled)));

    let refused = |r: &RunResult, code: &str| {
        assert_eq!(r.status, Status::Refused, "{r:?}");
        assert_eq!(r.error_code(), Some(code), "{r:?}");
    };
    // Files.
    for bad in [
        "../escape.txt",
        "/etc/passwd",
        "a//b",
        "a/./b",
        "nul\0byte",
        "",
    ] {
        let mut r = req("hello");
        r.files.push(InputFile {
            path: "fine.txt".into(),
            content: Blob::from("ok"),
        });
        r.files.push(InputFile {
            path: bad.into(),
            content: Blob::from("x"),
        });
        refused(&s.run(&r).await, "invalid_request");
    }
    let mut dup = req("hello");
    for _ in 0..2 {
        dup.files.push(InputFile {
            path: "same.txt".into(),
            content: Blob::from("x"),
        });
    }
    refused(&s.run(&dup).await, "invalid_request");
    let mut many = req("hello");
    for i in 0..65 {
        many.files.push(InputFile {
            path: format!("f{i}"),
            content: Blob::from("x"),
        });
    }
    refused(&s.run(&many).await, "invalid_request");
    // Sizes and limits.
    let big = RunRequest {
        stdin: Blob(vec![0; (8 << 20) + 1]),
        ..req("hello")
    };
    refused(&s.run(&big).await, "invalid_request");
    for limits in [
        Limits {
            wall_time_ms: Some(0),
            ..Limits::default()
        },
        Limits {
            memory_bytes: Some(u64::MAX),
            ..Limits::default()
        },
        Limits {
            fuel: Some(u64::MAX),
            ..Limits::default()
        },
    ] {
        refused(
            &s.run(&with_limits(req("hello"), limits)).await,
            "invalid_limits",
        );
    }
    // Names.
    refused(&s.run(&req("no-such-component")).await, "unknown_component");
    refused(&s.run(&RunRequest::default()).await, "invalid_request");
    let mut wrong_identity = req("hello");
    wrong_identity.require_identity = Some("component:sha256:0000".into());
    refused(&s.run(&wrong_identity).await, "identity_mismatch");
    let mut grants = req("hello");
    grants.grants.push("orders".into());
    refused(&s.run(&grants).await, "unknown_grant");
    // Unknown JSON fields are rejected.
    assert!(
        serde_json::from_str::<RunRequest>(r#"{"component": "hello", "stdinn": "x"}"#).is_err()
    );

    assert_eq!(
        entries(&work),
        0,
        "every refused run left its workspace behind"
    );
    assert_still_serving(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_sheds_with_busy_instead_of_queueing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| c.runtime.engine.max_live_instances = 2);
    let spin = with_limits(
        req("spin"),
        Limits {
            wall_time_ms: Some(1500),
            ..Limits::default()
        },
    );
    let runs: Vec<_> = (0..6).map(|_| s.run(&spin)).collect();
    let results = futures::future::join_all(runs).await;
    let busy = results
        .iter()
        .filter(|r| r.error_code() == Some("busy"))
        .count();
    let timeouts = results
        .iter()
        .filter(|r| r.status == Status::Timeout)
        .count();
    assert_eq!(
        busy + timeouts,
        6,
        "{:?}",
        results.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(
        busy >= 1 && timeouts >= 1,
        "busy {busy}, timeouts {timeouts}"
    );
    assert_still_serving(&s).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_busy_guests_all_end_at_their_deadline() {
    let s = shared();
    let spin = with_limits(
        req("spin"),
        Limits {
            wall_time_ms: Some(300),
            ..Limits::default()
        },
    );
    let started = Instant::now();
    let results: Vec<RunResult> = futures::future::join_all((0..16).map(|_| s.run(&spin))).await;
    assert!(results.iter().all(|r| r.status == Status::Timeout));
    // 16 guests on two threads: each yields at every epoch tick, so all of
    // them reach their deadline at about the same time instead of one after
    // another (which would take 16 × 300 ms).
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_broker_denies_and_traces_calls_without_a_grant() {
    let s = shared();
    let r = s
        .run(&with_stdin(
            "broker_caller",
            "GET\torders\t/v1/orders/1?secret=hunter2\nFROB\torders\t/x\n",
        ))
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.stdout, "err denied\nerr denied\n");
    assert_eq!(r.calls.total(), 2);
    assert!(
        r.calls
            .rows
            .iter()
            .all(|c| c.outcome == CallOutcome::Denied)
    );
    assert!(
        r.calls
            .rows
            .iter()
            .all(|c| c.grant.is_none() && c.route.is_none())
    );
    assert_eq!(r.calls.rows[0].method.as_deref(), Some("GET"));
    assert_eq!(r.calls.rows[1].method, None);
    let json = serde_json::to_string(&r.calls).expect("json");
    assert!(
        !json.contains("hunter2") && !json.contains("/v1/orders"),
        "{json}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocation_churn_finishes_with_a_bounded_peak() {
    let s = shared();
    let r = s.run(&req("churn")).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert!(
        r.usage.memory_peak_bytes < 16 << 20,
        "peak {}",
        r.usage.memory_peak_bytes
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compiled_components_are_cached_on_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let own_cache = |c: &mut plimsoll::SandboxConfig| {
        c.runtime.cache_dir = Some(dir.path().join("components"));
        c.interpreters.clear();
    };
    let _s = sandbox_in(dir.path(), own_cache);
    let cache = dir.path().join("components");
    let hash = plimsoll::component_cache::content_hash(&guest_bytes("hello"));
    let hit = std::fs::read_dir(&cache)
        .expect("cache dir")
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(&hash));
    assert!(hit, "no cache entry for hello");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&cache).expect("md").permissions().mode();
    assert_eq!(mode & 0o077, 0, "the cache is private");
    // A second sandbox loads from the cache and runs the same guest.
    let s2 = sandbox_in(dir.path(), own_cache);
    assert_eq!(s2.run(&req("hello")).await.status, Status::Ok);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_component_file_is_never_served_from_the_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| c.interpreters.clear());
    let file = dir.path().join("guest.wasm");
    std::fs::write(&file, guest_bytes("hello")).expect("write");
    let first = s.runtime().load_file(&file).expect("load");
    let again = s.runtime().load_file(&file).expect("load from the index");
    assert_eq!(first.identity(), again.identity());
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&file, guest_bytes("echo")).expect("rewrite");
    let changed = s.runtime().load_file(&file).expect("load changed");
    assert_ne!(changed.identity(), first.identity());
    let hash = plimsoll::component_cache::content_hash(&guest_bytes("echo"));
    assert_eq!(changed.identity(), format!("component:sha256:{hash}"));
}

/// Images for a boundary whose CPU is not the host's (a microVM under
/// TCG): an image compiled for a wider CPU level than the loading engine's
/// is refused with the setting named, and one compiled for the engine's
/// own level loads and runs. `x86-64-v2` against the bare `x86-64`
/// baseline, so that the mismatch exists on every x86-64 machine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_for_a_wider_cpu_level_is_refused_with_the_setting_named() {
    use plimsoll::component_cache::LoadError;
    use plimsoll::{CpuTarget, EngineOptions, Runtime, RuntimeConfig};
    let dir = tempfile::tempdir().expect("tempdir");
    let images = dir.path().join("images");
    std::fs::create_dir_all(&images).expect("image dir");
    let runtime = |cpu: CpuTarget| {
        Runtime::new(RuntimeConfig {
            engine: EngineOptions {
                cpu,
                max_live_instances: 4,
                ..EngineOptions::default()
            },
            cache_dir: None,
            workspace_dir: dir.path().join(cpu.as_str()),
            ..RuntimeConfig::default()
        })
        .expect("runtime")
    };
    let bytes = guest_bytes("hello");
    let wide = runtime(CpuTarget::X86_64V2);
    let narrow = runtime(CpuTarget::X86_64);
    let wide_guest = wide.load(&bytes).expect("compile for v2");
    let wide_image = wide.write_image(&wide_guest, &images).expect("v2 image");
    let narrow_guest = narrow.load(&bytes).expect("compile for the baseline");
    let narrow_image = narrow
        .write_image(&narrow_guest, &images)
        .expect("baseline image");
    assert_ne!(
        wide_image, narrow_image,
        "the image name's digest must cover the CPU level"
    );

    let err = narrow
        .load_trusted_image(
            &images.join(&wide_image),
            wide_guest.content_hash(),
            "component",
        )
        .expect_err("a v2 image must not load into a baseline engine");
    let msg = err.to_string();
    assert!(
        matches!(err, LoadError::IncompatibleImage(_)),
        "typed: {err:?}"
    );
    let v2_settings: Vec<&str> = CpuTarget::X86_64V2
        .features()
        .expect("fixed level")
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert!(
        msg.starts_with("compilation setting") && v2_settings.iter().any(|s| msg.contains(s)),
        "the cause comes first and names the setting: {msg}"
    );
    assert!(msg.contains("CPU level x86-64"), "{msg}");

    let loaded = narrow
        .load_trusted_image(
            &images.join(&narrow_image),
            narrow_guest.content_hash(),
            "component",
        )
        .expect("the baseline image loads");
    let sandbox = Sandbox::new(plimsoll::SandboxConfig {
        provider: ProviderKind::Wasm,
        runtime: RuntimeConfig {
            engine: EngineOptions {
                cpu: CpuTarget::X86_64,
                max_live_instances: 4,
                ..EngineOptions::default()
            },
            cache_dir: None,
            workspace_dir: dir.path().join("run"),
            ..plimsoll::RuntimeConfig::default()
        },
        ..plimsoll::SandboxConfig::default()
    })
    .expect("sandbox at the baseline level");
    sandbox.register("hello", &bytes).expect("register");
    assert_eq!(loaded.content_hash(), narrow_guest.content_hash());
    let r = sandbox.run(&req("hello")).await;
    assert_eq!(r.status, Status::Ok, "{:?}", r.error);
}
