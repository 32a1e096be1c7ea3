//! The component's stack: 8 MiB instead of wasm-ld's 1 MiB default, so
//! the shell's own nesting limits (not a stack overflow) end hostile
//! scripts.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=-zstack-size=8388608");
    }
}
