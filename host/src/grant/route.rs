//! Route templates (`GET /v1/orders/*`) and the canonical-path check that
//! guards them.
//!
//! A request path is matched exactly as the guest wrote it. Anything that an
//! upstream or a proxy might normalise into a different path — `.` or `..`
//! segments, empty segments, percent-encoded `/`, `.`, `\`, NUL, control
//! characters or unreserved characters, backslashes, non-ASCII look-alikes,
//! fragments — is denied, never normalised into a match. The query string is
//! forwarded but takes no part in matching.
//!
//! Beyond the path's own syntax, a segment must stay safe after every
//! normalisation a server or proxy is known to apply ([`normalised_is_safe`]):
//! Tomcat and Spring drop `;params` before resolving `..`; some servers trim
//! whitespace and trailing dots; many decode once more; some map overlong
//! UTF-8 or full-width look-alikes onto `.` and `/`. So `;` is refused
//! unless the grant profile opts in (`allow_path_parameters`), and a segment
//! is refused when, with its parameters dropped, decoded once and trimmed,
//! it is empty, `.`, `..`, holds a separator, is not valid UTF-8, or holds a
//! look-alike of `.`, `/` or `\`.

use std::fmt;

/// Longest request target (path plus query) accepted, in bytes.
pub const MAX_TARGET_BYTES: usize = 2048;
/// Most path segments accepted.
pub const MAX_SEGMENTS: usize = 32;

/// An HTTP method the broker knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    Get,
    Put,
    Post,
    Delete,
    Patch,
}

impl Method {
    /// Parses a method case-insensitively; `None` for anything else.
    pub fn parse(s: &str) -> Option<Method> {
        [
            Method::Get,
            Method::Put,
            Method::Post,
            Method::Delete,
            Method::Patch,
        ]
        .into_iter()
        .find(|m| m.as_str().eq_ignore_ascii_case(s))
    }

    /// The upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Patch => "PATCH",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a request path was denied. The reasons form a closed set so that
/// they can be recorded without echoing the guest's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathDenied {
    TooLong,
    NotAbsolute,
    Fragment,
    NotAscii,
    ForbiddenCharacter,
    Backslash,
    EmptySegment,
    DotSegment,
    BadPercentEncoding,
    EncodedSeparator,
    EncodedControl,
    EncodedUnreserved,
    TooManySegments,
    Parameter,
    Normalises,
    BadUtf8,
}

impl PathDenied {
    /// A stable, short reason.
    pub fn as_str(self) -> &'static str {
        match self {
            PathDenied::TooLong => "path too long",
            PathDenied::NotAbsolute => "path must start with /",
            PathDenied::Fragment => "path has a fragment",
            PathDenied::NotAscii => "path is not ASCII",
            PathDenied::ForbiddenCharacter => "path has a character that must be percent-encoded",
            PathDenied::Backslash => "path has a backslash",
            PathDenied::EmptySegment => "path has an empty segment",
            PathDenied::DotSegment => "path has a . or .. segment",
            PathDenied::BadPercentEncoding => "path has a malformed percent-encoding",
            PathDenied::EncodedSeparator => "path has an encoded /, \\, . or %",
            PathDenied::EncodedControl => "path has an encoded control character",
            PathDenied::EncodedUnreserved => "path percent-encodes a character that needs none",
            PathDenied::TooManySegments => "path has too many segments",
            PathDenied::Parameter => "path has a ; parameter, which this grant does not allow",
            PathDenied::Normalises => {
                "path has a segment that a server would normalise into ., .. or a separator"
            }
            PathDenied::BadUtf8 => "path percent-encodes invalid or overlong UTF-8",
        }
    }
}

