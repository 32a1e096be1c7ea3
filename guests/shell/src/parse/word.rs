//! Words: quoting, `$…` expansions, backquotes, assignments and the text of
//! arithmetic. Each part keeps whether it was quoted.

use super::ast::*;
use super::{PResult, Parser, is_meta};
use std::rc::Rc;

/// What ends a run of parts.
#[derive(Clone, Copy)]
pub(super) enum Stop {
    /// An unquoted word: a metacharacter.
    Word,
    /// Inside `${…}`: `}` at brace depth 0, or one of the extra bytes.
    Param {
        /// Bytes that also end the word.
        extra: &'static [u8],
        /// Inside double quotes.
        in_dq: bool,
    },
    /// `=~`'s right side: a blank, or `&&`/`||` … at parenthesis depth 0.
    Regex,
}

/// Accumulates literal bytes and parts.
pub(super) struct Acc {
    parts: Vec<Part>,
    lit: Vec<u8>,
    quoted_lit: bool,
}

impl Acc {
    pub(super) fn new(quoted_lit: bool) -> Self {
        Acc {
            parts: Vec::new(),
            lit: Vec::new(),
            quoted_lit,
        }
    }
    fn flush(&mut self) {
        if !self.lit.is_empty() {
            let b = std::mem::take(&mut self.lit);
            self.parts.push(if self.quoted_lit {
                Part::Quoted(b)
            } else {
                Part::Lit(b)
            });
        }
    }
    fn push(&mut self, p: Part) {
        self.flush();
        self.parts.push(p);
    }
    pub(super) fn done(mut self) -> Vec<Part> {
        self.flush();
        self.parts
    }
}

