//! Text streams: `cat`, `wc`, `nl`, `paste`, `tac`, `rev`, `yes`, `tee`,
//! `fold`.

use super::{Chunked, Ctx, Opt, getopt};
use crate::exec::Shell;
use crate::fs::Target;
use crate::io::{Io, put};

fn bad(u: &Ctx, e: String) -> i32 {
    u.err(e);
    1
}

/// `cat [-nbsEATv] [FILE…]`.
pub fn cat(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "cat");
    let (opts, files) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let (mut number, mut nonblank, mut squeeze, mut ends, mut tabs) =
        (false, false, false, false, false);
    for o in &opts {
        match o {
            Opt::Short(b'n', _) => number = true,
            Opt::Short(b'b', _) => nonblank = true,
            Opt::Short(b's', _) => squeeze = true,
            Opt::Short(b'E', _) | Opt::Short(b'e', _) => ends = true,
            Opt::Short(b'T', _) | Opt::Short(b't', _) => tabs = true,
            Opt::Short(b'A', _) => {
                ends = true;
                tabs = true;
            }
            Opt::Short(b'v', _) | Opt::Short(b'u', _) => {}
            Opt::Long(n, _) if n == "number" => number = true,
            Opt::Long(n, _) if n == "show-ends" => ends = true,
            other => return bad(&u, format!("invalid option {other:?}")),
        }
    }
    let plain = !(number || nonblank || squeeze || ends || tabs);
    let files = if files.is_empty() {
        vec![b"-".to_vec()]
    } else {
        files
    };
    let mut status = 0;
    let mut line_no = 0usize;
    let mut prev_blank = false;
    for f in &files {
        let data = match u.read_input(f) {
            Ok(d) => d,
            Err(e) => {
                u.err_path(f, &e);
                status = 1;
                continue;
            }
        };
        if plain {
            if u.out(&data).is_err() {
                return status;
            }
            continue;
        }
        let mut out = Vec::with_capacity(data.len() + data.len() / 8);
        for line in data.split_inclusive(|&c| c == b'\n') {
            let body = line.strip_suffix(b"\n").unwrap_or(line);
            let blank = body.is_empty();
            if squeeze && blank && prev_blank {
                continue;
            }
            prev_blank = blank;
            if (number && !nonblank) || (nonblank && !blank) {
                line_no += 1;
                out.extend(format!("{line_no:6}\t").into_bytes());
            }
            for &c in body {
                if tabs && c == b'\t' {
                    out.extend_from_slice(b"^I");
                } else {
                    out.push(c);
                }
            }
            if line.ends_with(b"\n") {
                if ends {
                    out.push(b'$');
                }
                out.push(b'\n');
            }
        }
        if u.out(&out).is_err() {
            return status;
        }
    }
    status
}

/// `wc [-lwcmL] [FILE…]`.
pub fn wc(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "wc");
    let (opts, files) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let mut want = [false; 5]; // lines words chars bytes maxlen
    for o in &opts {
        match o {
            Opt::Short(b'l', _) => want[0] = true,
            Opt::Short(b'w', _) => want[1] = true,
            Opt::Short(b'm', _) => want[2] = true,
            Opt::Short(b'c', _) => want[3] = true,
            Opt::Short(b'L', _) => want[4] = true,
            Opt::Long(n, _) => match n.as_str() {
                "lines" => want[0] = true,
                "words" => want[1] = true,
                "chars" => want[2] = true,
                "bytes" => want[3] = true,
                "max-line-length" => want[4] = true,
                _ => return bad(&u, format!("unrecognized option '--{n}'")),
            },
            other => return bad(&u, format!("invalid option {other:?}")),
        }
    }
    if !want.iter().any(|&w| w) {
        want = [true, true, false, true, false];
    }
    let mut status = 0;
    let mut rows: Vec<([usize; 5], Option<Vec<u8>>)> = Vec::new();
    let mut total = [0usize; 5];
    let mut from_stdin = files.is_empty();
    let inputs: Vec<Vec<u8>> = if files.is_empty() {
        vec![b"-".to_vec()]
    } else {
        files.clone()
    };
    let mut size_sum = 0usize;
    for f in &inputs {
        if f == b"-" {
            from_stdin = true;
        }
        let data = match u.read_input(f) {
            Ok(d) => d,
            Err(e) => {
                u.err_path(f, &e);
                status = 1;
                continue;
            }
        };
        size_sum += data.len();
        let mut c = [0usize; 5];
        c[0] = data.iter().filter(|&&b| b == b'\n').count();
        c[1] = data
            .split(|b| b.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
            .count();
        c[2] = String::from_utf8_lossy(&data).chars().count();
        c[3] = data.len();
        c[4] = data
            .split(|&b| b == b'\n')
            .map(|l| String::from_utf8_lossy(l).chars().count())
            .max()
            .unwrap_or(0);
        for i in 0..4 {
            total[i] += c[i];
        }
        total[4] = total[4].max(c[4]);
        rows.push((
            c,
            if files.is_empty() {
                None
            } else {
                Some(f.clone())
            },
        ));
    }
    if inputs.len() > 1 {
        rows.push((total, Some(b"total".to_vec())));
    }
    let single = want.iter().filter(|&&w| w).count() == 1 && inputs.len() == 1;
    let width = if single {
        1
    } else {
        let w = size_sum.max(1).to_string().len();
        if from_stdin { w.max(7) } else { w }
    };
    let mut out = Vec::new();
    for (c, name) in rows {
        let nums: Vec<String> = (0..5)
            .filter(|&i| want[i])
            .map(|i| format!("{:>width$}", c[i]))
            .collect();
        out.extend(nums.join(" ").into_bytes());
        if let Some(n) = name {
            out.push(b' ');
            out.extend(n);
        }
        out.push(b'\n');
    }
    let _ = u.out(&out);
    status
}

