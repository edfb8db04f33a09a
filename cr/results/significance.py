"""Is run B faster or slower than run A, beyond noise? The one statistic of every comparison.

`cr results compare` (its table and its verdicts), `cr reproduce`, and the dashboard's
compare page (its table and its significance block, dashboard/lib/stats.js: the same
algorithm, step for step, checked against tests/fixtures/stat_vectors.json) all judge a
pair of runs here, so they cannot disagree.

For p50, p90, p99 and mean latency, and single-stream throughput, the ratio B / A gets a
CONFIDENCE (95%) interval and a verdict:

    faster        the whole interval is better than the baseline by more than MIN_EFFECT
    slower        the whole interval is worse than the baseline by more than MIN_EFFECT
    inconclusive  anything else ("within noise"): no difference beyond noise could be shown

"Better" is a lower latency, a higher throughput. MIN_EFFECT (3%) is there because
run-to-run effects of that size (frequency, cache and page placement, the machine's other
work) are routine even when the samples inside each run are tight: a verdict means the
difference is both real *and* larger than that.

How:
  - the point ratio is the records' own figures (metrics.latency_ns.p50/p90/p99/mean,
    metrics.throughput.queries_per_s: what `cr results show`, the table and the dashboard
    print), which the harness computed from all of a run's samples;
  - each run's raw latencies are thinned by the rule the dashboard's site uses to keep them
    (thin(): at most SAMPLES_MAX, every ceil(n / SAMPLES_MAX)-th in time order), so the CLI
    and the site resample exactly the same values;
  - each thinned run is resampled RESAMPLES times in blocks of consecutive queries (a
    moving-block bootstrap, blocks of ceil(sqrt(n)), start = floor(u * (n - block + 1))),
    because latencies are correlated in time (a frequency change or a noisy neighbour lasts
    many queries) and an independent resampling of single queries would give intervals that
    are too narrow. u comes from mulberry32 seeded SEED, A's resamples first, then B's: the
    same generator, bit for bit, as the JavaScript one, so the site draws the same blocks;
  - quantiles are linear between closest ranks (numpy's default, as the harness computes
    the records' figures); throughput resamples follow the mean latency (one query at a
    time: queries/s ~ 1 / mean);
  - the bootstrap distribution of the thinned ratio is re-centred on the point ratio:
    ratio_i * (point ratio / thinned-sample ratio); its 2.5% and 97.5% quantiles are the
    interval. Should the interval still not contain its point (possible only for a skewed
    bootstrap distribution), it is widened to do so ("widened": true). So the point always
    lies inside its interval and a verdict never disagrees with the sign of its ratio.

The server scenario's throughput is its arrival rate, and offline / multi-stream throughput is
not one query at a time: neither is judged. Without raw samples (a record exported with
--no-raw, or one that never had them), fewer than MIN_SAMPLES latencies, a failed run, or a
record that does not state a figure, no interval is computed and the result says why.

Stdlib only: `cr results compare` runs no numerical library.
"""
from __future__ import annotations

import math

from .summary import number_at

CONFIDENCE = 0.95
MIN_EFFECT = 0.03
RESAMPLES = 1000
SAMPLES_MAX = 2048
MIN_SAMPLES = 20
SEED = 0
METHOD = ("moving-block bootstrap of the samples thinned to at most 2048 (every ceil(n/2048)-th), "
          "re-centred on the records' figures")
RULE = (f"{100 * CONFIDENCE:g}% interval of B/A; faster or slower only when the whole interval is beyond "
        f"+-{100 * MIN_EFFECT:g}%, else inconclusive (within noise)")

# (key, label, where in the record, quantile (None: the mean), which way is better)
JUDGED = (
    ("p50_ns", "p50 latency", ("metrics", "latency_ns", "p50"), 0.50, "lower"),
    ("p90_ns", "p90 latency", ("metrics", "latency_ns", "p90"), 0.90, "lower"),
    ("p99_ns", "p99 latency", ("metrics", "latency_ns", "p99"), 0.99, "lower"),
    ("mean_ns", "mean latency", ("metrics", "latency_ns", "mean"), None, "lower"),
    ("throughput_qps", "throughput", ("metrics", "throughput", "queries_per_s"), None, "higher"),
)
_M32 = 0xFFFFFFFF
_EXACT = 2**53


def mulberry32(seed: int):
    """A generator of floats in [0, 1): mulberry32, bit for bit the JavaScript one
    (dashboard/lib/stats.js), with 32-bit arithmetic spelled out."""
    state = seed & _M32

    def draw() -> float:
        nonlocal state
        state = (state + 0x6D2B79F5) & _M32
        t = state
        t = ((t ^ (t >> 15)) * (t | 1)) & _M32
        t = t ^ ((t + (((t ^ (t >> 7)) * (t | 61)) & _M32)) & _M32)
        return (t ^ (t >> 14)) / 4294967296

    return draw


