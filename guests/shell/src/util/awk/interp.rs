//! The awk interpreter: variables, arrays, fields, records, statements and
//! expressions.

use super::ast::{Expr, Program, Stmt};
use super::value::{AMap, Val, compare};
use crate::exec::Shell;
use crate::io::Io;
use regex::bytes::Regex;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

/// A variable slot: a scalar or a reference to an array.
#[derive(Debug, Clone)]
pub enum Cell {
    /// A scalar.
    Val(Val),
    /// An array (index into the arena).
    Arr(usize),
}

/// A function call's locals.
pub struct Frame {
    /// Parameter names.
    pub names: Rc<Vec<String>>,
    /// Their cells.
    pub cells: Vec<Cell>,
}

/// A redirected output.
pub enum Output {
    /// `> file`, `>> file`: written as printed.
    File(std::io::BufWriter<std::fs::File>),
    /// `| cmd`: what the command will read when the output is closed (a
    /// bounded, shared pipe buffer).
    Pipe(crate::io::Out),
}

/// Why evaluation left the normal flow.
#[derive(Debug)]
pub enum Flow {
    /// `next`
    Next,
    /// `nextfile`
    NextFile,
    /// `exit`
    Exit,
    /// `return`
    Return(Val),
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// A fatal error.
    Error(String),
    /// Stop at once, quietly: the reader of standard output is gone, or
    /// a limit ended the shell's evaluation.
    Stop,
}

/// Results inside the interpreter.
pub type Res<T> = Result<T, Flow>;

/// Where records come from.
#[derive(Default)]
pub struct Source {
    /// The data.
    pub data: Vec<u8>,
    /// The read position.
    pub pos: usize,
}

/// The interpreter's state.
pub struct Awk<'a> {
    /// The shell (for `system`, pipes and files).
    pub sh: &'a mut Shell,
    /// Descriptors.
    pub io: &'a Io,
    /// The program.
    pub prog: Rc<Program>,
    /// Global variables.
    pub globals: HashMap<String, Cell>,
    /// Array arena.
    pub arrays: Vec<AMap>,
    /// Call frames.
    pub frames: Vec<Frame>,
    /// `$0`.
    pub record: Vec<u8>,
    /// `$1…$NF` once split.
    pub fields: Option<Vec<Vec<u8>>>,
    /// Standard output, buffered.
    pub out: Vec<u8>,
    /// Redirected outputs by name, open until closed.
    pub outputs: Vec<(Vec<u8>, Output)>,
    /// `getline` sources by file or command.
    pub readers: HashMap<Vec<u8>, Source>,
    /// Main input: operands still to read, and the current one.
    pub operands: Vec<Vec<u8>>,
    /// The current main input.
    pub main: Option<Source>,
    /// Whether stdin was used as the implicit input.
    pub used_stdin: bool,
    /// Range patterns' state.
    pub ranges: Vec<bool>,
    /// Compiled dynamic regexes.
    pub cache: HashMap<Vec<u8>, Regex>,
    /// `rand` state and `srand` seed.
    pub rand: (u64, f64),
    /// The exit status.
    pub exit_code: i32,
}

fn fmt_err(e: impl std::fmt::Display) -> Flow {
    Flow::Error(e.to_string())
}

