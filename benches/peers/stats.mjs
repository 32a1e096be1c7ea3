// Percentiles and result lines, the same as stats.py.
export function percentile(samples, q) {
  const xs = [...samples].sort((a, b) => a - b);
  if (xs.length === 0) throw new Error("no samples");
  if (xs.length === 1) return xs[0];
  const pos = ((xs.length - 1) * q) / 100;
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, xs.length - 1);
  return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo);
}

const r4 = (x) => Math.round(x * 1e4) / 1e4;

export function summary(name, samplesMs, extra = {}) {
  return {
    name,
    p50_ms: r4(percentile(samplesMs, 50)),
    p90_ms: r4(percentile(samplesMs, 90)),
    mean_ms: r4(samplesMs.reduce((a, b) => a + b, 0) / samplesMs.length),
    min_ms: r4(Math.min(...samplesMs)),
    n: samplesMs.length,
    ...extra,
  };
}
