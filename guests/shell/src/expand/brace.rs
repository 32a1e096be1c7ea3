//! Brace expansion (`a{b,c}d`, `{1..5}`, `{a..e..2}`) over a word's parts:
//! only unquoted literal braces and commas count.
//!
//! A word in progress is stored compactly: its literal bytes as they are,
//! its other parts (quotes, `$x`, …) as a 6-byte escape naming the part
//! (`ESC 1` and the index), a literal `ESC` byte as `ESC 0`. The number of
//! words and their bytes are counted as they are made, and sequences use
//! checked arithmetic, so no input expands past [`MAX_FIELDS`] words or
//! [`MAX_EXPANSION`] bytes.

use crate::limits::{MAX_EXPANSION, MAX_FIELDS};
use crate::parse::ast::{Part, Word};

const ESC: u8 = 0xFF;

/// Encodes `w`, moving its non-literal parts to `parts`.
fn encode(w: &Word, parts: &mut Vec<Part>) -> Vec<u8> {
    let mut out = Vec::new();
    for p in w {
        match p {
            Part::Lit(b) => {
                for &c in b {
                    if c == ESC {
                        out.extend_from_slice(&[ESC, 0]);
                    } else {
                        out.push(c);
                    }
                }
            }
            other => {
                out.extend_from_slice(&[ESC, 1]);
                out.extend_from_slice(&(parts.len() as u32).to_le_bytes());
                parts.push(other.clone());
            }
        }
    }
    out
}

/// Bytes of the unit at `i`: 1, 2 (an escaped byte) or 6 (a part).
fn unit_len(b: &[u8], i: usize) -> usize {
    match (b[i], b.get(i + 1)) {
        (ESC, Some(0)) => 2,
        (ESC, _) => 6,
        _ => 1,
    }
}

/// The literal byte at `i` (`None` for a part).
fn literal(b: &[u8], i: usize) -> Option<u8> {
    match (b[i], b.get(i + 1)) {
        (ESC, Some(0)) => Some(ESC),
        (ESC, _) => None,
        (c, _) => Some(c),
    }
}

fn decode(b: &[u8], parts: &[Part]) -> Word {
    let mut w = Vec::new();
    let mut lit = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let n = unit_len(b, i);
        match literal(b, i) {
            Some(c) => lit.push(c),
            None => {
                if !lit.is_empty() {
                    w.push(Part::Lit(std::mem::take(&mut lit)));
                }
                let idx = b
                    .get(i + 2..i + 6)
                    .and_then(|x| <[u8; 4]>::try_from(x).ok())
                    .map_or(usize::MAX, |x| u32::from_le_bytes(x) as usize);
                if let Some(p) = parts.get(idx) {
                    w.push(p.clone());
                }
            }
        }
        i += n;
    }
    if !lit.is_empty() {
        w.push(Part::Lit(lit));
    }
    w
}

/// Whether the word may need brace expansion (has a literal `{`).
pub fn has_brace(w: &Word) -> bool {
    w.iter()
        .any(|p| matches!(p, Part::Lit(b) if b.contains(&b'{')))
}

/// A group's alternatives.
enum Alts {
    /// `{a,b,c}`: ranges of the word.
    Ranges(Vec<(usize, usize)>),
    /// `{x..y..step}`.
    Seq(Seq),
}

type Group = (usize, usize, Alts);

/// The first expandable group (the valid one that opens first): one pass
/// over the word, matching braces with a stack.
fn first_group(b: &[u8]) -> Result<Option<Group>, String> {
    let mut stack: Vec<(usize, Vec<usize>)> = Vec::new();
    let mut best: Option<Group> = None;
    let mut i = 0;
    while i < b.len() {
        let n = unit_len(b, i);
        match literal(b, i) {
            Some(b'{') => stack.push((i, Vec::new())),
            Some(b',') => {
                if let Some(top) = stack.last_mut() {
                    top.1.push(i);
                }
            }
            Some(b'}') => {
                if let Some((open, commas)) = stack.pop()
                    && best.as_ref().is_none_or(|g| open < g.0)
                {
                    let alts = if commas.is_empty() {
                        sequence(&b[open + 1..i])?.map(Alts::Seq)
                    } else {
                        let mut ranges = Vec::with_capacity(commas.len() + 1);
                        let mut start = open + 1;
                        for c in commas {
                            ranges.push((start, c));
                            start = c + 1;
                        }
                        ranges.push((start, i));
                        Some(Alts::Ranges(ranges))
                    };
                    if let Some(a) = alts {
                        best = Some((open, i, a));
                    }
                }
                // Nothing opened later can start before this group.
                if stack.is_empty() && best.is_some() {
                    break;
                }
            }
            _ => {}
        }
        i += n;
    }
    Ok(best)
}

