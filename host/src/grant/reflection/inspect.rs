//! What an upstream's answer may carry into the guest.
//!
//! [`inspect`] takes the answer as the HTTP client read it (chunked framing
//! removed, at most the response cap of raw bytes) and decides what the
//! guest gets:
//!
//! 1. **Transfer codings** (`Transfer-Encoding: gzip, chunked`) are
//!    hop-by-hop: they are decoded, and the guest gets the payload.
//! 2. **Content codings** (`Content-Encoding: br`, stacked ones too) are
//!    end-to-end: the guest gets the bytes as sent, byte-exact (a granted
//!    gzip download keeps working), but they are decoded for the search.
//! 3. **Streams inside** any of those layers, found by their magic bytes
//!    whatever the headers say (gzip, zlib, zstd), are decoded as far as
//!    they go, and their output is searched too, recursively, to
//!    [`MAX_DEPTH`]; a stream found deeper than that is not followed but
//!    refused (fail closed: the guest could decode it).
//!
//! Every layer, every header name and value and every trailer is searched
//! for the credential in all its fixed forms (one automaton per layer,
//! [`super::ReflectionGuard`]). Decoding is bounded by the response cap
//! measured on the **decoded** size: a decompression bomb is
//! `response-too-large`, and a coding the host cannot decode is refused
//! before the guest sees a byte. A grant without a credential is not
//! searched, but its transfer codings are still decoded and its codings
//! still bounded.

use super::ReflectionGuard;
use super::codings::{Coding, DecodeError, Embedded, End};
use aho_corasick::AhoCorasick;
use std::sync::OnceLock;

/// How deep streams inside streams are followed; an answer with a stream
/// deeper still (one that decodes to anything at all) is withheld. Real
/// content nests two or three streams (a `.tar.gz` of PNGs); sixteen are
/// only there to hide something.
pub const MAX_DEPTH: usize = 16;
/// The work the embedded search may spend, as input bytes fed to its
/// decoders, per byte of the response cap. A false match in binary data
/// (about one per 2 KiB of random bytes) fails within a few bytes; a
/// crafted answer whose every match decodes a long stream of empty blocks
/// is withheld once this is spent, so the search costs at most this many
/// passes over the answer.
pub const WORK_PER_CAP_BYTE: usize = 8;
/// Codings stacked in one header that are accepted.
pub const MAX_STACKED: usize = 4;

/// Why an answer is withheld from the guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Withheld {
    /// The credential is in it (a header, a trailer, the body or a decoded
    /// layer of it).
    Reflected(&'static str),
    /// A coding the host cannot decode, or bytes invalid in their declared
    /// coding: it cannot be checked.
    Undecodable(&'static str),
    /// Decoded, it is larger than the response cap.
    TooLarge,
}

/// The answer's codings from every value of `name`, in the order they were
/// applied; `Err` for a coding the host cannot decode or too many.
fn codings(
    headers: &http::HeaderMap,
    name: http::header::HeaderName,
) -> Result<Vec<Coding>, Withheld> {
    let mut out = Vec::new();
    for v in headers.get_all(name).iter() {
        let Ok(text) = v.to_str() else {
            return Err(Withheld::Undecodable(
                "the answer names a coding that is not text; it cannot be checked and was withheld",
            ));
        };
        for token in text.split(',').filter(|t| !t.trim().is_empty()) {
            match Coding::parse(token) {
                Ok(Some(c)) => out.push(c),
                Ok(None) => {}
                Err(()) => {
                    return Err(Withheld::Undecodable(
                        "the answer is in a coding the host cannot decode, so it cannot be checked for the credential; it was withheld",
                    ));
                }
            }
        }
    }
    if out.len() > MAX_STACKED {
        return Err(Withheld::Undecodable(
            "the answer stacks more codings than the host decodes; it was withheld",
        ));
    }
    Ok(out)
}

/// Removes `codings` (applied first to last) from `body`.
fn undo(mut body: Vec<u8>, codings: &[Coding], cap: usize) -> Result<Vec<u8>, Withheld> {
    for c in codings.iter().rev() {
        body = c.decode(&body, cap).map_err(|e| match e {
            DecodeError::TooLarge => Withheld::TooLarge,
            DecodeError::Invalid => Withheld::Undecodable(
                "the answer's bytes are not valid in the coding it names, so it cannot be checked for the credential; it was withheld",
            ),
        })?;
    }
    Ok(body)
}

fn magic_finder() -> Option<&'static AhoCorasick> {
    static FINDER: OnceLock<Option<AhoCorasick>> = OnceLock::new();
    FINDER
        .get_or_init(|| AhoCorasick::new(super::codings::magics()).ok())
        .as_ref()
}

