//! The evaluator: the shell's state and the walk over lists, and-or lists,
//! pipelines and compound commands.

mod compound;
mod redirect;
pub mod simple;
pub mod state;

use crate::fs::Fs;
use crate::io::{Fd, Input, Io, Sink};
use crate::limits::{MAX_BUFFERS, MAX_DEPTH, MAX_PIPE};
use crate::parse::ast::*;
use crate::parse::{ParseError, Parser};
use crate::programs::Programs;
use state::Vars;
use std::collections::HashMap;
use std::rc::Rc;

/// How a command left the normal flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctl {
    /// `break N` (levels left to break).
    Break(usize),
    /// `continue N`.
    Continue(usize),
    /// `return N`.
    Return(i32),
    /// `exit N`, `set -e`, a fatal expansion error: ends the shell (or the
    /// subshell).
    Exit(i32),
    /// An arithmetic or substitution error: abandons the current complete
    /// command; the script goes on with the next one.
    Abort(i32),
    /// A limit was hit: ends the whole evaluation.
    Fatal(i32),
}

/// A command's outcome: its status, or a change of flow.
pub type R = Result<i32, Ctl>;

/// `set` options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Opts {
    /// `-e`
    pub errexit: bool,
    /// `-u`
    pub nounset: bool,
    /// `-x`
    pub xtrace: bool,
    /// `-o pipefail`
    pub pipefail: bool,
    /// `-f`
    pub noglob: bool,
    /// `-C`
    pub noclobber: bool,
}

/// The interpreter's whole state. Subshells and pipeline stages run on a
/// clone of it, so their variable and directory changes do not leak out.
#[derive(Clone)]
pub struct Shell {
    /// Where `/work` is.
    pub fs: Rc<Fs>,
    /// The interpreters `python3`/`node` start.
    pub programs: Rc<dyn Programs>,
    /// The working directory (absolute, inside `/work`).
    pub cwd: Vec<u8>,
    /// Variables.
    pub vars: Vars,
    /// Functions (shared with subshells until one changes them).
    pub funcs: Rc<HashMap<Vec<u8>, Rc<Command>>>,
    /// `$1`, `$2`, … (shared with subshells until one changes them).
    pub params: Rc<Vec<Vec<u8>>>,
    /// `$0`.
    pub arg0: Vec<u8>,
    /// `set` options.
    pub opts: Opts,
    /// `$?`.
    pub status: i32,
    /// The `trap … EXIT` command.
    pub exit_trap: Option<Vec<u8>>,
    /// Run-time nesting (calls, subshells, substitutions, eval, source).
    pub depth: usize,
    /// Above zero while running a condition (`set -e` does not apply).
    pub cond_depth: usize,
    /// Enclosing loops (for `break`/`continue`).
    pub loops: usize,
    /// Enclosing function calls (for `return`).
    pub calls: usize,
    /// Enclosing `.` files (for `return`).
    pub sourcing: usize,
    /// The shell's own descriptors (changed by `exec >file`).
    pub io: Io,
    /// `umask`'s value (kept, not applied: the workspace has no modes).
    pub umask: u32,
    /// Status of the last command substitution (for `x=$(cmd)`).
    pub subst_status: Option<i32>,
    /// `$RANDOM`'s generator state.
    pub random: u64,
    /// When the shell started (for `$SECONDS`).
    pub started: std::time::Instant,
    /// Descriptors set by `exec` with only redirections, taking effect
    /// from the next complete command on.
    pub pending_io: Option<Io>,
    /// Process substitutions of the running command: temporary files and,
    /// for `>(…)`, the commands to run on them.
    pub psubs: Vec<(std::path::PathBuf, Option<Rc<List>>)>,
    /// Counter for their names.
    pub psub_count: usize,
    /// Set once a run-time limit ended the evaluation, shared by every
    /// subshell and child: from then on nothing runs, so a utility that
    /// ignores a failed command (`find -exec`, `xargs`, awk's `system`)
    /// cannot keep the evaluation going.
    pub fatal: Rc<std::cell::Cell<Option<i32>>>,
}

