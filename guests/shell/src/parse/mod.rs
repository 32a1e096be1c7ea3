//! The parser: shell text (bytes) to [`ast`] trees, one complete command at
//! a time, as a shell reads a script.
//!
//! A hand-written recursive-descent parser over bytes. Every recursive entry
//! (compound commands, substitutions, `${…}` words, `[[ ( ) ]]`) goes
//! through [`Parser::enter`], which refuses to nest deeper than
//! [`crate::limits::MAX_PARSE_NEST`]: hostile nesting ends in a syntax error,
//! never in a stack overflow.

pub mod ast;
mod compound;
mod heredoc;
mod param;
mod word;

use crate::limits::MAX_PARSE_NEST;
use ast::*;
use std::rc::Rc;

/// Why text did not parse.
#[derive(Debug, Clone)]
pub struct ParseError {
    /// The message, without the `sh: ` prefix.
    pub msg: String,
    /// 1-based line where the parser stopped.
    pub line: usize,
}

type PResult<T> = Result<T, ParseError>;

/// A here-document whose body is still to be read.
struct Pending {
    delim: Vec<u8>,
    strip_tabs: bool,
    quoted: bool,
    doc: Rc<HereDoc>,
}

/// The parser state: the text, a position and the here-documents waiting
/// for the next newline.
pub struct Parser<'a> {
    src: &'a [u8],
    pos: usize,
    depth: usize,
    pending: Vec<Pending>,
    /// Operands and operators of the current `[[ … ]]`.
    cond_nodes: usize,
}

