//! The tar format: ustar headers (pax `path` records for long names) when
//! writing; ustar, GNU long names and pax headers when reading.

use crate::bytes::lossy;

fn octal(field: &mut [u8], v: u64) {
    let w = field.len() - 1;
    let s = format!("{v:0w$o}");
    let b = s.as_bytes();
    let start = b.len().saturating_sub(w);
    field[..w].copy_from_slice(&b[start..]);
    field[w] = 0;
}

fn header(name: &[u8], size: u64, mtime: u64, dir: bool, typeflag: u8) -> [u8; 512] {
    let mut h = [0u8; 512];
    let (prefix, base) = split_name(name).unwrap_or((&[][..], &name[..name.len().min(100)]));
    h[..base.len()].copy_from_slice(base);
    octal(&mut h[100..108], if dir { 0o755 } else { 0o644 });
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], mtime);
    h[156] = typeflag;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[265..269].copy_from_slice(b"root");
    h[297..301].copy_from_slice(b"root");
    octal(&mut h[329..337], 0);
    octal(&mut h[337..345], 0);
    h[345..345 + prefix.len()].copy_from_slice(prefix);
    h[148..156].copy_from_slice(b"        ");
    let sum: u64 = h.iter().map(|&b| b as u64).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    h
}

/// Splits a name into ustar's prefix (≤155) and name (≤100).
fn split_name(name: &[u8]) -> Option<(&[u8], &[u8])> {
    if name.len() <= 100 {
        return Some((&[], name));
    }
    for (i, &c) in name.iter().enumerate() {
        if c == b'/' && i <= 155 && name.len() - i - 1 <= 100 && name.len() - i - 1 > 0 {
            return Some((&name[..i], &name[i + 1..]));
        }
    }
    None
}

/// Zero bytes that pad `size` to a whole block.
pub(super) fn padding(size: u64) -> usize {
    ((512 - size % 512) % 512) as usize
}

/// The headers of one member: a pax header with its `path` first when the
/// name does not fit ustar's fields.
pub(super) fn member_headers(name: &[u8], size: u64, mtime: u64, dir: bool) -> Vec<u8> {
    let mut out = Vec::new();
    if split_name(name).is_none() {
        // A pax header carries the full name.
        let rec_body = [b" path=".as_slice(), name, b"\n"].concat();
        let mut len = rec_body.len() + 1;
        loop {
            let l = len.to_string().len() + rec_body.len();
            if l == len {
                break;
            }
            len = l;
        }
        let record = [len.to_string().as_bytes(), &rec_body].concat();
        let short: Vec<u8> = [
            b"PaxHeaders/".as_slice(),
            &name[name.len().saturating_sub(80)..],
        ]
        .concat();
        out.extend_from_slice(&header(&short, record.len() as u64, mtime, false, b'x'));
        out.extend_from_slice(&record);
        out.extend(std::iter::repeat_n(0u8, padding(record.len() as u64)));
    }
    out.extend_from_slice(&header(
        name,
        if dir { 0 } else { size },
        mtime,
        dir,
        if dir { b'5' } else { b'0' },
    ));
    out
}

fn field_str(f: &[u8]) -> &[u8] {
    let end = f.iter().position(|&c| c == 0).unwrap_or(f.len());
    &f[..end]
}

fn parse_octal(f: &[u8]) -> Option<u64> {
    let s = lossy(field_str(f));
    let s = s.trim();
    if s.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(s, 8).ok()
}

/// One member read from an archive.
pub(super) struct Member {
    pub(super) name: Vec<u8>,
    pub(super) kind: u8,
    pub(super) size: u64,
    pub(super) mtime: u64,
}

/// Parses a 512-byte header block; `None` for an end-of-archive (zero)
/// block.
pub(super) fn parse_header(h: &[u8]) -> Result<Option<Member>, String> {
    if h.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let not_tar = || "This does not look like a tar archive".to_string();
    if h.len() != 512 {
        return Err(not_tar());
    }
    let stored: u64 = parse_octal(&h[148..156]).ok_or_else(not_tar)?;
    let sum: u64 = h
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                b as u64
            }
        })
        .sum();
    if stored != sum {
        return Err(not_tar());
    }
    let size = parse_octal(&h[124..136]).ok_or("invalid size")?;
    let base = field_str(&h[..100]);
    let ustar = &h[257..262] == b"ustar";
    let prefix = if ustar { field_str(&h[345..500]) } else { &[] };
    let name = if prefix.is_empty() {
        base.to_vec()
    } else {
        [prefix, b"/", base].concat()
    };
    Ok(Some(Member {
        name,
        kind: h[156],
        size,
        mtime: parse_octal(&h[136..148]).unwrap_or(0),
    }))
}

/// The `path` of a pax extended header's records, if it has one. Each
/// record is `LEN KEY=VALUE\n` where LEN counts the whole record.
pub(super) fn pax_path(mut rest: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let bad = || "bad pax header".to_string();
    let mut path = None;
    while !rest.is_empty() {
        let sp = rest.iter().position(|&c| c == b' ').ok_or_else(bad)?;
        let len: usize = lossy(&rest[..sp]).parse().map_err(|_| bad())?;
        // The record must hold its length, the space and something more.
        if len <= sp + 1 || len > rest.len() {
            return Err(bad());
        }
        let rec = &rest[sp + 1..len];
        let rec = rec.strip_suffix(b"\n").unwrap_or(rec);
        if let Some(p) = rec.strip_prefix(b"path=") {
            path = Some(p.to_vec());
        }
        rest = &rest[len..];
    }
    Ok(path)
}

pub(super) fn list_line(m: &Member) -> Vec<u8> {
    let dir = m.kind == b'5';
    let perm = match m.kind {
        b'5' => "drwxr-xr-x",
        b'1' => "hrw-r--r--",
        b'2' => "lrwxrwxrwx",
        _ => "-rw-r--r--",
    };
    let tm = crate::util::time::gmtime(m.mtime as i64, 0);
    let when = crate::util::time::strftime("%Y-%m-%d %H:%M", &tm, m.mtime as i64);
    let mut l = format!(
        "{perm} root/root {:>9} {when} ",
        if dir { 0 } else { m.size }
    )
    .into_bytes();
    l.extend_from_slice(&m.name);
    l.push(b'\n');
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pax_records_are_checked() {
        assert_eq!(
            pax_path(b"18 path=a/b/c.txt\n").unwrap(),
            Some(b"a/b/c.txt".to_vec())
        );
        // A length that ends before or at the space would slice backwards.
        for bad in [
            &b"1 path=x\n"[..],
            b"2 path=x\n",
            b"0 x",
            b"99 path=x\n",
            b"x",
        ] {
            assert!(pax_path(bad).is_err(), "{bad:?}");
        }
    }
}
