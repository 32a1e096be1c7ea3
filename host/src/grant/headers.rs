//! Which request headers a guest may send, and which response headers it
//! gets back.
//!
//! The credential is the host's to add, and many servers and proxies act
//! on headers a guest could otherwise set: auth proxies trust
//! `X-Remote-User` or `X-WEBAUTH-USER`, nginx and Envoy route on
//! `X-Original-URI` or `X-Envoy-Original-Path`, APIs read keys from
//! `X-Goog-Api-Key`. A deny-list cannot know them all, so this is an
//! **allow-list**: a small default set of content-negotiation and caching
//! headers ([`DEFAULT_ALLOWED`]), plus the names a grant profile lists in
//! `allow_headers`. Everything else is refused (and the call traced as
//! denied, never sent). A profile can never allow the headers in
//! [`NEVER_ALLOWED`]: the credential, cookies, the host, proxies, framing
//! and hop-by-hop headers, `Forwarded`/`X-Forwarded-*`, and
//! `Accept-Encoding` (the host asks for an unencoded answer, which it can
//! check for a reflected credential). Every value is checked for CR, LF
//! and other control characters so that no header can be smuggled.

/// Most headers a guest may send on one call.
pub const MAX_HEADERS: usize = 32;
/// Longest header name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Longest header value, in bytes.
pub const MAX_VALUE_BYTES: usize = 4096;
/// Most response headers handed back to the guest.
pub const MAX_RESPONSE_HEADERS: usize = 64;
/// Most extra header names one grant profile may allow.
pub const MAX_PROFILE_HEADERS: usize = 32;

/// Header names any grant lets a guest send.
pub const DEFAULT_ALLOWED: &[&str] = &[
    "accept",
    "accept-charset",
    "accept-language",
    "cache-control",
    "content-language",
    "content-type",
    "idempotency-key",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "prefer",
    "user-agent",
];

/// Header names no grant profile can allow. Prefixes end in `-`.
pub const NEVER_ALLOWED: &[&str] = &[
    "accept-encoding",
    "authorization",
    "connection",
    "content-encoding",
    "content-length",
    "cookie",
    "cookie2",
    "expect",
    "forwarded",
    "host",
    "keep-alive",
    "max-forwards",
    "origin",
    "proxy-",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "via",
    "x-forwarded-",
    "x-real-ip",
];

/// Whether a profile may list `lower` in `allow_headers`.
pub fn profile_may_allow(lower: &str) -> bool {
    !lower.is_empty()
        && lower.len() <= MAX_NAME_BYTES
        && lower
            .bytes()
            .all(|b| is_tchar(b) && !b.is_ascii_uppercase())
        && !NEVER_ALLOWED.iter().any(|n| {
            if n.ends_with('-') {
                lower.starts_with(n)
            } else {
                lower == *n
            }
        })
}

/// Response headers never handed to the guest.
const STRIPPED_RESPONSE: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-connection",
    "set-cookie",
    "set-cookie2",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Why a header was refused. A closed set: the guest's header value is
/// never recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderDenied {
    TooMany,
    BadName,
    NotAllowed,
    Duplicate,
    BadValue,
}

impl HeaderDenied {
    /// A stable, short reason.
    pub fn as_str(self) -> &'static str {
        match self {
            HeaderDenied::TooMany => "too many headers",
            HeaderDenied::BadName => "a header name is not a valid token",
            HeaderDenied::NotAllowed => "a header is not on the allow-list",
            HeaderDenied::Duplicate => "a header appears twice",
            HeaderDenied::BadValue => "a header value has a control character or is too long",
        }
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn name_allowed(lower: &str, extra: &[String]) -> bool {
    DEFAULT_ALLOWED.contains(&lower)
        || (profile_may_allow(lower) && extra.iter().any(|e| e == lower))
}

/// Checks the guest's headers against the default allow-list; returns
/// them with lower-case names.
pub fn check_request_headers(
    headers: &[(String, String)],
) -> Result<Vec<(String, String)>, HeaderDenied> {
    check_request_headers_for(headers, &[])
}

/// Checks the guest's headers against the default allow-list plus
/// `extra` (a profile's `allow_headers`, lower-case); returns them with
/// lower-case names.
pub fn check_request_headers_for(
    headers: &[(String, String)],
    extra: &[String],
) -> Result<Vec<(String, String)>, HeaderDenied> {
    if headers.len() > MAX_HEADERS {
        return Err(HeaderDenied::TooMany);
    }
    let mut out: Vec<(String, String)> = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        if name.is_empty() || name.len() > MAX_NAME_BYTES || !name.bytes().all(is_tchar) {
            return Err(HeaderDenied::BadName);
        }
        let lower = name.to_ascii_lowercase();
        if !name_allowed(&lower, extra) {
            return Err(HeaderDenied::NotAllowed);
        }
        if value.len() > MAX_VALUE_BYTES
            || value.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f)
        {
            return Err(HeaderDenied::BadValue);
        }
        if out.iter().any(|(n, _)| *n == lower) {
            return Err(HeaderDenied::Duplicate);
        }
        out.push((lower, value.clone()));
    }
    Ok(out)
}

