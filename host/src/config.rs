//! Operator configuration from the environment.
//!
//! Every setting has a safe default: with nothing set, the provider is
//! `disabled` and nothing runs.

use crate::provider::{PROVIDER_ENV, ProviderKind, UnknownProvider};
use crate::run::Language;
use crate::runtime::RuntimeConfig;
use crate::sandbox::SandboxConfig;
use crate::tier::{Tier, UnknownTier};
use std::path::PathBuf;
use std::time::Duration;

/// The operator-wide isolation floor.
pub const MIN_ISOLATION_ENV: &str = "SANDBOX_MIN_ISOLATION";
pub use crate::paths::{STATE_DIR_ENV, WORK_DIR_ENV};
/// Where precompiled components are cached (default `<state>/components`).
pub const CACHE_DIR_ENV: &str = "PLIMSOLL_CACHE_DIR";
/// A JSON file holding the operator's whole envelope (every field).
pub const ENVELOPE_FILE_ENV: &str = "PLIMSOLL_ENVELOPE_FILE";
/// A directory holding `python.wasm`, `javascript.wasm` and `shell.wasm`.
pub const GUESTS_DIR_ENV: &str = "PLIMSOLL_GUESTS_DIR";
/// The Python interpreter component.
pub const PYTHON_COMPONENT_ENV: &str = "PLIMSOLL_PYTHON_COMPONENT";
/// The JavaScript interpreter component.
pub const JAVASCRIPT_COMPONENT_ENV: &str = "PLIMSOLL_JAVASCRIPT_COMPONENT";
/// The shell guest's component (`guests/shell`).
pub const SHELL_COMPONENT_ENV: &str = "PLIMSOLL_SHELL_COMPONENT";

/// The scientific Python guest's directory (`guests/scientific/build.sh`
/// makes it); default `scientific/` in `PLIMSOLL_GUESTS_DIR`, else
/// `target/guests/scientific`.
pub const SCIENTIFIC_DIR_ENV: &str = "PLIMSOLL_SCIENTIFIC_DIR";
/// The guest a `python` request without `guest` runs: `standard`
/// (default) or `scientific`.
pub const PYTHON_GUEST_ENV: &str = "PLIMSOLL_PYTHON_GUEST";

/// The scientific guest's directory, if this host has one: the setting,
/// else the guests directory's `scientific/`, else the checkout's.
pub fn default_scientific_dir() -> Option<PathBuf> {
    if let Some(explicit) = std::env::var_os(SCIENTIFIC_DIR_ENV).filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(explicit));
    }
    [
        std::env::var_os(GUESTS_DIR_ENV)
            .filter(|p| !p.is_empty())
            .map(|d| PathBuf::from(d).join("scientific")),
        Some(PathBuf::from("target/guests/scientific")),
    ]
    .into_iter()
    .flatten()
    .find(|d| d.join(crate::scientific::SNAPSHOT_FILE).is_file())
}

