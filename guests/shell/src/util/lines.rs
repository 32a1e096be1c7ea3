//! Line tools: `uniq`, `cut`, `tr`, `comm` (byte order, the C locale).

use super::sort::fields;
use super::{Ctx, Opt, getopt};
use crate::exec::Shell;
use crate::io::Io;
use std::cmp::Ordering;

/// `uniq [-cdui] [-f N] [-s N] [-w N] [INPUT [OUTPUT]]`.
pub fn uniq(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "uniq");
    let (opts, files) = match getopt(
        &argv[1..],
        b"fsw",
        &["skip-fields", "skip-chars", "check-chars"],
        true,
    ) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let (mut count, mut dups, mut uniques, mut icase) = (false, false, false, false);
    let (mut skip_f, mut skip_c, mut width) = (0usize, 0usize, usize::MAX);
    for o in opts {
        let num = |v: &Option<Vec<u8>>| {
            String::from_utf8_lossy(v.as_deref().unwrap_or_default())
                .parse()
                .unwrap_or(0)
        };
        match o {
            Opt::Short(b'c', _) => count = true,
            Opt::Short(b'd', _) => dups = true,
            Opt::Short(b'u', _) => uniques = true,
            Opt::Short(b'i', _) => icase = true,
            Opt::Short(b'f', v) => skip_f = num(&v),
            Opt::Short(b's', v) => skip_c = num(&v),
            Opt::Short(b'w', v) => width = num(&v),
            Opt::Long(n, v) => match n.as_str() {
                "count" => count = true,
                "repeated" => dups = true,
                "unique" => uniques = true,
                "ignore-case" => icase = true,
                "skip-fields" => skip_f = num(&v),
                "skip-chars" => skip_c = num(&v),
                "check-chars" => width = num(&v),
                _ => {}
            },
            _ => {}
        }
    }
    let input = files.first().cloned().unwrap_or_else(|| b"-".to_vec());
    let data = match u.read_input(&input) {
        Ok(d) => d,
        Err(e) => {
            u.err_path(&input, &e);
            return 1;
        }
    };
    let key = |l: &[u8]| -> Vec<u8> {
        let fs = fields(l, None);
        let mut start = fs
            .get(skip_f)
            .map_or(if skip_f == 0 { 0 } else { l.len() }, |f| f.0);
        if skip_f > 0 && skip_f >= fs.len() {
            start = l.len();
        }
        let s = &l[(start + skip_c).min(l.len())..];
        let s = &s[..width.min(s.len())];
        if icase {
            s.to_ascii_lowercase()
        } else {
            s.to_vec()
        }
    };
    let mut out = Vec::new();
    let mut emit = |line: &[u8], n: usize| {
        if (dups && n < 2) || (uniques && n > 1) {
            return;
        }
        if count {
            out.extend(format!("{n:7} ").into_bytes());
        }
        out.extend_from_slice(line);
        out.push(b'\n');
    };
    let mut cur: Option<(&[u8], Vec<u8>, usize)> = None;
    for l in crate::bytes::lines(&data) {
        let k = key(l);
        match &mut cur {
            Some((_, ck, n)) if *ck == k => *n += 1,
            _ => {
                if let Some((line, _, n)) = cur.take() {
                    emit(line, n);
                }
                cur = Some((l, k, 1));
            }
        }
    }
    if let Some((line, _, n)) = cur {
        emit(line, n);
    }
    match files.get(1) {
        Some(f) => {
            if let Err(e) = u.host(f).and_then(|h| std::fs::write(h, &out)) {
                u.err_path(f, &e);
                return 1;
            }
        }
        None => {
            let _ = u.out(&out);
        }
    }
    0
}

/// Parses a cut list (`1,3-5,7-`) into ranges (1-based, inclusive).
fn ranges(spec: &[u8]) -> Option<Vec<(usize, usize)>> {
    let mut v = Vec::new();
    for part in String::from_utf8_lossy(spec).split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                if a.is_empty() { 1 } else { a.parse().ok()? },
                if b.is_empty() {
                    usize::MAX
                } else {
                    b.parse().ok()?
                },
            ),
            None => {
                let n = part.parse().ok()?;
                (n, n)
            }
        };
        if a == 0 || b < a {
            return None;
        }
        v.push((a, b));
    }
    Some(v)
}

