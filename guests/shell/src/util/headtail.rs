//! `head` and `tail`: the first or last lines or bytes of files
//! (`head` reads only what it needs from a file).

use super::{Ctx, Opt, getopt};
use crate::exec::Shell;
use crate::fs::Target;
use crate::io::Io;
use std::io::Read;

fn bad(u: &Ctx, e: String) -> i32 {
    u.err(e);
    1
}

/// Reads the start of a file: `bytes` bytes, or up to `lines` newlines.
fn read_prefix(
    u: &Ctx,
    f: &[u8],
    bytes: Option<u64>,
    lines: Option<usize>,
) -> std::io::Result<Vec<u8>> {
    let path = match u.target(f) {
        Some(Target::Path(p)) if f != b"-" => p,
        _ => return u.read_input(f),
    };
    if std::fs::metadata(&path)?.is_dir() {
        return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
    }
    let mut file = std::fs::File::open(&path)?;
    let mut out = Vec::new();
    if let Some(n) = bytes {
        // At most what a utility may hold of a file.
        let cap = super::MAX_FILE_READ as u64;
        file.take(n.min(cap + 1)).read_to_end(&mut out)?;
        if out.len() as u64 > cap {
            return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
        }
        return Ok(out);
    }
    let want = lines.unwrap_or(usize::MAX);
    let mut buf = vec![0u8; 64 * 1024];
    let mut seen = 0usize;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        for (i, &c) in buf[..n].iter().enumerate() {
            if c == b'\n' {
                seen += 1;
                if seen >= want {
                    out.extend_from_slice(&buf[..=i]);
                    return Ok(out);
                }
            }
        }
        out.extend_from_slice(&buf[..n]);
        if out.len() > super::MAX_FILE_READ {
            return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
        }
    }
}

/// `head [-n N|-c N|-N] [-qv] [FILE…]`.
pub fn head(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "head");
    let mut args: Vec<Vec<u8>> = Vec::new();
    let mut operands = false;
    for (k, a) in argv[1..].iter().enumerate() {
        let value = k > 0 && matches!(argv[k].as_slice(), b"-n" | b"-c" | b"--lines" | b"--bytes");
        // After `--` a `-5` is a file name.
        operands |= !value && a == b"--";
        if !operands
            && !value
            && a.len() > 1
            && a[0] == b'-'
            && a[1..].iter().all(|c| c.is_ascii_digit())
        {
            args.push(b"-n".to_vec());
            args.push(a[1..].to_vec());
        } else {
            args.push(a.clone());
        }
    }
    let (opts, files) = match getopt(&args, b"nc", &["lines", "bytes"], true) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let mut lines: i64 = 10;
    let mut bytes: Option<i64> = None;
    let mut headers: Option<bool> = None;
    for o in opts {
        let (key, v) = match o {
            Opt::Short(c, v) => (c, v),
            Opt::Long(n, v) => (
                match n.as_str() {
                    "lines" => b'n',
                    "bytes" => b'c',
                    "quiet" | "silent" => b'q',
                    "verbose" => b'v',
                    _ => 0,
                },
                v,
            ),
        };
        match key {
            b'n' | b'c' => {
                let text = String::from_utf8_lossy(&v.unwrap_or_default()).into_owned();
                let neg = text.starts_with('-');
                let Some(n) = super::parse_size(text.as_bytes()) else {
                    let what = if key == b'n' { "lines" } else { "bytes" };
                    return bad(&u, format!("invalid number of {what}: '{text}'"));
                };
                let n = n.min(i64::MAX as u64) as i64;
                let n = if neg { -n } else { n };
                if key == b'n' {
                    lines = n;
                    bytes = None;
                } else {
                    bytes = Some(n);
                }
            }
            b'q' => headers = Some(false),
            b'v' => headers = Some(true),
            _ => return bad(&u, "invalid option".into()),
        }
    }
    let files = if files.is_empty() {
        vec![b"-".to_vec()]
    } else {
        files
    };
    let show = headers.unwrap_or(files.len() > 1);
    let mut status = 0;
    for (k, f) in files.iter().enumerate() {
        let data = match (bytes, lines) {
            (Some(n), _) if n >= 0 => read_prefix(&u, f, Some(n as u64), None),
            (None, n) if n >= 0 => read_prefix(&u, f, None, Some(size(n.unsigned_abs()))),
            _ => u.read_input(f),
        };
        let data = match data {
            Ok(d) => d,
            Err(e) => {
                if e.kind() == std::io::ErrorKind::IsADirectory {
                    u.err(format!(
                        "error reading '{}': Is a directory",
                        String::from_utf8_lossy(f)
                    ));
                } else {
                    u.err(format!(
                        "cannot open '{}' for reading: {}",
                        String::from_utf8_lossy(f),
                        crate::fs::error_text(&e)
                    ));
                }
                status = 1;
                continue;
            }
        };
        if show {
            let name = if f == b"-" {
                "standard input".to_string()
            } else {
                String::from_utf8_lossy(f).into_owned()
            };
            let sep = if k > 0 { "\n" } else { "" };
            let _ = u.out(format!("{sep}==> {name} <==\n").as_bytes());
        }
        let slice: &[u8] = match bytes {
            Some(n) if n >= 0 => &data[..size(n.unsigned_abs()).min(data.len())],
            Some(n) => &data[..data.len().saturating_sub(size(n.unsigned_abs()))],
            None if lines >= 0 => {
                let want = size(lines.unsigned_abs());
                let mut end = data.len();
                let mut seen = 0;
                for (i, &c) in data.iter().enumerate() {
                    if c == b'\n' {
                        seen += 1;
                        if seen == want {
                            end = i + 1;
                            break;
                        }
                    }
                }
                if want == 0 {
                    end = 0;
                }
                &data[..end]
            }
            None => &data[..last_lines_start(&data, size(lines.unsigned_abs()))],
        };
        if u.out(slice).is_err() {
            break;
        }
    }
    status
}

