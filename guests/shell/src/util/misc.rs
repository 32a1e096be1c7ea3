//! Small utilities: `seq`, `date`, `sleep`, `uname`, `whoami`, `id`,
//! `hostname`, `nproc`, `expr`.

use super::{Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::io::Io;

/// `seq [-s SEP] [-w] [-f FMT] [FIRST [INCR]] LAST`.
pub fn seq(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "seq");
    // Negative numbers are operands, not options.
    let mut sep = b"\n".to_vec();
    let mut width = false;
    let mut fmt: Option<Vec<u8>> = None;
    let mut nums: Vec<String> = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let is_num = a.len() > 1 && a[0] == b'-' && (a[1].is_ascii_digit() || a[1] == b'.');
        if a.starts_with(b"-") && a.len() > 1 && !is_num {
            match a.as_slice() {
                b"-s" => {
                    i += 1;
                    sep = argv.get(i).cloned().unwrap_or_default();
                }
                b"-w" => width = true,
                b"-f" => {
                    i += 1;
                    fmt = argv.get(i).cloned();
                }
                _ if a.starts_with(b"-s") => sep = a[2..].to_vec(),
                _ if a.starts_with(b"-f") => fmt = Some(a[2..].to_vec()),
                _ => {
                    u.err(format!("invalid option -- '{}'", lossy(&a[1..])));
                    return 1;
                }
            }
        } else {
            nums.push(lossy(a));
        }
        i += 1;
    }
    let (first, incr, last) = match nums.len() {
        1 => ("1".to_string(), "1".to_string(), nums[0].clone()),
        2 => (nums[0].clone(), "1".to_string(), nums[1].clone()),
        3 => (nums[0].clone(), nums[1].clone(), nums[2].clone()),
        0 => {
            u.err("missing operand");
            return 1;
        }
        _ => {
            u.err(format!("extra operand '{}'", nums[3]));
            return 1;
        }
    };
    let parse = |s: &str| -> Option<f64> { s.trim().parse::<f64>().ok().filter(|v| v.is_finite()) };
    let (Some(a), Some(d), Some(b)) = (parse(&first), parse(&incr), parse(&last)) else {
        let bad = [&first, &incr, &last]
            .into_iter()
            .find(|s| parse(s).is_none())
            .cloned()
            .unwrap_or_default();
        u.err(format!("invalid floating point argument: '{bad}'"));
        return 1;
    };
    if d == 0.0 {
        u.err(format!("invalid Zero increment value: '{incr}'"));
        return 1;
    }
    let decimals = [&first, &incr]
        .iter()
        .map(|s| s.split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    let ints = decimals == 0 && [a, d, b].iter().all(|v| v.fract() == 0.0 && v.abs() < 9e15);
    let w = if width {
        [first.len(), last.len()].into_iter().max().unwrap_or(1)
    } else {
        0
    };
    let mut out = Vec::with_capacity(64 * 1024);
    let mut k: u64 = 0;
    loop {
        let v = a + d * k as f64;
        if (d > 0.0 && v > b + 1e-9 * d.abs()) || (d < 0.0 && v < b - 1e-9 * d.abs()) {
            break;
        }
        if k > 0 {
            out.extend_from_slice(&sep);
        }
        let text = match &fmt {
            Some(f) => {
                let spec_end = f.iter().position(|&c| c == b'%');
                match spec_end {
                    Some(_) => {
                        let r = super::printf::format(f, &[format!("{v}").into_bytes()]);
                        if let Some(e) = r.errors.first() {
                            let _ = u.out(&out);
                            u.err(e);
                            return 1;
                        }
                        r.out
                    }
                    None => f.clone(),
                }
            }
            None if ints => {
                let n = v as i64;
                if width {
                    crate::bytes::zero_pad(&n.to_string(), w).into_bytes()
                } else {
                    n.to_string().into_bytes()
                }
            }
            None => crate::bytes::zero_pad(&super::printf::fixed(v, decimals), w).into_bytes(),
        };
        out.extend(text);
        if out.len() >= 60 * 1024 {
            if u.out(&out).is_err() {
                return 0;
            }
            out.clear();
        }
        k += 1;
    }
    if k > 0 {
        out.push(b'\n');
    }
    let _ = u.out(&out);
    0
}

