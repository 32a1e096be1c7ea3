//! `diff` (normal, `-u`/`-U N`, `-q`, `-r`, `-i`, `-w`, `-b`, `-B`) on
//! Myers' linear-space algorithm, and `cmp`.

mod myers;

use super::{Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::io::Io;
use myers::prefix;
pub use myers::{Op, diff_ops};
use std::borrow::Cow;
use std::ops::Range;

/// A change: old range and new range (0-based, half open).
type Hunk = (Range<usize>, Range<usize>);

fn changes(ops: &[Op]) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    let mut cur: Option<Hunk> = None;
    let (mut ai, mut bi) = (0, 0);
    for op in ops {
        match *op {
            Op::Equal(a, b, n) => {
                if let Some(h) = cur.take() {
                    out.push(h);
                }
                ai = a + n;
                bi = b + n;
            }
            Op::Delete(a, n) => {
                let h = cur.get_or_insert((a..a, bi..bi));
                h.0.end = a + n;
                ai = a + n;
            }
            Op::Insert(b, n) => {
                let h = cur.get_or_insert((ai..ai, b..b));
                h.1.end = b + n;
                bi = b + n;
            }
        }
    }
    if let Some(h) = cur {
        out.push(h);
    }
    out
}

fn range_text(r: &Range<usize>) -> String {
    if r.len() <= 1 {
        (r.start + 1).to_string()
    } else {
        format!("{},{}", r.start + 1, r.end)
    }
}

fn push_line(out: &mut Vec<u8>, prefix: &[u8], line: &[u8], last: bool, missing_nl: bool) {
    out.extend_from_slice(prefix);
    out.extend_from_slice(line);
    out.push(b'\n');
    if last && missing_nl {
        out.extend_from_slice(b"\\ No newline at end of file\n");
    }
}

struct Side<'a> {
    lines: Vec<&'a [u8]>,
    no_nl: bool,
}

fn side(data: &[u8]) -> Side<'_> {
    Side {
        lines: crate::bytes::lines(data).collect(),
        no_nl: !data.is_empty() && !data.ends_with(b"\n"),
    }
}

fn normal(a: &Side, b: &Side, hunks: &[Hunk], out: &mut Vec<u8>) {
    for (ar, br) in hunks {
        let head = if br.is_empty() {
            format!("{}d{}", range_text(ar), br.start)
        } else if ar.is_empty() {
            format!("{}a{}", ar.start, range_text(br))
        } else {
            format!("{}c{}", range_text(ar), range_text(br))
        };
        out.extend(head.into_bytes());
        out.push(b'\n');
        for i in ar.clone() {
            push_line(out, b"< ", a.lines[i], i + 1 == a.lines.len(), a.no_nl);
        }
        if !ar.is_empty() && !br.is_empty() {
            out.extend_from_slice(b"---\n");
        }
        for i in br.clone() {
            push_line(out, b"> ", b.lines[i], i + 1 == b.lines.len(), b.no_nl);
        }
    }
}

fn unified(a: &Side, b: &Side, hunks: &[Hunk], ctx: usize, out: &mut Vec<u8>) {
    let mut i = 0;
    while i < hunks.len() {
        // Merge hunks whose context overlaps.
        let mut j = i;
        while j + 1 < hunks.len() && hunks[j + 1].0.start - hunks[j].0.end <= 2 * ctx {
            j += 1;
        }
        let a_start = hunks[i].0.start.saturating_sub(ctx);
        let a_end = (hunks[j].0.end + ctx).min(a.lines.len());
        let b_start = hunks[i].1.start.saturating_sub(ctx);
        let b_end = (hunks[j].1.end + ctx).min(b.lines.len());
        let fmt = |s: usize, e: usize| -> String {
            let n = e - s;
            match n {
                0 => format!("{s},0"),
                1 => format!("{}", s + 1),
                _ => format!("{},{n}", s + 1),
            }
        };
        out.extend(
            format!("@@ -{} +{} @@\n", fmt(a_start, a_end), fmt(b_start, b_end)).into_bytes(),
        );
        let mut ai = a_start;
        for h in &hunks[i..=j] {
            while ai < h.0.start {
                push_line(out, b" ", a.lines[ai], ai + 1 == a.lines.len(), a.no_nl);
                ai += 1;
            }
            for k in h.0.clone() {
                push_line(out, b"-", a.lines[k], k + 1 == a.lines.len(), a.no_nl);
            }
            for k in h.1.clone() {
                push_line(out, b"+", b.lines[k], k + 1 == b.lines.len(), b.no_nl);
            }
            ai = h.0.end;
        }
        while ai < a_end {
            push_line(
                out,
                b" ",
                a.lines[ai],
                ai + 1 == a.lines.len(),
                a.no_nl && b.no_nl,
            );
            ai += 1;
        }
        i = j + 1;
    }
}

