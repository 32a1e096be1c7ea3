//! awk's function calls, builtin functions, `printf` formatting, `getline`
//! and output redirection.

use super::ast::{Expr, Stmt};
use super::interp::{Awk, Cell, Flow, Frame, Res};
use super::value::Val;
use crate::util::printf::{Spec, fmt_float, fmt_int, pad, parse_spec};
use std::rc::Rc;

/// Deepest user-function recursion.
const MAX_CALLS: usize = 200;

fn err(e: impl std::fmt::Display) -> Flow {
    Flow::Error(e.to_string())
}

fn uses_as_array(body: &[Stmt], name: &str) -> bool {
    fn e(x: &Expr, n: &str) -> bool {
        match x {
            Expr::Index(a, idx) => a == n || idx.iter().any(|i| e(i, n)),
            Expr::In(k, a) => a == n || k.iter().any(|i| e(i, n)),
            Expr::Builtin(b, args) if b == "split" => {
                matches!(args.get(1), Some(Expr::Var(v)) if v == n) || args.iter().any(|i| e(i, n))
            }
            Expr::Field(a) | Expr::Not(a) | Expr::Neg(a, _) | Expr::Incr(_, _, a) => e(a, n),
            Expr::Assign(_, a, b) | Expr::Bin(_, a, b) | Expr::Match(a, b, _) => e(a, n) || e(b, n),
            Expr::And(v) | Expr::Or(v) | Expr::Concat(v) => v.iter().any(|i| e(i, n)),
            Expr::Chain(a, rest) => e(a, n) || rest.iter().any(|(_, i)| e(i, n)),
            Expr::Cond(a, b, c) => e(a, n) || e(b, n) || e(c, n),
            Expr::Call(_, args) | Expr::Builtin(_, args) | Expr::Group(args) => {
                args.iter().any(|i| e(i, n))
            }
            _ => false,
        }
    }
    fn s(x: &Stmt, n: &str) -> bool {
        match x {
            Stmt::Expr(a) => e(a, n),
            Stmt::Print(a, _) | Stmt::Printf(a, _) => a.iter().any(|i| e(i, n)),
            Stmt::If(c, a, b) => e(c, n) || s(a, n) || b.as_ref().is_some_and(|b| s(b, n)),
            Stmt::While(c, b) | Stmt::Do(b, c) => e(c, n) || s(b, n),
            Stmt::For(i, c, st, b) => {
                i.as_ref().is_some_and(|i| s(i, n))
                    || c.as_ref().is_some_and(|c| e(c, n))
                    || st.as_ref().is_some_and(|x| s(x, n))
                    || s(b, n)
            }
            Stmt::ForIn(_, a, b) => a == n || s(b, n),
            Stmt::Block(b) => b.iter().any(|i| s(i, n)),
            Stmt::Delete(a, _) => a == n,
            Stmt::Exit(Some(a)) | Stmt::Return(Some(a)) => e(a, n),
            _ => false,
        }
    }
    body.iter().any(|x| s(x, name))
}

