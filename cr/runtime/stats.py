"""Latency statistics over raw nanosecond samples.

Percentiles use numpy's default (linear interpolation between closest ranks); stdev is
the sample standard deviation (ddof=1). The noise figure is IQR / median: above 0.1 the
run is flagged noisy (frequency scaling, other load, thermal throttling).
"""
from __future__ import annotations

import sys

PERCENTILES = (("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p99.9", 99.9))
NOISE_THRESHOLD = 0.1


def summarize(latencies_ns) -> dict:
    """count, min, max, mean, stdev, p50, p90, p95, p99, p99.9 and iqr, in nanoseconds."""
    import numpy as np

    a = np.asarray(latencies_ns, dtype=np.int64)
    if a.size == 0:
        raise ValueError("no latencies to summarize")
    qs = np.percentile(a, [25.0, 75.0] + [q for _, q in PERCENTILES])
    out = {
        "count": int(a.size),
        "min": int(a.min()),
        "max": int(a.max()),
        "mean": float(a.mean()),
        "stdev": float(a.std(ddof=1)) if a.size > 1 else 0.0,
    }
    for (name, _), value in zip(PERCENTILES, qs[2:]):
        out[name] = float(value)
    out["iqr"] = float(qs[1] - qs[0])
    return out


def noise(summary: dict) -> float:
    """IQR / median (0 when the median is 0)."""
    return summary["iqr"] / summary["p50"] if summary["p50"] else 0.0


def throughput(queries: int, samples: int, duration_ns: int) -> dict:
    seconds = duration_ns / 1e9
    return {
        "queries_per_s": queries / seconds if seconds > 0 else 0.0,
        "samples_per_s": samples / seconds if seconds > 0 else 0.0,
    }


def peak_rss_bytes() -> int | None:
    """Peak resident set size of this process (None where resource is missing: Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, KiB elsewhere
