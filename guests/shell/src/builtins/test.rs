//! `test`, `[` and `[[ ]]`: file tests, string and integer comparisons,
//! patterns and `=~`.

use super::complain;
use crate::bytes::{lossy, parse_int};
use crate::exec::state::Value;
use crate::exec::{Ctl, R, Shell};
use crate::fs::Target;
use crate::io::Io;
use crate::parse::ast::Cond;
use crate::pattern::Pattern;
use std::fs::Metadata;

/// `test EXPR`.
pub fn test(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    Ok(run(sh, io, "test", &argv[1..]))
}

/// `[ EXPR ]`.
pub fn bracket(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    if argv.last().map(|a| a.as_slice()) != Some(b"]") {
        complain(io, "[", "missing `]'");
        return Ok(2);
    }
    Ok(run(sh, io, "[", &argv[1..argv.len() - 1]))
}

/// Evaluates `test` arguments (for `find`-free callers such as `xargs`).
pub fn test_args(sh: &mut Shell, io: &Io, args: &[Vec<u8>]) -> i32 {
    run(sh, io, "test", args)
}

fn run(sh: &mut Shell, io: &Io, name: &str, args: &[Vec<u8>]) -> i32 {
    let mut p = TestParser {
        sh,
        args,
        i: 0,
        depth: 0,
    };
    let r = p.expr();
    match r {
        Ok(v) if p.i == args.len() => (!v) as i32,
        Ok(_) => {
            let extra = args.get(p.i).map(|a| lossy(a)).unwrap_or_default();
            complain(io, name, &format!("{extra}: unexpected argument"));
            2
        }
        Err(e) => {
            complain(io, name, &e);
            2
        }
    }
}

struct TestParser<'a> {
    sh: &'a mut Shell,
    args: &'a [Vec<u8>],
    i: usize,
    depth: usize,
}

impl TestParser<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.args.get(self.i).map(|a| a.as_slice())
    }

    fn expr(&mut self) -> Result<bool, String> {
        let n = self.args.len() - self.i;
        // POSIX rules by argument count keep `[ "$x" = -f ]` unambiguous.
        match n {
            0 => return Ok(false),
            1 => {
                self.i += 1;
                return Ok(!self.args[self.i - 1].is_empty());
            }
            2 if self.peek() == Some(b"!") => {
                self.i += 1;
                return self.expr().map(|v| !v);
            }
            3 if is_binary(&self.args[self.i + 1]) => {
                let (a, op, b) = (
                    self.args[self.i].clone(),
                    self.args[self.i + 1].clone(),
                    self.args[self.i + 2].clone(),
                );
                self.i += 3;
                return binary(self.sh, &a, &op, &b);
            }
            _ => {}
        }
        self.or()
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.peek() == Some(b"-o") {
            self.i += 1;
            let r = self.and()?;
            v = v || r;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.not()?;
        while self.peek() == Some(b"-a") {
            self.i += 1;
            let r = self.not()?;
            v = v && r;
        }
        Ok(v)
    }

    fn not(&mut self) -> Result<bool, String> {
        let mut neg = false;
        while self.peek() == Some(b"!") && self.i + 1 < self.args.len() {
            self.i += 1;
            neg = !neg;
        }
        Ok(self.primary()? != neg)
    }

    fn primary(&mut self) -> Result<bool, String> {
        let Some(a) = self.peek().map(|a| a.to_vec()) else {
            return Err("argument expected".into());
        };
        if a == b"(" && self.i + 2 < self.args.len() + 1 {
            self.depth += 1;
            if self.depth > crate::limits::MAX_PARSE_NEST || crate::limits::stack::exhausted() {
                return Err("expression nested too deeply".into());
            }
            self.i += 1;
            let v = self.or()?;
            if self.peek() != Some(b")") {
                return Err("`)' expected".into());
            }
            self.i += 1;
            self.depth -= 1;
            return Ok(v);
        }
        if let Some(op) = self.args.get(self.i + 1).cloned()
            && is_binary(&op)
            && self.i + 2 < self.args.len()
        {
            let b = self.args[self.i + 2].clone();
            self.i += 3;
            return binary(self.sh, &a, &op, &b);
        }
        if is_unary(&a) && self.i + 1 < self.args.len() {
            let operand = self.args[self.i + 1].clone();
            self.i += 2;
            return Ok(unary(self.sh, &a, &operand));
        }
        self.i += 1;
        Ok(!a.is_empty())
    }
}

