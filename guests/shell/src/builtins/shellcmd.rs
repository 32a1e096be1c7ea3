//! Builtins that run other commands or scripts: `.`/`source`, `eval`,
//! `exec`, `command`, `builtin`, `type`, `which`, `sh`/`bash`, `env`,
//! `xargs`, `time`, `timeout`, `nohup`; and running a script file by path.

use super::{ALSO_UTILITIES, complain};
use crate::bytes::lossy;
use crate::exec::simple::Kind;
use crate::exec::state::Vars;
use crate::exec::{Ctl, Opts, R, Shell};
use crate::io::{Fd, Input, Io, put};
use crate::limits::MAX_SCRIPT;

const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done",
    "in", "function", "{", "}", "!", "[[", "]]", "time",
];

impl Shell {
    /// A fresh shell for a child process (`sh -c`, a script): exported
    /// variables, the working directory and descriptors; nothing else.
    pub fn child(&self) -> Shell {
        let mut c = self.clone();
        let mut vars = Vars::default();
        for (k, v) in self.vars.iter() {
            if v.exported {
                let e = vars.entry(k);
                e.value = v.value.clone();
                e.exported = true;
            }
        }
        for (k, v) in [("IFS", " \t\n"), ("PS4", "+ "), ("OPTIND", "1")] {
            let _ = vars.set(k.as_bytes(), v.as_bytes().to_vec());
        }
        c.vars = vars;
        c.funcs = std::rc::Rc::default();
        c.params = std::rc::Rc::default();
        c.opts = Opts::default();
        c.exit_trap = None;
        c.cond_depth = 0;
        c.loops = 0;
        c.calls = 0;
        c.sourcing = 0;
        c.status = 0;
        c
    }

    /// Runs `script` in a child shell and returns its exit status.
    pub fn run_child(
        &mut self,
        io: &Io,
        script: &[u8],
        origin: &str,
        arg0: Vec<u8>,
        params: Vec<Vec<u8>>,
        opts: &[Vec<u8>],
    ) -> R {
        let Some(_held) = crate::limits::held::hold(&params) else {
            complain(io, "sh", &crate::limits::held::refused());
            return Ok(126);
        };
        self.enter(io)?;
        let mut c = self.child();
        c.arg0 = arg0;
        c.params = std::rc::Rc::new(params);
        if let Err(e) = super::vars::apply_options(&mut c, opts) {
            self.depth -= 1;
            complain(io, "sh", &e);
            return Ok(2);
        }
        let r = c.run_script(script, io, origin);
        self.depth -= 1;
        let status = match r {
            Ok(s) => s,
            Err(Ctl::Exit(s)) | Err(Ctl::Abort(s)) | Err(Ctl::Return(s)) => s,
            Err(Ctl::Break(_)) | Err(Ctl::Continue(_)) => c.status,
            Err(Ctl::Fatal(s)) => return Err(Ctl::Fatal(s)),
        };
        c.run_exit_trap(io, status)
    }

    /// Reads a script file (capped); `Err` is the message.
    pub fn read_script(&self, path: &[u8]) -> Result<Vec<u8>, String> {
        let host = self
            .fs
            .host(&self.cwd, path)
            .map_err(|e| crate::fs::error_text(&e))?;
        if host.is_dir() {
            return Err("Is a directory".into());
        }
        match crate::util::read_file_at_most(&host, MAX_SCRIPT) {
            Ok(data) => Ok(data),
            Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
                Err(format!("script larger than {} MiB", MAX_SCRIPT >> 20))
            }
            Err(e) => Err(crate::fs::error_text(&e)),
        }
    }
}

