//! What has no GNU twin to compare with: the sandbox's paths, the
//! interpreters, the refused commands, formats the client parses, and the
//! cases where mawk (this machine's awk) and gawk disagree.

mod common;
use common::*;

#[test]
fn paths_outside_work_do_not_exist() {
    let w = Work::new();
    for (script, needle) in [
        ("cat /etc/passwd", "/etc/passwd: No such file or directory"),
        ("ls /", "cannot access '/'"),
        ("cd /", "cd: /: No such file or directory"),
        ("cd ..", "cd: ..: No such file or directory"),
        ("echo x > /etc/x", "/etc/x: No such file or directory"),
        ("mkdir /opt/x", "cannot create directory '/opt/x'"),
        ("cp /bin/sh here", "cannot stat '/bin/sh'"),
    ] {
        let o = w.sh(script);
        assert_ne!(o.status, 0, "{script}");
        assert!(o.err().contains(needle), "{script}: {}", o.err());
    }
    assert_eq!(w.sh("cd /work/../work && pwd").out(), "/work\n");
    assert_eq!(
        w.sh("rm -rf /work; echo $?; ls -d /work").out(),
        "1\n/work\n"
    );
}

#[test]
fn dev_null_and_std_devices() {
    let w = Work::new();
    let o = w.sh("echo x > /dev/null; cat /dev/null; wc -c < /dev/null; echo err 2>/dev/null >&2; cat /dev/null /dev/null | wc -l");
    assert_eq!(o.out(), "0\n0\n");
    let o = w.sh("echo to-err > /dev/stderr; echo to-out > /dev/stdout");
    assert_eq!((o.out(), o.err()), ("to-out\n".into(), "to-err\n".into()));
    assert_eq!(
        w.sh("[ -e /dev/null ] && [ -c /dev/null ] && echo dev")
            .out(),
        "dev\n"
    );
}

#[test]
fn tmp_is_an_alias_inside_the_workspace() {
    let w = Work::new();
    let o = w.sh("echo hi > /tmp/a.txt; cat /tmp/a.txt; ls /tmp; cd /tmp && pwd; t=$(mktemp); echo $t | grep -c '^/tmp/tmp\\.'; realpath /tmp/a.txt; cd /tmp && python3 x");
    assert_eq!(
        o.out(),
        "hi\na.txt\n/tmp\n1\n/tmp/a.txt\npython3 x\n",
        "{}",
        o.err()
    );
    assert_eq!(w.read(".plimsoll-shell/tmp/a.txt"), b"hi\n");
    let o = w.sh("python3 /tmp/a.txt /tmpx");
    let calls = w.programs.calls.borrow();
    // `cd /tmp` leaves `/tmp` the cwd programs start in (the host gives
    // the programs a shell starts the same alias).
    assert_eq!(calls[0].cwd, "/tmp");
    assert_eq!(calls[1].args, ["/work/.plimsoll-shell/tmp/a.txt", "/tmpx"]);
    assert_eq!(o.status, 0);
}

#[test]
fn interpreters_go_through_programs() {
    let w = Work::new();
    w.write("d/in.txt", "l1\nl2\n");
    let o = w.sh("cd d && export K=v && printf 'piped' | python3 -c 'code' a 'b c'");
    assert_eq!(o.out(), "python3 -c code a b c\npiped");
    assert_eq!(o.err(), "child-stderr\n");
    let o = w.sh("node app.js <<EOF\nheredoc $HOME\nEOF");
    assert_eq!(o.out(), "node app.js\nheredoc /work\n");
    let o =
        w.sh("python x.py exit=7; echo rc=$?; nodejs y.js exit=300 >/dev/null 2>&1; echo rc=$?");
    assert_eq!(o.out(), "python x.py exit=7\nrc=7\nrc=300\n");
    let o =
        w.sh("while read l; do python3 s.py \"$l\" >/dev/null 2>&1; echo \"$l\"; done < d/in.txt");
    assert_eq!(o.out(), "l1\nl2\n", "a child does not eat the loop's input");
    let o = w.sh("python3 -c x | tr a-z A-Z; /usr/bin/python3 -V; echo '#!/usr/bin/env python3' > t.py; ./t.py arg");
    assert_eq!(o.out(), "PYTHON3 -C X\npython3 -V\npython3 ./t.py arg\n");
    let calls = w.programs.calls.borrow();
    let first = &calls[0];
    assert_eq!(first.cwd, "/work/d");
    assert!(first.env.iter().any(|(k, v)| k == "K" && v == "v"));
    assert!(first.env.windows(2).all(|p| p[0].0 <= p[1].0), "env sorted");
    assert!(!first.env.iter().any(|(k, _)| k == "IFS"), "only exported");
    assert_eq!(first.stdin, b"piped");
    drop(calls);
    assert_eq!(
        w.sh("which python3 node; command -v python; type nodejs")
            .out(),
        "/usr/bin/python3\n/usr/bin/node\n/usr/bin/python\nnodejs is /usr/bin/nodejs\n"
    );
}

