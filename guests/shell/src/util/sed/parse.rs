//! Parsing sed scripts: addresses, commands, `s` and `y` arguments,
//! replacement text, labels and blocks.

use regex::bytes::Regex;

/// A single address.
#[derive(Debug, Clone)]
pub enum Addr {
    /// Line number (`0` only as `0,/re/`).
    Line(usize),
    /// `$`
    Last,
    /// `/re/`; `None` reuses the last regex.
    Re(Option<Regex>),
    /// `first~step`
    Step(usize, usize),
}

/// The second address of a range.
#[derive(Debug, Clone)]
pub enum Addr2 {
    /// An ordinary address.
    At(Addr),
    /// `,+N`
    Plus(usize),
    /// `,~N`
    Multiple(usize),
}

/// A piece of replacement text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rep {
    /// Literal bytes.
    Lit(Vec<u8>),
    /// `&` (0) or `\1`…`\9`.
    Group(usize),
    /// `\U`, `\L`, `\u`, `\l`, `\E`.
    Case(u8),
}

/// A command.
#[derive(Debug, Clone)]
pub enum Cmd {
    /// `{`: the index of the matching `}`.
    Block(usize),
    /// `}`
    End,
    /// `s/re/rep/flags`.
    Subst {
        /// The regex (`None`: the last one).
        re: Option<Regex>,
        /// Replacement.
        rep: Vec<Rep>,
        /// `g`
        global: bool,
        /// A number flag.
        nth: usize,
        /// `p`
        print: bool,
        /// `w FILE`
        write: Option<Vec<u8>>,
    },
    /// `y/src/dst/`.
    Translate(Vec<(u8, u8)>),
    /// Commands without arguments: `p P d D n N g G h H x = l z`.
    Simple(u8),
    /// `a`, `i`, `c` with their text.
    Text(u8, Vec<u8>),
    /// `q`/`Q` with an exit code.
    Quit(u8, i32),
    /// `b`, `t`, `T` with a label (empty = end of script).
    Branch(u8, Vec<u8>),
    /// `:label`
    Label,
    /// `r FILE`, `R FILE`, `w FILE`, `W FILE`.
    File(u8, Vec<u8>),
}

/// A command with its addresses.
#[derive(Debug, Clone)]
pub struct Command {
    /// First address.
    pub a1: Option<Addr>,
    /// Second address.
    pub a2: Option<Addr2>,
    /// `!`
    pub negate: bool,
    /// The command.
    pub cmd: Cmd,
    /// For `:label`, its name.
    pub label: Vec<u8>,
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
    ere: bool,
}

