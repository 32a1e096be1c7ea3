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
//!
//! One concept per child: `origin` (a grant's origin, and comparing
//! origins), `parse` (a profile's JSON checked field by field, secrets
//! read). This module holds the validated profiles and the file's errors.

mod origin;
mod parse;
#[cfg(test)]
mod tests;

pub use origin::{Origin, same_origin};
use parse::{RawFile, parse_profile};

use super::credential::CredentialSource;
use super::route::RouteTemplate;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

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

/// A [`GrantsFileError`] about `field` of `profile`.
fn err(profile: Option<&str>, field: &str, message: impl Into<String>) -> GrantsFileError {
    GrantsFileError {
        profile: profile.map(str::to_owned),
        field: field.to_owned(),
        message: message.into(),
    }
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