impl fmt::Display for PathDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request target split into its canonical path segments and its query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CanonicalTarget<'a> {
    /// The path, exactly as given (it is already canonical).
    pub path: &'a str,
    /// The segments of the path, without the leading empty one.
    pub segments: Vec<&'a str>,
    /// The query without its `?`, if there was one.
    pub query: Option<&'a str>,
}

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// RFC 3986 `pchar` minus `%` (checked separately): unreserved,
/// sub-delims, `:` and `@`.
fn is_plain_pchar(b: u8) -> bool {
    is_unreserved(b)
        || matches!(
            b,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
        )
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Characters that Unicode normalisation (NFKC) or lenient decoders turn
/// into `.`, `/` or `\`.
const LOOK_ALIKES: &[char] = &[
    '\u{2024}', // one dot leader
    '\u{2025}', // two dot leader
    '\u{2026}', // horizontal ellipsis
    '\u{fe52}', // small full stop
    '\u{ff0e}', // fullwidth full stop
    '\u{2215}', // division slash
    '\u{2044}', // fraction slash
    '\u{fe68}', // small reverse solidus
    '\u{ff0f}', // fullwidth solidus
    '\u{ff3c}', // fullwidth reverse solidus
    '\u{29f5}', // reverse solidus operator
];

/// Whether `seg` (already checked character by character) stays a plain,
/// separator-free segment under the normalisations servers apply: its
/// `;parameters` dropped, decoded once, whitespace trimmed, trailing dots
/// trimmed.
pub fn normalised_is_safe(seg: &str) -> Result<(), PathDenied> {
    let base = seg.split(';').next().unwrap_or("");
    let b = base.as_bytes();
    let mut decoded = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                b.get(i + 1).and_then(|x| hex(*x)),
                b.get(i + 2).and_then(|x| hex(*x)),
            )
        {
            decoded.push(hi * 16 + lo);
            i += 3;
        } else {
            decoded.push(b[i]);
            i += 1;
        }
    }
    let text = std::str::from_utf8(&decoded).map_err(|_| PathDenied::BadUtf8)?;
    if text.chars().any(|c| LOOK_ALIKES.contains(&c)) {
        return Err(PathDenied::Normalises);
    }
    // A server that decodes first and drops parameters after (`..%3b`).
    let text = text.split(';').next().unwrap_or("");
    let trimmed = text
        .trim_matches(|c: char| c.is_whitespace())
        .trim_end_matches(|c: char| c == '.' || c.is_whitespace());
    if trimmed.is_empty() || trimmed == "." || trimmed.contains(['/', '\\']) {
        return Err(PathDenied::Normalises);
    }
    Ok(())
}

/// Checks one path segment's characters and percent-encodings; `;` only
/// when `parameters` is allowed.
fn check_segment(seg: &str, parameters: bool) -> Result<(), PathDenied> {
    if seg.is_empty() {
        return Err(PathDenied::EmptySegment);
    }
    if seg == "." || seg == ".." {
        return Err(PathDenied::DotSegment);
    }
    let b = seg.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'%' {
            let (Some(hi), Some(lo)) = (
                b.get(i + 1).and_then(|x| hex(*x)),
                b.get(i + 2).and_then(|x| hex(*x)),
            ) else {
                return Err(PathDenied::BadPercentEncoding);
            };
            let decoded = hi * 16 + lo;
            if matches!(decoded, b'/' | b'\\' | b'.' | b'%') {
                return Err(PathDenied::EncodedSeparator);
            }
            if decoded < 0x20 || decoded == 0x7f {
                return Err(PathDenied::EncodedControl);
            }
            if is_unreserved(decoded) {
                return Err(PathDenied::EncodedUnreserved);
            }
            i += 3;
            continue;
        }
        if c == b'\\' {
            return Err(PathDenied::Backslash);
        }
        if !is_plain_pchar(c) {
            return Err(PathDenied::ForbiddenCharacter);
        }
        if c == b';' && !parameters {
            return Err(PathDenied::Parameter);
        }
        i += 1;
    }
    normalised_is_safe(seg)
}

/// Checks a query string: printable ASCII without `#`, with well-formed
/// percent-encodings. It is forwarded, never matched, never recorded.
fn check_query(q: &str) -> Result<(), PathDenied> {
    let b = q.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if b.get(i + 1).and_then(|x| hex(*x)).is_none()
                    || b.get(i + 2).and_then(|x| hex(*x)).is_none()
                {
                    return Err(PathDenied::BadPercentEncoding);
                }
                i += 3;
            }
            b'\\' => return Err(PathDenied::Backslash),
            c if is_plain_pchar(c) || c == b'/' || c == b'?' => i += 1,
            _ => return Err(PathDenied::ForbiddenCharacter),
        }
    }
    Ok(())
}

/// Splits and checks a guest's request target (`/path?query`), with `;`
/// refused in the path.
pub fn canonical_target(target: &str) -> Result<CanonicalTarget<'_>, PathDenied> {
    canonical_target_with(target, false)
}