impl P<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn err(&self, msg: &str) -> String {
        format!("-e expression #1, char {}: {msg}", self.i + 1)
    }

    fn number(&mut self) -> Option<usize> {
        let n = self.s[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n == 0 {
            return None;
        }
        let v = std::str::from_utf8(&self.s[self.i..self.i + n])
            .ok()?
            .parse()
            .ok();
        self.i += n;
        v
    }

    /// Reads up to the unescaped delimiter; `\delim` becomes `delim`
    /// (unless it is a regex) and `\n` a newline in text parts.
    fn delimited(&mut self, delim: u8, regex: bool) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut in_bracket = false;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(&format!(
                    "unterminated `{}' command",
                    if regex { 's' } else { 'y' }
                )));
            };
            self.i += 1;
            if regex && c == b'[' && !in_bracket {
                in_bracket = true;
                out.push(c);
                // `[]…]` and `[^]…]` keep a leading `]`.
                if self.peek() == Some(b'^') {
                    out.push(b'^');
                    self.i += 1;
                }
                if self.peek() == Some(b']') {
                    out.push(b']');
                    self.i += 1;
                }
                continue;
            }
            if in_bracket {
                if c == b']' {
                    in_bracket = false;
                }
                out.push(c);
                continue;
            }
            if c == delim {
                return Ok(out);
            }
            if c == b'\\' {
                match self.peek() {
                    Some(d) if d == delim => {
                        out.push(d);
                        self.i += 1;
                    }
                    Some(b'\n') if !regex => {
                        out.push(b'\n');
                        self.i += 1;
                    }
                    Some(d) => {
                        out.push(b'\\');
                        out.push(d);
                        self.i += 1;
                    }
                    None => out.push(b'\\'),
                }
                continue;
            }
            if c == b'\n' && regex {
                return Err(self.err("unterminated address regex"));
            }
            out.push(c);
        }
    }

    fn regex(&mut self, text: &[u8], icase: bool) -> Result<Option<Regex>, String> {
        if text.is_empty() {
            return Ok(None);
        }
        let t = crate::util::re::translate(text, self.ere).map_err(|e| self.err(&e))?;
        crate::util::re::build(&format!("(?s){t}"), icase)
            .map(Some)
            .map_err(|e| self.err(&e))
    }

    fn address(&mut self) -> Result<Option<Addr>, String> {
        match self.peek() {
            Some(b'$') => {
                self.i += 1;
                Ok(Some(Addr::Last))
            }
            Some(c) if c.is_ascii_digit() => {
                let n = self.number().unwrap_or(0);
                if self.peek() == Some(b'~') {
                    self.i += 1;
                    let step = self.number().unwrap_or(0);
                    return Ok(Some(Addr::Step(n, step)));
                }
                Ok(Some(Addr::Line(n)))
            }
            Some(b'/') | Some(b'\\') => {
                let delim = if self.peek() == Some(b'\\') {
                    self.i += 1;
                    self.peek().ok_or_else(|| self.err("unexpected end"))?
                } else {
                    b'/'
                };
                self.i += 1;
                let text = self.delimited(delim, true)?;
                let mut icase = false;
                while matches!(self.peek(), Some(b'I' | b'M')) {
                    icase |= self.peek() == Some(b'I');
                    self.i += 1;
                }
                Ok(Some(Addr::Re(self.regex(&text, icase)?)))
            }
            _ => Ok(None),
        }
    }

    /// Text for `a`, `i`, `c`: `a\` + newline + lines, or `a text`.
    fn text(&mut self) -> Vec<u8> {
        self.blanks();
        if self.peek() == Some(b'\\') {
            self.i += 1;
            if self.peek() == Some(b'\n') {
                self.i += 1;
            }
        }
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.i += 1;
            match c {
                b'\\' => match self.peek() {
                    Some(b'\n') => {
                        out.push(b'\n');
                        self.i += 1;
                    }
                    Some(d) => {
                        self.i += 1;
                        out.push(match d {
                            b'n' => b'\n',
                            b't' => b'\t',
                            other => other,
                        });
                    }
                    None => {}
                },
                b'\n' => break,
                _ => out.push(c),
            }
        }
        out
    }

    /// A file name or label: the rest of the line (labels also end at `;`).
    fn word(&mut self, semicolon_ends: bool) -> Vec<u8> {
        self.blanks();
        let start = self.i;
        while let Some(c) = self.peek() {
            if c == b'\n' || (semicolon_ends && (c == b';' || c == b'}')) {
                break;
            }
            self.i += 1;
        }
        crate::bytes::trim_blanks(&self.s[start..self.i]).to_vec()
    }
}

/// Parses replacement text.
fn replacement(text: &[u8]) -> Vec<Rep> {
    let mut out = Vec::new();
    let mut lit = Vec::new();
    let mut i = 0;
    let flush = |lit: &mut Vec<u8>, out: &mut Vec<Rep>| {
        if !lit.is_empty() {
            out.push(Rep::Lit(std::mem::take(lit)));
        }
    };
    while i < text.len() {
        let c = text[i];
        if c == b'&' {
            flush(&mut lit, &mut out);
            out.push(Rep::Group(0));
            i += 1;
            continue;
        }
        if c == b'\\' && i + 1 < text.len() {
            let d = text[i + 1];
            i += 2;
            match d {
                b'0'..=b'9' => {
                    flush(&mut lit, &mut out);
                    out.push(Rep::Group((d - b'0') as usize));
                }
                b'U' | b'L' | b'u' | b'l' | b'E' => {
                    flush(&mut lit, &mut out);
                    out.push(Rep::Case(d));
                }
                b'n' => lit.push(b'\n'),
                b't' => lit.push(b'\t'),
                b'r' => lit.push(b'\r'),
                b'\n' => lit.push(b'\n'),
                other => lit.push(other),
            }
            continue;
        }
        lit.push(c);
        i += 1;
    }
    flush(&mut lit, &mut out);
    out
}

