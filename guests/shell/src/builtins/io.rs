//! I/O builtins: `echo`, `printf`, `read`, `mapfile`.

use super::complain;
use crate::bytes::lossy;
use crate::exec::state::Value;
use crate::exec::{R, Shell};
use crate::io::{Io, put};

/// `echo [-neE] ARGS…` (bash's: no escapes unless `-e`).
pub fn echo(_: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut newline = true;
    let mut escapes = false;
    let mut i = 1;
    while let Some(a) = argv.get(i) {
        if a.len() < 2 || a[0] != b'-' || !a[1..].iter().all(|c| b"neE".contains(c)) {
            break;
        }
        for &c in &a[1..] {
            match c {
                b'n' => newline = false,
                b'e' => escapes = true,
                _ => escapes = false,
            }
        }
        i += 1;
    }
    let mut out = Vec::new();
    for (k, a) in argv[i..].iter().enumerate() {
        if k > 0 {
            out.push(b' ');
        }
        if escapes {
            let (text, stop) = crate::util::printf::expand_b(a);
            out.extend(text);
            if stop {
                let _ = put(&io.stdout(), &out);
                return Ok(0);
            }
        } else {
            out.extend_from_slice(a);
        }
    }
    if newline {
        out.push(b'\n');
    }
    let _ = put(&io.stdout(), &out);
    Ok(0)
}

/// `printf [-v VAR] FORMAT [ARGS…]`.
pub fn printf(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut args = &argv[1..];
    let mut var = None;
    if args.first().map(|a| a.as_slice()) == Some(b"-v") && args.len() >= 2 {
        var = Some(args[1].clone());
        args = &args[2..];
    }
    if args.first().map(|a| a.as_slice()) == Some(b"--") {
        args = &args[1..];
    }
    let Some(fmt) = args.first() else {
        complain(io, "printf", "usage: printf [-v var] format [arguments]");
        return Ok(2);
    };
    let f = crate::util::printf::format(fmt, &args[1..]);
    for e in &f.errors {
        complain(io, "printf", e);
    }
    match var {
        Some(_) if f.out.len() > crate::limits::MAX_WORD => {
            complain(
                io,
                "printf",
                &format!(
                    "value exceeds the limit of {} MiB",
                    crate::limits::MAX_WORD >> 20
                ),
            );
            return Ok(1);
        }
        Some(v) => {
            if let Err(e) = sh.vars.set(&v, f.out) {
                complain(io, "printf", &e);
                return Ok(1);
            }
        }
        None => {
            let _ = put(&io.stdout(), &f.out);
        }
    }
    Ok(if f.errors.is_empty() { 0 } else { 1 })
}

