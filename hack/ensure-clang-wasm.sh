#!/usr/bin/env bash
# Installs Debian's clang-N, lld-N, wasi-libc and the wasm32 compiler-rt
# when any is missing (N = $1, default 19). Idempotent. Used by the
# JavaScript guest's build (guests/javascript/build.sh) and the C SDK's
# (sdk/c/build.sh), which need the same toolchain.
set -euo pipefail
version="${1:-19}"
packages=("clang-$version" "lld-$version" wasi-libc "libclang-rt-$version-dev-wasm32")
missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg -s "$pkg" >/dev/null 2>&1; then
        missing+=("$pkg")
    fi
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    # The package lists may be stale or absent on a fresh machine.
    if ! $sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2; then
        $sudo apt-get update >&2
        $sudo apt-get install -y --no-install-recommends "${missing[@]}" >&2
    fi
fi
command -v "clang-$version" >/dev/null || {
    echo "ensure-clang-wasm.sh: clang-$version is not on PATH after installing it" >&2
    exit 1
}
