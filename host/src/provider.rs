//! Providers: what actually runs a guest, and the isolation it claims.
//!
//! `disabled` (the default) refuses every run. `wasm` runs the guest with
//! wasmtime inside this process and says so: its tier is `process`. The
//! wrapped providers (`wasm+bwrap`, `wasm+gvisor`, `wasm+microvm`) run the
//! engine in a worker behind an outer boundary.

use crate::envelope::Envelope;
use crate::executor;
use crate::grant::GrantSet;
use crate::guest::Guest;
use crate::run::{RunRequest, RunResult};
use crate::runtime::Runtime;
use crate::tier::{Evidence, EvidenceCheck, Isolation, Tier};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;

/// The environment variable that selects the provider.
pub const PROVIDER_ENV: &str = "SANDBOX_PROVIDER";

/// The message every refusal of the `disabled` provider carries.
pub const DISABLED_MESSAGE: &str = "no sandbox provider is configured, so nothing runs. \
     Opt in with SANDBOX_PROVIDER=wasm (in-process wasmtime, isolation tier `process`) \
     or pass --provider wasm to the CLI";

/// The providers plimsoll knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    Disabled,
    Wasm,
    WasmBwrap,
    WasmGvisor,
    WasmMicrovm,
}

impl ProviderKind {
    /// The stable name used in `SANDBOX_PROVIDER`, flags and results.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Disabled => "disabled",
            ProviderKind::Wasm => "wasm",
            ProviderKind::WasmBwrap => "wasm+bwrap",
            ProviderKind::WasmGvisor => "wasm+gvisor",
            ProviderKind::WasmMicrovm => "wasm+microvm",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider name that is not one of the known ones.
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown provider {0:?}: expected disabled, wasm, wasm+bwrap, wasm+gvisor or wasm+microvm")]
pub struct UnknownProvider(pub String);

impl FromStr for ProviderKind {
    type Err = UnknownProvider;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "" | "disabled" => Ok(ProviderKind::Disabled),
            "wasm" => Ok(ProviderKind::Wasm),
            "wasm+bwrap" => Ok(ProviderKind::WasmBwrap),
            "wasm+gvisor" => Ok(ProviderKind::WasmGvisor),
            "wasm+microvm" => Ok(ProviderKind::WasmMicrovm),
            other => Err(UnknownProvider(other.chars().take(64).collect())),
        }
    }
}

/// A boxed future, so that providers can be trait objects.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What runs guests. Implementations must report, in `isolation`, only a
/// boundary they have verified.
pub trait Provider: Send + Sync {
    /// The provider's name (`disabled`, `wasm`, …).
    fn name(&self) -> &str;

    /// The isolation this provider gives every run right now (the
    /// `IsolationClass()` of the design). Checked against the floor
    /// immediately before each dispatch.
    fn isolation(&self) -> Isolation;

    /// Runs `guest` once. The caller has already checked the floor, the
    /// request and the envelope.
    fn run<'a>(
        &'a self,
        guest: &'a Guest,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult>;
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Refuses every run. The default.
#[derive(Debug, Default)]
pub struct DisabledProvider;

impl Provider for DisabledProvider {
    fn name(&self) -> &str {
        "disabled"
    }

    fn isolation(&self) -> Isolation {
        Isolation {
            tier: Tier::Process,
            provider: "disabled".into(),
            wrapper: None,
            evidence: Evidence {
                observed_at_unix: now_unix(),
                summary: "no provider configured: nothing runs".into(),
                checks: Vec::new(),
            },
        }
    }

    fn run<'a>(
        &'a self,
        _guest: &'a Guest,
        _req: &'a RunRequest,
        _env: &'a Envelope,
        _grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult> {
        let iso = self.isolation();
        Box::pin(
            async move { RunResult::refused(run_id, iso, "provider_disabled", DISABLED_MESSAGE) },
        )
    }
}

/// Runs guests with wasmtime in this process. Tier `process`.
pub struct WasmProvider {
    runtime: Runtime,
    isolation: Isolation,
}

impl WasmProvider {
    /// A provider on `runtime`.
    pub fn new(runtime: Runtime) -> Self {
        let opts = runtime.engine().options();
        let isolation = Isolation {
            tier: Tier::Process,
            provider: "wasm".into(),
            wrapper: None,
            evidence: Evidence {
                observed_at_unix: now_unix(),
                summary: "in-process wasmtime: the guest shares the host process; \
                          an engine escape lands in the host"
                    .into(),
                checks: vec![
                    EvidenceCheck {
                        name: "engine".into(),
                        passed: true,
                        observed: format!(
                            "wasmtime 48.0.8, {} allocator, fuel {}",
                            if opts.pooling { "pooling" } else { "on-demand" },
                            if opts.fuel { "on" } else { "off" }
                        ),
                    },
                    EvidenceCheck {
                        name: "outer_boundary".into(),
                        passed: false,
                        observed: "none: no namespaces, seccomp, user-space kernel or VM around the engine"
                            .into(),
                    },
                ],
            },
        };
        WasmProvider { runtime, isolation }
    }
}

impl Provider for WasmProvider {
    fn name(&self) -> &str {
        "wasm"
    }

    fn isolation(&self) -> Isolation {
        self.isolation.clone()
    }

    fn run<'a>(
        &'a self,
        guest: &'a Guest,
        req: &'a RunRequest,
        env: &'a Envelope,
        grants: GrantSet,
        run_id: String,
    ) -> BoxFuture<'a, RunResult> {
        Box::pin(executor::execute(
            &self.runtime,
            guest,
            req,
            env,
            grants,
            self.isolation.clone(),
            run_id,
        ))
    }
}