/// [`canonical_target`], with `;` path parameters allowed when
/// `parameters` (a profile's `allow_path_parameters`); a segment must still
/// be safe with its parameters dropped.
pub fn canonical_target_with(
    target: &str,
    parameters: bool,
) -> Result<CanonicalTarget<'_>, PathDenied> {
    if target.len() > MAX_TARGET_BYTES {
        return Err(PathDenied::TooLong);
    }
    if !target.is_ascii() {
        return Err(PathDenied::NotAscii);
    }
    if target.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(PathDenied::ForbiddenCharacter);
    }
    if target.contains('#') {
        return Err(PathDenied::Fragment);
    }
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    let Some(rest) = path.strip_prefix('/') else {
        return Err(PathDenied::NotAbsolute);
    };
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.len() > MAX_SEGMENTS {
        return Err(PathDenied::TooManySegments);
    }
    for seg in &segments {
        check_segment(seg, parameters)?;
    }
    if let Some(q) = query {
        check_query(q)?;
    }
    Ok(CanonicalTarget {
        path,
        segments,
        query,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    /// `*`: exactly one non-empty segment.
    Any,
}

/// One allowed (method, path template) pair of a grant, e.g.
/// `GET /v1/orders/*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTemplate {
    method: Method,
    segments: Vec<Segment>,
    text: String,
}

/// Why a route template in a grants file was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("expected `METHOD /path`, e.g. `GET /v1/orders/*`")]
    Shape,
    #[error("method {0:?} is not one of GET, PUT, POST, DELETE, PATCH")]
    Method(String),
    #[error("the path is not canonical: {0}")]
    Path(PathDenied),
    #[error("a template has no query string")]
    Query,
    #[error("`*` must be a whole segment")]
    PartialWildcard,
}