/// `date [-u] [-d DATE] [-r FILE] [-I[…]] [-R] [+FORMAT]` (always UTC).
pub fn date(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "date");
    let (opts, ops) = match getopt(&argv[1..], b"drs", &["date", "reference", "set"], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let (mut secs, mut nanos) = super::time::now();
    let mut fmt = "%a %b %e %H:%M:%S %Z %Y".to_string();
    for o in opts {
        match o {
            Opt::Short(b'd', Some(v)) => {
                let text = lossy(&v);
                match super::time::parse_date(&text, secs) {
                    Some(s) => {
                        secs = s;
                        nanos = 0;
                    }
                    None => {
                        u.err(format!("invalid date '{text}'"));
                        return 1;
                    }
                }
            }
            Opt::Long(n, Some(v)) if n == "date" => {
                let text = lossy(&v);
                match super::time::parse_date(&text, secs) {
                    Some(s) => {
                        secs = s;
                        nanos = 0;
                    }
                    None => {
                        u.err(format!("invalid date '{text}'"));
                        return 1;
                    }
                }
            }
            Opt::Short(b'r', Some(f)) => match u
                .host(&f)
                .and_then(std::fs::metadata)
                .and_then(|m| m.modified())
            {
                Ok(t) => (secs, nanos) = super::time::epoch(t),
                Err(e) => {
                    u.err_path(&f, &e);
                    return 1;
                }
            },
            Opt::Short(b's', _) => {
                u.err("cannot set date: Operation not permitted");
                return 1;
            }
            Opt::Short(b'I', v) => {
                fmt = match v.as_deref() {
                    Some(b"seconds") => "%Y-%m-%dT%H:%M:%S+00:00".into(),
                    Some(b"minutes") => "%Y-%m-%dT%H:%M+00:00".into(),
                    Some(b"hours") => "%Y-%m-%dT%H+00:00".into(),
                    Some(b"ns") => "%Y-%m-%dT%H:%M:%S,%N+00:00".into(),
                    _ => "%Y-%m-%d".into(),
                }
            }
            Opt::Short(b'R', _) => fmt = "%a, %d %b %Y %H:%M:%S +0000".into(),
            Opt::Long(n, _) if n.starts_with("iso-8601") => fmt = "%Y-%m-%d".into(),
            Opt::Long(n, _) if n.starts_with("rfc-3339") => fmt = "%Y-%m-%d %H:%M:%S+00:00".into(),
            _ => {}
        }
    }
    for op in &ops {
        if let Some(f) = op.strip_prefix(b"+") {
            fmt = lossy(f);
        }
    }
    let tm = super::time::gmtime(secs, nanos);
    let mut text = super::time::strftime(&fmt, &tm, secs);
    text.push('\n');
    let _ = u.out(text.as_bytes());
    0
}

/// `sleep N[smhd]…`: sleeps in small steps (the host's wall-time limit
/// stays in charge).
pub fn sleep(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "sleep");
    let mut total = 0.0f64;
    if argv.len() < 2 {
        u.err("missing operand");
        return 1;
    }
    for a in &argv[1..] {
        let t = lossy(a);
        let (num, mult) = match t.chars().last() {
            Some('s') => (&t[..t.len() - 1], 1.0),
            Some('m') => (&t[..t.len() - 1], 60.0),
            Some('h') => (&t[..t.len() - 1], 3600.0),
            Some('d') => (&t[..t.len() - 1], 86400.0),
            _ => (&t[..], 1.0),
        };
        match num.parse::<f64>() {
            Ok(v) if v >= 0.0 => total += v * mult,
            _ => {
                u.err(format!("invalid time interval '{t}'"));
                return 1;
            }
        }
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(total.min(1e7));
    while let Some(left) = end.checked_duration_since(std::time::Instant::now()) {
        if left.is_zero() {
            break;
        }
        std::thread::sleep(left.min(std::time::Duration::from_millis(100)));
    }
    0
}

fn say(sh: &mut Shell, io: &Io, text: &str) -> i32 {
    let _ = crate::io::put(&io.stdout(), format!("{text}\n").as_bytes());
    let _ = sh;
    0
}

/// `uname [-asnrmo]`.
pub fn uname(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let flags: Vec<u8> = argv[1..]
        .iter()
        .filter(|a| a.starts_with(b"-"))
        .flat_map(|a| a[1..].to_vec())
        .collect();
    let all = flags.contains(&b'a') || argv[1..].iter().any(|a| a == b"--all");
    let mut parts = Vec::new();
    let table = [
        (b's', "Linux"),
        (b'n', "plimsoll"),
        (b'r', "6.1.0-plimsoll"),
        (b'v', "#1 SMP"),
        (b'm', "wasm32"),
        (b'o', "GNU/Linux"),
    ];
    for (c, v) in table {
        if all || flags.contains(&c) {
            parts.push(v);
        }
    }
    if parts.is_empty() {
        parts.push("Linux");
    }
    say(sh, io, &parts.join(" "))
}

/// `whoami`.
pub fn whoami(sh: &mut Shell, io: &Io, _: &[Vec<u8>]) -> i32 {
    say(sh, io, "root")
}

/// `id [-u|-g|-n]`.
pub fn id(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let flags: Vec<u8> = argv[1..]
        .iter()
        .flat_map(|a| a.iter().skip(1).copied().collect::<Vec<_>>())
        .collect();
    let text = if flags.contains(&b'n') {
        "root"
    } else if flags.contains(&b'u') || flags.contains(&b'g') {
        "0"
    } else {
        "uid=0(root) gid=0(root) groups=0(root)"
    };
    say(sh, io, text)
}

/// `hostname`.
pub fn hostname(sh: &mut Shell, io: &Io, _: &[Vec<u8>]) -> i32 {
    say(sh, io, "plimsoll")
}

/// `nproc`.
pub fn nproc(sh: &mut Shell, io: &Io, _: &[Vec<u8>]) -> i32 {
    say(sh, io, "1")
}

/// `expr EXPRESSION`: integers, comparisons, `:`/`match`, `length`,
/// `substr`, `index`, `|`, `&`.
pub fn expr(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "expr");
    let args: Vec<Vec<u8>> = argv[1..].to_vec();
    let mut p = super::misc_expr::ExprParser {
        args: &args,
        i: 0,
        depth: 0,
    };
    match p.or() {
        Ok(v) if p.i == args.len() => {
            let mut line = v.clone();
            line.push(b'\n');
            let _ = u.out(&line);
            let null = v.is_empty() || v == b"0" || v == b"-0";
            null as i32
        }
        Ok(_) => {
            u.err(format!(
                "syntax error: unexpected argument '{}'",
                lossy(&args[p.i])
            ));
            2
        }
        Err(e) => {
            u.err(e);
            2
        }
    }
}
