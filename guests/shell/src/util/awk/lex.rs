//! awk's tokens. Whether `/` starts a regex or divides depends on the
//! previous token, so the lexer tracks it.

use crate::limits::MAX_PROGRAM_TOKENS;

/// A token.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A number literal.
    Num(f64),
    /// A string literal (escapes decoded).
    Str(Vec<u8>),
    /// A regex literal (its text).
    Re(Vec<u8>),
    /// A name (variable, function or builtin).
    Name(String),
    /// A name directly followed by `(` (a function call).
    FuncName(String),
    /// A keyword.
    Kw(&'static str),
    /// Punctuation or an operator.
    Op(&'static str),
    /// A newline (a statement terminator).
    Newline,
    /// End of the program.
    Eof,
}

const KEYWORDS: [&str; 17] = [
    "BEGIN", "END", "function", "func", "if", "else", "while", "for", "do", "break", "continue",
    "next", "nextfile", "exit", "return", "delete", "getline",
];

const OPS: [&str; 40] = [
    "**=", "&&", "||", "==", "<=", ">=", "!=", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=",
    ">>", "!~", "**", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^", "!",
    ">", "<", "|", "?", ":", "~", "=",
];

/// Splits `src` into tokens.
pub fn lex(src: &[u8]) -> Result<Vec<Tok>, String> {
    let mut out: Vec<Tok> = Vec::new();
    let mut i = 0;
    while i < src.len() {
        if out.len() > MAX_PROGRAM_TOKENS {
            return Err(format!(
                "program too large (more than {MAX_PROGRAM_TOKENS} tokens)"
            ));
        }
        let c = src[i];
        match c {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\\' if src.get(i + 1) == Some(&b'\n') => i += 2,
            b'\\' if src.get(i + 1) == Some(&b'\r') && src.get(i + 2) == Some(&b'\n') => i += 3,
            b'#' => {
                while i < src.len() && src[i] != b'\n' {
                    i += 1;
                }
            }
            b'\n' => {
                out.push(Tok::Newline);
                i += 1;
            }
            b'"' => {
                i += 1;
                let mut s = Vec::new();
                loop {
                    let Some(&d) = src.get(i) else {
                        return Err("unterminated string".into());
                    };
                    i += 1;
                    match d {
                        b'"' => break,
                        b'\n' => return Err("unterminated string".into()),
                        b'\\' => {
                            let Some(&e) = src.get(i) else {
                                return Err("unterminated string".into());
                            };
                            match e {
                                b'"' | b'/' | b'\\' => {
                                    s.push(e);
                                    i += 1;
                                }
                                b'\n' => i += 1,
                                _ => {
                                    let (b, used) = crate::bytes::backslash_escape(&src[i..], true);
                                    s.extend(b);
                                    i += used.max(1);
                                }
                            }
                        }
                        _ => s.push(d),
                    }
                }
                out.push(Tok::Str(s));
            }
            b'/' if regex_allowed(out.last()) => {
                i += 1;
                let mut s = Vec::new();
                let mut in_bracket = false;
                loop {
                    let Some(&d) = src.get(i) else {
                        return Err("unterminated regexp".into());
                    };
                    i += 1;
                    match d {
                        b'\n' => return Err("unterminated regexp".into()),
                        b'[' => {
                            in_bracket = true;
                            s.push(d);
                            if src.get(i) == Some(&b'^') {
                                s.push(b'^');
                                i += 1;
                            }
                            if src.get(i) == Some(&b']') {
                                s.push(b']');
                                i += 1;
                            }
                        }
                        b']' => {
                            in_bracket = false;
                            s.push(d);
                        }
                        b'/' if !in_bracket => break,
                        b'\\' => {
                            if src.get(i) == Some(&b'/') {
                                s.push(b'/');
                            } else {
                                s.push(b'\\');
                                if let Some(&e) = src.get(i) {
                                    s.push(e);
                                }
                            }
                            i += 1;
                        }
                        _ => s.push(d),
                    }
                }
                out.push(Tok::Re(s));
            }
            b'0'..=b'9' | b'.'
                if c != b'.' || src.get(i + 1).is_some_and(|d| d.is_ascii_digit()) =>
            {
                let start = i;
                if c == b'0' && matches!(src.get(i + 1), Some(b'x' | b'X')) {
                    i += 2;
                    while i < src.len() && src[i].is_ascii_hexdigit() {
                        i += 1;
                    }
                    let v = i64::from_str_radix(&String::from_utf8_lossy(&src[start + 2..i]), 16)
                        .unwrap_or(0);
                    out.push(Tok::Num(v as f64));
                    continue;
                }
                while i < src.len() && (src[i].is_ascii_digit() || src[i] == b'.') {
                    i += 1;
                }
                if i < src.len() && (src[i] == b'e' || src[i] == b'E') {
                    let save = i;
                    i += 1;
                    if i < src.len() && (src[i] == b'+' || src[i] == b'-') {
                        i += 1;
                    }
                    if i < src.len() && src[i].is_ascii_digit() {
                        while i < src.len() && src[i].is_ascii_digit() {
                            i += 1;
                        }
                    } else {
                        i = save;
                    }
                }
                let text = String::from_utf8_lossy(&src[start..i]).into_owned();
                out.push(Tok::Num(text.parse().unwrap_or(0.0)));
            }
            c if c == b'_' || c.is_ascii_alphabetic() => {
                let start = i;
                while i < src.len() && (src[i] == b'_' || src[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                let name = String::from_utf8_lossy(&src[start..i]).into_owned();
                if let Some(k) = KEYWORDS.iter().find(|k| **k == name) {
                    out.push(Tok::Kw(if *k == "func" { "function" } else { k }));
                } else if src.get(i) == Some(&b'(') {
                    out.push(Tok::FuncName(name));
                } else {
                    out.push(Tok::Name(name));
                }
            }
            b'$' => {
                out.push(Tok::Op("$"));
                i += 1;
            }
            _ => {
                let rest = &src[i..];
                let Some(op) = OPS.iter().find(|o| rest.starts_with(o.as_bytes())) else {
                    return Err(format!("syntax error at `{}'", c as char));
                };
                let op: &'static str = if *op == "**" {
                    "^"
                } else if *op == "**=" {
                    "^="
                } else {
                    op
                };
                out.push(Tok::Op(op));
                i += if rest.starts_with(b"**") {
                    if rest.starts_with(b"**=") { 3 } else { 2 }
                } else {
                    op.len()
                };
            }
        }
    }
    out.push(Tok::Eof);
    Ok(out)
}

fn regex_allowed(prev: Option<&Tok>) -> bool {
    match prev {
        None => true,
        Some(Tok::Num(_) | Tok::Str(_) | Tok::Name(_) | Tok::Re(_)) => false,
        Some(Tok::Op(o)) => !matches!(*o, ")" | "]" | "$" | "++" | "--"),
        Some(Tok::Kw(k)) => *k != "getline",
        _ => true,
    }
}