def quantile(ordered, q: float) -> float:
    """The q-quantile of sorted values, linear between closest ranks (numpy's default)."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def thin(values, limit: int = SAMPLES_MAX) -> list:
    """At most limit values: every ceil(n / limit)-th, in time order (the dashboard's site
    keeps exactly these: cr.dashboard.records)."""
    n = len(values)
    if n <= limit:
        return list(values)
    return list(values[::-(-n // limit)])


def _mean(values) -> float:
    """The mean as JavaScript computes it: a sum left to right in doubles, then / n. Latencies
    are whole nanoseconds: their exact integer sum is that double while below 2**53."""
    total = sum(values)
    if isinstance(total, int) and -_EXACT < total < _EXACT:
        return total / len(values)
    total = 0.0
    for x in values:
        total += x
    return total / len(values)


def _figures(ordered, mean: float) -> tuple:
    """(p50, p90, p99, mean) in JUDGED order (throughput: the mean)."""
    return (quantile(ordered, 0.5), quantile(ordered, 0.9), quantile(ordered, 0.99), mean)


def latency_figures(latencies) -> dict:
    """{"p50", "p90", "p99", "mean"} (ns) of all the raw latencies, with quantile()'s rule: the
    figures a record states, for samples joined or split after the run (cr gate pools A/B
    rounds and splits a run into halves; the point of a comparison is the records' figures)."""
    ordered = sorted(latencies)
    p50, p90, p99, mean = _figures(ordered, _mean(ordered))
    return {"p50": p50, "p90": p90, "p99": p99, "mean": mean}


def resample_stats(values, draw, resamples: int = RESAMPLES) -> list[tuple]:
    """(p50, p90, p99, mean) of each of resamples moving-block resamples of values."""
    n = len(values)
    block = max(1, math.ceil(math.sqrt(n)))
    blocks = -(-n // block)
    span = n - block + 1
    values = list(values)
    out = []
    for _ in range(resamples):
        sample = []
        extend = sample.extend
        for _ in range(blocks):
            s = int(draw() * span)
            extend(values[s:s + block])
        del sample[n:]
        mean = _mean(sample)
        sample.sort()
        out.append(_figures(sample, mean))
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


def _scenario(record: dict):
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    return metrics.get("scenario")


def _why_not_throughput(a: dict, b: dict) -> str | None:
    scenarios = {_scenario(a), _scenario(b)}
    if "server" in scenarios:
        return "the server scenario's throughput is set by its arrival rate"
    other = sorted(str(s) for s in scenarios if s != "single-stream")
    if other:
        return (f"only single-stream throughput (one query at a time) follows the latencies; "
                f"this pair has {', '.join(other)}")
    return None


def compare_pair(a: dict, b: dict, lat_a, lat_b, resamples: int = RESAMPLES, seed: int = SEED,
                 min_effect: float = MIN_EFFECT) -> dict:
    """B against the baseline A: {"baseline", "uid", "missing" (why no interval, or None),
    "samples": [n A, n B] (after thinning), "metrics": [{"metric", "label", "better",
    "baseline", "value" (the records' figures), "ratio", "ci": [lo, hi], "widened" (the
    interval was widened to contain its point), "verdict" ("faster" | "slower" |
    "inconclusive" | None), "why" (when None)}], "beyond_noise" (a verdict other than
    inconclusive)}. lat_a, lat_b: the runs' raw latencies in time order (None when there are
    none). Likely causes are added by the caller (cr.results.causes)."""
    out = {"baseline": a.get("uid"), "uid": b.get("uid"), "missing": None, "samples": None, "metrics": [],
           "beyond_noise": False}
    why = missing_reason(a, lat_a) or missing_reason(b, lat_b)
    if why:
        out["missing"] = why
        return out
    ta, tb = thin(lat_a), thin(lat_b)
    out["samples"] = [len(ta), len(tb)]
    draw = mulberry32(seed)
    sa = resample_stats(ta, draw, resamples)
    sb = resample_stats(tb, draw, resamples)
    pa, pb = _figures(sorted(ta), _mean(ta)), _figures(sorted(tb), _mean(tb))
    lo_q = (1 - CONFIDENCE) / 2
    hi_q = 1 - lo_q
    for index, (key, label, path, _, better) in enumerate(JUDGED):
        va, vb = number_at(a, path), number_at(b, path)
        row = {"metric": key, "label": label, "better": better, "baseline": va, "value": vb, "ratio": None,
               "ci": None, "widened": False, "verdict": None, "why": None}
        out["metrics"].append(row)
        if key == "throughput_qps":
            index = 3
            row["why"] = _why_not_throughput(a, b)
            if row["why"]:
                continue
        if va is None or vb is None:
            row["why"] = f"result {a.get('uid') if va is None else b.get('uid')} states no {label}"
            continue
        if not (va > 0 and vb > 0 and pa[index] > 0 and pb[index] > 0):
            row["why"] = f"a {label} of zero has no ratio"
            continue
        point = vb / va
        if key == "throughput_qps":  # queries/s ~ 1 / mean latency
            thinned = pa[index] / pb[index]
            ratios = [ra[index] / rb[index] for ra, rb in zip(sa, sb) if rb[index] > 0]
        else:
            thinned = pb[index] / pa[index]
            ratios = [rb[index] / ra[index] for ra, rb in zip(sa, sb) if ra[index] > 0]
        if not ratios:
            row["why"] = f"every resample of a run has a {label} of zero"
            continue
        shift = point / thinned
        ratios = sorted(r * shift for r in ratios)
        lo, hi = quantile(ratios, lo_q), quantile(ratios, hi_q)
        if not lo <= point <= hi:
            row["widened"] = True
            lo, hi = min(lo, point), max(hi, point)
        row.update(ratio=point, ci=[lo, hi], verdict=verdict(lo, hi, better, min_effect))
    out["beyond_noise"] = any(m["verdict"] in ("faster", "slower") for m in out["metrics"])
    return out


def settings() -> dict:
    """The fixed parameters of every comparison (reported beside the verdicts)."""
    return {"confidence": CONFIDENCE, "min_effect": MIN_EFFECT, "resamples": RESAMPLES, "max_samples": SAMPLES_MAX,
            "seed": SEED, "method": METHOD, "rule": RULE}


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
