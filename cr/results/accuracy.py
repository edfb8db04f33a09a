"""Is an accuracy difference real? Paired tests on two validate records' per-sample hits.

Standard library only (`cr results compare` stays light). A classification validate
record keeps which samples each metric got right (record["validation"]["hits"],
written by the validate action: the sample ids in order, their sha256, and a bitset per
metric). Two records are *paired* when they ran the same samples in the same order (equal
ids_sha256); on anything else no test is run and the reason is given instead.

On paired records A (the baseline) and B, for a metric (top1 or top5):

  - b = samples A got right and B wrong, c = samples B got right and A wrong (the
    discordant pairs; samples both got right or both wrong say nothing about the
    difference);
  - the exact McNemar test: under "no difference" each discordant sample is a fair coin,
    so p = P(Binomial(b + c, 1/2) at least as far from (b + c)/2 as observed), two-sided
    (twice the smaller tail, at most 1; p = 1 without discordant samples);
  - the paired bootstrap: the accuracy delta B - A recomputed on RESAMPLES resamples of
    the samples (with replacement, pairs kept together, seeded: the same records always
    give the same interval); its 95% interval is the 2.5th..97.5th percentile;
  - the verdict (rule()/RULE): *significant* when p < alpha (0.05) and the interval excludes 0,
    else *within noise* (both figures shown never contradict the verdict).

Detection records keep no per-image hits: they are refused with that reason.
"""
from __future__ import annotations

import base64
import binascii
import bisect
import math
import random

ALPHA = 0.05
RESAMPLES = 10000
SEED = 0
LEVEL = 0.95
ENCODING = "bitset-lsb0-base64"
METRICS = ("top1", "top5")


def _label(record: dict) -> str:
    uid = record.get("uid")
    return str(uid)[:16] if isinstance(uid, str) else "a record"


def _where(record: dict) -> str:
    """'digits@1.0.0 test' (the dataset and split a record ran on), '' when unknown."""
    from .summary import dataset_label

    return dataset_label(record)


