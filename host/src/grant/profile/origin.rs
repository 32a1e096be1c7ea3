//! A grant's origin: parsed strictly from a profile's `base_url` or a
//! guest's URL, and compared.
//!
//! Guarantees: an origin is `scheme://host[:port]` only — no user
//! information, path, query or fragment; a profile's is `https`, or `http`
//! for a loopback host only; two origins are the same when scheme and
//! host match case-insensitively, with a scheme's default port written or
//! left out; nothing else is normalised.

use super::{GrantsFileError, err};

/// The origin a grant's calls go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: String,
    /// `host[:port]`.
    pub authority: String,
}

impl Origin {
    /// `scheme://authority`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.authority)
    }

    /// A guest's origin (`scheme://host[:port]`, `http` or `https`), or
    /// `None` when it is anything else: user information, a path other
    /// than `/`, a query or a fragment. Nothing is normalised but case.
    pub fn parse_guest(raw: &str) -> Option<Origin> {
        if raw.len() > 2048 || raw.contains('#') {
            return None;
        }
        let uri: http::Uri = raw.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return None;
        }
        let authority = uri.authority()?;
        let rest = uri.path_and_query().map(|p| p.as_str()).unwrap_or("");
        if authority.as_str().contains('@') || !(rest.is_empty() || rest == "/") {
            return None;
        }
        Some(Origin {
            scheme,
            authority: authority.as_str().to_ascii_lowercase(),
        })
    }
}

/// Whether two origins are the same: scheme and host case-insensitively,
/// with a scheme's default port (`:443`, `:80`) written or left out.
pub fn same_origin(
    scheme: &str,
    authority: &str,
    other_scheme: &str,
    other_authority: &str,
) -> bool {
    fn bare<'a>(scheme: &str, authority: &'a str) -> &'a str {
        let default = if scheme.eq_ignore_ascii_case("https") {
            ":443"
        } else if scheme.eq_ignore_ascii_case("http") {
            ":80"
        } else {
            return authority;
        };
        authority.strip_suffix(default).unwrap_or(authority)
    }
    scheme.eq_ignore_ascii_case(other_scheme)
        && bare(scheme, authority).eq_ignore_ascii_case(bare(other_scheme, other_authority))
}

/// Whether `host` is `localhost` or a loopback address.
fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.eq_ignore_ascii_case("localhost") {
        return true;
    }
    h.parse::<std::net::IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

/// A profile's `base_url` as its origin.
pub(super) fn parse_origin(profile: &str, raw: &str) -> Result<Origin, GrantsFileError> {
    let bad = |m: &str| err(Some(profile), "base_url", m);
    let uri: http::Uri = raw.parse().map_err(|_| bad("not a valid URL"))?;
    let scheme = uri
        .scheme_str()
        .ok_or_else(|| bad("has no scheme"))?
        .to_ascii_lowercase();
    let authority = uri.authority().ok_or_else(|| bad("has no host"))?;
    if authority.as_str().contains('@') {
        return Err(bad("must not contain user information"));
    }
    let rest = uri.path_and_query().map(|p| p.as_str()).unwrap_or("");
    if !(rest.is_empty() || rest == "/") || raw.contains('#') {
        return Err(bad(
            "must be an origin only (scheme://host[:port]) with no path, query or fragment",
        ));
    }
    match scheme.as_str() {
        "https" => {}
        "http" if is_loopback_host(authority.host()) => {}
        "http" => return Err(bad("must use https unless the host is loopback")),
        _ => return Err(bad("scheme must be https (or http for a loopback host)")),
    }
    Ok(Origin {
        scheme,
        authority: authority.as_str().to_ascii_lowercase(),
    })
}
