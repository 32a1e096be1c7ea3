//! The workspace in host memory (host/src/memtree.rs, host/src/memfs.rs),
//! through the real component path: random filesystem programs against a
//! real filesystem, exact caps, no host descriptors, and the programs
//! agents write.

mod support;

use plimsoll::envelope::Limits;
use plimsoll::{Language, RunRequest, Status};
use support::*;

fn py(code: &str) -> RunRequest {
    RunRequest::code(Language::Python, code)
}

fn fds_of_this_process() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

/// The program for `seed`, with its operation count.
fn program(seed: u64, ops: u64) -> String {
    include_str!("workspace/fs_program.py")
        .replace("__SEED__", &seed.to_string())
        .replace("__OPS__", &ops.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_filesystem_programs_agree_with_a_real_filesystem() {
    let s = shared();
    for seed in 1..=40u64 {
        let code = program(seed, 160);
        // The reference: the host's own CPython on a real directory.
        let dir = tempfile::tempdir().expect("tempdir");
        let native = std::process::Command::new("python3")
            .arg("-c")
            .arg(&code)
            .current_dir(dir.path())
            .output()
            .expect("python3 on the host");
        assert!(
            native.status.success(),
            "{}",
            String::from_utf8_lossy(&native.stderr)
        );
        let want = String::from_utf8_lossy(&native.stdout).into_owned();
        let r = s.run(&py(&code)).await;
        assert_eq!(r.status, Status::Ok, "seed {seed}: {r:?}");
        let got = r.stdout.clone();
        if got != want {
            let first = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            panic!(
                "seed {seed}: the workspace and a real filesystem differ at line {first}:\n  guest:  {:?}\n  native: {:?}\n--- guest\n{got}\n--- native\n{want}",
                got.lines().nth(first),
                want.lines().nth(first)
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlinked_open_file_cannot_pass_the_cap_in_a_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = sandbox_in(dir.path(), |_| {});
    let limits = Limits {
        workspace_bytes: Some(8 << 20),
        ..Limits::default()
    };
    let mut open = py("");
    open.limits = limits;
    let info = s.open_session("me", &open).await.expect("session");
    for cell in 0..3 {
        let mut r = py(
            "import os\nf = open('x', 'wb')\nos.unlink('x')\nwritten = 0\ntry:\n    while True:\n        f.write(b'x' * 65536); f.flush(); written += 65536\nexcept OSError as e:\n    import errno\n    print(written, errno.errorcode[e.errno])\n    raise",
        );
        r.limits = limits;
        let out = s.run_in_session("me", &info.session_id, &r).await;
        assert_eq!(out.status, Status::DiskExhausted, "cell {cell}: {out:?}");
        let written: u64 = out
            .stdout
            .split_whitespace()
            .next()
            .and_then(|w| w.parse().ok())
            .expect("bytes written");
        // At most the cap, and nearly all of it each time: the cell before
        // left nothing behind once its handle went.
        assert!(
            (7 << 20..=8 << 20).contains(&written),
            "cell {cell} wrote {written}"
        );
        // A write through a stream reports the full disk as EIO: the
        // guest's libc does not ask the stream's error for its code.
        assert!(
            [" ENOSPC", " EIO"]
                .iter()
                .any(|e| out.stdout.trim_end().ends_with(e)),
            "{}",
            out.stdout
        );
        // The file's bytes go when the cell's handle does.
        // Closing flushes the buffer, which does not fit either; the
        // handle goes all the same.
        let mut r = py("try:\n    f.close()\nexcept OSError:\n    pass\ndel f\n1");
        r.limits = limits;
        let closed = s.run_in_session("me", &info.session_id, &r).await;
        assert_eq!(closed.status, Status::Ok, "{closed:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_files_take_no_host_descriptor_and_handles_are_capped() {
    let s = shared();
    let before = fds_of_this_process();
    let mut r = py(
        "import os\nfs = []\ntry:\n    while True:\n        fs.append(open(f'f{len(fs)}', 'w'))\nexcept OSError as e:\n    import errno\n    print(len(fs), errno.errorcode[e.errno])",
    );
    r.limits = Limits {
        open_files: Some(500),
        ..Limits::default()
    };
    let t = tokio::spawn(async move { s.run(&r).await });
    // Another run meanwhile is unaffected.
    let other = s
        .run(&py("open('y', 'w').write('ok'); open('y').read()"))
        .await;
    assert_eq!(other.result.as_deref(), Some("'ok'"), "{other:?}");
    let r = t.await.expect("join");
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let mut it = r.stdout.split_whitespace();
    let held: usize = it.next().and_then(|n| n.parse().ok()).expect("count");
    // The preopen holds one handle of the 500.
    assert_eq!(held, 499, "{}", r.stdout);
    assert_eq!(it.next(), Some("EDQUOT"), "{}", r.stdout);
    assert!(
        fds_of_this_process() <= before + 64,
        "the host's descriptors grew from {before} to {}",
        fds_of_this_process()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_programs_agents_write_work() {
    let s = shared();
    let code = r#"
import csv, json, os, pathlib, shutil, tempfile
os.makedirs("data/raw", exist_ok=True)
with open("data/raw/t.csv", "w", newline="") as f:
    csv.writer(f).writerows([["a", "b"], [1, 2], [3, 4]])
rows = list(csv.DictReader(open("data/raw/t.csv")))
pathlib.Path("data/rows.json").write_text(json.dumps(rows))
for i in range(3):
    with open("log.txt", "a") as f:
        f.write(f"line {i}\n")
shutil.copytree("data", "copy")
with tempfile.TemporaryDirectory(dir="/work") as t:
    pathlib.Path(t, "scratch").write_bytes(b"s")
    inside = os.listdir(t)
walked = sorted(os.path.join(r, f) for r, _, fs in os.walk("copy") for f in fs)
shutil.rmtree("copy")
os.replace("log.txt", "out/log.txt")
p = pathlib.Path("data/rows.json")
[json.loads(p.read_text())[1]["b"], open("out/log.txt").read().count("line"), inside, walked, os.path.exists("copy"), p.stat().st_size > 0]
"#;
    let r = s.run(&py(code)).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    assert_eq!(
        r.result.as_deref(),
        Some("['4', 3, ['scratch'], ['copy/raw/t.csv', 'copy/rows.json'], False, True]")
    );
    assert_eq!(r.artifacts.len(), 1);
    assert_eq!(r.artifacts[0].path, "log.txt");
    let js = s
        .run(&RunRequest::code(
            Language::Javascript,
            "fs.mkdirSync('a/b', {recursive: true}); fs.writeFileSync('a/b/x.txt', 'one'); \
             fs.appendFileSync('a/b/x.txt', ' two'); fs.writeFileSync('out/r.json', JSON.stringify(fs.readdirSync('a/b'))); \
             fs.readFileSync('a/b/x.txt', 'utf8')",
        ))
        .await;
    assert_eq!(js.result.as_deref(), Some("\"one two\""), "{js:?}");
    assert_eq!(js.artifacts[0].content.as_bytes(), br#"["x.txt"]"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_paths_and_sizes_are_errors_within_the_caps() {
    let s = shared();
    let code = r#"
import errno, os
out = []
def t(name, f):
    try:
        f(); out.append(f"{name}: ok")
    except (OSError, ValueError, OverflowError) as e:
        out.append(f"{name}: {type(e).__name__} {errno.errorcode.get(getattr(e, 'errno', None) or 0, '')}")
t("long path", lambda: open("x" * 10000, "w"))
t("long name", lambda: open("n" * 300, "w"))
t("nul", lambda: open("a\0b", "w"))
t("invalid utf-8", lambda: open(b"\xff\xfe", "w"))
def deep():
    p = ""
    for i in range(2000):
        p = p + "/d" if p else "d"
        os.mkdir(p)
t("deep chain", deep)
os.makedirs("r/s", exist_ok=True)
t("rename into own child", lambda: os.rename("r", "r/s/r"))
fd = os.open("big", os.O_RDWR | os.O_CREAT)
t("pwrite at 2**63", lambda: os.pwrite(fd, b"x", 2**63))
t("pwrite at 2**62", lambda: os.pwrite(fd, b"x", 2**62))
def many():
    for i in range(100_000):
        open(f"e{i}", "w").close()
t("100,000 files", many)
t("escape", lambda: open("/etc/passwd"))
t("escape up", lambda: open("../../etc/passwd"))
t("symlink", lambda: os.symlink("big", "link"))
t("hard link", lambda: os.link("big", "hard"))
print("\n".join(out))
"#;
    let r = s.run(&py(code)).await;
    assert_eq!(r.status, Status::Ok, "{r:?}");
    let lines: Vec<&str> = r.stdout.lines().collect();
    let want = [
        "long path: OSError ENAMETOOLONG",
        "long name: OSError ENAMETOOLONG",
        "nul: ValueError ",
        "invalid utf-8: OSError EILSEQ",
        "deep chain: OSError ENAMETOOLONG",
        "rename into own child: OSError EINVAL",
        "pwrite at 2**63: OverflowError ",
        "pwrite at 2**62: OSError ENOSPC",
        "100,000 files: OSError ENOSPC",
        "escape: FileNotFoundError ENOENT",
        "escape up: PermissionError EPERM",
        "symlink: PermissionError EPERM",
        "hard link: PermissionError EPERM",
    ];
    assert_eq!(lines, want, "{}", r.stdout);
    let after = s.run(&py("1+1")).await;
    assert_eq!(after.result.as_deref(), Some("2"), "{after:?}");
}
