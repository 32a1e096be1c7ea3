//! From the command line and the environment to a [`SandboxConfig`]:
//! flags first, then the environment's defaults for everything else.
//!
//! Guarantees: the provider is `disabled` unless one is named (nothing
//! runs by default); the scientific guest is loaded only when asked for.

use crate::args::CommonArgs;
use plimsoll::{Language, ProviderKind, SandboxConfig, Tier};

/// The refusal of a scientific run without the scientific guest.
pub(crate) const NO_SCIENTIFIC: &str =
    "no scientific Python guest found: build it with `make guests` or set PLIMSOLL_SCIENTIFIC_DIR";

/// Whether a run of `language` with `guest` needs the scientific guest
/// loaded (loading it reads 60 MB, so a plain run does not).
pub(crate) fn wants_scientific(
    cfg: &SandboxConfig,
    language: Option<Language>,
    guest: Option<&str>,
) -> bool {
    language == Some(Language::Python)
        && match guest {
            Some(g) => g == plimsoll::scientific::GUEST_NAME,
            None => cfg.python_default_scientific,
        }
}

/// The sandbox settings of `common` over the environment's defaults.
pub(crate) fn sandbox_config(common: &CommonArgs) -> Result<SandboxConfig, String> {
    // clap has already read SANDBOX_PROVIDER etc. into the flags; start
    // from the environment's defaults for everything else.
    let mut cfg = SandboxConfig::from_env().map_err(|e| e.to_string())?;
    cfg.provider = match &common.provider {
        Some(p) => p.parse::<ProviderKind>().map_err(|e| e.to_string())?,
        None => ProviderKind::Disabled,
    };
    if let Some(t) = &common.min_isolation {
        cfg.min_isolation = Some(t.parse::<Tier>().map_err(|e| e.to_string())?);
    }
    if let Some(dir) = &common.state_dir {
        cfg.runtime.cache_dir = Some(dir.join("components"));
        // Workspaces follow `PLIMSOLL_WORK_DIR` and its documented default
        // (README's table), whatever the state directory.
        if std::env::var_os(plimsoll::config::WORK_DIR_ENV).is_none() {
            cfg.runtime.workspace_dir = plimsoll::config::default_work_dir(dir);
        }
    }
    cfg.runtime.engine.fuel = !common.no_fuel;
    // A first run compiles its guest for this machine (seconds for CPython,
    // minutes for the scientific guest): say so before the wait.
    cfg.runtime.compile_notice = Some(plimsoll::component_cache::CompileNotice(
        std::sync::Arc::new(|what: &str, bytes: u64| {
            // A small component compiles in well under a second: no note.
            if bytes < (8 << 20) {
                return;
            }
            let time = if bytes > (64 << 20) {
                "a few minutes"
            } else {
                "some seconds"
            };
            eprintln!(
                "plimsoll: compiling {what} for this machine first ({time}; it is cached afterwards)"
            );
        }),
    ));
    // The scientific guest is loaded by a command only when asked for: a
    // directory named outright, the operator's default, or a run's
    // `--guest scientific` (`run`, `repl`). Found implicitly, it would
    // cost every `info` and `batch` a 63 MB read, and a compile of minutes
    // where the cache does not hold it.
    if std::env::var_os(plimsoll::config::SCIENTIFIC_DIR_ENV).is_none()
        && !cfg.python_default_scientific
    {
        cfg.scientific = None;
    }
    if let Some(path) = &common.grants_file {
        cfg.grants = plimsoll::grant::GrantProfiles::load(path).map_err(|e| e.to_string())?;
    }
    Ok(cfg)
}
