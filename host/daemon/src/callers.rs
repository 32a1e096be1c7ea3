//! Callers: who may use the daemon, with which token, and within which
//! limits.
//!
//! The callers file (`PLIMSOLL_CLIENTS_FILE`) lists each caller's id, the
//! SHA-256 of its bearer token (the daemon never holds the token itself),
//! its scopes, the grant profiles it may attach, its envelope (a lowering of
//! the operator's) and its quotas. A token is checked by hashing it and
//! comparing the hash with every caller's in constant time, so neither the
//! answer nor its timing tells which caller came close.

use plimsoll::Envelope;
use plimsoll::envelope::Limits;
use plimsoll::grant::GrantProfiles;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// A permission a caller may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Start runs and sessions (`POST /v1/runs`, `/v1/sessions…`).
    CodeRun,
    /// Read `GET /v1/info`.
    InfoRead,
}

impl Scope {
    /// The name used in the callers file.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::CodeRun => "code:run",
            Scope::InfoRead => "info:read",
        }
    }

    fn parse(s: &str) -> Option<Scope> {
        match s {
            "code:run" => Some(Scope::CodeRun),
            "info:read" => Some(Scope::InfoRead),
            _ => None,
        }
    }
}

/// Quotas applied when the callers file leaves one out (hardened mode
/// requires every one to be explicit).
pub mod defaults {
    /// Requests per minute.
    pub const RATE_PER_MIN: u32 = 600;
    /// Runs in flight.
    pub const MAX_CONCURRENT: u32 = 8;
}

/// One caller, as the daemon uses it.
#[derive(Debug)]
pub struct Caller {
    /// The caller's id: in the audit log, in metrics labels, as the subject
    /// of minted credentials.
    pub id: String,
    token_sha256: [u8; 32],
    /// What it may do.
    pub scopes: BTreeSet<Scope>,
    /// Grant profiles it may attach; `None` = every profile (insecure
    /// local mode only).
    pub grant_profiles: Option<BTreeSet<String>>,
    /// Its envelope: the operator's, lowered by the file's `envelope`.
    pub envelope: Envelope,
    /// Requests per minute (`rate_per_min`).
    pub rate_per_min: u32,
    /// Runs in flight (`max_concurrent`).
    pub max_concurrent: u32,
    /// Open sessions (`max_sessions`).
    pub max_sessions: u32,
    /// Wall-clock seconds of runs per UTC day (`cpu_seconds_per_day`);
    /// `None` = no allowance.
    pub cpu_seconds_per_day: Option<u64>,
    /// Which quotas the file gave explicitly: `rate_per_min`,
    /// `max_concurrent`, `max_sessions`, `cpu_seconds_per_day`.
    pub explicit: BTreeSet<&'static str>,
}

