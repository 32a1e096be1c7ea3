//! Compound commands: groups, subshells, `if`, loops, `case`, `[[ ]]` and
//! `(( ))`.

use super::{Ctl, R, Shell};
use crate::io::Io;
use crate::parse::ast::*;
use crate::pattern::Pattern;

/// What a loop body's outcome means for the loop.
enum Next {
    Go,
    Stop,
}

impl Shell {
    /// Runs a compound command.
    pub fn exec_compound(&mut self, c: &Compound, io: &Io) -> R {
        // Compound nesting is bounded by the parser, but it multiplies with
        // calls: the stack guard bounds the product.
        self.check_stack(io)?;
        match c {
            Compound::Brace(list) => self.exec_list(list, io),
            Compound::Subshell(list) => self.subshell(io, |sh| sh.exec_list(list, io)),
            Compound::If { arms, otherwise } => {
                for (cond, body) in arms {
                    let st = self.guarded(true, |sh| sh.exec_list(cond, io))?;
                    if st == 0 {
                        return self.exec_list(body, io);
                    }
                }
                match otherwise {
                    Some(body) => self.exec_list(body, io),
                    None => Ok(0),
                }
            }
            Compound::For { var, words, body } => {
                let items = match words {
                    Some(ws) => self.expand_words(ws, io)?,
                    None => self.params.as_ref().clone(),
                };
                let mut status = 0;
                self.loops += 1;
                let mut result = Ok(());
                for item in items {
                    if let Err(e) = self.vars.set(var, item) {
                        self.error(io, &e);
                        status = 1;
                        break;
                    }
                    match self.loop_body(body, io, &mut status) {
                        Ok(Next::Go) => {}
                        Ok(Next::Stop) => break,
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    }
                }
                self.loops -= 1;
                result.map(|_| status)
            }
            Compound::ArithFor {
                init,
                cond,
                step,
                body,
            } => {
                self.arith_word(init, io)?;
                let mut status = 0;
                self.loops += 1;
                let r = loop {
                    let go = if cond.is_empty() {
                        true
                    } else {
                        match self.arith_word(cond, io) {
                            Ok(v) => v != 0,
                            Err(e) => break Err(e),
                        }
                    };
                    if !go {
                        break Ok(status);
                    }
                    match self.loop_body(body, io, &mut status) {
                        Ok(Next::Go) => {}
                        Ok(Next::Stop) => break Ok(status),
                        Err(e) => break Err(e),
                    }
                    if let Err(e) = self.arith_word(step, io) {
                        break Err(e);
                    }
                };
                self.loops -= 1;
                r
            }
            Compound::While { cond, body, until } => {
                let mut status = 0;
                self.loops += 1;
                let r = loop {
                    let st = match self.guarded(true, |sh| sh.exec_list(cond, io)) {
                        Ok(s) => s,
                        Err(Ctl::Break(n)) => {
                            if n > 1 {
                                break Err(Ctl::Break(n - 1));
                            }
                            break Ok(status);
                        }
                        Err(Ctl::Continue(n)) if n <= 1 => continue,
                        Err(Ctl::Continue(n)) => break Err(Ctl::Continue(n - 1)),
                        Err(e) => break Err(e),
                    };
                    if (st == 0) == *until {
                        break Ok(status);
                    }
                    match self.loop_body(body, io, &mut status) {
                        Ok(Next::Go) => {}
                        Ok(Next::Stop) => break Ok(status),
                        Err(e) => break Err(e),
                    }
                };
                self.loops -= 1;
                r
            }
            Compound::Case { word, arms } => self.exec_case(word, arms, io),
            Compound::Cond(e) => {
                let v = self.eval_cond(e, io)?;
                Ok(match v {
                    Some(true) => 0,
                    Some(false) => 1,
                    None => 2,
                })
            }
            Compound::Arith(w) => {
                let v = self.arith_word(w, io)?;
                Ok((v == 0) as i32)
            }
        }
    }

    /// Runs one pass of a loop body; `break`/`continue` addressed to this
    /// loop are consumed here.
    fn loop_body(&mut self, body: &List, io: &Io, status: &mut i32) -> Result<Next, Ctl> {
        match self.exec_list(body, io) {
            Ok(s) => {
                *status = s;
                Ok(Next::Go)
            }
            Err(Ctl::Break(n)) => {
                if n > 1 {
                    Err(Ctl::Break(n - 1))
                } else {
                    Ok(Next::Stop)
                }
            }
            Err(Ctl::Continue(n)) => {
                if n > 1 {
                    Err(Ctl::Continue(n - 1))
                } else {
                    Ok(Next::Go)
                }
            }
            Err(e) => Err(e),
        }
    }

    fn exec_case(&mut self, word: &Word, arms: &[CaseArm], io: &Io) -> R {
        let subject = self.expand_scalar(word, io)?;
        let mut status = 0;
        let mut i = 0;
        let mut falling = false;
        while i < arms.len() {
            let arm = &arms[i];
            let mut hit = falling;
            if !hit {
                for p in &arm.patterns {
                    let (pat, active) = self.expand_pattern(p, io)?;
                    if Pattern::new(&pat, Some(&active)).matches(&subject) {
                        hit = true;
                        break;
                    }
                }
            }
            falling = false;
            if hit {
                status = self.exec_list(&arm.body, io)?;
                match arm.end {
                    CaseEnd::Break => return Ok(status),
                    CaseEnd::FallThrough => falling = true,
                    CaseEnd::Continue => {}
                }
            }
            i += 1;
        }
        Ok(status)
    }

    /// Expands an arithmetic word and evaluates it. An error aborts the
    /// current command.
    pub fn arith_word(&mut self, w: &Word, io: &Io) -> Result<i64, Ctl> {
        let text = self.expand_scalar(w, io)?;
        self.arith_text(&text, io)
    }

    /// Evaluates arithmetic text; an error aborts the current command.
    pub fn arith_text(&mut self, text: &[u8], io: &Io) -> Result<i64, Ctl> {
        match crate::arith::eval(text, self) {
            Ok(v) => Ok(v),
            Err(e) => {
                self.error(io, &e);
                Err(Ctl::Abort(1))
            }
        }
    }
}
