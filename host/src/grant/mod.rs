//! Grants: the permission, attached to one run, to call listed routes of one
//! HTTP API through the broker.
//!
//! A [`GrantProfile`] is stored on the host under a name (see [`profile`]).
//! When a run asks for profiles by name, each becomes a [`Grant`] for that
//! run: the profile plus the run's credential (the static token, or a JWT
//! minted for this caller and this run). Grants live only in the host; the
//! guest sees the grant's name and nothing else.

pub mod credential;
pub mod headers;
pub mod profile;
pub mod reflection;
pub mod route;

pub use credential::Secret;
pub use profile::{GrantProfile, GrantProfiles, GrantsFileError};
pub use route::{Method, RouteTemplate};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// One grant attached to a run.
pub struct Grant {
    /// The profile it was made from.
    pub profile: Arc<GrantProfile>,
    /// The credential for this run, if the profile has one.
    pub credential: Option<Secret>,
    /// Finds that credential in a response ([`reflection`]); built on the
    /// first answer, so that a run that makes no call pays nothing (and
    /// shared with the profile for a static credential).
    reflection: std::sync::OnceLock<Arc<reflection::ReflectionGuard>>,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("profile", &self.profile.name)
            .field(
                "credential",
                &self.credential.as_ref().map(|_| "[redacted]"),
            )
            .finish()
    }
}

impl Grant {
    /// The grant's name, as the guest names it.
    pub fn name(&self) -> &str {
        &self.profile.name
    }

    /// The search for this grant's credential in an answer (one that finds
    /// nothing for a grant without a credential).
    pub fn reflection(&self) -> &reflection::ReflectionGuard {
        self.reflection.get_or_init(|| {
            let build =
                |c: &Secret| Arc::new(reflection::ReflectionGuard::for_credential(c.expose()));
            match (&self.credential, &self.profile.credential) {
                (None, _) => Arc::new(reflection::ReflectionGuard::none()),
                (Some(c), Some(credential::CredentialSource::Static(s)))
                    if s.expose() == c.expose() =>
                {
                    self.profile
                        .static_reflection
                        .get_or_init(|| build(c))
                        .clone()
                }
                (Some(c), _) => build(c),
            }
        })
    }
}

/// Why a run could not have a grant it asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
///
/// Each names the position in the request's `grants` list, never the name
/// itself: no error message echoes a value the caller sent.
pub enum GrantRefusal {
    #[error("grants[{0}] names no grant profile of this host")]
    Unknown(usize),
    #[error("grants[{0}] names a grant profile this caller may not use")]
    NotAllowed(usize),
    #[error("grants[{0}] names a grant profile already named earlier in the list")]
    Duplicate(usize),
}

impl GrantRefusal {
    /// The stable error code.
    pub fn code(&self) -> &'static str {
        match self {
            GrantRefusal::Unknown(_) => "unknown_grant",
            GrantRefusal::NotAllowed(_) => "grant_not_allowed",
            GrantRefusal::Duplicate(_) => "invalid_request",
        }
    }
}

/// The grants attached to one run, by name.
#[derive(Debug, Default, Clone)]
pub struct GrantSet {
    grants: BTreeMap<String, Arc<Grant>>,
    /// The caller the grants were resolved for (keys its breakers).
    caller: String,
}

impl GrantSet {
    /// No grants: every broker call is denied.
    pub fn empty() -> Self {
        GrantSet::default()
    }

    /// Resolves `names` against the host's profiles for `caller`, minting
    /// per-run credentials that live at most `run_budget` plus a grace.
    pub fn resolve(
        profiles: &GrantProfiles,
        names: &[String],
        caller: &str,
        run_budget: Duration,
    ) -> Result<GrantSet, GrantRefusal> {
        let mut grants = BTreeMap::new();
        for (i, name) in names.iter().enumerate() {
            let profile = profiles.get(name).ok_or(GrantRefusal::Unknown(i))?;
            if let Some(allowed) = &profile.allowed_callers
                && !allowed.contains(caller)
            {
                return Err(GrantRefusal::NotAllowed(i));
            }
            if grants.contains_key(name) {
                return Err(GrantRefusal::Duplicate(i));
            }
            let credential = profile
                .credential
                .as_ref()
                .map(|c| c.credential_for(caller, run_budget));
            grants.insert(
                name.clone(),
                Arc::new(Grant {
                    profile: profile.clone(),
                    credential,
                    reflection: std::sync::OnceLock::new(),
                }),
            );
        }
        Ok(GrantSet {
            grants,
            caller: caller.to_owned(),
        })
    }

    /// The caller these grants were resolved for (empty for no grants).
    pub fn caller(&self) -> &str {
        &self.caller
    }

    /// The grant named `name`, if this run has it.
    pub fn get(&self, name: &str) -> Option<&Arc<Grant>> {
        self.grants.get(name)
    }

    /// Whether the run has no grants.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// The names of the grants, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.grants.keys().map(String::as_str)
    }
}