def hits(record: dict, metric: str = "top1") -> tuple[dict | None, str | None]:
    """(hits, None) with hits["hits"] the decoded list of bools, or (None, why not)."""
    name = _label(record)
    validation = record.get("validation") if isinstance(record.get("validation"), dict) else None
    if record.get("action") != "validate":
        return None, f"{name} is not a validate record (action {record.get('action')})"
    if validation is None:
        return None, f"{name} holds no validation (status {record.get('status')}): it measured no {metric}"
    if validation.get("task") == "detection":
        return None, f"{name} is a detection validation: per-image hits are not recorded, so no paired test"
    if record.get("status") != "ok" and not isinstance(validation.get(metric), (int, float)):
        return None, f"{name} failed (status {record.get('status')}): it measured no {metric}"
    per = validation.get("hits")
    if not isinstance(per, dict):
        return None, (f"{name} keeps no per-sample correctness (recorded before cr kept it, or imported): "
                      "re-run cr validate to compare accuracies sample by sample")
    if per.get("encoding") != ENCODING or not isinstance(per.get(metric), str):
        return None, f"{name} keeps no per-sample {metric} in a known encoding ({per.get('encoding')!r})"
    count, ids = per.get("count"), per.get("ids")
    if type(count) is not int or count < 1 or not isinstance(ids, list) or len(ids) != count:
        return None, f"{name}'s per-sample record is damaged (count {count!r}, {len(ids) if isinstance(ids, list) else 'no'} ids)"
    try:
        packed = base64.b64decode(per[metric], validate=True)
    except (binascii.Error, ValueError):
        return None, f"{name}'s per-sample {metric} is not base64"
    if len(packed) != (count + 7) // 8:
        return None, f"{name}'s per-sample {metric} holds {len(packed) * 8} bits for {count} samples"
    decoded = [bool(packed[i // 8] >> (i % 8) & 1) for i in range(count)]
    value = validation.get(metric)
    if isinstance(value, (int, float)) and abs(sum(decoded) / count - value) > 1e-9:
        return None, f"{name}'s per-sample {metric} ({sum(decoded)}/{count}) disagrees with its {metric} {value:.4f}"
    return {"count": count, "ids_sha256": per.get("ids_sha256"), "hits": decoded}, None


def mcnemar(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value for b and c discordant pairs: twice the smaller
    binomial(b + c, 1/2) tail, at most 1 (1 when there is no discordant pair)."""
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    # log-space terms: exact to float precision for any n (0.5**n underflows past n ~ 1074)
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(k + 1)]
    top = max(logs)
    tail = math.exp(top) * math.fsum(math.exp(x - top) for x in logs)
    return min(1.0, 2 * tail)


def _binomial_table(n: int, p: float) -> tuple[int, list[float]]:
    """(first k, cumulative probabilities) of Binomial(n, p) over the range holding all
    but ~1e-30 of its mass (twelve standard deviations either side of the mean)."""
    if n == 0 or p <= 0.0:
        return 0, [1.0]
    if p >= 1.0:
        return n, [1.0]
    mean, sd = n * p, math.sqrt(n * p * (1 - p))
    lo, hi = max(0, int(mean - 12 * sd - 12)), min(n, int(mean + 12 * sd + 12))
    base = math.lgamma(n + 1)
    lp, lq = math.log(p), math.log1p(-p)
    pmf = [math.exp(base - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * lp + (n - k) * lq) for k in range(lo, hi + 1)]
    total, cdf = 0.0, []
    for x in pmf:
        total += x
        cdf.append(total)
    return lo, [x / total for x in cdf]


def _draw(rng: random.Random, table: tuple[int, list[float]]) -> int:
    lo, cdf = table
    return lo + min(bisect.bisect_left(cdf, rng.random()), len(cdf) - 1)


def bootstrap(n: int, b: int, c: int, resamples: int = RESAMPLES, seed: int = SEED, level: float = LEVEL) -> list[float]:
    """The paired-bootstrap percentile interval of the accuracy delta (c - b) / n.

    Resampling n pairs with replacement only changes how many of them are discordant
    each way: the resampled counts are a trinomial draw, taken here as D ~ Binomial(n,
    (b + c) / n) discordant pairs, of which Binomial(D, c / (b + c)) favour B: the same
    distribution as drawing n indices, in O(log n) a resample."""
    if b + c == 0:
        return [0.0, 0.0]
    rng = random.Random(seed)
    discordant = _binomial_table(n, (b + c) / n)
    split: dict[int, tuple[int, list[float]]] = {}
    share = c / (b + c)
    deltas = []
    for _ in range(resamples):
        d = _draw(rng, discordant)
        if d not in split:
            split[d] = _binomial_table(d, share)
        favour_b = _draw(rng, split[d])
        deltas.append((2 * favour_b - d) / n)
    deltas.sort()
    tail = (1 - level) / 2
    return [deltas[int(math.floor(tail * resamples))], deltas[int(math.ceil((1 - tail) * resamples)) - 1]]


def paired(a: dict, b: dict, metric: str = "top1", alpha: float = ALPHA, resamples: int = RESAMPLES,
           seed: int = SEED) -> dict:
    """The paired test of B against A (the baseline) on metric.

    Comparable: {"metric", "comparable": True, "samples", "ids_sha256", "values": [A, B],
    "delta": B - A, "interval": [lo, hi] (95%), "level", "discordant": {"a_only", "b_only"},
    "mcnemar_p", "alpha", "verdict": "significant" | "within noise", "rule", "bootstrap":
    {"resamples", "seed"}}. Otherwise {"metric", "comparable": False, "reason": why}:
    never an exception, whatever the records hold."""
    if metric not in METRICS:
        return {"metric": metric, "comparable": False, "reason": f"no paired test for {metric} (only {', '.join(METRICS)})"}
    ha, why = hits(a, metric)
    if ha is None:
        return {"metric": metric, "comparable": False, "reason": why}
    hb, why = hits(b, metric)
    if hb is None:
        return {"metric": metric, "comparable": False, "reason": why}
    if ha["ids_sha256"] != hb["ids_sha256"] or ha["count"] != hb["count"]:
        wa, wb = _where(a), _where(b)
        return {"metric": metric, "comparable": False,
                "reason": (f"not the same samples: {_label(a)} ran {ha['count']} sample(s)" + (f" of {wa}" if wa else "")
                           + f", {_label(b)} ran {hb['count']}" + (f" of {wb}" if wb else "")
                           + " (their sample-id lists differ), so they cannot be paired")}
    n = ha["count"]
    a_only = sum(1 for x, y in zip(ha["hits"], hb["hits"]) if x and not y)
    b_only = sum(1 for x, y in zip(ha["hits"], hb["hits"]) if y and not x)
    va, vb = sum(ha["hits"]) / n, sum(hb["hits"]) / n
    p = mcnemar(a_only, b_only)
    interval = bootstrap(n, a_only, b_only, resamples, seed)
    significant = p < alpha and not (interval[0] <= 0.0 <= interval[1])
    return {"metric": metric, "comparable": True, "samples": n, "ids_sha256": ha["ids_sha256"], "values": [va, vb],
            "delta": vb - va, "interval": interval, "level": LEVEL, "discordant": {"a_only": a_only, "b_only": b_only},
            "mcnemar_p": p, "alpha": alpha, "verdict": "significant" if significant else "within noise",
            "rule": rule(alpha, resamples, seed), "bootstrap": {"resamples": resamples, "seed": seed}}


def rule(alpha: float = ALPHA, resamples: int = RESAMPLES, seed: int = SEED) -> str:
    """The verdict's rule in words."""
    return (f"significant when the exact two-sided McNemar test on the discordant samples gives p < {alpha:g} and the "
            f"95% paired-bootstrap interval of the delta ({resamples} resamples, seed {seed}) excludes 0; else within noise")


RULE = rule()


def _step_words(step) -> str:
    if not isinstance(step, dict):
        return repr(step)[:60]
    from .summary import value_text

    return " ".join(f"{k}={value_text(v)}" for k, v in sorted(step.items()) if k != "op")


def pipeline_differences(a: dict, b: dict) -> list[str]:
    """The pipeline steps that differ between two records, in words: 'preprocess step 1
    (scale): factor=0.0625 vs factor=1', 'preprocess step 3 (normalize): only in B'; empty
    when both ran the same pipeline (or a record does not say)."""
    pa = a.get("pipeline") if isinstance(a.get("pipeline"), dict) else None
    pb = b.get("pipeline") if isinstance(b.get("pipeline"), dict) else None
    if pa is None or pb is None or (pa.get("sha256") and pa.get("sha256") == pb.get("sha256")):
        return []
    out = []
    for stage in ("preprocess", "postprocess"):
        sa = pa.get(stage) if isinstance(pa.get(stage), list) else []
        sb = pb.get(stage) if isinstance(pb.get(stage), list) else []
        for i in range(max(len(sa), len(sb))):
            x, y = (sa[i] if i < len(sa) else None), (sb[i] if i < len(sb) else None)
            if x == y:
                continue
            op = next((s.get("op") for s in (x, y) if isinstance(s, dict) and s.get("op")), "?")
            if x is None or y is None:
                out.append(f"{stage} step {i + 1} ({op}): only in {'B' if x is None else 'A'}")
            elif isinstance(x, dict) and isinstance(y, dict) and x.get("op") != y.get("op"):
                out.append(f"{stage} step {i + 1}: {x.get('op')} vs {y.get('op')}")
            else:
                out.append(f"{stage} step {i + 1} ({op}): {_step_words(x)} vs {_step_words(y)}")
    return out


def section(records: list[dict]) -> list[dict] | None:
    """compare's accuracy section: each record after the first against it, per metric the
    baseline measures (top1, then top5), as paired() gives, with "uids": [A, B] and
    "pipeline": pipeline_differences(A, B) (what a pipeline study varied); None when the
    baseline is not a validate record that measured accuracy."""
    base = records[0]
    validation = base.get("validation") if isinstance(base.get("validation"), dict) else {}
    if base.get("action") != "validate" or not validation:
        return None
    metrics = [m for m in METRICS if isinstance(validation.get(m), (int, float))] or ["top1"]
    out = []
    for other in records[1:]:
        steps = pipeline_differences(base, other)
        for m in metrics:
            out.append({"uids": [base.get("uid"), other.get("uid")], **paired(base, other, m), "pipeline": steps})
    return out
