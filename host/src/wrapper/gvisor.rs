//! `wasm+gvisor`: the worker in gVisor's user-space kernel (`runsc`), tier
//! `kernel`. Not built yet: the provider is refused at start with this
//! message, never silently replaced by a weaker one.

use super::WrapperError;

/// Why `wasm+gvisor` cannot be used in this build.
pub fn unavailable() -> WrapperError {
    WrapperError::Setup(
        "the gVisor wrapper (wasm+gvisor) is not built yet; use wasm+bwrap (tier container) or wasm (tier process)"
            .into(),
    )
}