/// The decoded bytes and the decoder input the embedded search spends.
struct Budget {
    bytes: usize,
    work: usize,
}

/// Searches `layer` and the streams inside it, to `depth`.
fn search_layer(
    guard: &ReflectionGuard,
    layer: &[u8],
    skip_start: bool,
    depth: usize,
    budget: &mut Budget,
) -> Result<(), Withheld> {
    if guard.found_in(layer) {
        return Err(Withheld::Reflected(
            "the upstream's answer contained the call's credential; the answer was withheld",
        ));
    }
    let Some(finder) = magic_finder() else {
        return Err(Withheld::Undecodable("the answer could not be checked"));
    };
    for m in finder.find_overlapping_iter(layer) {
        if skip_start && m.start() == 0 {
            continue;
        }
        let kind = Embedded::from_pattern(m.pattern().as_usize());
        let p = kind.decode_prefix(&layer[m.start()..], budget.bytes);
        budget.work = budget
            .work
            .checked_sub(p.read)
            .ok_or(Withheld::Undecodable(
                "the answer holds more compressed data than the host checks; it was withheld",
            ))?;
        if p.end == End::Limit {
            return Err(Withheld::TooLarge);
        }
        if p.out.is_empty() {
            continue;
        }
        if depth >= MAX_DEPTH {
            // The guest could decode this too, and it would not be
            // searched: fail closed.
            return Err(Withheld::Undecodable(
                "the answer nests compressed streams deeper than the host checks; it was withheld",
            ));
        }
        budget.bytes -= p.out.len();
        search_layer(guard, &p.out, false, depth + 1, budget)?;
    }
    Ok(())
}