/// Splits a line for `read -a`: every field, as many as there are (at
/// most [`crate::limits::MAX_FIELDS`]).
fn split_all(line: &[u8], ifs: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let ws = |c: u8| ifs.contains(&c) && matches!(c, b' ' | b'\t' | b'\n');
    let other = |c: u8| ifs.contains(&c) && !ws(c);
    let mut out = Vec::new();
    let len = line.len();
    let mut i = 0;
    while i < len && ws(line[i]) {
        i += 1;
    }
    while i < len {
        if out.len() >= crate::limits::MAX_FIELDS {
            return Err(format!("more than {} fields", crate::limits::MAX_FIELDS));
        }
        let start = i;
        while i < len && !ifs.contains(&line[i]) {
            i += 1;
        }
        out.push(line[start..i].to_vec());
        while i < len && ws(line[i]) {
            i += 1;
        }
        if i < len && other(line[i]) {
            i += 1;
            while i < len && ws(line[i]) {
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Splits a line read by `read` into `n` fields (the last takes the rest).
fn read_split(line: &[u8], ifs: &[u8], n: usize) -> Vec<Vec<u8>> {
    let ws = |c: u8| ifs.contains(&c) && matches!(c, b' ' | b'\t' | b'\n');
    let other = |c: u8| ifs.contains(&c) && !ws(c);
    let mut out = Vec::new();
    let len = line.len();
    let mut i = 0;
    while i < len && ws(line[i]) {
        i += 1;
    }
    for _ in 0..n.saturating_sub(1) {
        let start = i;
        while i < len && !ifs.contains(&line[i]) {
            i += 1;
        }
        out.push(line[start..i].to_vec());
        while i < len && ws(line[i]) {
            i += 1;
        }
        if i < len && other(line[i]) {
            i += 1;
            while i < len && ws(line[i]) {
                i += 1;
            }
        }
    }
    let mut rest = &line[i.min(len)..];
    while let Some((&last, init)) = rest.split_last() {
        if ws(last) {
            rest = init;
        } else {
            break;
        }
    }
    out.push(rest.to_vec());
    out
}

/// `read [-r] [-p PROMPT] [-d DELIM] [-n N] [-a ARRAY] [-s] [-t T] [NAME…]`.
pub fn read(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut raw = false;
    let mut delim = b'\n';
    let mut count: Option<usize> = None;
    let mut array: Option<Vec<u8>> = None;
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a.len() < 2 || a[0] != b'-' || !names.is_empty() {
            names.push(a.clone());
            i += 1;
            continue;
        }
        let mut j = 1;
        while j < a.len() {
            let c = a[j];
            let takes = matches!(c, b'p' | b'd' | b'n' | b'N' | b'a' | b't' | b'u');
            let val: Option<Vec<u8>> = if takes {
                if j + 1 < a.len() {
                    let v = a[j + 1..].to_vec();
                    j = a.len();
                    Some(v)
                } else {
                    i += 1;
                    j = a.len();
                    argv.get(i).cloned()
                }
            } else {
                j += 1;
                None
            };
            match c {
                b'r' => raw = true,
                b's' | b'e' => {}
                b'p' => {
                    let _ = put(&io.stderr(), &val.unwrap_or_default());
                }
                b'd' => delim = val.and_then(|v| v.first().copied()).unwrap_or(0),
                b'n' | b'N' => count = val.and_then(|v| lossy(&v).parse().ok()),
                b'a' => array = val,
                b't' | b'u' => {}
                _ => {
                    complain(io, "read", &format!("-{}: invalid option", c as char));
                    return Ok(2);
                }
            }
        }
        i += 1;
    }
    let input = io.stdin();
    let mut got: Vec<u8> = Vec::new();
    let mut eof = false;
    loop {
        let chunk = match count {
            Some(n) => {
                let c = input.borrow_mut().read_n(n);
                if c.len() < n {
                    eof = true;
                }
                got.extend(c);
                break;
            }
            None => input.borrow_mut().read_until(delim),
        };
        let Some(mut chunk) = chunk else {
            eof = true;
            break;
        };
        if chunk.last() == Some(&delim) {
            chunk.pop();
        } else {
            eof = true;
        }
        // A backslash-newline continues the line unless -r.
        if !raw && chunk.last() == Some(&b'\\') && !eof && delim == b'\n' {
            let n = chunk.iter().rev().take_while(|&&c| c == b'\\').count();
            if n % 2 == 1 {
                chunk.pop();
                got.extend(chunk);
                continue;
            }
        }
        got.extend(chunk);
        break;
    }
    if eof && got.is_empty() {
        for n in names.iter().chain(array.iter()) {
            let _ = sh.vars.set(n, Vec::new());
        }
        if names.is_empty() && array.is_none() {
            let _ = sh.vars.set(b"REPLY", Vec::new());
        }
        return Ok(1);
    }
    let line = if raw { got } else { unescape(&got) };
    let ifs = sh.ifs();
    let status = if eof { 1 } else { 0 };
    if let Some(arr) = array {
        let fields = match split_all(&line, &ifs) {
            Ok(f) => f,
            Err(e) => {
                complain(io, "read", &e);
                return Ok(1);
            }
        };
        if let Err(e) = sh.vars.set_value(&arr, Value::Arr(fields)) {
            complain(io, "read", &e);
            return Ok(1);
        }
        return Ok(status);
    }
    if names.is_empty() {
        let _ = sh.vars.set(b"REPLY", line);
        return Ok(status);
    }
    let fields = read_split(&line, &ifs, names.len());
    for (n, v) in names.iter().zip(fields) {
        if let Err(e) = sh.vars.set(n, v) {
            complain(io, "read", &e);
            return Ok(1);
        }
    }
    Ok(status)
}

fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            out.push(s[i + 1]);
            i += 2;
        } else {
            out.push(s[i]);
            i += 1;
        }
    }
    out
}

/// `mapfile`/`readarray [-t] [-n COUNT] [-s SKIP] [-d DELIM] [ARRAY]`.
pub fn mapfile(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> R {
    let mut trim = false;
    let mut max: Option<usize> = None;
    let mut skip = 0usize;
    let mut delim = b'\n';
    let mut name = b"MAPFILE".to_vec();
    let mut i = 1;
    while i < argv.len() {
        match argv[i].as_slice() {
            b"-t" => trim = true,
            b"-n" | b"-s" | b"-d" | b"-u" | b"-C" | b"-c" | b"-O" => {
                let v = argv.get(i + 1).cloned().unwrap_or_default();
                match argv[i].as_slice() {
                    b"-n" => max = lossy(&v).parse().ok().filter(|&n| n > 0),
                    b"-s" => skip = lossy(&v).parse().unwrap_or(0),
                    b"-d" => delim = v.first().copied().unwrap_or(0),
                    _ => {}
                }
                i += 1;
            }
            other => name = other.to_vec(),
        }
        i += 1;
    }
    let input = io.stdin();
    let mut items = Vec::new();
    let mut n = 0usize;
    while let Some(mut line) = input.borrow_mut().read_until(delim) {
        n += 1;
        if n <= skip {
            continue;
        }
        if trim && line.last() == Some(&delim) {
            line.pop();
        }
        if items.len() >= crate::limits::MAX_FIELDS {
            complain(
                io,
                "mapfile",
                &format!("more than {} lines", crate::limits::MAX_FIELDS),
            );
            return Ok(1);
        }
        items.push(line);
        if max.is_some_and(|m| items.len() >= m) {
            break;
        }
    }
    if let Err(e) = sh.vars.set_value(&name, Value::Arr(items)) {
        complain(io, "mapfile", &e);
        return Ok(1);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::read_split;

    #[test]
    fn splitting_like_read() {
        let f = read_split(b"  a  b  c  ", b" \t\n", 2);
        assert_eq!(f, vec![b"a".to_vec(), b"b  c".to_vec()]);
        let f = read_split(b"a:b:c", b":", 2);
        assert_eq!(f, vec![b"a".to_vec(), b"b:c".to_vec()]);
        let f = read_split(b"x", b" \t\n", 3);
        assert_eq!(f, vec![b"x".to_vec(), b"".to_vec(), b"".to_vec()]);
    }
}
