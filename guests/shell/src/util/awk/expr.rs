//! awk's expressions, by precedence.

use super::ast::*;
use super::lex::Tok;
use super::parse::{BUILTINS, P, R};

/// `first` alone, or the flat chain `first op x op y …`.
fn chain(first: Expr, rest: Vec<(&'static str, Expr)>) -> Expr {
    if rest.is_empty() {
        first
    } else {
        Expr::Chain(Box::new(first), rest)
    }
}

impl P {
    pub(super) fn expr_list(&mut self) -> R<Vec<Expr>> {
        let mut v = vec![self.expr()?];
        while self.eat_op(",") {
            self.newlines();
            v.push(self.expr()?);
        }
        Ok(v)
    }

    /// Full expression, assignment included.
    pub(super) fn expr(&mut self) -> R<Expr> {
        self.enter()?;
        let r = self.ternary();
        self.leave();
        r
    }

    fn ternary(&mut self) -> R<Expr> {
        let c = self.or()?;
        if self.eat_op("?") {
            self.newlines();
            let a = self.expr()?;
            self.newlines();
            self.expect(":")?;
            self.newlines();
            let b = self.expr()?;
            return Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        for op in ["=", "+=", "-=", "*=", "/=", "%=", "^="] {
            if self.is_op(op) && matches!(c, Expr::Var(_) | Expr::Field(_) | Expr::Index(..)) {
                self.i += 1;
                self.newlines();
                let v = self.expr()?;
                return Ok(Expr::Assign(op, Box::new(c), Box::new(v)));
            }
        }
        Ok(c)
    }

    fn or(&mut self) -> R<Expr> {
        let mut items = vec![self.and()?];
        while self.eat_op("||") {
            self.newlines();
            items.push(self.and()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::Or(items)
        })
    }

    fn and(&mut self) -> R<Expr> {
        let mut items = vec![self.in_expr()?];
        while self.eat_op("&&") {
            self.newlines();
            items.push(self.in_expr()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::And(items)
        })
    }

    /// Runs `f` once per repetition of a rare left-associative operator
    /// (`(k) in a in b`, `a ~ b ~ c`, `c | getline | getline`): each
    /// repetition nests the tree one level deeper, so each counts as a
    /// nesting level.
    fn nest_chain(&mut self, mut f: impl FnMut(&mut Self) -> R<bool>) -> R<()> {
        let mut levels = 0;
        let r = loop {
            match f(self) {
                Ok(true) => {
                    levels += 1;
                    if let Err(e) = self.enter() {
                        break Err(e);
                    }
                }
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.depth -= levels;
        r
    }

    fn in_expr(&mut self) -> R<Expr> {
        let mut l = self.matching()?;
        self.nest_chain(|p| {
            if !(p.no_in == 0 && matches!(p.peek(), Tok::Name(n) if n == "in")) {
                return Ok(false);
            }
            p.i += 1;
            let Tok::Name(arr) = p.peek().clone() else {
                return Err("syntax error: `in' needs an array".into());
            };
            p.i += 1;
            let keys = match std::mem::replace(&mut l, Expr::Num(0.0)) {
                Expr::Group(v) => v,
                other => vec![other],
            };
            l = Expr::In(keys, arr);
            Ok(true)
        })?;
        Ok(l)
    }

    fn matching(&mut self) -> R<Expr> {
        let mut l = self.compare()?;
        self.nest_chain(|p| {
            let neg = if p.eat_op("~") {
                false
            } else if p.eat_op("!~") {
                true
            } else {
                return Ok(false);
            };
            let r = p.compare()?;
            let left = std::mem::replace(&mut l, Expr::Num(0.0));
            l = Expr::Match(Box::new(left), Box::new(r), neg);
            Ok(true)
        })?;
        Ok(l)
    }

    fn compare(&mut self) -> R<Expr> {
        let l = self.pipe_getline()?;
        for op in ["<=", ">=", "!=", "==", "<", ">"] {
            if op == ">" && self.no_gt > 0 {
                continue;
            }
            if self.is_op(op) {
                self.i += 1;
                let r = self.pipe_getline()?;
                return Ok(Expr::Bin(op, Box::new(l), Box::new(r)));
            }
        }
        Ok(l)
    }

    fn pipe_getline(&mut self) -> R<Expr> {
        let mut l = self.concat()?;
        self.nest_chain(|p| {
            if !(p.is_op("|") && matches!(p.peek2(), Tok::Kw("getline"))) {
                return Ok(false);
            }
            p.i += 2;
            let var = p.opt_lvalue()?;
            let cmd = std::mem::replace(&mut l, Expr::Num(0.0));
            l = Expr::Getline {
                var,
                file: None,
                cmd: Some(Box::new(cmd)),
            };
            Ok(true)
        })?;
        Ok(l)
    }

    fn starts_operand(&self) -> bool {
        match self.peek() {
            Tok::Num(_) | Tok::Str(_) | Tok::Re(_) | Tok::FuncName(_) => true,
            Tok::Name(n) => n != "in" && n != "print" && n != "printf",
            Tok::Op(o) => matches!(*o, "$" | "!" | "(" | "-" | "+" | "++" | "--"),
            Tok::Kw(k) => *k == "getline",
            _ => false,
        }
    }

    pub(super) fn concat(&mut self) -> R<Expr> {
        let mut items = vec![self.additive()?];
        while self.starts_operand() && !self.is_op("-") && !self.is_op("+") && !self.is_op("!") {
            items.push(self.additive()?);
        }
        Ok(if items.len() == 1 {
            items.remove(0)
        } else {
            Expr::Concat(items)
        })
    }

    fn additive(&mut self) -> R<Expr> {
        let first = self.mul()?;
        let mut rest = Vec::new();
        loop {
            let op = if self.is_op("+") {
                "+"
            } else if self.is_op("-") {
                "-"
            } else {
                return Ok(chain(first, rest));
            };
            self.i += 1;
            rest.push((op, self.mul()?));
        }
    }

    fn mul(&mut self) -> R<Expr> {
        let first = self.unary()?;
        let mut rest = Vec::new();
        loop {
            let op = match self.peek() {
                Tok::Op("*") => "*",
                Tok::Op("/") => "/",
                Tok::Op("%") => "%",
                _ => return Ok(chain(first, rest)),
            };
            self.i += 1;
            rest.push((op, self.unary()?));
        }
    }

    fn unary(&mut self) -> R<Expr> {
        if self.eat_op("!") {
            self.enter()?;
            let e = self.unary()?;
            self.leave();
            return Ok(Expr::Not(Box::new(e)));
        }
        if self.is_op("-") || self.is_op("+") {
            let neg = self.is_op("-");
            self.i += 1;
            self.enter()?;
            let e = self.unary()?;
            self.leave();
            return Ok(Expr::Neg(Box::new(e), neg));
        }
        self.power()
    }

    fn power(&mut self) -> R<Expr> {
        let base = self.postfix()?;
        if self.eat_op("^") {
            self.enter()?;
            let e = if self.is_op("-") || self.is_op("+") || self.is_op("!") {
                self.unary()?
            } else {
                self.power()?
            };
            self.leave();
            return Ok(Expr::Bin("^", Box::new(base), Box::new(e)));
        }
        Ok(base)
    }

    fn postfix(&mut self) -> R<Expr> {
        if self.is_op("++") || self.is_op("--") {
            let inc = self.is_op("++");
            self.i += 1;
            let lv = self.primary()?;
            return Ok(Expr::Incr(true, inc, Box::new(lv)));
        }
        let p = self.primary()?;
        if matches!(p, Expr::Var(_) | Expr::Field(_) | Expr::Index(..))
            && (self.is_op("++") || self.is_op("--"))
        {
            let inc = self.is_op("++");
            self.i += 1;
            return Ok(Expr::Incr(false, inc, Box::new(p)));
        }
        Ok(p)
    }

    fn opt_lvalue(&mut self) -> R<Option<Box<Expr>>> {
        match self.peek() {
            Tok::Name(n) if n != "in" => Ok(Some(Box::new(self.primary()?))),
            Tok::Op("$") => Ok(Some(Box::new(self.primary()?))),
            _ => Ok(None),
        }
    }

    fn primary(&mut self) -> R<Expr> {
        let t = self.peek().clone();
        self.i += 1;
        match t {
            Tok::Num(n) => Ok(Expr::Num(n)),
            Tok::Str(s) => Ok(Expr::Str(s)),
            Tok::Re(r) => Ok(Expr::Re(r)),
            Tok::Op("$") => {
                self.enter()?;
                let e = if self.is_op("++") || self.is_op("--") {
                    self.postfix()?
                } else {
                    self.primary()?
                };
                self.leave();
                Ok(Expr::Field(Box::new(e)))
            }
            Tok::Op("(") => {
                self.enter()?;
                let no_gt = std::mem::replace(&mut self.no_gt, 0);
                let no_in = std::mem::replace(&mut self.no_in, 0);
                let first = self.expr()?;
                let r = if self.eat_op(",") {
                    self.newlines();
                    let mut v = vec![first];
                    v.extend(self.expr_list()?);
                    self.expect(")")?;
                    Expr::Group(v)
                } else {
                    self.expect(")")?;
                    first
                };
                self.no_gt = no_gt;
                self.no_in = no_in;
                self.leave();
                Ok(r)
            }
            Tok::Kw("getline") => {
                let var = self.opt_lvalue()?;
                let file = if self.eat_op("<") {
                    Some(Box::new(self.primary()?))
                } else {
                    None
                };
                Ok(Expr::Getline {
                    var,
                    file,
                    cmd: None,
                })
            }
            Tok::FuncName(name) => {
                self.expect("(")?;
                let no_gt = std::mem::replace(&mut self.no_gt, 0);
                let args = if self.is_op(")") {
                    Vec::new()
                } else {
                    self.expr_list()?
                };
                self.no_gt = no_gt;
                self.expect(")")?;
                if BUILTINS.contains(&name.as_str()) {
                    Ok(Expr::Builtin(name, args))
                } else {
                    Ok(Expr::Call(name, args))
                }
            }
            Tok::Name(name) => {
                if name == "length" {
                    return Ok(Expr::Builtin(name, Vec::new()));
                }
                if self.eat_op("[") {
                    let idx = self.expr_list()?;
                    self.expect("]")?;
                    return Ok(Expr::Index(name, idx));
                }
                Ok(Expr::Var(name))
            }
            other => Err(format!("syntax error near {other:?}")),
        }
    }
}
