//! Compound commands: `{ }`, `if`, `for`, `while`/`until`, `case` and
//! `[[ ]]`.

use super::ast::*;
use super::{PResult, Parser, is_name, literal_text};
use crate::limits::MAX_EXPR_NODES;

impl Parser<'_> {
    /// The compound command at the position, if a reserved word starts one.
    pub(super) fn compound(&mut self) -> PResult<Option<Compound>> {
        let kw: &[u8] = [
            b"{" as &[u8],
            b"if",
            b"while",
            b"until",
            b"for",
            b"case",
            b"[[",
        ]
        .into_iter()
        .find(|w| self.at_word(w))
        .unwrap_or(b"");
        if kw.is_empty() {
            return Ok(None);
        }
        self.pos += kw.len();
        self.enter()?;
        let c = match kw {
            b"{" => {
                let list = self.compound_list(&[b"}"])?;
                self.expect_word(b"}")?;
                Compound::Brace(list)
            }
            b"if" => self.if_clause()?,
            b"while" | b"until" => {
                let cond = self.compound_list(&[b"do"])?;
                let body = self.do_group()?;
                Compound::While {
                    cond,
                    body,
                    until: kw == b"until",
                }
            }
            b"for" => self.for_clause()?,
            b"case" => self.case_clause()?,
            _ => {
                let outer = std::mem::replace(&mut self.cond_nodes, 0);
                let e = self.cond_or()?;
                self.cond_nodes = outer;
                self.cond_blanks()?;
                if !self.at_word(b"]]") {
                    return Err(self.unexpected());
                }
                self.pos += 2;
                Compound::Cond(e)
            }
        };
        self.leave();
        Ok(Some(c))
    }

    fn do_group(&mut self) -> PResult<List> {
        self.expect_word(b"do")?;
        let body = self.compound_list(&[b"done"])?;
        self.expect_word(b"done")?;
        Ok(body)
    }

    fn if_clause(&mut self) -> PResult<Compound> {
        let mut arms = Vec::new();
        let mut otherwise = None;
        loop {
            let cond = self.compound_list(&[b"then"])?;
            self.expect_word(b"then")?;
            let body = self.compound_list(&[b"elif", b"else", b"fi"])?;
            arms.push((cond, body));
            self.linebreaks()?;
            if self.at_word(b"elif") {
                self.pos += 4;
                continue;
            }
            if self.at_word(b"else") {
                self.pos += 4;
                otherwise = Some(self.compound_list(&[b"fi"])?);
            }
            self.expect_word(b"fi")?;
            return Ok(Compound::If { arms, otherwise });
        }
    }

    fn for_clause(&mut self) -> PResult<Compound> {
        self.blanks();
        if self.starts(b"((") {
            self.pos += 2;
            let body_text = self.arith_body()?;
            let (init, cond, step) = split_arith_for(body_text)
                .ok_or_else(|| self.err("syntax error: `for ((…))' needs three expressions"))?;
            self.blanks();
            if self.peek() == Some(b';') {
                self.pos += 1;
            }
            let body = self.loop_body()?;
            return Ok(Compound::ArithFor {
                init,
                cond,
                step,
                body,
            });
        }
        let w = self.word()?;
        let var = match literal_text(&w) {
            Some(v) if is_name(&v) => v,
            _ => return Err(self.err("syntax error: bad for loop variable")),
        };
        self.blanks();
        let mut words = None;
        // `for x in …` possibly after newlines; `for x; do` and `for x do`.
        let save = self.pos;
        self.linebreaks()?;
        if self.at_word(b"in") {
            self.pos += 2;
            let mut ws = Vec::new();
            loop {
                self.blanks();
                match self.peek() {
                    None | Some(b'\n' | b';') => break,
                    Some(c) if super::is_meta(c) => return Err(self.unexpected()),
                    _ => ws.push(self.word()?),
                }
            }
            words = Some(ws);
        } else if !self.at_word(b"do") {
            self.pos = save;
        }
        self.blanks();
        if self.peek() == Some(b';') {
            self.pos += 1;
        }
        let body = self.do_group()?;
        Ok(Compound::For { var, words, body })
    }

    /// `do … done` or `{ … }` after `for ((…))`.
    fn loop_body(&mut self) -> PResult<List> {
        self.linebreaks()?;
        if self.at_word(b"{") {
            self.pos += 1;
            let list = self.compound_list(&[b"}"])?;
            self.expect_word(b"}")?;
            return Ok(list);
        }
        self.do_group()
    }

    fn case_clause(&mut self) -> PResult<Compound> {
        self.blanks();
        let word = self.word()?;
        self.expect_word(b"in")?;
        let mut arms = Vec::new();
        loop {
            self.linebreaks()?;
            if self.at_word(b"esac") {
                self.pos += 4;
                break;
            }
            if self.eof() {
                return Err(self.err("syntax error: unexpected end of file (expected `esac')"));
            }
            if self.peek() == Some(b'(') {
                self.pos += 1;
            }
            let mut patterns = Vec::new();
            loop {
                self.blanks();
                match self.peek() {
                    Some(c) if super::is_meta(c) => return Err(self.unexpected()),
                    None => return Err(self.unexpected()),
                    _ => {}
                }
                patterns.push(self.word()?);
                self.blanks();
                match self.peek() {
                    Some(b'|') => self.pos += 1,
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    _ => return Err(self.unexpected()),
                }
            }
            let body = self.compound_list(&[b";;", b"esac"])?;
            self.linebreaks()?;
            let end = if self.starts(b";;&") {
                self.pos += 3;
                CaseEnd::Continue
            } else if self.starts(b";;") {
                self.pos += 2;
                CaseEnd::Break
            } else if self.starts(b";&") {
                self.pos += 2;
                CaseEnd::FallThrough
            } else if self.at_word(b"esac") {
                CaseEnd::Break
            } else {
                return Err(self.unexpected());
            };
            arms.push(CaseArm {
                patterns,
                body,
                end,
            });
        }
        Ok(Compound::Case { word, arms })
    }

    // ---- [[ … ]] ----

    fn cond_blanks(&mut self) -> PResult<()> {
        self.linebreaks()
    }

    /// Counts one operand or operator of `[[ … ]]`.
    fn cond_node(&mut self) -> PResult<()> {
        self.cond_nodes += 1;
        if self.cond_nodes > MAX_EXPR_NODES {
            return Err(self.err(format!(
                "`[[' expression too long (more than {MAX_EXPR_NODES} operands and operators)"
            )));
        }
        Ok(())
    }

    fn cond_or(&mut self) -> PResult<Cond> {
        let mut items = vec![self.cond_and()?];
        loop {
            self.cond_blanks()?;
            if !self.starts(b"||") {
                return Ok(if items.len() == 1 {
                    items.remove(0)
                } else {
                    Cond::Or(items)
                });
            }
            self.pos += 2;
            self.cond_node()?;
            items.push(self.cond_and()?);
        }
    }

    fn cond_and(&mut self) -> PResult<Cond> {
        let mut items = vec![self.cond_not()?];
        loop {
            self.cond_blanks()?;
            if !self.starts(b"&&") {
                return Ok(if items.len() == 1 {
                    items.remove(0)
                } else {
                    Cond::And(items)
                });
            }
            self.pos += 2;
            self.cond_node()?;
            items.push(self.cond_not()?);
        }
    }

    fn cond_not(&mut self) -> PResult<Cond> {
        self.cond_blanks()?;
        if self.at_word(b"!") {
            self.pos += 1;
            self.enter()?;
            let inner = self.cond_not()?;
            self.leave();
            return Ok(Cond::Not(Box::new(inner)));
        }
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.enter()?;
            let inner = self.cond_or()?;
            self.cond_blanks()?;
            if self.peek() != Some(b')') {
                return Err(self.unexpected());
            }
            self.pos += 1;
            self.leave();
            return Ok(inner);
        }
        self.cond_primary()
    }

    fn cond_word(&mut self) -> PResult<Word> {
        self.cond_blanks()?;
        match self.peek() {
            None => Err(self.err("syntax error: unexpected end of file in `[['")),
            Some(c) if super::is_meta(c) => Err(self.unexpected()),
            _ => self.word(),
        }
    }

    fn cond_primary(&mut self) -> PResult<Cond> {
        self.cond_node()?;
        self.cond_blanks()?;
        if self.at_word(b"]]") {
            return Err(self.unexpected());
        }
        let first = self.cond_word()?;
        if let Some(op) = literal_text(&first)
            && is_unary(&op)
        {
            self.cond_blanks()?;
            if !self.at_word(b"]]") && !self.starts(b"&&") && !self.starts(b"||") {
                let operand = self.cond_word()?;
                return Ok(Cond::Unary(op, operand));
            }
        }
        self.cond_blanks()?;
        let op: Option<Vec<u8>> = if self.starts(b"<") && !self.starts(b"<<") {
            self.pos += 1;
            Some(b"<".to_vec())
        } else if self.starts(b">") && !self.starts(b">>") {
            self.pos += 1;
            Some(b">".to_vec())
        } else if self.at_word(b"]]")
            || self.starts(b"&&")
            || self.starts(b"||")
            || self.peek() == Some(b')')
        {
            None
        } else {
            let save = self.pos;
            let w = self.word()?;
            match literal_text(&w) {
                Some(o) if is_binary(&o) => Some(o),
                _ => {
                    self.pos = save;
                    return Err(self.unexpected());
                }
            }
        };
        let Some(op) = op else {
            return Ok(Cond::Word(first));
        };
        self.blanks();
        let right = if op == b"=~" {
            self.regex_word()?
        } else {
            self.cond_word()?
        };
        Ok(Cond::Binary(op, first, right))
    }
}

