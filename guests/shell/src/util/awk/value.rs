//! awk values: numbers, strings, "strnums" (input that looks numeric), the
//! uninitialized value; conversions and comparison.

use std::cmp::Ordering;
use std::collections::HashMap;

/// A value.
#[derive(Debug, Clone, Default)]
pub enum Val {
    /// Never assigned: both "" and 0.
    #[default]
    Uninit,
    /// A number.
    Num(f64),
    /// A string.
    Str(Vec<u8>),
    /// Input text (fields, getline, -v): numeric if it looks numeric.
    StrNum(Vec<u8>),
}

/// The longest numeric prefix of `s` (awk's `atof`).
pub fn atof(s: &[u8]) -> f64 {
    let t = crate::bytes::trim_blanks(s);
    let mut end = 0;
    let b = t;
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i > digits_start && !(i == digits_start + 1 && b[digits_start] == b'.') {
        end = i;
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            let mut j = i + 1;
            if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                j += 1;
            }
            if j < b.len() && b[j].is_ascii_digit() {
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                end = j;
            }
        }
    }
    let text = std::str::from_utf8(&b[..end]).unwrap_or("0");
    if let Ok(v) = text.parse::<f64>() {
        return v;
    }
    let low = String::from_utf8_lossy(t).to_ascii_lowercase();
    match low.trim_start_matches(['+', '-']) {
        x if x.starts_with("inf") => {
            if low.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        }
        x if x.starts_with("nan") => f64::NAN,
        _ => 0.0,
    }
}

/// Whether the whole of `s` (blanks aside) is a number.
pub fn looks_numeric(s: &[u8]) -> bool {
    let t = crate::bytes::trim_blanks(s);
    if t.is_empty() {
        return false;
    }
    let text = String::from_utf8_lossy(t);
    let body = text.trim_start_matches(['+', '-']);
    if body.starts_with("0x")
        || body.starts_with("0X")
        || body.eq_ignore_ascii_case("inf")
        || body.eq_ignore_ascii_case("nan")
    {
        return false;
    }
    text.parse::<f64>().is_ok()
        && body
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == b'.')
}

/// Formats a number as awk does: integers plainly, others with `fmt`.
pub fn num_to_str(n: f64, fmt: &[u8]) -> Vec<u8> {
    if n.is_nan() {
        return if n.is_sign_negative() {
            b"-nan".to_vec()
        } else {
            b"nan".to_vec()
        };
    }
    if n.is_infinite() {
        return if n < 0.0 {
            b"-inf".to_vec()
        } else {
            b"inf".to_vec()
        };
    }
    if n == n.trunc() && n.abs() < 1e16 {
        return format!("{}", n as i64).into_bytes();
    }
    crate::util::printf::format(fmt, &[format!("{n:e}").into_bytes()]).out
}

impl Val {
    /// The numeric value.
    pub fn num(&self) -> f64 {
        match self {
            Val::Uninit => 0.0,
            Val::Num(n) => *n,
            Val::Str(s) | Val::StrNum(s) => atof(s),
        }
    }

    /// The string value (numbers through `convfmt`).
    pub fn str(&self, convfmt: &[u8]) -> Vec<u8> {
        match self {
            Val::Uninit => Vec::new(),
            Val::Num(n) => num_to_str(*n, convfmt),
            Val::Str(s) | Val::StrNum(s) => s.clone(),
        }
    }

    /// Truth: numbers non-zero, strings non-empty.
    pub fn truthy(&self) -> bool {
        match self {
            Val::Uninit => false,
            Val::Num(n) => *n != 0.0,
            Val::Str(s) => !s.is_empty(),
            Val::StrNum(s) => {
                if looks_numeric(s) {
                    atof(s) != 0.0
                } else {
                    !s.is_empty()
                }
            }
        }
    }

    fn numeric(&self) -> bool {
        match self {
            Val::Uninit | Val::Num(_) => true,
            Val::Str(_) => false,
            Val::StrNum(s) => looks_numeric(s),
        }
    }
}

/// Compares two values: numerically when both are numeric, else as
/// strings.
pub fn compare(a: &Val, b: &Val, convfmt: &[u8]) -> Ordering {
    if a.numeric() && b.numeric() {
        a.num().partial_cmp(&b.num()).unwrap_or(Ordering::Equal)
    } else {
        a.str(convfmt).cmp(&b.str(convfmt))
    }
}

/// An awk array: insertion-ordered.
#[derive(Debug, Clone, Default)]
pub struct AMap {
    keys: HashMap<Vec<u8>, usize>,
    items: Vec<Option<(Vec<u8>, Val)>>,
    live: usize,
}

impl AMap {
    /// The value at `k`.
    pub fn get(&self, k: &[u8]) -> Option<&Val> {
        self.keys
            .get(k)
            .and_then(|&i| self.items[i].as_ref())
            .map(|(_, v)| v)
    }

    /// Sets `k`.
    pub fn set(&mut self, k: Vec<u8>, v: Val) {
        match self.keys.get(&k) {
            Some(&i) => {
                if let Some(slot) = self.items[i].as_mut() {
                    slot.1 = v;
                }
            }
            None => {
                self.keys.insert(k.clone(), self.items.len());
                self.items.push(Some((k, v)));
                self.live += 1;
            }
        }
    }

    /// Whether `k` is present.
    pub fn contains(&self, k: &[u8]) -> bool {
        self.keys.contains_key(k)
    }

    /// Removes `k`.
    pub fn remove(&mut self, k: &[u8]) {
        if let Some(i) = self.keys.remove(k) {
            self.items[i] = None;
            self.live -= 1;
        }
        if self.is_empty() {
            self.items.clear();
        }
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.keys.clear();
        self.items.clear();
        self.live = 0;
    }

    /// The keys, in insertion order.
    pub fn keys(&self) -> Vec<Vec<u8>> {
        self.items
            .iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.live
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(atof(b" 12abc"), 12.0);
        assert_eq!(atof(b"-3.5e2x"), -350.0);
        assert_eq!(atof(b"x"), 0.0);
        assert!(looks_numeric(b" 42 "));
        assert!(!looks_numeric(b"42a"));
        assert_eq!(num_to_str(3.0, b"%.6g"), b"3");
        assert_eq!(num_to_str(0.1 + 0.2, b"%.6g"), b"0.3");
        assert_eq!(num_to_str(1e20, b"%.6g"), b"1e+20");
    }
}
