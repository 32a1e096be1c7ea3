//! Simple commands: assignments, `set -x` traces, and finding what a name
//! runs (function, builtin, utility, interpreter, script file).

use super::state::{Value, Var};
use super::{Ctl, R, Shell};
use crate::bytes::{lossy, quote_if_needed};
use crate::io::{Io, put};
use crate::parse::ast::*;
use crate::programs::{Invocation, PROGRAM_NAMES};

/// Directories whose names a command may be written with (`/bin/ls`).
const BIN_DIRS: [&[u8]; 5] = [
    b"/bin/",
    b"/usr/bin/",
    b"/usr/local/bin/",
    b"/sbin/",
    b"/usr/sbin/",
];

/// What a command name runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A shell function.
    Function,
    /// A builtin of the shell itself.
    Builtin,
    /// A utility built into the shell (`/usr/bin/NAME`).
    Utility,
    /// An interpreter started through `programs`.
    Program,
}

impl Shell {
    /// What `name` would run, if anything.
    pub fn kind_of(&self, name: &[u8]) -> Option<Kind> {
        if self.funcs.contains_key(name) {
            Some(Kind::Function)
        } else if crate::builtins::lookup(name).is_some() {
            Some(Kind::Builtin)
        } else if crate::util::lookup(name).is_some() {
            Some(Kind::Utility)
        } else if PROGRAM_NAMES.iter().any(|p| p.as_bytes() == name) {
            Some(Kind::Program)
        } else {
            None
        }
    }

    /// Runs a simple command.
    pub fn exec_simple(&mut self, s: &Simple, io: &Io) -> R {
        let mark = self.psubs.len();
        let r = self.exec_simple_inner(s, io);
        self.finish_psubs(mark, io);
        r
    }

    fn exec_simple_inner(&mut self, s: &Simple, io: &Io) -> R {
        self.subst_status = None;
        let argv = if is_declaration(&s.words) {
            self.expand_declaration(&s.words, io)?
        } else {
            self.expand_words(&s.words, io)?
        };
        // Held while the command runs (a nested call keeps its caller's).
        let Some(_held) = crate::limits::held::hold(&argv) else {
            self.error(io, &crate::limits::held::refused());
            return Err(Ctl::Abort(1));
        };
        if argv.is_empty() {
            let mut status = 0;
            for a in &s.assigns {
                if let Err(e) = self.assign(a, io)? {
                    self.error(io, &e);
                    status = 1;
                    if e.ends_with("readonly variable") {
                        return Err(Ctl::Exit(1));
                    }
                }
            }
            if self.opts.xtrace && !s.assigns.is_empty() {
                self.trace_assigns(&s.assigns, io);
            }
            if !s.redirs.is_empty() {
                match self.redirect(&s.redirs, io) {
                    Ok((_, opened)) => self.close_files(opened, io),
                    Err(st) => return Ok(st),
                }
            }
            return Ok(if status != 0 {
                status
            } else {
                self.subst_status.unwrap_or(0)
            });
        }
        let mut saved: Vec<(Vec<u8>, Option<Var>)> = Vec::new();
        for a in &s.assigns {
            let old = self.vars.get(&a.name).cloned();
            match self.assign(a, io)? {
                Ok(()) => {
                    self.vars.entry(&a.name).exported = true;
                    saved.push((a.name.clone(), old));
                }
                Err(e) => self.error(io, &e),
            }
        }
        if self.opts.xtrace {
            self.trace(&argv, io);
        }
        if argv.len() == 1 && argv[0] == b"exec" {
            // `exec` with redirections only: the shell keeps them.
            return match self.redirect(&s.redirs, io) {
                Ok((rio, _)) => {
                    self.pending_io = Some(rio);
                    Ok(0)
                }
                Err(st) => Ok(st),
            };
        }
        let r = match self.redirect(&s.redirs, io) {
            Ok((rio, opened)) => {
                let mut r = self.dispatch(&argv, &rio);
                if r == Ok(0) {
                    for a in &s.decl_arrays {
                        if let Err(e) = self.assign(a, io)? {
                            self.error(io, &e);
                            r = Ok(1);
                        }
                    }
                }
                self.close_files(opened, io);
                r
            }
            Err(st) => Ok(st),
        };
        for (name, old) in saved.into_iter().rev() {
            match old {
                Some(v) => {
                    *self.vars.entry(&name) = v;
                }
                None => {
                    let _ = self.vars.unset(&name);
                }
            }
        }
        r
    }

