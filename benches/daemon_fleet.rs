//! The daemon bench's fleet rows (#38): the shared checks in Redis against
//! a single node, and three nodes behind HAProxy against one.

use super::*;

/// A program the fleet rows need (Debian's redis-server and haproxy,
/// `make setup`).
fn program(name: &str) -> PathBuf {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("{name} is missing: the fleet rows run the real Redis and HAProxy; `make setup` installs them")
        })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The fleet's costs (#38): the shared checks in Redis against a single
/// node, one client interleaved call by call; and three nodes behind
/// HAProxy against one node behind it, 64 clients.
pub(crate) fn fleet(state: &Path, cache: &Path, js: &Path, tmp: &Path, secs: Duration) {
    let redis_port = free_port();
    let mut redis = Command::new(program("redis-server"))
        .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .arg("--dir")
        .arg(tmp)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server");
    let t = Instant::now();
    while TcpStream::connect(("127.0.0.1", redis_port)).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("redis://127.0.0.1:{redis_port}/");
    let node = |i: usize, agent: u16| {
        let tag = format!("{i:04x}");
        let agent = format!("127.0.0.1:{agent}");
        let st = state.join(format!("fleet-{i}"));
        let env: Vec<(&str, &str)> = vec![
            ("PLIMSOLL_NODE_TAG", &tag),
            ("PLIMSOLL_SHARED_STATE_URL", &url),
            ("PLIMSOLL_FLEET_SIZE", "3"),
            ("PLIMSOLL_AGENT_ADDR", &agent),
        ];
        start_daemon_env(&st, cache, js, &env)
    };
    let (mut single, addr_single) = start_daemon(&state.join("fleet-single"), cache, js, "batch");
    let agents: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let mut nodes: Vec<(std::process::Child, SocketAddr)> =
        (0..3).map(|i| node(i, agents[i])).collect();
    let _ = over_http(addr_single, 1, Duration::from_millis(300));
    let _ = over_http(nodes[0].1, 1, Duration::from_millis(300));
    // One client, interleaved: the shared checks are the only difference.
    let (one, shared) = {
        let (mut a, mut b) = (Conn::open(addr_single), Conn::open(nodes[0].1));
        let (mut la, mut lb) = (Vec::new(), Vec::new());
        let t0 = Instant::now();
        while t0.elapsed() < secs * 2 {
            let t = Instant::now();
            assert_eq!(a.post(), 200);
            la.push(t.elapsed());
            let t = Instant::now();
            assert_eq!(b.post(), 200, "the fleet node refused a run");
            lb.push(t.elapsed());
        }
        // Each side's own time: one client, one call at a time.
        let (wa, wb) = (la.iter().sum(), lb.iter().sum());
        (stats(la, wa), stats(lb, wb))
    };
    // HAProxy with the deployed config, in front of one node and of three.
    let haproxy = |nodes: &[(std::process::Child, SocketAddr)], agents: &[u16]| {
        let bind = format!("127.0.0.1:{}", free_port());
        let mut cmd = Command::new(program("haproxy"));
        cmd.arg("-db")
            .arg("-f")
            .arg(repo().join("deploy/haproxy/plimsoll.cfg"))
            .env("PLIMSOLL_HAPROXY_BIND", &bind)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        for (i, &agent) in agents.iter().enumerate() {
            // Absent nodes point at a closed port: HAProxy marks them down.
            let (api, agent) = match nodes.get(i) {
                Some((_, a)) => (a.to_string(), agent),
                None => (format!("127.0.0.1:{}", free_port()), free_port()),
            };
            cmd.env(format!("PLIMSOLL_NODE_{i:04x}"), api)
                .env(format!("PLIMSOLL_AGENT_PORT_{i:04x}"), agent.to_string());
        }
        let child = cmd.spawn().expect("haproxy");
        let addr: SocketAddr = bind.parse().expect("addr");
        // Its checks mark the nodes up within a second or two.
        std::thread::sleep(Duration::from_secs(3));
        (child, addr)
    };
    let (mut lb1, addr1) = haproxy(&nodes[..1], &agents);
    let _ = over_http(addr1, 8, Duration::from_millis(500));
    let behind_one = over_http(addr1, 64, secs);
    let _ = lb1.kill();
    let _ = lb1.wait();
    let (mut lb3, addr3) = haproxy(&nodes, &agents);
    let _ = over_http(addr3, 8, Duration::from_millis(500));
    let behind_three = over_http(addr3, 64, secs);
    let _ = lb3.kill();
    let _ = lb3.wait();
    println!();
    println!("| the fleet (#38), JavaScript `1+1`, REST | runs/s | p50 / p99 | against |");
    println!("|---|---:|---:|---|");
    println!(
        "| single node, 1 client | {:.0} | {:.0} / {:.0} µs | |",
        one.runs_per_sec, one.p50_us, one.p99_us
    );
    println!(
        "| fleet node (Redis: rate + lease; settle off the answer's path), 1 client | {:.0} | {:.0} / {:.0} µs | {:+.0} µs at p50 |",
        shared.runs_per_sec,
        shared.p50_us,
        shared.p99_us,
        shared.p50_us - one.p50_us
    );
    println!(
        "| HAProxy → 1 fleet node, 64 clients | {:.0} | {:.0} / {:.0} µs | |",
        behind_one.runs_per_sec, behind_one.p50_us, behind_one.p99_us
    );
    println!(
        "| HAProxy → 3 fleet nodes, 64 clients | {:.0} | {:.0} / {:.0} µs | {:.2}× the one node |",
        behind_three.runs_per_sec,
        behind_three.p50_us,
        behind_three.p99_us,
        behind_three.runs_per_sec / behind_one.runs_per_sec
    );
    stop(&mut single);
    for (c, _) in nodes.iter_mut() {
        stop(c);
    }
    let _ = redis.kill();
    let _ = redis.wait();
}
