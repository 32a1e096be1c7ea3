//! POSIX regular expressions (BRE and ERE, with GNU's `\+ \? \| \< \> \w`)
//! translated to the `regex` crate's syntax and compiled with its bytes
//! API. Backreferences have no translation: they are refused with a clear
//! message.

use regex::bytes::{Regex, RegexBuilder};

fn push_literal(out: &mut String, s: &[u8]) {
    match std::str::from_utf8(s) {
        Ok(t) => out.push_str(&regex::escape(t)),
        Err(_) => {
            for &b in s {
                out.push_str(&format!("(?-u:\\x{b:02X})"));
            }
        }
    }
}

/// Length of the UTF-8 sequence starting at `p[i]` (1 if invalid).
fn seq_len(p: &[u8], i: usize) -> usize {
    let n = match p[i] {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    };
    if i + n <= p.len() && std::str::from_utf8(&p[i..i + n]).is_ok() {
        n
    } else {
        1
    }
}

/// Reads an interval body (`m`, `m,`, `m,n`, `,n`) starting at `p[i]`,
/// ending at `close` (`}` or `\}`); returns the translation and the index
/// after it.
fn interval(p: &[u8], i: usize, close: &[u8]) -> Option<(String, usize)> {
    let rest = &p[i..];
    let end = rest.windows(close.len()).position(|w| w == close)?;
    let body = std::str::from_utf8(&rest[..end]).ok()?;
    if body.is_empty() || !body.chars().all(|c| c.is_ascii_digit() || c == ',') {
        return None;
    }
    let text = match body.split_once(',') {
        Some(("", n)) => format!("{{0,{n}}}"),
        Some((m, n)) => {
            if n.contains(',') {
                return None;
            }
            format!("{{{m},{n}}}")
        }
        None => format!("{{{body}}}"),
    };
    Some((text, i + end + close.len()))
}

/// Translates a bracket expression starting at `p[i] == '['`.
fn bracket(p: &[u8], i: usize) -> Result<(String, usize), String> {
    let mut out = String::from("[");
    let mut j = i + 1;
    if p.get(j) == Some(&b'^') {
        out.push('^');
        j += 1;
    }
    let mut first = true;
    loop {
        let Some(&c) = p.get(j) else {
            return Err("unmatched [, [^, [:, [., or [=".into());
        };
        if c == b']' && !first {
            out.push(']');
            return Ok((out, j + 1));
        }
        first = false;
        if c == b'[' && matches!(p.get(j + 1), Some(b':' | b'.' | b'=')) {
            let kind = p[j + 1];
            let close = [kind, b']'];
            let rest = &p[j + 2..];
            let Some(end) = rest.windows(2).position(|w| w == close) else {
                return Err("unmatched [, [^, [:, [., or [=".into());
            };
            let name = &rest[..end];
            if kind == b':' {
                out.push_str("[:");
                out.push_str(&String::from_utf8_lossy(name));
                out.push_str(":]");
            } else {
                push_literal(&mut out, name);
            }
            j += 2 + end + 2;
            continue;
        }
        match c {
            b'\\' | b'[' | b'&' | b'~' => {
                out.push('\\');
                out.push(c as char);
            }
            b'-' => {
                let at_start = out.ends_with('[') || out.ends_with("[^");
                if at_start || p.get(j + 1) == Some(&b']') {
                    out.push_str("\\-");
                } else {
                    out.push('-');
                }
            }
            _ => {
                let n = seq_len(p, j);
                if n == 1 && c >= 0x80 {
                    out.push_str(&format!("\\x{c:02X}"));
                } else {
                    out.push_str(&String::from_utf8_lossy(&p[j..j + n]));
                }
                j += n;
                continue;
            }
        }
        j += 1;
    }
}

