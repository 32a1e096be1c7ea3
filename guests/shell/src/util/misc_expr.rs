//! The expression grammar of `expr`.

use crate::bytes::parse_int;

/// A recursive-descent parser over `expr`'s arguments.
pub struct ExprParser<'a> {
    /// The arguments.
    pub args: &'a [Vec<u8>],
    /// The position.
    pub i: usize,
    /// Parenthesis depth.
    pub depth: usize,
}

fn truthy(v: &[u8]) -> bool {
    !(v.is_empty() || v == b"0")
}

impl ExprParser<'_> {
    fn peek(&self) -> Option<&[u8]> {
        self.args.get(self.i).map(|a| a.as_slice())
    }

    /// `a | b`.
    pub fn or(&mut self) -> Result<Vec<u8>, String> {
        let mut l = self.and()?;
        while self.peek() == Some(b"|") {
            self.i += 1;
            let r = self.and()?;
            l = if truthy(&l) {
                l
            } else if truthy(&r) {
                r
            } else {
                b"0".to_vec()
            };
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Vec<u8>, String> {
        let mut l = self.cmp()?;
        while self.peek() == Some(b"&") {
            self.i += 1;
            let r = self.cmp()?;
            l = if truthy(&l) && truthy(&r) {
                l
            } else {
                b"0".to_vec()
            };
        }
        Ok(l)
    }

    fn cmp(&mut self) -> Result<Vec<u8>, String> {
        let mut l = self.add()?;
        while let Some(op) = self.peek().map(|o| o.to_vec()) {
            if !matches!(
                op.as_slice(),
                b"<" | b"<=" | b"=" | b"==" | b"!=" | b">=" | b">"
            ) {
                break;
            }
            self.i += 1;
            let r = self.add()?;
            let ord = match (parse_int(&l), parse_int(&r)) {
                (Some(a), Some(b)) => a.cmp(&b),
                _ => l.cmp(&r),
            };
            let v = match op.as_slice() {
                b"<" => ord.is_lt(),
                b"<=" => ord.is_le(),
                b"=" | b"==" => ord.is_eq(),
                b"!=" => ord.is_ne(),
                b">=" => ord.is_ge(),
                _ => ord.is_gt(),
            };
            l = if v { b"1".to_vec() } else { b"0".to_vec() };
        }
        Ok(l)
    }

    fn int(v: &[u8]) -> Result<i64, String> {
        parse_int(v).ok_or_else(|| "non-integer argument".to_string())
    }

    fn add(&mut self) -> Result<Vec<u8>, String> {
        let mut l = self.mul()?;
        while let Some(op) = self.peek().map(|o| o.to_vec()) {
            if op != b"+" && op != b"-" {
                break;
            }
            self.i += 1;
            let r = self.mul()?;
            let (a, b) = (Self::int(&l)?, Self::int(&r)?);
            let v = if op == b"+" {
                a.wrapping_add(b)
            } else {
                a.wrapping_sub(b)
            };
            l = v.to_string().into_bytes();
        }
        Ok(l)
    }

    fn mul(&mut self) -> Result<Vec<u8>, String> {
        let mut l = self.colon()?;
        while let Some(op) = self.peek().map(|o| o.to_vec()) {
            if !matches!(op.as_slice(), b"*" | b"/" | b"%") {
                break;
            }
            self.i += 1;
            let r = self.colon()?;
            let (a, b) = (Self::int(&l)?, Self::int(&r)?);
            if b == 0 && op != b"*" {
                return Err("division by zero".into());
            }
            let v = match op.as_slice() {
                b"*" => a.wrapping_mul(b),
                b"/" => a.wrapping_div(b),
                _ => a.wrapping_rem(b),
            };
            l = v.to_string().into_bytes();
        }
        Ok(l)
    }

    fn matches(s: &[u8], pat: &[u8]) -> Result<Vec<u8>, String> {
        let re = crate::util::re::compile(&[b"^", pat].concat(), false, false)?;
        Ok(match re.captures(s) {
            Some(c) => match c.get(1) {
                Some(g) => g.as_bytes().to_vec(),
                None => c.get(0).map_or(0, |m| m.len()).to_string().into_bytes(),
            },
            None => {
                if re.captures_len() > 1 {
                    Vec::new()
                } else {
                    b"0".to_vec()
                }
            }
        })
    }

    fn colon(&mut self) -> Result<Vec<u8>, String> {
        let mut l = self.primary()?;
        while self.peek() == Some(b":") {
            self.i += 1;
            let r = self.primary()?;
            l = Self::matches(&l, &r)?;
        }
        Ok(l)
    }

    fn next(&mut self) -> Result<Vec<u8>, String> {
        let v = self
            .args
            .get(self.i)
            .cloned()
            .ok_or("syntax error: missing argument")?;
        self.i += 1;
        Ok(v)
    }

    fn primary(&mut self) -> Result<Vec<u8>, String> {
        let a = self.next()?;
        match a.as_slice() {
            b"(" => {
                self.depth += 1;
                if self.depth > crate::limits::MAX_PARSE_NEST || crate::limits::stack::exhausted() {
                    return Err("expression nested too deeply".into());
                }
                let v = self.or()?;
                self.depth -= 1;
                if self.next()? != b")" {
                    return Err("syntax error: expecting ')'".into());
                }
                Ok(v)
            }
            b"length" => Ok(self.next()?.len().to_string().into_bytes()),
            b"match" => {
                let s = self.next()?;
                let p = self.next()?;
                Self::matches(&s, &p)
            }
            b"substr" => {
                let s = self.next()?;
                let pos = Self::int(&self.next()?)?;
                let len = Self::int(&self.next()?)?;
                if pos < 1 || len < 1 {
                    return Ok(Vec::new());
                }
                let start = (pos as usize - 1).min(s.len());
                let end = start.saturating_add(len as usize).min(s.len());
                Ok(s[start..end].to_vec())
            }
            b"index" => {
                let s = self.next()?;
                let chars = self.next()?;
                let i = s
                    .iter()
                    .position(|c| chars.contains(c))
                    .map_or(0, |i| i + 1);
                Ok(i.to_string().into_bytes())
            }
            b"+" => self.next(),
            _ => Ok(a),
        }
    }
}
