"""Shared helpers for the peer benches: percentiles and JSON result lines."""

import json
import statistics
import sys


def percentile(samples, q):
    """The q-th percentile (0..100) of samples, linear interpolation."""
    xs = sorted(samples)
    if not xs:
        raise ValueError("no samples")
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summary(name, samples_ms, **extra):
    """One result line for a per-run figure, times in milliseconds."""
    line = {
        "name": name,
        "p50_ms": round(percentile(samples_ms, 50), 4),
        "p90_ms": round(percentile(samples_ms, 90), 4),
        "mean_ms": round(statistics.fmean(samples_ms), 4),
        "min_ms": round(min(samples_ms), 4),
        "n": len(samples_ms),
    }
    line.update(extra)
    return line


def emit(line):
    """Print one JSON result line (stdout is collected by run.sh)."""
    print(json.dumps(line), flush=True)


def die(msg):
    print(f"error: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)
