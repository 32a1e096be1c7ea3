//! One profile of the grants file, checked field by field.
//!
//! Guarantees: unknown fields, unsafe base URLs, malformed route
//! templates, header names that are never allowed, and missing or short
//! secrets are errors naming the profile and the field, never quoting a
//! secret; a secret file is at most 64 KiB; a JWT's lifetime is at most
//! [`MAX_TTL_SEC`].

use super::origin::parse_origin;
use super::{DEFAULT_MAX_CALLS, GrantProfile, GrantsFileError, MAX_TTL_SEC, err, valid_name};
use crate::grant::credential::{CredentialSource, JwtIssuer, MIN_JWT_SECRET_BYTES, Secret};
use crate::grant::route::RouteTemplate;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) profiles: BTreeMap<String, serde_json::Value>,
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

/// A secret from the environment variable `var`, which must be set.
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

/// The profile `name`, checked field by field.
pub(super) fn parse_profile(
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
    if raw.allow_headers.len() > crate::grant::headers::MAX_PROFILE_HEADERS {
        return Err(err(
            Some(name),
            "allow_headers",
            format!(
                "at most {} names",
                crate::grant::headers::MAX_PROFILE_HEADERS
            ),
        ));
    }
    let mut allow_headers = Vec::with_capacity(raw.allow_headers.len());
    for (i, h) in raw.allow_headers.iter().enumerate() {
        let lower = h.to_ascii_lowercase();
        if !crate::grant::headers::profile_may_allow(&lower) {
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

/// A secret from the file at `path` (trailing newlines dropped).
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
