//! The forms of a credential that are searched for in an answer.
//!
//! Each is a fixed transformation a server (or a hostile guest's echo
//! endpoint) can apply for free and a guest can undo for free. They are all
//! plain byte strings, so one Aho-Corasick automaton finds every one of them
//! in a single pass over an answer ([`super::ReflectionGuard`]):
//!
//! * raw bytes;
//! * base64 and base64url, at each of the three alignments the credential
//!   can have inside a longer encoded string (the bytes of the credential
//!   that share a 3-byte group with unknown neighbours are left out, so the
//!   pattern is the part whose encoding does not depend on them), padded and
//!   unpadded, and **wrapped** at 64 and 76 columns (LF and CRLF) at every
//!   column the encoding can start at;
//! * base32 (RFC 4648) at each of its five alignments, and padded;
//! * hex, lower- and upper-case;
//! * percent-encoding of the reserved set and of every byte, both hex cases;
//! * JSON string escaping (with and without `\/`, with `<`, `>`, `&`, `+`,
//!   `=` as `\u00XX`, and every byte as `\u00XX` in both hex cases);
//! * HTML numeric character references, decimal and hex;
//! * UTF-16, little- and big-endian;
//! * for a JWT, its signature on its own (header and claims are guessable;
//!   the signature is what makes the token usable), in every form above;
//!
//! each (but the wrapped forms, which are many) also all lower-case and all
//! upper-case (header names come back lower-cased, and hex and base32 come
//! in either case). Compressed answers are decoded before the search
//! ([`super::inspect`]); what stays out of reach is in SECURITY.md.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use zeroize::Zeroizing;

/// Derived patterns shorter than this are dropped (they would match by
/// chance); the raw credential is always searched for, whatever its length.
pub const MIN_DERIVED_PATTERN: usize = 8;

/// The line widths base64 is wrapped at (PEM and MIME).
pub const WRAP_WIDTHS: [usize; 2] = [64, 76];

/// A list of patterns without duplicates.
#[derive(Default)]
struct Forms {
    out: Vec<Zeroizing<Vec<u8>>>,
    seen: std::collections::HashSet<u64>,
}

impl Forms {
    fn add(&mut self, p: Vec<u8>, derived: bool) {
        let p = Zeroizing::new(p);
        if p.is_empty() || (derived && p.len() < MIN_DERIVED_PATTERN) {
            return;
        }
        // A cheap hash first; equal hashes are compared in full.
        let h = fxhash(&p);
        if !self.seen.insert(h) && self.out.iter().any(|q| q.as_slice() == p.as_slice()) {
            return;
        }
        self.out.push(p);
    }
}