/// Bytes that end an unquoted word.
pub(crate) fn is_meta(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// A valid variable name.
pub fn is_name(s: &[u8]) -> bool {
    !s.is_empty()
        && !s[0].is_ascii_digit()
        && s.iter().all(|&c| c == b'_' || c.is_ascii_alphanumeric())
}

impl<'a> Parser<'a> {
    /// A parser over `src`, starting at nesting depth `depth` (the depth of
    /// the text that contains it, for backquotes and here-documents).
    pub fn new(src: &'a [u8], depth: usize) -> Self {
        Parser {
            src,
            pos: 0,
            depth,
            pending: Vec::new(),
            cond_nodes: 0,
        }
    }

    /// Parses the next complete command (the and-or lists up to a
    /// newline); `None` at the end of the text.
    pub fn next_command(&mut self) -> PResult<Option<List>> {
        self.linebreaks()?;
        if self.eof() {
            return Ok(None);
        }
        let mut list = Vec::new();
        loop {
            let and_or = self.and_or()?;
            self.blanks();
            let mut background = false;
            match self.peek() {
                Some(b';') if self.peek_at(1) != Some(b';') => {
                    self.pos += 1;
                }
                Some(b'&') if self.peek_at(1) != Some(b'&') && self.peek_at(1) != Some(b'>') => {
                    self.pos += 1;
                    background = true;
                }
                Some(b'\n') | None => {
                    list.push(Item { and_or, background });
                    self.newline()?;
                    return Ok(Some(list));
                }
                _ => return Err(self.unexpected()),
            }
            list.push(Item { and_or, background });
            self.blanks();
            match self.peek() {
                None => return Ok(Some(list)),
                Some(b'\n') => {
                    self.newline()?;
                    return Ok(Some(list));
                }
                _ => {}
            }
        }
    }

    // ---- low-level scanning ----

    fn eof(&self) -> bool {
        self.pos >= self.src.len()
    }

    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<u8> {
        self.src.get(self.pos + n).copied()
    }

    fn starts(&self, s: &[u8]) -> bool {
        self.src[self.pos.min(self.src.len())..].starts_with(s)
    }

    /// The 1-based line of the current position.
    pub fn line(&self) -> usize {
        1 + self.src[..self.pos.min(self.src.len())]
            .iter()
            .filter(|&&c| c == b'\n')
            .count()
    }

    pub(crate) fn err(&self, msg: impl Into<String>) -> ParseError {
        ParseError {
            msg: msg.into(),
            line: self.line(),
        }
    }

    /// "syntax error near unexpected token" for whatever is at the position.
    fn unexpected(&self) -> ParseError {
        if self.eof() {
            return self.err("syntax error: unexpected end of file");
        }
        let rest = &self.src[self.pos..];
        let ops: [&[u8]; 14] = [
            b";;&", b";;", b";&", b"&&", b"||", b"<<", b">>", b"\n", b";", b"&", b"|", b"(", b")",
            b"<",
        ];
        let tok: Vec<u8> = match ops.iter().find(|o| rest.starts_with(o)).copied() {
            Some(b"\n") => b"newline".to_vec(),
            Some(o) => o.to_vec(),
            None => rest
                .iter()
                .take_while(|&&c| !is_meta(c))
                .take(40)
                .copied()
                .collect(),
        };
        self.err(format!(
            "syntax error near unexpected token `{}'",
            String::from_utf8_lossy(&tok)
        ))
    }

    /// Enters one nesting level; fails past the limit.
    pub(crate) fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_PARSE_NEST || crate::limits::stack::exhausted() {
            return Err(self.err(format!(
                "nesting too deep (the limit is {MAX_PARSE_NEST} levels)"
            )));
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    /// Skips blanks, line continuations and a comment (not the newline).
    fn blanks(&mut self) {
        loop {
            match self.peek() {
                Some(b' ' | b'\t' | b'\r') => self.pos += 1,
                Some(b'\\') if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                Some(b'#') => {
                    while let Some(c) = self.peek() {
                        if c == b'\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => return,
            }
        }
    }

    /// Consumes one newline and reads the here-documents waiting for it.
    fn newline(&mut self) -> PResult<()> {
        if self.peek() == Some(b'\n') {
            self.pos += 1;
            self.read_heredocs()?;
        }
        Ok(())
    }

    /// Skips blanks, comments and newlines.
    fn linebreaks(&mut self) -> PResult<()> {
        loop {
            self.blanks();
            if self.peek() == Some(b'\n') {
                self.newline()?;
            } else {
                return Ok(());
            }
        }
    }

    /// Whether the reserved word `w` (or any word) is at the position,
    /// followed by a delimiter.
    fn at_word(&self, w: &[u8]) -> bool {
        if !self.starts(w) {
            return false;
        }
        match self.src.get(self.pos + w.len()) {
            None => true,
            Some(&c) => is_meta(c),
        }
    }

    /// Consumes the reserved word `w` or fails.
    fn expect_word(&mut self, w: &[u8]) -> PResult<()> {
        self.linebreaks()?;
        if self.at_word(w) {
            self.pos += w.len();
            Ok(())
        } else if self.eof() {
            Err(self.err(format!(
                "syntax error: unexpected end of file (expected `{}')",
                String::from_utf8_lossy(w)
            )))
        } else {
            Err(self.unexpected())
        }
    }

    // ---- lists ----

    /// A compound list: and-or lists separated by `;`, `&` and newlines,
    /// up to one of the reserved words `ends` (or `)` / `;;` when `ends`
    /// names them), which is not consumed.
    pub(crate) fn compound_list(&mut self, ends: &[&[u8]]) -> PResult<List> {
        self.enter()?;
        let mut list = Vec::new();
        loop {
            self.linebreaks()?;
            if self.eof() || self.at_end_of_list(ends) {
                break;
            }
            let and_or = self.and_or()?;
            self.blanks();
            let mut background = false;
            match self.peek() {
                Some(b';') if self.peek_at(1) != Some(b';') && self.peek_at(1) != Some(b'&') => {
                    self.pos += 1
                }
                Some(b'&') if self.peek_at(1) != Some(b'&') && self.peek_at(1) != Some(b'>') => {
                    self.pos += 1;
                    background = true;
                }
                Some(b'\n') => self.newline()?,
                _ => {
                    list.push(Item { and_or, background });
                    break;
                }
            }
            list.push(Item { and_or, background });
        }
        self.leave();
        Ok(list)
    }

    fn at_end_of_list(&self, ends: &[&[u8]]) -> bool {
        ends.iter().any(|e| match *e {
            b")" => self.peek() == Some(b')'),
            b";;" => self.starts(b";;") || self.starts(b";&"),
            w => self.at_word(w),
        })
    }

    fn and_or(&mut self) -> PResult<AndOr> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            self.blanks();
            let and = if self.starts(b"&&") {
                true
            } else if self.starts(b"||") {
                false
            } else {
                break;
            };
            self.pos += 2;
            self.linebreaks()?;
            rest.push((and, self.pipeline()?));
        }
        Ok(AndOr { first, rest })
    }

    fn pipeline(&mut self) -> PResult<Pipeline> {
        self.blanks();
        let mut bang = false;
        let mut timed = false;
        loop {
            if self.at_word(b"!") {
                self.pos += 1;
                bang = !bang;
            } else if self.at_word(b"time") {
                self.pos += 4;
                timed = true;
                self.blanks();
                if self.at_word(b"-p") {
                    self.pos += 2;
                }
            } else {
                break;
            }
            self.blanks();
        }
        let mut cmds = vec![self.command()?];
        loop {
            self.blanks();
            if self.peek() == Some(b'|') && self.peek_at(1) != Some(b'|') {
                self.pos += 1;
                if self.peek() == Some(b'&') {
                    // `|&`: stderr goes down the pipe too.
                    self.pos += 1;
                    if let Some(last) = cmds.last_mut() {
                        add_redir(last, stderr_to_stdout());
                    }
                }
                self.linebreaks()?;
                cmds.push(self.command()?);
            } else {
                break;
            }
        }
        Ok(Pipeline { bang, timed, cmds })
    }

    fn command(&mut self) -> PResult<Command> {
        self.blanks();
        let compound = match self.peek() {
            None => return Err(self.unexpected()),
            Some(b'(') => {
                if self.peek_at(1) == Some(b'(') && self.arith_closes(self.pos + 2) {
                    self.pos += 2;
                    let w = self.arith_body()?;
                    Some(Compound::Arith(w))
                } else {
                    self.pos += 1;
                    let list = self.compound_list(&[b")"])?;
                    self.linebreaks()?;
                    if self.peek() != Some(b')') {
                        return Err(self.unexpected());
                    }
                    self.pos += 1;
                    Some(Compound::Subshell(list))
                }
            }
            _ => self.compound()?,
        };
        if let Some(c) = compound {
            let redirs = self.trailing_redirs()?;
            return Ok(Command::Compound(Box::new(c), redirs));
        }
        if self.at_word(b"function") {
            return self.function_keyword();
        }
        self.simple()
    }

    /// Redirections after a compound command.
    fn trailing_redirs(&mut self) -> PResult<Vec<Redir>> {
        let mut redirs = Vec::new();
        loop {
            self.blanks();
            match self.redirection()? {
                Some(r) => redirs.push(r),
                None => return Ok(redirs),
            }
        }
    }

    fn simple(&mut self) -> PResult<Command> {
        let mut cmd = Simple::default();
        loop {
            self.blanks();
            if self.starts(b"<(") || self.starts(b">(") {
                let w = self.word()?;
                cmd.words.push(w);
                continue;
            }
            if let Some(r) = self.redirection()? {
                cmd.redirs.push(r);
                continue;
            }
            match self.peek() {
                None => break,
                Some(c) if is_meta(c) => {
                    if c == b'(' && cmd.words.len() == 1 && cmd.assigns.is_empty() {
                        return self.function_def(cmd);
                    }
                    break;
                }
                _ => {}
            }
            if cmd.words.is_empty()
                && let Some(a) = self.assignment()?
            {
                cmd.assigns.push(a);
                continue;
            }
            if is_declaration(&cmd.words) {
                let save = self.pos;
                if let Some(a) = self.assignment()? {
                    if let AssignValue::Array(_) = a.value {
                        cmd.words.push(vec![Part::Lit(a.name.clone())]);
                        cmd.decl_arrays.push(a);
                        continue;
                    }
                    self.pos = save;
                }
            }
            let w = self.word()?;
            cmd.words.push(w);
        }
        if cmd.words.is_empty() && cmd.assigns.is_empty() && cmd.redirs.is_empty() {
            return Err(self.unexpected());
        }
        Ok(Command::Simple(cmd))
    }

    /// `name ( ) body` after the name was read as the first word.
    fn function_def(&mut self, cmd: Simple) -> PResult<Command> {
        let name = literal_text(&cmd.words[0]).ok_or_else(|| self.unexpected())?;
        self.pos += 1;
        self.blanks();
        if self.peek() != Some(b')') {
            return Err(self.unexpected());
        }
        self.pos += 1;
        self.function_body(name)
    }

    /// `function name [()] body`.
    fn function_keyword(&mut self) -> PResult<Command> {
        self.pos += b"function".len();
        self.blanks();
        let w = self.word()?;
        let name = literal_text(&w).ok_or_else(|| self.err("bad function name"))?;
        self.blanks();
        if self.peek() == Some(b'(') && self.peek_at(1) == Some(b')') {
            self.pos += 2;
        }
        self.function_body(name)
    }

    fn function_body(&mut self, name: Vec<u8>) -> PResult<Command> {
        if name.is_empty() || name.iter().any(|&c| c == b'/' || c == b'$' || c == b'=') {
            return Err(self.err(format!(
                "`{}': not a valid identifier",
                String::from_utf8_lossy(&name)
            )));
        }
        self.linebreaks()?;
        self.enter()?;
        let body = self.command()?;
        self.leave();
        if !matches!(body, Command::Compound(..)) {
            return Err(self.err("syntax error: a function body must be a compound command"));
        }
        Ok(Command::FuncDef(name, Rc::new(body)))
    }

    /// A redirection at the position, if there is one.
    fn redirection(&mut self) -> PResult<Option<Redir>> {
        let start = self.pos;
        let digits = self.src[self.pos..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let fd = if digits > 0 && digits < 5 {
            match self.src.get(self.pos + digits) {
                Some(b'<' | b'>') => {
                    let n = std::str::from_utf8(&self.src[self.pos..self.pos + digits])
                        .ok()
                        .and_then(|s| s.parse::<u32>().ok());
                    self.pos += digits;
                    n
                }
                _ => None,
            }
        } else {
            None
        };
        let ops: [(&[u8], RedirOp); 12] = [
            (b"&>>", RedirOp::AppendErr),
            (b"&>", RedirOp::OutErr),
            (b"<<<", RedirOp::HereString),
            (b"<<-", RedirOp::HereDoc),
            (b"<<", RedirOp::HereDoc),
            (b"<>", RedirOp::ReadWrite),
            (b"<&", RedirOp::DupIn),
            (b"<", RedirOp::In),
            (b">>", RedirOp::Append),
            (b">&", RedirOp::DupOut),
            (b">|", RedirOp::Out),
            (b">", RedirOp::Out),
        ];
        let Some(&(text, op)) = ops.iter().find(|(t, _)| self.starts(t)) else {
            self.pos = start;
            return Ok(None);
        };
        if fd.is_some() && text.starts_with(b"&") {
            self.pos = start;
            return Ok(None);
        }
        self.pos += text.len();
        self.blanks();
        let psub = self.starts(b"<(") || self.starts(b">(");
        match self.peek() {
            None => return Err(self.err("syntax error: unexpected end of file")),
            Some(c) if is_meta(c) && !psub => return Err(self.unexpected()),
            _ => {}
        }
        let target = self.word()?;
        let heredoc = if op == RedirOp::HereDoc {
            let doc = Rc::new(HereDoc::default());
            let (delim, quoted) = heredoc::delimiter(&target);
            self.pending.push(Pending {
                delim,
                strip_tabs: text == b"<<-",
                quoted,
                doc: doc.clone(),
            });
            Some(doc)
        } else {
            None
        };
        Ok(Some(Redir {
            fd,
            op,
            target,
            heredoc,
        }))
    }
}

/// Whether the command's first word names a declaration builtin.
fn is_declaration(words: &[Word]) -> bool {
    words.first().and_then(literal_text).is_some_and(|w| {
        matches!(
            w.as_slice(),
            b"export" | b"local" | b"declare" | b"typeset" | b"readonly"
        )
    })
}

/// The text of a word made only of literal parts.
pub(crate) fn literal_text(w: &Word) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    for p in w {
        match p {
            Part::Lit(b) => out.extend_from_slice(b),
            _ => return None,
        }
    }
    Some(out)
}

fn stderr_to_stdout() -> Redir {
    Redir {
        fd: Some(2),
        op: RedirOp::DupOut,
        target: vec![Part::Lit(b"1".to_vec())],
        heredoc: None,
    }
}

fn add_redir(cmd: &mut Command, r: Redir) {
    match cmd {
        Command::Simple(s) => s.redirs.push(r),
        Command::Compound(_, redirs) => redirs.push(r),
        Command::FuncDef(..) => {}
    }
}

/// Parses a whole text into one list (all its complete commands).
pub fn parse_all(src: &[u8]) -> PResult<List> {
    let mut p = Parser::new(src, 0);
    let mut all = Vec::new();
    while let Some(list) = p.next_command()? {
        all.extend(list);
    }
    Ok(all)
}

#[cfg(test)]
mod tests;
