#!/usr/bin/env bash
# Print one sha256 over every .wit file under the directory $1 (names and
# contents, in a fixed order). regenerate.sh records it in gen/wit.sha256;
# build.sh compares it to tell stale bindings from current ones.
set -euo pipefail

cd "$1"
find . -type f -name '*.wit' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
