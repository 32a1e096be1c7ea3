//! Which request headers a guest may send, and which response headers it
//! gets back.
//!
//! The credential is the host's to add, so a guest may never set
//! `Authorization`, `Cookie`, `Host`, `Proxy-*`, hop-by-hop or framing
//! headers, or anything that could change where or how the request is
//! routed. Everything else passes an allow-list, and every value is checked
//! for CR, LF and other control characters so that no header can be
//! smuggled.

/// Most headers a guest may send on one call.
pub const MAX_HEADERS: usize = 32;
/// Longest header name, in bytes.
pub const MAX_NAME_BYTES: usize = 64;
/// Longest header value, in bytes.
pub const MAX_VALUE_BYTES: usize = 4096;
/// Most response headers handed back to the guest.
pub const MAX_RESPONSE_HEADERS: usize = 64;

/// Header names a guest may send as they are.
const ALLOWED: &[&str] = &[
    "accept",
    "accept-language",
    "cache-control",
    "content-language",
    "content-type",
    "idempotency-key",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-unmodified-since",
    "prefer",
    "user-agent",
];

/// `x-` headers that are refused even though `x-` headers are otherwise
/// allowed: they change routing, identity or the method at proxies.
const DENIED_X: &[&str] = &[
    "x-forwarded-for",
    "x-forwarded-host",
    "x-forwarded-proto",
    "x-forwarded-port",
    "x-forwarded-prefix",
    "x-real-ip",
    "x-http-method",
    "x-http-method-override",
    "x-method-override",
    "x-original-url",
    "x-rewrite-url",
    "x-api-key",
    "x-auth-token",
    "x-amz-security-token",
];

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

fn name_allowed(lower: &str) -> bool {
    if ALLOWED.contains(&lower) {
        return true;
    }
    lower.starts_with("x-") && !DENIED_X.contains(&lower) && !lower.starts_with("x-forwarded")
}

/// Checks the guest's headers; returns them with lower-case names.
pub fn check_request_headers(
    headers: &[(String, String)],
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
        if !name_allowed(&lower) {
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
            check_request_headers(&h("x-note", "a\r\nHost: evil")),
            Err(HeaderDenied::BadValue)
        );
        assert_eq!(
            check_request_headers(&h("x-note", "a\nb")),
            Err(HeaderDenied::BadValue)
        );
        assert_eq!(
            check_request_headers(&h("x-note", "a\0b")),
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
            check_request_headers(&h("x-big", &"v".repeat(MAX_VALUE_BYTES + 1))),
            Err(HeaderDenied::BadValue)
        );
    }

    #[test]
    fn ordinary_headers_pass() {
        let ok = check_request_headers(&[
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("X-Request-Id".to_owned(), "abc\tdef".to_owned()),
        ])
        .expect("allowed");
        assert_eq!(ok[0].0, "content-type");
        assert!(response_header_passes("content-type"));
        assert!(!response_header_passes("set-cookie"));
    }
}
