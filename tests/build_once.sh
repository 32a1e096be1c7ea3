#!/usr/bin/env bash
# Checks that every host build the Makefile runs resolves one feature set,
# so that wasmtime (and the host itself) is compiled once per machine
# (issue #35): the build of `make build`/`make demo`, the guests'
# pre-initialization, and the test build must name the very same wasmtime
# and plimsoll artifacts. Run after a build (it compiles nothing new when
# the rule holds; when it does not, cargo compiles the other variant and
# the check fails naming it).
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}

# The artifact file of package $2 in the JSON messages of `cargo $1`.
artifacts() {
    local pkg=$1
    shift
    "$CARGO" "$@" --message-format=json 2>/dev/null |
        python3 -c '
import json, sys
pkg = sys.argv[1]
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact":
        continue
    pid = m.get("package_id", "")
    name = m.get("target", {}).get("name")
    if name == pkg and "lib" in m.get("target", {}).get("kind", []):
        for f in m.get("filenames", []):
            if f.endswith(".rlib"):
                print(f.rsplit("/", 1)[-1])
' "$pkg" | sort -u
}

fail=0
for pkg in wasmtime plimsoll; do
    build=$(artifacts "$pkg" build --release -p plimsoll -p plimsolld)
    alone=$(artifacts "$pkg" build --release -p plimsoll)
    tests=$(artifacts "$pkg" test --release --workspace --no-run)
    echo "build_once: $pkg: host build $build; plimsoll alone $alone; tests $tests"
    if [ -z "$build" ] || [ "$build" != "$alone" ] || [ "$build" != "$tests" ]; then
        echo "build_once: FAILED: $pkg is compiled with more than one feature set" >&2
        fail=1
    fi
done
exit $fail
