//! `plimsolld`: the plimsoll daemon. Configuration is the environment
//! (docs/operations.md); `plimsolld --openapi` prints the API document.

use plimsolld::audit::{AuditLog, AuditRecord, now_rfc3339};
use plimsolld::callers::Callers;
use plimsolld::config::DaemonConfig;
use plimsolld::hardened;
use plimsolld::metrics::Metrics;
use plimsolld::quota::Quotas;
use plimsolld::routes;
use plimsolld::server::{self, ConnLimits};
use plimsolld::service::App;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a node handing its sessions over keeps serving the calls
/// already on their way after it told its balancer `down` (HAProxy's agent
/// check runs every 500 ms in deploy/haproxy/plimsoll.cfg).
const HANDOVER_SETTLE: Duration = Duration::from_millis(1500);

/// Exit code for a configuration the daemon refuses (sysexits EX_CONFIG).
const EXIT_CONFIG: u8 = 78;

fn refuse(lines: &[String]) -> ExitCode {
    eprintln!("plimsolld: refusing to start:");
    for l in lines {
        eprintln!("  - {l}");
    }
    ExitCode::from(EXIT_CONFIG)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--openapi") => {
            println!("{}", plimsolld::openapi::document());
            return ExitCode::SUCCESS;
        }
        Some("--version") => {
            println!("plimsolld {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--help") | Some("-h") => {
            println!(
                "plimsolld: serves the plimsoll sandbox over HTTP.\n\n\
                 Configured by environment variables; see docs/operations.md.\n\
                 plimsolld --openapi   print the OpenAPI document\n\
                 plimsolld --version   print the version"
            );
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("plimsolld: unknown argument {other:?} (try --help)");
            return ExitCode::from(2);
        }
        None => {}
    }
    // The MCP SDK's events are dropped whatever PLIMSOLL_LOG says: it logs
    // session ids, which are capabilities.
    plimsoll::logging::init("info");
    plimsoll::reaper::map_large_buffers();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("plimsolld: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    rt.block_on(run())
}

