//! File system summaries: `stat`, `du`, `tree`.

use super::walk::{Visit, walk};
use super::{Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::fs::Target;
use crate::io::Io;

/// `stat [-c FORMAT|--printf FORMAT] [-t] FILE…`.
pub fn stat(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "stat");
    let (opts, files) = match getopt(&argv[1..], b"c", &["format", "printf"], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mut fmt: Option<(Vec<u8>, bool)> = None;
    for o in opts {
        match o {
            Opt::Short(b'c', Some(v)) => fmt = Some((v, true)),
            Opt::Long(n, Some(v)) if n == "format" => fmt = Some((v, true)),
            Opt::Long(n, Some(v)) if n == "printf" => fmt = Some((v, false)),
            _ => {}
        }
    }
    if files.is_empty() {
        u.err("missing operand");
        return 1;
    }
    let mut status = 0;
    let mut out = Vec::new();
    for f in &files {
        let meta = match u.target(f) {
            Some(Target::Path(h)) => std::fs::symlink_metadata(h),
            _ => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        let m = match meta {
            Ok(m) => m,
            Err(e) => {
                u.err(format!(
                    "cannot statx '{}': {}",
                    lossy(f),
                    crate::fs::error_text(&e)
                ));
                status = 1;
                continue;
            }
        };
        let dir = m.is_dir();
        let size = if dir { 4096 } else { m.len() };
        let (mt, mn) = m.modified().map(super::time::epoch).unwrap_or((0, 0));
        let stamp = |s: i64, n: u32| {
            let tm = super::time::gmtime(s, n);
            super::time::strftime("%Y-%m-%d %H:%M:%S.%N +0000", &tm, s)
        };
        let kind = if dir {
            "directory"
        } else if m.len() == 0 {
            "regular empty file"
        } else {
            "regular file"
        };
        let mode = if dir { "drwxr-xr-x" } else { "-rw-r--r--" };
        let octal = if dir { "755" } else { "644" };
        let blocks = if dir { 8 } else { m.len().div_ceil(4096) * 8 };
        match &fmt {
            Some((fm, newline)) => {
                let mut i = 0;
                while i < fm.len() {
                    if fm[i] == b'%' && i + 1 < fm.len() {
                        let c = fm[i + 1];
                        i += 2;
                        let s = match c {
                            b'n' | b'N' => lossy(f),
                            b's' => size.to_string(),
                            b'F' => kind.to_string(),
                            b'a' => octal.to_string(),
                            b'A' => mode.to_string(),
                            b'U' | b'G' => "root".into(),
                            b'u' | b'g' => "0".into(),
                            b'h' => if dir { "2" } else { "1" }.into(),
                            b'i' => "0".into(),
                            b'b' => blocks.to_string(),
                            b'B' => "512".into(),
                            b'o' => "4096".into(),
                            b'Y' | b'X' | b'Z' | b'W' => mt.to_string(),
                            b'y' | b'x' | b'z' | b'w' => stamp(mt, mn),
                            b'%' => "%".into(),
                            other => format!("%{}", other as char),
                        };
                        out.extend(s.into_bytes());
                    } else if fm[i] == b'\\' && !*newline && i + 1 < fm.len() {
                        let (b, used) = crate::bytes::backslash_escape(&fm[i + 1..], true);
                        out.extend(b);
                        i += 1 + used;
                    } else {
                        out.push(fm[i]);
                        i += 1;
                    }
                }
                if *newline {
                    out.push(b'\n');
                }
            }
            None => {
                let t = stamp(mt, mn);
                out.extend(
                    format!(
                        "  File: {}\n  Size: {size:<15} Blocks: {blocks:<10} IO Block: 4096   {kind}\nDevice: 0h/0d\tInode: 0           Links: {}\nAccess: (0{octal}/{mode})  Uid: (    0/    root)   Gid: (    0/    root)\nAccess: {t}\nModify: {t}\nChange: {t}\n Birth: -\n",
                        lossy(f),
                        if dir { 2 } else { 1 }
                    )
                    .into_bytes(),
                );
            }
        }
    }
    let _ = u.out(&out);
    status
}

fn du_blocks(m: &std::fs::Metadata) -> u64 {
    if m.is_dir() {
        4
    } else {
        m.len().div_ceil(4096) * 4
    }
}

/// `du [-s] [-a] [-c] [-h] [-d N] [PATH…]` (sizes in 1K blocks).
pub fn du(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "du");
    let (opts, mut paths) = match getopt(
        &argv[1..],
        b"dB",
        &["max-depth", "block-size", "exclude"],
        true,
    ) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let (mut summary, mut all, mut total, mut human, mut bytes) =
        (false, false, false, false, false);
    let mut max: Option<usize> = None;
    for o in opts {
        match o {
            Opt::Short(b's', _) => summary = true,
            Opt::Short(b'a', _) => all = true,
            Opt::Short(b'c', _) => total = true,
            Opt::Short(b'h', _) => human = true,
            Opt::Short(b'b', _) => bytes = true,
            Opt::Short(b'd', v) | Opt::Long(_, v @ Some(_)) => {
                max = v.and_then(|v| lossy(&v).parse().ok())
            }
            Opt::Long(n, None) if n == "summarize" => summary = true,
            Opt::Long(n, None) if n == "human-readable" => human = true,
            _ => {}
        }
    }
    if summary {
        max = Some(0);
    }
    if paths.is_empty() {
        paths.push(b".".to_vec());
    }
    // With `-b` the unit is the byte of apparent size (a file's length,
    // a directory's 4096), as GNU du's `--apparent-size --block-size=1`;
    // otherwise KiB blocks.
    let show = |n: u64| -> String {
        if human {
            super::ls::human(if bytes { n } else { n * 1024 })
        } else {
            n.to_string()
        }
    };
    let mut status = 0;
    let mut grand = 0u64;
    let mut out = Vec::new();
    for p in &paths {
        let Ok(host) = u.host(p) else {
            u.err(format!(
                "cannot access '{}': No such file or directory",
                lossy(p)
            ));
            status = 1;
            continue;
        };
        // Post-order sums over a pre-order walk: a stack of open dirs.
        let mut stack: Vec<(Vec<u8>, usize, u64)> = Vec::new();
        let mut lines: Vec<(Vec<u8>, u64, usize)> = Vec::new();
        let close = |stack: &mut Vec<(Vec<u8>, usize, u64)>,
                     lines: &mut Vec<(Vec<u8>, u64, usize)>,
                     depth: usize| {
            while stack.last().is_some_and(|(_, d, _)| *d >= depth) {
                if let Some((path, d, sum)) = stack.pop() {
                    if let Some(parent) = stack.last_mut() {
                        parent.2 += sum;
                    }
                    lines.push((path, sum, d));
                }
            }
        };
        let r = walk(
            p,
            host,
            None,
            |e| {
                close(&mut stack, &mut lines, e.depth);
                let b = if bytes {
                    if e.is_dir() { 4096 } else { e.meta.len() }
                } else {
                    du_blocks(&e.meta)
                };
                if e.is_dir() {
                    stack.push((e.path.clone(), e.depth, b));
                } else {
                    if let Some(parent) = stack.last_mut() {
                        parent.2 += b;
                    }
                    if all || e.depth == 0 {
                        lines.push((e.path.clone(), b, e.depth));
                    }
                }
                Visit::Continue
            },
            |_, _| {},
        );
        close(&mut stack, &mut lines, 0);
        if let Err(e) = r {
            u.err_path(p, &e);
            status = 1;
            continue;
        }
        for (path, size, depth) in lines {
            if depth == 0 {
                grand += size;
            }
            if max.is_some_and(|m| depth > m) {
                continue;
            }
            out.extend(format!("{}\t", show(size)).into_bytes());
            out.extend(path);
            out.push(b'\n');
        }
    }
    if total {
        out.extend(format!("{}\ttotal\n", show(grand)).into_bytes());
    }
    let _ = u.out(&out);
    status
}

/// `tree [-a] [-d] [-L N] [PATH…]`.
pub fn tree(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "tree");
    let (opts, mut paths) = match getopt(&argv[1..], b"LPI", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let (mut all, mut dirs_only) = (false, false);
    let mut level: Option<usize> = None;
    let mut ignore: Option<crate::pattern::Pattern> = None;
    for o in opts {
        match o {
            Opt::Short(b'a', _) => all = true,
            Opt::Short(b'd', _) => dirs_only = true,
            Opt::Short(b'L', v) => level = v.and_then(|v| lossy(&v).parse().ok()),
            Opt::Short(b'I', Some(v)) => ignore = Some(crate::pattern::Pattern::new(&v, None)),
            _ => {}
        }
    }
    if paths.is_empty() {
        paths.push(b".".to_vec());
    }
    let mut out = Vec::new();
    let (mut ndirs, mut nfiles) = (0usize, 0usize);
    let mut status = 0;
    for p in &paths {
        let Ok(host) = u.host(p) else {
            out.extend(format!("{} [error opening dir]\n", lossy(p)).into_bytes());
            status = 2;
            continue;
        };
        // Which entries are last among their siblings: collect first.
        let mut items: Vec<(Vec<u8>, usize, bool)> = Vec::new();
        let r = walk(
            p,
            host,
            level,
            |e| {
                let name = crate::fs::base_name(&e.path).to_vec();
                if e.depth > 0 {
                    let hidden = name.first() == Some(&b'.');
                    if (hidden && !all)
                        || (dirs_only && !e.is_dir())
                        || ignore.as_ref().is_some_and(|i| i.matches(&name))
                    {
                        return Visit::Skip;
                    }
                }
                items.push((
                    if e.depth == 0 { e.path.clone() } else { name },
                    e.depth,
                    e.is_dir(),
                ));
                Visit::Continue
            },
            |_, _| {},
        );
        if r.is_err() {
            out.extend(format!("{} [error opening dir]\n", lossy(p)).into_bytes());
            status = 2;
            continue;
        }
        let mut open: Vec<bool> = Vec::new();
        for (k, (name, depth, is_dir)) in items.iter().enumerate() {
            if *depth == 0 {
                out.extend_from_slice(name);
                out.push(b'\n');
                continue;
            }
            let last = !items[k + 1..]
                .iter()
                .take_while(|x| x.1 >= *depth)
                .any(|x| x.1 == *depth);
            open.truncate(depth - 1);
            for &more in &open[..depth - 1] {
                out.extend_from_slice(if more { "│   ".as_bytes() } else { b"    " });
            }
            out.extend_from_slice(if last {
                "└── ".as_bytes()
            } else {
                "├── ".as_bytes()
            });
            out.extend_from_slice(name);
            out.push(b'\n');
            open.push(!last);
            if *is_dir {
                ndirs += 1;
            } else {
                nfiles += 1;
            }
        }
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let summary = if dirs_only {
        format!("\n{}\n", plural(ndirs, "directory", "directories"))
    } else {
        format!(
            "\n{}, {}\n",
            plural(ndirs, "directory", "directories"),
            plural(nfiles, "file", "files")
        )
    };
    out.extend(summary.into_bytes());
    let _ = u.out(&out);
    status
}
