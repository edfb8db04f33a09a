"""Is run B faster or slower than run A, beyond noise? Bootstrap intervals from raw samples.

For p50 latency, p99 latency and throughput, the ratio B / A gets a CONFIDENCE (95%)
percentile-bootstrap interval, and a verdict:

    faster        the whole interval is better than the baseline by more than MIN_EFFECT
    slower        the whole interval is worse than the baseline by more than MIN_EFFECT
    inconclusive  anything else: no difference beyond noise could be shown

"Better" is a lower latency, a higher throughput. MIN_EFFECT (3%) is there because
run-to-run effects of that size (frequency, cache and page placement, the machine's other
work) are routine even when the samples inside each run are tight: a verdict means the
difference is both real *and* larger than that.

The bootstrap: each run's latencies are resampled in blocks of consecutive queries (a
moving-block bootstrap, blocks of ceil(sqrt(n))), because latencies are correlated in time
(a frequency change or a noisy neighbour lasts many queries), and an independent
resampling of single queries would give intervals that are too narrow. A run longer than
MAX_SAMPLES is first thinned to MAX_SAMPLES evenly spaced queries (keeping time order),
and RESAMPLES resamples are drawn with random.Random(SEED): the same two records always
give the same verdict, in well under a second, in pure Python (`cr results compare` runs
no numerical library). Throughput resamples follow the mean latency (one query at a time:
queries/s ~ 1 / mean); the server scenario's throughput is its arrival rate, not judged.

Without raw samples (a record exported with --no-raw, or one that never had them), fewer
than MIN_SAMPLES latencies, or a failed run, no interval is computed and the report says why.
"""
from __future__ import annotations

import math
import random

from .compare import number_at

CONFIDENCE = 0.95
MIN_EFFECT = 0.03
RESAMPLES = 400
MAX_SAMPLES = 4000
MIN_SAMPLES = 20
SEED = 0
METHOD = "moving-block bootstrap, percentile interval"

# (key, label, where in the record, which way is better)
JUDGED = (
    ("p50_ns", "p50 latency", ("metrics", "latency_ns", "p50"), "lower"),
    ("p99_ns", "p99 latency", ("metrics", "latency_ns", "p99"), "lower"),
    ("throughput_qps", "throughput", ("metrics", "throughput", "queries_per_s"), "higher"),
)




def _quantile(ordered, q: float) -> float:
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def thin(values, limit: int = MAX_SAMPLES) -> list:
    """At most limit values, evenly spaced over the run (time order kept)."""
    n = len(values)
    if n <= limit:
        return list(values)
    step = n / limit
    return [values[int(i * step)] for i in range(limit)]