impl Awk<'_> {
    /// Calls a user function.
    pub fn call(&mut self, name: &str, args: &[Expr]) -> Res<Val> {
        let prog = self.prog.clone();
        let Some(f) = prog.funcs.get(name) else {
            return Err(err(format!("function `{name}' not defined")));
        };
        if self.frames.len() >= MAX_CALLS || crate::limits::stack::exhausted() {
            return Err(err(format!(
                "function call nesting too deep (the limit is {MAX_CALLS})"
            )));
        }
        if args.len() > f.params.len() {
            return Err(err(format!(
                "function `{name}' called with more arguments than declared"
            )));
        }
        let mut cells = Vec::with_capacity(f.params.len());
        for (i, p) in f.params.iter().enumerate() {
            let cell = match args.get(i) {
                Some(Expr::Var(v)) => {
                    let wants_array = uses_as_array(&f.body, p);
                    let is_array = matches!(self.peek_cell(v), Some(Cell::Arr(_)));
                    if is_array || wants_array {
                        Cell::Arr(self.array(v)?)
                    } else {
                        Cell::Val(self.get(v)?)
                    }
                }
                Some(other) => Cell::Val(self.eval(other)?),
                None => Cell::Val(Val::Uninit),
            };
            cells.push(cell);
        }
        self.frames.push(Frame {
            names: Rc::new(f.params.clone()),
            cells,
        });
        let r = self.exec_block(&f.body);
        self.frames.pop();
        match r {
            Ok(()) => Ok(Val::Uninit),
            Err(Flow::Return(v)) => Ok(v),
            Err(e) => Err(e),
        }
    }

    fn peek_cell(&self, name: &str) -> Option<&Cell> {
        if let Some(f) = self.frames.last()
            && let Some(i) = f.names.iter().position(|n| n == name)
        {
            return f.cells.get(i);
        }
        self.globals.get(name)
    }

    fn str_arg(&mut self, args: &[Expr], i: usize) -> Res<Vec<u8>> {
        match args.get(i) {
            Some(e) => {
                let v = self.eval(e)?;
                Ok(self.s(&v))
            }
            None => Ok(Vec::new()),
        }
    }

    fn num_arg(&mut self, args: &[Expr], i: usize) -> Res<f64> {
        match args.get(i) {
            Some(e) => Ok(self.eval(e)?.num()),
            None => Ok(0.0),
        }
    }

    /// Calls a builtin function.
    pub fn builtin(&mut self, name: &str, args: &[Expr]) -> Res<Val> {
        let chars = |s: &[u8]| -> Vec<usize> {
            match std::str::from_utf8(s) {
                Ok(t) => t
                    .char_indices()
                    .map(|(i, _)| i)
                    .chain(std::iter::once(s.len()))
                    .collect(),
                Err(_) => (0..=s.len()).collect(),
            }
        };
        Ok(match name {
            "length" => match args.first() {
                None => Val::Num((chars(&self.record).len() - 1) as f64),
                Some(Expr::Var(v)) if matches!(self.peek_cell(v), Some(Cell::Arr(_))) => {
                    let a = self.array(v)?;
                    Val::Num(self.arrays[a].len() as f64)
                }
                Some(_) => {
                    let s = self.str_arg(args, 0)?;
                    Val::Num((chars(&s).len() - 1) as f64)
                }
            },
            "substr" => {
                let s = self.str_arg(args, 0)?;
                let idx = chars(&s);
                let n = idx.len() - 1;
                let m = self.num_arg(args, 1)?.round();
                let len = if args.len() > 2 {
                    self.num_arg(args, 2)?.round()
                } else {
                    f64::INFINITY
                };
                let start = m.max(1.0);
                let end = (m + len).min(n as f64 + 1.0);
                if end <= start || start > n as f64 {
                    Val::Str(Vec::new())
                } else {
                    let (a, b) = (start as usize - 1, end as usize - 1);
                    Val::Str(s[idx[a]..idx[b]].to_vec())
                }
            }
            "index" => {
                let s = self.str_arg(args, 0)?;
                let t = self.str_arg(args, 1)?;
                let pos = crate::bytes::find(&s, &t).map_or(0, |p| chars(&s[..p]).len());
                Val::Num(pos as f64)
            }
            "split" => {
                let s = self.str_arg(args, 0)?;
                let Some(Expr::Var(arr)) = args.get(1) else {
                    return Err(err("split: second argument is not an array"));
                };
                let parts = match args.get(2) {
                    Some(Expr::Re(r)) => {
                        let re = self.regex(r)?;
                        split_re(&s, &re)
                    }
                    Some(e) => {
                        let v = self.eval(e)?;
                        let fs = self.s(&v);
                        self.split_with(&s, &fs, false)?
                    }
                    None => {
                        let fs = self.special("FS");
                        self.split_with(&s, &fs, false)?
                    }
                };
                let a = self.array(arr)?;
                self.arrays[a].clear();
                for (i, p) in parts.iter().enumerate() {
                    self.arrays[a].set((i + 1).to_string().into_bytes(), Val::StrNum(p.clone()));
                }
                Val::Num(parts.len() as f64)
            }
            "sub" | "gsub" => self.substitute(args, name == "gsub")?,
            "match" => {
                let s = self.str_arg(args, 0)?;
                let re = match args.get(1) {
                    Some(e) => self.regex_of(e)?,
                    None => return Err(err("match: missing regex")),
                };
                let (start, len) = match re.find(&s) {
                    Some(m) => (
                        chars(&s[..m.start()]).len() as f64,
                        (chars(&s[m.start()..m.end()]).len() - 1) as f64,
                    ),
                    None => (0.0, -1.0),
                };
                self.set("RSTART", Val::Num(start))?;
                self.set("RLENGTH", Val::Num(len))?;
                Val::Num(start)
            }
            "sprintf" => {
                let fmt = self.str_arg(args, 0)?;
                let mut vals = Vec::new();
                for a in args.iter().skip(1) {
                    vals.push(self.eval(a)?);
                }
                Val::Str(self.sprintf(&fmt, &vals)?)
            }
            "sin" => Val::Num(self.num_arg(args, 0)?.sin()),
            "cos" => Val::Num(self.num_arg(args, 0)?.cos()),
            "atan2" => Val::Num(self.num_arg(args, 0)?.atan2(self.num_arg(args, 1)?)),
            "exp" => Val::Num(self.num_arg(args, 0)?.exp()),
            "log" => Val::Num(self.num_arg(args, 0)?.ln()),
            "sqrt" => Val::Num(self.num_arg(args, 0)?.sqrt()),
            "int" => Val::Num(self.num_arg(args, 0)?.trunc()),
            "rand" => {
                self.rand.0 = self
                    .rand
                    .0
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                Val::Num((self.rand.0 >> 11) as f64 / (1u64 << 53) as f64)
            }
            "srand" => {
                let old = self.rand.1;
                let seed = if args.is_empty() {
                    crate::util::time::now().0 as f64
                } else {
                    self.num_arg(args, 0)?
                };
                self.rand = (seed.to_bits() ^ 0x9e3779b97f4a7c15, seed);
                Val::Num(old)
            }
            "tolower" | "toupper" => {
                let s = self.str_arg(args, 0)?;
                let t = match String::from_utf8(s) {
                    Ok(t) => if name == "tolower" {
                        t.to_lowercase()
                    } else {
                        t.to_uppercase()
                    }
                    .into_bytes(),
                    Err(e) => {
                        let b = e.into_bytes();
                        if name == "tolower" {
                            b.to_ascii_lowercase()
                        } else {
                            b.to_ascii_uppercase()
                        }
                    }
                };
                Val::Str(t)
            }
            "system" => {
                let cmd = self.str_arg(args, 0)?;
                self.flush_out()?;
                let io = self.io.clone();
                let st = self.run_command(&io, &cmd)?;
                Val::Num(st as f64)
            }
            "close" => {
                let n = self.str_arg(args, 0)?;
                Val::Num(self.close(&n)? as f64)
            }
            "fflush" => {
                self.flush_out()?;
                Val::Num(0.0)
            }
            other => return Err(err(format!("function `{other}' not defined"))),
        })
    }

    fn substitute(&mut self, args: &[Expr], global: bool) -> Res<Val> {
        let re = match args.first() {
            Some(e) => self.regex_of(e)?,
            None => return Err(err("sub: missing regex")),
        };
        let repl = self.str_arg(args, 1)?;
        let target = args
            .get(2)
            .cloned()
            .unwrap_or(Expr::Field(Box::new(Expr::Num(0.0))));
        let tv = self.eval(&target)?;
        let s = self.s(&tv);
        let mut out = Vec::new();
        let mut pos = 0;
        let mut count = 0;
        let mut last_end: Option<usize> = None;
        while pos <= s.len() {
            let Some(m) = re.find_at(&s, pos) else { break };
            if m.start() == m.end() && last_end == Some(m.start()) {
                if m.start() >= s.len() {
                    break;
                }
                out.push(s[m.start()]);
                pos = m.start() + 1;
                continue;
            }
            out.extend_from_slice(&s[pos..m.start()]);
            let mut i = 0;
            while i < repl.len() {
                match repl[i] {
                    b'\\'
                        if i + 1 < repl.len() && (repl[i + 1] == b'&' || repl[i + 1] == b'\\') =>
                    {
                        out.push(repl[i + 1]);
                        i += 2;
                        continue;
                    }
                    b'&' => out.extend_from_slice(m.as_bytes()),
                    c => out.push(c),
                }
                i += 1;
            }
            if out.len() > crate::limits::MAX_WORD {
                return Err(err("gsub: string too large"));
            }
            count += 1;
            last_end = Some(m.end());
            if m.start() == m.end() {
                if m.start() < s.len() {
                    out.push(s[m.start()]);
                }
                pos = m.start() + 1;
            } else {
                pos = m.end();
            }
            if !global {
                break;
            }
        }
        if count > 0 {
            if pos < s.len() {
                out.extend_from_slice(&s[pos..]);
            }
            self.assign(&target, Val::Str(out))?;
        }
        Ok(Val::Num(count as f64))
    }

    /// awk's `sprintf`.
    pub fn sprintf(&mut self, fmt: &[u8], vals: &[Val]) -> Res<Vec<u8>> {
        let mut out = Vec::new();
        let mut ai = 0;
        let mut i = 0;
        while i < fmt.len() {
            if out.len() > crate::limits::MAX_WORD {
                return Err(err("sprintf: string too large"));
            }
            if fmt[i] != b'%' {
                out.push(fmt[i]);
                i += 1;
                continue;
            }
            if fmt.get(i + 1) == Some(&b'%') {
                out.push(b'%');
                i += 2;
                continue;
            }
            let (spec, next): (Spec, usize) = parse_spec(fmt, i + 1, || {
                let v = vals.get(ai).map_or(0.0, |v| v.num()) as i64;
                ai += 1;
                v
            });
            if spec.too_large {
                return Err(err(crate::util::printf::too_large()));
            }
            i = next;
            let v = vals.get(ai).cloned().unwrap_or(Val::Uninit);
            ai += 1;
            match spec.conv {
                b'd' | b'i' => out.extend(fmt_int(
                    &Spec {
                        conv: b'd',
                        ..spec.clone()
                    },
                    v.num() as i64,
                )),
                b'o' | b'x' | b'X' | b'u' => out.extend(fmt_int(&spec, v.num() as i64)),
                b'e' | b'E' | b'f' | b'F' | b'g' | b'G' => out.extend(fmt_float(&spec, v.num())),
                b'c' => {
                    let body = match &v {
                        Val::Num(n) => char::from_u32(*n as u32)
                            .map(|c| c.to_string().into_bytes())
                            .unwrap_or_default(),
                        other => {
                            let s = other.str(b"");
                            match std::str::from_utf8(&s) {
                                Ok(t) => t
                                    .chars()
                                    .next()
                                    .map(|c| c.to_string().into_bytes())
                                    .unwrap_or_default(),
                                Err(_) => s.first().map(|c| vec![*c]).unwrap_or_default(),
                            }
                        }
                    };
                    out.extend(pad(&spec, body, false));
                }
                b's' => {
                    let mut s = self.s(&v);
                    if let Some(p) = spec.prec {
                        s.truncate(p);
                    }
                    out.extend(pad(&spec, s, false));
                }
                _ => {
                    out.push(b'%');
                    ai -= 1;
                }
            }
        }
        Ok(out)
    }
}

fn split_re(s: &[u8], re: &regex::bytes::Regex) -> Vec<Vec<u8>> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut v = Vec::new();
    let mut last = 0;
    for m in re.find_iter(s) {
        if m.start() == m.end() {
            continue;
        }
        v.push(s[last..m.start()].to_vec());
        last = m.end();
    }
    v.push(s[last..].to_vec());
    v
}