fn is_unary(op: &[u8]) -> bool {
    op.len() == 2 && op[0] == b'-' && b"abcdefghknoprstuwxzGLNOS".contains(&op[1])
}

fn is_binary(op: &[u8]) -> bool {
    matches!(
        op,
        b"=="
            | b"="
            | b"!="
            | b"=~"
            | b"-eq"
            | b"-ne"
            | b"-lt"
            | b"-le"
            | b"-gt"
            | b"-ge"
            | b"-nt"
            | b"-ot"
            | b"-ef"
    )
}

/// Splits the text of `for ((a; b; c))` at its two top-level `;`.
fn split_arith_for(w: Word) -> Option<(Word, Word, Word)> {
    let mut out: Vec<Word> = vec![Vec::new()];
    for part in w {
        match part {
            Part::Lit(bytes) => {
                let mut cur = Vec::new();
                for &b in &bytes {
                    if b == b';' {
                        if !cur.is_empty() {
                            out.last_mut()?.push(Part::Lit(std::mem::take(&mut cur)));
                        }
                        out.push(Vec::new());
                    } else {
                        cur.push(b);
                    }
                }
                if !cur.is_empty() {
                    out.last_mut()?.push(Part::Lit(cur));
                }
            }
            other => out.last_mut()?.push(other),
        }
    }
    if out.len() != 3 {
        return None;
    }
    let step = out.pop()?;
    let cond = out.pop()?;
    let init = out.pop()?;
    Some((init, cond, step))
}
