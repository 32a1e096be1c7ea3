"""Where the plimsoll CLI, the repository and the component cache are."""

import os
import shutil
import subprocess
import time
from pathlib import Path

from stats import die

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
OUT = HERE / "out"

CANDIDATES = [
    os.environ.get("PLIMSOLL_BIN"),
    "/root/.cache/plimsoll/target/release/plimsoll",
    str(REPO / "target" / "release" / "plimsoll"),
    shutil.which("plimsoll"),
]


def plimsoll_bin(wait_s=300):
    """The CLI. It may be being relinked under us: wait for it a while."""
    deadline = time.monotonic() + wait_s
    while True:
        for c in CANDIDATES:
            if c and os.path.isfile(c) and os.access(c, os.X_OK):
                return c
        if time.monotonic() > deadline:
            die("no plimsoll binary: set PLIMSOLL_BIN, or build it (make build); looked at "
                + ", ".join(c for c in CANDIDATES if c))
        time.sleep(2)


def state_dir():
    return os.environ.get("PLIMSOLL_STATE_DIR", str(REPO / "target" / "test-state"))


def env():
    """The environment for plimsoll: the interpreter components of this checkout."""
    e = dict(os.environ)
    guests = REPO / "target" / "guests"
    e.setdefault("PLIMSOLL_PYTHON_COMPONENT", str(guests / "python.wasm"))
    e.setdefault("PLIMSOLL_JAVASCRIPT_COMPONENT", str(guests / "javascript.wasm"))
    for k in ("PLIMSOLL_PYTHON_COMPONENT", "PLIMSOLL_JAVASCRIPT_COMPONENT"):
        if not os.path.isfile(e[k]):
            die(f"{k}={e[k]} does not exist: build the guests (make guests)")
    e.pop("SANDBOX_PROVIDER", None)
    return e


def batch(jobs_path, results_path, concurrency=None, retries=3):
    """Run `plimsoll batch` on a fresh results file.

    Returns (outer wall seconds of the whole process, the --summary-json dict).
    The outer figure includes process start and loading the components from
    the cache; the summary's wall_sec is plimsoll's own count.
    """
    import json

    cmd = [plimsoll_bin(), "batch", "--provider", "wasm", "--state-dir", state_dir(),
           "--summary-json", str(jobs_path), "-o", str(results_path)]
    if concurrency is not None:
        cmd[2:2] = ["--concurrency", str(concurrency)]
    for attempt in range(retries):
        # A rerun with the same -o skips finished ids: always start empty.
        Path(results_path).unlink(missing_ok=True)
        cmd[0] = plimsoll_bin()
        t0 = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, cwd=REPO, env=env())
        wall = time.perf_counter() - t0
        if p.returncode == 0 or Path(results_path).exists() and p.stdout.strip():
            try:
                summary = json.loads(p.stdout.decode().strip().splitlines()[-1])
                return wall, summary
            except (ValueError, IndexError):
                pass
        err = p.stderr.decode(errors="replace")[-2000:]
        if attempt + 1 < retries and not os.path.exists(cmd[0]):
            time.sleep(5)  # relinked under us
            continue
        die(f"{' '.join(cmd)} exited {p.returncode}: {err}")
    die("unreachable")


def read_results(results_path):
    import json

    with open(results_path) as f:
        return [json.loads(line) for line in f if line.strip()]
