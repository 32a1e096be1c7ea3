//! `sort`: keys, numeric, general, human and version orders, unique and
//! check modes. Comparisons are in byte order (the C locale).

use super::{Ctx, Opt, getopt};
use crate::exec::Shell;
use crate::io::Io;
use std::cmp::Ordering;

#[derive(Clone, Copy, Default)]
struct KeyOpts {
    numeric: bool,
    general: bool,
    human: bool,
    version: bool,
    reverse: bool,
    fold: bool,
    blanks: bool,
}

#[derive(Clone)]
struct Key {
    f1: usize,
    c1: usize,
    f2: Option<usize>,
    c2: usize,
    o: KeyOpts,
}

fn parse_key(spec: &str, global: KeyOpts) -> Option<Key> {
    let (a, b) = match spec.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (spec, None),
    };
    let mut o = KeyOpts::default();
    let mut any = false;
    let mut pos = |s: &str| -> Option<(usize, usize)> {
        let digits: String = s
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        for flag in s[digits.len()..].chars() {
            any = true;
            match flag {
                'n' => o.numeric = true,
                'g' => o.general = true,
                'h' => o.human = true,
                'V' => o.version = true,
                'r' => o.reverse = true,
                'f' => o.fold = true,
                'b' => o.blanks = true,
                _ => return None,
            }
        }
        let (f, c) = match digits.split_once('.') {
            Some((f, c)) => (f.parse().ok()?, c.parse().ok()?),
            None => (digits.parse().ok()?, 0),
        };
        Some((f, c))
    };
    let (f1, c1) = pos(a)?;
    let (f2, c2) = match b {
        Some(b) => {
            let (f, c) = pos(b)?;
            (Some(f), c)
        }
        None => (None, 0),
    };
    if f1 == 0 {
        return None;
    }
    Some(Key {
        f1,
        c1,
        f2,
        c2,
        o: if any { o } else { global },
    })
}

/// Field spans: with a separator, or at blank-to-nonblank runs.
pub(super) fn fields(line: &[u8], sep: Option<u8>) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    match sep {
        Some(s) => {
            let mut start = 0;
            for (i, &c) in line.iter().enumerate() {
                if c == s {
                    v.push((start, i));
                    start = i + 1;
                }
            }
            v.push((start, line.len()));
        }
        None => {
            let mut i = 0;
            while i < line.len() {
                let start = i;
                while i < line.len() && (line[i] == b' ' || line[i] == b'\t') {
                    i += 1;
                }
                while i < line.len() && line[i] != b' ' && line[i] != b'\t' {
                    i += 1;
                }
                v.push((start, i));
            }
        }
    }
    v
}

fn key_slice<'a>(line: &'a [u8], k: &Key, sep: Option<u8>) -> &'a [u8] {
    let fs = fields(line, sep);
    let Some(&(s1, e1)) = fs.get(k.f1.saturating_sub(1)) else {
        return &[];
    };
    let mut start = s1;
    if k.o.blanks || sep.is_none() && k.c1 > 0 {
        while start < e1 && (line[start] == b' ' || line[start] == b'\t') {
            start += 1;
        }
    }
    if k.c1 > 0 {
        start = start.saturating_add(k.c1 - 1).min(e1);
    }
    let end = match k.f2 {
        None => line.len(),
        Some(f2) => match fs.get(f2.wrapping_sub(1)) {
            Some(&(s2, e2)) => {
                if k.c2 == 0 {
                    e2
                } else {
                    let mut b = s2;
                    if sep.is_none() {
                        while b < e2 && (line[b] == b' ' || line[b] == b'\t') {
                            b += 1;
                        }
                    }
                    b.saturating_add(k.c2).min(e2)
                }
            }
            None => line.len(),
        },
    };
    &line[start.min(end)..end]
}

fn num_prefix(s: &[u8]) -> f64 {
    let t = crate::bytes::trim_blanks(s);
    let n = t
        .iter()
        .enumerate()
        .take_while(|(i, c)| {
            c.is_ascii_digit() || **c == b'.' || (*i == 0 && (**c == b'-' || **c == b'+'))
        })
        .count();
    std::str::from_utf8(&t[..n])
        .ok()
        .and_then(|x| x.parse().ok())
        .unwrap_or(0.0)
}

/// `sort -g`'s value: the longest prefix that is a floating-point number
/// (only ASCII bytes that can be part of one are tried, at most 400).
fn general(s: &[u8]) -> f64 {
    let t = crate::bytes::trim_blanks(s);
    let n = t
        .iter()
        .take(400)
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
        .count();
    for end in (1..=n).rev() {
        if let Some(v) = std::str::from_utf8(&t[..end])
            .ok()
            .and_then(|x| x.parse::<f64>().ok())
        {
            return v;
        }
    }
    f64::NEG_INFINITY
}

fn human_val(s: &[u8]) -> f64 {
    let v = num_prefix(s);
    let t = crate::bytes::trim_blanks(s);
    let unit = t.iter().find(|c| c.is_ascii_alphabetic()).copied();
    let mult = match unit {
        Some(b'K' | b'k') => 1e3,
        Some(b'M') => 1e6,
        Some(b'G') => 1e9,
        Some(b'T') => 1e12,
        Some(b'P') => 1e15,
        _ => 1.0,
    };
    v * mult
}