/// Whether a response header may be handed to the guest.
pub fn response_header_passes(lower_name: &str) -> bool {
    !STRIPPED_RESPONSE.contains(&lower_name) && !lower_name.starts_with("proxy-")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(n: &str, v: &str) -> Vec<(String, String)> {
        vec![(n.to_owned(), v.to_owned())]
    }

    #[test]
    fn credentials_routing_and_framing_headers_are_refused() {
        for name in [
            "Authorization",
            "authorization",
            "Cookie",
            "Host",
            "Proxy-Authorization",
            "Connection",
            "Transfer-Encoding",
            "Content-Length",
            "TE",
            "Upgrade",
            "X-Forwarded-For",
            "X-HTTP-Method-Override",
            "Forwarded",
            "X-Api-Key",
            "X-Remote-User",
            "X-WEBAUTH-USER",
            "X-Auth-Request-User",
            "X-Original-URI",
            "X-Envoy-Original-Path",
            "X-Client-IP",
            "X-Goog-Api-Key",
            "X-Access-Token",
            "Accept-Encoding",
            "X-Request-Id",
        ] {
            assert_eq!(
                check_request_headers(&h(name, "x")),
                Err(HeaderDenied::NotAllowed),
                "{name}"
            );
        }
    }

    #[test]
    fn smuggling_is_refused() {
        assert_eq!(
            check_request_headers(&h("user-agent", "a\r\nHost: evil")),
            Err(HeaderDenied::BadValue)
        );
        assert_eq!(
            check_request_headers(&h("user-agent", "a\nb")),
            Err(HeaderDenied::BadValue)
        );
        assert_eq!(
            check_request_headers(&h("user-agent", "a\0b")),
            Err(HeaderDenied::BadValue)
        );
        assert_eq!(
            check_request_headers(&h("x-no te", "a")),
            Err(HeaderDenied::BadName)
        );
        assert_eq!(
            check_request_headers(&h("x-note:", "a")),
            Err(HeaderDenied::BadName)
        );
        assert_eq!(
            check_request_headers(&h("", "a")),
            Err(HeaderDenied::BadName)
        );
        let dup = vec![
            ("Accept".to_owned(), "a".to_owned()),
            ("accept".to_owned(), "b".to_owned()),
        ];
        assert_eq!(check_request_headers(&dup), Err(HeaderDenied::Duplicate));
        let many: Vec<_> = (0..=MAX_HEADERS)
            .map(|i| (format!("x-h{i}"), "v".to_owned()))
            .collect();
        assert_eq!(check_request_headers(&many), Err(HeaderDenied::TooMany));
        assert_eq!(
            check_request_headers(&h("user-agent", &"v".repeat(MAX_VALUE_BYTES + 1))),
            Err(HeaderDenied::BadValue)
        );
    }

    #[test]
    fn a_profile_adds_names_but_never_the_forbidden_ones() {
        let extra = vec!["x-request-id".to_owned(), "authorization".to_owned()];
        assert!(check_request_headers_for(&h("X-Request-Id", "1"), &extra).is_ok());
        assert_eq!(
            check_request_headers_for(&h("Authorization", "x"), &extra),
            Err(HeaderDenied::NotAllowed)
        );
        for never in [
            "authorization",
            "proxy-x",
            "x-forwarded-host",
            "accept-encoding",
            "Host",
        ] {
            assert!(!profile_may_allow(never), "{never}");
        }
        assert!(profile_may_allow("x-api-version"));
    }

    #[test]
    fn ordinary_headers_pass() {
        let extra = vec!["x-request-id".to_owned()];
        let ok = check_request_headers_for(
            &[
                ("Content-Type".to_owned(), "application/json".to_owned()),
                ("X-Request-Id".to_owned(), "abc\tdef".to_owned()),
            ],
            &extra,
        )
        .expect("allowed");
        assert_eq!(ok[0].0, "content-type");
        assert!(response_header_passes("content-type"));
        assert!(!response_header_passes("set-cookie"));
    }
}
