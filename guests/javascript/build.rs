//! Link settings for the component, a check that QuickJS is being built
//! with its stack guard (see `c/wasi-stack-guard.h`), and the embedded
//! JavaScript with its indentation and comments taken out.

/// Size of the wasm shadow stack (the C stack in linear memory), in bytes.
///
/// Rust's default, made explicit because the engine depends on it: it must
/// hold QuickJS's stack limit (`engine::MAX_STACK_SIZE`, 128 KiB) plus the
/// frames below `eval`. The host's native wasm stack runs out well before
/// this one on every recursion path measured, so a bigger one only costs
/// linear memory that counts against the run's memory limit.
const SHADOW_STACK_SIZE: u64 = 1 << 20;

/// The JavaScript the engine embeds (`src/`, relative to the crate).
const JS: [&str; 11] = [
    "prelude.js",
    "node/events.js",
    "node/path.js",
    "node/url.js",
    "node/buffer.js",
    "node/timers.js",
    "node/process.js",
    "node/fs.js",
    "node/extras.js",
    "node/modules.js",
    "node/main.js",
];

/// Writes each file of [`JS`] to `OUT_DIR` without its indentation and with
/// its comment-only lines emptied (about 30 % of the text; every line keeps
/// its number, so stack traces still point at the source). The files use
/// no template literals or continued strings, where leading spaces would
/// be content.
fn squeeze_javascript() {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in JS {
        let source = format!("src/{name}");
        println!("cargo:rerun-if-changed={source}");
        let text = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("{source}: {e}"));
        let mut squeezed = String::with_capacity(text.len());
        for line in text.lines() {
            let line = line.trim_start_matches(' ');
            if !line.starts_with("//") {
                squeezed.push_str(line);
            }
            squeezed.push('\n');
        }
        let target = out.join(name);
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        std::fs::write(&target, squeezed).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CFLAGS_wasm32_wasip2");
    squeeze_javascript();
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
