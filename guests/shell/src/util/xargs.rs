//! `xargs [-0] [-d DELIM] [-n N] [-L N] [-I REPL] [-r] [-t] [-P N]
//! [COMMAND [ARGS…]]`: builds command lines from standard input and runs
//! them one after another (`-P` is accepted; there is no parallelism).

use crate::bytes::lossy;
use crate::exec::{Ctl, R, Shell};
use crate::io::{Fd, Input, Io, put};
use crate::limits::{FIELD_OVERHEAD, MAX_EXPANSION, MAX_FIELDS, MAX_WORD};

/// Splits input the way xargs does by default: blanks and newlines, with
/// quotes and backslashes.
fn split_default(data: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    let mut in_word = false;
    let mut i = 0;
    while i < data.len() {
        let c = data[i];
        match c {
            b' ' | b'\t' | b'\n' => {
                if in_word {
                    if out.len() > MAX_FIELDS {
                        return Err(format!("more than {MAX_FIELDS} arguments in the input"));
                    }
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            b'\'' | b'"' => {
                let end = data[i + 1..]
                    .iter()
                    .position(|&d| d == c || d == b'\n')
                    .map(|p| p + i + 1)
                    .filter(|&p| data[p] == c)
                    .ok_or_else(|| "unmatched quote; by default quotes are special to xargs unless you use the -0 option".to_string())?;
                cur.extend_from_slice(&data[i + 1..end]);
                in_word = true;
                i = end;
            }
            b'\\' if i + 1 < data.len() => {
                cur.push(data[i + 1]);
                in_word = true;
                i += 1;
            }
            _ => {
                cur.push(c);
                in_word = true;
            }
        }
        i += 1;
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// `xargs` (a builtin: it runs commands).
pub fn xargs(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let err = |m: &str| {
        let _ = put(&io.stderr(), format!("xargs: {m}\n").as_bytes());
    };
    let mut delim: Option<u8> = None;
    let mut max_args: Option<usize> = None;
    let mut max_lines: Option<usize> = None;
    let mut replace: Option<Vec<u8>> = None;
    let mut no_empty = false;
    let mut trace = false;
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if !a.starts_with(b"-") || a == b"-" {
            break;
        }
        if a == b"--" {
            i += 1;
            break;
        }
        let take = |i: &mut usize, inline: &[u8]| -> Vec<u8> {
            if !inline.is_empty() {
                inline.to_vec()
            } else {
                *i += 1;
                argv.get(*i).cloned().unwrap_or_default()
            }
        };
        match a.get(1).copied() {
            Some(b'0') => delim = Some(0),
            Some(b'd') => {
                delim = Some(
                    crate::util::printf::expand_b(&take(&mut i, &a[2..]))
                        .0
                        .first()
                        .copied()
                        .unwrap_or(b'\n'),
                )
            }
            Some(b'n') => max_args = lossy(&take(&mut i, &a[2..])).parse().ok(),
            Some(b'L') | Some(b'l') => {
                max_lines = Some(lossy(&take(&mut i, &a[2..])).parse().unwrap_or(1))
            }
            Some(b'I') => replace = Some(take(&mut i, &a[2..])),
            Some(b'i') => {
                replace = Some(if a.len() > 2 {
                    a[2..].to_vec()
                } else {
                    b"{}".to_vec()
                })
            }
            Some(b'r') => no_empty = true,
            Some(b't') => trace = true,
            Some(b'P') | Some(b's') | Some(b'E') => {
                let _ = take(&mut i, &a[2..]);
            }
            Some(b'x') | Some(b'p') => {}
            Some(b'-') => match a.as_slice() {
                b"--null" => delim = Some(0),
                b"--no-run-if-empty" => no_empty = true,
                b"--verbose" => trace = true,
                _ => {}
            },
            _ => {
                err(&format!("invalid option -- '{}'", lossy(&a[1..])));
                return Ok(1);
            }
        }
        i += 1;
    }
    let mut cmd: Vec<Vec<u8>> = argv[i..].to_vec();
    if cmd.is_empty() {
        cmd.push(b"echo".to_vec());
    }
    let data = io.stdin().borrow_mut().take_all();
    let items: Vec<Vec<u8>> = match delim {
        Some(d) => {
            let mut v: Vec<Vec<u8>> = Vec::new();
            for s in data.split(|&c| c == d) {
                if v.len() > MAX_FIELDS {
                    err(&format!("more than {MAX_FIELDS} arguments in the input"));
                    return Ok(1);
                }
                v.push(s.to_vec());
            }
            if v.last().is_some_and(|l| l.is_empty()) {
                v.pop();
            }
            v
        }
        None if replace.is_some() || max_lines.is_some() => {
            let mut v = Vec::new();
            for l in crate::bytes::lines(&data) {
                let l = crate::bytes::trim_blanks(l);
                if l.is_empty() {
                    continue;
                }
                if v.len() > MAX_FIELDS {
                    err(&format!("more than {MAX_FIELDS} arguments in the input"));
                    return Ok(1);
                }
                v.push(l.to_vec());
            }
            v
        }
        None => match split_default(&data) {
            Ok(v) => v,
            Err(e) => {
                err(&e);
                return Ok(1);
            }
        },
    };
    drop(data);
    let mut run = Runner {
        status: 0,
        trace,
        io,
        child_io: io.clone(),
    };
    run.child_io.fds[0] = Some(Fd::In(Input::empty()));
    // One command line at a time: nothing is built ahead.
    if let Some(r) = &replace {
        for it in &items {
            let mut line = Vec::with_capacity(cmd.len());
            let mut size = 0usize;
            for a in &cmd {
                let out = replace_all(a, r, it, MAX_WORD).ok_or(());
                let Ok(out) = out else {
                    err(&format!(
                        "argument line too long (over {} MiB)",
                        MAX_WORD >> 20
                    ));
                    return Ok(1);
                };
                size += out.len() + FIELD_OVERHEAD;
                if size > MAX_EXPANSION {
                    err(&format!(
                        "argument line too long (over {} MiB)",
                        MAX_EXPANSION >> 20
                    ));
                    return Ok(1);
                }
                line.push(out);
            }
            if let Some(st) = run.one(sh, &line)? {
                return Ok(st);
            }
        }
    } else {
        let per = max_args.or(max_lines).unwrap_or(usize::MAX).max(1);
        for chunk in items.chunks(per.min(items.len().max(1))) {
            let mut line = cmd.clone();
            line.extend_from_slice(chunk);
            if let Some(st) = run.one(sh, &line)? {
                return Ok(st);
            }
        }
        if items.is_empty()
            && !no_empty
            && let Some(st) = run.one(sh, &cmd)?
        {
            return Ok(st);
        }
    }
    Ok(run.status)
}

/// `a` with every `r` replaced by `with`; `None` past `cap` bytes.
fn replace_all(a: &[u8], r: &[u8], with: &[u8], cap: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < a.len() {
        if !r.is_empty() && a[k..].starts_with(r) {
            if out.len() + with.len() > cap {
                return None;
            }
            out.extend_from_slice(with);
            k += r.len();
        } else {
            out.push(a[k]);
            k += 1;
        }
    }
    Some(out)
}

/// Runs the command lines and keeps xargs's status.
struct Runner<'a> {
    status: i32,
    trace: bool,
    io: &'a Io,
    child_io: Io,
}

impl Runner<'_> {
    /// Runs one command line; `Some(status)` ends xargs.
    fn one(&mut self, sh: &mut Shell, b: &[Vec<u8>]) -> Result<Option<i32>, Ctl> {
        let Some(_held) = crate::limits::held::hold(b) else {
            let msg = format!("xargs: {}\n", crate::limits::held::refused());
            let _ = put(&self.io.stderr(), msg.as_bytes());
            return Ok(Some(126));
        };
        if self.trace {
            let _ = put(
                &self.io.stderr(),
                &[b.join(&b' ').as_slice(), b"\n"].concat(),
            );
        }
        let st = match sh.dispatch_external(b, &self.child_io) {
            Ok(s) => s,
            Err(Ctl::Exit(s)) => s,
            Err(e) => return Err(e),
        };
        if st == 255 {
            let _ = put(
                &self.io.stderr(),
                format!(
                    "xargs: {}: exited with status 255; aborting\n",
                    lossy(&b[0])
                )
                .as_bytes(),
            );
            return Ok(Some(124));
        }
        if st == 127 {
            return Ok(Some(127));
        }
        if st != 0 {
            self.status = 123;
        }
        Ok(None)
    }
}