/// What `sh`/`bash` arguments ask for: `(script, origin for messages,
/// $0, positional parameters, set-options)`.
pub type ChildArgs = (Vec<u8>, String, Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Parses `sh`/`bash` arguments.
pub fn child_shell_args(sh: &Shell, io: &Io, argv: &[Vec<u8>]) -> Result<ChildArgs, i32> {
    let name = lossy(&argv[0]);
    let mut opts = Vec::new();
    let mut cmd = false;
    let mut from_stdin = false;
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a == b"--" || a == b"-" {
            i += 1;
            break;
        }
        if a.starts_with(b"--") {
            i += 1;
            continue;
        }
        if a.len() > 1 && (a[0] == b'-' || a[0] == b'+') {
            let mut flags = vec![a[0]];
            for &c in &a[1..] {
                match c {
                    b'c' => cmd = true,
                    b's' => from_stdin = true,
                    b'l' | b'i' | b'r' | b'p' => {}
                    b'o' => {
                        i += 1;
                        opts.push(vec![a[0], b'o']);
                        opts.push(argv.get(i).cloned().unwrap_or_default());
                    }
                    _ => flags.push(c),
                }
            }
            if flags.len() > 1 {
                opts.push(flags);
            }
            i += 1;
            continue;
        }
        break;
    }
    if cmd {
        let Some(script) = argv.get(i) else {
            complain(io, &format!("{name}: -c"), "option requires an argument");
            return Err(2);
        };
        let arg0 = argv.get(i + 1).cloned().unwrap_or_else(|| argv[0].clone());
        let params = argv.get(i + 2..).map(|p| p.to_vec()).unwrap_or_default();
        return Ok((script.clone(), format!("{name}: -c"), arg0, params, opts));
    }
    if i < argv.len() && !from_stdin {
        let file = &argv[i];
        return match sh.read_script(file) {
            Ok(text) => Ok((
                text,
                lossy(file),
                file.clone(),
                argv[i + 1..].to_vec(),
                opts,
            )),
            Err(e) => {
                complain(io, &lossy(file), &e);
                Err(127)
            }
        };
    }
    let text = io.stdin().borrow_mut().take_all();
    if text.len() > MAX_SCRIPT {
        complain(
            io,
            &name,
            &format!("script larger than {} MiB", MAX_SCRIPT >> 20),
        );
        return Err(1);
    }
    Ok((
        text,
        name.clone(),
        argv[0].clone(),
        argv[i..].to_vec(),
        opts,
    ))
}

/// `sh`/`bash [-euxo …] [-c SCRIPT [NAME [ARGS…]] | FILE [ARGS…]]`.
pub fn sh(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    match child_shell_args(sh, io, argv) {
        Ok((script, origin, arg0, params, opts)) => {
            let mut child_io = io.clone();
            if !argv
                .iter()
                .any(|a| a.starts_with(b"-") && a.contains(&b'c'))
                && argv.len() == 1
            {
                child_io.fds[0] = Some(Fd::In(Input::empty()));
            }
            sh.run_child(&child_io, &script, &origin, arg0, params, &opts)
        }
        Err(s) => Ok(s),
    }
}

/// `. FILE [ARGS…]` / `source`.
pub fn source(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let Some(file) = argv.get(1) else {
        complain(io, &lossy(&argv[0]), "filename argument required");
        return Ok(2);
    };
    let text = match sh.read_script(file) {
        Ok(t) => t,
        Err(e) => {
            complain(io, &lossy(file), &e);
            return Ok(1);
        }
    };
    sh.enter(io)?;
    let saved = if argv.len() > 2 {
        Some(std::mem::replace(
            &mut sh.params,
            std::rc::Rc::new(argv[2..].to_vec()),
        ))
    } else {
        None
    };
    sh.sourcing += 1;
    let r = sh.run_script(&text, io, &lossy(file));
    sh.sourcing -= 1;
    if let Some(p) = saved {
        sh.params = p;
    }
    sh.depth -= 1;
    match r {
        Err(Ctl::Return(s)) => Ok(s),
        other => other,
    }
}

/// `eval ARGS…`.
pub fn eval(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let len: usize = argv[1..].iter().map(|a| a.len() + 1).sum();
    if len > MAX_SCRIPT + 1 {
        complain(
            io,
            "eval",
            &format!("script larger than {} MiB", MAX_SCRIPT >> 20),
        );
        return Ok(1);
    }
    let text = argv[1..].join(&b' ');
    sh.enter(io)?;
    let r = sh.run_script(&text, io, "sh: eval");
    sh.depth -= 1;
    r
}

/// `exec COMMAND ARGS…`: runs it and ends the shell with its status.
/// (`exec` with only redirections is handled by the evaluator.)
pub fn exec(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut args = &argv[1..];
    while let Some(a) = args.first() {
        match a.as_slice() {
            b"-a" => args = args.get(2..).unwrap_or(&[]),
            b"-c" | b"-l" => args = &args[1..],
            b"--" => {
                args = &args[1..];
                break;
            }
            _ => break,
        }
    }
    if args.is_empty() {
        return Ok(0);
    }
    let status = sh.dispatch(args, io)?;
    Err(Ctl::Exit(status))
}

fn describe(sh: &Shell, name: &[u8]) -> Option<(Kind, Vec<u8>)> {
    let n = lossy(name);
    if name.contains(&b'/') {
        let host = sh.fs.host(&sh.cwd, name).ok()?;
        return host.is_file().then(|| (Kind::Utility, name.to_vec()));
    }
    let kind = sh.kind_of(name)?;
    let path = match kind {
        Kind::Utility | Kind::Program => format!("/usr/bin/{n}").into_bytes(),
        _ => name.to_vec(),
    };
    Some((kind, path))
}