impl Awk<'_> {
    /// A special variable's string value.
    pub fn special(&self, name: &str) -> Vec<u8> {
        match self.globals.get(name) {
            Some(Cell::Val(v)) => v.str(b"%.6g"),
            _ => Vec::new(),
        }
    }

    /// `CONVFMT`.
    pub fn convfmt(&self) -> Vec<u8> {
        self.special("CONVFMT")
    }

    /// A value as a string (numbers through CONVFMT).
    pub fn s(&self, v: &Val) -> Vec<u8> {
        match v {
            Val::Num(_) => v.str(&self.convfmt()),
            _ => v.str(b""),
        }
    }

    fn local_index(&self, name: &str) -> Option<usize> {
        self.frames.last()?.names.iter().position(|n| n == name)
    }

    fn cell(&mut self, name: &str) -> &mut Cell {
        if let Some(i) = self.local_index(name)
            && let Some(f) = self.frames.last_mut()
        {
            return &mut f.cells[i];
        }
        self.globals
            .entry(name.to_string())
            .or_insert(Cell::Val(Val::Uninit))
    }

    /// Reads a variable.
    pub fn get(&mut self, name: &str) -> Res<Val> {
        if name == "NF" && self.local_index(name).is_none() {
            return Ok(Val::Num(self.split()?.len() as f64));
        }
        match self.cell(name) {
            Cell::Val(v) => Ok(v.clone()),
            Cell::Arr(_) => Err(fmt_err(format!(
                "attempt to use array `{name}' in a scalar context"
            ))),
        }
    }

    /// Assigns a variable.
    pub fn set(&mut self, name: &str, v: Val) -> Res<()> {
        if name == "NF" && self.local_index(name).is_none() {
            let n = v.num().max(0.0);
            if n > crate::limits::MAX_FIELDS as f64 {
                return Err(fmt_err(format!(
                    "NF too large (more than {} fields)",
                    crate::limits::MAX_FIELDS
                )));
            }
            let mut f = self.split()?.clone();
            f.resize(n as usize, Vec::new());
            self.fields = Some(f);
            return self.rebuild();
        }
        match self.cell(name) {
            c @ Cell::Val(_) => {
                *c = Cell::Val(v);
                Ok(())
            }
            Cell::Arr(_) => Err(fmt_err(format!(
                "attempt to use array `{name}' in a scalar context"
            ))),
        }
    }

    /// The array called `name` (created on first use).
    pub fn array(&mut self, name: &str) -> Res<usize> {
        let next = self.arrays.len();
        let c = self.cell(name);
        match c {
            Cell::Arr(i) => Ok(*i),
            Cell::Val(Val::Uninit) => {
                *c = Cell::Arr(next);
                self.arrays.push(AMap::default());
                Ok(next)
            }
            Cell::Val(_) => Err(fmt_err(format!(
                "attempt to use scalar `{name}' as an array"
            ))),
        }
    }

    /// The subscript for `a[i, j]`.
    pub fn key(&mut self, idx: &[Expr]) -> Res<Vec<u8>> {
        let sep = self.special("SUBSEP");
        let mut k = Vec::new();
        for (n, e) in idx.iter().enumerate() {
            if n > 0 {
                k.extend_from_slice(&sep);
            }
            let v = self.eval(e)?;
            k.extend(self.s(&v));
        }
        Ok(k)
    }

    /// A compiled dynamic regex (ERE).
    pub fn regex(&mut self, text: &[u8]) -> Res<Regex> {
        if let Some(r) = self.cache.get(text) {
            return Ok(r.clone());
        }
        let t = crate::util::re::translate(text, true).map_err(fmt_err)?;
        let r = crate::util::re::build(&format!("(?s){t}"), false).map_err(fmt_err)?;
        if self.cache.len() > 500 {
            self.cache.clear();
        }
        self.cache.insert(text.to_vec(), r.clone());
        Ok(r)
    }

    /// The regex an expression stands for (a literal or a string).
    pub fn regex_of(&mut self, e: &Expr) -> Res<Regex> {
        match e {
            Expr::Re(r) => self.regex(r),
            other => {
                let v = self.eval(other)?;
                let t = self.s(&v);
                self.regex(&t)
            }
        }
    }

    /// Assigns to an lvalue.
    pub fn assign(&mut self, lv: &Expr, v: Val) -> Res<()> {
        match lv {
            Expr::Var(n) => self.set(n, v),
            Expr::Field(e) => {
                let i = self.eval(e)?.num();
                if i < 0.0 {
                    return Err(fmt_err("attempt to access field -1"));
                }
                let text = self.s(&v);
                self.set_field(i as usize, text)
            }
            Expr::Index(n, idx) => {
                let k = self.key(idx)?;
                let a = self.array(n)?;
                self.arrays[a].set(k, v);
                Ok(())
            }
            _ => Err(fmt_err("assignment to a non-variable")),
        }
    }

    /// Runs a list of statements.
    pub fn exec_block(&mut self, stmts: &[Stmt]) -> Res<()> {
        for s in stmts {
            self.exec(s)?;
        }
        Ok(())
    }

    fn exec(&mut self, s: &Stmt) -> Res<()> {
        match s {
            Stmt::Expr(e) => {
                self.eval(e)?;
            }
            Stmt::Print(args, redir) => {
                let mut line = Vec::new();
                if args.is_empty() {
                    line.extend_from_slice(&self.record);
                } else {
                    let ofs = self.special("OFS");
                    let ofmt = self.special("OFMT");
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            line.extend_from_slice(&ofs);
                        }
                        let v = self.eval(a)?;
                        line.extend(match v {
                            Val::Num(_) => v.str(&ofmt),
                            other => other.str(b""),
                        });
                    }
                }
                line.extend(self.special("ORS"));
                self.emit(redir.as_ref(), &line)?;
            }
            Stmt::Printf(args, redir) => {
                let Some((f, rest)) = args.split_first() else {
                    return Err(fmt_err("printf: no format"));
                };
                let fv = self.eval(f)?;
                let fmt = self.s(&fv);
                let mut vals = Vec::new();
                for a in rest {
                    vals.push(self.eval(a)?);
                }
                let text = self.sprintf(&fmt, &vals)?;
                self.emit(redir.as_ref(), &text)?;
            }
            Stmt::If(c, a, b) => {
                if self.eval(c)?.truthy() {
                    self.exec(a)?;
                } else if let Some(b) = b {
                    self.exec(b)?;
                }
            }
            Stmt::While(c, body) => {
                while self.eval(c)?.truthy() {
                    match self.exec(body) {
                        Err(Flow::Break) => break,
                        Err(Flow::Continue) | Ok(()) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Stmt::Do(body, c) => loop {
                match self.exec(body) {
                    Err(Flow::Break) => break,
                    Err(Flow::Continue) | Ok(()) => {}
                    Err(e) => return Err(e),
                }
                if !self.eval(c)?.truthy() {
                    break;
                }
            },
            Stmt::For(init, cond, step, body) => {
                if let Some(i) = init {
                    self.exec(i)?;
                }
                loop {
                    if let Some(c) = cond
                        && !self.eval(c)?.truthy()
                    {
                        break;
                    }
                    match self.exec(body) {
                        Err(Flow::Break) => break,
                        Err(Flow::Continue) | Ok(()) => {}
                        Err(e) => return Err(e),
                    }
                    if let Some(s) = step {
                        self.exec(s)?;
                    }
                }
            }
            Stmt::ForIn(var, arr, body) => {
                let a = self.array(arr)?;
                for k in self.arrays[a].keys() {
                    if !self.arrays[a].contains(&k) {
                        continue;
                    }
                    self.set(var, Val::StrNum(k))?;
                    match self.exec(body) {
                        Err(Flow::Break) => break,
                        Err(Flow::Continue) | Ok(()) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Stmt::Block(b) => self.exec_block(b)?,
            Stmt::Next => return Err(Flow::Next),
            Stmt::NextFile => return Err(Flow::NextFile),
            Stmt::Exit(e) => {
                if let Some(e) = e {
                    self.exit_code = self.eval(e)?.num() as i32;
                }
                return Err(Flow::Exit);
            }
            Stmt::Return(e) => {
                let v = match e {
                    Some(e) => self.eval(e)?,
                    None => Val::Uninit,
                };
                return Err(Flow::Return(v));
            }
            Stmt::Break => return Err(Flow::Break),
            Stmt::Continue => return Err(Flow::Continue),
            Stmt::Delete(n, idx) => {
                let a = self.array(n)?;
                match idx {
                    Some(idx) => {
                        let k = self.key(idx)?;
                        self.arrays[a].remove(&k);
                    }
                    None => self.arrays[a].clear(),
                }
            }
        }
        Ok(())
    }

    /// Evaluates an expression.
    pub fn eval(&mut self, e: &Expr) -> Res<Val> {
        if crate::limits::stack::exhausted() {
            return Err(fmt_err(
                "expressions and calls nest too deeply for the stack",
            ));
        }
        Ok(match e {
            Expr::Num(n) => Val::Num(*n),
            Expr::Str(s) => Val::Str(s.clone()),
            Expr::Re(r) => {
                let re = self.regex(r)?;
                Val::Num(re.is_match(&self.record) as i32 as f64)
            }
            Expr::Var(n) => self.get(n)?,
            Expr::Field(i) => {
                let n = self.eval(i)?.num();
                if n < 0.0 {
                    return Err(fmt_err(format!("attempt to access field {n}")));
                }
                self.field(n as usize)?
            }
            Expr::Index(n, idx) => {
                let k = self.key(idx)?;
                let a = self.array(n)?;
                match self.arrays[a].get(&k) {
                    Some(v) => v.clone(),
                    None => {
                        self.arrays[a].set(k, Val::Uninit);
                        Val::Uninit
                    }
                }
            }
            Expr::Assign(op, lv, rhs) => {
                let r = self.eval(rhs)?;
                let v = if *op == "=" {
                    r
                } else {
                    let cur = self.eval(lv)?.num();
                    Val::Num(arith(&op[..1], cur, r.num())?)
                };
                self.assign(lv, v.clone())?;
                v
            }
            Expr::Cond(c, a, b) => {
                if self.eval(c)?.truthy() {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Expr::And(items) => {
                let mut all = true;
                for x in items {
                    if !self.eval(x)?.truthy() {
                        all = false;
                        break;
                    }
                }
                Val::Num(all as i32 as f64)
            }
            Expr::Or(items) => {
                let mut any = false;
                for x in items {
                    if self.eval(x)?.truthy() {
                        any = true;
                        break;
                    }
                }
                Val::Num(any as i32 as f64)
            }
            Expr::Chain(first, rest) => {
                let mut acc = self.eval(first)?.num();
                for (op, x) in rest {
                    let y = self.eval(x)?.num();
                    acc = arith(op, acc, y)?;
                }
                Val::Num(acc)
            }
            Expr::Not(a) => Val::Num(!self.eval(a)?.truthy() as i32 as f64),
            Expr::Neg(a, neg) => {
                let v = self.eval(a)?.num();
                Val::Num(if *neg { -v } else { v })
            }
            Expr::Bin(op, a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                match *op {
                    "<" | "<=" | ">" | ">=" | "==" | "!=" => {
                        let o = compare(&x, &y, &self.convfmt());
                        let r = match *op {
                            "<" => o == Ordering::Less,
                            "<=" => o != Ordering::Greater,
                            ">" => o == Ordering::Greater,
                            ">=" => o != Ordering::Less,
                            "==" => o == Ordering::Equal,
                            _ => o != Ordering::Equal,
                        };
                        Val::Num(r as i32 as f64)
                    }
                    _ => Val::Num(arith(op, x.num(), y.num())?),
                }
            }
            Expr::Match(a, re, neg) => {
                let v = self.eval(a)?;
                let s = self.s(&v);
                let r = self.regex_of(re)?;
                Val::Num((r.is_match(&s) != *neg) as i32 as f64)
            }
            Expr::Concat(items) => {
                let mut s = Vec::new();
                for x in items {
                    let v = self.eval(x)?;
                    let part = self.s(&v);
                    if s.len() + part.len() > crate::limits::MAX_WORD {
                        return Err(fmt_err("string too large"));
                    }
                    s.extend(part);
                }
                Val::Str(s)
            }
            Expr::In(idx, arr) => {
                let k = self.key(idx)?;
                let a = self.array(arr)?;
                Val::Num(self.arrays[a].contains(&k) as i32 as f64)
            }
            Expr::Incr(pre, inc, lv) => {
                let cur = self.eval(lv)?.num();
                let new = if *inc { cur + 1.0 } else { cur - 1.0 };
                self.assign(lv, Val::Num(new))?;
                Val::Num(if *pre { new } else { cur })
            }
            Expr::Group(v) => {
                let k = self.key(v)?;
                Val::Str(k)
            }
            Expr::Call(name, args) => self.call(name, args)?,
            Expr::Builtin(name, args) => self.builtin(name, args)?,
            Expr::Getline { var, file, cmd } => {
                self.getline(var.as_deref(), file.as_deref(), cmd.as_deref())?
            }
        })
    }
}

/// Arithmetic operators.
pub fn arith(op: &str, x: f64, y: f64) -> Res<f64> {
    Ok(match op {
        "+" => x + y,
        "-" => x - y,
        "*" => x * y,
        "/" => {
            if y == 0.0 {
                return Err(fmt_err("division by zero"));
            }
            x / y
        }
        "%" => {
            if y == 0.0 {
                return Err(fmt_err("division by zero in %"));
            }
            x % y
        }
        "^" => x.powf(y),
        _ => return Err(fmt_err(format!("unknown operator {op}"))),
    })
}
