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

# How cargo reports the library of package $1 in the JSON messages of
# `cargo $2...`: "fresh" when it reused the artifact already on disk,
# "compiled" when it had to build it (another feature set, or the first
# build), nothing when the package is not part of that build.
library() {
    local pkg=$1
    shift
    "$CARGO" "$@" --message-format=json 2>/dev/null |
        python3 -c '
import json, sys
pkg = sys.argv[1]
seen = set()
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact":
        continue
    target = m.get("target", {})
    # The unit-test harness of a library is reported with kind "lib" too,
    # under the test profile: that is a test binary, not the library.
    if m.get("profile", {}).get("test"):
        continue
    if target.get("name") == pkg and "lib" in target.get("kind", []):
        seen.add("fresh" if m.get("fresh") else "compiled")
print(" ".join(sorted(seen)))
' "$pkg"
}

# The host build first (it may compile: a fresh machine); then every other
# host build the Makefile and CI run must reuse exactly its wasmtime and
# plimsoll — cargo reports them fresh only when the feature set (and so
# the artifact's hash) is the same.
fail=0
for pkg in wasmtime plimsoll; do
    build=$(library "$pkg" build --release -p plimsoll -p plimsolld)
    alone=$(library "$pkg" build --release -p plimsoll)
    tests=$(library "$pkg" test --release --workspace --no-run)
    echo "build_once: $pkg: host build: $build; plimsoll alone: $alone; tests: $tests"
    if [ -z "$build" ] || [ "$alone" != "fresh" ] || [ "$tests" != "fresh" ]; then
        echo "build_once: FAILED: $pkg is compiled with more than one feature set" >&2
        fail=1
    fi
done
exit $fail
