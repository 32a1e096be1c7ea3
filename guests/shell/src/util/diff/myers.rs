//! Myers' O(ND) difference algorithm in linear space (the middle-snake
//! divide and conquer), over any comparable lines.

use std::ops::Range;

/// One edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Lines equal: `(old, new, len)`.
    Equal(usize, usize, usize),
    /// Old lines removed: `(old, len)`.
    Delete(usize, usize),
    /// New lines added: `(new, len)`.
    Insert(usize, usize),
}

struct V {
    v: Vec<usize>,
    off: isize,
}

impl V {
    fn new(max: usize) -> V {
        V {
            v: vec![0; 2 * max + 2],
            off: max as isize,
        }
    }
    fn get(&self, k: isize) -> usize {
        self.v[(k + self.off) as usize]
    }
    fn set(&mut self, k: isize, x: usize) {
        let i = (k + self.off) as usize;
        self.v[i] = x;
    }
}

pub(super) fn prefix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn suffix<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

fn middle_snake<T: PartialEq>(
    a: &[T],
    ar: Range<usize>,
    b: &[T],
    br: Range<usize>,
    vf: &mut V,
    vb: &mut V,
) -> Option<(usize, usize)> {
    let n = ar.len();
    let m = br.len();
    let delta = n as isize - m as isize;
    let odd = delta & 1 == 1;
    vf.set(1, 0);
    vb.set(1, 0);
    let d_max = (n + m).div_ceil(2) as isize + 1;
    for d in 0..d_max {
        let mut k = d;
        while k >= -d {
            let mut x = if k == -d || (k != d && vf.get(k - 1) < vf.get(k + 1)) {
                vf.get(k + 1)
            } else {
                vf.get(k - 1) + 1
            };
            let y = (x as isize - k) as usize;
            let (x0, y0) = (x, y);
            if x < n && y < m {
                x += prefix(&a[ar.start + x..ar.end], &b[br.start + y..br.end]);
            }
            vf.set(k, x);
            if odd && (k - delta).abs() < d && vf.get(k) + vb.get(-(k - delta)) >= n {
                return Some((x0 + ar.start, y0 + br.start));
            }
            k -= 2;
        }
        let mut k = d;
        while k >= -d {
            let mut x = if k == -d || (k != d && vb.get(k - 1) < vb.get(k + 1)) {
                vb.get(k + 1)
            } else {
                vb.get(k - 1) + 1
            };
            let mut y = (x as isize - k) as usize;
            if x < n && y < m {
                let s = suffix(
                    &a[ar.start..ar.start + n - x],
                    &b[br.start..br.start + m - y],
                );
                x += s;
                y += s;
            }
            vb.set(k, x);
            if !odd && (k - delta).abs() <= d && vb.get(k) + vf.get(-(k - delta)) >= n {
                return Some((n - x + ar.start, m - y + br.start));
            }
            k -= 2;
        }
    }
    None
}

fn conquer<T: PartialEq>(
    a: &[T],
    mut ar: Range<usize>,
    b: &[T],
    mut br: Range<usize>,
    vf: &mut V,
    vb: &mut V,
    out: &mut Vec<Op>,
) {
    let p = prefix(&a[ar.clone()], &b[br.clone()]);
    if p > 0 {
        out.push(Op::Equal(ar.start, br.start, p));
    }
    ar.start += p;
    br.start += p;
    let s = suffix(&a[ar.clone()], &b[br.clone()]);
    ar.end -= s;
    br.end -= s;
    if ar.is_empty() && br.is_empty() {
    } else if br.is_empty() {
        out.push(Op::Delete(ar.start, ar.len()));
    } else if ar.is_empty() {
        out.push(Op::Insert(br.start, br.len()));
    } else if let Some((x, y)) = middle_snake(a, ar.clone(), b, br.clone(), vf, vb) {
        conquer(a, ar.start..x, b, br.start..y, vf, vb, out);
        conquer(a, x..ar.end, b, y..br.end, vf, vb, out);
    } else {
        out.push(Op::Delete(ar.start, ar.len()));
        out.push(Op::Insert(br.start, br.len()));
    }
    if s > 0 {
        out.push(Op::Equal(ar.end, br.end, s));
    }
}

/// Most lines the two sides may differ in (after their common start and
/// end): the search keeps two arrays of that size.
pub const MAX_DIFFERING: usize = 1 << 20;

/// The edits that turn `a` into `b`; `Err` when more than
/// [`MAX_DIFFERING`] lines lie between their common start and end.
pub fn diff_ops<T: PartialEq>(a: &[T], b: &[T]) -> Result<Vec<Op>, String> {
    let p = prefix(a, b);
    let s = suffix(&a[p..], &b[p..]);
    let middle = (a.len() - p - s) + (b.len() - p - s);
    if middle > MAX_DIFFERING {
        return Err(format!(
            "the inputs differ in more than {MAX_DIFFERING} lines; too large to compare"
        ));
    }
    let max = middle + 1;
    let mut vf = V::new(max);
    let mut vb = V::new(max);
    let mut out = Vec::new();
    if p > 0 {
        out.push(Op::Equal(0, 0, p));
    }
    conquer(
        a,
        p..a.len() - s,
        b,
        p..b.len() - s,
        &mut vf,
        &mut vb,
        &mut out,
    );
    if s > 0 {
        out.push(Op::Equal(a.len() - s, b.len() - s, s));
    }
    Ok(out)
}
