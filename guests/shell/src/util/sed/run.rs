//! Running a parsed sed script over input lines: addresses and ranges,
//! the pattern and hold spaces, and every command.

use super::parse::{Addr, Addr2, Cmd, Command, Rep};
use crate::limits::MAX_SPACE;
use crate::util::Ctx;
use regex::bytes::{Captures, Regex};
use std::collections::HashMap;
use std::io::Write;

/// A `w` file: open from its first write on.
pub(super) enum WFile {
    /// `/dev/stdout`: into the output, in order.
    Out,
    /// A file.
    File(std::io::BufWriter<std::fs::File>),
    /// Could not be opened (reported once).
    Failed,
}

pub(super) struct State {
    pub(super) cmds: Vec<Command>,
    pub(super) labels: HashMap<Vec<u8>, usize>,
    /// Per command: the range is open (and until which line for `+N`).
    pub(super) active: Vec<Option<usize>>,
    pub(super) hold: Vec<u8>,
    pub(super) quiet: bool,
    pub(super) last_re: Option<Regex>,
    pub(super) writes: HashMap<Vec<u8>, WFile>,
    /// A `w` file could not be opened or written.
    pub(super) write_failed: bool,
    pub(super) quit: Option<i32>,
}

/// The input, read a line at a time, with whether the last line ended in
/// a newline.
pub(super) struct Input<'a> {
    data: &'a [u8],
    last_nl: bool,
    pos: usize,
}

impl<'a> Input<'a> {
    pub(super) fn new(data: &'a [u8]) -> Input<'a> {
        let last_nl = data.is_empty() || data.ends_with(b"\n");
        Input {
            data,
            last_nl,
            pos: 0,
        }
    }
    fn next(&mut self) -> Option<Vec<u8>> {
        let rest = self.data.get(self.pos..).filter(|r| !r.is_empty())?;
        let n = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
        self.pos += (n + 1).min(rest.len());
        Some(rest[..n].to_vec())
    }
    fn is_last(&self) -> bool {
        self.pos >= self.data.len()
    }
}

impl State {
    /// Writes `text` and a newline to the `w` file `name`.
    fn write_to(&mut self, u: &Ctx, name: &[u8], text: &[u8], out: &mut Vec<u8>) {
        if !self.writes.contains_key(name) {
            let f = if name == b"/dev/stdout" {
                WFile::Out
            } else {
                match u.host(name).and_then(std::fs::File::create) {
                    Ok(f) => WFile::File(std::io::BufWriter::new(f)),
                    Err(e) => {
                        u.err(format!(
                            "couldn't open file {}: {}",
                            String::from_utf8_lossy(name),
                            crate::fs::error_text(&e)
                        ));
                        self.write_failed = true;
                        WFile::Failed
                    }
                }
            };
            self.writes.insert(name.to_vec(), f);
        }
        match self.writes.get_mut(name) {
            Some(WFile::Out) => {
                out.extend_from_slice(text);
                out.push(b'\n');
            }
            Some(WFile::File(w)) => {
                let written = w.write_all(text).and_then(|_| w.write_all(b"\n"));
                self.write_failed |= written.is_err();
            }
            _ => {}
        }
    }

    /// Flushes the `w` files.
    pub(super) fn close_writes(&mut self) {
        for (_, w) in self.writes.drain() {
            if let WFile::File(mut f) = w
                && f.flush().is_err()
            {
                self.write_failed = true;
            }
        }
    }
}

/// Output pending beyond which it is handed on.
const CHUNK: usize = 64 << 10;

fn too_large(what: &str) -> String {
    format!("{what} exceeds the limit of {} MiB", MAX_SPACE >> 20)
}

fn apply_case(out: &mut Vec<u8>, text: &[u8], mode: u8, one: &mut u8) {
    for &c in text {
        let c = match *one {
            b'u' => {
                *one = 0;
                c.to_ascii_uppercase()
            }
            b'l' => {
                *one = 0;
                c.to_ascii_lowercase()
            }
            _ => match mode {
                b'U' => c.to_ascii_uppercase(),
                b'L' => c.to_ascii_lowercase(),
                _ => c,
            },
        };
        out.push(c);
    }
}

fn expand(rep: &[Rep], caps: &Captures) -> Vec<u8> {
    let mut out = Vec::new();
    let mut mode = 0u8;
    let mut one = 0u8;
    for r in rep {
        match r {
            Rep::Lit(b) => apply_case(&mut out, b, mode, &mut one),
            Rep::Group(n) => {
                let g = caps.get(*n).map(|m| m.as_bytes()).unwrap_or_default();
                apply_case(&mut out, g, mode, &mut one);
            }
            Rep::Case(c) => match c {
                b'u' | b'l' => one = *c,
                b'E' => mode = 0,
                other => mode = *other,
            },
        }
    }
    out
}

impl State {
    fn regex(&mut self, re: &Option<Regex>) -> Option<Regex> {
        match re {
            Some(r) => {
                self.last_re = Some(r.clone());
                Some(r.clone())
            }
            None => self.last_re.clone(),
        }
    }