fn is_unary(op: &[u8]) -> bool {
    op.len() == 2 && op[0] == b'-' && b"bcdefghknoprstuvwxzGLNOS".contains(&op[1])
}

fn is_binary(op: &[u8]) -> bool {
    matches!(
        op,
        b"=" | b"=="
            | b"!="
            | b"<"
            | b">"
            | b"-eq"
            | b"-ne"
            | b"-lt"
            | b"-le"
            | b"-gt"
            | b"-ge"
            | b"-nt"
            | b"-ot"
            | b"-ef"
            | b"-a"
            | b"-o"
    )
}

fn meta(sh: &Shell, p: &[u8], follow: bool) -> Option<Metadata> {
    match sh.fs.target(&sh.fs.absolute(&sh.cwd, p))? {
        Target::Path(h) => {
            if follow {
                std::fs::metadata(h).ok()
            } else {
                std::fs::symlink_metadata(h).ok()
            }
        }
        _ => None,
    }
}

fn is_device(sh: &Shell, p: &[u8]) -> bool {
    matches!(
        sh.fs.target(&sh.fs.absolute(&sh.cwd, p)),
        Some(Target::Null | Target::Std(_))
    )
}

/// A unary file or string test.
pub fn unary(sh: &Shell, op: &[u8], a: &[u8]) -> bool {
    match op {
        b"-z" => a.is_empty(),
        b"-n" => !a.is_empty(),
        b"-v" => sh.vars.get(a).is_some_and(|v| v.value.is_some()),
        b"-t" => false,
        b"-o" => false,
        b"-L" | b"-h" => meta(sh, a, false).is_some_and(|m| m.file_type().is_symlink()),
        b"-c" => is_device(sh, a),
        _ => {
            if a.is_empty() {
                return false;
            }
            let Some(m) = meta(sh, a, true) else {
                return is_device(sh, a) && matches!(op, b"-e" | b"-r" | b"-w");
            };
            match op {
                b"-e" | b"-a" | b"-r" | b"-w" | b"-x" | b"-O" | b"-G" => true,
                b"-f" => m.is_file(),
                b"-d" => m.is_dir(),
                b"-s" => m.len() > 0,
                b"-N" => true,
                _ => false,
            }
        }
    }
}

fn int(a: &[u8]) -> Result<i64, String> {
    parse_int(a).ok_or_else(|| format!("{}: integer expression expected", lossy(a)))
}

fn mtime(sh: &Shell, p: &[u8]) -> Option<std::time::SystemTime> {
    meta(sh, p, true)?.modified().ok()
}

fn same_file(sh: &Shell, a: &[u8], b: &[u8]) -> bool {
    let (Some(ma), Some(mb)) = (meta(sh, a, true), meta(sh, b, true)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        sh.fs.absolute(&sh.cwd, a) == sh.fs.absolute(&sh.cwd, b)
    }
}

/// A binary test (`test` semantics: integers are decimal).
fn binary(sh: &Shell, a: &[u8], op: &[u8], b: &[u8]) -> Result<bool, String> {
    Ok(match op {
        b"=" | b"==" => a == b,
        b"!=" => a != b,
        b"<" => a < b,
        b">" => a > b,
        b"-eq" => int(a)? == int(b)?,
        b"-ne" => int(a)? != int(b)?,
        b"-lt" => int(a)? < int(b)?,
        b"-le" => int(a)? <= int(b)?,
        b"-gt" => int(a)? > int(b)?,
        b"-ge" => int(a)? >= int(b)?,
        b"-nt" => match (mtime(sh, a), mtime(sh, b)) {
            (Some(x), Some(y)) => x > y,
            (Some(_), None) => true,
            _ => false,
        },
        b"-ot" => match (mtime(sh, a), mtime(sh, b)) {
            (Some(x), Some(y)) => x < y,
            (None, Some(_)) => true,
            _ => false,
        },
        b"-ef" => same_file(sh, a, b),
        b"-a" => !a.is_empty() && !b.is_empty(),
        b"-o" => !a.is_empty() || !b.is_empty(),
        _ => return Err(format!("{}: unknown operator", lossy(op))),
    })
}

