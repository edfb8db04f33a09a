"""Two latency modes in one run, and the process state that can set a whole run's mode.

A model's latency can sit in one of two levels that a median hides: a run that switches
level part-way (a core migration, a frequency step, a neighbour starting), or a whole
process that lands in a slower level because of what it loaded (efficientnet-lite0 on
torch was seen at ~22 ms or ~28 ms p50 depending on the libraries imported around torch).

``modes(latencies)`` looks for the first kind: it leaves out the slowest TRIM (preemptions),
splits the rest where the two sides are most apart on a log scale (Otsu's split: the largest
between-class variance) and calls the
run *bimodal* when each side holds at least MIN_SHARE of the queries, their medians differ
by more than MIN_GAP of the lower one, and the split is clean (Ashman's D above MIN_D = 3, with
each side's spread taken robustly from its interquartile range, so a long tail of slow
queries is not a mode). The second kind cannot be seen inside one run: ``libraries()``
records the order in which the process imported the libraries known to change kernels or
threading (framework, image and science stacks), so two records in different modes show
what differed.
"""
from __future__ import annotations

import math
import random
import sys

MIN_SHARE = 0.20  # each mode holds at least this share of the queries (a 10% cluster is a tail)
MIN_GAP = 0.05  # the modes' medians differ by more than this share of the lower one
MIN_D = 3.0  # Ashman's D on robust spreads: one normal split in two gives 2.2, a uniform 2.7
MAX_SAMPLE = 200_000  # queries looked at (a seeded random sample) in a longer run
MAX_POINTS = 20_000  # the split is found on at most this many evenly spaced order statistics
MIN_QUERIES = 50
TRIM = 0.05  # the slowest share left out before splitting

# top-level modules whose presence (and import order) can change a framework's kernels,
# allocator or threads in the same process
WATCHED = ("numpy", "scipy", "PIL", "cv2", "sklearn", "torch", "tensorflow", "onnxruntime", "ai_edge_litert",
           "tflite_runtime", "tensorrt", "mkl", "openvino")


def _median(xs: list, lo: int, hi: int) -> float:
    n = hi - lo
    mid = lo + n // 2
    return float(xs[mid]) if n % 2 else (xs[mid - 1] + xs[mid]) / 2


def _sigma(xs: list, lo: int, hi: int) -> float:
    """A robust standard deviation of xs[lo:hi] (sorted): IQR / 1.349."""
    n = hi - lo
    return (xs[lo + (3 * n) // 4] - xs[lo + n // 4]) / 1.349


def modes(latencies_ns) -> dict | None:
    """{"bimodal", "low_p50_ns", "high_p50_ns", "high_share", "gap" (high / low - 1),
    "separation" (Ashman's D)} of the two best-separated groups of latencies; None for
    fewer than MIN_QUERIES queries."""
    if len(latencies_ns) > MAX_SAMPLE:  # a long run (sorting 10^8 Python ints costs GBs): a seeded
        # random sample, not every k-th query, which a periodic pattern would alias
        pick = random.Random(0).sample(range(len(latencies_ns)), MAX_SAMPLE)
        latencies_ns = [latencies_ns[i] for i in pick]
    xs = sorted(latencies_ns)
    if len(xs) < MIN_QUERIES:
        return None
    # the slowest TRIM are preemptions on a busy machine: left in, one 4 ms query outweighs a
    # hundred 0.3 ms ones in a variance and the split lands in the tail
    trimmed = int(TRIM * len(xs))
    xs = xs[: len(xs) - trimmed]
    everyone = len(xs) + trimmed
    if len(xs) > MAX_POINTS:  # order statistics keep the shape; the split needs no more
        step = len(xs) / MAX_POINTS
        xs = [xs[int(i * step)] for i in range(MAX_POINTS)]
    n = len(xs)
    logs = [math.log(max(x, 1)) for x in xs]  # levels are ratios apart: split on a log scale
    total = math.fsum(logs)
    least = max(2, math.ceil(MIN_SHARE * n))
    best, cut, left = -1.0, None, 0.0
    for i in range(1, n):
        left += logs[i - 1]
        if i < least or n - i < least:
            continue
        mean_l, mean_r = left / i, (total - left) / (n - i)
        between = i * (n - i) * (mean_r - mean_l) ** 2
        if between > best:
            best, cut = between, i
    if cut is None:
        return None
    low, high = _median(xs, 0, cut), _median(xs, cut, n)
    spread = math.hypot(_sigma(xs, 0, cut), _sigma(xs, cut, n))
    d = math.inf if spread == 0 else math.sqrt(2) * (high - low) / spread
    gap = (high / low - 1) if low > 0 else math.inf
    return {"bimodal": bool(gap > MIN_GAP and d > MIN_D), "low_p50_ns": low, "high_p50_ns": high,
            "high_share": 1 - (cut / n) * (1 - trimmed / everyone), "gap": gap, "separation": d if math.isfinite(d) else None}


def libraries() -> list[str]:
    """The WATCHED libraries this process has imported, in the order it imported them
    (sys.modules keeps insertion order)."""
    watched = set(WATCHED)
    return [name for name in sys.modules if name in watched]


def account(latencies_ns) -> dict:
    """The record's metrics["modes"]: modes() of the scenario's latencies (null below
    MIN_QUERIES queries) and the process's "libraries" in import order."""
    return {**(modes(latencies_ns) or {"bimodal": None}), "libraries": libraries()}