/// What the guest gets of an answer with these `headers`, `trailers` and
/// raw `body` (framing removed), under a response cap of `cap` decoded
/// bytes; or why it gets nothing.
pub fn inspect(
    guard: &ReflectionGuard,
    headers: &http::HeaderMap,
    trailers: Option<&http::HeaderMap>,
    body: Vec<u8>,
    cap: usize,
) -> Result<Vec<u8>, Withheld> {
    let transfer = codings(headers, http::header::TRANSFER_ENCODING)?;
    let content = codings(headers, http::header::CONTENT_ENCODING)?;
    let raw_had_transfer = !transfer.is_empty();
    let raw = if raw_had_transfer {
        Some(body.clone())
    } else {
        None
    };
    let payload = undo(body, &transfer, cap)?;
    let decoded = if content.is_empty() {
        None
    } else {
        Some(undo(payload.clone(), &content, cap)?)
    };
    if !guard.is_active() {
        return Ok(payload);
    }
    for map in std::iter::once(headers).chain(trailers) {
        for (name, value) in map {
            if guard.found_in(name.as_str().as_bytes()) || guard.found_in(value.as_bytes()) {
                return Err(Withheld::Reflected(
                    "a header of the upstream's answer contained the call's credential; the answer was withheld",
                ));
            }
        }
    }
    let mut budget = Budget {
        bytes: cap,
        work: cap.saturating_mul(WORK_PER_CAP_BYTE),
    };
    if let Some(raw) = &raw {
        search_layer(guard, raw, true, 0, &mut budget)?;
    }
    search_layer(guard, &payload, decoded.is_some(), 0, &mut budget)?;
    if let Some(d) = &decoded {
        search_layer(guard, d, false, 0, &mut budget)?;
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::super::codings::encode::{brotli, gzip, raw_deflate, zlib, zstd};
    use super::*;
    use http::HeaderValue;

    const TOKEN: &[u8] = b"sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f";

    fn guard() -> ReflectionGuard {
        ReflectionGuard::for_credential(TOKEN)
    }

    fn with(name: &'static str, value: &'static str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(name, HeaderValue::from_static(value));
        h
    }

    fn echo() -> Vec<u8> {
        let mut b = b"{\"headers\": {\"Authorization\": \"Bearer ".to_vec();
        b.extend_from_slice(TOKEN);
        b.extend_from_slice(b"\"}}");
        b
    }

    #[test]
    fn a_transfer_coding_is_removed_and_searched() {
        let g = guard();
        let h = with("transfer-encoding", "gzip, chunked");
        let clean = b"nothing to see".to_vec();
        assert_eq!(inspect(&g, &h, None, gzip(&clean), 1 << 20), Ok(clean));
        assert!(matches!(
            inspect(&g, &h, None, gzip(&echo()), 1 << 20),
            Err(Withheld::Reflected(_))
        ));
    }

    #[test]
    fn content_codings_are_delivered_as_sent_and_searched_decoded() {
        let g = guard();
        for (value, enc) in [
            ("gzip", gzip as fn(&[u8]) -> Vec<u8>),
            ("deflate", zlib),
            ("deflate", raw_deflate),
            ("br", brotli),
            ("zstd", zstd),
        ] {
            let h = with("content-encoding", value);
            let clean = enc(b"an ordinary answer, compressed");
            assert_eq!(
                inspect(&g, &h, None, clean.clone(), 1 << 20),
                Ok(clean),
                "{value}"
            );
            assert!(
                matches!(
                    inspect(&g, &h, None, enc(&echo()), 1 << 20),
                    Err(Withheld::Reflected(_))
                ),
                "{value}"
            );
        }
        // Stacked: gzip applied first, then br.
        let h = with("content-encoding", "gzip, br");
        let stacked = brotli(&gzip(&echo()));
        assert!(matches!(
            inspect(&g, &h, None, stacked, 1 << 20),
            Err(Withheld::Reflected(_))
        ));
    }

    #[test]
    fn streams_are_found_by_their_magic_whatever_the_headers_say() {
        let g = guard();
        let none = http::HeaderMap::new();
        for enc in [gzip as fn(&[u8]) -> Vec<u8>, zlib, zstd] {
            let mut body = b"prefix bytes ".to_vec();
            body.extend_from_slice(&enc(&echo()));
            body.extend_from_slice(b" suffix");
            assert!(matches!(
                inspect(&g, &none, None, body, 1 << 20),
                Err(Withheld::Reflected(_))
            ));
        }
        // A stream inside a stream.
        let nested = gzip(&zlib(&echo()));
        assert!(matches!(
            inspect(&g, &none, None, nested, 1 << 20),
            Err(Withheld::Reflected(_))
        ));
        // A clean .tar.gz arrives byte-exact.
        let targz = gzip(&vec![7u8; 100_000]);
        assert_eq!(inspect(&g, &none, None, targz.clone(), 1 << 20), Ok(targz));
    }

    #[test]
    fn bombs_unknown_codings_and_garbage_are_refused() {
        let g = guard();
        let bomb = gzip(&vec![0u8; 8 << 20]);
        let h = with("content-encoding", "gzip");
        assert_eq!(
            inspect(&g, &h, None, bomb.clone(), 1 << 20),
            Err(Withheld::TooLarge)
        );
        let none = http::HeaderMap::new();
        assert_eq!(
            inspect(&g, &none, None, bomb, 1 << 20),
            Err(Withheld::TooLarge)
        );
        let h = with("content-encoding", "compress");
        assert!(matches!(
            inspect(&g, &h, None, b"x".to_vec(), 100),
            Err(Withheld::Undecodable(_))
        ));
        let h = with("transfer-encoding", "gzip");
        assert!(matches!(
            inspect(&g, &h, None, b"not gzip".to_vec(), 100),
            Err(Withheld::Undecodable(_))
        ));
        // Without a credential the transfer coding is still removed and the
        // bomb still bounded.
        let h = with("transfer-encoding", "gzip, chunked");
        let nothing = ReflectionGuard::none();
        assert_eq!(
            inspect(&nothing, &h, None, gzip(b"ok"), 100),
            Ok(b"ok".to_vec())
        );
        assert_eq!(
            inspect(&nothing, &h, None, gzip(&vec![0u8; 1 << 20]), 100),
            Err(Withheld::TooLarge)
        );
    }

    #[test]
    fn headers_and_trailers_are_searched() {
        let g = guard();
        let mut h = http::HeaderMap::new();
        let mut loc = b"https://example.com/?t=".to_vec();
        loc.extend_from_slice(TOKEN);
        h.insert(
            "location",
            HeaderValue::from_bytes(&loc).unwrap_or(HeaderValue::from_static("x")),
        );
        assert!(matches!(
            inspect(&g, &h, None, vec![], 100),
            Err(Withheld::Reflected(_))
        ));
        let mut t = http::HeaderMap::new();
        t.insert(
            "x-echo",
            HeaderValue::from_bytes(TOKEN).unwrap_or(HeaderValue::from_static("x")),
        );
        let none = http::HeaderMap::new();
        assert!(matches!(
            inspect(&g, &none, Some(&t), vec![], 100),
            Err(Withheld::Reflected(_))
        ));
    }

    #[test]
    fn false_magic_in_binary_data_costs_little_and_is_delivered() {
        let g = guard();
        let none = http::HeaderMap::new();
        // Every gzip and zlib header, thousands of times: each fails within
        // a few bytes, and the answer is what it was.
        let mut body: Vec<u8> = b"\x1f\x8b\x08\x00".repeat(4096);
        for m in super::super::codings::magics() {
            for _ in 0..64 {
                body.extend_from_slice(m);
                body.extend_from_slice(b"\xff\xfe\xfd");
            }
        }
        // And pseudo-random bytes (about one false match per 2 KiB).
        let mut x: u32 = 0x9e37_79b9;
        for _ in 0..(1 << 20) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            body.push(x as u8);
        }
        assert_eq!(
            inspect(&g, &none, None, body.clone(), 4 << 20).map(|b| b.len()),
            Ok(body.len())
        );
    }

    #[test]
    fn a_crafted_answer_that_makes_every_match_read_far_is_refused() {
        // 64 zlib headers, each followed by a stored block holding the
        // next header, then 1 MiB of empty stored blocks: every one of the
        // 65 matches decodes through the whole megabyte and yields almost
        // nothing.
        let g = guard();
        let none = http::HeaderMap::new();
        let mut body = Vec::new();
        for _ in 0..64 {
            body.extend_from_slice(b"\x78\x01\x00\x02\x00\xfd\xff");
        }
        body.extend_from_slice(b"\x78\x01");
        for _ in 0..(1 << 20) / 5 {
            body.extend_from_slice(b"\x00\x00\x00\xff\xff");
        }
        assert!(matches!(
            inspect(&g, &none, None, body, 1 << 20),
            Err(Withheld::Undecodable(_))
        ));
    }

    #[test]
    fn streams_nested_deeper_than_followed_are_refused_not_delivered() {
        let g = guard();
        let none = http::HeaderMap::new();
        for layers in [4, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 4] {
            let mut body = echo();
            for i in 0..layers {
                body = if i % 2 == 0 { gzip(&body) } else { zlib(&body) };
            }
            let got = inspect(&g, &none, None, body, 1 << 20);
            assert!(
                matches!(got, Err(Withheld::Reflected(_) | Withheld::Undecodable(_))),
                "{layers} layers: {got:?}"
            );
            // And inside a declared coding too.
            let mut body = echo();
            for _ in 0..layers {
                body = gzip(&body);
            }
            let h = with("content-encoding", "gzip");
            let got = inspect(&g, &h, None, gzip(&body), 1 << 20);
            assert!(
                matches!(got, Err(Withheld::Reflected(_) | Withheld::Undecodable(_))),
                "{layers} layers under content-encoding: {got:?}"
            );
        }
        // A clean answer nested as deep as real content is delivered.
        let clean = gzip(&gzip(&gzip(b"a tar of pngs, say")));
        assert_eq!(inspect(&g, &none, None, clean.clone(), 1 << 20), Ok(clean));
    }
}
