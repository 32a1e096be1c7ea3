//! `base64` (binary-exact both ways), `md5sum`, `sha256sum`.

use super::{Ctx, Opt, getopt};
use crate::exec::Shell;
use crate::io::Io;
use sha2::{Digest, Sha256};

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub fn encode(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        out.push(ALPHABET[(n >> 18) as usize & 63]);
        out.push(ALPHABET[(n >> 12) as usize & 63]);
        out.push(if chunk.len() > 1 {
            ALPHABET[(n >> 6) as usize & 63]
        } else {
            b'='
        });
        out.push(if chunk.len() > 2 {
            ALPHABET[n as usize & 63]
        } else {
            b'='
        });
    }
    out
}

fn value(c: u8) -> Option<u32> {
    Some(match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => return None,
    } as u32)
}

/// Decodes base64, skipping newlines (and any non-alphabet byte when
/// `ignore_garbage`). `Err` carries what was decoded before the bad input.
pub fn decode(text: &[u8], ignore_garbage: bool) -> Result<Vec<u8>, Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0u32;
    let mut pad = false;
    for &c in text {
        if c == b'\n' || c == b'\r' {
            continue;
        }
        if c == b'=' {
            pad = true;
            continue;
        }
        let Some(v) = value(c) else {
            if ignore_garbage {
                continue;
            }
            return Err(out);
        };
        if pad {
            // Data after padding: GNU rejects it.
            return Err(out);
        }
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

/// `base64 [-d] [-i] [-w COLS] [FILE]`.
pub fn base64(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    let u = Ctx::new(sh, io, "base64");
    let (opts, files) = match getopt(&argv[1..], b"w", &["wrap"], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let mut dec = false;
    let mut ignore = false;
    let mut wrap = 76usize;
    for o in opts {
        match o {
            Opt::Short(b'd', _) | Opt::Short(b'D', _) => dec = true,
            Opt::Short(b'i', _) => ignore = true,
            Opt::Short(b'w', Some(v)) | Opt::Long(_, Some(v)) => {
                let t = String::from_utf8_lossy(&v).into_owned();
                match t.parse() {
                    Ok(n) => wrap = n,
                    Err(_) => {
                        u.err(format!("invalid wrap size: '{t}'"));
                        return 1;
                    }
                }
            }
            Opt::Long(n, None) if n == "decode" => dec = true,
            Opt::Long(n, None) if n == "ignore-garbage" => ignore = true,
            other => {
                u.err(format!("invalid option {other:?}"));
                return 1;
            }
        }
    }
    if files.len() > 1 {
        u.err(format!(
            "extra operand '{}'",
            String::from_utf8_lossy(&files[1])
        ));
        return 1;
    }
    let name = files.first().cloned().unwrap_or_else(|| b"-".to_vec());
    let data = match u.read_input(&name) {
        Ok(d) => d,
        Err(e) => {
            u.err_path(&name, &e);
            return 1;
        }
    };
    if dec {
        return match decode(&data, ignore) {
            Ok(out) => {
                let _ = u.out(&out);
                0
            }
            Err(partial) => {
                let _ = u.out(&partial);
                u.err("invalid input");
                1
            }
        };
    }
    let enc = encode(&data);
    let mut out = Vec::with_capacity(enc.len() + enc.len() / 76 + 1);
    if wrap == 0 {
        out.extend_from_slice(&enc);
    } else {
        for line in enc.chunks(wrap) {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    let _ = u.out(&out);
    0
}

/// MD5 (RFC 1321).
pub fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5,
        9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10,
        15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ];
    let k: Vec<u32> = (0..64)
        .map(|i| ((i as f64 + 1.0).sin().abs() * 4294967296.0) as u32)
        .collect();
    let (mut a0, mut b0, mut c0, mut d0) =
        (0x67452301u32, 0xefcdab89u32, 0x98badcfeu32, 0x10325476u32);
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_le_bytes());
    for chunk in msg.chunks(64) {
        let m: Vec<u32> = chunk
            .chunks(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let (mut a, mut b, mut c, mut d) = (a0, b0, c0, d0);
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let f2 = f.wrapping_add(a).wrapping_add(k[i]).wrapping_add(m[g]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(f2.rotate_left(S[i]));
        }
        a0 = a0.wrapping_add(a);
        b0 = b0.wrapping_add(b);
        c0 = c0.wrapping_add(c);
        d0 = d0.wrapping_add(d);
    }
    let mut out = [0u8; 16];
    for (i, v) in [a0, b0, c0, d0].iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn digest_tool(
    sh: &mut Shell,
    io: &Io,
    argv: &[Vec<u8>],
    name: &str,
    f: fn(&[u8]) -> String,
) -> i32 {
    let u = Ctx::new(sh, io, name);
    let (opts, files) = match getopt(&argv[1..], b"", &[], true) {
        Ok(x) => x,
        Err(e) => {
            u.err(e);
            return 1;
        }
    };
    let check = opts
        .iter()
        .any(|o| matches!(o, Opt::Short(b'c', _)) || matches!(o, Opt::Long(n, _) if n == "check"));
    let files = if files.is_empty() {
        vec![b"-".to_vec()]
    } else {
        files
    };
    let mut status = 0;
    let mut out = Vec::new();
    for file in &files {
        let data = match u.read_input(file) {
            Ok(d) => d,
            Err(e) => {
                u.err_path(file, &e);
                status = 1;
                continue;
            }
        };
        if !check {
            out.extend(format!("{}  ", f(&data)).into_bytes());
            out.extend_from_slice(file);
            out.push(b'\n');
            continue;
        }
        for line in crate::bytes::lines(&data) {
            let text = String::from_utf8_lossy(line).into_owned();
            let Some((want, path)) = text.split_once("  ").or_else(|| text.split_once(" *")) else {
                continue;
            };
            let ok = u
                .read_input(path.as_bytes())
                .map(|d| f(&d) == want.to_ascii_lowercase())
                .unwrap_or(false);
            out.extend(format!("{path}: {}\n", if ok { "OK" } else { "FAILED" }).into_bytes());
            if !ok {
                status = 1;
            }
        }
    }
    let _ = u.out(&out);
    status
}

/// `md5sum [-c] [FILE…]`.
pub fn md5sum(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    digest_tool(sh, io, argv, "md5sum", |d| hex(&md5(d)))
}

/// `sha256sum [-c] [FILE…]`.
pub fn sha256sum(sh: &mut Shell, io: &Io, argv: &[Vec<u8>]) -> i32 {
    digest_tool(sh, io, argv, "sha256sum", |d| hex(&Sha256::digest(d)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_vectors() {
        assert_eq!(hex(&md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex(&md5(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        let long = vec![b'a'; 1000];
        assert_eq!(hex(&md5(&long)), "cabe45dcc9ae5b66ba86600cca6b8ba8");
    }

    #[test]
    fn base64_round_trip() {
        let data: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        assert_eq!(decode(&encode(&data), false).unwrap(), data);
        assert_eq!(encode(b"ab"), b"YWI=");
        assert!(decode(b"YW*I", false).is_err());
    }
}
