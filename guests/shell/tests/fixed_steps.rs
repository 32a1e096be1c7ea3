//! The client's eleven fixed step texts, byte-exact, and their effects;
//! and the OpenAI Agents SDK's file helpers (research doc a.2, a.3, a.6).

mod common;
use common::steps::*;
use common::*;

const S: &str = ".plimsoll-shell";

fn s(w: &Work, name: &str, data: impl AsRef<[u8]>) {
    w.write(&format!("{S}/{name}"), data);
}

fn sread(w: &Work, name: &str) -> Vec<u8> {
    w.read(&format!("{S}/{name}"))
}

fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16
            | (*c.get(1).unwrap_or(&0) as u32) << 8
            | *c.get(2).unwrap_or(&0) as u32;
        out.push(A[(n >> 18) as usize & 63] as char);
        out.push(A[(n >> 12) as usize & 63] as char);
        out.push(if c.len() > 1 {
            A[(n >> 6) as usize & 63] as char
        } else {
            '='
        });
        out.push(if c.len() > 2 {
            A[n as usize & 63] as char
        } else {
            '='
        });
    }
    out
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn step_texts_have_the_documented_lengths() {
    let lens: Vec<usize> = [
        ROOT_STEP,
        EXEC_STEP,
        TRUE_STEP,
        READ_STEP,
        WRITE_B64_STEP,
        APPEND_B64_STEP,
        GLOB_SHELL_STEP,
        GLOB_FIND_STEP,
        GREP_STEP,
        PERSIST_STEP,
        HYDRATE_STEP,
    ]
    .iter()
    .map(|s| s.len())
    .collect();
    assert_eq!(lens, [89, 437, 4, 151, 196, 126, 237, 290, 135, 167, 135]);
}

#[test]
fn root_and_true() {
    let w = Work::new();
    let o = w.sh(ROOT_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(sread(&w, "root"), b"/work\n");
    assert_eq!(w.sh(TRUE_STEP).status, 0);
}

#[test]
fn exec_saves_env_and_cwd_and_restores_them() {
    let w = Work::new();
    w.write("src/x.txt", "x");
    s(
        &w,
        "cmd",
        "cd src && export FOO=\"it's\" BAR=two; echo hi; ls\nexport GONE=1; unset GONE",
    );
    let o = w.sh(EXEC_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(o.out(), "hi\nx.txt\n");
    assert_eq!(sread(&w, "cwd"), b"/work/src\n");
    assert_eq!(sread(&w, "root"), b"/work\n");
    let env = String::from_utf8(sread(&w, "env")).unwrap();
    assert!(env.contains("export FOO='it'\\''s'\n"), "{env}");
    assert!(env.contains("export BAR='two'\n"), "{env}");
    assert!(env.contains("export HOME='/work'\n"), "{env}");
    assert!(!env.contains("PWD"), "{env}");
    assert!(!env.contains("__plimsoll_"), "{env}");
    assert!(!env.contains("GONE"), "{env}");
    assert!(env.lines().all(|l| l.starts_with("export ")), "{env}");
    let mut lines: Vec<&str> = env.lines().collect();
    let sorted = {
        let mut s = lines.clone();
        s.sort();
        s
    };
    assert_eq!(lines, sorted);
    lines.clear();
    // The next call starts where the last one ended.
    s(&w, "cmd", "echo \"$FOO\" $BAR; pwd; cd ..; false");
    let o = w.sh(EXEC_STEP);
    assert_eq!(o.status, 1);
    assert_eq!(o.out(), "it's two\n/work/src\n");
    assert_eq!(sread(&w, "cwd"), b"/work\n");
}

#[test]
fn exec_exit_in_the_first_call_leaves_no_cwd() {
    let w = Work::new();
    s(&w, "cmd", "echo before; exit 3; echo after");
    let o = w.sh(EXEC_STEP);
    assert_eq!(o.status, 3);
    assert_eq!(o.out(), "before\n");
    assert!(!w.file(".plimsoll-shell/cwd").exists());
}

#[test]
fn exec_runs_heredocs_and_programs() {
    let w = Work::new();
    s(
        &w,
        "cmd",
        "mkdir -p app && cd app\ncat > main.py <<'EOF'\nprint(\"$HOME\")\nEOF\npython3 main.py arg1 exit=4\n",
    );
    let o = w.sh(EXEC_STEP);
    assert_eq!(o.status, 4, "{}", o.err());
    assert_eq!(w.read("app/main.py"), b"print(\"$HOME\")\n");
    let calls = w.programs.calls.borrow();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].program, "python3");
    assert_eq!(calls[0].args, ["main.py", "arg1", "exit=4"]);
    assert_eq!(calls[0].cwd, "/work/app");
    assert!(
        calls[0]
            .env
            .iter()
            .any(|(k, v)| k == "HOME" && v == "/work")
    );
    assert_eq!(o.out(), "python3 main.py arg1 exit=4\n");
    assert!(o.err().contains("child-stderr"));
}