/// `cut -f LIST [-d DELIM] [-s] | -c LIST | -b LIST [--complement] [FILE…]`.
pub fn cut(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "cut");
    let (opts, files) = match getopt(
        &argv[1..],
        b"fcbd",
        &[
            "fields",
            "characters",
            "bytes",
            "delimiter",
            "output-delimiter",
        ],
        true,
    ) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mut list: Option<(u8, Vec<u8>)> = None;
    let mut delim = b'\t';
    let mut only_delimited = false;
    let mut complement = false;
    let mut out_delim: Option<Vec<u8>> = None;
    for o in opts {
        match o {
            Opt::Short(c @ (b'f' | b'c' | b'b'), Some(v)) => list = Some((c, v)),
            Opt::Short(b'd', Some(v)) => delim = v.first().copied().unwrap_or(b'\t'),
            Opt::Short(b's', _) => only_delimited = true,
            Opt::Short(b'n', _) => {}
            Opt::Long(n, v) => match n.as_str() {
                "fields" => list = Some((b'f', v.unwrap_or_default())),
                "characters" => list = Some((b'c', v.unwrap_or_default())),
                "bytes" => list = Some((b'b', v.unwrap_or_default())),
                "delimiter" => delim = v.and_then(|v| v.first().copied()).unwrap_or(b'\t'),
                "output-delimiter" => out_delim = v,
                "complement" => complement = true,
                "only-delimited" => only_delimited = true,
                _ => {}
            },
            _ => {}
        }
    }
    let Some((mode, spec)) = list else {
        u.err("you must specify a list of bytes, characters, or fields");
        return 1;
    };
    let Some(rs) = ranges(&spec) else {
        u.err(format!(
            "invalid field value '{}'",
            String::from_utf8_lossy(&spec)
        ));
        return 1;
    };
    let pick = |i: usize| rs.iter().any(|&(a, b)| i >= a && i <= b) != complement;
    let mut failed = false;
    let mut out = Vec::new();
    for (_, data) in u.inputs(&files, &mut failed) {
        for line in crate::bytes::lines(&data) {
            if mode == b'f' {
                if !line.contains(&delim) {
                    if !only_delimited {
                        out.extend_from_slice(line);
                        out.push(b'\n');
                    }
                    continue;
                }
                let od = out_delim.clone().unwrap_or_else(|| vec![delim]);
                let mut first = true;
                for (i, f) in line.split(|&c| c == delim).enumerate() {
                    if pick(i + 1) {
                        if !first {
                            out.extend_from_slice(&od);
                        }
                        out.extend_from_slice(f);
                        first = false;
                    }
                }
            } else {
                let units: Vec<&[u8]> = if mode == b'c' {
                    match std::str::from_utf8(line) {
                        Ok(s) => s
                            .char_indices()
                            .map(|(i, c)| &line[i..i + c.len_utf8()])
                            .collect(),
                        Err(_) => line.chunks(1).collect(),
                    }
                } else {
                    line.chunks(1).collect()
                };
                for (i, c) in units.iter().enumerate() {
                    if pick(i + 1) {
                        out.extend_from_slice(c);
                    }
                }
            }
            out.push(b'\n');
        }
    }
    let _ = u.out(&out);
    failed as i32
}

/// Expands a `tr` set: ranges, escapes, `[:class:]`.
fn tr_set(s: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut i = 0;
    // First decode escapes into (byte, is_literal) units.
    let mut units: Vec<(u8, bool)> = Vec::new();
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            let (b, used) = crate::bytes::backslash_escape(&s[i + 1..], true);
            if b.len() == 1 {
                units.push((b[0], true));
            } else {
                units.extend(b.iter().map(|&c| (c, true)));
            }
            i += 1 + used;
            continue;
        }
        if s[i] == b'['
            && s.get(i + 1) == Some(&b':')
            && let Some(end) = s[i + 2..].windows(2).position(|w| w == b":]")
        {
            let name = &s[i + 2..i + 2 + end];
            let class: Vec<u8> = (0u8..=255)
                .filter(|&c| match name {
                    b"alpha" => c.is_ascii_alphabetic(),
                    b"digit" => c.is_ascii_digit(),
                    b"alnum" => c.is_ascii_alphanumeric(),
                    b"upper" => c.is_ascii_uppercase(),
                    b"lower" => c.is_ascii_lowercase(),
                    b"space" => c.is_ascii_whitespace() || c == 11,
                    b"blank" => c == b' ' || c == b'\t',
                    b"punct" => c.is_ascii_punctuation(),
                    b"print" => (0x20..0x7f).contains(&c),
                    b"graph" => c.is_ascii_graphic(),
                    b"cntrl" => c.is_ascii_control(),
                    b"xdigit" => c.is_ascii_hexdigit(),
                    _ => false,
                })
                .collect();
            units.extend(class.into_iter().map(|c| (c, true)));
            i += 2 + end + 2;
            continue;
        }
        units.push((s[i], false));
        i += 1;
    }
    let mut k = 0;
    while k < units.len() {
        if k + 2 < units.len() && units[k + 1] == (b'-', false) && units[k + 2].0 >= units[k].0 {
            raw.extend(units[k].0..=units[k + 2].0);
            k += 3;
        } else {
            raw.push(units[k].0);
            k += 1;
        }
    }
    raw
}

