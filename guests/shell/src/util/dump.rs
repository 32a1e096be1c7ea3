//! Byte dumps: `od`, `xxd`, `hexdump -C`.

use super::{Chunked, Ctx, Opt, getopt};
use crate::bytes::lossy;
use crate::exec::Shell;
use crate::io::Io;

fn inputs_joined(u: &Ctx, files: &[Vec<u8>]) -> Result<Vec<u8>, ()> {
    let mut failed = false;
    let mut all = Vec::new();
    for (_, d) in u.inputs(files, &mut failed) {
        all.extend(d);
    }
    if failed { Err(()) } else { Ok(all) }
}

fn num(v: &Option<Vec<u8>>) -> Option<usize> {
    let t = lossy(v.as_deref().unwrap_or_default());
    let t = t.trim();
    match t.strip_prefix("0x") {
        Some(h) => usize::from_str_radix(h, 16).ok(),
        None => super::parse_size(t.as_bytes()).map(|n| n as usize),
    }
}

/// One `od -t` output type.
#[derive(Clone, Copy)]
enum Kind {
    Char,
    Hex(usize),
    Oct(usize),
    Dec(usize),
    Unsigned(usize),
}

fn kind(spec: &[u8]) -> Option<Kind> {
    let (c, rest) = spec.split_first()?;
    let size: usize = if rest.is_empty() {
        match c {
            b'c' | b'a' => 1,
            _ => 4,
        }
    } else {
        match rest {
            b"C" => 1,
            b"S" => 2,
            b"I" => 4,
            b"L" => 8,
            n => lossy(n).parse().ok()?,
        }
    };
    if ![1, 2, 4, 8].contains(&size) {
        return None;
    }
    Some(match c {
        b'c' | b'a' => Kind::Char,
        b'x' => Kind::Hex(size),
        b'o' => Kind::Oct(size),
        b'd' => Kind::Dec(size),
        b'u' => Kind::Unsigned(size),
        _ => return None,
    })
}

fn od_field(k: Kind, chunk: &[u8]) -> String {
    let mut v: u64 = 0;
    for (i, &b) in chunk.iter().enumerate() {
        v |= (b as u64) << (8 * i);
    }
    match k {
        Kind::Char => {
            let b = chunk[0];
            match b {
                0 => "  \\0".into(),
                7 => "  \\a".into(),
                8 => "  \\b".into(),
                9 => "  \\t".into(),
                10 => "  \\n".into(),
                11 => "  \\v".into(),
                12 => "  \\f".into(),
                13 => "  \\r".into(),
                0x20..=0x7e => format!("   {}", b as char),
                _ => format!(" {b:03o}"),
            }
        }
        Kind::Hex(n) => format!(" {v:0w$x}", w = n * 2),
        Kind::Oct(n) => {
            let w = [0, 3, 6, 0, 11, 0, 0, 0, 22][n];
            format!(" {v:0w$o}")
        }
        Kind::Unsigned(n) => {
            let w = [0, 3, 5, 0, 10, 0, 0, 0, 20][n];
            format!(" {v:>w$}")
        }
        Kind::Dec(n) => {
            let s = match n {
                1 => v as u8 as i8 as i64,
                2 => v as u16 as i16 as i64,
                4 => v as u32 as i32 as i64,
                _ => v as i64,
            };
            let w = [0, 4, 6, 0, 11, 0, 0, 0, 20][n];
            format!(" {s:>w$}")
        }
    }
}

/// `od [-A d|o|x|n] [-t TYPE] [-cxbdo] [-N N] [-j N] [-v] [FILE…]`.
pub fn od(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "od");
    let (opts, files) = match getopt(
        &argv[1..],
        b"AtNjw",
        &[
            "address-radix",
            "format",
            "read-bytes",
            "skip-bytes",
            "width",
        ],
        true,
    ) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mut radix = b'o';
    let mut k = Kind::Oct(2);
    let mut limit = usize::MAX;
    let mut skip = 0;
    let mut verbose = false;
    for o in opts {
        match o {
            Opt::Short(b'A', v) => radix = v.and_then(|v| v.first().copied()).unwrap_or(b'o'),
            Opt::Short(b't', Some(v)) => match kind(&v) {
                Some(x) => k = x,
                None => {
                    u.err(format!("invalid type string '{}'", lossy(&v)));
                    return 1;
                }
            },
            Opt::Short(b'c', _) => k = Kind::Char,
            Opt::Short(b'x', _) => k = Kind::Hex(2),
            Opt::Short(b'b', _) => k = Kind::Oct(1),
            Opt::Short(b'd', _) => k = Kind::Unsigned(2),
            Opt::Short(b'o', _) => k = Kind::Oct(2),
            Opt::Short(b'N', v) => limit = num(&v).unwrap_or(usize::MAX),
            Opt::Short(b'j', v) => skip = num(&v).unwrap_or(0),
            Opt::Short(b'v', _) => verbose = true,
            _ => {}
        }
    }
    let Ok(all) = inputs_joined(&u, &files) else {
        return 1;
    };
    let data = &all[skip.min(all.len())..];
    let data = &data[..limit.min(data.len())];
    let size = match k {
        Kind::Char => 1,
        Kind::Hex(n) | Kind::Oct(n) | Kind::Dec(n) | Kind::Unsigned(n) => n,
    };
    let addr = |a: usize| -> String {
        match radix {
            b'd' => format!("{a:07}"),
            b'x' => format!("{a:06x}"),
            b'n' => String::new(),
            _ => format!("{a:07o}"),
        }
    };
    let mut out = Chunked::new(u.io.stdout());
    let mut prev: Option<&[u8]> = None;
    let mut starred = false;
    for (i, line) in data.chunks(16).enumerate() {
        if !verbose && prev == Some(line) && line.len() == 16 {
            if !starred && out.put(b"*\n").is_err() {
                return 0;
            }
            starred = true;
            continue;
        }
        starred = false;
        prev = Some(line);
        let mut text = addr(skip + i * 16);
        for c in line.chunks(size) {
            let mut full = c.to_vec();
            full.resize(size, 0);
            text.push_str(&od_field(k, &full));
        }
        text.push('\n');
        if out.put(text.as_bytes()).is_err() {
            return 0;
        }
    }
    if radix != b'n' {
        let _ = out.put(format!("{}\n", addr(skip + data.len())).as_bytes());
    }
    let _ = out.flush();
    0
}

