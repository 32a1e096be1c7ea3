//! Pathname expansion: matching a pattern's `/`-separated segments against
//! directory entries under `/work`.

use crate::fs::{Fs, Target, name_bytes};
use crate::limits::MAX_FIELDS;
use crate::pattern::{Pattern, has_magic};

/// The paths `pat` matches, sorted (byte order); empty when none.
/// `active` marks the pattern's unquoted bytes.
pub fn glob(fs: &Fs, cwd: &[u8], pat: &[u8], active: &[bool]) -> Vec<Vec<u8>> {
    let absolute = pat.first() == Some(&b'/');
    // Segments with their masks.
    let mut segs: Vec<(&[u8], &[bool])> = Vec::new();
    let mut start = 0;
    for i in 0..=pat.len() {
        if i == pat.len() || pat[i] == b'/' {
            if i > start {
                segs.push((&pat[start..i], &active[start..i]));
            }
            start = i + 1;
        }
    }
    let trailing_slash = pat.len() > 1 && pat.ends_with(b"/");
    let mut cands: Vec<Vec<u8>> = vec![if absolute { b"/".to_vec() } else { Vec::new() }];
    for (n, (seg, mask)) in segs.iter().enumerate() {
        let last = n + 1 == segs.len();
        let mut next = Vec::new();
        if !has_magic(seg, Some(mask)) {
            for c in cands {
                next.push(join(&c, seg));
            }
        } else {
            let p = Pattern::new(seg, Some(mask));
            let dot_ok = seg.first() == Some(&b'.');
            for c in &cands {
                let dir = if c.is_empty() {
                    b".".to_vec()
                } else {
                    c.clone()
                };
                let Ok(host) = host_dir(fs, cwd, &dir) else {
                    continue;
                };
                let Ok(rd) = std::fs::read_dir(host) else {
                    continue;
                };
                let mut names: Vec<Vec<u8>> = Vec::new();
                for e in rd.flatten() {
                    let name = name_bytes(&e.file_name());
                    if name.first() == Some(&b'.') && !dot_ok {
                        continue;
                    }
                    if !p.matches(&name) {
                        continue;
                    }
                    if (!last || trailing_slash)
                        && !e.file_type().map(|t| t.is_dir()).unwrap_or(false)
                    {
                        continue;
                    }
                    names.push(name);
                    if names.len() > MAX_FIELDS {
                        break;
                    }
                }
                names.sort();
                for name in names {
                    next.push(join(c, &name));
                }
            }
        }
        cands = next;
        if cands.is_empty() || cands.len() > MAX_FIELDS {
            return Vec::new();
        }
    }
    let mut out: Vec<Vec<u8>> = cands
        .into_iter()
        .filter(|c| exists(fs, cwd, c))
        .map(|mut c| {
            if trailing_slash {
                c.push(b'/');
            }
            c
        })
        .collect();
    out.sort();
    out
}

fn join(base: &[u8], name: &[u8]) -> Vec<u8> {
    if base.is_empty() {
        name.to_vec()
    } else if base.ends_with(b"/") {
        [base, name].concat()
    } else {
        [base, b"/", name].concat()
    }
}

fn host_dir(fs: &Fs, cwd: &[u8], dir: &[u8]) -> std::io::Result<std::path::PathBuf> {
    fs.host(cwd, dir)
}

fn exists(fs: &Fs, cwd: &[u8], p: &[u8]) -> bool {
    match fs.target(&fs.absolute(cwd, p)) {
        Some(Target::Path(h)) => std::fs::symlink_metadata(h).is_ok(),
        Some(_) => true,
        None => false,
    }
}
