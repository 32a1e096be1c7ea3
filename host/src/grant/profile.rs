//! Grant profiles: grants stored on the host under a name, read from the
//! JSON file named by `PLIMSOLL_GRANTS_FILE`.
//!
//! ```json
//! {"profiles": {"orders": {
//!     "base_url": "https://orders.example.com",
//!     "allow": ["GET /v1/orders/*", "POST /v1/orders"],
//!     "allowed_callers": ["alice"],
//!     "scopes": ["orders:read"],
//!     "token": {"type": "static", "env": "ORDERS_TOKEN"},
//!     "allow_headers": ["x-request-id"],
//!     "max_calls": 50}}}
//! ```
//!
//! The file is checked completely at start-up: unknown fields, unsafe base
//! URLs, malformed route templates, missing or short secrets are all errors
//! that name the profile and the field, and the host refuses to start.

use super::credential::{CredentialSource, JwtIssuer, MIN_JWT_SECRET_BYTES, Secret};
use super::route::RouteTemplate;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The environment variable naming the grants file.
pub const GRANTS_FILE_ENV: &str = "PLIMSOLL_GRANTS_FILE";
/// Largest grants file read, in bytes.
pub const MAX_GRANTS_FILE_BYTES: u64 = 4 << 20;
/// The default call budget of a grant.
pub const DEFAULT_MAX_CALLS: u64 = 256;
/// Longest JWT lifetime accepted, in seconds.
pub const MAX_TTL_SEC: u64 = 24 * 3600;

/// A problem with the grants file, naming the profile and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("grants file: {}{field}: {message}", profile.as_ref().map(|p| format!("profile {p:?}, field ")).unwrap_or_default())]
pub struct GrantsFileError {
    /// The profile, when the problem is inside one.
    pub profile: Option<String>,
    /// The field (or `file`, `profiles`).
    pub field: String,
    /// What is wrong. Never contains a secret.
    pub message: String,
}

