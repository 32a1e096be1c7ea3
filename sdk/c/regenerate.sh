#!/usr/bin/env bash
# Regenerate sdk/c/gen/ (the wit-bindgen C bindings for world `agent`) from
# the repository's wit/. The output is committed, so building the SDK needs
# no wit-bindgen; run this after changing wit/ (build.sh refuses to build
# with stale bindings).
#
# Needs wit-bindgen-cli at the version pinned in sdk/versions.env
# (WIT_BINDGEN_CLI_VERSION), by default $HOME/.cache/plimsoll/tools/bin/wit-bindgen
# (`cargo install wit-bindgen-cli --version $WIT_BINDGEN_CLI_VERSION --locked
# --root $HOME/.cache/plimsoll/tools`); WIT_BINDGEN names another binary.
# Runnable from any directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../versions.env
source "$repo/sdk/versions.env"

bindgen="${WIT_BINDGEN:-$HOME/.cache/plimsoll/tools/bin/wit-bindgen}"
if [ ! -x "$bindgen" ]; then
    echo "regenerate.sh: no wit-bindgen at $bindgen; install wit-bindgen-cli $WIT_BINDGEN_CLI_VERSION:" >&2
    echo "  cargo install wit-bindgen-cli --version $WIT_BINDGEN_CLI_VERSION --locked --root $HOME/.cache/plimsoll/tools" >&2
    exit 1
fi
version="$("$bindgen" --version)"
case "$version" in
    *" $WIT_BINDGEN_CLI_VERSION"|*" $WIT_BINDGEN_CLI_VERSION "*) ;;
    *)
        echo "regenerate.sh: $bindgen is '$version', the pin is $WIT_BINDGEN_CLI_VERSION" >&2
        exit 1
        ;;
esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$bindgen" c "$repo/wit" --world agent --out-dir "$tmp"
rm -rf "$here/gen"
mkdir -p "$here/gen"
cp "$tmp"/* "$here/gen/"
"$here/wit-hash.sh" "$repo/wit" >"$here/gen/wit.sha256"
echo "regenerated $here/gen with $version:"
ls -l "$here/gen"
