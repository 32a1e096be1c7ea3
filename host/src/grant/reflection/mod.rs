//! Credential reflection: an answer that carries back the credential the
//! host put into the call is withheld from the guest.
//!
//! Upstreams echo requests more often than one would hope: httpbin's
//! `/headers`, debug endpoints, error pages that quote the request, proxies
//! that log into the body. Each would hand the guest the `Authorization`
//! header the host injected. So before an answer crosses into the guest,
//! [`inspect`] decodes every transfer and content coding it carries (and
//! every gzip, zlib or zstd stream found inside it by its magic bytes), and
//! the [`ReflectionGuard`] searches every header value, trailer and decoded
//! layer for the credential in each of the fixed forms of [`forms`].
//!
//! The search is one Aho-Corasick automaton over every form, built once
//! per credential (a static credential's automaton is shared by every run
//! of its profile), so the cost is linear in the answer and independent of
//! the number of forms (docs/benchmarks.md). What it does not catch, and
//! why, is in SECURITY.md: an upstream that transforms the credential some
//! other way (hashes it, splits it across calls, encrypts it) is trusted
//! not to.
//!
//! The automaton holds data derived from the credential in the host's
//! memory; it is never copied anywhere else, and it is not zeroized when
//! dropped (the `Secret` it came from is).

pub mod codings;
pub mod forms;
pub mod inspect;

pub use forms::{MIN_DERIVED_PATTERN, patterns};
pub use inspect::{Withheld, inspect};

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};

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
        let patterns = patterns(credential);
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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};

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
        assert!(g.found_in(b"sk-live%2F4f%2B9a8b7c6d5e4f3a2b1c0%3D"));
        assert!(g.found_in(b"sk-live%2f4f%2b9a8b7c6d5e4f3a2b1c0%3d"));
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

    /// The nine re-encodings the review's guest recovered the token from
    /// (issue #34), each inside a longer answer.
    #[test]
    fn the_reviews_nine_re_encodings_are_found() {
        let g = guard();
        let auth = [b"Bearer ".as_slice(), TOKEN].concat();
        let hex_l: String = auth.iter().map(|b| format!("{b:02x}")).collect();
        let b32 = {
            const A: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
            let mut out = String::new();
            for chunk in auth.chunks(5) {
                let mut grp = [0u8; 5];
                grp[..chunk.len()].copy_from_slice(chunk);
                let bits = grp.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b));
                for i in 0..(chunk.len() * 8).div_ceil(5) {
                    out.push(A[((bits >> (35 - i * 5)) & 31) as usize] as char);
                }
            }
            out
        };
        let wrapped: String = STANDARD
            .encode([b"GET / HTTP/1.1\r\nAuthorization: ".as_slice(), &auth].concat())
            .as_bytes()
            .chunks(76)
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .collect::<Vec<_>>()
            .join("\r\n");
        let pct: String = auth.iter().map(|b| format!("%{b:02X}")).collect();
        let html: String = auth.iter().map(|b| format!("&#{b};")).collect();
        let json_u: String = auth.iter().map(|b| format!("\\u{b:04x}")).collect();
        let utf16: Vec<u8> = auth.iter().flat_map(|&b| [b, 0]).collect();
        for (name, form) in [
            ("hex", hex_l.clone().into_bytes()),
            ("HEX", hex_l.to_ascii_uppercase().into_bytes()),
            ("base32", b32.into_bytes()),
            ("base64/76", wrapped.into_bytes()),
            ("percent", pct.into_bytes()),
            ("html", html.into_bytes()),
            ("json \\u", json_u.into_bytes()),
            ("utf-16", utf16),
        ] {
            let body = [b"{\"x\": \"".as_slice(), &form, b"\"}"].concat();
            assert!(g.found_in(&body), "{name}");
        }
        // The ninth: gzip without any Content-Encoding.
        let gz = codings::encode::gzip(&auth);
        assert!(matches!(
            inspect(&g, &http::HeaderMap::new(), None, gz, 1 << 20),
            Err(Withheld::Reflected(_))
        ));
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