/// The caches a build of this checkout filled (`make` compiles the guests
/// into `target/test-cache`): beside the guests directory in use, read but
/// never written, so that what `make` compiled is found without a setting.
pub fn default_build_caches() -> Vec<PathBuf> {
    let guests = std::env::var_os(GUESTS_DIR_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/guests"));
    let mut out = Vec::new();
    if let Some(parent) = guests.parent() {
        let dir = parent.join("test-cache");
        if dir.is_dir() {
            out.push(dir);
        }
    }
    out
}

/// The interpreter components this host can find: for each language,
/// `PLIMSOLL_<LANG>_COMPONENT`, else `<lang>.wasm` in `PLIMSOLL_GUESTS_DIR`,
/// else `target/guests/<lang>.wasm` under the current directory (a
/// development checkout). Languages with no file are left out.
pub fn default_interpreters() -> Vec<(Language, PathBuf)> {
    let mut out = Vec::new();
    for (language, env) in [
        (Language::Python, PYTHON_COMPONENT_ENV),
        (Language::Javascript, JAVASCRIPT_COMPONENT_ENV),
        (Language::Shell, SHELL_COMPONENT_ENV),
    ] {
        let file = format!("{}.wasm", language.file_stem());
        let candidates = [
            std::env::var_os(env)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
            std::env::var_os(GUESTS_DIR_ENV)
                .filter(|p| !p.is_empty())
                .map(|d| PathBuf::from(d).join(&file)),
            Some(PathBuf::from("target/guests").join(&file)),
        ];
        // An explicit setting wins even when the file is missing, so that
        // the error names it instead of silently using another file.
        if let Some(explicit) = &candidates[0] {
            out.push((language, explicit.clone()));
            continue;
        }
        if let Some(found) = candidates.into_iter().flatten().find(|p| p.is_file()) {
            out.push((language, found));
        }
    }
    out
}

/// A setting that could not be understood.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{PROVIDER_ENV}: {0}")]
    Provider(#[from] UnknownProvider),
    #[error("{MIN_ISOLATION_ENV}: {0}")]
    Tier(#[from] UnknownTier),
    #[error("{name} is not valid UTF-8")]
    NotUtf8 { name: &'static str },
    #[error(transparent)]
    Grants(#[from] crate::grant::GrantsFileError),
    #[error("{ENVELOPE_FILE_ENV} {}: {message}", path.display())]
    Envelope { path: PathBuf, message: String },
    #[error("{name} must be a whole number")]
    Number { name: &'static str },
    #[error("{name} must be one of: {choices}")]
    Choice {
        name: &'static str,
        choices: &'static str,
    },
}

fn var(name: &'static str) -> Result<Option<String>, ConfigError> {
    match std::env::var(name) {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Ok(Some(v)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(ConfigError::NotUtf8 { name }),
    }
}

pub use crate::paths::{default_state_dir, default_work_dir};

/// Reads an operator envelope: a JSON object with every field of
/// [`crate::Envelope`] and nothing else, each within the host's hard
/// maximum.
pub fn load_envelope(path: &std::path::Path) -> Result<crate::Envelope, ConfigError> {
    let err = |message: String| ConfigError::Envelope {
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let env: crate::Envelope = serde_json::from_str(&text).map_err(|e| err(e.to_string()))?;
    env.validate().map_err(|e| err(e.to_string()))?;
    Ok(env)
}

impl SandboxConfig {
    /// Reads `SANDBOX_PROVIDER`, `SANDBOX_MIN_ISOLATION`,
    /// `PLIMSOLL_STATE_DIR`, `PLIMSOLL_WORK_DIR`, `PLIMSOLL_ENVELOPE_FILE`,
    /// `PLIMSOLL_KEEP_RESIDENT_MIB`, `PLIMSOLL_WARM_INSTANCES` and
    /// `PLIMSOLL_GRANTS_FILE`
    /// (which is checked completely: a bad file is an error); everything
    /// else keeps its default.
    pub fn from_env() -> Result<Self, ConfigError> {
        let provider = match var(PROVIDER_ENV)? {
            Some(v) => v.parse::<ProviderKind>()?,
            None => ProviderKind::Disabled,
        };
        let min_isolation = match var(MIN_ISOLATION_ENV)? {
            Some(v) => Some(v.parse::<Tier>()?),
            None => None,
        };
        let grants = match std::env::var_os(crate::grant::profile::GRANTS_FILE_ENV) {
            Some(p) if !p.is_empty() => {
                crate::grant::GrantProfiles::load(std::path::Path::new(&p))?
            }
            _ => crate::grant::GrantProfiles::empty(),
        };
        let mut sessions = crate::session::SessionLimits::default();
        if let Some(v) = var("SANDBOX_MAX_SESSIONS_PER_CALLER")? {
            sessions.per_caller = v.trim().parse().map_err(|_| ConfigError::Number {
                name: "SANDBOX_MAX_SESSIONS_PER_CALLER",
            })?;
        }
        // The host-wide total, across callers.
        if let Some(v) = var("SANDBOX_MAX_SESSIONS")? {
            sessions.total = v.trim().parse().map_err(|_| ConfigError::Number {
                name: "SANDBOX_MAX_SESSIONS",
            })?;
        }
        let envelope = match std::env::var_os(ENVELOPE_FILE_ENV) {
            Some(p) if !p.is_empty() => load_envelope(std::path::Path::new(&p))?,
            _ => crate::envelope::Envelope::default(),
        };
        let state = default_state_dir();
        let mut workers = crate::provider::WorkerConfig {
            image_dir: Some(state.join("worker-images")),
            ..Default::default()
        };
        if let Some(v) = var("PLIMSOLL_WORKER_BIN")? {
            workers.worker_bin = Some(PathBuf::from(v));
        }
        if let Some(v) = var("PLIMSOLL_WORKER_POOL")? {
            workers.warm = v.trim().parse().map_err(|_| ConfigError::Number {
                name: "PLIMSOLL_WORKER_POOL",
            })?;
        }
        if let Some(v) = var("PLIMSOLL_WORKER_MAX")? {
            workers.max = v.trim().parse().map_err(|_| ConfigError::Number {
                name: "PLIMSOLL_WORKER_MAX",
            })?;
        }
        if let Some(v) = var("PLIMSOLL_WORKER_MAX_PER_CALLER")? {
            workers.max_per_caller = Some(v.trim().parse().map_err(|_| ConfigError::Number {
                name: "PLIMSOLL_WORKER_MAX_PER_CALLER",
            })?);
        }
        if let Some(v) = var("PLIMSOLL_WORKER_MAX_RUNS")? {
            workers.max_runs = v.trim().parse().map_err(|_| ConfigError::Number {
                name: "PLIMSOLL_WORKER_MAX_RUNS",
            })?;
        }
        if let Some(v) = var("PLIMSOLL_WORKER_MAX_AGE_SEC")? {
            let secs: u64 = v.trim().parse().map_err(|_| ConfigError::Number {
                name: "PLIMSOLL_WORKER_MAX_AGE_SEC",
            })?;
            workers.max_age = Duration::from_secs(secs.min(86_400));
        }
        if let Some(v) = var("PLIMSOLL_WORKER_IDLE_SEC")? {
            let secs: u64 = v.trim().parse().map_err(|_| ConfigError::Number {
                name: "PLIMSOLL_WORKER_IDLE_SEC",
            })?;
            workers.idle = Duration::from_secs(secs.min(86_400));
        }
        let mut engine = crate::engine::EngineOptions::default();
        if let Some(v) = var(crate::engine::KEEP_RESIDENT_ENV)? {
            let mib: u64 = v.trim().parse().map_err(|_| ConfigError::Number {
                name: crate::engine::KEEP_RESIDENT_ENV,
            })?;
            engine.keep_resident_bytes = mib.min(4096) << 20;
        }
        if let Some(v) = var(crate::engine::WARM_INSTANCES_ENV)? {
            let n: u32 = v.trim().parse().map_err(|_| ConfigError::Number {
                name: crate::engine::WARM_INSTANCES_ENV,
            })?;
            engine.warm_instances = n.min(64);
        }
        Ok(SandboxConfig {
            workers,
            envelope,
            sessions,
            provider,
            min_isolation,
            grants,
            interpreters: default_interpreters(),
            scientific: default_scientific_dir(),
            python_default_scientific: match var(PYTHON_GUEST_ENV)?.as_deref().map(str::trim) {
                None | Some("standard") => false,
                Some("scientific") => true,
                Some(_) => {
                    return Err(ConfigError::Choice {
                        name: PYTHON_GUEST_ENV,
                        choices: "standard, scientific",
                    });
                }
            },
            runtime: RuntimeConfig {
                cache_dir: Some(
                    std::env::var_os(CACHE_DIR_ENV)
                        .filter(|p| !p.is_empty())
                        .map(PathBuf::from)
                        .unwrap_or_else(|| state.join("components")),
                ),
                cache_also: default_build_caches(),
                compile_notice: None,
                workspace_dir: default_work_dir(&state),
                engine,
            },
        })
    }
}