/// Translates a POSIX regular expression (`ere` selects extended syntax).
pub fn translate(p: &[u8], ere: bool) -> Result<String, String> {
    let mut out = String::new();
    let mut i = 0;
    let n = p.len();
    let mut at_start = true;
    while i < n {
        let c = p[i];
        let mut atom = true;
        match c {
            b'\\' => {
                let Some(&d) = p.get(i + 1) else {
                    return Err("trailing backslash (\\)".into());
                };
                i += 2;
                match d {
                    b'1'..=b'9' => {
                        return Err(format!(
                            "backreferences (\\{}) are not supported by this shell's regular expressions",
                            d as char
                        ));
                    }
                    b'(' if !ere => {
                        out.push('(');
                        at_start = true;
                        continue;
                    }
                    b')' if !ere => {
                        out.push(')');
                    }
                    b'|' if !ere => {
                        out.push('|');
                        at_start = true;
                        continue;
                    }
                    b'{' if !ere => match interval(p, i, b"\\}") {
                        Some((t, next)) => {
                            out.push_str(&t);
                            i = next;
                        }
                        None => return Err("invalid content of \\{\\}".into()),
                    },
                    b'+' | b'?' if !ere => {
                        if at_start {
                            push_literal(&mut out, &[d]);
                        } else {
                            out.push(d as char);
                        }
                    }
                    b'<' | b'>' => {
                        out.push_str("\\b");
                        atom = false;
                    }
                    b'b' | b'B' | b'w' | b'W' | b's' | b'S' => {
                        out.push('\\');
                        out.push(d as char);
                    }
                    b'n' => out.push_str("\\n"),
                    b't' => out.push_str("\\t"),
                    b'`' => out.push_str("\\A"),
                    b'\'' => out.push_str("\\z"),
                    _ => push_literal(&mut out, &p[i - 1..i - 1 + seq_len(p, i - 1)]),
                }
                if d >= 0x80 {
                    i = i - 1 + seq_len(p, i - 1);
                }
            }
            b'[' => {
                let (t, next) = bracket(p, i)?;
                out.push_str(&t);
                i = next;
            }
            b'*' => {
                if at_start {
                    out.push_str("\\*");
                } else {
                    out.push('*');
                }
                i += 1;
            }
            b'^' => {
                if ere || at_start {
                    out.push('^');
                    i += 1;
                    at_start = true;
                    continue;
                }
                out.push_str("\\^");
                i += 1;
            }
            b'$' => {
                let rest = &p[i + 1..];
                let at_end = rest.is_empty()
                    || (!ere && (rest.starts_with(b"\\)") || rest.starts_with(b"\\|")));
                if ere || at_end {
                    out.push('$');
                } else {
                    out.push_str("\\$");
                }
                i += 1;
            }
            b'(' | b'|' if ere => {
                out.push(c as char);
                i += 1;
                at_start = true;
                continue;
            }
            b')' if ere => {
                out.push(')');
                i += 1;
            }
            b'+' | b'?' if ere => {
                if at_start {
                    push_literal(&mut out, &[c]);
                } else {
                    out.push(c as char);
                }
                i += 1;
            }
            b'{' if ere => match interval(p, i + 1, b"}") {
                Some((t, next)) if !at_start => {
                    out.push_str(&t);
                    i = next;
                }
                _ => {
                    out.push_str("\\{");
                    i += 1;
                }
            },
            b'.' => {
                out.push('.');
                i += 1;
            }
            _ => {
                let len = seq_len(p, i);
                push_literal(&mut out, &p[i..i + len]);
                i += len;
            }
        }
        if atom {
            at_start = false;
        }
    }
    Ok(out)
}

/// Compiles a POSIX regular expression.
pub fn compile(p: &[u8], ere: bool, icase: bool) -> Result<Regex, String> {
    let t = translate(p, ere)?;
    build(&t, icase)
}

/// Compiles a fixed string (`grep -F`).
pub fn compile_fixed(p: &[u8], icase: bool) -> Result<Regex, String> {
    let mut t = String::new();
    push_literal(&mut t, p);
    build(&t, icase)
}

/// Compiles a regex in the crate's own syntax (`rg`).
pub fn build(t: &str, icase: bool) -> Result<Regex, String> {
    RegexBuilder::new(t)
        .case_insensitive(icase)
        .size_limit(16 << 20)
        .nest_limit(200)
        .build()
        .map_err(|e| match e {
            regex::Error::Syntax(s) => {
                let first = s.lines().last().unwrap_or("invalid regular expression");
                format!(
                    "invalid regular expression: {}",
                    first.trim_start_matches("error: ")
                )
            }
            regex::Error::CompiledTooBig(_) => "regular expression too big".to_string(),
            _ => "invalid regular expression".to_string(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, ere: bool, s: &str) -> bool {
        compile(p.as_bytes(), ere, false)
            .map(|r| r.is_match(s.as_bytes()))
            .unwrap_or(false)
    }

    #[test]
    fn bre() {
        assert!(m("a\\(b\\)*c", false, "abbc"));
        assert!(m("a+", false, "a+"));
        assert!(!m("a+", false, "aa"));
        assert!(m("a\\+", false, "aa"));
        assert!(m("^\\./", false, "./x"));
        assert!(m("x\\{2\\}", false, "xx"));
        assert!(m("*a", false, "*a"));
        assert!(m("a|b", false, "a|b"));
        assert!(m("a\\|b", false, "b"));
        assert!(m("[]a]", false, "]"));
        assert!(m("[[:digit:]]\\+", false, "42"));
        assert!(m("a$b", false, "a$b"));
        assert!(m("\\<foo\\>", false, "a foo b"));
    }

    #[test]
    fn ere() {
        assert!(m("^(PWD|OLDPWD|__plimsoll_)", true, "PWD=x"));
        assert!(m("a{2,}", true, "aa"));
        assert!(m("a{,2}b", true, "ab"));
        assert!(m("x{", true, "x{"));
        assert!(m("[a\\]", true, "\\"));
        assert!(m("[a-c&&]", true, "&"));
    }

    #[test]
    fn backreferences_are_refused() {
        let e = compile(b"\\(a\\)\\1", false, false).unwrap_err();
        assert!(e.contains("backreferences"));
    }
}