impl Caller {
    /// Whether the caller holds `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// Whether the caller may attach the grant profile `name`.
    pub fn may_use_profile(&self, name: &str) -> bool {
        self.grant_profiles
            .as_ref()
            .is_none_or(|set| set.contains(name))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientsFile {
    clients: Vec<ClientEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientEntry {
    id: String,
    token_sha256: String,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    grant_profiles: Vec<String>,
    #[serde(default)]
    envelope: Option<Limits>,
    rate_per_min: Option<u32>,
    max_concurrent: Option<u32>,
    max_sessions: Option<u32>,
    cpu_seconds_per_day: Option<u64>,
}

/// Why the callers file was refused. Messages name the caller and field,
/// never a token.
#[derive(Debug, thiserror::Error)]
#[error("callers file {path}: {message}")]
pub struct CallersError {
    path: String,
    message: String,
}

/// The callers the daemon serves.
#[derive(Debug, Clone)]
pub struct Callers {
    list: Arc<Vec<Arc<Caller>>>,
    /// Insecure local mode: every request is the `local` caller.
    open: bool,
}

/// A caller id: short, printable, safe as a metrics label and a log field.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

impl Callers {
    /// Loads and checks the callers file against the operator's envelope,
    /// the grant profiles and the per-caller session cap.
    pub fn load(
        path: &Path,
        operator: &Envelope,
        grants: &GrantProfiles,
        default_max_sessions: u32,
    ) -> Result<Callers, CallersError> {
        let err = |message: String| CallersError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        Self::from_json(&text, operator, grants, default_max_sessions).map_err(err)
    }

    /// Parses a callers file's text (see [`Callers::load`]).
    pub fn from_json(
        text: &str,
        operator: &Envelope,
        grants: &GrantProfiles,
        default_max_sessions: u32,
    ) -> Result<Callers, String> {
        let file: ClientsFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if file.clients.is_empty() {
            return Err("`clients` is empty: nobody could call the daemon".into());
        }
        let mut ids = HashSet::new();
        let mut hashes = HashSet::new();
        let mut list = Vec::new();
        for (i, c) in file.clients.into_iter().enumerate() {
            if !valid_id(&c.id) {
                return Err(format!(
                    "clients[{i}].id must be 1–64 characters of A–Z a–z 0–9 . _ -"
                ));
            }
            let at = |field: &str| format!("client {:?}: {field}", c.id);
            if !ids.insert(c.id.clone()) {
                return Err(at("the id appears twice"));
            }
            let mut token_sha256 = [0u8; 32];
            if c.token_sha256.len() != 64
                || hex::decode_to_slice(c.token_sha256.to_ascii_lowercase(), &mut token_sha256)
                    .is_err()
            {
                return Err(at(
                    "token_sha256 must be 64 hex digits (sha256sum of the token)",
                ));
            }
            if !hashes.insert(token_sha256) {
                return Err(at("token_sha256 is shared with another caller"));
            }
            let mut scopes = BTreeSet::new();
            for s in &c.scopes {
                match Scope::parse(s) {
                    Some(sc) => {
                        scopes.insert(sc);
                    }
                    None => {
                        return Err(at(&format!(
                            "unknown scope {:?}: expected code:run or info:read",
                            s.chars().take(32).collect::<String>()
                        )));
                    }
                }
            }
            let mut profiles = BTreeSet::new();
            for p in &c.grant_profiles {
                if grants.get(p).is_none() {
                    return Err(at(&format!(
                        "grant profile {:?} is not in the grants file",
                        p.chars().take(64).collect::<String>()
                    )));
                }
                profiles.insert(p.clone());
            }
            let envelope = operator
                .lowered_by(&c.envelope.unwrap_or_default())
                .map_err(|e| at(&format!("envelope: {e}")))?;
            let mut explicit = BTreeSet::new();
            for (name, given) in [
                ("rate_per_min", c.rate_per_min.is_some()),
                ("max_concurrent", c.max_concurrent.is_some()),
                ("max_sessions", c.max_sessions.is_some()),
                ("cpu_seconds_per_day", c.cpu_seconds_per_day.is_some()),
            ] {
                if given {
                    explicit.insert(name);
                }
            }
            let positive = |name: &str, v: Option<u32>, default: u32| match v {
                Some(0) => Err(at(&format!("{name} must be at least 1"))),
                Some(v) => Ok(v),
                None => Ok(default),
            };
            let rate_per_min = positive("rate_per_min", c.rate_per_min, defaults::RATE_PER_MIN)?;
            let max_concurrent =
                positive("max_concurrent", c.max_concurrent, defaults::MAX_CONCURRENT)?;
            // Zero sessions is a meaningful setting: this caller has none.
            let max_sessions = c.max_sessions.unwrap_or(default_max_sessions);
            if c.cpu_seconds_per_day == Some(0) {
                return Err(at("cpu_seconds_per_day must be at least 1"));
            }
            list.push(Arc::new(Caller {
                id: c.id,
                token_sha256,
                scopes,
                grant_profiles: Some(profiles),
                envelope,
                rate_per_min,
                max_concurrent,
                max_sessions,
                cpu_seconds_per_day: c.cpu_seconds_per_day,
                explicit,
            }));
        }
        Ok(Callers {
            list: Arc::new(list),
            open: false,
        })
    }

    /// Insecure local mode (`PLIMSOLL_INSECURE=1`, loopback only): one
    /// caller, `local`, needs no token and may use every profile.
    pub fn insecure_local(operator: &Envelope, max_sessions: u32) -> Callers {
        let caller = Caller {
            id: plimsoll::sandbox::LOCAL_CALLER.to_owned(),
            token_sha256: [0; 32],
            scopes: [Scope::CodeRun, Scope::InfoRead].into_iter().collect(),
            grant_profiles: None,
            envelope: *operator,
            rate_per_min: defaults::RATE_PER_MIN * 100,
            max_concurrent: 1024,
            max_sessions,
            cpu_seconds_per_day: None,
            explicit: BTreeSet::new(),
        };
        Callers {
            list: Arc::new(vec![Arc::new(caller)]),
            open: true,
        }
    }

    /// Whether this is insecure local mode (no tokens).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Every caller.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Caller>> {
        self.list.iter()
    }

    /// The caller whose token is `token`, if any. Every caller's hash is
    /// compared, in constant time, whatever matches first.
    pub fn authenticate(&self, token: Option<&[u8]>) -> Option<Arc<Caller>> {
        if self.open {
            return self.list.first().cloned();
        }
        let token = token?;
        let hash: [u8; 32] = Sha256::digest(token).into();
        let mut found: Option<&Arc<Caller>> = None;
        for c in self.list.iter() {
            if bool::from(c.token_sha256.ct_eq(&hash)) {
                found = Some(c);
            }
        }
        found.cloned()
    }
}

/// The token in an `Authorization: Bearer <token>` header value, if the
/// value has that form. Tokens longer than 4 KiB are not tokens.
pub fn bearer(value: Option<&http::HeaderValue>) -> Option<&[u8]> {
    let v = value?.as_bytes();
    let rest = v
        .strip_prefix(b"Bearer ")
        .or_else(|| v.strip_prefix(b"bearer "))?;
    let rest = rest.trim_ascii();
    if rest.is_empty() || rest.len() > 4096 {
        return None;
    }
    Some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(t: &str) -> String {
        hex::encode(Sha256::digest(t.as_bytes()))
    }

    fn load(json: &str) -> Result<Callers, String> {
        Callers::from_json(json, &Envelope::default(), &GrantProfiles::empty(), 4)
    }

    #[test]
    fn a_token_selects_its_caller_and_nothing_else_does() {
        let json = format!(
            r#"{{"clients":[{{"id":"a","token_sha256":"{}","scopes":["code:run"]}},
                {{"id":"b","token_sha256":"{}"}}]}}"#,
            sha("token-a"),
            sha("token-b")
        );
        let callers = load(&json).expect("valid file");
        let a = callers.authenticate(Some(b"token-a")).expect("a");
        assert_eq!(a.id, "a");
        assert!(a.has(Scope::CodeRun));
        let b = callers.authenticate(Some(b"token-b")).expect("b");
        assert!(!b.has(Scope::CodeRun));
        assert!(callers.authenticate(Some(b"token-c")).is_none());
        assert!(callers.authenticate(None).is_none());
    }

    #[test]
    fn bad_files_are_refused_with_the_field_named() {
        let h = sha("t");
        for (json, needle) in [
            (r#"{"clients":[]}"#.to_string(), "empty"),
            (
                format!(r#"{{"clients":[{{"id":"a b","token_sha256":"{h}"}}]}}"#),
                "id",
            ),
            (
                r#"{"clients":[{"id":"a","token_sha256":"abc"}]}"#.to_string(),
                "token_sha256",
            ),
            (
                format!(r#"{{"clients":[{{"id":"a","token_sha256":"{h}","scopes":["root"]}}]}}"#),
                "unknown scope",
            ),
            (
                format!(
                    r#"{{"clients":[{{"id":"a","token_sha256":"{h}","grant_profiles":["nope"]}}]}}"#
                ),
                "grant profile",
            ),
            (
                format!(
                    r#"{{"clients":[{{"id":"a","token_sha256":"{h}","envelope":{{"wall_time_ms":999999999}}}}]}}"#
                ),
                "envelope",
            ),
            (
                format!(r#"{{"clients":[{{"id":"a","token_sha256":"{h}","rate_per_min":0}}]}}"#),
                "rate_per_min",
            ),
            (
                format!(r#"{{"clients":[{{"id":"a","token_sha256":"{h}","extra":1}}]}}"#),
                "unknown field",
            ),
            (
                format!(
                    r#"{{"clients":[{{"id":"a","token_sha256":"{h}"}},{{"id":"b","token_sha256":"{h}"}}]}}"#
                ),
                "shared",
            ),
        ] {
            let e = load(&json).expect_err(needle);
            assert!(e.contains(needle), "{e:?} should mention {needle}");
        }
    }

    #[test]
    fn bearer_parses_only_the_bearer_form() {
        let v = http::HeaderValue::from_static("Bearer abc");
        assert_eq!(bearer(Some(&v)), Some(&b"abc"[..]));
        let v = http::HeaderValue::from_static("Basic abc");
        assert_eq!(bearer(Some(&v)), None);
        let v = http::HeaderValue::from_static("Bearer ");
        assert_eq!(bearer(Some(&v)), None);
    }
}