    /// Expands a declaration command's words: `NAME=value` words are not
    /// split or globbed (as bash does for `export`, `local`, …).
    fn expand_declaration(&mut self, words: &[Word], io: &Io) -> Result<Vec<Vec<u8>>, Ctl> {
        let mut out = Vec::new();
        for w in words {
            if looks_like_assignment(w) {
                out.push(self.expand_scalar(w, io)?);
            } else {
                out.extend(self.expand_words(std::slice::from_ref(w), io)?);
            }
        }
        Ok(out)
    }

    fn trace(&self, argv: &[Vec<u8>], io: &Io) {
        let ps4 = self.vars.value(b"PS4").unwrap_or_else(|| b"+ ".to_vec());
        let mut line = ps4;
        for (i, a) in argv.iter().enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            line.extend(quote_if_needed(a));
        }
        line.push(b'\n');
        let _ = put(&io.stderr(), &line);
    }

    fn trace_assigns(&self, assigns: &[Assign], io: &Io) {
        for a in assigns {
            let v = self.vars.value(&a.name).unwrap_or_default();
            let mut line = self.vars.value(b"PS4").unwrap_or_else(|| b"+ ".to_vec());
            line.extend_from_slice(&a.name);
            line.push(b'=');
            line.extend(quote_if_needed(&v));
            line.push(b'\n');
            let _ = put(&io.stderr(), &line);
        }
    }

    /// Performs one assignment. The outer `Err` is a change of flow (an
    /// expansion error); the inner one a refused assignment (read-only).
    pub fn assign(&mut self, a: &Assign, io: &Io) -> Result<Result<(), String>, Ctl> {
        match (&a.value, &a.index) {
            (AssignValue::Scalar(w), None) => {
                let mut v = self.expand_scalar(w, io)?;
                if a.append {
                    if let Some(Value::Arr(_)) =
                        self.vars.get(&a.name).and_then(|x| x.value.as_deref())
                    {
                        let len = self.array_len(&a.name);
                        return Ok(self.set_element(&a.name, len.to_string().as_bytes(), v));
                    }
                    let mut old = self.vars.value(&a.name).unwrap_or_default();
                    old.extend(v);
                    v = old;
                }
                if v.len() > crate::limits::MAX_WORD {
                    return Ok(Err(format!(
                        "{}: value exceeds the limit of {} MiB",
                        lossy(&a.name),
                        crate::limits::MAX_WORD >> 20
                    )));
                }
                Ok(self.vars.set(&a.name, v))
            }
            (AssignValue::Scalar(w), Some(idx)) => {
                let v = self.expand_scalar(w, io)?;
                let is_assoc = matches!(
                    self.vars.get(&a.name).and_then(|x| x.value.as_deref()),
                    Some(Value::Assoc(_))
                );
                let key = if is_assoc {
                    self.expand_scalar(idx, io)?
                } else {
                    let t = self.expand_scalar(idx, io)?;
                    self.arith_text(&t, io)?.to_string().into_bytes()
                };
                let v = if a.append {
                    let mut old = self.element(&a.name, &key).unwrap_or_default();
                    old.extend(v);
                    old
                } else {
                    v
                };
                Ok(self.set_element(&a.name, &key, v))
            }
            (AssignValue::Array(words), _) => {
                let items = self.expand_words(words, io)?;
                let is_assoc = matches!(
                    self.vars.get(&a.name).and_then(|x| x.value.as_deref()),
                    Some(Value::Assoc(_))
                );
                if is_assoc {
                    return Ok(self.assign_assoc(&a.name, items, a.append));
                }
                let mut arr = if a.append {
                    match self.vars.get_value(&a.name).cloned() {
                        Some(Value::Arr(v)) => v,
                        Some(Value::Str(s)) => vec![s],
                        _ => Vec::new(),
                    }
                } else {
                    Vec::new()
                };
                arr.extend(items);
                Ok(self.vars.set_value(&a.name, Value::Arr(arr)))
            }
        }
    }

    /// `declare -A m=([k]=v …)`: items arrive as `[k]=v` words.
    fn assign_assoc(
        &mut self,
        name: &[u8],
        items: Vec<Vec<u8>>,
        append: bool,
    ) -> Result<(), String> {
        let mut map = match self.vars.get_value(name).cloned() {
            Some(Value::Assoc(m)) if append => m,
            _ => Default::default(),
        };
        for it in items {
            let Some(rest) = it.strip_prefix(b"[") else {
                return Err(format!(
                    "{}: must use subscript when assigning associative array",
                    lossy(&it)
                ));
            };
            let Some(close) = rest.iter().position(|&c| c == b']') else {
                return Err(format!("{}: bad array subscript", lossy(&it)));
            };
            let key = rest[..close].to_vec();
            let value = rest[close + 1..].strip_prefix(b"=").unwrap_or(&[]).to_vec();
            map.insert(key, value);
        }
        self.vars.set_value(name, Value::Assoc(map))
    }

    fn array_len(&self, name: &[u8]) -> usize {
        match self.vars.get(name).and_then(|x| x.value.as_deref()) {
            Some(Value::Arr(a)) => a.len(),
            Some(_) => 1,
            None => 0,
        }
    }

    fn element(&self, name: &[u8], key: &[u8]) -> Option<Vec<u8>> {
        match self.vars.get(name)?.value.as_deref()? {
            Value::Assoc(m) => m.get(key).cloned(),
            Value::Arr(a) => a
                .get(std::str::from_utf8(key).ok()?.parse::<usize>().ok()?)
                .cloned(),
            Value::Str(s) => (key == b"0").then(|| s.clone()),
        }
    }

    /// Runs the command `argv` names (already expanded and redirected).
    /// Every command that runs another (`command`, `builtin`, `exec`,
    /// `env`, `time`, `xargs`, `find -exec`, function calls) comes back
    /// here, so one nesting level is counted per dispatch.
    pub fn dispatch(&mut self, argv: &[Vec<u8>], io: &Io) -> R {
        if argv.is_empty() {
            return Ok(0);
        }
        self.nested(io, |sh| sh.dispatch_inner(argv, io))
    }

    /// Runs `f` one run-time nesting level deeper.
    pub fn nested(&mut self, io: &Io, f: impl FnOnce(&mut Shell) -> R) -> R {
        self.enter(io)?;
        let r = f(self);
        self.depth -= 1;
        match self.fatal.get() {
            // A limit was hit inside a utility that only saw a status.
            Some(s) => Err(Ctl::Fatal(s)),
            None => r,
        }
    }

    /// Runs `argv` as a program found by name would be: never a function
    /// (`command`, `env`, `xargs`, `find -exec`).
    pub fn dispatch_external(&mut self, argv: &[Vec<u8>], io: &Io) -> R {
        let funcs = std::mem::take(&mut self.funcs);
        let r = self.dispatch(argv, io);
        self.funcs = funcs;
        r
    }

    fn dispatch_inner(&mut self, argv: &[Vec<u8>], io: &Io) -> R {
        let name = argv[0].as_slice();
        if let Some(body) = self.funcs.get(name).cloned() {
            return self.call_function(name, &body, &argv[1..], io);
        }
        if let Some(b) = crate::builtins::lookup(name) {
            return b(self, io, argv);
        }
        if let Some(u) = crate::util::lookup(name) {
            return Ok(u(self, io, argv));
        }
        if PROGRAM_NAMES.iter().any(|p| p.as_bytes() == name) {
            return Ok(self.run_program(name, &argv[1..], io));
        }
        if name.contains(&b'/') {
            if let Some(dir) = BIN_DIRS.iter().find(|d| name.starts_with(d)) {
                let base = &name[dir.len()..];
                if !base.contains(&b'/') && self.kind_of(base).is_some_and(|k| k != Kind::Function)
                {
                    let mut v = argv.to_vec();
                    v[0] = base.to_vec();
                    return self.dispatch_inner(&v, io);
                }
            }
            return crate::builtins::run_path(self, argv, io);
        }
        Ok(self.not_found(name, io))
    }

    /// `sh: NAME: not found`, 127 (with a hint for pip).
    pub fn not_found(&self, name: &[u8], io: &Io) -> i32 {
        let n = lossy(name);
        if matches!(n.as_str(), "pip" | "pip3") || n.starts_with("pip3.") {
            self.error(
                io,
                &format!("{n}: not found (packages are fixed: the host's Python has a fixed set of packages and nothing can be installed)"),
            );
        } else {
            self.error(io, &format!("{n}: not found"));
        }
        127
    }

    /// Starts an interpreter through `programs` and copies its output.
    /// Its stdin is a copy of what is left of the command's input (not
    /// consumed: a `while read` loop around it keeps its lines). An
    /// argument naming `/tmp` or a path under it is passed as the path the
    /// alias stands for, since the interpreters see only `/work`.
    pub fn run_program(&mut self, name: &[u8], args: &[Vec<u8>], io: &Io) -> i32 {
        // The whole invocation is copied to the host: its size is checked
        // before anything is copied.
        let env_size: usize = self
            .vars
            .iter()
            .filter(|(_, v)| v.exported)
            .map(|(k, v)| k.len() + v.value.as_deref().map_or(0, |x| x.size()) + 2)
            .sum();
        let size = io.stdin().borrow_mut().remaining()
            + args.iter().map(|a| a.len() + 1).sum::<usize>()
            + env_size
            + self.cwd.len();
        if size > crate::limits::MAX_INVOCATION {
            self.error(
                io,
                &format!(
                    "{}: Argument list too long (arguments, environment and input exceed {} MiB)",
                    lossy(name),
                    crate::limits::MAX_INVOCATION >> 20
                ),
            );
            return 126;
        }
        let stdin = io.stdin().borrow_mut().peek_all();
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                if a == b"/tmp" || a.starts_with(b"/tmp/") {
                    lossy(&self.fs.absolute(b"/work", a))
                } else {
                    lossy(a)
                }
            })
            .collect();
        let inv = Invocation {
            program: lossy(name),
            args,
            cwd: lossy(&self.cwd),
            env: self
                .vars
                .exported()
                .into_iter()
                .map(|(k, v)| (lossy(&k), lossy(&v)))
                .collect(),
            stdin,
        };
        match self.programs.run(inv) {
            Ok(c) => {
                let _ = put(&io.stdout(), &c.stdout);
                let _ = put(&io.stderr(), &c.stderr);
                c.exit_code
            }
            // The host says why (no such interpreter, too large, no free
            // slot): shown as it is, 127 for a missing program, 126 for
            // one that could not be started.
            Err(why) if why.is_empty() => self.not_found(name, io),
            Err(why) => {
                self.error(io, &why);
                if why.contains("not found") { 127 } else { 126 }
            }
        }
    }
}

fn is_declaration(words: &[Word]) -> bool {
    words
        .first()
        .and_then(crate::parse::literal_text)
        .is_some_and(|w| {
            matches!(
                w.as_slice(),
                b"export" | b"local" | b"declare" | b"typeset" | b"readonly"
            )
        })
}

fn looks_like_assignment(w: &Word) -> bool {
    let Some(Part::Lit(t)) = w.first() else {
        return false;
    };
    let n = t
        .iter()
        .take_while(|&&c| c == b'_' || c.is_ascii_alphanumeric())
        .count();
    if n == 0 || t[0].is_ascii_digit() {
        return false;
    }
    let rest = &t[n..];
    rest.starts_with(b"=") || rest.starts_with(b"+=") || rest.starts_with(b"[")
}