#[test]
fn read_is_binary_exact_and_fails_on_missing_files_and_dirs() {
    let w = Work::new();
    let data = noise(100_000, 7);
    w.write("bin/data.bin", &data);
    s(&w, "a1", "bin/data.bin");
    s(&w, "a2", "65537");
    let o = w.sh(READ_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(sread(&w, "out"), &data[..65537]);
    s(&w, "a2", "1048576");
    assert_eq!(w.sh(READ_STEP).status, 0);
    assert_eq!(sread(&w, "out"), data);
    s(&w, "a1", "/work/bin/data.bin");
    assert_eq!(w.sh(READ_STEP).status, 0);
    assert_eq!(sread(&w, "out"), data);
    s(&w, "a1", "missing.txt");
    let o = w.sh(READ_STEP);
    assert_ne!(o.status, 0);
    assert!(o.err().contains("No such file or directory"), "{}", o.err());
    s(&w, "a1", "bin");
    let o = w.sh(READ_STEP);
    assert_ne!(o.status, 0);
    s(&w, "a1", "/etc/passwd");
    assert_ne!(w.sh(READ_STEP).status, 0);
}

#[test]
fn write_b64_and_append_round_trip_three_megabytes() {
    let w = Work::new();
    let data = noise(3 << 20, 11);
    let (first, second) = data.split_at(2_359_296);
    s(&w, "a1", "deep/er/blob.bin");
    s(&w, "in.b64", b64(first));
    let o = w.sh(WRITE_B64_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(w.read("deep/er/blob.bin"), first);
    s(&w, "in.b64", b64(second));
    let o = w.sh(APPEND_B64_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(w.read("deep/er/blob.bin"), data);
    // Text written as bytes goes through the same path.
    s(&w, "a1", "/work/t.txt");
    s(&w, "in.b64", b64(b"caf\xc3\xa9\n"));
    assert_eq!(w.sh(WRITE_B64_STEP).status, 0);
    assert_eq!(w.read("t.txt"), b"caf\xc3\xa9\n");
}

fn tree(w: &Work) {
    w.write("a.py", "def f():\n    return 1\n");
    w.write("b.py", "x = 1\n");
    w.write("c.txt", "def not python\n");
    w.write("sub/d.py", "def g():\n    pass\n");
    w.write("sub/deeper/e.py", "import os\n");
    w.write(".plimsoll-shell/junk.py", "def hidden():\n");
}

#[test]
fn glob_shell() {
    let w = Work::new();
    tree(&w);
    s(&w, "a1", "*.py");
    s(&w, "a2", ".");
    let o = w.sh(GLOB_SHELL_STEP);
    assert_eq!(
        (o.out(), o.status),
        ("a.py\nb.py\n".into(), 0),
        "{}",
        o.err()
    );
    s(&w, "a1", "sub/*.py");
    assert_eq!(w.sh(GLOB_SHELL_STEP).out(), "sub/d.py\n");
    s(&w, "a1", "*.rs");
    let o = w.sh(GLOB_SHELL_STEP);
    assert_eq!((o.out(), o.status), (String::new(), 0));
    s(&w, "a1", "*.py");
    s(&w, "a2", "sub");
    assert_eq!(w.sh(GLOB_SHELL_STEP).out(), "d.py\n");
    s(&w, "a2", "nowhere");
    assert_eq!(w.sh(GLOB_SHELL_STEP).status, 2);
}

#[test]
fn glob_find() {
    let w = Work::new();
    tree(&w);
    // `**/*.py`: a1 = "./*.py", a3 = "./*/*.py".
    s(&w, "a1", "./*.py");
    s(&w, "a3", "./*/*.py");
    s(&w, "a2", ".");
    let o = w.sh(GLOB_FIND_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(o.out(), "a.py\nb.py\nsub/d.py\nsub/deeper/e.py\n");
    // `sub/**`: a1 = "./sub/*", a3 = "./sub/*".
    s(&w, "a1", "./sub/*");
    s(&w, "a3", "./sub/*");
    assert_eq!(
        w.sh(GLOB_FIND_STEP).out(),
        "sub/d.py\nsub/deeper\nsub/deeper/e.py\n"
    );
    s(&w, "a2", "nowhere");
    assert_eq!(w.sh(GLOB_FIND_STEP).status, 2);
}

#[test]
fn grep_step() {
    let w = Work::new();
    tree(&w);
    s(&w, "a1", "def [a-z]+\\(");
    s(&w, "a2", ".");
    let o = w.sh(GREP_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(
        o.out(),
        "./.plimsoll-shell/junk.py:1:def hidden():\n./a.py:1:def f():\n./sub/d.py:1:def g():\n"
    );
    s(&w, "a2", "sub");
    assert_eq!(w.sh(GREP_STEP).out(), "sub/d.py:1:def g():\n");
    s(&w, "a2", "a.py");
    assert_eq!(w.sh(GREP_STEP).out(), "a.py:1:def f():\n");
    s(&w, "a1", "nothing-matches-this");
    s(&w, "a2", "sub");
    let o = w.sh(GREP_STEP);
    assert_eq!((o.out(), o.status), (String::new(), 1));
    s(&w, "a1", "(unclosed");
    let o = w.sh(GREP_STEP);
    assert_eq!(o.status, 2);
    assert!(!o.err().is_empty());
    s(&w, "a1", "x");
    s(&w, "a2", "missing");
    let o = w.sh(GREP_STEP);
    assert_eq!(o.status, 2);
    assert!(o.err().contains("No such file or directory"));
    s(&w, "a1", "(a)\\1");
    assert_eq!(w.sh(GREP_STEP).status, 2);
}

#[test]
fn persist_and_hydrate_round_trip() {
    let w = Work::new();
    let bin = noise(70_000, 3);
    let long = format!("{}/{}.txt", "d".repeat(60), "n".repeat(120));
    w.write("bin.dat", &bin);
    w.write("src/main.py", "print('hi')\n");
    w.write("empty.txt", "");
    w.write(&long, "long name\n");
    std::fs::create_dir_all(w.file("emptydir")).unwrap();
    w.write(".plimsoll-shell/secret", "not persisted");
    let o = w.sh(PERSIST_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    let tar = sread(&w, "ws.tar");
    assert!(tar.len().is_multiple_of(10240) && !tar.is_empty());
    // The real tar lists the same members.
    let listed = std::process::Command::new("tar")
        .arg("-tf")
        .arg(w.file(".plimsoll-shell/ws.tar"))
        .output()
        .unwrap();
    let names = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        names.contains("./src/main.py\n") && names.contains(&format!("./{long}\n")),
        "{names}"
    );
    assert!(!names.contains("plimsoll-shell"), "{names}");
    // A fresh workspace hydrated from it.
    let v = Work::new();
    v.write(".plimsoll-shell/ws.tar", &tar);
    v.write("src/main.py", "old contents that get replaced\n");
    let o = v.sh(HYDRATE_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(v.read("bin.dat"), bin);
    assert_eq!(v.read("src/main.py"), b"print('hi')\n");
    assert_eq!(v.read(&long), b"long name\n");
    assert!(v.file("emptydir").is_dir());
    assert!(v.file("empty.txt").is_file());
    assert!(!v.file(".plimsoll-shell/ws.tar").exists());
    assert!(!v.file(".plimsoll-shell/secret").exists());
}

#[test]
fn hydrate_reads_archives_made_by_gnu_tar_and_refuses_escapes() {
    let w = Work::new();
    w.write("x/y.txt", "y");
    std::fs::create_dir_all(w.file(".plimsoll-shell")).unwrap();
    let st = std::process::Command::new("tar")
        .args(["-cf", ".plimsoll-shell/ws.tar", "./x"])
        .current_dir(w.path())
        .status();
    assert!(st.unwrap().success());
    std::fs::remove_dir_all(w.file("x")).unwrap();
    let o = w.sh(HYDRATE_STEP);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(w.read("x/y.txt"), b"y");
    // An archive with `..` and absolute members and a link: exit 2.
    let evil = Work::new();
    let mut t = Vec::new();
    for (name, kind) in [
        ("../escape.txt", b'0'),
        ("/abs.txt", b'0'),
        ("link", b'2'),
        ("ok.txt", b'0'),
    ] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000644");
        h[124..135].copy_from_slice(b"00000000002");
        h[156] = kind;
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| b as u32).sum();
        h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        t.extend_from_slice(&h);
        let mut body = [0u8; 512];
        body[..2].copy_from_slice(b"ok");
        t.extend_from_slice(&body);
    }
    t.extend_from_slice(&[0u8; 1024]);
    evil.write(".plimsoll-shell/ws.tar", &t);
    let o = evil.sh(HYDRATE_STEP);
    assert_eq!(o.status, 2, "{}", o.err());
    assert!(!evil.path().parent().unwrap().join("escape.txt").exists());
    assert_eq!(evil.read("ok.txt"), b"ok");
    assert!(evil.file(".plimsoll-shell/ws.tar").exists());
}

#[test]
fn openai_sdk_helpers() {
    let w = Work::new();
    w.write("x/f.txt", "hello");
    w.write("a", "A");
    let o = w.sh("ls -la -- /work/x");
    assert_eq!(o.status, 0);
    let rows: Vec<&str> = o
        .stdout
        .split(|&c| c == b'\n')
        .map(|l| std::str::from_utf8(l).unwrap())
        .filter(|l| !l.is_empty())
        .collect();
    assert!(rows[0].starts_with("total "));
    for r in &rows[1..] {
        assert_eq!(r.split_whitespace().count(), 9, "{r}");
    }
    assert!(
        rows[1..].iter().any(|r| {
            let c: Vec<&str> = r.split_whitespace().collect();
            c[..5] == ["-rw-r--r--", "1", "root", "root", "5"] && c[8] == "f.txt"
        }),
        "{rows:?}"
    );
    let o = w.sh("ls -la -- /work/a");
    assert_eq!(o.out().split_whitespace().count(), 9);
    assert!(o.out().ends_with(" /work/a\n"));
    assert_ne!(w.sh("ls -la -- /work/nothing").status, 0);

    let mv = r#"sh -c 'if [ ! -L "$1" ] && [ ! -f "$1" ]; then printf "%s\n" "Move source must be a regular file or symlink" >&2; exit 1; fi; exec mv -fT -- "$1" "$2"' sh /work/a /work/b"#;
    let o = w.sh(mv);
    assert_eq!(o.status, 0, "{}", o.err());
    assert_eq!(w.read("b"), b"A");
    assert!(!w.file("a").exists());
    let o = w.sh(mv.replace("/work/a /work/b", "/work/x /work/y").as_str());
    assert_eq!(o.status, 1);
    assert_eq!(o.err(), "Move source must be a regular file or symlink\n");

    let same =
        r#"sh -lc '[ ! -L "$1" ] && [ ! -L "$2" ] && [ "$1" -ef "$2" ]' sh /work/b /work/x/../b"#;
    assert_eq!(w.sh(same).status, 0);
    let diff =
        r#"sh -lc '[ ! -L "$1" ] && [ ! -L "$2" ] && [ "$1" -ef "$2" ]' sh /work/b /work/x/f.txt"#;
    assert_eq!(w.sh(diff).status, 1);

    assert_eq!(w.sh("test -d /work/x").status, 0);
    assert_eq!(w.sh("test -d /work/b").status, 1);
    assert_eq!(w.sh("test -x /work/x/f.txt").status, 0);
    assert_eq!(
        w.sh("mkdir -p /work/n/m && mkdir /work/n/o && test -d /work/n/o")
            .status,
        0
    );
    assert_ne!(w.sh("mkdir /work/n").status, 0);
    assert_eq!(w.sh("rm -- /work/b").status, 0);
    assert!(!w.file("b").exists());
    assert_eq!(w.sh("rm -rf -- /work/n /work/nonexistent").status, 0);
    assert!(!w.file("n").exists());
    // `cd DIR || exit` then the command, as the provider sends it.
    let o = w.sh("cd /work/x || exit\nls");
    assert_eq!(o.out(), "f.txt\n");
    let o = w.sh("cd /work/nope || exit\nls");
    assert_eq!(o.status, 1);
}