/// Parses a whole script.
pub fn parse(script: &[u8], ere: bool) -> Result<Vec<Command>, String> {
    let mut p = P {
        s: script,
        i: 0,
        ere,
    };
    let mut cmds: Vec<Command> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    loop {
        while matches!(p.peek(), Some(b' ' | b'\t' | b'\n' | b';')) {
            p.i += 1;
        }
        let Some(c) = p.peek() else { break };
        if c == b'#' {
            while !matches!(p.peek(), Some(b'\n') | None) {
                p.i += 1;
            }
            continue;
        }
        if cmds.len() >= crate::limits::MAX_PROGRAM_TOKENS {
            return Err(format!(
                "script too large (more than {} commands)",
                crate::limits::MAX_PROGRAM_TOKENS
            ));
        }
        let a1 = p.address()?;
        let mut a2 = None;
        if a1.is_some() && p.peek() == Some(b',') {
            p.i += 1;
            p.blanks();
            a2 = Some(match p.peek() {
                Some(b'+') => {
                    p.i += 1;
                    Addr2::Plus(p.number().unwrap_or(0))
                }
                Some(b'~') => {
                    p.i += 1;
                    Addr2::Multiple(p.number().unwrap_or(0))
                }
                _ => Addr2::At(p.address()?.ok_or_else(|| p.err("unexpected `,'"))?),
            });
        }
        p.blanks();
        let mut negate = false;
        while p.peek() == Some(b'!') {
            negate = true;
            p.i += 1;
            p.blanks();
        }
        let Some(c) = p.peek() else {
            return Err(p.err("missing command"));
        };
        p.i += 1;
        let mut label = Vec::new();
        let cmd = match c {
            b'{' => {
                open.push(cmds.len());
                Cmd::Block(0)
            }
            b'}' => {
                let Some(o) = open.pop() else {
                    return Err(p.err("unexpected `}'"));
                };
                let here = cmds.len();
                if let Some(Command {
                    cmd: Cmd::Block(end),
                    ..
                }) = cmds.get_mut(o)
                {
                    *end = here;
                }
                Cmd::End
            }
            b's' => {
                let delim = p.peek().ok_or_else(|| p.err("unterminated `s' command"))?;
                if delim == b'\n' || delim == b'\\' {
                    return Err(p.err("unterminated `s' command"));
                }
                p.i += 1;
                let re_text = p.delimited(delim, true)?;
                let rep_text = p.delimited(delim, false)?;
                let (mut global, mut nth, mut print, mut icase, mut write) =
                    (false, 1usize, false, false, None);
                loop {
                    match p.peek() {
                        Some(b'g') => global = true,
                        Some(b'p') => print = true,
                        Some(b'i' | b'I') => icase = true,
                        Some(b'm' | b'M' | b'e') => {}
                        Some(d) if d.is_ascii_digit() => {
                            nth = p.number().unwrap_or(1).max(1);
                            continue;
                        }
                        Some(b'w') => {
                            p.i += 1;
                            write = Some(p.word(false));
                            break;
                        }
                        _ => break,
                    }
                    p.i += 1;
                }
                Cmd::Subst {
                    re: p.regex(&re_text, icase)?,
                    rep: replacement(&rep_text),
                    global,
                    nth,
                    print,
                    write,
                }
            }
            b'y' => {
                let delim = p.peek().ok_or_else(|| p.err("unterminated `y' command"))?;
                p.i += 1;
                let a = unescape(&p.delimited(delim, false)?);
                let b = unescape(&p.delimited(delim, false)?);
                if a.len() != b.len() {
                    return Err(p.err("strings for `y' command are different lengths"));
                }
                Cmd::Translate(a.into_iter().zip(b).collect())
            }
            b'p' | b'P' | b'd' | b'D' | b'n' | b'N' | b'g' | b'G' | b'h' | b'H' | b'x' | b'='
            | b'l' | b'z' | b'F' => Cmd::Simple(c),
            b'a' | b'i' | b'c' => Cmd::Text(c, p.text()),
            b'q' | b'Q' => {
                p.blanks();
                let code = p.number().unwrap_or(0) as i32;
                Cmd::Quit(c, code)
            }
            b'b' | b't' | b'T' => Cmd::Branch(c, p.word(true)),
            b':' => {
                label = p.word(true);
                if label.is_empty() {
                    return Err(p.err("\":\" lacks a label"));
                }
                Cmd::Label
            }
            b'r' | b'R' | b'w' | b'W' => Cmd::File(c, p.word(false)),
            other => return Err(p.err(&format!("unknown command: `{}'", other as char))),
        };
        cmds.push(Command {
            a1,
            a2,
            negate,
            cmd,
            label,
        });
    }
    if !open.is_empty() {
        return Err(p.err("unmatched `{'"));
    }
    Ok(cmds)
}

fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            out.push(match s[i + 1] {
                b'n' => b'\n',
                b't' => b'\t',
                b'\\' => b'\\',
                other => other,
            });
            i += 2;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}