#[derive(Default, Clone)]
struct D {
    unified: Option<usize>,
    brief: bool,
    recursive: bool,
    icase: bool,
    all_space: bool,
    space_change: bool,
    blank: bool,
    new_file: bool,
}

/// Most lines two files compared may have together.
const MAX_LINES: usize = 1 << 22;

/// A line as compared: itself, or a copy with case or blanks changed.
fn normalize<'a>(l: &'a [u8], d: &D) -> Cow<'a, [u8]> {
    if !d.icase && !d.all_space && !d.space_change {
        return Cow::Borrowed(l);
    }
    Cow::Owned(normalize_owned(l, d))
}

fn normalize_owned(l: &[u8], d: &D) -> Vec<u8> {
    let mut v = if d.icase {
        l.to_ascii_lowercase()
    } else {
        l.to_vec()
    };
    if d.all_space {
        v.retain(|c| !c.is_ascii_whitespace());
    } else if d.space_change {
        let mut o = Vec::new();
        let mut sp = false;
        for &c in crate::bytes::trim_blanks(&v) {
            if c == b' ' || c == b'\t' {
                sp = true;
                continue;
            }
            if sp {
                o.push(b' ');
                sp = false;
            }
            o.push(c);
        }
        v = o;
    }
    v
}

fn header(name: &[u8], host: Option<&std::path::Path>) -> String {
    let t = host
        .and_then(|h| std::fs::metadata(h).ok())
        .and_then(|m| m.modified().ok())
        .map(super::time::epoch)
        .unwrap_or((0, 0));
    let tm = super::time::gmtime(t.0, t.1);
    format!(
        "{}\t{}",
        lossy(name),
        super::time::strftime("%Y-%m-%d %H:%M:%S.%N +0000", &tm, t.0)
    )
}

/// Compares two files' contents; returns 0 same, 1 different.
fn diff_files(
    u: &Ctx,
    d: &D,
    names: (&[u8], &[u8]),
    data: (&[u8], &[u8]),
    out: &mut Vec<u8>,
) -> i32 {
    let count = |x: &[u8]| memchr::memchr_iter(b'\n', x).count() + 1;
    if count(data.0) + count(data.1) > MAX_LINES {
        u.err(format!(
            "{} and {}: more than {MAX_LINES} lines together; too large to compare",
            lossy(names.0),
            lossy(names.1)
        ));
        return 2;
    }
    let (a, b) = (side(data.0), side(data.1));
    let na: Vec<Cow<[u8]>> = a.lines.iter().map(|l| normalize(l, d)).collect();
    let nb: Vec<Cow<[u8]>> = b.lines.iter().map(|l| normalize(l, d)).collect();
    let ops = match diff_ops(&na, &nb) {
        Ok(o) => o,
        Err(e) => {
            u.err(format!("{} and {}: {e}", lossy(names.0), lossy(names.1)));
            return 2;
        }
    };
    let mut hunks = changes(&ops);
    if d.blank {
        hunks.retain(|(ar, br)| {
            !(ar.clone().all(|i| a.lines[i].is_empty())
                && br.clone().all(|i| b.lines[i].is_empty()))
        });
    }
    let eol_differs = a.no_nl != b.no_nl && hunks.is_empty() && !a.lines.is_empty();
    if hunks.is_empty() && !eol_differs {
        return 0;
    }
    if d.brief {
        out.extend(
            format!("Files {} and {} differ\n", lossy(names.0), lossy(names.1)).into_bytes(),
        );
        return 1;
    }
    if eol_differs {
        let last = a.lines.len() - 1;
        hunks.push((last..last + 1, last..last + 1));
    }
    match d.unified {
        Some(ctx) => {
            out.extend(
                format!("--- {}\n", header(names.0, u.host(names.0).ok().as_deref())).into_bytes(),
            );
            out.extend(
                format!("+++ {}\n", header(names.1, u.host(names.1).ok().as_deref())).into_bytes(),
            );
            unified(&a, &b, &hunks, ctx, out);
        }
        None => normal(&a, &b, &hunks, out),
    }
    1
}