async fn run() -> ExitCode {
    let mut cfg = match DaemonConfig::from_env() {
        Ok(c) => c,
        Err(e) => return refuse(&[e.to_string()]),
    };

    // Callers first: their session caps size the library's session table.
    let per_caller_default = u32::try_from(cfg.sandbox.sessions.per_caller).unwrap_or(u32::MAX);
    let callers = match &cfg.clients_file {
        Some(path) => match Callers::load(
            path,
            &cfg.sandbox.envelope,
            &cfg.sandbox.grants,
            per_caller_default,
        ) {
            Ok(c) => Some(c),
            Err(e) => return refuse(&[e.to_string()]),
        },
        None => None,
    };
    if let Some(c) = &callers {
        let most = c.iter().map(|c| c.max_sessions as usize).max().unwrap_or(0);
        cfg.sandbox.sessions.per_caller = cfg.sandbox.sessions.per_caller.max(most);
    }

    // A fleet node: its tag and boot epoch begin every session id.
    let node = match cfg.node_tag.as_deref().map(plimsolld::fleet::Node::new) {
        Some(Ok(n)) => Some(n),
        Some(Err(e)) => return refuse(&[e.to_string()]),
        None => None,
    };
    cfg.sandbox.sessions.id_prefix = node.map(|n| n.prefix());

    // Plain listeners only on loopback; no callers file only on loopback.
    let mut problems = Vec::new();
    if cfg.shared_state_url.is_some() && node.is_none() {
        problems.push(
            "PLIMSOLL_SHARED_STATE_URL needs PLIMSOLL_NODE_TAG: every node of a fleet has its tag"
                .into(),
        );
    }
    for (name, addr, tls) in cfg.listeners() {
        if !addr.ip().is_loopback() && !tls {
            problems.push(format!(
                "the {name} listener {addr} is not loopback and has no TLS: set PLIMSOLL_TLS_CERT and PLIMSOLL_TLS_KEY{}",
                if name == "metrics" { " (the metrics listener serves plain HTTP: keep it on loopback or set PLIMSOLL_METRICS_ADDR=off)" } else { "" }
            ));
        }
    }
    if callers.is_none() {
        if !cfg.insecure {
            problems.push(
                "no callers file: set PLIMSOLL_CLIENTS_FILE (see docs/callers.md), or PLIMSOLL_INSECURE=1 for a loopback-only development daemon without tokens".into(),
            );
        } else if cfg
            .listeners()
            .iter()
            .any(|(_, a, _)| !a.ip().is_loopback())
        {
            problems
                .push("PLIMSOLL_INSECURE=1 is allowed only when every listener is loopback".into());
        }
    }
    if cfg.max_body_in_flight < cfg.max_body_bytes as u64 {
        problems.push(format!(
            "PLIMSOLL_MAX_BODY_BYTES_IN_FLIGHT ({}) is below PLIMSOLL_MAX_BODY_BYTES ({}): no large request could ever be read",
            cfg.max_body_in_flight, cfg.max_body_bytes
        ));
    }
    if !cfg.hardened && !problems.is_empty() {
        return refuse(&problems);
    }

    // Guests compile in the background and runs wait for them, so that
    // the daemon listens at once. With pinned guests (and so in hardened
    // mode) every guest's identity is checked before the daemon listens:
    // it loads them first (from the component cache: seconds).
    let verify_first = cfg.hardened || !cfg.guest_pins.is_empty();
    let started = if verify_first {
        plimsoll::Sandbox::new(cfg.sandbox.clone())
    } else {
        plimsoll::Sandbox::start(cfg.sandbox.clone())
    };
    let sandbox = match started {
        Ok(s) => Arc::new(s),
        Err(e) => return refuse(&[e.to_string()]),
    };
    let mut components = Vec::new();
    if let Some(dir) = &cfg.components_dir {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) => return refuse(&[format!("PLIMSOLL_COMPONENTS_DIR {}: {e}", dir.display())]),
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
            .collect();
        paths.sort();
        for p in paths {
            let Some(name) = p.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
                continue;
            };
            match sandbox.runtime().load_file(&p) {
                Ok(g) => {
                    components.push((name.clone(), g.identity().to_owned()));
                    sandbox.register_guest(&name, g);
                }
                Err(e) => return refuse(&[format!("component {}: {e}", p.display())]),
            }
        }
    }
    let mut identities: Vec<String> = sandbox
        .interpreter_identities()
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    identities.extend(components.iter().map(|(_, id)| id.clone()));
    if !cfg.guest_pins.is_empty() {
        for id in &identities {
            if !cfg.guest_pins.contains(id) {
                problems.push(format!(
                    "guest {id} is not in PLIMSOLL_GUEST_PINS; it would be served unpinned"
                ));
            }
        }
    }
    let isolation = sandbox.isolation();
    if cfg.hardened {
        let unmet = hardened::unmet(&hardened::Facts {
            config: &cfg,
            isolation: &isolation,
            callers: callers.as_ref(),
            guest_identities: &identities,
            sessions_on: !sandbox.interpreter_identities().is_empty(),
        });
        let mut lines: Vec<String> = unmet.into_iter().map(|u| u.message).collect();
        lines.append(&mut problems);
        if !lines.is_empty() {
            eprintln!("plimsolld: hardened mode (PLIMSOLL_HARDENED=1): conditions not met:");
            return refuse(&lines);
        }
    } else if !problems.is_empty() {
        return refuse(&problems);
    }
    let callers = match callers {
        Some(c) => c,
        None => {
            tracing::warn!(
                "INSECURE MODE: PLIMSOLL_INSECURE=1 and no callers file — every request on loopback is the `local` caller, with no token, no per-caller limits and every grant profile"
            );
            Callers::insecure_local(&cfg.sandbox.envelope, per_caller_default)
        }
    };
    if isolation.provider == "disabled" {
        tracing::warn!(
            "SANDBOX_PROVIDER is not set: the `disabled` provider refuses every run (set SANDBOX_PROVIDER=wasm to run guests in-process, tier `process`)"
        );
    }

    let tls = match &cfg.tls {
        Some((cert, key)) => match plimsolld::tls::acceptor(cert, key) {
            Ok(a) => Some(a),
            Err(e) => return refuse(&[e.to_string()]),
        },
        None => None,
    };
    let roots = match &cfg.shared_state_ca_file {
        Some(p) => match std::fs::read(p) {
            Ok(pem) => Some(pem),
            Err(e) => {
                return refuse(&[format!(
                    "cannot read PLIMSOLL_SHARED_STATE_CA_FILE {}: {e}",
                    p.display()
                )]);
            }
        },
        None => None,
    };
    let fleet = match (&cfg.shared_state_url, node) {
        (Some(url), Some(node)) => match plimsolld::fleet::Shared::connect(
            url,
            roots,
            node,
            cfg.fleet_size,
            cfg.shared_state_failure,
        )
        .await
        {
            Ok(s) => Some(Arc::new(s)),
            Err(e) => return refuse(&[e]),
        },
        _ => None,
    };
    let fleet_key = match &cfg.fleet_key_file {
        Some(p) => match std::fs::read_to_string(p)
            .map_err(|e| format!("{}: {e}", p.display()))
            .and_then(|t| plimsolld::fleet::handover::Key::parse(&t).map_err(|e| e.to_string()))
        {
            Ok(k) => Some(Arc::new(k)),
            Err(e) => return refuse(&[format!("the fleet's key: {e}")]),
        },
        None => None,
    };
    let share = if fleet.is_some() { cfg.fleet_size } else { 1 };
    let quotas = match Quotas::new(callers.iter(), cfg.max_inflight, &cfg.state_dir, share) {
        Ok(q) => q,
        Err(e) => return refuse(&[format!("state directory {}: {e}", cfg.state_dir.display())]),
    };
    let api_listener = match tokio::net::TcpListener::bind(cfg.listen).await {
        Ok(l) => l,
        Err(e) => return refuse(&[format!("cannot listen on {}: {e}", cfg.listen)]),
    };
    let metrics_listener = match cfg.metrics {
        Some(addr) => match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => Some(l),
            Err(e) => return refuse(&[format!("cannot listen on {addr} for metrics: {e}")]),
        },
        None => None,
    };

    let start = AuditRecord {
        time: now_rfc3339(),
        event: "daemon_start",
        provider: isolation.provider.clone(),
        tier: isolation.tier.as_str().to_owned(),
        outcome: "ok".into(),
        node: node.map(|n| n.tag_hex()),
        epoch: node.map(|n| n.epoch_hex()),
        ..AuditRecord::default()
    };
    let audit = match AuditLog::open(&cfg.audit_log, start, cfg.audit_sync) {
        Ok(a) => a,
        Err(e) => {
            return refuse(&[format!(
                "the audit log {} cannot be written ({e}); the daemon does not run unaudited",
                cfg.audit_log.display()
            )]);
        }
    };
    let share = plimsolld::service::body_share_kib(
        cfg.max_body_in_flight,
        cfg.max_body_bytes,
        callers.iter().count(),
    );
    let body_shares = callers
        .iter()
        .map(|c| (c.id.clone(), Arc::new(tokio::sync::Semaphore::new(share))))
        .collect();
    let app = Arc::new(App {
        sandbox: sandbox.clone(),
        callers,
        quotas,
        audit: audit.clone(),
        metrics: Metrics::new(),
        draining: Default::default(),
        components,
        max_body: cfg.max_body_bytes,
        bodies: Arc::new(tokio::sync::Semaphore::new(
            usize::try_from(cfg.max_body_in_flight / 1024)
                .unwrap_or(usize::MAX)
                .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
        )),
        body_shares,
        body_timeout: cfg.body_timeout,
        max_sessions_per_owner: cfg.max_sessions_per_owner,
        chains: Default::default(),
        snapshots: match plimsoll::snapshot::store::SnapshotStore::open(
            &cfg.snapshot_dir,
            cfg.snapshot_limits,
        ) {
            Ok(s) => Some(Arc::new(s)),
            Err(e) => {
                tracing::warn!(
                    "snapshots are off: the snapshot directory could not be opened: {}",
                    e.kind()
                );
                None
            }
        },
        snapshot_max_bytes: cfg.snapshot_max_bytes,
        node,
        fleet: fleet.clone(),
        agent: Default::default(),
        sessions_draining: Default::default(),
        fleet_key,
        handover_waiters: Default::default(),
    });
    if let Some(n) = node {
        app.metrics.set_node(&n.tag_hex(), &n.epoch_hex());
    }
    if let Some(f) = &fleet {
        let _ = f.register(cfg.agent_addr).await;
        app.metrics.set_shared_state_up(f.up());
    }
    let agent_task = match cfg.agent_addr {
        Some(addr) => match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => Some(tokio::spawn(plimsolld::fleet::agent::serve(
                l,
                app.agent.clone(),
            ))),
            Err(e) => {
                return refuse(&[format!("cannot listen on {addr} for the agent check: {e}")]);
            }
        },
        None => None,
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let limits = ConnLimits {
        max_connections: cfg.max_connections,
        header_timeout: cfg.header_timeout,
        max_unauthenticated_per_peer: cfg.max_unauthenticated_per_peer,
    };
    let authenticates: server::Authenticates = {
        let app = app.clone();
        Some(Arc::new(move |h: &http::HeaderMap| {
            app.callers
                .authenticate(plimsolld::callers::bearer(
                    h.get(http::header::AUTHORIZATION),
                ))
                .is_some()
        }))
    };
    let api_addr = api_listener.local_addr().ok();
    let api_task = tokio::spawn(server::serve(
        api_listener,
        tls,
        routes::router(app.clone()),
        limits,
        authenticates,
        stop_rx.clone(),
        cfg.drain,
    ));
    let metrics_addr = metrics_listener.as_ref().and_then(|l| l.local_addr().ok());
    let metrics_task = metrics_listener.map(|l| {
        tokio::spawn(server::serve(
            l,
            None,
            routes::metrics_router(app.clone()),
            ConnLimits {
                max_connections: 64,
                header_timeout: cfg.header_timeout,
                max_unauthenticated_per_peer: 64,
            },
            None,
            stop_rx.clone(),
            Duration::from_secs(1),
        ))
    });
    // Housekeeping: expire sessions, persist the daily ledger, and give
    // freed memory back to the system when the daemon goes idle.
    let house = {
        let app = app.clone();
        let agent_addr = cfg.agent_addr;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            let mut last_open = 0usize;
            let mut trimmed = true;
            loop {
                tick.tick().await;
                let open = app.sandbox.sweep_sessions();
                if let Some(s) = &app.snapshots {
                    s.sweep();
                }
                // The fleet: this node's registry entry, and its open
                // sessions' places under their callers' caps.
                if let Some(f) = &app.fleet {
                    let _ = f.register(agent_addr).await;
                    let mut by_caller: std::collections::HashMap<String, Vec<String>> =
                        std::collections::HashMap::new();
                    for (caller, id) in app.sandbox.open_sessions() {
                        by_caller
                            .entry(caller)
                            .or_default()
                            .push(plimsolld::service::fingerprint(&id));
                    }
                    for (caller, fps) in by_caller {
                        let _ = f.renew_sessions(&caller, &fps).await;
                    }
                    for (caller, leases) in app.quotas.leases_by_caller() {
                        let _ = f.renew_leases(&caller, &leases).await;
                    }
                    app.metrics.set_shared_state_up(f.up());
                }
                app.metrics.set_sessions(open);
                if let Err(e) = app.quotas.ledger.flush() {
                    tracing::error!("cannot persist the daily allowance ledger: {e}");
                }
                // Sessions closed, or the load is gone: trim once.
                if open < last_open {
                    trimmed = false;
                }
                last_open = open;
                // Only once the reaper has dropped the closed sessions'
                // instances: trimming before that returns nothing.
                if !trimmed
                    && app.quotas.inflight() == 0
                    && plimsoll::reaper::pending_instances() == 0
                {
                    plimsoll::reaper::return_free_memory();
                    trimmed = true;
                }
            }
        })
    };
    // The line tests and operators wait for.
    eprintln!(
        "plimsolld: listening on {}{} (metrics: {}); provider {} (tier {}); audit log {}",
        if cfg.tls.is_some() {
            "https://"
        } else {
            "http://"
        },
        api_addr.map(|a| a.to_string()).unwrap_or_default(),
        metrics_addr
            .map(|a| format!("http://{a}/metrics"))
            .unwrap_or_else(|| "off".into()),
        isolation.provider,
        isolation.tier,
        cfg.audit_log.display()
    );

    wait_for_signal().await;
    // Sessions first. A fleet node with its key and snapshots hands them
    // over: the balancer is told `down` (new calls for them go to the
    // nodes that stay, which wait for them), the calls already on their
    // way here are served for a moment, then each session is snapshotted,
    // sealed and left for the next node called for it.
    if app.hands_over() {
        if let Some(f) = &app.fleet {
            let _ = f.mark_migrating().await;
        }
        app.sessions_draining.store(true, Ordering::Release);
        app.draining.store(true, Ordering::Release);
        app.agent.set(plimsolld::fleet::agent::State::Down);
        tokio::time::sleep(HANDOVER_SETTLE).await;
        let n = app.hand_over_sessions().await;
        tracing::info!("draining: handed {n} open sessions over to the fleet");
        app.sessions_draining.store(false, Ordering::Release);
    }
    // Otherwise no new work, but calls on open sessions are served until
    // they close or the time is up (PLIMSOLL_SESSION_DRAIN_SECS).
    app.agent.set(plimsolld::fleet::agent::State::Drain);
    if !cfg.session_drain.is_zero() && app.sandbox.session_total() > 0 {
        tracing::info!(
            "draining: serving open sessions for up to {:?}",
            cfg.session_drain
        );
        app.sessions_draining.store(true, Ordering::Release);
        app.draining.store(true, Ordering::Release);
        let until = std::time::Instant::now() + cfg.session_drain;
        while app.sandbox.session_total() > 0 && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        app.sessions_draining.store(false, Ordering::Release);
    }
    if let Some(f) = &app.fleet {
        let _ = f.mark_drained().await;
    }
    app.agent.set(plimsolld::fleet::agent::State::Down);
    tracing::info!(
        "shutting down: draining in-flight runs for up to {:?}",
        cfg.drain
    );
    app.draining.store(true, Ordering::Release);
    let _ = stop_tx.send(true);
    let drained = app.quotas.wait_idle(cfg.drain).await;
    if !drained {
        tracing::warn!("drain deadline passed with runs still in flight");
    }
    let _ = api_task.await;
    if let Some(t) = metrics_task {
        let _ = t.await;
    }
    house.abort();
    if let Some(t) = agent_task {
        t.abort();
    }
    sandbox.close_all_sessions();
    if let Err(e) = app.quotas.ledger.flush() {
        tracing::error!("cannot persist the daily allowance ledger: {e}");
    }
    audit
        .close(AuditRecord {
            time: now_rfc3339(),
            event: "daemon_stop",
            provider: isolation.provider.clone(),
            tier: isolation.tier.as_str().to_owned(),
            outcome: if drained { "ok" } else { "drain_deadline" }.into(),
            ..AuditRecord::default()
        })
        .await;
    plimsoll::reaper::flush(Duration::from_secs(10));
    eprintln!("plimsolld: stopped");
    ExitCode::SUCCESS
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        // Without signal handlers the daemon can still be killed; it just
        // cannot drain.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {},
        _ = int.recv() => {},
    }
}