impl RouteTemplate {
    /// Parses `METHOD /path/template`. Literal segments must themselves be
    /// canonical; `*` stands for exactly one non-empty segment.
    pub fn parse(s: &str) -> Result<RouteTemplate, TemplateError> {
        let mut parts = s.split(' ').filter(|p| !p.is_empty());
        let (Some(m), Some(path), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(TemplateError::Shape);
        };
        let method =
            Method::parse(m).ok_or_else(|| TemplateError::Method(m.chars().take(16).collect()))?;
        if path.contains('?') {
            return Err(TemplateError::Query);
        }
        let target = canonical_target(path).map_err(TemplateError::Path)?;
        let mut segments = Vec::with_capacity(target.segments.len());
        for seg in target.segments {
            if seg == "*" {
                segments.push(Segment::Any);
            } else if seg.contains('*') {
                return Err(TemplateError::PartialWildcard);
            } else {
                segments.push(Segment::Literal(seg.to_owned()));
            }
        }
        Ok(RouteTemplate {
            method,
            segments,
            text: format!("{} {}", method, path),
        })
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The template as written, normalised to `METHOD /path`.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The path part of the template (what a CallTrace records).
    pub fn path_template(&self) -> &str {
        self.text.split_once(' ').map(|(_, p)| p).unwrap_or("")
    }

    /// Whether `method` and the canonical `target` match this template.
    pub fn matches(&self, method: Method, target: &CanonicalTarget<'_>) -> bool {
        method == self.method
            && target.segments.len() == self.segments.len()
            && self
                .segments
                .iter()
                .zip(&target.segments)
                .all(|(t, s)| match t {
                    Segment::Any => !s.is_empty(),
                    Segment::Literal(l) => l == s,
                })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(template: &str, method: &str, target: &str) -> bool {
        let t = RouteTemplate::parse(template).expect("template");
        let Some(m) = Method::parse(method) else {
            return false;
        };
        canonical_target(target)
            .map(|c| t.matches(m, &c))
            .unwrap_or(false)
    }

    #[test]
    fn exact_and_wildcard_matches() {
        assert!(allowed("GET /v1/orders/*", "GET", "/v1/orders/42"));
        assert!(allowed(
            "GET /v1/orders/*",
            "get",
            "/v1/orders/42?expand=items&x=%20"
        ));
        assert!(allowed("POST /v1/orders", "POST", "/v1/orders"));
        assert!(allowed(
            "GET /v1/orders/*/items/*",
            "GET",
            "/v1/orders/7/items/9"
        ));
        assert!(allowed("GET /v1/orders/*", "GET", "/v1/orders/a%20b"));
    }

    #[test]
    fn non_canonical_and_mismatched_paths_are_denied() {
        let t = "GET /v1/orders/*";
        for target in [
            "/v1/orders",
            "/v1/orders/",
            "/v1/orders/1/extra",
            "/v1/orders/1/../admin",
            "/v1/orders/..",
            "/v1/orders/.",
            "/v1/orders/%2e%2e",
            "/v1/orders/%2E%2E",
            "/v1/orders/1%2Fadmin",
            "/v1/orders/1%2fadmin",
            "/v1/orders/1%5cadmin",
            "/v1/orders/1%00",
            "/v1/orders/1%0d%0a",
            "/v1/orders/%61",
            "/v1/orders/%",
            "/v1/orders/%zz",
            "//v1/orders/1",
            "/v1//orders/1",
            "/V1/Orders/1",
            "/v1/orders/1#frag",
            "/v1/orders/1\\x",
            "/v1/orders/1 x",
            "/v1/orders/1\r\nHost: evil",
            "/v1/orders/\u{ff0f}1",
            "/v1/orders\u{2215}1",
            "v1/orders/1",
            "*",
            "",
            "http://evil.example/v1/orders/1",
        ] {
            assert!(!allowed(t, "GET", target), "{target:?} was allowed");
        }
        assert!(!allowed(t, "POST", "/v1/orders/1"));
        assert!(!allowed(t, "OPTIONS", "/v1/orders/1"));
        let long = format!("/v1/orders/{}", "a".repeat(MAX_TARGET_BYTES));
        assert!(!allowed(t, "GET", &long));
    }

    #[test]
    fn segments_that_servers_normalise_are_denied() {
        let t = "GET /v1/orders/*/items";
        for target in [
            "/v1/orders/..;/items",
            "/v1/orders/..;x=1/items",
            "/v1/orders/.;/items",
            "/v1/orders/1;jsessionid=x/items",
            "/v1/orders/..%20/items",
            "/v1/orders/%20../items",
            "/v1/orders/..%09/items",
            "/v1/orders/.../items",
            "/v1/orders/..../items",
            "/v1/orders/.%20./items",
            "/v1/orders/%c0%ae%c0%ae/items",
            "/v1/orders/%C0%AE%C0%AE/items",
            "/v1/orders/%e0%80%ae/items",
            "/v1/orders/%c0%af/items",
            "/v1/orders/%ff/items",
            "/v1/orders/%ef%bc%8e%ef%bc%8e/items",
            "/v1/orders/%e2%88%95/items",
            "/v1/orders/%20/items",
            "/v1/orders/..%3b/items",
            "/v1/orders/..%3Bx/items",
        ] {
            assert!(!allowed(t, "GET", target), "{target:?} was allowed");
        }
        assert!(!allowed("GET /v1/items/*", "GET", "/v1/items/..;"));
        // What stays a plain segment is still allowed.
        assert!(allowed(t, "GET", "/v1/orders/42/items"));
        assert!(allowed(t, "GET", "/v1/orders/caf%C3%A9/items"));
        assert!(allowed(t, "GET", "/v1/orders/v1.2/items"));
        // A profile that opts in to `;` gets parameters, never `..;`.
        let tpl = RouteTemplate::parse(t).expect("template");
        let with = |p: &str| {
            canonical_target_with(p, true)
                .map(|c| tpl.matches(Method::Get, &c))
                .unwrap_or(false)
        };
        assert!(with("/v1/orders/1;v=2/items"));
        assert!(!with("/v1/orders/..;/items"));
        assert!(!with("/v1/orders/;x/items"));
    }

    #[test]
    fn templates_are_validated() {
        for bad in [
            "GET",
            "GET /a /b",
            "FETCH /a",
            "GET a",
            "GET /a/../b",
            "GET /a?x=1",
            "GET /a*",
            "GET /a//b",
        ] {
            assert!(RouteTemplate::parse(bad).is_err(), "{bad:?} accepted");
        }
        let t = RouteTemplate::parse("patch  /v1/x/*").expect("template");
        assert_eq!(t.as_str(), "PATCH /v1/x/*");
        assert_eq!(t.path_template(), "/v1/x/*");
    }
}