/// `tr [-cds] SET1 [SET2]`.
pub fn tr(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "tr");
    let (opts, sets) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let (mut comp, mut del, mut squeeze) = (false, false, false);
    for o in &opts {
        match o {
            Opt::Short(b'c' | b'C', _) => comp = true,
            Opt::Short(b'd', _) => del = true,
            Opt::Short(b's', _) => squeeze = true,
            Opt::Short(b't', _) => {}
            _ => {}
        }
    }
    if sets.is_empty() || (!del && !squeeze && sets.len() < 2) {
        u.err("missing operand");
        return 1;
    }
    let mut s1 = tr_set(&sets[0]);
    if comp {
        s1 = (0u8..=255).filter(|c| !s1.contains(c)).collect();
    }
    let s2 = sets.get(1).map(|s| tr_set(s)).unwrap_or_default();
    let mut map: [Option<u8>; 256] = [None; 256];
    let mut in1 = [false; 256];
    for &c in &s1 {
        in1[c as usize] = true;
    }
    if !del && !s2.is_empty() {
        for (i, &c) in s1.iter().enumerate() {
            map[c as usize] = Some(*s2.get(i).unwrap_or(s2.last().unwrap_or(&c)));
        }
    }
    let squeeze_set: Vec<u8> = if del || s2.is_empty() {
        s1.clone()
    } else {
        s2.clone()
    };
    let mut sq = [false; 256];
    for &c in &squeeze_set {
        sq[c as usize] = true;
    }
    let data = u.stdin();
    let mut out = Vec::with_capacity(data.len());
    for &c in &data {
        if del && in1[c as usize] {
            continue;
        }
        let d = map[c as usize].unwrap_or(c);
        if squeeze && sq[d as usize] && out.last() == Some(&d) {
            continue;
        }
        out.push(d);
    }
    let _ = u.out(&out);
    0
}

/// `comm [-123] FILE1 FILE2`.
pub fn comm(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "comm");
    let (opts, files) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let hide = |n: u8| {
        opts.iter()
            .any(|o| matches!(o, Opt::Short(c, _) if *c == n))
    };
    if files.len() != 2 {
        u.err("missing operand");
        return 1;
    }
    let mut failed = false;
    let ins = u.inputs(&files, &mut failed);
    if failed {
        return 1;
    }
    let a: Vec<&[u8]> = crate::bytes::lines(&ins[0].1).collect();
    let b: Vec<&[u8]> = crate::bytes::lines(&ins[1].1).collect();
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    let col = |n: u8, l: &[u8], out: &mut Vec<u8>| {
        if hide(b'0' + n) {
            return;
        }
        for k in 1..n {
            if !hide(b'0' + k) {
                out.push(b'\t');
            }
        }
        out.extend_from_slice(l);
        out.push(b'\n');
    };
    while i < a.len() || j < b.len() {
        let o = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => Ordering::Less,
            _ => Ordering::Greater,
        };
        match o {
            Ordering::Less => {
                col(1, a[i], &mut out);
                i += 1;
            }
            Ordering::Greater => {
                col(2, b[j], &mut out);
                j += 1;
            }
            Ordering::Equal => {
                col(3, a[i], &mut out);
                i += 1;
                j += 1;
            }
        }
    }
    let _ = u.out(&out);
    0
}
