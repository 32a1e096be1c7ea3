#!/usr/bin/env bash
# Build the Python interpreter guest: guests/python/app.py -> target/guests/python.wasm
#
#     guests/python/build.sh [OUT]     (OUT defaults to target/guests/python.wasm)
#
# Idempotent and runnable from any directory. Creates a virtualenv under
# guests/python/build/venv (gitignored) holding the pinned componentize-py,
# and unpacks the vendored packages (vendor.sh: requests, urllib3, idna,
# charset_normalizer, pinned by hash) under guests/python/build/vendor; the
# only network access is those two downloads, on the first run.
#
# Reproducible: componentize-py runs CPython at build time and snapshots it,
# so it runs here with fixed clocks and entropy (deterministic/fixed-clocks.c,
# preloaded) and a fixed view of its files (deterministic/fixed-stat.c, a
# ptrace tracer): the same sources give the same bytes, and so the same
# `python-wasm:sha256:` identity, on any x86_64 Linux machine. See README.md.
# PLIMSOLL_PYTHON_BUILD_UNFIXED=1 builds without them (the identity then
# differs from build to build). PLIMSOLL_PYTHON_BUILD_SCRATCH names the
# directory the build's scratch files go under (default: guests/python/build).
set -euo pipefail

COMPONENTIZE_PY_VERSION=0.25.1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$here/build"
venv="$build/venv"
out_dir="$repo/target/guests"
out="${1:-$out_dir/python.wasm}"

if [ ! -x "$venv/bin/python" ]; then
    echo "creating virtualenv at $venv" >&2
    python3 -m venv "$venv"
fi

installed="$("$venv/bin/python" -m pip show componentize-py 2>/dev/null | sed -n 's/^Version: //p' || true)"
if [ "$installed" != "$COMPONENTIZE_PY_VERSION" ]; then
    echo "installing componentize-py==$COMPONENTIZE_PY_VERSION" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "componentize-py==$COMPONENTIZE_PY_VERSION"
fi

mkdir -p "$(dirname "$out")"

# The vendored packages (requests and its dependencies): pinned wheels,
# unpacked under build/vendor (cached; fetched from PyPI the first time).
"$here/vendor.sh" "$build/vendor"

# The fixed build environment's two helpers, compiled when their sources
# change (atomically: two builds may run at once).
fixed=""
if [ "${PLIMSOLL_PYTHON_BUILD_UNFIXED:-0}" = 1 ]; then
    echo "warning: PLIMSOLL_PYTHON_BUILD_UNFIXED=1: building with the real clocks, entropy and file times; this build is not reproducible" >&2
elif [ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]; then
    echo "warning: the fixed build environment is x86_64 Linux only; this build is not reproducible" >&2
else
    fixed="$build/deterministic"
    mkdir -p "$fixed"
    cc="${CC:-cc}"
    command -v "$cc" >/dev/null || { echo "error: no C compiler ($cc) for guests/python/deterministic; install build-essential, or set PLIMSOLL_PYTHON_BUILD_UNFIXED=1" >&2; exit 1; }
    if [ ! -f "$fixed/fixed-clocks.so" ] || [ "$here/deterministic/fixed-clocks.c" -nt "$fixed/fixed-clocks.so" ]; then
        "$cc" -shared -fPIC -O2 -Wall -o "$fixed/fixed-clocks.so.$$" "$here/deterministic/fixed-clocks.c" -ldl
        mv -f "$fixed/fixed-clocks.so.$$" "$fixed/fixed-clocks.so"
    fi
    if [ ! -x "$fixed/fixed-stat" ] || [ "$here/deterministic/fixed-stat.c" -nt "$fixed/fixed-stat" ]; then
        "$cc" -O2 -Wall -o "$fixed/fixed-stat.$$" "$here/deterministic/fixed-stat.c"
        mv -f "$fixed/fixed-stat.$$" "$fixed/fixed-stat"
    fi
fi

# componentize-py imports app.py inside its build-time interpreter with the
# source directories mounted read-write, so CPython writes __pycache__ next to
# the sources. Build from a fresh copy under build/ so that every byproduct
# stays there and nothing else on the module path (the venv, old bindings)
# can be picked up. componentize-py's own temporary directories (the
# standard library, the bindings) go there too: everything the build-time
# CPython sees is under this one root, which fixed-stat covers.
scratch="${PLIMSOLL_PYTHON_BUILD_SCRATCH:-$build}"
mkdir -p "$scratch"
root="$(mktemp -d "$scratch/root.XXXXXX")"
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/src/vendor" "$root/tmp"
cp "$here/app.py" "$here/plimsoll.py" "$here/plimsoll_http.py" "$here/plimsoll_program.py" \
    "$here/plimsoll_vendor.py" "$root/src/"
# app.py compiles these into one blob at build time (plimsoll_vendor.py);
# they are not on the module path.
for pkg in "$build/vendor"/*/; do
    [ "$(basename "$pkg")" = LICENSES ] || cp -R "$pkg" "$root/src/vendor/"
done

cd "$build"
start=$(date +%s)
componentize=("$venv/bin/componentize-py" -d "$repo/wit" -w interpreter
    componentize app -p "$root/src" -o "$out")
if [ -n "$fixed" ]; then
    TMPDIR="$root/tmp" LD_PRELOAD="$fixed/fixed-clocks.so" \
        "$fixed/fixed-stat" "$root" "${componentize[@]}"
else
    TMPDIR="$root/tmp" "${componentize[@]}"
fi
end=$(date +%s)

echo "built $out ($(wc -c <"$out") bytes, python-wasm:sha256:$(sha256sum "$out" | cut -c1-64), componentize took $((end - start)) s)"