fn list(host: &std::path::Path) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = std::fs::read_dir(host)
        .map(|rd| {
            rd.flatten()
                .map(|e| crate::fs::name_bytes(&e.file_name()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn diff_paths(u: &Ctx, d: &D, a: &[u8], b: &[u8], out: &mut Vec<u8>, depth: usize) -> i32 {
    let ha = u.host(a).ok().filter(|h| h.exists() || a == b"-");
    let hb = u.host(b).ok().filter(|h| h.exists() || b == b"-");
    let (da, db) = (
        ha.as_ref().is_some_and(|h| h.is_dir()),
        hb.as_ref().is_some_and(|h| h.is_dir()),
    );
    if ha.is_none() && a != b"-" && !d.new_file {
        u.err(format!("{}: No such file or directory", lossy(a)));
        return 2;
    }
    if hb.is_none() && b != b"-" && !d.new_file {
        u.err(format!("{}: No such file or directory", lossy(b)));
        return 2;
    }
    if da && db {
        if depth > 0 && !d.recursive {
            out.extend(
                format!("Common subdirectories: {} and {}\n", lossy(a), lossy(b)).into_bytes(),
            );
            return 0;
        }
        if depth > 64 {
            return 2;
        }
        let (la, lb) = (
            list(ha.as_deref().unwrap_or(std::path::Path::new(""))),
            list(hb.as_deref().unwrap_or(std::path::Path::new(""))),
        );
        let mut names: Vec<Vec<u8>> = la.iter().chain(lb.iter()).cloned().collect();
        names.sort();
        names.dedup();
        let mut status = 0;
        for n in names {
            let (pa, pb) = (super::walk::join(a, &n), super::walk::join(b, &n));
            match (la.contains(&n), lb.contains(&n)) {
                (true, false) if !d.new_file => {
                    out.extend(format!("Only in {}: {}\n", lossy(a), lossy(&n)).into_bytes());
                    status = status.max(1);
                }
                (false, true) if !d.new_file => {
                    out.extend(format!("Only in {}: {}\n", lossy(b), lossy(&n)).into_bytes());
                    status = status.max(1);
                }
                _ => {
                    let sub_dirs = u.host(&pa).map(|h| h.is_dir()).unwrap_or(false);
                    if !sub_dirs && d.unified.is_none() && !d.brief {
                        let mut tmp = Vec::new();
                        let st = diff_paths(u, d, &pa, &pb, &mut tmp, depth + 1);
                        if st == 1 {
                            out.extend(
                                format!("diff {} {}\n", lossy(&pa), lossy(&pb)).into_bytes(),
                            );
                        }
                        out.extend(tmp);
                        status = status.max(st);
                    } else {
                        status = status.max(diff_paths(u, d, &pa, &pb, out, depth + 1));
                    }
                }
            }
        }
        return status;
    }
    let (a, b) = if da {
        (super::walk::join(a, crate::fs::base_name(b)), b.to_vec())
    } else if db {
        (a.to_vec(), super::walk::join(b, crate::fs::base_name(a)))
    } else {
        (a.to_vec(), b.to_vec())
    };
    let read = |p: &[u8]| -> Result<Vec<u8>, i32> {
        match u.read_input(p) {
            Ok(d) => Ok(d),
            Err(_) if d.new_file => Ok(Vec::new()),
            Err(e) => {
                u.err_path(p, &e);
                Err(2)
            }
        }
    };
    let (xa, xb) = match (read(&a), read(&b)) {
        (Ok(x), Ok(y)) => (x, y),
        _ => return 2,
    };
    diff_files(u, d, (&a, &b), (&xa, &xb), out)
}

/// `diff [-u|-U N] [-q] [-r] [-N] [-i] [-w] [-b] [-B] A B`.
pub fn diff(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "diff");
    let (opts, files) = match getopt(
        &argv[1..],
        b"UCLx",
        &["unified", "context", "label", "exclude"],
        true,
    ) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 2;
        }
    };
    let mut d = D::default();
    for o in opts {
        match o {
            Opt::Short(b'u', _) => d.unified = Some(3),
            Opt::Short(b'U', v) | Opt::Long(_, v @ Some(_)) => {
                d.unified = Some(v.and_then(|v| lossy(&v).parse().ok()).unwrap_or(3))
            }
            Opt::Short(b'q', _) => d.brief = true,
            Opt::Short(b'r', _) => d.recursive = true,
            Opt::Short(b'N', _) => d.new_file = true,
            Opt::Short(b'i', _) => d.icase = true,
            Opt::Short(b'w', _) => d.all_space = true,
            Opt::Short(b'b', _) => d.space_change = true,
            Opt::Short(b'B', _) => d.blank = true,
            Opt::Long(n, None) => match n.as_str() {
                "unified" => d.unified = Some(3),
                "brief" => d.brief = true,
                "recursive" => d.recursive = true,
                "new-file" => d.new_file = true,
                "ignore-case" => d.icase = true,
                "ignore-all-space" => d.all_space = true,
                _ => {}
            },
            _ => {}
        }
    }
    if files.len() != 2 {
        u.err(if files.len() < 2 {
            "missing operand"
        } else {
            "extra operand"
        });
        return 2;
    }
    let mut out = Vec::new();
    let st = diff_paths(&u, &d, &files[0], &files[1], &mut out, 0);
    let _ = u.out(&out);
    st
}

/// `cmp [-s] A B`.
pub fn cmp(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "cmp");
    let (opts, files) = match getopt(&argv[1..], b"in", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 2;
        }
    };
    let silent = opts.iter().any(|o| {
        matches!(o, Opt::Short(b's', _))
            || matches!(o, Opt::Long(n, _) if n == "silent" || n == "quiet")
    });
    if files.len() < 2 {
        u.err("missing operand");
        return 2;
    }
    let mut failed = false;
    let ins = u.inputs(&files[..2], &mut failed);
    if failed {
        return 2;
    }
    let (a, b) = (&ins[0].1, &ins[1].1);
    let n = prefix(a, b);
    if n == a.len() && n == b.len() {
        return 0;
    }
    if !silent {
        let line = a[..n].iter().filter(|&&c| c == b'\n').count() + 1;
        if n == a.len() || n == b.len() {
            let short = if n == a.len() { &files[0] } else { &files[1] };
            u.err(format!(
                "EOF on {} after byte {n}, line {}",
                lossy(short),
                line - 1
            ));
        } else {
            let _ = u.out(
                format!(
                    "{} {} differ: byte {}, line {line}\n",
                    lossy(&files[0]),
                    lossy(&files[1]),
                    n + 1
                )
                .as_bytes(),
            );
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(a: &[&str], b: &[&str]) -> Vec<String> {
        let ops = diff_ops(a, b).unwrap();
        let mut out = Vec::new();
        for op in ops {
            match op {
                Op::Equal(x, _, n) => out.extend(a[x..x + n].iter().map(|s| s.to_string())),
                Op::Insert(y, n) => out.extend(b[y..y + n].iter().map(|s| s.to_string())),
                Op::Delete(..) => {}
            }
        }
        out
    }

    #[test]
    fn edits_rebuild_the_new_side() {
        let a = ["a", "b", "c", "d", "e", "f"];
        let b = ["a", "x", "c", "d", "y", "f", "g"];
        assert_eq!(apply(&a, &b), b);
        assert_eq!(apply(&[], &b), b);
        assert_eq!(apply(&a, &[]), Vec::<String>::new());
        let c: Vec<String> = (0..300).map(|i| format!("{}", i * 7 % 13)).collect();
        let d: Vec<String> = (0..280).map(|i| format!("{}", i * 5 % 11)).collect();
        let cr: Vec<&str> = c.iter().map(|s| s.as_str()).collect();
        let dr: Vec<&str> = d.iter().map(|s| s.as_str()).collect();
        assert_eq!(apply(&cr, &dr), d);
    }
}