fn too_many() -> String {
    format!("brace expansion makes more than {MAX_FIELDS} words")
}

fn too_large() -> String {
    format!(
        "brace expansion too large: its words exceed {} MiB",
        MAX_EXPANSION >> 20
    )
}

/// The elements of a sequence, made one at a time.
struct Seq {
    next: i128,
    step: i128,
    left: u64,
    width: usize,
    letters: bool,
}

impl Iterator for Seq {
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let v = self.next;
        self.next += self.step;
        Some(if self.letters {
            vec![v as u8]
        } else {
            crate::bytes::zero_pad(&v.to_string(), self.width).into_bytes()
        })
    }
}

/// `{x..y[..step]}` with integers or single letters (in 128-bit
/// arithmetic: no endpoint or step can overflow).
fn sequence(inner: &[u8]) -> Result<Option<Seq>, String> {
    if inner.contains(&ESC) {
        return Ok(None);
    }
    let Ok(s) = std::str::from_utf8(inner) else {
        return Ok(None);
    };
    let parts: Vec<&str> = s.split("..").collect();
    if parts.len() != 2 && parts.len() != 3 {
        return Ok(None);
    }
    let step: i128 = match parts.get(2).map(|t| t.parse::<i64>()) {
        Some(Ok(n)) => i128::from(n).abs().max(1),
        Some(Err(_)) => return Ok(None),
        None => 1,
    };
    let ends = match (parts[0].parse::<i64>(), parts[1].parse::<i64>()) {
        (Ok(a), Ok(b)) => Some((i128::from(a), i128::from(b), false)),
        _ => {
            let (a, b) = (parts[0].as_bytes(), parts[1].as_bytes());
            (a.len() == 1
                && b.len() == 1
                && a[0].is_ascii_alphabetic()
                && b[0].is_ascii_alphabetic())
            .then(|| (i128::from(a[0]), i128::from(b[0]), true))
        }
    };
    let Some((a, b, letters)) = ends else {
        return Ok(None);
    };
    let width = if !letters
        && ((parts[0].starts_with('0') && parts[0].len() > 1)
            || (parts[1].starts_with('0') && parts[1].len() > 1)
            || parts[0].starts_with("-0"))
    {
        parts[0].len().max(parts[1].len())
    } else {
        0
    };
    let count = (a - b).abs() / step + 1;
    if count > MAX_FIELDS as i128 {
        return Err(too_many());
    }
    Ok(Some(Seq {
        next: a,
        step: if a <= b { step } else { -step },
        left: count as u64,
        width,
        letters,
    }))
}

/// Expands the braces of `w` into one or more words, in order. `Err` when
/// the result would exceed [`MAX_FIELDS`] words or [`MAX_EXPANSION`] bytes.
pub fn expand(w: &Word) -> Result<Vec<Word>, String> {
    let mut parts = Vec::new();
    let start = encode(w, &mut parts);
    // Bytes of every word in `todo` and `done`.
    let mut live = start.len();
    let mut todo: Vec<Vec<u8>> = vec![start];
    let mut done: Vec<Vec<u8>> = Vec::new();
    // Work in order: expand the first word's first group, put the results
    // back at the front.
    while let Some(b) = todo.pop() {
        let Some((open, close, alts)) = first_group(&b)? else {
            done.push(b);
            if done.len() > MAX_FIELDS {
                return Err(too_many());
            }
            continue;
        };
        let (prefix, suffix) = (&b[..open], &b[close + 1..]);
        let mut made: Vec<Vec<u8>> = Vec::new();
        let mut add = |alt: &[u8]| -> Result<(), String> {
            if todo.len() + done.len() + made.len() >= MAX_FIELDS {
                return Err(too_many());
            }
            let n = prefix.len() + alt.len() + suffix.len();
            live += n;
            if live > MAX_EXPANSION {
                return Err(too_large());
            }
            let mut word = Vec::with_capacity(n);
            word.extend_from_slice(prefix);
            word.extend_from_slice(alt);
            word.extend_from_slice(suffix);
            made.push(word);
            Ok(())
        };
        match alts {
            Alts::Ranges(ranges) => {
                for (s, e) in ranges {
                    add(&b[s..e])?;
                }
            }
            Alts::Seq(seq) => {
                for item in seq {
                    add(&item)?;
                }
            }
        }
        live -= b.len();
        todo.extend(made.into_iter().rev());
    }
    Ok(done.iter().map(|u| decode(u, &parts)).collect())
}
