//! `${…}`: names, indices and every operator.

use super::ast::*;
use super::word::{Acc, Stop};
use super::{PResult, Parser};

impl Parser<'_> {
    /// `${…}`, the position after `${`.
    pub(super) fn braced_param(&mut self, in_dq: bool) -> PResult<Part> {
        self.enter()?;
        let bad = |p: &Self| p.err("bad substitution");
        let mut length = false;
        let mut indirect = false;
        if self.peek() == Some(b'#') && !matches!(self.peek_at(1), Some(b'}') | None) {
            // `${#}` is `$#`; `${#-}`… is rare enough to read as a length.
            length = true;
            self.pos += 1;
        } else if self.peek() == Some(b'!') && !matches!(self.peek_at(1), Some(b'}') | None) {
            indirect = true;
            self.pos += 1;
        }
        let name: Vec<u8> = match self.peek() {
            Some(c) if c == b'_' || c.is_ascii_alphabetic() => {
                let n = self.src[self.pos..]
                    .iter()
                    .take_while(|&&c| c == b'_' || c.is_ascii_alphanumeric())
                    .count();
                self.src[self.pos..self.pos + n].to_vec()
            }
            Some(c) if c.is_ascii_digit() => {
                let n = self.src[self.pos..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .count();
                self.src[self.pos..self.pos + n].to_vec()
            }
            Some(c) if b"@*#?-$!".contains(&c) => vec![c],
            _ => return Err(bad(self)),
        };
        self.pos += name.len();
        let mut index = None;
        if self.peek() == Some(b'[') {
            self.pos += 1;
            let mut acc = Acc::new(false);
            self.parts(
                &mut acc,
                Stop::Param {
                    extra: b"]",
                    in_dq: false,
                },
            )?;
            if self.peek() != Some(b']') {
                return Err(bad(self));
            }
            self.pos += 1;
            index = Some(acc.done());
        }
        let op = self.param_op(in_dq)?;
        if self.peek() != Some(b'}') {
            return Err(if self.eof() {
                self.err("unexpected EOF while looking for matching `}'")
            } else {
                bad(self)
            });
        }
        self.pos += 1;
        self.leave();
        Ok(Part::Param(Box::new(Param {
            name,
            index,
            length,
            indirect,
            op,
        })))
    }

    pub(super) fn param_word(&mut self, extra: &'static [u8], in_dq: bool) -> PResult<Word> {
        let mut acc = Acc::new(false);
        self.parts(&mut acc, Stop::Param { extra, in_dq })?;
        Ok(acc.done())
    }

    fn param_op(&mut self, in_dq: bool) -> PResult<ParamOp> {
        let Some(c) = self.peek() else {
            return Ok(ParamOp::None);
        };
        let op = match c {
            b'}' => return Ok(ParamOp::None),
            b':' if matches!(self.peek_at(1), Some(b'-' | b'=' | b'+' | b'?')) => {
                let kind = self.peek_at(1).unwrap_or(b'-');
                self.pos += 2;
                ParamOp::Default {
                    kind,
                    colon: true,
                    word: self.param_word(b"", in_dq)?,
                }
            }
            b':' => {
                self.pos += 1;
                let offset = self.param_word(b":", in_dq)?;
                let length = if self.peek() == Some(b':') {
                    self.pos += 1;
                    Some(self.param_word(b"", in_dq)?)
                } else {
                    None
                };
                ParamOp::Slice { offset, length }
            }
            b'-' | b'=' | b'+' | b'?' => {
                self.pos += 1;
                ParamOp::Default {
                    kind: c,
                    colon: false,
                    word: self.param_word(b"", in_dq)?,
                }
            }
            b'#' | b'%' => {
                self.pos += 1;
                let longest = self.peek() == Some(c);
                if longest {
                    self.pos += 1;
                }
                ParamOp::Trim {
                    suffix: c == b'%',
                    longest,
                    pattern: self.param_word(b"", in_dq)?,
                }
            }
            b'/' => {
                self.pos += 1;
                let mut all = false;
                let mut anchor = 0;
                match self.peek() {
                    Some(b'/') => {
                        all = true;
                        self.pos += 1;
                    }
                    Some(a @ (b'#' | b'%')) => {
                        anchor = a;
                        self.pos += 1;
                    }
                    _ => {}
                }
                let pattern = self.param_word(b"/", in_dq)?;
                let with = if self.peek() == Some(b'/') {
                    self.pos += 1;
                    self.param_word(b"", in_dq)?
                } else {
                    Vec::new()
                };
                ParamOp::Replace {
                    all,
                    anchor,
                    pattern,
                    with,
                }
            }
            b'^' | b',' => {
                self.pos += 1;
                let all = self.peek() == Some(c);
                if all {
                    self.pos += 1;
                }
                // A pattern after the operator is accepted and ignored.
                let _ = self.param_word(b"", in_dq)?;
                ParamOp::Case {
                    upper: c == b'^',
                    all,
                }
            }
            _ => return Err(self.err("bad substitution")),
        };
        Ok(op)
    }
}
