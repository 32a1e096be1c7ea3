#!/usr/bin/env bash
# Build the C SDK's conformance agent and example:
#   sdk/c/conformance/agent.c -> target/sdk/c/conformance.wasm
#   sdk/c/examples/hello.c    -> target/sdk/c/hello.wasm
#
# Idempotent and runnable from any directory. Installs Debian's clang-19,
# lld-19, wasi-libc and the wasm32 compiler-rt if they are missing
# (hack/ensure-clang-wasm.sh, shared with the JavaScript guest's build),
# copies wit/ into sdk/c/wit
# (gitignored), checks that the committed bindings in sdk/c/gen match it,
# compiles each program to a wasm32-wasi reactor module and turns it into a
# component with `plimsoll componentize` (the preview1 reactor adapter).
#
# PLIMSOLL names the plimsoll binary (default
# $HOME/.cache/plimsoll/target/release/plimsoll; `make build` makes it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../versions.env
source "$repo/sdk/versions.env"
out_dir="$repo/target/sdk/c"
build_dir="$out_dir/build"

"$repo/hack/ensure-clang-wasm.sh" "$CLANG_VERSION"
cc="clang-$CLANG_VERSION"

# One source of truth for the WIT: a fresh copy, never a committed one.
rm -rf "$here/wit"
cp -R "$repo/wit" "$here/wit"
want="$(cat "$here/gen/wit.sha256")"
have="$("$here/wit-hash.sh" "$here/wit")"
if [ "$want" != "$have" ]; then
    echo "build.sh: sdk/c/gen was generated from another wit/ (sha256 $want, wit/ is $have);" >&2
    echo "  run sdk/c/regenerate.sh (needs wit-bindgen-cli $WIT_BINDGEN_CLI_VERSION) and commit sdk/c/gen" >&2
    exit 1
fi

plimsoll="${PLIMSOLL:-$HOME/.cache/plimsoll/target/release/plimsoll}"
if [ ! -x "$plimsoll" ]; then
    echo "build.sh: no plimsoll binary at $plimsoll (run \`make build\`, or set PLIMSOLL)" >&2
    exit 1
fi

cflags=(--target=wasm32-wasi --sysroot=/usr -O2 -Wall -Wextra -Werror -I "$here" -I "$here/gen")
# -mexec-model=reactor (a link option): the module exports `_initialize`,
# not `_start`; the SDK exports wasi:cli/run itself (see README.md,
# pitfalls 3 and 4). --strip-debug drops the DWARF that Debian's wasi-libc
# carries (about 190 KB); the name section stays, for trap backtraces.
ldflags=(-mexec-model=reactor -Wl,--strip-debug)

mkdir -p "$build_dir"
start=$(date +%s%N)
"$cc" "${cflags[@]}" -c "$here/gen/agent.c" -o "$build_dir/agent_bindings.o"
"$cc" "${cflags[@]}" -c "$here/plimsoll.c" -o "$build_dir/plimsoll.o"
sdk_objects=("$build_dir/plimsoll.o" "$build_dir/agent_bindings.o" "$here/gen/agent_component_type.o")

# build NAME SOURCE: SOURCE plus the SDK -> $out_dir/NAME.wasm
build() {
    local name="$1" source="$2" t0 t1
    t0=$(date +%s%N)
    "$cc" "${cflags[@]}" "${ldflags[@]}" "$source" "${sdk_objects[@]}" -o "$build_dir/$name.core.wasm"
    "$plimsoll" componentize "$build_dir/$name.core.wasm" -o "$out_dir/$name.wasm"
    t1=$(date +%s%N)
    echo "built $out_dir/$name.wasm ($(wc -c <"$out_dir/$name.wasm") bytes, $(((t1 - t0) / 1000000)) ms)"
}

build conformance "$here/conformance/agent.c"
build hello "$here/examples/hello.c"
end=$(date +%s%N)
echo "C SDK built in $(((end - start) / 1000000)) ms"
