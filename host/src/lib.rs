//! plimsoll: a WebAssembly-component host that runs untrusted code written
//! by AI agents.
//!
//! The library is usable on its own, without the daemon:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use plimsoll::{ProviderKind, RunRequest, Sandbox, SandboxConfig};
//!
//! let sandbox = Sandbox::new(SandboxConfig {
//!     provider: ProviderKind::Wasm,
//!     ..SandboxConfig::default()
//! })?;
//! let bytes = std::fs::read("hello.wasm")?;
//! sandbox.register("hello", &bytes)?;
//! let result = sandbox.run(&RunRequest::component("hello")).await;
//! println!("{} {}", result.status.as_str(), result.stdout);
//! # Ok(()) }
//! ```
//!
//! The flow of a run is request → envelope → provider → guest → result;
//! `docs/architecture.md` walks through it.

pub mod batch;
pub mod bindings;
pub mod blob;
pub mod broker;
pub mod component_cache;
pub mod config;
pub mod cpu;
pub mod engine;
pub mod envelope;
mod executor;
pub mod grant;
pub mod guest;
mod http_gate;
#[cfg(test)]
mod layers;
#[cfg(test)]
mod layers_check;
pub mod limiter;
pub mod live_session;
pub mod logging;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod memfs;
pub mod memtree;
pub mod output;
pub mod paths;
pub mod preinit;
pub mod programs;
pub mod provider;
pub mod reaper;
pub mod redact;
pub mod run;
pub mod runtime;
pub mod sandbox;
pub mod scientific;
pub mod session;
pub mod snapshot;
pub mod state;
pub mod tier;
pub mod trace;
pub mod upstream;
pub mod warm;
pub mod wasip1;
pub mod worker;
pub mod workspace;
mod workspace_usage;
pub mod worlds;
pub mod wrapper;

pub use blob::Blob;
pub use cpu::CpuTarget;
pub use engine::EngineOptions;
pub use envelope::{Envelope, Limits};
pub use guest::{Guest, GuestKind};
pub use provider::ProviderKind;
pub use run::{InputFile, Language, RunRequest, RunResult, Status};
pub use runtime::{Runtime, RuntimeConfig};
pub use sandbox::{Sandbox, SandboxConfig, SandboxError};
pub use tier::{Isolation, Tier};
