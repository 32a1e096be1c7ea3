//! `plimsoll info`: the provider, its isolation evidence, the envelope,
//! the grant profiles and the guests, as JSON.

use crate::args::CommonArgs;
use crate::config::sandbox_config;
use crate::fail;
use plimsoll::Sandbox;
use std::process::ExitCode;

/// Prints what a sandbox with `common`'s settings would offer.
pub(crate) fn info(common: CommonArgs) -> ExitCode {
    let cfg = match sandbox_config(&common) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    let sandbox = match Sandbox::new(cfg) {
        Ok(s) => s,
        Err(e) => return fail(&e.to_string()),
    };
    let info = serde_json::json!({
        "provider": sandbox.provider_name(),
        "isolation": sandbox.isolation(),
        "envelope": sandbox.envelope(),
        "grant_profiles": sandbox.grant_profiles().names().collect::<Vec<_>>(),
        "guests": sandbox
            .guest_identities()
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
        "version": env!("CARGO_PKG_VERSION"),
    });
    println!(
        "{}",
        serde_json::to_string_pretty(&info).unwrap_or_default()
    );
    ExitCode::SUCCESS
}
