//! Shell arithmetic (`$((…))`, `((…))`, `let`, array indices): 64-bit
//! integers with bash's operators, parsed to a tree with a nesting limit
//! and evaluated lazily (`&&`, `||` and `?:` skip the side effects of the
//! branch not taken).

use crate::limits::{MAX_EXPR_NODES, MAX_PARSE_NEST};

/// Variable access for arithmetic.
pub trait ArithEnv {
    /// The text of `name` (`index` for an array element), if set.
    fn get_var(&mut self, name: &[u8], index: Option<i64>) -> Option<Vec<u8>>;
    /// Assigns `name` (or its element `index`).
    fn set_var(&mut self, name: &[u8], index: Option<i64>, v: i64) -> Result<(), String>;
}

#[derive(Debug, Clone)]
enum Node {
    Num(i64),
    Var(Vec<u8>, Option<Box<Node>>),
    Unary(u8, Box<Node>),
    Binary(&'static str, Box<Node>, Box<Node>),
    /// A left-associative chain `a op b op c …` (also `&&`, `||` and `,`),
    /// kept flat so that a long chain is not a deep tree.
    Chain(Box<Node>, Vec<(&'static str, Node)>),
    Cond(Box<Node>, Box<Node>, Box<Node>),
    Assign(&'static str, Box<Node>, Box<Node>),
    IncDec {
        pre: bool,
        inc: bool,
        target: Box<Node>,
    },
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    depth: usize,
    /// Operands and operators so far (at most [`MAX_EXPR_NODES`]).
    nodes: usize,
}

const BINOPS: [(&str, u8); 18] = [
    ("||", 1),
    ("&&", 2),
    ("|", 3),
    ("^", 4),
    ("&", 5),
    ("==", 6),
    ("!=", 6),
    ("<=", 7),
    (">=", 7),
    ("<", 7),
    (">", 7),
    ("<<", 8),
    (">>", 8),
    ("+", 9),
    ("-", 9),
    ("*", 10),
    ("/", 10),
    ("%", 10),
];

const ASSIGN_OPS: [&str; 11] = [
    "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=",
];

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn starts(&mut self, t: &str) -> bool {
        self.ws();
        self.s[self.i..].starts_with(t.as_bytes())
    }
    fn err(&self, msg: &str) -> String {
        let tok = short(&self.s[self.i.min(self.s.len())..]);
        format!("{}: {msg} (error token is \"{tok}\")", short(self.s))
    }
    /// Counts one operand or operator.
    fn node(&mut self) -> Result<(), String> {
        self.nodes += 1;
        if self.nodes > MAX_EXPR_NODES {
            return Err(self.err(&format!(
                "expression too long (more than {MAX_EXPR_NODES} operands and operators)"
            )));
        }
        Ok(())
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_PARSE_NEST || crate::limits::stack::exhausted() {
            return Err(self.err("expression nested too deeply"));
        }
        Ok(())
    }

    fn comma(&mut self) -> Result<Node, String> {
        let first = self.assign()?;
        let mut rest = Vec::new();
        while self.starts(",") {
            self.i += 1;
            self.node()?;
            rest.push((",", self.assign()?));
        }
        Ok(chain(first, rest))
    }

    fn assign(&mut self) -> Result<Node, String> {
        self.enter()?;
        let left = self.ternary()?;
        self.ws();
        if matches!(left, Node::Var(..)) {
            for op in ASSIGN_OPS.iter().rev() {
                let rest = &self.s[self.i..];
                if rest.starts_with(op.as_bytes()) && !(*op == "=" && rest.starts_with(b"==")) {
                    self.i += op.len();
                    let right = self.assign()?;
                    self.depth -= 1;
                    return Ok(Node::Assign(op, Box::new(left), Box::new(right)));
                }
            }
        }
        self.depth -= 1;
        Ok(left)
    }

    fn ternary(&mut self) -> Result<Node, String> {
        let c = self.binary(1)?;
        if self.starts("?") {
            self.i += 1;
            self.enter()?;
            let a = self.comma()?;
            if !self.starts(":") {
                return Err(self.err("`:' expected for conditional expression"));
            }
            self.i += 1;
            let b = self.ternary()?;
            self.depth -= 1;
            return Ok(Node::Cond(Box::new(c), Box::new(a), Box::new(b)));
        }
        Ok(c)
    }

    fn binop(&mut self, min: u8) -> Option<(&'static str, u8)> {
        self.ws();
        let rest = &self.s[self.i..];
        for &(op, prec) in &BINOPS {
            if prec < min || !rest.starts_with(op.as_bytes()) {
                continue;
            }
            let after = rest.get(op.len()).copied();
            // Not an assignment operator, `**`, or a longer operator.
            let longer = match op {
                "|" => after == Some(b'|') || after == Some(b'='),
                "&" => after == Some(b'&') || after == Some(b'='),
                "<" => after == Some(b'<') || after == Some(b'='),
                ">" => after == Some(b'>') || after == Some(b'='),
                "*" => after == Some(b'*') || after == Some(b'='),
                "<<" | ">>" | "+" | "-" | "/" | "%" | "^" => after == Some(b'='),
                _ => false,
            };
            if longer {
                continue;
            }
            return Some((op, prec));
        }
        None
    }

    fn binary(&mut self, min: u8) -> Result<Node, String> {
        let first = self.power()?;
        let mut rest = Vec::new();
        while let Some((op, prec)) = self.binop(min) {
            self.i += op.len();
            self.node()?;
            self.enter()?;
            let right = self.binary(prec + 1)?;
            self.depth -= 1;
            rest.push((op, right));
        }
        Ok(chain(first, rest))
    }

    fn power(&mut self) -> Result<Node, String> {
        let base = self.unary()?;
        if self.starts("**") {
            self.i += 2;
            self.enter()?;
            let exp = self.power()?;
            self.depth -= 1;
            return Ok(Node::Binary("**", Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    fn unary(&mut self) -> Result<Node, String> {
        self.ws();
        for (t, inc) in [("++", true), ("--", false)] {
            if self.starts(t) {
                self.i += 2;
                self.enter()?;
                let target = self.unary()?;
                self.depth -= 1;
                if !matches!(target, Node::Var(..)) {
                    return Err(self.err("assignment requires a variable"));
                }
                return Ok(Node::IncDec {
                    pre: true,
                    inc,
                    target: Box::new(target),
                });
            }
        }
        if let Some(&c) = self.s.get(self.i)
            && matches!(c, b'-' | b'+' | b'!' | b'~')
        {
            self.i += 1;
            self.enter()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Node::Unary(c, Box::new(inner)));
        }
        let p = self.primary()?;
        if matches!(p, Node::Var(..)) {
            for (t, inc) in [("++", true), ("--", false)] {
                if self.starts(t) {
                    self.i += 2;
                    return Ok(Node::IncDec {
                        pre: false,
                        inc,
                        target: Box::new(p),
                    });
                }
            }
        }
        Ok(p)
    }

    fn primary(&mut self) -> Result<Node, String> {
        self.node()?;
        self.ws();
        let Some(&c) = self.s.get(self.i) else {
            return Err(self.err("syntax error: operand expected"));
        };
        if c == b'(' {
            self.i += 1;
            self.enter()?;
            let e = self.comma()?;
            self.depth -= 1;
            if !self.starts(")") {
                return Err(self.err("missing `)'"));
            }
            self.i += 1;
            return Ok(e);
        }
        if c.is_ascii_digit() {
            let n = self.s[self.i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'#' | b'@' | b'_'))
                .count();
            let text = &self.s[self.i..self.i + n];
            let v = parse_number(text).ok_or_else(|| self.err("value too great for base"))?;
            self.i += n;
            return Ok(Node::Num(v));
        }
        if c == b'_' || c.is_ascii_alphabetic() {
            let n = self.s[self.i..]
                .iter()
                .take_while(|c| **c == b'_' || c.is_ascii_alphanumeric())
                .count();
            let name = self.s[self.i..self.i + n].to_vec();
            self.i += n;
            let mut index = None;
            if self.s.get(self.i) == Some(&b'[') {
                self.i += 1;
                self.enter()?;
                let e = self.comma()?;
                self.depth -= 1;
                if !self.starts("]") {
                    return Err(self.err("missing `]'"));
                }
                self.i += 1;
                index = Some(Box::new(e));
            }
            return Ok(Node::Var(name, index));
        }
        Err(self.err("syntax error: operand expected"))
    }
}

/// `first` alone, or the chain `first op x op y …`.
fn chain(first: Node, rest: Vec<(&'static str, Node)>) -> Node {
    if rest.is_empty() {
        first
    } else {
        Node::Chain(Box::new(first), rest)
    }
}

/// At most 60 bytes of `s` for a message.
fn short(s: &[u8]) -> String {
    let t = String::from_utf8_lossy(&s[..s.len().min(60)]).into_owned();
    if s.len() > 60 { format!("{t}…") } else { t }
}

/// Parses an integer constant: decimal, `0x…`, `0…` (octal), `base#digits`.
pub fn parse_number(t: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(t).ok()?;
    if let Some((base, digits)) = s.split_once('#') {
        let base: u32 = base.parse().ok()?;
        if !(2..=64).contains(&base) {
            return None;
        }
        let mut v: i64 = 0;
        for ch in digits.chars() {
            let d = match ch {
                '0'..='9' => ch as u32 - '0' as u32,
                'a'..='z' => ch as u32 - 'a' as u32 + 10,
                'A'..='Z' if base <= 36 => ch as u32 - 'A' as u32 + 10,
                'A'..='Z' => ch as u32 - 'A' as u32 + 36,
                '@' => 62,
                '_' => 63,
                _ => return None,
            };
            if d >= base {
                return None;
            }
            v = v.wrapping_mul(base as i64).wrapping_add(d as i64);
        }
        return Some(v);
    }
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().map(|v| v as i64);
    }
    if s.len() > 1 && s.starts_with('0') {
        return u64::from_str_radix(&s[1..], 8).ok().map(|v| v as i64);
    }
    s.parse::<u64>().ok().map(|v| v as i64)
}

struct Eval<'e> {
    env: &'e mut dyn ArithEnv,
    depth: usize,
}

impl Eval<'_> {
    fn index(&mut self, idx: &Option<Box<Node>>) -> Result<Option<i64>, String> {
        match idx {
            Some(e) => Ok(Some(self.eval(e)?)),
            None => Ok(None),
        }
    }

    fn var(&mut self, name: &[u8], idx: Option<i64>) -> Result<i64, String> {
        let text = self.env.get_var(name, idx).unwrap_or_default();
        let t = crate::bytes::trim_blanks(&text);
        if t.is_empty() {
            return Ok(0);
        }
        if let Some(v) = parse_number(t) {
            return Ok(v);
        }
        if self.depth >= 32 {
            return Err(format!(
                "{}: expression recursion level exceeded",
                String::from_utf8_lossy(name)
            ));
        }
        self.depth += 1;
        let v = eval_in(t, self);
        self.depth -= 1;
        v
    }

    fn eval(&mut self, n: &Node) -> Result<i64, String> {
        if crate::limits::stack::exhausted() {
            return Err("expression nested too deeply for the stack".into());
        }
        Ok(match n {
            Node::Num(v) => *v,
            Node::Var(name, idx) => {
                let i = self.index(idx)?;
                self.var(name, i)?
            }
            Node::Unary(op, e) => {
                let v = self.eval(e)?;
                match op {
                    b'-' => v.wrapping_neg(),
                    b'+' => v,
                    b'!' => (v == 0) as i64,
                    _ => !v,
                }
            }
            Node::Chain(first, rest) => {
                let mut acc = self.eval(first)?;
                for (op, e) in rest {
                    acc = match *op {
                        "&&" => (acc != 0 && self.eval(e)? != 0) as i64,
                        "||" => (acc != 0 || self.eval(e)? != 0) as i64,
                        "," => self.eval(e)?,
                        _ => binary(op, acc, self.eval(e)?)?,
                    };
                }
                acc
            }
            Node::Cond(c, a, b) => {
                if self.eval(c)? != 0 {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            Node::Binary(op, a, b) => {
                let x = self.eval(a)?;
                let y = self.eval(b)?;
                binary(op, x, y)?
            }
            Node::Assign(op, target, value) => {
                let Node::Var(name, idx) = target.as_ref() else {
                    return Err("assignment requires a variable".into());
                };
                let i = self.index(idx)?;
                let rhs = self.eval(value)?;
                let v = if *op == "=" {
                    rhs
                } else {
                    let cur = self.var(name, i)?;
                    binary(&op[..op.len() - 1], cur, rhs)?
                };
                self.env.set_var(name, i, v)?;
                v
            }
            Node::IncDec { pre, inc, target } => {
                let Node::Var(name, idx) = target.as_ref() else {
                    return Err("assignment requires a variable".into());
                };
                let i = self.index(idx)?;
                let cur = self.var(name, i)?;
                let new = if *inc {
                    cur.wrapping_add(1)
                } else {
                    cur.wrapping_sub(1)
                };
                self.env.set_var(name, i, new)?;
                if *pre { new } else { cur }
            }
        })
    }
}

fn binary(op: &str, x: i64, y: i64) -> Result<i64, String> {
    Ok(match op {
        "+" => x.wrapping_add(y),
        "-" => x.wrapping_sub(y),
        "*" => x.wrapping_mul(y),
        "/" | "%" => {
            if y == 0 {
                return Err("division by 0".into());
            }
            if op == "/" {
                x.wrapping_div(y)
            } else {
                x.wrapping_rem(y)
            }
        }
        "**" => {
            if y < 0 {
                return Err("exponent less than 0".into());
            }
            x.wrapping_pow(y.min(u32::MAX as i64) as u32)
        }
        "<<" => x.wrapping_shl(y as u32),
        ">>" => x.wrapping_shr(y as u32),
        "&" => x & y,
        "|" => x | y,
        "^" => x ^ y,
        "==" => (x == y) as i64,
        "!=" => (x != y) as i64,
        "<" => (x < y) as i64,
        ">" => (x > y) as i64,
        "<=" => (x <= y) as i64,
        ">=" => (x >= y) as i64,
        _ => return Err(format!("unknown operator {op}")),
    })
}

fn eval_in(text: &[u8], ev: &mut Eval<'_>) -> Result<i64, String> {
    let mut p = P {
        s: text,
        i: 0,
        depth: 0,
        nodes: 0,
    };
    p.ws();
    if p.i >= text.len() {
        return Ok(0);
    }
    let node = p.comma()?;
    p.ws();
    if p.i < text.len() {
        return Err(p.err("syntax error in expression"));
    }
    ev.eval(&node)
}

/// Evaluates the expression `text` (already expanded); empty text is 0.
pub fn eval(text: &[u8], env: &mut dyn ArithEnv) -> Result<i64, String> {
    let mut ev = Eval { env, depth: 0 };
    eval_in(text, &mut ev).map_err(|e| {
        if e.contains(": ") || e.contains("error token") {
            e
        } else {
            format!("{}: {e}", short(text).trim())
        }
    })
}
