#!/usr/bin/env python3
"""plimsoll: `1+1` in Python and JavaScript, per run.

    plimsoll_bench.py [N_PROC] [N_BATCH]

Prints JSON lines:
  plimsoll/<lang>/process-per-run   wall clock of one `plimsoll run --json` process
                                    per run: process start, component load from
                                    the cache, instantiate, run (N_PROC runs)
  plimsoll/<lang>/in-library        p50/p90 of the result lines' usage.wall_ms from
                                    a batch of N_BATCH jobs at --concurrency 1:
                                    one fresh component instance per job, inside
                                    one long-lived host
  plimsoll/<lang>/batch-throughput  the same N_BATCH jobs at the default
                                    concurrency: jobs/s (outer wall clock and
                                    plimsoll's own summary)
"""

import json
import subprocess
import sys
import time

import plimsoll_common as pc
from stats import die, emit, percentile, summary

LANGS = {"python": "py", "javascript": "js"}


def run_once(script):
    cmd = [pc.plimsoll_bin(), "run", "--provider", "wasm", "--state-dir", pc.state_dir(),
           "--json", str(script)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, cwd=pc.REPO, env=pc.env())
    dt = (time.perf_counter() - t0) * 1000.0
    try:
        r = json.loads(p.stdout)
    except ValueError:
        die(f"{' '.join(cmd)} exited {p.returncode}, no JSON: {p.stderr.decode(errors='replace')[-2000:]}")
    if r.get("status") != "ok" or r.get("result") != "2":
        die(f"{script}: expected ok/2, got {r.get('status')}/{r.get('result')!r}: {r.get('stderr')}")
    return dt, r["usage"]["wall_ms"]


def main():
    n_proc = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    n_batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    work = pc.OUT / "work"
    work.mkdir(parents=True, exist_ok=True)

    for lang, ext in LANGS.items():
        script = work / f"one_plus_one.{ext}"
        script.write_text("1+1\n")

        # Warm-up: the first use of a rebuilt component compiles it into the
        # cache (~20 s for Python); that is not what is being measured.
        run_once(script)
        run_once(script)

        walls, reported = [], []
        for _ in range(n_proc):
            dt, usage_ms = run_once(script)
            walls.append(dt)
            reported.append(usage_ms)
        emit(summary(f"plimsoll/{lang}/process-per-run", walls, kind="process-per-run",
                     reported_wall_p50_ms=round(percentile(reported, 50), 4)))

        jobs = work / f"batch_{lang}.jsonl"
        with open(jobs, "w") as f:
            for i in range(n_batch):
                f.write(json.dumps({"id": f"{lang}-{i}", "language": lang, "code": "1+1",
                                    "limits": {"wall_time_ms": 10000}}) + "\n")
        results = work / f"batch_{lang}.results.jsonl"

        outer, summ = pc.batch(jobs, results, concurrency=1)
        rows = pc.read_results(results)
        bad = [r for r in rows if r.get("status") != "ok" or r.get("result") != "2"]
        if len(rows) != n_batch or bad:
            die(f"{lang} batch: {len(rows)} results, {len(bad)} not ok/2, e.g. {bad[:1]}")
        emit(summary(f"plimsoll/{lang}/in-library", [r["usage"]["wall_ms"] for r in rows],
                     kind="in-library", concurrency=1,
                     instantiate_p50_ms=round(percentile([r["usage"]["instantiate_ms"] for r in rows], 50), 4),
                     batch_outer_s=round(outer, 4), batch_jobs_per_sec=round(summ["jobs_per_sec"], 2)))

        outer, summ = pc.batch(jobs, results)
        rows = pc.read_results(results)
        bad = [r for r in rows if r.get("status") != "ok"]
        if len(rows) != n_batch or bad:
            die(f"{lang} batch: {len(rows)} results, {len(bad)} not ok, e.g. {bad[:1]}")
        emit({"name": f"plimsoll/{lang}/batch-throughput", "kind": "batch", "n": n_batch,
              "concurrency": "default (2 x cores)",
              "total_s": round(outer, 4), "jobs_per_sec": round(n_batch / outer, 2),
              "plimsoll_wall_sec": round(summ["wall_sec"], 4),
              "plimsoll_jobs_per_sec": round(summ["jobs_per_sec"], 2)})


if __name__ == "__main__":
    sys.exit(main())