fn err(profile: Option<&str>, field: &str, message: impl Into<String>) -> GrantsFileError {
    GrantsFileError {
        profile: profile.map(str::to_owned),
        field: field.to_owned(),
        message: message.into(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    profiles: BTreeMap<String, serde_json::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    base_url: String,
    allow: Vec<String>,
    #[serde(default)]
    allowed_callers: Option<Vec<String>>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    token: Option<RawToken>,
    #[serde(default)]
    max_calls: Option<u64>,
    #[serde(default)]
    allow_headers: Vec<String>,
    #[serde(default)]
    allow_path_parameters: bool,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
enum RawToken {
    Static {
        #[serde(default)]
        env: Option<String>,
        #[serde(default)]
        file: Option<PathBuf>,
    },
    Jwt {
        secret_env: String,
        ttl_sec: u64,
        issuer: String,
        audience: String,
        #[serde(default)]
        key_id: Option<String>,
    },
}

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

/// One validated grant profile.
#[derive(Debug)]
pub struct GrantProfile {
    pub name: String,
    pub origin: Origin,
    pub routes: Vec<RouteTemplate>,
    /// `None`: any caller may use the profile.
    pub allowed_callers: Option<BTreeSet<String>>,
    pub scopes: Vec<String>,
    pub credential: Option<CredentialSource>,
    pub max_calls: u64,
    /// Request headers a guest may send besides the default allow-list
    /// (lower-case; never one of [`super::headers::NEVER_ALLOWED`]).
    pub allow_headers: Vec<String>,
    /// Whether `;` path parameters are allowed (for APIs that use them;
    /// a segment must still be safe with them dropped, see
    /// [`super::route::normalised_is_safe`]).
    pub allow_path_parameters: bool,
    /// The search for a static credential's reflections, built on the
    /// profile's first answer and shared by every run that uses it (a
    /// minted credential gets one per run instead).
    pub static_reflection: std::sync::OnceLock<std::sync::Arc<super::reflection::ReflectionGuard>>,
}

/// Every grant profile of the host, by name.
#[derive(Debug, Default, Clone)]
pub struct GrantProfiles {
    profiles: BTreeMap<String, Arc<GrantProfile>>,
}

/// Checks a profile or caller name: `[A-Za-z0-9._-]{1,128}`.
pub fn valid_name(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if h.eq_ignore_ascii_case("localhost") {
        return true;
    }
    h.parse::<std::net::IpAddr>()
        .map(|ip| ip.is_loopback())
        .unwrap_or(false)
}

fn parse_origin(profile: &str, raw: &str) -> Result<Origin, GrantsFileError> {
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

fn read_secret_env(
    profile: &str,
    field: &str,
    var: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Secret, GrantsFileError> {
    match env(var) {
        Some(v) if !v.is_empty() => Ok(Secret::new(v.into_bytes())),
        _ => Err(err(
            Some(profile),
            field,
            format!("environment variable {var} is not set or empty"),
        )),
    }
}

fn parse_profile(
    name: &str,
    value: serde_json::Value,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<GrantProfile, GrantsFileError> {
    if !valid_name(name) {
        return Err(err(Some(name), "name", "must match [A-Za-z0-9._-]{1,128}"));
    }
    let raw: RawProfile =
        serde_json::from_value(value).map_err(|e| err(Some(name), "(profile)", e.to_string()))?;
    let origin = parse_origin(name, &raw.base_url)?;
    if raw.allow.is_empty() {
        return Err(err(Some(name), "allow", "must list at least one route"));
    }
    let mut routes = Vec::with_capacity(raw.allow.len());
    for (i, r) in raw.allow.iter().enumerate() {
        let t = RouteTemplate::parse(r)
            .map_err(|e| err(Some(name), &format!("allow[{i}]"), e.to_string()))?;
        routes.push(t);
    }
    let allowed_callers = match raw.allowed_callers {
        None => None,
        Some(list) => {
            let mut set = BTreeSet::new();
            for (i, c) in list.into_iter().enumerate() {
                if !valid_name(&c) {
                    return Err(err(
                        Some(name),
                        &format!("allowed_callers[{i}]"),
                        "must match [A-Za-z0-9._-]{1,128}",
                    ));
                }
                set.insert(c);
            }
            Some(set)
        }
    };
    for (i, s) in raw.scopes.iter().enumerate() {
        if s.is_empty()
            || s.len() > 256
            || s.bytes()
                .any(|b| !(0x21..0x7f).contains(&b) || b == b'"' || b == b'\\')
        {
            return Err(err(
                Some(name),
                &format!("scopes[{i}]"),
                "must be 1-256 printable ASCII characters without spaces, quotes or backslashes",
            ));
        }
    }
    let max_calls = raw.max_calls.unwrap_or(DEFAULT_MAX_CALLS);
    if max_calls == 0 || max_calls > 1_000_000 {
        return Err(err(
            Some(name),
            "max_calls",
            "must be between 1 and 1000000",
        ));
    }
    if raw.allow_headers.len() > super::headers::MAX_PROFILE_HEADERS {
        return Err(err(
            Some(name),
            "allow_headers",
            format!("at most {} names", super::headers::MAX_PROFILE_HEADERS),
        ));
    }
    let mut allow_headers = Vec::with_capacity(raw.allow_headers.len());
    for (i, h) in raw.allow_headers.iter().enumerate() {
        let lower = h.to_ascii_lowercase();
        if !super::headers::profile_may_allow(&lower) {
            return Err(err(
                Some(name),
                &format!("allow_headers[{i}]"),
                "must be a header name (a token of at most 64 bytes) other than the credential, cookie, host, proxy, forwarding, framing and hop-by-hop headers",
            ));
        }
        if !allow_headers.contains(&lower) {
            allow_headers.push(lower);
        }
    }
    let credential = match raw.token {
        None => None,
        Some(RawToken::Static {
            env: Some(var),
            file: None,
        }) => Some(CredentialSource::Static(read_secret_env(
            name,
            "token.env",
            &var,
            env,
        )?)),
        Some(RawToken::Static {
            env: None,
            file: Some(path),
        }) => {
            let bytes = read_secret_file(&path).map_err(|m| err(Some(name), "token.file", m))?;
            Some(CredentialSource::Static(bytes))
        }
        Some(RawToken::Static { .. }) => {
            return Err(err(
                Some(name),
                "token",
                "a static token needs exactly one of `env` and `file`",
            ));
        }
        Some(RawToken::Jwt {
            secret_env,
            ttl_sec,
            issuer,
            audience,
            key_id,
        }) => {
            let secret = read_secret_env(name, "token.secret_env", &secret_env, env)?;
            if secret.len() < MIN_JWT_SECRET_BYTES {
                return Err(err(
                    Some(name),
                    "token.secret_env",
                    format!(
                        "the secret in {secret_env} must be at least {MIN_JWT_SECRET_BYTES} bytes"
                    ),
                ));
            }
            if ttl_sec == 0 || ttl_sec > MAX_TTL_SEC {
                return Err(err(
                    Some(name),
                    "token.ttl_sec",
                    format!("must be between 1 and {MAX_TTL_SEC}"),
                ));
            }
            for (field, v) in [("token.issuer", &issuer), ("token.audience", &audience)] {
                if v.is_empty() || v.len() > 256 || v.chars().any(char::is_control) {
                    return Err(err(
                        Some(name),
                        field,
                        "must be 1-256 characters without control characters",
                    ));
                }
            }
            if let Some(k) = &key_id
                && (k.is_empty() || k.len() > 128 || k.chars().any(char::is_control))
            {
                return Err(err(
                    Some(name),
                    "token.key_id",
                    "must be 1-128 characters without control characters",
                ));
            }
            Some(CredentialSource::Jwt(JwtIssuer {
                secret,
                ttl: Duration::from_secs(ttl_sec),
                issuer,
                audience,
                key_id,
                scopes: raw.scopes.clone(),
            }))
        }
    };
    Ok(GrantProfile {
        name: name.to_owned(),
        origin,
        routes,
        allowed_callers,
        scopes: raw.scopes,
        credential,
        max_calls,
        allow_headers,
        allow_path_parameters: raw.allow_path_parameters,
        static_reflection: std::sync::OnceLock::new(),
    })
}

fn read_secret_file(path: &Path) -> Result<Secret, String> {
    let md = std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if md.len() > 64 * 1024 {
        return Err(format!("{} is larger than 64 KiB", path.display()));
    }
    let mut bytes =
        std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    if bytes.is_empty() {
        return Err(format!("{} is empty", path.display()));
    }
    Ok(Secret::new(bytes))
}

impl GrantProfiles {
    /// No profiles.
    pub fn empty() -> Self {
        GrantProfiles::default()
    }

    /// Parses and validates a grants file's text. `env` looks up
    /// environment variables (injected so that tests need not change the
    /// process's environment).
    pub fn from_json(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, GrantsFileError> {
        let raw: RawFile =
            serde_json::from_str(text).map_err(|e| err(None, "file", e.to_string()))?;
        let mut profiles = BTreeMap::new();
        for (name, value) in raw.profiles {
            let p = parse_profile(&name, value, env)?;
            profiles.insert(name, Arc::new(p));
        }
        Ok(GrantProfiles { profiles })
    }

    /// Reads the grants file at `path`, with secrets from the process
    /// environment.
    pub fn load(path: &Path) -> Result<Self, GrantsFileError> {
        let md = std::fs::metadata(path)
            .map_err(|e| err(None, "file", format!("{}: {e}", path.display())))?;
        if md.len() > MAX_GRANTS_FILE_BYTES {
            return Err(err(None, "file", "larger than 4 MiB"));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| err(None, "file", format!("{}: {e}", path.display())))?;
        Self::from_json(&text, &|k| std::env::var(k).ok())
    }

    /// The profile named `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<GrantProfile>> {
        self.profiles.get(name)
    }

    /// Every profile name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.profiles.keys().map(String::as_str)
    }

    /// Whether there are no profiles.
    pub fn is_empty(&self) -> bool {
        self.profiles.is_empty()
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn origins_compare_with_default_ports_and_guest_origins_are_strict() {
        use super::{Origin, same_origin};
        assert!(same_origin(
            "https",
            "api.example.com:443",
            "HTTPS",
            "API.example.com"
        ));
        assert!(same_origin("http", "127.0.0.1", "http", "127.0.0.1:80"));
        assert!(!same_origin("http", "127.0.0.1:8080", "http", "127.0.0.1"));
        assert!(!same_origin("https", "a.example", "http", "a.example"));
        assert!(!same_origin("https", "a.example:80", "https", "a.example"));
        let o = Origin::parse_guest("HTTP://Example.COM:8080/").expect("origin");
        assert_eq!(
            (o.scheme.as_str(), o.authority.as_str()),
            ("http", "example.com:8080")
        );
        for bad in [
            "http://u:p@example.com",
            "http://example.com/v1",
            "http://example.com/?q",
            "http://example.com#f",
            "ftp://example.com",
            "example.com",
            "",
        ] {
            assert!(Origin::parse_guest(bad).is_none(), "{bad}");
        }
    }
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "TOKEN" => Some("static-token-value".into()),
            "JWT_SECRET" => Some("x".repeat(32)),
            "SHORT" => Some("short".into()),
            _ => None,
        }
    }

    fn parse(json: &str) -> Result<GrantProfiles, GrantsFileError> {
        GrantProfiles::from_json(json, &env)
    }

    fn profile(body: &str) -> String {
        format!(r#"{{"profiles": {{"orders": {body}}}}}"#)
    }

    #[test]
    fn a_complete_file_parses() {
        let p = parse(&profile(
            r#"{"base_url": "https://api.example.com", "allow": ["GET /v1/orders/*", "post /v1/orders"],
                "allowed_callers": ["alice"], "scopes": ["orders:read"],
                "token": {"type": "jwt", "secret_env": "JWT_SECRET", "ttl_sec": 60, "issuer": "plimsoll", "audience": "orders"},
                "max_calls": 5}"#,
        ))
        .expect("valid");
        let o = p.get("orders").expect("profile");
        assert_eq!(o.origin.url(), "https://api.example.com");
        assert_eq!(o.routes.len(), 2);
        assert_eq!(o.max_calls, 5);
        let loopback = parse(&profile(
            r#"{"base_url": "http://127.0.0.1:8080", "allow": ["GET /x"], "token": {"type": "static", "env": "TOKEN"}}"#,
        ))
        .expect("loopback http is allowed");
        assert_eq!(
            loopback.get("orders").map(|p| p.max_calls),
            Some(DEFAULT_MAX_CALLS)
        );
    }

    #[test]
    fn every_error_names_the_profile_and_the_field() {
        let cases = [
            (
                r#"{"base_url": "http://api.example.com", "allow": ["GET /x"]}"#,
                "base_url",
            ),
            (
                r#"{"base_url": "https://api.example.com/v1", "allow": ["GET /x"]}"#,
                "base_url",
            ),
            (
                r#"{"base_url": "https://u:p@api.example.com", "allow": ["GET /x"]}"#,
                "base_url",
            ),
            (
                r#"{"base_url": "ftp://api.example.com", "allow": ["GET /x"]}"#,
                "base_url",
            ),
            (
                r#"{"base_url": "https://api.example.com?x=1", "allow": ["GET /x"]}"#,
                "base_url",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": []}"#,
                "allow",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /a/../b"]}"#,
                "allow[0]",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "max_calls": 0}"#,
                "max_calls",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "static", "env": "MISSING"}}"#,
                "token.env",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "jwt", "secret_env": "SHORT", "ttl_sec": 60, "issuer": "i", "audience": "a"}}"#,
                "token.secret_env",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "jwt", "secret_env": "JWT_SECRET", "ttl_sec": 0, "issuer": "i", "audience": "a"}}"#,
                "token.ttl_sec",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "alow": []}"#,
                "(profile)",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "token": {"type": "static", "env": "TOKEN", "extra": 1}}"#,
                "(profile)",
            ),
            (
                r#"{"base_url": "https://api.example.com", "allow": ["GET /x"], "allowed_callers": ["a b"]}"#,
                "allowed_callers[0]",
            ),
        ];
        for (body, field) in cases {
            let e = parse(&profile(body)).expect_err(body);
            assert_eq!(e.profile.as_deref(), Some("orders"), "{body}");
            assert_eq!(e.field, field, "{body}: {e}");
            let shown = e.to_string();
            assert!(
                shown.contains("\"orders\"") && shown.contains(field),
                "{shown}"
            );
            assert!(!shown.contains("static-token-value") && !shown.contains(&"x".repeat(32)));
        }
        let e = parse(
            r#"{"profiles": {"bad name": {"base_url": "https://a.example", "allow": ["GET /x"]}}}"#,
        )
        .expect_err("bad name");
        assert_eq!(e.field, "name");
        assert_eq!(
            parse(r#"{"profile": {}}"#)
                .expect_err("unknown top-level field")
                .field,
            "file"
        );
        assert_eq!(parse("not json").expect_err("malformed").field, "file");
    }
}
