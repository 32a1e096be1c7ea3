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
//!    they go, and their output is searched too, recursively
//!    ([`MAX_DEPTH`]).
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

/// How deep streams inside streams are followed.
pub const MAX_DEPTH: usize = 3;
/// Streams found by magic bytes that are decoded per answer; an answer
/// with more is withheld (it cannot be checked). Random binary data holds
/// about one zlib-looking pair per 16 KiB.
pub const MAX_EMBEDDED: usize = 1024;
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
        .get_or_init(|| AhoCorasick::new(Embedded::MAGICS).ok())
        .as_ref()
}

/// The decoded-byte budget and stream count the embedded search spends.
struct Budget {
    bytes: usize,
    streams: usize,
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
    if depth >= MAX_DEPTH {
        return Ok(());
    }
    let Some(finder) = magic_finder() else {
        return Err(Withheld::Undecodable("the answer could not be checked"));
    };
    for m in finder.find_overlapping_iter(layer) {
        if skip_start && m.start() == 0 {
            continue;
        }
        budget.streams += 1;
        if budget.streams > MAX_EMBEDDED {
            return Err(Withheld::Undecodable(
                "the answer holds more compressed streams than the host checks; it was withheld",
            ));
        }
        let kind = Embedded::from_pattern(m.pattern().as_usize());
        let (out, end) = kind.decode_prefix(&layer[m.start()..], budget.bytes);
        if end == End::Limit {
            return Err(Withheld::TooLarge);
        }
        budget.bytes -= out.len();
        if !out.is_empty() {
            search_layer(guard, &out, false, depth + 1, budget)?;
        }
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
        streams: 0,
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
    fn too_many_magic_bytes_are_refused_not_searched_forever() {
        let g = guard();
        let none = http::HeaderMap::new();
        let body: Vec<u8> = b"\x1f\x8b\x08\x00".repeat(4096);
        assert!(matches!(
            inspect(&g, &none, None, body, 1 << 20),
            Err(Withheld::Undecodable(_))
        ));
    }
}
