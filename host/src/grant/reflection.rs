//! Credential reflection: a response that carries back the credential the
//! host put into the call is withheld from the guest.
//!
//! Upstreams echo requests more often than one would hope: httpbin's
//! `/headers`, debug endpoints, error pages that quote the request, proxies
//! that log into the body. Each would hand the guest the `Authorization`
//! header the host injected. So before a response crosses into the guest,
//! its header values and its whole body are searched for the call's
//! credential in the forms a server plausibly writes it:
//!
//! * raw bytes;
//! * base64 and base64url, at each of the three alignments the credential
//!   can have inside a longer encoded string (the bytes of the credential
//!   that share a 3-byte group with unknown neighbours are left out, so the
//!   pattern is the part whose encoding does not depend on them);
//! * percent-encoding (upper- and lower-case hex, every byte outside the
//!   unreserved set encoded);
//! * JSON string escaping (with and without `\/`, and with `<`, `>`, `&`,
//!   `+`, `=` as `\u00XX` as some encoders write them);
//! * for a JWT, its signature on its own (header and claims are guessable;
//!   the signature is what makes the token usable);
//!
//! each also all lower-case and all upper-case (header names come back
//! lower-cased).
//!
//! The search is one Aho-Corasick automaton over every pattern, built on a
//! grant's first answer of a run, so the cost is linear in the response and independent
//! of the number of patterns (docs/benchmarks.md: 0.46 ms for a
//! 4 MiB body). What it does not catch, and why, is in SECURITY.md: an
//! upstream that transforms the credential some other way (hashes it,
//! splits it, decodes it) is trusted not to.
//!
//! The automaton holds data derived from the credential in the host's
//! memory for the run's lifetime; it is never copied anywhere else, and it
//! is not zeroized when dropped (the `Secret` it came from is).

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use zeroize::Zeroizing;

/// Derived patterns shorter than this are dropped (they would match by
/// chance); the raw credential is always searched for, whatever its length.
pub const MIN_DERIVED_PATTERN: usize = 8;

/// The search for one credential's reflections.
pub struct ReflectionGuard {
    state: Search,
}

enum Search {
    /// No credential: nothing to find.
    Nothing,
    Automaton(AhoCorasick),
    /// The automaton could not be built: every response counts as a
    /// reflection (fail closed).
    Broken,
}

impl std::fmt::Debug for ReflectionGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReflectionGuard([redacted])")
    }
}

impl ReflectionGuard {
    /// A guard that finds nothing (a grant without a credential).
    pub fn none() -> Self {
        ReflectionGuard {
            state: Search::Nothing,
        }
    }

    /// A guard for `credential`'s bytes. An empty credential finds nothing.
    pub fn for_credential(credential: &[u8]) -> Self {
        if credential.is_empty() {
            return ReflectionGuard::none();
        }
        let mut patterns = patterns(credential);
        // Header names come back lower-cased and some servers change a
        // value's case: the lower- and upper-case forms are searched too.
        // (As patterns of their own, not an ASCII-case-insensitive search,
        // which would lose the SIMD prefilter: 8.5 ms instead of well
        // under 1 ms on 4 MiB, docs/benchmarks.md.)
        let cased: Vec<Zeroizing<Vec<u8>>> = patterns
            .iter()
            .flat_map(|p| [p.to_ascii_lowercase(), p.to_ascii_uppercase()])
            .map(Zeroizing::new)
            .collect();
        for c in cased {
            if !patterns.iter().any(|p| p.as_slice() == c.as_slice()) {
                patterns.push(c);
            }
        }
        // A contiguous NFA: a DFA searches no faster here (the SIMD
        // prefilter does the work) and takes ten times as long to build.
        let built = AhoCorasickBuilder::new()
            .match_kind(MatchKind::LeftmostFirst)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(patterns.iter().map(|p| p.as_slice()));
        ReflectionGuard {
            state: match built {
                Ok(ac) => Search::Automaton(ac),
                Err(_) => Search::Broken,
            },
        }
    }

    /// Whether `haystack` contains the credential in any of the forms
    /// searched for. A guard that could not be built finds everything
    /// (fails closed).
    pub fn found_in(&self, haystack: &[u8]) -> bool {
        match &self.state {
            Search::Nothing => false,
            Search::Automaton(ac) => ac.is_match(haystack),
            Search::Broken => true,
        }
    }

    /// Whether this guard searches for anything.
    pub fn is_active(&self) -> bool {
        !matches!(self.state, Search::Nothing)
    }
}

/// Every form of `c` that is searched for, deduplicated.
pub fn patterns(c: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out: Vec<Zeroizing<Vec<u8>>> = Vec::new();
    let mut add = |p: Vec<u8>, derived: bool| {
        let p = Zeroizing::new(p);
        if (derived && p.len() < MIN_DERIVED_PATTERN) || p.is_empty() {
            return;
        }
        if !out.iter().any(|q| q.as_slice() == p.as_slice()) {
            out.push(p);
        }
    };
    add(c.to_vec(), false);
    let mut pieces: Vec<&[u8]> = vec![c];
    // A JWT's signature alone is enough to rebuild the token.
    if c.iter().filter(|&&b| b == b'.').count() == 2
        && let Some(sig) = c.rsplit(|&b| b == b'.').next()
    {
        add(sig.to_vec(), true);
        pieces.push(sig);
    }
    for piece in pieces {
        for b64 in base64_cores(piece) {
            add(b64.to_vec(), true);
        }
        add(percent(piece, b"0123456789ABCDEF"), true);
        add(percent(piece, b"0123456789abcdef"), true);
        add(json_escaped(piece, false, false), true);
        add(json_escaped(piece, true, false), true);
        add(json_escaped(piece, true, true), true);
    }
    out
}