impl Shell {
    /// A shell over `fs` whose base descriptors are `io`.
    pub fn new(fs: Fs, programs: Rc<dyn Programs>, io: Io) -> Shell {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(42);
        let mut sh = Shell {
            fs: Rc::new(fs),
            programs,
            cwd: crate::fs::WORK.to_vec(),
            vars: Vars::default(),
            funcs: Rc::default(),
            params: Rc::default(),
            arg0: b"sh".to_vec(),
            opts: Opts::default(),
            status: 0,
            exit_trap: None,
            depth: 0,
            cond_depth: 0,
            loops: 0,
            calls: 0,
            sourcing: 0,
            io,
            umask: 0o022,
            subst_status: None,
            random: seed | 1,
            started: std::time::Instant::now(),
            pending_io: None,
            psubs: Vec::new(),
            psub_count: 0,
            fatal: Rc::new(std::cell::Cell::new(None)),
        };
        for (k, v) in [
            ("HOME", "/work"),
            ("PATH", "/usr/local/bin:/usr/bin:/bin"),
            ("SHELL", "/bin/sh"),
            ("PWD", "/work"),
            ("USER", "root"),
            ("LOGNAME", "root"),
        ] {
            let var = sh.vars.entry(k.as_bytes());
            var.value = Some(Rc::new(state::Value::Str(v.as_bytes().to_vec())));
            var.exported = true;
        }
        for (k, v) in [
            ("IFS", " \t\n"),
            ("PS4", "+ "),
            ("OPTIND", "1"),
            ("PPID", "1"),
            ("UID", "0"),
            ("EUID", "0"),
            ("HOSTNAME", "plimsoll"),
        ] {
            let _ = sh.vars.set(k.as_bytes(), v.as_bytes().to_vec());
        }
        sh
    }

    /// Writes `msg` and a newline to the shell's stderr as `sh: msg`.
    pub fn error(&self, io: &Io, msg: &str) {
        let _ = crate::io::put(&io.stderr(), format!("sh: {msg}\n").as_bytes());
    }

    /// Enters one run-time nesting level; past the limit (or the stack
    /// budget), ends the whole evaluation.
    pub fn enter(&mut self, io: &Io) -> Result<(), Ctl> {
        if let Some(s) = self.fatal.get() {
            return Err(Ctl::Fatal(s));
        }
        if self.depth >= MAX_DEPTH {
            self.error(
                io,
                &format!("maximum nesting level exceeded ({MAX_DEPTH}): calls, subshells, substitutions, eval and source nest too deeply"),
            );
            self.fatal.set(Some(2));
            return Err(Ctl::Fatal(2));
        }
        self.check_stack(io)?;
        self.depth += 1;
        Ok(())
    }

    /// Ends the whole evaluation when the recursion has used the stack
    /// budget (nested compound commands inside deep calls, awk inside
    /// `eval` inside functions, …).
    pub fn check_stack(&mut self, io: &Io) -> Result<(), Ctl> {
        if let Some(s) = self.fatal.get() {
            return Err(Ctl::Fatal(s));
        }
        if crate::limits::stack::exhausted() {
            self.error(
                io,
                "maximum nesting level exceeded: commands, calls and expressions nest too deeply for the stack",
            );
            self.fatal.set(Some(2));
            return Err(Ctl::Fatal(2));
        }
        Ok(())
    }

    /// The end of the evaluation a limit asked for, if any (for utilities
    /// that run commands and only see their statuses).
    pub fn fatal(&self) -> Option<i32> {
        self.fatal.get()
    }

    /// Runs a script text command by command. A syntax error stops it with
    /// status 2; an aborted command sets its status and the next one runs.
    pub fn run_script(&mut self, text: &[u8], io: &Io, origin: &str) -> R {
        let mut parser = Parser::new(text, 0);
        let mut status = 0;
        let mut cur = io.clone();
        let io = &mut cur;
        loop {
            let list = match parser.next_command() {
                Ok(Some(list)) => list,
                Ok(None) => return Ok(status),
                Err(e) => {
                    self.syntax_error(io, origin, &e);
                    self.status = 2;
                    return Ok(2);
                }
            };
            status = match self.exec_list(&list, io) {
                Ok(s) => s,
                Err(Ctl::Abort(s)) => s,
                Err(Ctl::Break(_)) | Err(Ctl::Continue(_)) => 0,
                Err(other) => return Err(other),
            };
            self.status = status;
            if let Some(n) = self.pending_io.take() {
                *io = n;
            }
        }
    }