impl Shell {
    /// Evaluates `[[ … ]]`: `Some(result)`, or `None` for an error
    /// (status 2, message printed).
    pub fn eval_cond(&mut self, e: &Cond, io: &Io) -> Result<Option<bool>, Ctl> {
        self.check_stack(io)?;
        Ok(match e {
            Cond::Not(inner) => self.eval_cond(inner, io)?.map(|v| !v),
            Cond::And(items) => {
                for c in items {
                    match self.eval_cond(c, io)? {
                        Some(true) => {}
                        other => return Ok(other),
                    }
                }
                Some(true)
            }
            Cond::Or(items) => {
                for c in items {
                    match self.eval_cond(c, io)? {
                        Some(false) => {}
                        other => return Ok(other),
                    }
                }
                Some(false)
            }
            Cond::Word(w) => Some(!self.expand_scalar(w, io)?.is_empty()),
            Cond::Unary(op, w) => {
                let a = self.expand_scalar(w, io)?;
                Some(unary(self, op, &a))
            }
            Cond::Binary(op, l, r) => {
                let a = self.expand_scalar(l, io)?;
                match op.as_slice() {
                    b"==" | b"=" | b"!=" => {
                        let (pat, active) = self.expand_pattern(r, io)?;
                        let m = Pattern::new(&pat, Some(&active)).matches(&a);
                        Some(m == (op.as_slice() != b"!="))
                    }
                    b"=~" => {
                        let (pat, active) = self.expand_pattern(r, io)?;
                        self.regex_match(&a, &pat, &active, io)
                    }
                    b"-eq" | b"-ne" | b"-lt" | b"-le" | b"-gt" | b"-ge" => {
                        let b = self.expand_scalar(r, io)?;
                        let x = self.arith_text(&a, io)?;
                        let y = self.arith_text(&b, io)?;
                        Some(match op.as_slice() {
                            b"-eq" => x == y,
                            b"-ne" => x != y,
                            b"-lt" => x < y,
                            b"-le" => x <= y,
                            b"-gt" => x > y,
                            _ => x >= y,
                        })
                    }
                    _ => {
                        let b = self.expand_scalar(r, io)?;
                        match binary(self, &a, op, &b) {
                            Ok(v) => Some(v),
                            Err(msg) => {
                                self.error(io, &msg);
                                None
                            }
                        }
                    }
                }
            }
        })
    }

    fn regex_match(&mut self, s: &[u8], pat: &[u8], active: &[bool], io: &Io) -> Option<bool> {
        // Quoted parts match literally.
        let mut text = Vec::new();
        for (i, &c) in pat.iter().enumerate() {
            if !active.get(i).copied().unwrap_or(true) && !c.is_ascii_alphanumeric() {
                text.push(b'\\');
            }
            text.push(c);
        }
        let re = match crate::util::re::compile(&text, true, false) {
            Ok(r) => r,
            Err(e) => {
                self.error(io, &e);
                return None;
            }
        };
        match re.captures(s) {
            Some(caps) => {
                let groups: Vec<Vec<u8>> = caps
                    .iter()
                    .map(|m| m.map(|m| m.as_bytes().to_vec()).unwrap_or_default())
                    .collect();
                let _ = self.vars.set_value(b"BASH_REMATCH", Value::Arr(groups));
                Some(true)
            }
            None => {
                let _ = self.vars.set_value(b"BASH_REMATCH", Value::Arr(Vec::new()));
                Some(false)
            }
        }
    }
}
