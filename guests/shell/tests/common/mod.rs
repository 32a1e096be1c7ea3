//! Shared helpers: run the shell natively over a temporary `/work`, and
//! run the real bash/coreutils on the same tree for expectations.
#![allow(dead_code)]

pub mod steps;

use plimsoll_shell::programs::{Completion, Invocation, Programs};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// What one evaluation printed and returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Out {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub status: i32,
}

impl Out {
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

/// A fake `programs` import: records invocations, answers with a canned
/// completion (`python3 -c` echoes its code's argument count and stdin).
#[derive(Default)]
pub struct FakePrograms {
    pub calls: RefCell<Vec<Invocation>>,
}

impl Programs for FakePrograms {
    fn run(&self, inv: Invocation) -> Result<Completion, String> {
        self.calls.borrow_mut().push(inv.clone());
        if inv.program == "nodejs-missing" {
            return Err("no".into());
        }
        let mut stdout = format!("{} {}\n", inv.program, inv.args.join(" ")).into_bytes();
        stdout.extend_from_slice(&inv.stdin);
        let code = inv
            .args
            .iter()
            .find_map(|a| a.strip_prefix("exit="))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        Ok(Completion {
            exit_code: code,
            stdout,
            stderr: b"child-stderr\n".to_vec(),
            ..Completion::default()
        })
    }
}

/// A temporary workspace.
pub struct Work {
    pub dir: tempfile::TempDir,
    pub programs: Rc<FakePrograms>,
    /// The stack budget the shell gets (`Config::stack`).
    pub stack: usize,
}

/// What the shell may use of a test thread's stack (2 MiB by default).
pub const TEST_STACK_BUDGET: usize = 1536 << 10;

impl Work {
    pub fn new() -> Work {
        Work {
            dir: tempfile::tempdir().expect("tempdir"),
            programs: Rc::new(FakePrograms::default()),
            stack: TEST_STACK_BUDGET,
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, data: impl AsRef<[u8]>) {
        let p = self.file(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, data).expect("write");
    }

    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.file(rel)).unwrap_or_default()
    }

    /// Runs a script in our shell.
    pub fn sh(&self, script: &str) -> Out {
        self.sh_stdin(script, b"")
    }

    pub fn sh_stdin(&self, script: &str, stdin: &[u8]) -> Out {
        let out = Rc::new(RefCell::new(Vec::<u8>::new()));
        let err = Rc::new(RefCell::new(Vec::<u8>::new()));
        let status = plimsoll_shell::eval(
            script.as_bytes(),
            plimsoll_shell::Config {
                root: self.path().to_path_buf(),
                programs: self.programs.clone(),
                stdin: Box::new(std::io::Cursor::new(stdin.to_vec())),
                stdout: out.clone(),
                stderr: err.clone(),
                stack: self.stack,
            },
        );
        let stdout = out.borrow().clone();
        let stderr = err.borrow().clone();
        Out {
            stdout,
            stderr,
            status,
        }
    }

    /// Runs a script in the real bash, in the same directory.
    pub fn bash(&self, script: &str) -> Out {
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(script)
            .current_dir(self.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("LC_ALL", "C")
            .env("HOME", self.path())
            .output()
            .expect("bash");
        Out {
            stdout: o.stdout,
            stderr: o.stderr,
            status: o.status.code().unwrap_or(-1),
        }
    }
}

/// Runs `script` in both shells on two identical fresh trees made by
/// `setup`, and asserts stdout and status match.
pub fn same(setup: &[(&str, &str)], script: &str) {
    let ours = Work::new();
    let theirs = Work::new();
    for (p, c) in setup {
        ours.write(p, c);
        theirs.write(p, c);
    }
    let a = ours.sh(script);
    let b = theirs.bash(script);
    assert_eq!(
        (a.out(), a.status),
        (b.out(), b.status),
        "script: {script}\nour stderr: {}\nbash stderr: {}",
        a.err(),
        b.err()
    );
}

/// Runs every script in both shells (each on fresh identical trees made
/// by `setup`) and fails listing every mismatch of stdout or status.
pub fn all_same(setup: &[(&str, &str)], scripts: &[&str]) {
    let mut bad = Vec::new();
    for script in scripts {
        let ours = Work::new();
        let theirs = Work::new();
        for (p, c) in setup {
            ours.write(p, c);
            theirs.write(p, c);
        }
        let a = ours.sh(script);
        let b = theirs.bash(script);
        if (a.out(), a.status) != (b.out(), b.status) {
            bad.push(format!(
                "--- script: {script}\n ours ({}): {:?}\n bash ({}): {:?}\n our stderr: {}\n bash stderr: {}",
                a.status,
                a.out(),
                b.status,
                b.out(),
                a.err(),
                b.err()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} differ:\n{}",
        bad.len(),
        scripts.len(),
        bad.join("\n")
    );
}