/// `command [-v|-V] NAME [ARGS…]`.
pub fn command(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut i = 1;
    let mut mode = 0u8;
    while let Some(a) = argv.get(i) {
        match a.as_slice() {
            b"-v" => mode = b'v',
            b"-V" => mode = b'V',
            b"-p" => {}
            b"--" => {
                i += 1;
                break;
            }
            _ => break,
        }
        i += 1;
    }
    if mode == 0 {
        if i >= argv.len() {
            return Ok(0);
        }
        let name = &argv[i];
        if let Some(b) = super::lookup(name) {
            return sh.nested(io, |sh| b(sh, io, &argv[i..]));
        }
        return sh.dispatch_external(&argv[i..], io);
    }
    let mut status = 0;
    for name in &argv[i..] {
        if mode == b'V' {
            status |= type_one(sh, io, name, false);
            continue;
        }
        let n = lossy(name);
        if KEYWORDS.contains(&n.as_str()) {
            let _ = put(&io.stdout(), format!("{n}\n").as_bytes());
            continue;
        }
        match describe(sh, name) {
            Some((_, path)) => {
                let _ = put(&io.stdout(), &[path.as_slice(), b"\n"].concat());
            }
            None => status = 1,
        }
    }
    Ok(status)
}

/// `builtin NAME [ARGS…]`.
pub fn builtin(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let Some(name) = argv.get(1) else {
        return Ok(0);
    };
    match super::lookup(name) {
        Some(b) => sh.nested(io, |sh| b(sh, io, &argv[1..])),
        None => {
            complain(
                io,
                "builtin",
                &format!("{}: not a shell builtin", lossy(name)),
            );
            Ok(1)
        }
    }
}

fn type_one(sh: &Shell, io: &Io, name: &[u8], terse: bool) -> i32 {
    let n = lossy(name);
    let (word, text) = if KEYWORDS.contains(&n.as_str()) {
        ("keyword", format!("{n} is a shell keyword"))
    } else {
        match describe(sh, name) {
            Some((Kind::Function, _)) => ("function", format!("{n} is a function")),
            Some((Kind::Builtin, _)) => ("builtin", format!("{n} is a shell builtin")),
            Some((_, path)) => ("file", format!("{n} is {}", lossy(&path))),
            None => {
                if !terse {
                    complain(io, "type", &format!("{n}: not found"));
                }
                return 1;
            }
        }
    };
    let line = if terse { word.to_string() } else { text };
    let _ = put(&io.stdout(), format!("{line}\n").as_bytes());
    0
}

/// `type [-t] NAME…`.
pub fn type_(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let terse = argv.iter().any(|a| a == b"-t");
    let mut status = 0;
    for name in argv[1..].iter().filter(|a| !a.starts_with(b"-")) {
        status |= type_one(sh, io, name, terse);
    }
    Ok(status)
}

/// `which [-a] NAME…`: `/usr/bin/NAME` for the utilities and interpreters.
pub fn which(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut status = 0;
    for name in argv[1..].iter().filter(|a| !a.starts_with(b"-")) {
        let n = lossy(name);
        let found = match sh.kind_of(name) {
            Some(Kind::Utility | Kind::Program) => true,
            Some(Kind::Builtin) => ALSO_UTILITIES.contains(&n.as_str()),
            _ => false,
        };
        if found {
            let _ = put(&io.stdout(), format!("/usr/bin/{n}\n").as_bytes());
        } else if name.contains(&b'/') && describe(sh, name).is_some() {
            let _ = put(&io.stdout(), &[name.as_slice(), b"\n"].concat());
        } else {
            status = 1;
        }
    }
    Ok(status)
}

/// `env [-i] [-u NAME] [NAME=VALUE…] [COMMAND [ARGS…]]`.
pub fn env(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let saved = sh.vars.clone();
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a == b"-i" || a == b"-" || a == b"--ignore-environment" {
            let names: Vec<Vec<u8>> = sh
                .vars
                .iter()
                .filter(|(_, v)| v.exported)
                .map(|(k, _)| k.clone())
                .collect();
            for n in names {
                let _ = sh.vars.unset(&n);
            }
        } else if a == b"-u" {
            i += 1;
            if let Some(n) = argv.get(i) {
                let _ = sh.vars.unset(n);
            }
        } else if a == b"--" {
            i += 1;
            break;
        } else if let Some(eq) = a.iter().position(|&c| c == b'=').filter(|&p| p > 0) {
            let _ = sh.vars.set(&a[..eq], a[eq + 1..].to_vec());
            sh.vars.entry(&a[..eq]).exported = true;
        } else {
            break;
        }
        i += 1;
    }
    let r = if i >= argv.len() {
        let mut out = Vec::new();
        for (k, v) in sh.vars.exported() {
            out.extend(k);
            out.push(b'=');
            out.extend(v);
            out.push(b'\n');
        }
        let _ = put(&io.stdout(), &out);
        Ok(0)
    } else {
        run_external(sh, io, &argv[i..])
    };
    sh.vars = saved;
    r
}