fn version_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let na = std::str::from_utf8(&a[si..i])
                .ok()
                .and_then(|x| x.parse::<u128>().ok())
                .unwrap_or(0);
            let nb = std::str::from_utf8(&b[sj..j])
                .ok()
                .and_then(|x| x.parse::<u128>().ok())
                .unwrap_or(0);
            match na.cmp(&nb) {
                Ordering::Equal => continue,
                o => return o,
            }
        }
        match a[i].cmp(&b[j]) {
            Ordering::Equal => {
                i += 1;
                j += 1;
            }
            o => return o,
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

fn compare(a: &[u8], b: &[u8], o: &KeyOpts) -> Ordering {
    let r = if o.numeric {
        num_prefix(a)
            .partial_cmp(&num_prefix(b))
            .unwrap_or(Ordering::Equal)
    } else if o.general {
        general(a)
            .partial_cmp(&general(b))
            .unwrap_or(Ordering::Equal)
    } else if o.human {
        human_val(a)
            .partial_cmp(&human_val(b))
            .unwrap_or(Ordering::Equal)
    } else if o.version {
        version_cmp(a, b)
    } else if o.fold {
        a.to_ascii_uppercase().cmp(&b.to_ascii_uppercase())
    } else if o.blanks {
        crate::bytes::trim_blanks(a).cmp(crate::bytes::trim_blanks(b))
    } else {
        a.cmp(b)
    };
    if o.reverse { r.reverse() } else { r }
}

/// `sort [-rnghVufbsc] [-k KEY]… [-t SEP] [-o FILE] [FILE…]`.
pub fn sort(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "sort");
    let (opts, files) = match getopt(
        &argv[1..],
        b"ktoTS",
        &[
            "key",
            "field-separator",
            "output",
            "buffer-size",
            "parallel",
            "temporary-directory",
        ],
        true,
    ) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 2;
        }
    };
    let mut g = KeyOpts::default();
    let (mut unique, mut stable, mut check) = (false, false, false);
    let mut keys: Vec<String> = Vec::new();
    let mut sep = None;
    let mut output: Option<Vec<u8>> = None;
    for o in opts {
        match o {
            Opt::Short(c, v) => match c {
                b'r' => g.reverse = true,
                b'n' => g.numeric = true,
                b'g' => g.general = true,
                b'h' => g.human = true,
                b'V' => g.version = true,
                b'f' => g.fold = true,
                b'b' => g.blanks = true,
                b'u' => unique = true,
                b's' => stable = true,
                b'c' | b'C' => check = true,
                b'k' => keys.push(String::from_utf8_lossy(&v.unwrap_or_default()).into_owned()),
                b't' => sep = v.and_then(|v| v.first().copied()),
                b'o' => output = v,
                b'd' | b'i' | b'M' | b'R' | b'z' | b'm' | b'T' | b'S' => {}
                _ => {
                    u.err(format!("invalid option -- '{}'", c as char));
                    return 2;
                }
            },
            Opt::Long(n, v) => match n.as_str() {
                "reverse" => g.reverse = true,
                "numeric-sort" => g.numeric = true,
                "human-numeric-sort" => g.human = true,
                "version-sort" => g.version = true,
                "unique" => unique = true,
                "key" => keys.push(String::from_utf8_lossy(&v.unwrap_or_default()).into_owned()),
                "field-separator" => sep = v.and_then(|v| v.first().copied()),
                "output" => output = v,
                _ => {}
            },
        }
    }
    let mut parsed = Vec::new();
    for k in &keys {
        match parse_key(k, g) {
            Some(k) => parsed.push(k),
            None => {
                u.err(format!("invalid key specification '{k}'"));
                return 2;
            }
        }
    }
    let mut failed = false;
    let mut data = Vec::new();
    for (_, d) in u.inputs(&files, &mut failed) {
        data.extend_from_slice(&d);
        if !d.is_empty() && !d.ends_with(b"\n") {
            data.push(b'\n');
        }
    }
    if failed {
        return 2;
    }
    let mut lines: Vec<&[u8]> = crate::bytes::lines(&data).collect();
    let cmp = |a: &&[u8], b: &&[u8]| -> Ordering {
        if parsed.is_empty() {
            return compare(a, b, &g);
        }
        for k in &parsed {
            let o = compare(key_slice(a, k, sep), key_slice(b, k, sep), &k.o);
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    };
    let full = |a: &&[u8], b: &&[u8]| -> Ordering {
        match cmp(a, b) {
            Ordering::Equal if !stable && !unique => {
                let o = a.cmp(b);
                if g.reverse && parsed.is_empty() {
                    o.reverse()
                } else {
                    o
                }
            }
            o => o,
        }
    };
    if check {
        for w in lines.windows(2) {
            if full(&w[0], &w[1]) == Ordering::Greater {
                u.err(format!(
                    "-:{}: disorder: {}",
                    0,
                    String::from_utf8_lossy(w[1])
                ));
                return 1;
            }
        }
        return 0;
    }
    lines.sort_by(full);
    if unique {
        lines.dedup_by(|a, b| cmp(&&**a, &&**b) == Ordering::Equal);
    }
    let mut out = Vec::with_capacity(data.len());
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    match output {
        Some(f) => match u.host(&f).and_then(|h| std::fs::write(h, &out)) {
            Ok(()) => 0,
            Err(e) => {
                u.err(format!(
                    "open failed: {}: {}",
                    String::from_utf8_lossy(&f),
                    crate::fs::error_text(&e)
                ));
                2
            }
        },
        None => {
            let _ = u.out(&out);
            0
        }
    }
}
