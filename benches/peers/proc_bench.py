#!/usr/bin/env python3
"""Wall clock of one whole process per run.

    proc_bench.py NAME N [--warmup K] [--expect TEXT] -- CMD ARGS...

Runs CMD N times (after K untimed warm-up runs), each a fresh process, and
prints one JSON line {"name", "p50_ms", "p90_ms", "mean_ms", "min_ms", "n"}.
A run that exits non-zero (or whose stdout lacks TEXT) is an error: a
benchmark of a failing command measures nothing.
"""

import argparse
import subprocess
import sys
import time

from stats import die, emit, summary


def time_process(cmd, expect=None, cwd=None, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, cwd=cwd, env=env)
    dt = (time.perf_counter() - t0) * 1000.0
    if p.returncode != 0:
        die(f"{cmd!r} exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
    if expect is not None and expect not in p.stdout.decode(errors="replace"):
        die(f"{cmd!r}: stdout lacks {expect!r}: {p.stdout.decode(errors='replace')[-2000:]}")
    return dt


def bench(name, n, cmd, warmup=1, expect=None, cwd=None, env=None, **extra):
    for _ in range(warmup):
        time_process(cmd, expect, cwd, env)
    samples = [time_process(cmd, expect, cwd, env) for _ in range(n)]
    return summary(name, samples, **extra)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("n", type=int)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--expect")
    ap.add_argument("--kind", default="process-per-run")
    argv = sys.argv[1:]
    if "--" not in argv:
        die("no command given (put it after --)")
    cut = argv.index("--")
    a = ap.parse_args(argv[:cut])
    cmd = argv[cut + 1:]
    if not cmd:
        die("no command given (put it after --)")
    emit(bench(a.name, a.n, cmd, a.warmup, a.expect, kind=a.kind))


if __name__ == "__main__":
    sys.exit(main())