/// Runs a command as an external program would be found (no functions).
fn run_external(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    sh.dispatch_external(argv, io)
}

/// `time COMMAND…` (as a command, e.g. `/usr/bin/time`).
pub fn time(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let start = std::time::Instant::now();
    let first = argv[1..]
        .iter()
        .position(|a| !a.starts_with(b"-"))
        .map_or(argv.len(), |i| i + 1);
    let args = &argv[first..];
    let st = if args.is_empty() {
        0
    } else {
        run_external(sh, io, args)?
    };
    let t = start.elapsed().as_secs_f64();
    let _ = put(
        &io.stderr(),
        format!("{t:.2}user 0.00system 0:{t:05.2}elapsed\n").as_bytes(),
    );
    Ok(st)
}

/// `timeout [OPTS] DURATION COMMAND…`: runs the command (the run's own
/// wall-time limit is what stops it).
pub fn timeout(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a == b"-s" || a == b"-k" || a == b"--signal" || a == b"--kill-after" {
            i += 2;
        } else if a.starts_with(b"-") {
            i += 1;
        } else {
            break;
        }
    }
    i += 1;
    if i >= argv.len() {
        complain(io, "timeout", "missing operand");
        return Ok(125);
    }
    run_external(sh, io, &argv[i..])
}

/// `nohup`/`nice COMMAND…`: runs it.
pub fn nohup(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut i = 1;
    if argv[0] == b"nice" {
        while let Some(a) = argv.get(i) {
            if a == b"-n" {
                i += 2;
            } else if a.starts_with(b"-") {
                i += 1;
            } else {
                break;
            }
        }
    }
    if i >= argv.len() {
        return Ok(0);
    }
    run_external(sh, io, &argv[i..])
}

pub use super::super::util::xargs::xargs;

/// Runs a command named by a path (`./x.sh`): a `#!` line picks sh/bash or
/// an interpreter; no `#!` means a shell script.
pub fn run_path(sh: &mut Shell, argv: &[Vec<u8>], io: &Io) -> R {
    let name = lossy(&argv[0]);
    let host = match sh.fs.host(&sh.cwd, &argv[0]) {
        Ok(h) => h,
        Err(_) => {
            complain(io, &name, "No such file or directory");
            return Ok(127);
        }
    };
    if host.is_dir() {
        complain(io, &name, "Is a directory");
        return Ok(126);
    }
    let text = match sh.read_script(&argv[0]) {
        Ok(t) => t,
        Err(e) => {
            complain(io, &name, &e);
            return Ok(if e.contains("No such") { 127 } else { 126 });
        }
    };
    if let Some(rest) = text.strip_prefix(b"#!") {
        let line = rest.split(|&c| c == b'\n').next().unwrap_or(b"");
        let mut words: Vec<&[u8]> = line
            .split(|c| c.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .collect();
        if words
            .first()
            .is_some_and(|w| crate::fs::base_name(w) == b"env")
        {
            words.remove(0);
            while words.first().is_some_and(|w| w.starts_with(b"-")) {
                words.remove(0);
            }
        }
        let interp = words
            .first()
            .map(|w| crate::fs::base_name(w).to_vec())
            .unwrap_or_default();
        let base = lossy(&interp);
        let program = if base.starts_with("python") {
            Some(if base == "python" {
                "python"
            } else {
                "python3"
            })
        } else if base == "node" || base == "nodejs" {
            Some("node")
        } else {
            None
        };
        if let Some(p) = program {
            let mut args: Vec<Vec<u8>> = words[1..].iter().map(|w| w.to_vec()).collect();
            args.extend_from_slice(argv);
            return Ok(sh.run_program(p.as_bytes(), &args, io));
        }
        if !matches!(base.as_str(), "sh" | "bash" | "dash" | "zsh" | "ksh") {
            complain(
                io,
                &name,
                &format!(
                    "{}: bad interpreter: No such file or directory",
                    lossy(line).trim()
                ),
            );
            return Ok(126);
        }
    }
    sh.run_child(io, &text, &name, argv[0].clone(), argv[1..].to_vec(), &[])
}