fn fxhash(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Every form of `c` that is searched for, deduplicated.
pub fn patterns(c: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let mut f = Forms::default();
    f.add(c.to_vec(), false);
    let mut pieces: Vec<&[u8]> = vec![c];
    // A JWT's signature alone is enough to rebuild the token.
    if c.iter().filter(|&&b| b == b'.').count() == 2
        && let Some(sig) = c.rsplit(|&b| b == b'.').next()
    {
        f.add(sig.to_vec(), true);
        pieces.push(sig);
    }
    for &piece in &pieces {
        for core in base64_cores(piece) {
            f.add(core.to_vec(), true);
        }
        for core in base32_cores(piece) {
            f.add(core.to_vec(), true);
        }
        f.add(hex(piece, HEX_UPPER), true);
        f.add(hex(piece, HEX_LOWER), true);
        f.add(percent(piece, HEX_UPPER, false), true);
        f.add(percent(piece, HEX_LOWER, false), true);
        f.add(percent(piece, HEX_UPPER, true), true);
        f.add(percent(piece, HEX_LOWER, true), true);
        f.add(json_escaped(piece, false, false), true);
        f.add(json_escaped(piece, true, false), true);
        f.add(json_escaped(piece, true, true), true);
        f.add(json_unicode(piece, HEX_LOWER), true);
        f.add(json_unicode(piece, HEX_UPPER), true);
        f.add(html_decimal(piece), true);
        f.add(html_hex(piece, HEX_LOWER), true);
        f.add(html_hex(piece, HEX_UPPER), true);
        f.add(utf16(piece, false), true);
        f.add(utf16(piece, true), true);
    }
    // Header names come back lower-cased and some servers change a value's
    // case; hex and base32 come in either case. The case-changed forms are
    // patterns of their own, not an ASCII-case-insensitive search, which
    // would lose the SIMD prefilter (docs/benchmarks.md).
    let cased: Vec<Vec<u8>> = f
        .out
        .iter()
        .flat_map(|p| [p.to_ascii_lowercase(), p.to_ascii_uppercase()])
        .collect();
    for c in cased {
        f.add(c, true);
    }
    // Wrapped base64 last: many patterns, no case changes.
    for &piece in &pieces {
        for w in wrapped_base64(piece) {
            f.add(w.to_vec(), true);
        }
    }
    f.out
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// For each alignment of `c` in a longer string, the run of base64 (and
/// base64url) characters that encodes `c`'s bytes alone; and the whole of
/// `c` encoded on its own, padded.
fn base64_cores(c: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out = Vec::new();
    for (_, core) in aligned_base64(c) {
        out.push(core);
    }
    out.push(Zeroizing::new(STANDARD.encode(c).into_bytes()));
    out.push(Zeroizing::new(URL_SAFE.encode(c).into_bytes()));
    out
}

/// `(standard alphabet?, core)` for each alignment and both alphabets.
fn aligned_base64(c: &[u8]) -> Vec<(bool, Zeroizing<Vec<u8>>)> {
    let mut out = Vec::new();
    for lead in 0..3usize {
        let mut buf = Zeroizing::new(vec![0u8; lead]);
        buf.extend_from_slice(c);
        let end = (buf.len() / 3) * 4;
        // The first group mixes unknown leading bytes in (unless there
        // are none); the last partial group mixes in unknown trailing ones.
        let start = if lead == 0 { 0 } else { 4 };
        if end <= start {
            continue;
        }
        let std_enc = Zeroizing::new(STANDARD_NO_PAD.encode(buf.as_slice()).into_bytes());
        let url_enc = Zeroizing::new(URL_SAFE_NO_PAD.encode(buf.as_slice()).into_bytes());
        for (standard, enc) in [(true, &std_enc), (false, &url_enc)] {
            if let Some(core) = enc.get(start..end.min(enc.len())) {
                out.push((standard, Zeroizing::new(core.to_vec())));
            }
        }
    }
    out
}

/// The aligned base64 cores with line breaks where a wrapped encoding puts
/// them: for each width, each line ending and each column the core can
/// start at, the core with a break after every full line. Only the forms
/// that contain a break are returned (the others are the cores).
fn wrapped_base64(c: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out = Vec::new();
    for (_, core) in aligned_base64(c) {
        for width in WRAP_WIDTHS {
            for eol in [&b"\n"[..], &b"\r\n"[..]] {
                // `column`: where on its line the core's first character
                // sits; a break follows every character at column width-1.
                for column in 0..width {
                    let first_break = width - column;
                    if first_break >= core.len() {
                        continue;
                    }
                    let mut w = Zeroizing::new(Vec::with_capacity(core.len() + 8));
                    for (i, &b) in core.iter().enumerate() {
                        if i >= first_break && (i - first_break) % width == 0 {
                            w.extend_from_slice(eol);
                        }
                        w.push(b);
                    }
                    out.push(w);
                }
            }
        }
    }
    out
}

/// RFC 4648 base32: for each of the five alignments, the characters that
/// encode `c`'s bytes alone; and `c` encoded on its own, padded.
fn base32_cores(c: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out = Vec::new();
    for lead in 0..5usize {
        let mut buf = Zeroizing::new(vec![0u8; lead]);
        buf.extend_from_slice(c);
        let end = (buf.len() / 5) * 8;
        let start = if lead == 0 { 0 } else { 8 };
        if end <= start {
            continue;
        }
        let enc = base32(&buf, false);
        if let Some(core) = enc.get(start..end.min(enc.len())) {
            out.push(Zeroizing::new(core.to_vec()));
        }
    }
    out.push(base32(c, true));
    out
}

fn base32(data: &[u8], pad: bool) -> Zeroizing<Vec<u8>> {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = Zeroizing::new(Vec::with_capacity(data.len().div_ceil(5) * 8));
    for chunk in data.chunks(5) {
        let mut group = [0u8; 5];
        group[..chunk.len()].copy_from_slice(chunk);
        let bits = group.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                let idx = ((bits >> (35 - i * 5)) & 31) as usize;
                out.push(ALPHABET[idx]);
            } else if pad {
                out.push(b'=');
            }
        }
    }
    out
}

