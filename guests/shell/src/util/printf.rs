//! `printf` formatting (shared by the builtin and awk's `printf`): the
//! conversions `%s %b %c %d %i %u %o %x %X %e %E %f %F %g %G %q %%` with
//! flags, width and precision (`*` too).

use crate::bytes::backslash_escape;
use crate::limits::{MAX_EXPANSION, MAX_WORD};

/// A parsed conversion specification.
#[derive(Debug, Default, Clone)]
pub struct Spec {
    /// `-`
    pub left: bool,
    /// `+`
    pub plus: bool,
    /// ` `
    pub space: bool,
    /// `#`
    pub alt: bool,
    /// `0`
    pub zero: bool,
    /// Field width.
    pub width: Option<usize>,
    /// Precision.
    pub prec: Option<usize>,
    /// The conversion letter.
    pub conv: u8,
    /// The width or precision asked for was above [`MAX_WORD`] (and was
    /// clamped to it): the caller reports an error.
    pub too_large: bool,
}

/// Pads `body` to the spec's width.
pub fn pad(spec: &Spec, body: Vec<u8>, numeric: bool) -> Vec<u8> {
    let width = spec.width.unwrap_or(0);
    let len = display_len(&body);
    if len >= width {
        return body;
    }
    let fill = width - len;
    if spec.left {
        let mut b = body;
        b.extend(std::iter::repeat_n(b' ', fill));
        b
    } else if spec.zero
        && numeric
        && spec
            .prec
            .is_none_or(|_| matches!(spec.conv, b'e' | b'E' | b'f' | b'F' | b'g' | b'G'))
    {
        let sign = body
            .first()
            .is_some_and(|c| matches!(c, b'-' | b'+' | b' '));
        let prefix = if sign { 1 } else { 0 };
        let hex = body.len() >= prefix + 2 && matches!(&body[prefix..prefix + 2], b"0x" | b"0X");
        let at = prefix + if hex { 2 } else { 0 };
        let mut b = body[..at].to_vec();
        b.extend(std::iter::repeat_n(b'0', fill));
        b.extend_from_slice(&body[at..]);
        b
    } else {
        let mut b: Vec<u8> = std::iter::repeat_n(b' ', fill).collect();
        b.extend(body);
        b
    }
}

fn display_len(b: &[u8]) -> usize {
    // Width counts bytes, as in bash's printf.
    b.len()
}

/// Formats an integer conversion (`d i u o x X c`).
pub fn fmt_int(spec: &Spec, v: i64) -> Vec<u8> {
    let mut digits = match spec.conv {
        b'o' => format!("{:o}", v as u64),
        b'x' => format!("{:x}", v as u64),
        b'X' => format!("{:X}", v as u64),
        b'u' => format!("{}", v as u64),
        _ => v.unsigned_abs().to_string(),
    };
    if let Some(p) = spec.prec {
        if p == 0 && v == 0 {
            digits.clear();
        }
        if digits.len() < p {
            digits = crate::bytes::pad_left(&digits, p, '0');
        }
    }
    let mut s = String::new();
    if matches!(spec.conv, b'd' | b'i') {
        if v < 0 {
            s.push('-');
        } else if spec.plus {
            s.push('+');
        } else if spec.space {
            s.push(' ');
        }
    }
    if spec.alt && v != 0 {
        match spec.conv {
            b'o' if !digits.starts_with('0') => s.push('0'),
            b'x' => s.push_str("0x"),
            b'X' => s.push_str("0X"),
            _ => {}
        }
    }
    s.push_str(&digits);
    pad(spec, s.into_bytes(), true)
}

/// Decimals past which every `f64` has only zeros (its exact expansion
/// ends within 1074 places); `format!` refuses precisions above 65535.
const EXACT: usize = 1100;

/// `v` with `prec` decimals, any precision.
pub fn fixed(v: f64, prec: usize) -> String {
    let p = prec.min(EXACT);
    let mut s = format!("{v:.p$}");
    if prec > p && v.is_finite() {
        s.extend(std::iter::repeat_n('0', prec - p));
    }
    s
}

/// `v` in Rust's scientific form (`1.5e3`) with `prec` decimals, any
/// precision.
fn sci(v: f64, prec: usize) -> String {
    let p = prec.min(EXACT);
    let s = format!("{v:.p$e}");
    if prec <= p || !v.is_finite() {
        return s;
    }
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let zeros: String = std::iter::repeat_n('0', prec - p).collect();
    format!("{mant}{zeros}e{exp}")
}

/// `%e` text: mantissa with `prec` decimals and a two-digit exponent.
fn exp_text(v: f64, prec: usize, upper: bool) -> String {
    let s = sci(v, prec);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    let t = format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    if upper { t.to_uppercase() } else { t }
}