impl Parser<'_> {
    /// An unquoted word, up to a metacharacter.
    pub(crate) fn word(&mut self) -> PResult<Word> {
        let mut acc = Acc::new(false);
        if self.starts(b"<(") || self.starts(b">(") {
            let output = self.peek() == Some(b'>');
            self.pos += 2;
            self.enter()?;
            let list = self.compound_list(&[b")"])?;
            self.linebreaks()?;
            if self.peek() != Some(b')') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.leave();
            acc.push(Part::ProcSubst(Rc::new(list), output));
        }
        self.tilde(&mut acc);
        self.parts(&mut acc, Stop::Word)?;
        Ok(acc.done())
    }

    /// The right side of `=~` in `[[ ]]`: parentheses and `|` belong to it.
    pub(crate) fn regex_word(&mut self) -> PResult<Word> {
        let mut acc = Acc::new(false);
        self.parts(&mut acc, Stop::Regex)?;
        Ok(acc.done())
    }

    /// A leading `~name` as a tilde part.
    fn tilde(&mut self, acc: &mut Acc) {
        if self.peek() != Some(b'~') {
            return;
        }
        let rest = &self.src[self.pos + 1..];
        let n = rest
            .iter()
            .take_while(|&&c| c != b'/' && !is_meta(c) && c != b':')
            .count();
        let name = &rest[..n];
        if name
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'+'))
        {
            acc.push(Part::Tilde(name.to_vec()));
            self.pos += 1 + n;
        }
    }

    fn stops(&self, stop: Stop, c: u8, depth: usize) -> bool {
        match stop {
            Stop::Word => is_meta(c),
            Stop::Param { extra, .. } => (c == b'}' && depth == 0) || extra.contains(&c),
            Stop::Regex => {
                (matches!(c, b' ' | b'\t' | b'\n') && depth == 0)
                    || (depth == 0 && c == b')' && self.peek_at(1) != Some(b')'))
                    || self.starts(b"&&")
                    || self.starts(b"||")
                    || self.starts(b"]]")
            }
        }
    }

    pub(super) fn parts(&mut self, acc: &mut Acc, stop: Stop) -> PResult<()> {
        let mut depth = 0usize;
        let in_dq = matches!(stop, Stop::Param { in_dq: true, .. });
        while let Some(c) = self.peek() {
            if self.stops(stop, c, depth) {
                break;
            }
            match c {
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    None => {
                        acc.lit.push(b'\\');
                        self.pos += 1;
                    }
                    Some(n) => {
                        acc.push(Part::Quoted(vec![n]));
                        self.pos += 2;
                    }
                },
                b'\'' if !in_dq => {
                    let q = self.single_quoted()?;
                    acc.push(Part::Quoted(q));
                }
                b'"' => {
                    self.pos += 1;
                    let d = self.double_quoted()?;
                    acc.push(Part::Double(d));
                }
                b'$' => {
                    let p = self.dollar(false)?;
                    acc.push(p);
                }
                b'`' => {
                    let p = self.backquote(false)?;
                    acc.push(p);
                }
                _ => {
                    match (stop, c) {
                        (Stop::Param { .. }, b'{') | (Stop::Regex, b'(') => depth += 1,
                        (Stop::Param { .. }, b'}') | (Stop::Regex, b')') => {
                            depth = depth.saturating_sub(1)
                        }
                        _ => {}
                    }
                    acc.lit.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(())
    }

    /// `'…'`, the position at the opening quote.
    fn single_quoted(&mut self) -> PResult<Vec<u8>> {
        let start = self.pos + 1;
        match self.src[start..].iter().position(|&c| c == b'\'') {
            Some(n) => {
                self.pos = start + n + 1;
                Ok(self.src[start..start + n].to_vec())
            }
            None => {
                self.pos = self.src.len();
                Err(self.err("unexpected EOF while looking for matching `''"))
            }
        }
    }

    /// The inside of `"…"`, the position after the opening quote.
    pub(crate) fn double_quoted(&mut self) -> PResult<Vec<Part>> {
        self.enter()?;
        let mut acc = Acc::new(true);
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unexpected EOF while looking for matching `\"'"));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(n @ (b'$' | b'`' | b'"' | b'\\')) => {
                        acc.lit.push(n);
                        self.pos += 2;
                    }
                    _ => {
                        acc.lit.push(b'\\');
                        self.pos += 1;
                    }
                },
                b'$' => {
                    let p = self.dollar(true)?;
                    acc.push(p);
                }
                b'`' => {
                    let p = self.backquote(true)?;
                    acc.push(p);
                }
                _ => {
                    acc.lit.push(c);
                    self.pos += 1;
                }
            }
        }
        self.leave();
        Ok(acc.done())
    }

    /// Everything that starts with `$`, the position at the `$`.
    pub(crate) fn dollar(&mut self, in_dq: bool) -> PResult<Part> {
        let next = self.peek_at(1);
        match next {
            Some(b'(') => {
                if self.peek_at(2) == Some(b'(') && self.arith_closes(self.pos + 3) {
                    self.pos += 3;
                    Ok(Part::Arith(self.arith_body()?))
                } else {
                    self.pos += 2;
                    // compound_list counts the nesting level.
                    let list = self.compound_list(&[b")"])?;
                    self.linebreaks()?;
                    if self.peek() != Some(b')') {
                        return Err(if self.eof() {
                            self.err("unexpected EOF while looking for matching `)'")
                        } else {
                            self.unexpected()
                        });
                    }
                    self.pos += 1;
                    Ok(Part::Command(Rc::new(list)))
                }
            }
            Some(b'{') => {
                self.pos += 2;
                self.braced_param(in_dq)
            }
            Some(b'\'') if !in_dq => {
                self.pos += 2;
                Ok(Part::Quoted(self.ansi_c()?))
            }
            Some(b'"') if !in_dq => {
                self.pos += 2;
                Ok(Part::Double(self.double_quoted()?))
            }
            Some(c) if c == b'_' || c.is_ascii_alphabetic() => {
                self.pos += 1;
                let n = self.src[self.pos..]
                    .iter()
                    .take_while(|&&c| c == b'_' || c.is_ascii_alphanumeric())
                    .count();
                let name = self.src[self.pos..self.pos + n].to_vec();
                self.pos += n;
                Ok(simple_param(name))
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(&c) => {
                self.pos += 2;
                Ok(simple_param(vec![c]))
            }
            _ => {
                self.pos += 1;
                Ok(if in_dq {
                    Part::Quoted(b"$".to_vec())
                } else {
                    Part::Lit(b"$".to_vec())
                })
            }
        }
    }

    /// Whether the `((` whose inside starts at `from` closes with `))`.
    pub(crate) fn arith_closes(&self, from: usize) -> bool {
        let mut depth = 0usize;
        let mut i = from;
        while i < self.src.len() {
            match self.src[i] {
                b'(' => depth += 1,
                b')' if depth == 0 => return self.src.get(i + 1) == Some(&b')'),
                b')' => depth -= 1,
                b'\\' => i += 1,
                _ => {}
            }
            i += 1;
        }
        false
    }

    /// The inside of `((…))` up to and including the closing `))`.
    pub(crate) fn arith_body(&mut self) -> PResult<Word> {
        self.enter()?;
        let mut acc = Acc::new(false);
        let mut depth = 0usize;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unexpected EOF while looking for matching `))'"));
            };
            match c {
                b')' if depth == 0 => {
                    if self.peek_at(1) != Some(b')') {
                        return Err(self.unexpected());
                    }
                    self.pos += 2;
                    break;
                }
                b'$' => {
                    let p = self.dollar(false)?;
                    acc.push(p);
                }
                b'`' => {
                    let p = self.backquote(false)?;
                    acc.push(p);
                }
                b'"' => {
                    self.pos += 1;
                    let d = self.double_quoted()?;
                    acc.push(Part::Double(d));
                }
                b'\\' if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                _ => {
                    if c == b'(' {
                        depth += 1;
                    } else if c == b')' {
                        depth -= 1;
                    }
                    acc.lit.push(c);
                    self.pos += 1;
                }
            }
        }
        self.leave();
        Ok(acc.done())
    }

    /// `$'…'`, the position after the opening quote.
    fn ansi_c(&mut self) -> PResult<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unexpected EOF while looking for matching `''"));
            };
            self.pos += 1;
            match c {
                b'\'' => return Ok(out),
                b'\\' => {
                    let (bytes, used) = crate::bytes::backslash_escape(&self.src[self.pos..], true);
                    out.extend_from_slice(&bytes);
                    self.pos += used;
                }
                _ => out.push(c),
            }
        }
    }

    /// `` `…` ``, the position at the opening backquote.
    fn backquote(&mut self, in_dq: bool) -> PResult<Part> {
        self.pos += 1;
        let mut text = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err("unexpected EOF while looking for matching ``'"));
            };
            self.pos += 1;
            match c {
                b'`' => break,
                b'\\' => match self.peek() {
                    Some(n @ (b'$' | b'`' | b'\\')) => {
                        text.push(n);
                        self.pos += 1;
                    }
                    Some(b'"') if in_dq => {
                        text.push(b'"');
                        self.pos += 1;
                    }
                    _ => text.push(b'\\'),
                },
                _ => text.push(c),
            }
        }
        self.enter()?;
        let mut sub = Parser::new(&text, self.depth);
        let mut list = Vec::new();
        while let Some(l) = sub.next_command()? {
            list.extend(l);
        }
        self.leave();
        Ok(Part::Command(Rc::new(list)))
    }

    /// `NAME=…`, `NAME+=…`, `NAME[i]=…` or `NAME=(…)` at the position.
    pub(crate) fn assignment(&mut self) -> PResult<Option<Assign>> {
        let rest = &self.src[self.pos..];
        let n = rest
            .iter()
            .take_while(|&&c| c == b'_' || c.is_ascii_alphanumeric())
            .count();
        if n == 0 || rest[0].is_ascii_digit() {
            return Ok(None);
        }
        let name = rest[..n].to_vec();
        let start = self.pos;
        self.pos += n;
        let mut index = None;
        if self.peek() == Some(b'[') {
            self.pos += 1;
            let w = self.param_word(b"]", false)?;
            if self.peek() != Some(b']') {
                self.pos = start;
                return Ok(None);
            }
            self.pos += 1;
            index = Some(w);
        }
        let append = self.starts(b"+=");
        if append {
            self.pos += 2;
        } else if self.peek() == Some(b'=') {
            self.pos += 1;
        } else {
            self.pos = start;
            return Ok(None);
        }
        let value = if self.peek() == Some(b'(') && index.is_none() {
            self.pos += 1;
            let mut words = Vec::new();
            loop {
                self.linebreaks()?;
                match self.peek() {
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    None => return Err(self.err("unexpected EOF while looking for matching `)'")),
                    Some(c) if is_meta(c) => return Err(self.unexpected()),
                    _ => words.push(self.word()?),
                }
            }
            AssignValue::Array(words)
        } else {
            match self.peek() {
                None => AssignValue::Scalar(Vec::new()),
                Some(c) if is_meta(c) => AssignValue::Scalar(Vec::new()),
                _ => AssignValue::Scalar(self.word()?),
            }
        };
        Ok(Some(Assign {
            name,
            index,
            append,
            value,
        }))
    }

    /// A here-document body (unquoted delimiter): `$`, backquotes and
    /// `\$ \` \\ \newline` are special, everything else is literal.
    pub(crate) fn heredoc_parts(&mut self) -> PResult<Word> {
        let mut acc = Acc::new(true);
        while let Some(c) = self.peek() {
            match c {
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(n @ (b'$' | b'`' | b'\\')) => {
                        acc.lit.push(n);
                        self.pos += 2;
                    }
                    _ => {
                        acc.lit.push(b'\\');
                        self.pos += 1;
                    }
                },
                b'$' => {
                    let p = self.dollar(true)?;
                    acc.push(p);
                }
                b'`' => {
                    let p = self.backquote(true)?;
                    acc.push(p);
                }
                _ => {
                    acc.lit.push(c);
                    self.pos += 1;
                }
            }
        }
        Ok(acc.done())
    }
}

fn simple_param(name: Vec<u8>) -> Part {
    Part::Param(Box::new(Param {
        name,
        index: None,
        length: false,
        indirect: false,
        op: ParamOp::None,
    }))
}