def resample_stats(values, rng: random.Random, resamples: int = RESAMPLES) -> list[tuple[float, float, float]]:
    """(p50, p99, mean) of each of resamples moving-block resamples of values."""
    n = len(values)
    block = max(1, math.ceil(math.sqrt(n)))
    blocks = -(-n // block)
    last_start = n - block
    out = []
    for _ in range(resamples):
        sample = []
        extend = sample.extend
        for _ in range(blocks):
            s = rng.randint(0, last_start)
            extend(values[s:s + block])
        del sample[n:]
        sample.sort()
        out.append((_quantile(sample, 0.5), _quantile(sample, 0.99), math.fsum(sample) / n))
    return out


def missing_reason(record: dict, latencies) -> str | None:
    """Why no interval can be computed for record (None when it can)."""
    uid = record.get("uid")
    if record.get("status") not in (None, "ok"):
        return f"result {uid} has status {record.get('status')} (a failed run has no latencies to judge)"
    if latencies is None:
        if record.get("raw") is None:
            return (f"result {uid} carries no raw latencies (its \"raw\" is null: exported with --no-raw, or recorded "
                    f"without them), so only its summary is known and the bootstrap has nothing to resample")
        return f"result {uid} has no raw latencies that could be read"
    if len(latencies) < MIN_SAMPLES:
        return f"result {uid} has only {len(latencies)} latencies; a confidence interval needs at least {MIN_SAMPLES}"
    return None


def verdict(lo: float, hi: float, better: str, min_effect: float = MIN_EFFECT) -> str:
    """faster / slower / inconclusive from the interval [lo, hi] of B / A."""
    if better == "lower":
        lo, hi = 1 / hi, 1 / lo  # as speed-ups: above 1 is better
    if lo > 1 + min_effect:
        return "faster"
    if hi < 1 / (1 + min_effect):
        return "slower"
    return "inconclusive"


def compare_pair(a: dict, b: dict, lat_a, lat_b, resamples: int = RESAMPLES, seed: int = SEED,
                 min_effect: float = MIN_EFFECT) -> dict:
    """B against the baseline A: {"baseline", "uid", "missing" (why no interval, or None),
    "metrics": [{"metric", "label", "better", "baseline", "value", "ratio", "ci": [lo, hi],
    "verdict" ("faster" | "slower" | "inconclusive" | None), "why" (when None)}],
    "beyond_noise" (a verdict other than inconclusive)}. Likely causes are added by the caller
    (cr.results.causes)."""
    out = {"baseline": a.get("uid"), "uid": b.get("uid"), "missing": None, "metrics": [], "beyond_noise": False}
    why = missing_reason(a, lat_a) or missing_reason(b, lat_b)
    if why:
        out["missing"] = why
        return out
    rng = random.Random(seed)
    sa = resample_stats(thin(lat_a), rng, resamples)
    sb = resample_stats(thin(lat_b), rng, resamples)
    ordered_a, ordered_b = sorted(lat_a), sorted(lat_b)
    mean_a, mean_b = math.fsum(lat_a) / len(lat_a), math.fsum(lat_b) / len(lat_b)
    point = {"p50_ns": (_quantile(ordered_a, 0.5), _quantile(ordered_b, 0.5)),
             "p99_ns": (_quantile(ordered_a, 0.99), _quantile(ordered_b, 0.99))}
    lo_q, hi_q = (1 - CONFIDENCE) / 2, 1 - (1 - CONFIDENCE) / 2
    for key, label, path, better in JUDGED:
        row = {"metric": key, "label": label, "better": better, "baseline": None, "value": None, "ratio": None,
               "ci": None, "verdict": None, "why": None}
        if key == "throughput_qps":
            ta, tb = number_at(a, path), number_at(b, path)
            row.update(baseline=ta, value=tb)
            scenarios = {_scenario(a), _scenario(b)}
            if "server" in scenarios:
                row["why"] = "the server scenario's throughput is set by its arrival rate"
            elif not ta or not tb:
                row["why"] = "a record has no throughput"
            else:
                ratios = sorted((tb * mean_b / rb[2]) / (ta * mean_a / ra[2]) for ra, rb in zip(sa, sb))
                row.update(ratio=tb / ta, ci=[_quantile(ratios, lo_q), _quantile(ratios, hi_q)])
        else:
            index = 0 if key == "p50_ns" else 1
            va, vb = point[key]
            row.update(baseline=va, value=vb)
            if va <= 0 or vb <= 0:
                row["why"] = "a latency of zero has no ratio"
            else:
                ratios = sorted(rb[index] / ra[index] for ra, rb in zip(sa, sb) if ra[index] > 0)
                row.update(ratio=vb / va, ci=[_quantile(ratios, lo_q), _quantile(ratios, hi_q)])
        if row["ci"]:
            row["verdict"] = verdict(row["ci"][0], row["ci"][1], better, min_effect)
        out["metrics"].append(row)
    out["beyond_noise"] = any(m["verdict"] in ("faster", "slower") for m in out["metrics"])
    return out


def _scenario(record: dict):
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    return metrics.get("scenario")


def settings() -> dict:
    """The fixed parameters of every comparison (reported beside the verdicts)."""
    return {"confidence": CONFIDENCE, "min_effect": MIN_EFFECT, "resamples": RESAMPLES, "max_samples": MAX_SAMPLES,
            "seed": SEED, "method": METHOD}


def report(records: list[dict], latencies: list) -> dict:
    """Every record after the first against the first: {**settings(), "pairs": [compare_pair
    + "likely_causes" + "notes"]}."""
    from .causes import likely_causes, state_notes

    pairs = []
    for record, lat in zip(records[1:], latencies[1:]):
        pair = compare_pair(records[0], record, latencies[0], lat)
        pair["likely_causes"] = likely_causes(records[0], record, pair) if pair["beyond_noise"] else []
        pair["notes"] = state_notes(records[0], record)
        pairs.append(pair)
    return {**settings(), "pairs": pairs}
