//! awk's grammar: programs and statements, with a nesting limit (the
//! syntax tree is in `ast`, expressions in `expr`).

use super::ast::*;
use super::lex::Tok;
use crate::limits::MAX_PARSE_NEST;

pub(super) const BUILTINS: [&str; 22] = [
    "length", "substr", "index", "split", "sub", "gsub", "match", "sprintf", "sin", "cos", "atan2",
    "exp", "log", "sqrt", "int", "rand", "srand", "tolower", "toupper", "system", "close",
    "fflush",
];

pub(super) struct P {
    pub(super) t: Vec<Tok>,
    pub(super) i: usize,
    pub(super) depth: usize,
    /// Inside print's argument list: `>` is a redirection.
    pub(super) no_gt: usize,
    /// Inside `for (…)` heads: `in` belongs to the loop.
    pub(super) no_in: usize,
}

pub(super) type R<T> = Result<T, String>;

impl P {
    pub(super) fn peek(&self) -> &Tok {
        self.t.get(self.i).unwrap_or(&Tok::Eof)
    }
    pub(super) fn peek2(&self) -> &Tok {
        self.t.get(self.i + 1).unwrap_or(&Tok::Eof)
    }
    pub(super) fn is_op(&self, o: &str) -> bool {
        matches!(self.peek(), Tok::Op(x) if *x == o)
    }
    pub(super) fn is_kw(&self, k: &str) -> bool {
        matches!(self.peek(), Tok::Kw(x) if *x == k)
    }
    pub(super) fn eat_op(&mut self, o: &str) -> bool {
        if self.is_op(o) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    pub(super) fn expect(&mut self, o: &str) -> R<()> {
        if self.eat_op(o) {
            Ok(())
        } else {
            Err(format!(
                "syntax error: expected `{o}' near {:?}",
                self.peek()
            ))
        }
    }
    pub(super) fn newlines(&mut self) {
        while matches!(self.peek(), Tok::Newline) {
            self.i += 1;
        }
    }
    pub(super) fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_PARSE_NEST || crate::limits::stack::exhausted() {
            return Err(format!(
                "program nested too deeply (the limit is {MAX_PARSE_NEST})"
            ));
        }
        Ok(())
    }
    pub(super) fn leave(&mut self) {
        self.depth -= 1;
    }