#[test]
fn refused_commands_are_not_found() {
    let w = Work::new();
    for name in [
        "npm", "npx", "git", "curl", "wget", "apt-get", "make", "gcc", "cargo",
    ] {
        let o = w.sh(&format!("{name} install x; echo rc=$?"));
        assert_eq!(o.out(), "rc=127\n", "{name}");
        assert_eq!(o.err(), format!("sh: {name}: not found\n"));
    }
    for name in ["pip", "pip3"] {
        let o = w.sh(&format!("{name} install numpy"));
        assert_eq!(o.status, 127);
        assert!(
            o.err()
                .starts_with(&format!("sh: {name}: not found (packages are fixed")),
            "{}",
            o.err()
        );
    }
    assert_eq!(w.sh("command -v git || echo none").out(), "none\n");
}

#[test]
fn export_p_is_export_lines_sorted_and_quoted() {
    let w = Work::new();
    let o = w.sh("export Z=1 A=\"it's\" EMPTY= ; export DECL; unset HOME; export -p");
    assert_eq!(
        o.out(),
        "export A='it'\\''s'\nexport DECL\nexport EMPTY=''\nexport LOGNAME='root'\nexport PATH='/usr/local/bin:/usr/bin:/bin'\nexport PWD='/work'\nexport SHELL='/bin/sh'\nexport USER='root'\nexport Z='1'\n"
    );
    // The client's filter and a round trip through `.`.
    let o = w.sh("export V='a b'\"'\"'c'; export -p | grep -Ev '^export (PWD|OLDPWD|__plimsoll_)' > env; unset V; . ./env; echo \"$V\"");
    assert_eq!(o.out(), "a b'c\n");
}

#[test]
fn initial_environment() {
    let w = Work::new();
    let o = w.sh("echo $HOME $PATH $SHELL $PWD $USER; pwd; env | sort");
    assert_eq!(
        o.out(),
        "/work /usr/local/bin:/usr/bin:/bin /bin/sh /work root\n/work\nHOME=/work\nLOGNAME=root\nPATH=/usr/local/bin:/usr/bin:/bin\nPWD=/work\nSHELL=/bin/sh\nUSER=root\n"
    );
}

#[test]
fn background_jobs_run_in_the_foreground() {
    let w = Work::new();
    let o = w.sh("echo one & echo two; wait; sleep 0 & wait $!; echo $?");
    assert_eq!(o.out(), "one\ntwo\n0\n");
}

#[test]
fn traps_and_exec() {
    let w = Work::new();
    let o = w.sh("trap 'echo cleanup $?' EXIT; set -e; false; echo never");
    assert_eq!((o.out(), o.status), ("cleanup 1\n".into(), 1));
    let o = w.sh("trap 'echo t; exit 9' EXIT; exit 2");
    assert_eq!(o.status, 9);
    let o = w.sh("(trap 'echo sub-trap' EXIT; echo in); echo out");
    assert_eq!(o.out(), "in\nsub-trap\nout\n");
    let o = w.sh("exec > log.txt; echo into-log; exec 2>&1; ls nosuch");
    assert_eq!(o.out(), "");
    assert!(String::from_utf8_lossy(&w.read("log.txt")).starts_with("into-log\nls: cannot access"));
    let o = w.sh("exec echo replaced; echo not-reached");
    assert_eq!(o.out(), "replaced\n");
}

#[test]
fn xtrace_and_time() {
    let w = Work::new();
    let o = w.sh("set -x; x=1; echo \"a b\" $x");
    assert_eq!(o.err(), "+ x=1\n+ echo 'a b' 1\n");
    let o = w.sh("time true");
    assert!(
        o.err().contains("real\t0m") && o.err().contains("user\t0m0.000s"),
        "{}",
        o.err()
    );
}

#[test]
fn binary_data_is_exact() {
    let w = Work::new();
    let data: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    w.write("b.bin", &data);
    let o = w.sh("cat b.bin");
    assert_eq!(o.stdout, data);
    let o = w.sh("head -c 300 b.bin | tail -c 100");
    assert_eq!(o.stdout, &data[200..300]);
    let o = w.sh(
        "base64 b.bin | base64 -d > c.bin; cmp b.bin c.bin && echo same; cat b.bin | sort | wc -c",
    );
    assert_eq!(o.out(), "same\n5001\n");
    let o = w.sh("printf '\\xff\\x00\\xfe' > p.bin; x=$(printf '\\xff\\xfe'); printf '%s' \"$x\" | od -An -tx1 2>/dev/null || printf '%s' \"$x\" > q.bin");
    assert_eq!(w.read("p.bin"), b"\xff\x00\xfe");
    let _ = o;
}