fn hex(c: &[u8], digits: &[u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() * 2);
    for &b in c {
        out.extend_from_slice(&[digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]);
    }
    out
}

/// `c` with every byte outside RFC 3986's unreserved set as `%XX`, or with
/// every byte as `%XX` (`all`).
fn percent(c: &[u8], digits: &[u8; 16], all: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() * 3);
    for &b in c {
        if !all && (b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')) {
            out.push(b);
        } else {
            out.extend_from_slice(&[
                b'%',
                digits[usize::from(b >> 4)],
                digits[usize::from(b & 15)],
            ]);
        }
    }
    out
}

/// `c` as the inside of a JSON string. `solidus` escapes `/` as `\/`;
/// `html` writes `<`, `>`, `&`, `+`, `=` as `\u00XX`.
fn json_escaped(c: &[u8], solidus: bool, html: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() + 8);
    for &b in c {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' if solidus => out.extend_from_slice(b"\\/"),
            b'<' | b'>' | b'&' | b'+' | b'=' if html => {
                out.extend_from_slice(format!("\\u{b:04x}").as_bytes())
            }
            0..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out
}

/// Every byte as a JSON `\u00XX` escape.
fn json_unicode(c: &[u8], digits: &[u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() * 6);
    for &b in c {
        out.extend_from_slice(b"\\u00");
        out.extend_from_slice(&[digits[usize::from(b >> 4)], digits[usize::from(b & 15)]]);
    }
    out
}

/// Every byte as an HTML decimal character reference, `&#115;`.
fn html_decimal(c: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() * 6);
    for &b in c {
        out.extend_from_slice(format!("&#{b};").as_bytes());
    }
    out
}

/// Every byte as an HTML hex character reference, `&#x73;`.
fn html_hex(c: &[u8], digits: &[u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() * 6);
    for &b in c {
        out.extend_from_slice(b"&#x");
        if b >= 16 {
            out.push(digits[usize::from(b >> 4)]);
        }
        out.push(digits[usize::from(b & 15)]);
        out.push(b';');
    }
    out
}

/// `c` as UTF-16 code units (each byte of an ASCII credential one unit).
fn utf16(c: &[u8], big_endian: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() * 2);
    for &b in c {
        if big_endian {
            out.extend_from_slice(&[0, b]);
        } else {
            out.extend_from_slice(&[b, 0]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_matches_the_rfc_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "MY======"),
            ("fo", "MZXQ===="),
            ("foo", "MZXW6==="),
            ("foob", "MZXW6YQ="),
            ("fooba", "MZXW6YTB"),
            ("foobar", "MZXW6YTBOI======"),
        ] {
            assert_eq!(
                base32(input.as_bytes(), true).as_slice(),
                expected.as_bytes()
            );
        }
    }

    #[test]
    fn wrapped_forms_break_at_every_column() {
        let c = b"sk-live-0123456789abcdefghijklmnopqrstuvwxyz-0123456789";
        let forms = wrapped_base64(c);
        assert!(forms.iter().all(|f| f.contains(&b'\n')));
        // One MIME encoding of a longer text holding the credential.
        let mut text = b"Authorization: Bearer ".to_vec();
        text.extend_from_slice(c);
        let enc = STANDARD.encode(&text).into_bytes();
        let mut wrapped = Vec::new();
        for (i, ch) in enc.chunks(76).enumerate() {
            if i > 0 {
                wrapped.extend_from_slice(b"\r\n");
            }
            wrapped.extend_from_slice(ch);
        }
        let all = patterns(c);
        assert!(
            all.iter()
                .any(|p| wrapped.windows(p.len()).any(|w| w == p.as_slice())),
            "no form found in the wrapped encoding"
        );
    }

    #[test]
    fn html_and_utf16_forms() {
        assert_eq!(html_decimal(b"sk"), b"&#115;&#107;");
        assert_eq!(html_hex(b"s\n", HEX_LOWER), b"&#x73;&#xa;");
        assert_eq!(utf16(b"ab", false), b"a\0b\0");
        assert_eq!(utf16(b"ab", true), b"\0a\0b");
        assert_eq!(json_unicode(b"s", HEX_UPPER), b"\\u0073");
        assert_eq!(percent(b"a/", HEX_UPPER, true), b"%61%2F");
    }
}
