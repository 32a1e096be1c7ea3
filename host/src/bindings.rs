//! Host-side bindings generated from `wit/`.
//!
//! Only plimsoll's own items are generated here; every WASI interface is
//! mapped to `wasmtime-wasi`'s implementation.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "interpreter",
    imports: { default: async | trappable },
    exports: { default: async },
    with: {
        "wasi:cli": wasmtime_wasi::p2::bindings::cli,
        "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        "wasi:filesystem": wasmtime_wasi::p2::bindings::filesystem,
        "wasi:io": wasmtime_wasi::p2::bindings::io,
        "wasi:random": wasmtime_wasi::p2::bindings::random,
        "wasi:sockets": wasmtime_wasi::p2::bindings::sockets,
    },
});

pub use self::plimsoll::sandbox::broker;

/// The `shell` world: the shell guest's `eval` and the `programs` import
/// that only it is linked with.
pub mod shell {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "shell",
        imports: { default: async | trappable },
        exports: { default: async },
        with: {
            "wasi:cli": wasmtime_wasi::p2::bindings::cli,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
            "wasi:filesystem": wasmtime_wasi::p2::bindings::filesystem,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:random": wasmtime_wasi::p2::bindings::random,
            "wasi:sockets": wasmtime_wasi::p2::bindings::sockets,
        },
    });

    pub use self::plimsoll::sandbox::programs;
}
