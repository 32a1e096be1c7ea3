//! plimsoll's JavaScript interpreter guest.
//!
//! QuickJS (through `rquickjs`) compiled to a WebAssembly component of the
//! `interpreter` world in `wit/sandbox.wit`: the host calls `eval` with the
//! text of a cell and gets back the completion value as JSON, or the error
//! with its stack. One runtime and context live as long as the component
//! instance, so a session's globals persist from one `eval` to the next.
//!
//! - [`engine`]: the runtime, its limits, evaluation and rendering.
//! - [`compile`]: evaluating the prelude without keeping its source.
//! - [`natives`]: the Rust functions the prelude builds `console`,
//!   `plimsoll` and `fetch` on (stdio and the broker import).
//! - [`fs`]: the file natives behind `fs` and the module loader.
//! - [`event_loop`]: promise jobs, timers and `process.exit`.
//! - [`modules`]: the ES module loader's glue to QuickJS.
//! - [`program`]: running a program to its end (`__plimsoll_main`).
//! - `prelude.js`: the JavaScript half of `console`, `plimsoll` and
//!   `fetch`; `node/*.js`: Node's globals and built-in modules (`process`,
//!   `require`, `fs`, `path`, timers, ...) and the module resolution.

mod compile;
mod engine;
mod event_loop;
mod fs;
mod modules;
mod natives;
mod program;

mod bindings {
    // Only the broker import and the eval export are used from these
    // bindings. The world also includes the WASI 0.2 imports, which Rust's
    // std for wasm32-wasip2 already binds; `generate_all` generates them
    // rather than asking for a `with` mapping of each, and as nothing calls
    // them the linker drops them again.
    wit_bindgen::generate!({
        path: "../../wit",
        world: "interpreter",
        generate_all,
    });
}

struct Interpreter;

impl bindings::Guest for Interpreter {
    fn eval(code: String) -> Result<String, String> {
        engine::eval(&code)
    }
}

bindings::export!(Interpreter with_types_in bindings);