    fn syntax_error(&self, io: &Io, origin: &str, e: &ParseError) {
        let _ = crate::io::put(
            &io.stderr(),
            format!("{origin}: line {}: {}\n", e.line, e.msg).as_bytes(),
        );
    }

    /// Runs a list.
    pub fn exec_list(&mut self, list: &List, io: &Io) -> R {
        let mut status = self.status;
        let mut cur: Option<Io> = None;
        for item in list {
            status = self.exec_and_or(&item.and_or, cur.as_ref().unwrap_or(io))?;
            self.status = status;
            // `exec >file` takes effect at once for what follows.
            if let Some(p) = &self.pending_io {
                cur = Some(p.clone());
            }
        }
        Ok(status)
    }

    fn exec_and_or(&mut self, ao: &AndOr, io: &Io) -> R {
        let n = ao.rest.len();
        let mut status = self.guarded(n > 0, |sh| sh.exec_pipeline(&ao.first, io))?;
        for (i, (and, p)) in ao.rest.iter().enumerate() {
            if (status == 0) != *and {
                continue;
            }
            self.status = status;
            status = self.guarded(i + 1 < n, |sh| sh.exec_pipeline(p, io))?;
        }
        Ok(status)
    }

    /// Runs `f` with `set -e` suspended when `cond` holds.
    pub fn guarded(&mut self, cond: bool, f: impl FnOnce(&mut Shell) -> R) -> R {
        if cond {
            self.cond_depth += 1;
        }
        let r = f(self);
        if cond {
            self.cond_depth -= 1;
        }
        r
    }

    fn exec_pipeline(&mut self, p: &Pipeline, io: &Io) -> R {
        let started = std::time::Instant::now();
        let mut status = self.guarded(p.bang, |sh| sh.run_stages(&p.cmds, io))?;
        if p.timed {
            let t = started.elapsed();
            let msg = format!(
                "\nreal\t{}m{:.3}s\nuser\t0m0.000s\nsys\t0m0.000s\n",
                t.as_secs() / 60,
                t.as_secs_f64() % 60.0
            );
            let _ = crate::io::put(&io.stderr(), msg.as_bytes());
        }
        if p.bang {
            status = (status == 0) as i32;
        } else if status != 0 && self.opts.errexit && self.cond_depth == 0 {
            self.status = status;
            return Err(Ctl::Exit(status));
        }
        self.status = status;
        Ok(status)
    }

    fn run_stages(&mut self, cmds: &[Command], io: &Io) -> R {
        if cmds.len() == 1 {
            let st = self.exec_command(&cmds[0], io)?;
            self.set_pipestatus(&[st]);
            return Ok(st);
        }
        let mut input = io.stdin();
        let mut statuses = Vec::with_capacity(cmds.len());
        for (i, cmd) in cmds.iter().enumerate() {
            let last = i + 1 == cmds.len();
            let out = if last {
                io.stdout()
            } else {
                Sink::buffer(MAX_PIPE)
            };
            let mut stage = io.clone();
            stage.fds[0] = Some(Fd::In(input.clone()));
            stage.fds[1] = Some(Fd::Out(out.clone()));
            let mut st = self.subshell(&stage, |sh| sh.exec_command(cmd, &stage))?;
            if !last {
                let (data, full) = out.borrow_mut().take();
                if full {
                    // The writer was stopped as by SIGPIPE.
                    st = 141;
                }
                if full && !is_yes(cmd) {
                    let msg = if data.len() >= MAX_PIPE {
                        format!(
                            "pipe buffer limit reached ({} MiB): the output of stage {} was cut",
                            MAX_PIPE >> 20,
                            i + 1
                        )
                    } else {
                        format!(
                            "pipe buffer limit reached (all pipes together hold {} MiB): the output of stage {} was cut",
                            MAX_BUFFERS >> 20,
                            i + 1
                        )
                    };
                    self.error(io, &msg);
                }
                input = Input::piped(data);
            }
            statuses.push(st);
        }
        let last = statuses.last().copied().unwrap_or(0);
        self.set_pipestatus(&statuses);
        if self.opts.pipefail {
            return Ok(statuses
                .iter()
                .rev()
                .copied()
                .find(|&s| s != 0)
                .unwrap_or(0));
        }
        Ok(last)
    }

