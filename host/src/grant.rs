//! Grants: the permission, attached to one run, to call listed routes of one
//! HTTP API through the broker.
//!
//! Until grant profiles are configured a run carries an empty [`GrantSet`],
//! and the broker denies every call.

use std::collections::BTreeMap;
use std::sync::Arc;

/// One grant attached to a run.
#[derive(Debug)]
pub struct Grant {
    /// The grant's name, as the guest names it in `broker.call(api, …)`.
    pub name: String,
}

/// The grants attached to one run, by name.
#[derive(Debug, Default, Clone)]
pub struct GrantSet {
    grants: BTreeMap<String, Arc<Grant>>,
}

impl GrantSet {
    /// No grants: every broker call is denied.
    pub fn empty() -> Self {
        GrantSet::default()
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