/// A count as `usize`, saturating (on wasm32 `usize` is 32 bits).
fn size(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Where the last `n` lines of `data` start (`data.len()` for none).
fn last_lines_start(data: &[u8], n: usize) -> usize {
    if n == 0 {
        return data.len();
    }
    let mut count = 0;
    for p in (0..data.len()).rev() {
        if data[p] == b'\n' && p + 1 < data.len() {
            count += 1;
            if count == n {
                return p + 1;
            }
        }
    }
    0
}

/// Where line `k` (from 0) of `data` starts (`data.len()` past the end).
fn line_start(data: &[u8], k: usize) -> usize {
    if k == 0 {
        return 0;
    }
    let mut count = 0;
    for (p, &c) in data.iter().enumerate() {
        if c == b'\n' && p + 1 < data.len() {
            count += 1;
            if count == k {
                return p + 1;
            }
        }
    }
    data.len()
}

/// `tail [-n [+]N|-c [+]N|-N] [-qvf] [FILE…]`.
pub fn tail(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "tail");
    let mut args: Vec<Vec<u8>> = Vec::new();
    let mut operands = false;
    for (k, a) in argv[1..].iter().enumerate() {
        let value = k > 0 && matches!(argv[k].as_slice(), b"-n" | b"-c" | b"--lines" | b"--bytes");
        operands |= !value && a == b"--";
        if !operands
            && !value
            && a.len() > 1
            && (a[0] == b'-' || a[0] == b'+')
            && a[1..].iter().all(|c| c.is_ascii_digit())
        {
            args.push(b"-n".to_vec());
            args.push(if a[0] == b'+' {
                a.clone()
            } else {
                a[1..].to_vec()
            });
        } else {
            args.push(a.clone());
        }
    }
    let (opts, files) = match getopt(
        &args,
        b"ncs",
        &["lines", "bytes", "sleep-interval", "pid"],
        true,
    ) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let mut from_start = false;
    let mut n: usize = 10;
    let mut bytes = false;
    let mut headers: Option<bool> = None;
    for o in opts {
        let (key, v) = match o {
            Opt::Short(c, v) => (c, v),
            Opt::Long(name, v) => (
                match name.as_str() {
                    "lines" => b'n',
                    "bytes" => b'c',
                    "quiet" | "silent" => b'q',
                    "verbose" => b'v',
                    _ => b'f',
                },
                v,
            ),
        };
        match key {
            b'n' | b'c' => {
                let text = String::from_utf8_lossy(&v.unwrap_or_default()).into_owned();
                from_start = text.starts_with('+');
                let Some(k) = super::parse_size(text.as_bytes()) else {
                    return bad(&u, format!("invalid number of lines: '{text}'"));
                };
                n = size(k);
                bytes = key == b'c';
            }
            b'q' => headers = Some(false),
            b'v' => headers = Some(true),
            b'f' | b'F' | b's' | b'r' => {}
            _ => return bad(&u, "invalid option".into()),
        }
    }
    let files = if files.is_empty() {
        vec![b"-".to_vec()]
    } else {
        files
    };
    let show = headers.unwrap_or(files.len() > 1);
    let mut status = 0;
    for (k, f) in files.iter().enumerate() {
        let data = match u.read_input(f) {
            Ok(d) => d,
            Err(e) => {
                u.err(format!(
                    "cannot open '{}' for reading: {}",
                    String::from_utf8_lossy(f),
                    crate::fs::error_text(&e)
                ));
                status = 1;
                continue;
            }
        };
        if show {
            let name = if f == b"-" {
                "standard input".to_string()
            } else {
                String::from_utf8_lossy(f).into_owned()
            };
            let sep = if k > 0 { "\n" } else { "" };
            let _ = u.out(format!("{sep}==> {name} <==\n").as_bytes());
        }
        let slice: &[u8] = if bytes {
            if from_start {
                &data[n.saturating_sub(1).min(data.len())..]
            } else {
                &data[data.len().saturating_sub(n)..]
            }
        } else if from_start {
            &data[line_start(&data, n.saturating_sub(1))..]
        } else if n == 0 {
            &[]
        } else {
            &data[last_lines_start(&data, n)..]
        };
        if u.out(slice).is_err() {
            break;
        }
    }
    status
}