fn strip_zeros(s: &str) -> String {
    if !s.contains('.') {
        return s.to_string();
    }
    let (num, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let num = num.trim_end_matches('0').trim_end_matches('.');
    format!("{num}{exp}")
}

/// Formats a floating conversion (`e E f F g G`).
pub fn fmt_float(spec: &Spec, v: f64) -> Vec<u8> {
    let prec = spec.prec.unwrap_or(6);
    let upper = spec.conv.is_ascii_uppercase();
    let mut body = if v.is_nan() {
        if upper { "NAN".into() } else { "nan".into() }
    } else if v.is_infinite() {
        let t = if upper { "INF" } else { "inf" };
        if v < 0.0 { format!("-{t}") } else { t.into() }
    } else {
        match spec.conv {
            b'e' | b'E' => exp_text(v, prec, upper),
            b'g' | b'G' => {
                let p = prec.max(1);
                let x = if v == 0.0 {
                    0
                } else {
                    let e = exp_text(v, p - 1, false);
                    e.split_once('e')
                        .and_then(|(_, x)| x.parse::<i32>().ok())
                        .unwrap_or(0)
                };
                let t = if x < -4 || x >= p as i32 {
                    exp_text(v, p - 1, upper)
                } else {
                    fixed(v, (p as i64 - 1 - x as i64).max(0) as usize)
                };
                if spec.alt { t } else { strip_zeros(&t) }
            }
            _ => fixed(v, prec),
        }
    };
    if !body.starts_with('-') {
        if spec.plus {
            body.insert(0, '+');
        } else if spec.space {
            body.insert(0, ' ');
        }
    }
    pad(spec, body.into_bytes(), true)
}

/// Parses a number argument as printf does: integers in C syntax, or
/// `'c` for a character's code. `Err` keeps the value read so far.
pub fn num_arg(a: &[u8]) -> Result<i64, i64> {
    if let Some(rest) = a.strip_prefix(b"'").or_else(|| a.strip_prefix(b"\"")) {
        let s = String::from_utf8_lossy(rest);
        return Ok(s.chars().next().map_or(0, |c| c as i64));
    }
    let t = crate::bytes::trim_blanks(a);
    if t.is_empty() {
        return Ok(0);
    }
    let (neg, body) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let v = crate::arith::parse_number(body).ok_or_else(|| {
        let n = body.iter().take_while(|c| c.is_ascii_digit()).count();
        std::str::from_utf8(&body[..n])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    })?;
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// Parses a float argument.
pub fn float_arg(a: &[u8]) -> Result<f64, f64> {
    if a.starts_with(b"'") || a.starts_with(b"\"") {
        return num_arg(a).map(|v| v as f64).map_err(|v| v as f64);
    }
    let t = String::from_utf8_lossy(crate::bytes::trim_blanks(a)).into_owned();
    if t.is_empty() {
        return Ok(0.0);
    }
    t.parse::<f64>().or_else(|_| {
        if let Some(h) = t.strip_prefix("0x") {
            return i64::from_str_radix(h, 16)
                .map(|v| v as f64)
                .map_err(|_| 0.0);
        }
        Err(0.0)
    })
}

/// The result of formatting: output, error messages, and whether `\c`
/// stopped it.
pub struct Formatted {
    /// The text.
    pub out: Vec<u8>,
    /// `invalid number` and similar complaints.
    pub errors: Vec<String>,
    /// `%b` met `\c`.
    pub stop: bool,
}

/// A width or precision, at most [`MAX_WORD`] (checked before anything is
/// allocated for it).
fn clamp(n: u64, over: &mut bool) -> usize {
    if n > MAX_WORD as u64 {
        *over = true;
    }
    n.min(MAX_WORD as u64) as usize
}

/// The message for [`Spec::too_large`].
pub fn too_large() -> String {
    format!(
        "field width or precision exceeds the limit of {} MiB",
        MAX_WORD >> 20
    )
}

/// Parses the spec after `%` at `fmt[i]`; returns it and the next index.
/// `*` widths take their value from `next_arg`.
pub fn parse_spec(fmt: &[u8], mut i: usize, mut next_arg: impl FnMut() -> i64) -> (Spec, usize) {
    let mut s = Spec::default();
    while let Some(&c) = fmt.get(i) {
        match c {
            b'-' => s.left = true,
            b'+' => s.plus = true,
            b' ' => s.space = true,
            b'#' => s.alt = true,
            b'0' => s.zero = true,
            _ => break,
        }
        i += 1;
    }
    if fmt.get(i) == Some(&b'*') {
        let w = next_arg();
        if w < 0 {
            s.left = true;
        }
        s.width = Some(clamp(w.unsigned_abs(), &mut s.too_large));
        i += 1;
    } else {
        let n = fmt[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if n > 0 {
            s.width = std::str::from_utf8(&fmt[i..i + n])
                .ok()
                .map(|t| clamp(t.parse().unwrap_or(u64::MAX), &mut s.too_large));
            i += n;
        }
    }
    if fmt.get(i) == Some(&b'.') {
        i += 1;
        if fmt.get(i) == Some(&b'*') {
            s.prec = Some(clamp(next_arg().max(0) as u64, &mut s.too_large));
            i += 1;
        } else {
            let n = fmt[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            s.prec = Some(
                std::str::from_utf8(&fmt[i..i + n])
                    .ok()
                    .map(|t| {
                        if t.is_empty() {
                            0
                        } else {
                            clamp(t.parse().unwrap_or(u64::MAX), &mut s.too_large)
                        }
                    })
                    .unwrap_or(0),
            );
            i += n;
        }
    }
    // Length modifiers are accepted and ignored (not `q`: bash's `%q`
    // is the quoting conversion).
    while matches!(fmt.get(i), Some(b'l' | b'h' | b'L' | b'j' | b'z' | b't')) {
        i += 1;
    }
    s.conv = fmt.get(i).copied().unwrap_or(0);
    (s, i + 1)
}

/// Expands `%b`'s argument: echo-style escapes, `\c` stops.
pub fn expand_b(a: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut i = 0;
    while i < a.len() {
        if a[i] == b'\\' && i + 1 < a.len() {
            if a[i + 1] == b'c' {
                return (out, true);
            }
            let (b, used) = backslash_escape(&a[i + 1..], false);
            out.extend(b);
            i += 1 + used;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    (out, false)
}

/// Formats `fmt` with `args`, reusing the format while arguments remain.
pub fn format(fmt: &[u8], args: &[Vec<u8>]) -> Formatted {
    let mut res = Formatted {
        out: Vec::new(),
        errors: Vec::new(),
        stop: false,
    };
    let mut ai = 0usize;
    loop {
        let start_ai = ai;
        let mut i = 0;
        while i < fmt.len() {
            if res.out.len() > MAX_EXPANSION {
                res.errors.push(format!(
                    "output exceeds the limit of {} MiB",
                    MAX_EXPANSION >> 20
                ));
                res.out = Vec::new();
                res.stop = true;
                return res;
            }
            let c = fmt[i];
            if c == b'\\' {
                if fmt.get(i + 1) == Some(&b'c') {
                    res.stop = true;
                    return res;
                }
                let (b, used) = backslash_escape(&fmt[i + 1..], true);
                res.out.extend(b);
                i += 1 + used;
                continue;
            }
            if c != b'%' {
                res.out.push(c);
                i += 1;
                continue;
            }
            if fmt.get(i + 1) == Some(&b'%') {
                res.out.push(b'%');
                i += 2;
                continue;
            }
            let mut errs = Vec::new();
            let (spec, next) = parse_spec(fmt, i + 1, || {
                let v = args.get(ai).map(|a| num_arg(a)).unwrap_or(Ok(0));
                ai += 1;
                v.unwrap_or_else(|v| {
                    errs.push("invalid number".to_string());
                    v
                })
            });
            res.errors.extend(errs);
            if spec.too_large {
                res.errors.push(too_large());
                res.stop = true;
                return res;
            }
            i = next;
            let arg = args.get(ai).cloned();
            ai += 1;
            let a = arg.clone().unwrap_or_default();
            match spec.conv {
                b's' => {
                    let mut v = a;
                    if let Some(p) = spec.prec {
                        v.truncate(p);
                    }
                    res.out.extend(pad(&spec, v, false));
                }
                b'b' => {
                    let (v, stop) = expand_b(&a);
                    res.out.extend(pad(&spec, v, false));
                    if stop {
                        res.stop = true;
                        return res;
                    }
                }
                b'q' => res
                    .out
                    .extend(pad(&spec, crate::bytes::quote_if_needed(&a), false)),
                b'c' => {
                    let v = a.first().map(|c| vec![*c]).unwrap_or_default();
                    res.out.extend(pad(&spec, v, false));
                }
                b'd' | b'i' | b'u' | b'o' | b'x' | b'X' => {
                    let v = num_arg(&a).unwrap_or_else(|v| {
                        res.errors
                            .push(format!("{}: invalid number", String::from_utf8_lossy(&a)));
                        v
                    });
                    res.out.extend(fmt_int(&spec, v));
                }
                b'e' | b'E' | b'f' | b'F' | b'g' | b'G' => {
                    let v = float_arg(&a).unwrap_or_else(|v| {
                        res.errors
                            .push(format!("{}: invalid number", String::from_utf8_lossy(&a)));
                        v
                    });
                    res.out.extend(fmt_float(&spec, v));
                }
                0 => {
                    res.out.push(b'%');
                    ai -= 1;
                }
                other => {
                    res.errors
                        .push(format!("%{}: invalid format character", other as char));
                    return res;
                }
            }
        }
        if res.out.len() > MAX_EXPANSION {
            res.errors.push(format!(
                "output exceeds the limit of {} MiB",
                MAX_EXPANSION >> 20
            ));
            res.out = Vec::new();
            res.stop = true;
            return res;
        }
        if ai >= args.len() || ai == start_ai {
            return res;
        }
    }
}
