#!/usr/bin/env bash
# Builds the JavaScript/TypeScript guest SDK's components:
#   target/sdk/js/conformance.wasm   the conformance agent (world agent-http)
#   target/sdk/js/hello-js.wasm      examples/hello.js
#   target/sdk/js/hello-ts.wasm      examples/hello.ts
# Installs the pinned toolchain (sdk/versions.env) into sdk/js/node_modules
# with npm's cache in ~/.cache/plimsoll/sdk/js/npm, copies the WIT from the
# repository's wit/, generates its TypeScript types, checks the SDK's types
# against them, and type-checks the examples. Idempotent; runs from any
# directory.
set -euo pipefail

SDK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$SDK_DIR/../.." && pwd)"
OUT_DIR="$REPO_DIR/target/sdk/js"
NPM_CACHE="${HOME}/.cache/plimsoll/sdk/js/npm"
WORLD=agent-http
# shellcheck source=../versions.env
source "$REPO_DIR/sdk/versions.env"
cd "$SDK_DIR"

fail() {
  echo "sdk/js/build.sh: $*" >&2
  exit 1
}

# --- Node.js: needed, not installed here (Debian 12's nodejs is 18). ------
command -v node >/dev/null || fail "node not found: install Node.js 20 or newer (and npm)"
command -v npm >/dev/null || fail "npm not found: install npm alongside Node.js 20 or newer"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[[ "$node_major" -ge 20 ]] || fail "Node.js $(node --version) is too old: jco needs 20 or newer"

# --- The pins in package.json must be the ones in versions.env. ----------
pin() { node -p "const p = require('./package.json'); $1"; }
[[ "$(pin 'p.devDependencies["@bytecodealliance/jco"]')" == "$JCO_VERSION" ]] \
  || fail "package.json pins a jco other than JCO_VERSION=$JCO_VERSION (sdk/versions.env)"
[[ "$(pin 'p.devDependencies["@bytecodealliance/componentize-js"]')" == "$COMPONENTIZE_JS_VERSION" ]] \
  || fail "package.json pins a componentize-js other than COMPONENTIZE_JS_VERSION=$COMPONENTIZE_JS_VERSION"
[[ "$(pin 'p.overrides["@bytecodealliance/preview2-shim"]')" == "$PREVIEW2_SHIM_VERSION" ]] \
  || fail "package.json overrides preview2-shim to other than PREVIEW2_SHIM_VERSION=$PREVIEW2_SHIM_VERSION"

# --- The toolchain: npm ci from the lockfile unless already installed. ---
installed() {
  node -p "try { require('./node_modules/$1/package.json').version } catch { '' }"
}
if [[ "$(installed @bytecodealliance/jco)" != "$JCO_VERSION" \
   || "$(installed @bytecodealliance/componentize-js)" != "$COMPONENTIZE_JS_VERSION" \
   || "$(installed @bytecodealliance/preview2-shim)" != "$PREVIEW2_SHIM_VERSION" \
   || -e node_modules/@bytecodealliance/jco/node_modules/@bytecodealliance/componentize-js ]]; then
  echo "== installing jco $JCO_VERSION, componentize-js $COMPONENTIZE_JS_VERSION and preview2-shim $PREVIEW2_SHIM_VERSION (npm ci, cache $NPM_CACHE)"
  mkdir -p "$NPM_CACHE"
  npm ci --cache "$NPM_CACHE" --prefer-offline --no-audit --no-fund
fi
JCO="$SDK_DIR/node_modules/.bin/jco"
TSC="$SDK_DIR/node_modules/.bin/tsc"
[[ -x "$JCO" && -x "$TSC" ]] || fail "node_modules/.bin has no jco or tsc after npm ci"

# --- The WIT: one source of truth, copied (sdk/js/wit is gitignored). ----
rm -rf wit
cp -r "$REPO_DIR/wit" wit

# --- Generated types (sdk/js/generated, gitignored): `jco types` of the
# WIT; test/wit-types.ts checks src/index.d.ts against them. -------------
echo "== generating types from the WIT (jco types, world $WORLD)"
rm -rf generated
"$JCO" types wit --world-name "$WORLD" -o generated >/dev/null

echo "== type-checking src/index.d.ts against the WIT, and examples/*.ts (tsc)"
"$TSC" -p tsconfig.json

# --- The components. ----------------------------------------------------
mkdir -p "$OUT_DIR"
componentize() {
  local source="$1" out="$2" started
  started=$(date +%s)
  "$JCO" componentize "$source" --bundle --bundle-config bundle.config.js \
    --wit wit --world-name "$WORLD" -o "$out" >/dev/null
  echo "built $out ($(stat -c %s "$out") bytes, $(( $(date +%s) - started )) s)"
}
echo "== componentizing (jco componentize, world $WORLD)"
componentize conformance/agent.js "$OUT_DIR/conformance.wasm"
componentize examples/hello.js "$OUT_DIR/hello-js.wasm"
componentize examples/hello.ts "$OUT_DIR/hello-ts.wasm"

# --- The conformance agent imports nothing outside world agent-http. ----
# (`plimsoll check` says the same with the host's own linker rules.)
wit_text="$("$JCO" wit "$OUT_DIR/conformance.wasm")"
imports="$(sed -n 's/^ *import \([^;]*\);$/\1/p' <<<"$wit_text")"
grep -qx 'plimsoll:sandbox/broker@0\.1\.3' <<<"$imports" \
  || fail "conformance.wasm does not import plimsoll:sandbox/broker@0.1.3"
stray="$(grep -v -E '^(wasi:[a-z-]+/[a-z-]+@0\.2\.12|plimsoll:sandbox/broker@0\.1\.3)$' <<<"$imports" || true)"
[[ -z "$stray" ]] || fail "conformance.wasm imports outside world $WORLD: $stray"
grep -qx ' *export wasi:cli/run@0\.2\.12;' <<<"$wit_text" \
  || fail "conformance.wasm does not export wasi:cli/run@0.2.12"
echo "sdk/js: components in $OUT_DIR"