fn printable(b: u8) -> char {
    if (0x20..0x7f).contains(&b) {
        b as char
    } else {
        '.'
    }
}

/// `xxd [-p] [-r] [-l N] [-s N] [-c N] [-g N] [FILE]`.
pub fn xxd(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "xxd");
    let (opts, files) = match getopt(&argv[1..], b"lscg", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let (mut plain, mut reverse) = (false, false);
    let (mut len, mut seek, mut cols, mut group) = (usize::MAX, 0usize, None, 2usize);
    for o in opts {
        match o {
            Opt::Short(b'p', _) => plain = true,
            Opt::Short(b'r', _) => reverse = true,
            Opt::Short(b'l', v) => len = num(&v).unwrap_or(usize::MAX),
            Opt::Short(b's', v) => seek = num(&v).unwrap_or(0),
            Opt::Short(b'c', v) => cols = Some(num(&v).unwrap_or(usize::MAX)),
            Opt::Short(b'g', v) => group = num(&v).unwrap_or(2),
            _ => {}
        }
    }
    let Ok(all) = inputs_joined(&u, &files[..files.len().min(1)]) else {
        return 2;
    };
    if reverse {
        if !plain {
            u.err("-r works with -p only here");
            return 1;
        }
        let hex: Vec<u8> = all
            .iter()
            .copied()
            .filter(|c| c.is_ascii_hexdigit())
            .collect();
        let bytes: Vec<u8> = hex
            .chunks(2)
            .filter(|p| p.len() == 2)
            .map(|p| u8::from_str_radix(&lossy(p), 16).unwrap_or(0))
            .collect();
        let _ = u.out(&bytes);
        return 0;
    }
    let data = &all[seek.min(all.len())..];
    let data = &data[..len.min(data.len())];
    let mut out = Chunked::new(u.io.stdout());
    if plain {
        // No maximum for -p; 0 is one long line.
        let cols = match cols.unwrap_or(30) {
            0 => usize::MAX,
            n => n,
        };
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for (i, &b) in data.iter().enumerate() {
            let pair = [HEX[(b >> 4) as usize], HEX[(b & 15) as usize]];
            if out.put(&pair).is_err() {
                return 0;
            }
            if (i + 1) % cols == 0 && out.put(b"\n").is_err() {
                return 0;
            }
        }
        if !data.is_empty() && data.len() % cols != 0 {
            let _ = out.put(b"\n");
        }
    } else {
        let cols = cols.unwrap_or(16).max(1);
        if cols > 256 {
            u.err("invalid number of columns (max. 256).");
            return 1;
        }
        let group = group.clamp(1, cols);
        let hex_width = cols * 2 + cols.div_ceil(group);
        for (i, line) in data.chunks(cols).enumerate() {
            let mut hex = String::new();
            for (j, b) in line.iter().enumerate() {
                if j % group == 0 {
                    hex.push(' ');
                }
                hex.push_str(&format!("{b:02x}"));
            }
            let text: String = line.iter().map(|&b| printable(b)).collect();
            let row = format!(
                "{:08x}:{hex:<hex_width$}  {text}\n",
                seek.saturating_add(i * cols)
            );
            if out.put(row.as_bytes()).is_err() {
                return 0;
            }
        }
    }
    let _ = out.flush();
    0
}

/// `hexdump -C [FILE…]` (other formats print the same).
pub fn hexdump(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "hexdump");
    let (opts, files) = match getopt(&argv[1..], b"ns", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mut len = usize::MAX;
    let mut skip = 0;
    for o in opts {
        match o {
            Opt::Short(b'n', v) => len = num(&v).unwrap_or(usize::MAX),
            Opt::Short(b's', v) => skip = num(&v).unwrap_or(0),
            _ => {}
        }
    }
    let Ok(all) = inputs_joined(&u, &files) else {
        return 1;
    };
    let data = &all[skip.min(all.len())..];
    let data = &data[..len.min(data.len())];
    let mut out = Chunked::new(u.io.stdout());
    let mut prev: Option<&[u8]> = None;
    let mut starred = false;
    for (i, line) in data.chunks(16).enumerate() {
        if prev == Some(line) && line.len() == 16 {
            if !starred && out.put(b"*\n").is_err() {
                return 0;
            }
            starred = true;
            continue;
        }
        starred = false;
        prev = Some(line);
        let mut hex = String::new();
        for (j, b) in line.iter().enumerate() {
            if j == 8 {
                hex.push(' ');
            }
            hex.push_str(&format!(" {b:02x}"));
        }
        let text: String = line.iter().map(|&b| printable(b)).collect();
        let row = format!("{:08x} {hex:<49}  |{text}|\n", skip + i * 16);
        if out.put(row.as_bytes()).is_err() {
            return 0;
        }
    }
    if !data.is_empty() {
        let _ = out.put(format!("{:08x}\n", skip + data.len()).as_bytes());
    }
    let _ = out.flush();
    0
}