/// `nl [-b a|t|n] [-n ln|rn|rz] [-w N] [-s SEP] [-v N] [-i N] [FILE…]`.
pub fn nl(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "nl");
    let (opts, files) = match getopt(&argv[1..], b"bnwsvi", &[], true) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let (mut style, mut fmt, mut width, mut sep, mut start, mut incr) =
        (b't', b"rn".to_vec(), 6usize, b"\t".to_vec(), 1i64, 1i64);
    for o in opts {
        if let Opt::Short(c, Some(v)) = o {
            let num = || String::from_utf8_lossy(&v).parse::<i64>().unwrap_or(1);
            match c {
                b'b' => style = v.first().copied().unwrap_or(b't'),
                b'n' => fmt = v.clone(),
                b'w' => {
                    let w = num();
                    if !(1..=1 << 20).contains(&w) {
                        u.err(format!(
                            "{}: invalid line number field width",
                            String::from_utf8_lossy(&v)
                        ));
                        return 1;
                    }
                    width = w as usize;
                }
                b's' => sep = v.clone(),
                b'v' => start = num(),
                b'i' => incr = num(),
                _ => {}
            }
        }
    }
    let mut failed = false;
    let mut out = Chunked::new(u.io.stdout());
    let mut n = start;
    let blank = vec![b' '; width.saturating_add(sep.len())];
    for (_, data) in u.inputs(&files, &mut failed) {
        for line in crate::bytes::lines(&data) {
            let numbered = match style {
                b'a' => true,
                b'n' => false,
                _ => !line.is_empty(),
            };
            if numbered {
                let s = match fmt.as_slice() {
                    b"ln" => crate::bytes::pad_right(&n.to_string(), width),
                    b"rz" => crate::bytes::zero_pad(&n.to_string(), width),
                    _ => crate::bytes::pad_left(&n.to_string(), width, ' '),
                };
                let Some(next) = n.checked_add(incr) else {
                    let _ = out.flush();
                    u.err("line number overflow");
                    return 1;
                };
                n = next;
                if out.put(s.as_bytes()).is_err() || out.put(&sep).is_err() {
                    return failed as i32;
                }
            } else if out.put(&blank).is_err() {
                return failed as i32;
            }
            if out.put(line).is_err() || out.put(b"\n").is_err() {
                return failed as i32;
            }
        }
    }
    let _ = out.flush();
    failed as i32
}

/// `paste [-s] [-d LIST] FILE…`.
pub fn paste(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "paste");
    let (opts, files) = match getopt(&argv[1..], b"d", &["delimiters"], true) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let mut serial = false;
    let mut delims = b"\t".to_vec();
    for o in opts {
        match o {
            Opt::Short(b's', _) => serial = true,
            Opt::Short(b'd', Some(v)) | Opt::Long(_, Some(v)) => {
                delims = crate::util::printf::expand_b(&v).0;
            }
            _ => {}
        }
    }
    if delims.is_empty() {
        delims = vec![];
    }
    let files = if files.is_empty() {
        vec![b"-".to_vec()]
    } else {
        files
    };
    let mut failed = false;
    // Each column reads its source a line at a time; several `-` share
    // standard input, line by line, in turn. Sources are read whole, all
    // together at most MAX_FILE_READ bytes.
    let mut sources: Vec<(Vec<u8>, usize)> = Vec::new();
    let mut stdin_slot = None;
    let mut cols: Vec<usize> = Vec::new();
    let mut total = 0usize;
    for f in &files {
        if f == b"-" {
            let slot = *stdin_slot.get_or_insert_with(|| {
                sources.push((u.stdin(), 0));
                sources.len() - 1
            });
            cols.push(slot);
            continue;
        }
        let read = match u.target(f) {
            Some(Target::Path(h)) => {
                super::read_file_at_most(&h, super::MAX_FILE_READ.saturating_sub(total))
            }
            _ => u.read_input(f),
        };
        match read {
            Ok(d) => {
                total += d.len();
                sources.push((d, 0));
                cols.push(sources.len() - 1);
            }
            Err(e) => {
                u.err_path(f, &e);
                failed = true;
            }
        }
    }
    // The next line of a source (without its newline), if any.
    fn next(src: &mut (Vec<u8>, usize)) -> Option<std::ops::Range<usize>> {
        let (data, pos) = src;
        if *pos >= data.len() {
            return None;
        }
        let start = *pos;
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i);
        *pos = end + 1;
        Some(start..end)
    }
    let delim = |i: usize| -> &[u8] {
        if delims.is_empty() {
            &[]
        } else {
            &delims[i % delims.len()..i % delims.len() + 1]
        }
    };
    let mut out = Chunked::new(u.io.stdout());
    if serial {
        for &c in &cols {
            let mut i = 0;
            while let Some(r) = next(&mut sources[c]) {
                if i > 0 && out.put(delim(i - 1)).is_err() {
                    return failed as i32;
                }
                if out.put(&sources[c].0[r]).is_err() {
                    return failed as i32;
                }
                i += 1;
            }
            if out.put(b"\n").is_err() {
                return failed as i32;
            }
        }
    } else {
        loop {
            let mut row = Vec::new();
            let mut any = false;
            for (i, &c) in cols.iter().enumerate() {
                if i > 0 {
                    row.extend_from_slice(delim(i - 1));
                }
                if let Some(r) = next(&mut sources[c]) {
                    row.extend_from_slice(&sources[c].0[r]);
                    any = true;
                }
            }
            if !any {
                break;
            }
            row.push(b'\n');
            if out.put(&row).is_err() {
                return failed as i32;
            }
        }
    }
    let _ = out.flush();
    failed as i32
}