    fn addr_match(&mut self, a: &Addr, line: usize, last: bool, ps: &[u8]) -> bool {
        match a {
            Addr::Line(n) => line == *n,
            Addr::Last => last,
            Addr::Step(first, step) => {
                if *step == 0 {
                    line == *first
                } else {
                    line >= *first && (line - first).is_multiple_of(*step)
                }
            }
            Addr::Re(re) => self.regex(re).is_some_and(|r| r.is_match(ps)),
        }
    }

    fn selected(&mut self, i: usize, line: usize, last: bool, ps: &[u8]) -> bool {
        let c = self.cmds[i].clone();
        let hit = match (&c.a1, &c.a2) {
            (None, _) => true,
            (Some(a1), None) => self.addr_match(a1, line, last, ps),
            (Some(a1), Some(a2)) => {
                if let Some(end) = self.active[i] {
                    // In range: does this line close it?
                    let closes = match a2 {
                        Addr2::At(Addr::Line(n)) => line >= *n,
                        Addr2::At(a) => self.addr_match(a, line, last, ps),
                        Addr2::Plus(_) => line >= end,
                        Addr2::Multiple(m) => *m == 0 || line.is_multiple_of(*m),
                    };
                    if closes {
                        self.active[i] = None;
                    }
                    true
                } else {
                    let zero = matches!(a1, Addr::Line(0));
                    let opens = zero || self.addr_match(a1, line, last, ps);
                    if opens {
                        let end = match a2 {
                            Addr2::Plus(n) => line + n,
                            _ => 0,
                        };
                        let closes_now = match a2 {
                            Addr2::At(Addr::Line(n)) => *n <= line,
                            Addr2::At(a) if zero => self.addr_match(a, line, last, ps),
                            Addr2::Plus(n) => *n == 0,
                            Addr2::Multiple(m) => *m == 0 || line.is_multiple_of(*m),
                            _ => false,
                        };
                        if !closes_now {
                            self.active[i] = Some(end);
                        }
                    }
                    opens
                }
            }
        };
        hit != c.negate
    }
}

enum End {
    /// Print (unless -n) and go on.
    Cycle,
    /// `d`: no print.
    Delete,
    /// `D` with a newline: restart without reading.
    Restart,
}

/// Runs the script over one input stream. Output collects in `out` and is
/// handed to `drain` whenever it passes 64 KiB (`drain` returns `false` to
/// stop: the reader is gone). `Ok(false)` when stopped; `Err` when the
/// pattern or hold space would pass [`MAX_SPACE`].
pub(super) fn run(
    st: &mut State,
    input: &mut Input,
    out: &mut Vec<u8>,
    drain: &mut dyn FnMut(&mut Vec<u8>) -> bool,
    u: &Ctx,
    line_no: &mut usize,
) -> Result<bool, String> {
    let mut ps: Vec<u8> = Vec::new();
    let mut restart = false;
    loop {
        if !restart {
            let Some(l) = input.next() else { break };
            ps = l;
            *line_no += 1;
        }
        restart = false;
        let mut append: Vec<u8> = Vec::new();
        let mut subst_flag = false;
        let mut pc = 0;
        let mut end = End::Cycle;
        let last_line = |input: &Input| input.is_last();
        while pc < st.cmds.len() {
            let last = last_line(input);
            if !st.selected(pc, *line_no, last, &ps) {
                if let Cmd::Block(e) = st.cmds[pc].cmd {
                    pc = e + 1;
                } else {
                    pc += 1;
                }
                continue;
            }
            if out.len() >= CHUNK && !drain(out) {
                return Ok(false);
            }
            if ps.len() > MAX_SPACE || append.len() > MAX_SPACE {
                return Err(too_large("pattern space"));
            }
            if st.hold.len() > MAX_SPACE {
                return Err(too_large("hold space"));
            }
            let cmd = st.cmds[pc].cmd.clone();
            pc += 1;
            match cmd {
                Cmd::Block(_) | Cmd::End | Cmd::Label => {}
                Cmd::Subst {
                    re,
                    rep,
                    global,
                    nth,
                    print,
                    write,
                } => {
                    let Some(re) = st.regex(&re) else {
                        continue;
                    };
                    let mut res = Vec::with_capacity(ps.len());
                    let mut last_end = 0;
                    let mut n = 0;
                    let mut did = false;
                    for caps in re.captures_iter(&ps) {
                        let Some(m) = caps.get(0) else { continue };
                        n += 1;
                        if n < nth || (did && !global) {
                            continue;
                        }
                        res.extend_from_slice(&ps[last_end..m.start()]);
                        res.extend(expand(&rep, &caps));
                        if res.len() > MAX_SPACE {
                            return Err(too_large("pattern space"));
                        }
                        last_end = m.end();
                        did = true;
                    }
                    if did {
                        res.extend_from_slice(&ps[last_end..]);
                        ps = res;
                        subst_flag = true;
                        if print {
                            out.extend_from_slice(&ps);
                            out.push(b'\n');
                        }
                        if let Some(w) = write {
                            st.write_to(u, &w, &ps.clone(), out);
                        }
                    }
                }
                Cmd::Translate(map) => {
                    for c in ps.iter_mut() {
                        if let Some((_, to)) = map.iter().find(|(f, _)| f == c) {
                            *c = *to;
                        }
                    }
                }
                Cmd::Simple(c) => match c {
                    b'p' => {
                        out.extend_from_slice(&ps);
                        out.push(b'\n');
                    }
                    b'P' => {
                        let first = ps.split(|&c| c == b'\n').next().unwrap_or_default();
                        out.extend_from_slice(first);
                        out.push(b'\n');
                    }
                    b'd' => {
                        end = End::Delete;
                        break;
                    }
                    b'D' => match ps.iter().position(|&c| c == b'\n') {
                        Some(i) => {
                            ps.drain(..=i);
                            end = End::Restart;
                            break;
                        }
                        None => {
                            end = End::Delete;
                            break;
                        }
                    },
                    b'n' => {
                        if st.quit.is_none() && !st.quiet {
                            out.extend_from_slice(&ps);
                            out.push(b'\n');
                        }
                        out.extend(std::mem::take(&mut append));
                        match input.next() {
                            Some(l) => {
                                ps = l;
                                *line_no += 1;
                            }
                            None => {
                                end = End::Delete;
                                break;
                            }
                        }
                    }
                    b'N' => match input.next() {
                        Some(l) => {
                            ps.push(b'\n');
                            ps.extend(l);
                            *line_no += 1;
                        }
                        None => break,
                    },
                    b'g' => ps = st.hold.clone(),
                    b'G' => {
                        ps.push(b'\n');
                        ps.extend_from_slice(&st.hold);
                    }
                    b'h' => st.hold = ps.clone(),
                    b'H' => {
                        st.hold.push(b'\n');
                        st.hold.extend_from_slice(&ps);
                    }
                    b'x' => std::mem::swap(&mut ps, &mut st.hold),
                    b'=' => out.extend(format!("{line_no}\n").into_bytes()),
                    b'z' => ps.clear(),
                    b'F' => out.extend_from_slice(b"-\n"),
                    b'l' => {
                        for &c in &ps {
                            match c {
                                b'\\' => out.extend_from_slice(b"\\\\"),
                                b'\n' => out.extend_from_slice(b"\\n"),
                                b'\t' => out.extend_from_slice(b"\\t"),
                                0x20..=0x7e => out.push(c),
                                _ => out.extend(format!("\\{c:03o}").into_bytes()),
                            }
                        }
                        out.extend_from_slice(b"$\n");
                    }
                    _ => {}
                },
                Cmd::Text(c, text) => match c {
                    b'a' => {
                        append.extend_from_slice(&text);
                        append.push(b'\n');
                    }
                    b'i' => {
                        out.extend_from_slice(&text);
                        out.push(b'\n');
                    }
                    _ => {
                        // `c`: at the end of a range (or always without one).
                        let in_range = st.cmds[pc - 1].a2.is_some() && st.active[pc - 1].is_some();
                        if !in_range {
                            out.extend_from_slice(&text);
                            out.push(b'\n');
                        }
                        end = End::Delete;
                        break;
                    }
                },
                Cmd::Quit(c, code) => {
                    st.quit = Some(code);
                    if c == b'Q' {
                        end = End::Delete;
                    }
                    break;
                }
                Cmd::Branch(c, label) => {
                    let jump = match c {
                        b'b' => true,
                        b't' => std::mem::take(&mut subst_flag),
                        _ => !std::mem::take(&mut subst_flag),
                    };
                    if jump {
                        pc = if label.is_empty() {
                            st.cmds.len()
                        } else {
                            st.labels.get(&label).copied().unwrap_or(st.cmds.len())
                        };
                    }
                }
                Cmd::File(c, name) => match c {
                    b'r' | b'R' => {
                        if let Ok(d) = u.read_input(&name) {
                            let d = if c == b'R' {
                                let mut l =
                                    crate::bytes::lines(&d).next().unwrap_or_default().to_vec();
                                l.push(b'\n');
                                l
                            } else {
                                d
                            };
                            append.extend(d);
                        }
                    }
                    _ => {
                        let part = if c == b'W' {
                            ps.split(|&x| x == b'\n').next().unwrap_or_default()
                        } else {
                            &ps
                        };
                        st.write_to(u, &name, part, out);
                    }
                },
            }
        }
        match end {
            End::Cycle => {
                if !st.quiet {
                    out.extend_from_slice(&ps);
                    if !input.is_last() || input.last_nl {
                        out.push(b'\n');
                    }
                }
            }
            End::Delete => {}
            End::Restart => restart = true,
        }
        out.extend(append);
        if out.len() >= CHUNK && !drain(out) {
            return Ok(false);
        }
        if st.quit.is_some() {
            break;
        }
    }
    Ok(true)
}