#[test]
fn ls_long_format_has_nine_columns() {
    let w = Work::new();
    w.write("dir/file name.txt", "12345");
    w.write("big", vec![b'x'; 5000]);
    let o = w.sh("ls -l; ls -lh big; ls -ld dir");
    let re = regex::Regex::new(
        r"^[-d]rw[-x]r-[-x]r-[-x] +\d+ root root +[0-9.]+[KMG]? [A-Z][a-z]{2} [ 1-3]\d (\d\d:\d\d| \d{4}) .+$",
    )
    .unwrap();
    let lines: Vec<&str> = o
        .stdout
        .split(|&c| c == b'\n')
        .map(|l| std::str::from_utf8(l).unwrap())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(lines[0], "total 12");
    for l in &lines[1..] {
        assert!(re.is_match(l), "{l}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" 4.9K ") && l.ends_with(" big"))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("drwxr-xr-x 2 root root 4096 ") && l.ends_with(" dir"))
    );
}

#[test]
fn tree_output() {
    let w = Work::new();
    w.write("p/a.txt", "");
    w.write("p/q/b.txt", "");
    w.write("p/z.txt", "");
    let o = w.sh("tree p");
    assert_eq!(
        o.out(),
        "p\n├── a.txt\n├── q\n│   └── b.txt\n└── z.txt\n\n1 directory, 3 files\n"
    );
}

#[test]
fn awk_follows_gawk_where_mawk_differs() {
    let w = Work::new();
    let o = w.sh("awk 'BEGIN { print substr(\"hello\", 0, 2), substr(\"hello\", -1), substr(\"hello\", 4); print length(\"héllo\") }'");
    assert_eq!(o.out(), "h hello lo\n5\n");
}

#[test]
fn unsupported_regex_features_are_clear_errors() {
    let w = Work::new();
    w.write("f", "aa\n");
    for script in [
        "grep '\\(a\\)\\1' f",
        "sed -n '/\\(a\\)\\1/p' f",
        "grep -E '(a)\\1' f",
    ] {
        let o = w.sh(script);
        assert_eq!(o.status, 2, "{script}");
        assert!(o.err().contains("backreferences"), "{script}: {}", o.err());
    }
    let o = w.sh("tar -czf x.tgz f; echo $?");
    assert!(
        o.out().ends_with("2\n") && o.err().contains("compression"),
        "{}",
        o.err()
    );
}

#[test]
fn pipefail_sees_sigpipe_status_of_a_cut_writer() {
    let w = Work::new();
    let o = w.sh("set -o pipefail; yes | head -n 1 > /dev/null; echo $? ${PIPESTATUS[@]}");
    assert_eq!(o.out(), "141 141 0\n");
}

#[test]
fn every_builtin_and_utility_is_documented() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/shell.md"))
        .expect("docs/shell.md");
    let missing: Vec<&str> = plimsoll_shell::builtins::names()
        .chain(plimsoll_shell::util::names())
        .filter(|n| !doc.contains(&format!("`{n}")) && !doc.contains(&format!(" {n} ")))
        .collect();
    assert!(missing.is_empty(), "not in docs/shell.md: {missing:?}");
}

#[test]
fn rg_as_ripgrep_prints_to_a_pipe() {
    let w = Work::new();
    w.write("src/a.py", "def f():\n    return 1\n");
    w.write("src/b.txt", "Def upper\n");
    w.write(".hidden/c.py", "def hidden():\n");
    w.write("build/out.py", "def built():\n");
    w.write(".gitignore", "build/\n");
    assert_eq!(w.sh("rg def").out(), "src/a.py:def f():\n");
    assert_eq!(
        w.sh("rg -n -i def src").out(),
        "src/a.py:1:def f():\nsrc/b.txt:1:Def upper\n"
    );
    assert_eq!(
        w.sh("rg -l def . ; rg --files | sort").out(),
        "./src/a.py\nsrc/a.py\nsrc/b.txt\n"
    );
    assert_eq!(w.sh("rg -g '*.txt' -i def").out(), "src/b.txt:Def upper\n");
    assert_eq!(
        w.sh("rg --hidden --no-ignore -l def | sort").out(),
        ".hidden/c.py\nbuild/out.py\nsrc/a.py\n"
    );
    assert_eq!(
        w.sh("rg -c def src/a.py; rg nothing; echo $?").out(),
        "1\n1\n"
    );
    assert_eq!(w.sh("rg -t py -w f").out(), "src/a.py:def f():\n");
}
