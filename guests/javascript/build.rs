//! Link settings for the component, and a check that QuickJS is being built
//! with its stack guard (see `c/wasi-stack-guard.h`).

/// Size of the wasm shadow stack (the C stack in linear memory), in bytes.
///
/// Rust's default, made explicit because the engine depends on it: it must
/// hold QuickJS's stack limit (`engine::MAX_STACK_SIZE`, 128 KiB) plus the
/// frames below `eval`. The host's native wasm stack runs out well before
/// this one on every recursion path measured, so a bigger one only costs
/// linear memory that counts against the run's memory limit.
const SHADOW_STACK_SIZE: u64 = 1 << 20;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CFLAGS_wasm32_wasip2");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch != "wasm32" {
        return;
    }
    println!("cargo:rustc-link-arg=-zstack-size={SHADOW_STACK_SIZE}");

    // Without the guard header QuickJS builds fine but deep recursion traps
    // the instance; refuse to produce such a component.
    let cflags = std::env::var("CFLAGS_wasm32_wasip2").unwrap_or_default();
    if !cflags.contains("wasi-stack-guard.h") {
        panic!(
            "CFLAGS_wasm32_wasip2 must force-include c/wasi-stack-guard.h \
             (`-include <abs path>/c/wasi-stack-guard.h`); build with guests/javascript/build.sh"
        );
    }
}