/// `tac [FILE…]`.
pub fn tac(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "tac");
    let mut failed = false;
    let mut out = Vec::new();
    for (_, data) in u.inputs(&argv[1..], &mut failed) {
        for l in crate::bytes::lines(&data)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            out.extend_from_slice(l);
            out.push(b'\n');
        }
    }
    let _ = u.out(&out);
    failed as i32
}

/// `rev [FILE…]`.
pub fn rev(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "rev");
    let mut failed = false;
    let mut out = Vec::new();
    for (_, data) in u.inputs(&argv[1..], &mut failed) {
        for l in crate::bytes::lines(&data) {
            let s = String::from_utf8_lossy(l);
            out.extend(s.chars().rev().collect::<String>().into_bytes());
            out.push(b'\n');
        }
    }
    let _ = u.out(&out);
    failed as i32
}

/// `yes [STRING…]`: repeats until the reader is gone (a pipe fills up).
pub fn yes(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "yes");
    let mut line = if argv.len() > 1 {
        argv[1..].join(&b' ')
    } else {
        b"y".to_vec()
    };
    line.push(b'\n');
    // Whole lines of about 64 KiB at a time (one line if it is longer).
    let mut chunk = line.clone();
    while chunk.len() + line.len() <= 64 * 1024 {
        chunk.extend_from_slice(&line);
    }
    loop {
        if u.out(&chunk).is_err() {
            return 0;
        }
    }
}

/// `tee [-a] [FILE…]`.
pub fn tee(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "tee");
    let (opts, files) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let append = opts
        .iter()
        .any(|o| matches!(o, Opt::Short(b'a', _)) || matches!(o, Opt::Long(n, _) if n == "append"));
    let data = u.stdin();
    let mut status = 0;
    for f in &files {
        let r = match u.target(f) {
            Some(Target::Path(p)) => {
                if append {
                    use std::io::Write;
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&p)
                        .and_then(|mut h| h.write_all(&data))
                } else {
                    std::fs::write(&p, &data)
                }
            }
            Some(Target::Std(fd)) => {
                // `/dev/stdout` gets a second copy, as on a real system.
                let _ = put(&io.out(fd), &data);
                Ok(())
            }
            Some(Target::Null) => Ok(()),
            None => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
        };
        if let Err(e) = r {
            u.err_path(f, &e);
            status = 1;
        }
    }
    let _ = u.out(&data);
    status
}

/// `fold [-w N] [-s] [FILE…]`.
pub fn fold(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "fold");
    let (opts, files) = match getopt(&argv[1..], b"w", &["width"], true) {
        Ok(x) => x,
        Err(e) => return bad(&u, e),
    };
    let mut width = 80usize;
    let mut spaces = false;
    for o in opts {
        match o {
            Opt::Short(b'w', Some(v)) | Opt::Long(_, Some(v)) => {
                width = String::from_utf8_lossy(&v).parse().unwrap_or(80).max(1)
            }
            Opt::Short(b's', _) => spaces = true,
            _ => {}
        }
    }
    let mut failed = false;
    let mut out = Vec::new();
    for (_, data) in u.inputs(&files, &mut failed) {
        for line in crate::bytes::lines(&data) {
            let mut rest = line;
            while rest.len() > width {
                let mut cut = width;
                if spaces && let Some(p) = rest[..width].iter().rposition(|&c| c == b' ') {
                    cut = p + 1;
                }
                out.extend_from_slice(&rest[..cut]);
                out.push(b'\n');
                rest = &rest[cut..];
            }
            out.extend_from_slice(rest);
            out.push(b'\n');
        }
    }
    let _ = u.out(&out);
    failed as i32
}
