#!/usr/bin/env bash
# Build the Python interpreter guest: guests/python/app.py -> target/guests/python.wasm
#
# Idempotent and runnable from any directory. Creates a virtualenv under
# guests/python/build/venv (gitignored) holding the pinned componentize-py;
# the only network access is that pip install, on the first run.
set -euo pipefail

COMPONENTIZE_PY_VERSION=0.25.1

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$here/build"
venv="$build/venv"
out_dir="$repo/target/guests"
out="$out_dir/python.wasm"

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

mkdir -p "$out_dir"
# componentize-py imports app.py inside its build-time interpreter with the
# source directories mounted read-write, so CPython writes __pycache__ next to
# the sources. Build from a fresh copy under build/src so that every
# byproduct stays under build/ and nothing else on the module path (the venv,
# old bindings) can be picked up.
src="$build/src"
rm -rf "$src"
mkdir -p "$src"
cp "$here/app.py" "$here/plimsoll.py" "$src/"

cd "$build"
start=$(date +%s)
"$venv/bin/componentize-py" -d "$repo/wit" -w interpreter \
    componentize app -p "$src" -o "$out"
end=$(date +%s)

echo "built $out ($(wc -c <"$out") bytes, componentize took $((end - start)) s)"
