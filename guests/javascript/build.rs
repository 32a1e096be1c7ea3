//! Link-time settings for the component.

/// Size of the wasm shadow stack (the C stack QuickJS runs on), in bytes.
///
/// QuickJS's own stack limit (`engine::MAX_STACK_SIZE`) must fire well before
/// this stack runs out: overflowing the shadow stack traps the whole instance
/// instead of throwing a catchable `RangeError`.
const SHADOW_STACK_SIZE: u64 = 8 << 20;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    if arch == "wasm32" {
        println!("cargo:rustc-link-arg=-zstack-size={SHADOW_STACK_SIZE}");
    }
}