    fn program(&mut self) -> R<Program> {
        let mut prog = Program::default();
        loop {
            while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
                self.i += 1;
            }
            match self.peek().clone() {
                Tok::Eof => return Ok(prog),
                Tok::Kw("BEGIN") => {
                    self.i += 1;
                    self.newlines();
                    prog.begin.push(self.block()?);
                }
                Tok::Kw("END") => {
                    self.i += 1;
                    self.newlines();
                    prog.end.push(self.block()?);
                }
                Tok::Kw("function") => {
                    self.i += 1;
                    let name = match self.peek().clone() {
                        Tok::Name(n) | Tok::FuncName(n) => n,
                        t => return Err(format!("syntax error: bad function name {t:?}")),
                    };
                    self.i += 1;
                    self.expect("(")?;
                    let mut params = Vec::new();
                    while let Tok::Name(n) = self.peek().clone() {
                        params.push(n);
                        self.i += 1;
                        if !self.eat_op(",") {
                            break;
                        }
                        self.newlines();
                    }
                    self.expect(")")?;
                    self.newlines();
                    let body = self.block()?;
                    prog.funcs.insert(name, Func { params, body });
                }
                Tok::Op("{") => {
                    let b = self.block()?;
                    prog.rules.push((Pattern::All, Some(b)));
                }
                _ => {
                    let a = self.expr()?;
                    let pat = if self.eat_op(",") {
                        self.newlines();
                        Pattern::Range(a, self.expr()?)
                    } else {
                        Pattern::Expr(a)
                    };
                    let action = if self.is_op("{") {
                        Some(self.block()?)
                    } else {
                        None
                    };
                    prog.rules.push((pat, action));
                }
            }
        }
    }

    fn block(&mut self) -> R<Vec<Stmt>> {
        self.expect("{")?;
        self.enter()?;
        let mut v = Vec::new();
        loop {
            while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
                self.i += 1;
            }
            if self.eat_op("}") {
                break;
            }
            if matches!(self.peek(), Tok::Eof) {
                return Err("syntax error: unexpected end of program, missing `}'".into());
            }
            v.push(self.stmt()?);
        }
        self.leave();
        Ok(v)
    }

    fn end_simple(&mut self) -> R<()> {
        if self.eat_op(";") || matches!(self.peek(), Tok::Newline) {
            self.newlines();
            return Ok(());
        }
        if self.is_op("}") || matches!(self.peek(), Tok::Eof) {
            return Ok(());
        }
        Err(format!("syntax error near {:?}", self.peek()))
    }

    fn simple_or_block(&mut self) -> R<Stmt> {
        self.newlines();
        if self.eat_op(";") {
            return Ok(Stmt::Block(Vec::new()));
        }
        self.stmt()
    }

    fn stmt(&mut self) -> R<Stmt> {
        self.enter()?;
        let s = self.stmt_inner();
        self.leave();
        s
    }

    fn stmt_inner(&mut self) -> R<Stmt> {
        let t = self.peek().clone();
        match t {
            Tok::Op("{") => Ok(Stmt::Block(self.block()?)),
            Tok::Kw("if") => {
                self.i += 1;
                self.expect("(")?;
                let c = self.expr()?;
                self.expect(")")?;
                let then = self.simple_or_block()?;
                let save = self.i;
                while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
                    self.i += 1;
                }
                if self.is_kw("else") {
                    self.i += 1;
                    let e = self.simple_or_block()?;
                    return Ok(Stmt::If(c, Box::new(then), Some(Box::new(e))));
                }
                self.i = save;
                Ok(Stmt::If(c, Box::new(then), None))
            }
            Tok::Kw("while") => {
                self.i += 1;
                self.expect("(")?;
                let c = self.expr()?;
                self.expect(")")?;
                if self.eat_op(";") {
                    return Ok(Stmt::While(c, Box::new(Stmt::Block(Vec::new()))));
                }
                let body = self.simple_or_block()?;
                Ok(Stmt::While(c, Box::new(body)))
            }
            Tok::Kw("do") => {
                self.i += 1;
                let body = self.simple_or_block()?;
                while matches!(self.peek(), Tok::Newline) || self.is_op(";") {
                    self.i += 1;
                }
                if !self.is_kw("while") {
                    return Err("syntax error: `do' without `while'".into());
                }
                self.i += 1;
                self.expect("(")?;
                let c = self.expr()?;
                self.expect(")")?;
                self.end_simple()?;
                Ok(Stmt::Do(Box::new(body), c))
            }
            Tok::Kw("for") => {
                self.i += 1;
                self.expect("(")?;
                if let Tok::Name(k) = self.peek().clone()
                    && matches!(self.peek2(), Tok::Name(n) if n == "in")
                    && let Tok::Name(arr) = self.t.get(self.i + 2).cloned().unwrap_or(Tok::Eof)
                    && matches!(self.t.get(self.i + 3), Some(Tok::Op(")")))
                {
                    self.i += 4;
                    let body = self.simple_or_block()?;
                    return Ok(Stmt::ForIn(k, arr, Box::new(body)));
                }
                self.no_in += 1;
                let init = if self.is_op(";") {
                    None
                } else {
                    Some(Box::new(self.simple_stmt()?))
                };
                self.no_in -= 1;
                self.expect(";")?;
                self.newlines();
                let cond = if self.is_op(";") {
                    None
                } else {
                    Some(self.expr()?)
                };
                self.expect(";")?;
                self.newlines();
                let step = if self.is_op(")") {
                    None
                } else {
                    Some(Box::new(self.simple_stmt()?))
                };
                self.expect(")")?;
                if self.eat_op(";") {
                    return Ok(Stmt::For(
                        init,
                        cond,
                        step,
                        Box::new(Stmt::Block(Vec::new())),
                    ));
                }
                let body = self.simple_or_block()?;
                Ok(Stmt::For(init, cond, step, Box::new(body)))
            }
            _ => {
                let s = self.simple_stmt()?;
                self.end_simple()?;
                Ok(s)
            }
        }
    }

    fn redirect(&mut self) -> R<Option<Redirect>> {
        let kind = if self.eat_op(">") {
            0
        } else if self.eat_op(">>") {
            1
        } else if self.eat_op("|") {
            2
        } else {
            return Ok(None);
        };
        let target = self.concat()?;
        Ok(Some(match kind {
            0 => Redirect::File(target),
            1 => Redirect::Append(target),
            _ => Redirect::Pipe(target),
        }))
    }

    fn simple_stmt(&mut self) -> R<Stmt> {
        let t = self.peek().clone();
        match t {
            Tok::Kw("next") => {
                self.i += 1;
                Ok(Stmt::Next)
            }
            Tok::Kw("nextfile") => {
                self.i += 1;
                Ok(Stmt::NextFile)
            }
            Tok::Kw("break") => {
                self.i += 1;
                Ok(Stmt::Break)
            }
            Tok::Kw("continue") => {
                self.i += 1;
                Ok(Stmt::Continue)
            }
            Tok::Kw("exit") | Tok::Kw("return") => {
                self.i += 1;
                let e = if matches!(self.peek(), Tok::Newline | Tok::Eof | Tok::Op(";" | "}")) {
                    None
                } else {
                    Some(self.expr()?)
                };
                Ok(if t == Tok::Kw("exit") {
                    Stmt::Exit(e)
                } else {
                    Stmt::Return(e)
                })
            }
            Tok::Kw("delete") => {
                self.i += 1;
                let Tok::Name(n) = self.peek().clone() else {
                    return Err("syntax error: delete needs an array".into());
                };
                self.i += 1;
                if self.eat_op("[") {
                    let idx = self.expr_list()?;
                    self.expect("]")?;
                    return Ok(Stmt::Delete(n, Some(idx)));
                }
                Ok(Stmt::Delete(n, None))
            }
            Tok::Name(n) | Tok::FuncName(n) if n == "print" || n == "printf" => {
                self.i += 1;
                self.no_gt += 1;
                let mut args = Vec::new();
                let paren_list = self.is_op("(") && self.paren_list_ahead();
                if paren_list {
                    self.i += 1;
                    self.no_gt -= 1;
                    args = self.expr_list()?;
                    self.no_gt += 1;
                    self.expect(")")?;
                } else if !matches!(
                    self.peek(),
                    Tok::Newline | Tok::Eof | Tok::Op(";" | "}" | ">" | ">>" | "|")
                ) {
                    args = self.expr_list()?;
                }
                self.no_gt -= 1;
                let redir = self.redirect()?;
                Ok(if n == "print" {
                    Stmt::Print(args, redir)
                } else {
                    Stmt::Printf(args, redir)
                })
            }
            _ => Ok(Stmt::Expr(self.expr()?)),
        }
    }

    /// Whether `(` starts a parenthesised print list (ends at its `)`
    /// followed by a statement end or redirection).
    fn paren_list_ahead(&self) -> bool {
        let mut depth = 0;
        let mut j = self.i;
        while let Some(t) = self.t.get(j) {
            match t {
                Tok::Op("(") => depth += 1,
                Tok::Op(")") => {
                    depth -= 1;
                    if depth == 0 {
                        return matches!(
                            self.t.get(j + 1),
                            Some(Tok::Newline | Tok::Eof | Tok::Op(";" | "}" | ">" | ">>" | "|"))
                        );
                    }
                }
                Tok::Newline | Tok::Eof => return false,
                _ => {}
            }
            j += 1;
        }
        false
    }
}

/// Parses a program's tokens.
pub fn parse(tokens: Vec<Tok>) -> Result<Program, String> {
    let mut p = P {
        t: tokens,
        i: 0,
        depth: 0,
        no_gt: 0,
        no_in: 0,
    };
    p.program()
}
