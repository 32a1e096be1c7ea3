#!/usr/bin/env bash
# Build the Python guest SDK's components with the pinned componentize-py:
#
#     sdk/python/build.sh
#
#   target/sdk/python/conformance.wasm   sdk/python/conformance/app.py
#   target/sdk/python/hello.wasm         sdk/python/examples/hello/app.py
#
# Idempotent and runnable from any directory. It
#   1. creates a virtualenv at $HOME/.cache/plimsoll/sdk/python/venv (override
#      with PLIMSOLL_SDK_CACHE) and installs componentize-py from
#      sdk/versions.env into it, if it is not there already;
#   2. copies the repository's wit/ into sdk/python/plimsoll_guest/wit
#      (gitignored: wit/ is the one source of truth);
#   3. runs the unit tests (tests/) against freshly generated bindings;
#   4. builds each app from a clean copy under sdk/python/build/ (gitignored),
#      so the build-time interpreter's __pycache__ never lands in the sources
#      and nothing else on the machine's Python path is picked up.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../versions.env
. "$repo/sdk/versions.env"

cache="${PLIMSOLL_SDK_CACHE:-$HOME/.cache/plimsoll/sdk}/python"
venv="$cache/venv"
build="$here/build"
out_dir="$repo/target/sdk/python"

# 1. The pinned toolchain.
if [ ! -x "$venv/bin/python" ]; then
    echo "creating virtualenv at $venv" >&2
    mkdir -p "$cache"
    python3 -m venv "$venv"
fi
installed="$("$venv/bin/python" -m pip show componentize-py 2>/dev/null | sed -n 's/^Version: //p' || true)"
if [ "$installed" != "$COMPONENTIZE_PY_VERSION" ]; then
    echo "installing componentize-py==$COMPONENTIZE_PY_VERSION into $venv" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "componentize-py==$COMPONENTIZE_PY_VERSION"
fi
componentize_py="$venv/bin/componentize-py"
got="$("$componentize_py" --version)"
[ "$got" = "componentize-py $COMPONENTIZE_PY_VERSION" ] || {
    echo "error: $componentize_py is '$got', not $COMPONENTIZE_PY_VERSION" >&2
    exit 1
}

# 2. The package's WIT: a fresh copy of wit/, swapped in whole.
wit="$here/plimsoll_guest/wit"
rm -rf "$wit.tmp.$$"
cp -R "$repo/wit" "$wit.tmp.$$"
rm -rf "$wit"
mv "$wit.tmp.$$" "$wit"

mkdir -p "$build" "$out_dir"
scratch="$(mktemp -d "$build/run.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

# 3. Unit tests, against the bindings componentize-py really generates.
"$componentize_py" -d "$wit" -w agent bindings "$scratch/bindings" >/dev/null
if ! log="$(PYTHONDONTWRITEBYTECODE=1 PLIMSOLL_GUEST_BINDINGS="$scratch/bindings" \
    "$venv/bin/python" -m unittest discover -s "$here/tests" -t "$here/tests" 2>&1)"; then
    printf '%s\n' "$log" >&2
    echo "error: the SDK's unit tests failed" >&2
    exit 1
fi
echo "unit tests: $(printf '%s\n' "$log" | grep -E '^Ran ')" >&2

# 4. The components. componentize-py adds the active virtualenv's (or else
# the system's) site-packages to the Python path; point it at the build venv,
# which holds no componentize-py.toml and nothing the apps import.
build_app() { # NAME APP_DIR
    local name="$1" app_dir="$2" root="$scratch/$1" out="$out_dir/$1.wasm"
    mkdir -p "$root"
    cp -R "$here/plimsoll_guest" "$root/"
    find "$root" -name __pycache__ -prune -exec rm -rf {} +
    cp "$app_dir/app.py" "$root/"
    local start end
    start=$(date +%s)
    (cd "$root" && VIRTUAL_ENV="$venv" "$componentize_py" -w agent componentize app -p "$root" -o "$out.tmp") >&2
    mv -f "$out.tmp" "$out"
    end=$(date +%s)
    echo "built $out ($(wc -c <"$out") bytes, componentize took $((end - start)) s)"
}

build_app conformance "$here/conformance"
build_app hello "$here/examples/hello"
