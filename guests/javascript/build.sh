#!/usr/bin/env bash
# Build the JavaScript interpreter guest: guests/javascript -> target/guests/javascript.wasm
#
# Two steps: cargo builds the component (kept as target/javascript-raw.wasm),
# then `plimsoll preinit` snapshots it with the QuickJS engine already
# created, so that no run pays for the engine's start-up. The shipped
# component, and so the guest's identity, is the snapshot.
# PLIMSOLL_JS_PREINIT=0 ships the raw component instead (for comparisons).
#
# Idempotent and runnable from any directory. Installs Debian's clang-19,
# lld-19, wasi-libc and the wasm32 compiler-rt if they are missing (QuickJS is
# C; rquickjs-sys would otherwise download the WASI SDK, which this
# environment cannot), adds the wasm32-wasip2 Rust target if missing, then
# builds with cargo.
#
# PLIMSOLL_LOW_PRIORITY=1 builds with `nice -n 19` and `-j 1`, for machines
# busy with other builds. CARGO_TARGET_DIR is honoured (default:
# guests/javascript/target).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out_dir="$repo/target/guests"
out="$out_dir/javascript.wasm"

clang_version=19
"$repo/hack/ensure-clang-wasm.sh" "$clang_version"

if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx wasm32-wasip2; then
    rustup target add wasm32-wasip2 >&2
fi

ar="llvm-ar-$clang_version"
if ! command -v "$ar" >/dev/null 2>&1; then
    ar="$(compgen -c llvm-ar- | sort -V | tail -n 1 || true)"
    [ -n "$ar" ] || { echo "no llvm-ar found" >&2; exit 1; }
fi

# QuickJS's C sources: compiled by rquickjs-sys with Debian's clang and
# wasi-libc, and with the stack-guard header force-included (see
# c/wasi-stack-guard.h; build.rs refuses to build without it).
export RQUICKJS_SYS_NO_WASI_SDK=1
export CC_wasm32_wasip2="clang-$clang_version"
export AR_wasm32_wasip2="$ar"
export CFLAGS_wasm32_wasip2="-isystem /usr/include/wasm32-wasi -include $here/c/wasi-stack-guard.h"
# The host's target directory, for the `plimsoll` that pre-initializes.
host_target="${CARGO_TARGET_DIR:-$repo/target}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$here/target}"

cargo_cmd=(cargo build --release --target wasm32-wasip2 --manifest-path "$here/Cargo.toml" --locked)
if [ "${PLIMSOLL_LOW_PRIORITY:-0}" = "1" ]; then
    cargo_cmd=(nice -n 19 "${cargo_cmd[@]}" -j 1)
fi

start=$(date +%s)
# cargo's config is looked up from the working directory; build from here
# so that no parent directory's .cargo/config.toml applies by accident.
(cd "$here" && "${cargo_cmd[@]}")
end=$(date +%s)

mkdir -p "$out_dir"
raw="$repo/target/javascript-raw.wasm"
cp "$CARGO_TARGET_DIR/wasm32-wasip2/release/plimsoll_javascript.wasm" "$raw"
echo "built $raw ($(wc -c <"$raw") bytes, cargo took $((end - start)) s)"

if [ "${PLIMSOLL_JS_PREINIT:-1}" = "0" ]; then
    cp "$raw" "$out"
    echo "shipped $out without pre-initialization (PLIMSOLL_JS_PREINIT=0)"
    exit 0
fi
# The same packages as `make build`, so that the build is shared with it.
(cd "$repo" && CARGO_TARGET_DIR="$host_target" cargo build --release -p plimsoll -p plimsolld >&2)
"$host_target/release/plimsoll" preinit "$raw" -o "$out"