/// For each alignment of `c` in a longer string, the run of base64 (and
/// base64url) characters that encodes `c`'s bytes alone.
fn base64_cores(c: &[u8]) -> Vec<Zeroizing<Vec<u8>>> {
    let mut out = Vec::new();
    for lead in 0..3usize {
        let mut buf = Zeroizing::new(vec![0u8; lead]);
        buf.extend_from_slice(c);
        let full_groups = buf.len() / 3;
        let end = full_groups * 4;
        // The first group mixes unknown leading bytes in (unless there
        // are none); the last partial group mixes in unknown trailing ones.
        let start = if lead == 0 { 0 } else { 4 };
        if end <= start {
            continue;
        }
        let std_enc = Zeroizing::new(STANDARD_NO_PAD.encode(buf.as_slice()).into_bytes());
        let url_enc = Zeroizing::new(URL_SAFE_NO_PAD.encode(buf.as_slice()).into_bytes());
        for enc in [&std_enc, &url_enc] {
            if let Some(core) = enc.get(start..end.min(enc.len())) {
                out.push(Zeroizing::new(core.to_vec()));
            }
        }
    }
    // The whole credential, padded, as a server encodes a lone value.
    out.push(Zeroizing::new(STANDARD.encode(c).into_bytes()));
    out
}

/// `c` with every byte outside RFC 3986's unreserved set as `%XX`.
fn percent(c: &[u8], hex: &[u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(c.len() * 3);
    for &b in c {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', hex[usize::from(b >> 4)], hex[usize::from(b & 15)]]);
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

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &[u8] = b"sk-live/4f+9a8b7c6d5e4f3a2b1c0=";

    fn guard() -> ReflectionGuard {
        ReflectionGuard::for_credential(TOKEN)
    }

    #[test]
    fn raw_and_in_context() {
        let g = guard();
        assert!(g.found_in(TOKEN));
        let mut body = b"{\"headers\":{\"Authorization\":\"Bearer ".to_vec();
        body.extend_from_slice(TOKEN);
        body.extend_from_slice(b"\"}}");
        assert!(g.found_in(&body));
        assert!(!g.found_in(b"{\"headers\":{\"Authorization\":\"Bearer [redacted]\"}}"));
        assert!(!g.found_in(b""));
    }

    #[test]
    fn base64_at_every_alignment_and_both_alphabets() {
        let g = guard();
        for prefix in ["", "A", "Bearer ", "xy", "Authorization: Bearer "] {
            let mut plain = prefix.as_bytes().to_vec();
            plain.extend_from_slice(TOKEN);
            plain.extend_from_slice(b"\r\n");
            for enc in [
                STANDARD.encode(&plain),
                STANDARD_NO_PAD.encode(&plain),
                URL_SAFE_NO_PAD.encode(&plain),
            ] {
                let wrapped = format!("{{\"echo\":\"{enc}\"}}");
                assert!(g.found_in(wrapped.as_bytes()), "prefix {prefix:?}: {enc}");
            }
        }
    }

    #[test]
    fn percent_and_json_escapes() {
        let g = guard();
        let pct_upper = percent(TOKEN, b"0123456789ABCDEF");
        assert!(pct_upper.windows(3).any(|w| w == b"%2F"));
        assert!(g.found_in(&pct_upper));
        assert!(g.found_in(&percent(TOKEN, b"0123456789abcdef")));
        let json = serde_json::to_string(&String::from_utf8_lossy(TOKEN)).expect("json");
        assert!(g.found_in(json.as_bytes()));
        assert!(g.found_in(br#"sk-live\/4f+9a8b7c6d5e4f3a2b1c0="#));
        assert!(g.found_in(br#"sk-live\/4f\u002b9a8b7c6d5e4f3a2b1c0\u003d"#));
    }

    #[test]
    fn a_jwt_signature_alone_is_found() {
        let jwt =
            b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLWJ5dGVzLWZvci10ZXN0aW5nLTAx";
        let g = ReflectionGuard::for_credential(jwt);
        assert!(g.found_in(b"sig=c2lnbmF0dXJlLWJ5dGVzLWZvci10ZXN0aW5nLTAx;"));
        // The guessable header alone is not the credential.
        assert!(!g.found_in(b"eyJhbGciOiJIUzI1NiJ9"));
    }

    #[test]
    fn lower_and_upper_case_forms_are_found() {
        let g = guard();
        assert!(g.found_in(&TOKEN.to_ascii_lowercase()));
        assert!(g.found_in(&TOKEN.to_ascii_uppercase()));
        let b64 = STANDARD.encode(TOKEN).to_ascii_lowercase();
        assert!(g.found_in(b64.as_bytes()));
    }

    #[test]
    fn unrelated_text_is_not_a_reflection() {
        let g = guard();
        let noise: Vec<u8> = (0..(1 << 16)).map(|i| b"abcdefghij+/="[i % 13]).collect();
        assert!(!g.found_in(&noise));
        assert!(!ReflectionGuard::none().found_in(TOKEN));
        assert!(!ReflectionGuard::for_credential(b"").is_active());
    }
}