    fn set_pipestatus(&mut self, statuses: &[i32]) {
        let v = statuses
            .iter()
            .map(|s| s.to_string().into_bytes())
            .collect();
        let _ = self.vars.set_value(b"PIPESTATUS", state::Value::Arr(v));
    }

    /// Runs `f` on a copy of the shell (a subshell): what it changes in the
    /// shell's state is dropped; `exit` ends only the copy. Its own `trap
    /// EXIT` runs when it ends.
    pub fn subshell(&mut self, io: &Io, f: impl FnOnce(&mut Shell) -> R) -> R {
        self.enter(io)?;
        let mut sub = self.clone();
        sub.exit_trap = None;
        sub.loops = 0;
        let r = f(&mut sub);
        self.depth -= 1;
        let status = match r {
            Ok(s) => s,
            Err(Ctl::Exit(s)) | Err(Ctl::Abort(s)) | Err(Ctl::Return(s)) => s,
            Err(Ctl::Break(_)) | Err(Ctl::Continue(_)) => sub.status,
            Err(Ctl::Fatal(s)) => return Err(Ctl::Fatal(s)),
        };
        sub.status = status;
        let status = sub.run_exit_trap(io, status)?;
        self.random = sub.random;
        Ok(status)
    }

    /// Runs the `trap … EXIT` command once, if set; returns the final
    /// status (an `exit N` inside the trap changes it).
    pub fn run_exit_trap(&mut self, io: &Io, status: i32) -> R {
        let Some(trap) = self.exit_trap.take() else {
            return Ok(status);
        };
        self.status = status;
        let trap_io = self.io_for_trap(io);
        match self.run_script(&trap, &trap_io, "sh") {
            Ok(_) => Ok(status),
            Err(Ctl::Exit(s)) => Ok(s),
            Err(Ctl::Fatal(s)) => Err(Ctl::Fatal(s)),
            Err(_) => Ok(status),
        }
    }

    fn io_for_trap(&self, io: &Io) -> Io {
        io.clone()
    }

    /// Runs one command of a pipeline.
    pub fn exec_command(&mut self, cmd: &Command, io: &Io) -> R {
        match cmd {
            Command::Simple(s) => self.exec_simple(s, io),
            Command::Compound(c, redirs) => {
                if redirs.is_empty() {
                    return self.exec_compound(c, io);
                }
                let mark = self.psubs.len();
                let (rio, opened) = match self.redirect(redirs, io) {
                    Ok(x) => x,
                    Err(status) => {
                        self.finish_psubs(mark, io);
                        return Ok(status);
                    }
                };
                let r = self.exec_compound(c, &rio);
                self.close_files(opened, io);
                self.finish_psubs(mark, io);
                r
            }
            Command::FuncDef(name, body) => {
                Rc::make_mut(&mut self.funcs).insert(name.clone(), body.clone());
                Ok(0)
            }
        }
    }

    /// Calls the function `body` with `args` as its positional parameters.
    pub fn call_function(
        &mut self,
        name: &[u8],
        body: &Rc<Command>,
        args: &[Vec<u8>],
        io: &Io,
    ) -> R {
        // `dispatch` counted this call's nesting level.
        let Some(_held) = crate::limits::held::hold(args) else {
            self.error(io, &crate::limits::held::refused());
            return Ok(1);
        };
        let saved = std::mem::replace(&mut self.params, Rc::new(args.to_vec()));
        let saved_loops = std::mem::replace(&mut self.loops, 0);
        self.vars.push_frame();
        self.vars.make_local(b"FUNCNAME");
        let _ = self.vars.set(b"FUNCNAME", name.to_vec());
        self.calls += 1;
        let r = self.exec_command(body, io);
        self.calls -= 1;
        self.vars.pop_frame();
        self.loops = saved_loops;
        self.params = saved;
        match r {
            Err(Ctl::Return(s)) => Ok(s),
            other => other,
        }
    }
}

fn is_yes(cmd: &Command) -> bool {
    match cmd {
        Command::Simple(s) => s
            .words
            .first()
            .and_then(crate::parse::literal_text)
            .is_some_and(|w| w == b"yes"),
        _ => false,
    }
}
