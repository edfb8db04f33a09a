"""Which configurations are worth shipping: objectives, their 95% intervals, the Pareto front.

    objs = [objective("p50"), objective("top1")]
    points = [{"id": "onnxruntime fp32 threads=1", "values": measure(record, objs, latencies)}, ...]
    result = analyse(points, objs)      # {"rule", "front", "points": [... + status, tied_with, dominated_by]}

One rule for every study (cr tune, cr results pareto, the dashboard), so they never
disagree about which point is on the front:

  - A point *beats* another on an objective when their 95% intervals do not overlap and
    the difference exceeds MIN_EFFECT (1%) of the other's value: run-to-run effects of that
    size are routine (cr.results.compare says why). A figure without an interval (peak
    memory, a record without raw latencies) is its own interval of width zero.
  - A *dominates* B when A beats B on at least one objective and B beats A on none.
  - The *front*: the feasible points no feasible point dominates. Points within noise of
    each other are therefore both on it: a difference noise can explain dominates nothing.
  - Among the front, ranked by the first objective (then the next), a point that no
    better-ranked representative beats on any objective, and that beats none of them, is
    *tied* with them (status "tied", tied_with: their ids); the others are "front". A
    drawing connects the "front" points and marks the tied ones beside them.
  - A point a constraint excludes ("feasible": False) is "infeasible" and takes no part.

Intervals: a latency quantile from the raw samples' order statistics (the distribution-free
binomial interval cr.results.compare uses); without raw samples the p50 from the record's
IQR and count, other quantiles none. Throughput (samples/s) follows the mean latency's
standard error (one query at a time). Accuracy: a Wilson score interval over the number of
samples judged. Energy: joules per sample where a meter measured it. Stdlib only.

hypervolume() is exact in any dimension (recursive slicing; the sets studies make are small),
and recall() says which points of an exhaustive front a search found or tied.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import CRError
from .compare import Z
from .significance import quantile
from .summary import number_at

MIN_EFFECT = 0.01
CONFIDENCE = 0.95
RULE = ("a point beats another on an objective when their 95% intervals do not overlap and the difference "
        f"exceeds {MIN_EFFECT:.0%} of the other's value; it dominates it when it beats it on at least one "
        "objective and is beaten on none; the front is every feasible point no feasible point dominates; "
        "a front point that neither beats nor is beaten by a better-ranked front point (ranked by the "
        "objectives in order) on any objective is tied with it")


@dataclass(frozen=True)
class Objective:
    name: str
    label: str
    unit: str
    better: str  # "lower" | "higher"
    path: tuple

    def worse(self, a: float, b: float) -> bool:
        """a is worse than b (plain comparison, no noise)."""
        return a > b if self.better == "lower" else a < b


OBJECTIVES = {
    o.name: o for o in (
        Objective("p50", "p50 latency", "ns", "lower", ("metrics", "latency_ns", "p50")),
        Objective("p90", "p90 latency", "ns", "lower", ("metrics", "latency_ns", "p90")),
        Objective("p99", "p99 latency", "ns", "lower", ("metrics", "latency_ns", "p99")),
        Objective("throughput", "throughput", "samples/s", "higher", ("metrics", "throughput", "samples_per_s")),
        Objective("memory", "peak memory (RSS)", "bytes", "lower", ("metrics", "memory", "peak_rss_bytes")),
        Objective("energy", "energy per sample", "J", "lower", ("metrics", "energy", "joules_per_sample")),
        Objective("top1", "top-1", "", "higher", ("validation", "top1")),
        Objective("top5", "top-5", "", "higher", ("validation", "top5")),
        Objective("map", "COCO mAP", "", "higher", ("validation", "ap")),
    )
}
_QUANTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99}
ACCURACY = ("top1", "top5", "map")


def objective(name: str) -> Objective:
    """The objective called name; CRError naming the choices."""
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise CRError(f"objective {name!r}: unknown",
                      hint=f"objectives are: {', '.join(OBJECTIVES)}") from None


def _interval_of_quantile(ordered, q: float) -> tuple[float, float]:
    n = len(ordered)
    spread = Z * math.sqrt(n * q * (1 - q))
    lo = max(0, min(n - 1, math.floor(n * q - spread)))
    hi = max(0, min(n - 1, math.ceil(n * q + spread)))
    return float(ordered[lo]), float(ordered[hi])


def wilson(successes: float, n: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion successes / n."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    z2 = Z * Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _value(record: dict, obj: Objective):
    value = number_at(record, obj.path)
    if value is None and obj.name == "throughput":
        metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
        value = number_at(metrics, ("throughput", "queries_per_s"))
        batch = number_at(metrics, ("batch_size",)) or number_at(record, ("config", "batch_size"))
        if value is not None and batch:
            value *= batch
    if value is None and obj.name == "memory":
        value = number_at(record, ("metrics", "peak_rss_bytes"))
    return value


def missing(record: dict, objectives: list[Objective]) -> dict:
    """{objective name: why this record does not measure it} for those it does not."""
    out = {}
    for obj in objectives:
        if _value(record, obj) is not None:
            continue
        if obj.name == "energy":
            metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
            en = metrics.get("energy")
            label = en.get("label") if isinstance(en, dict) else None
            out[obj.name] = f"energy {label}" if label and label != "measured" else "no energy meter measured this run"
        elif obj.name in ACCURACY:
            out[obj.name] = f"a {record.get('action')} record measures no {obj.label}" if record.get("action") != "validate" \
                else f"this validation gives no {obj.label} (task {_task(record)})"
        else:
            out[obj.name] = f"a {record.get('action')} record measures no {obj.label}"
    return out


def _task(record: dict) -> str:
    v = record.get("validation") if isinstance(record.get("validation"), dict) else {}
    return str(v.get("task") or "unknown")


def measure(record: dict, objectives: list[Objective], latencies=None) -> dict:
    """{name: {"value", "lo", "hi"}} of each objective the record measures (95% intervals;
    latencies: the record's raw latencies in ns, when at hand, for the quantiles' intervals)."""
    out = {}
    ordered = sorted(latencies) if latencies is not None and len(latencies) else None
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    lat = metrics.get("latency_ns") if isinstance(metrics.get("latency_ns"), dict) else {}
    for obj in objectives:
        value = _value(record, obj)
        if value is None:
            continue
        lo = hi = value
        if obj.name in _QUANTILES and ordered:
            value = quantile(ordered, _QUANTILES[obj.name])
            lo, hi = _interval_of_quantile(ordered, _QUANTILES[obj.name])
        elif obj.name == "p50":
            iqr, n = number_at(lat, ("iqr",)), number_at(lat, ("count",))
            if iqr is not None and n:
                half = Z * 1.2533 * (iqr / 1.349) / math.sqrt(n)
                lo, hi = value - half, value + half
        elif obj.name == "throughput":
            rel = _mean_rel_se(ordered, lat)
            if rel is not None:
                lo, hi = value * (1 - Z * rel), value * (1 + Z * rel)
        elif obj.name in ACCURACY:
            n = number_at(record, ("validation", "samples"))
            if n and obj.name != "map":
                lo, hi = wilson(value * n, int(n))
        out[obj.name] = {"value": value, "lo": min(lo, value), "hi": max(hi, value)}
    return out


def _mean_rel_se(ordered, lat: dict) -> float | None:
    """The mean latency's relative standard error: raw samples, else the record's stdev and count."""
    if ordered and len(ordered) > 1:
        n = len(ordered)
        mean = math.fsum(ordered) / n
        var = math.fsum((x - mean) ** 2 for x in ordered) / (n - 1)
        return math.sqrt(var / n) / mean if mean else None
    mean, stdev, n = number_at(lat, ("mean",)), number_at(lat, ("stdev",)), number_at(lat, ("count",))
    if mean and stdev is not None and n:
        return stdev / math.sqrt(n) / mean
    return None


def beats(a: dict, b: dict, obj: Objective, min_effect: float = MIN_EFFECT) -> bool:
    """a's figure {"value","lo","hi"} is better than b's beyond noise (the module's rule)."""
    exact = a["hi"] == a["lo"] and b["hi"] == b["lo"]  # two figures without intervals: their values decide
    if obj.better == "lower":
        apart = a["hi"] < b["lo"] or (exact and a["value"] < b["value"])
    else:
        apart = a["lo"] > b["hi"] or (exact and a["value"] > b["value"])
    return apart and abs(a["value"] - b["value"]) > min_effect * abs(b["value"])


def dominates(a: dict, b: dict, objectives: list[Objective], min_effect: float = MIN_EFFECT) -> bool:
    """Point a dominates point b: better beyond noise on one objective, worse beyond noise on none."""
    won = False
    for obj in objectives:
        x, y = a["values"].get(obj.name), b["values"].get(obj.name)
        if x is None or y is None:
            return False
        if beats(y, x, obj, min_effect):
            return False
        won = won or beats(x, y, obj, min_effect)
    return won


def _rank_key(point: dict, objectives: list[Objective]):
    key = []
    for obj in objectives:
        v = point["values"][obj.name]["value"]
        key.append(v if obj.better == "lower" else -v)
    return (*key, str(point["id"]))


def analyse(points: list[dict], objectives: list[Objective], min_effect: float = MIN_EFFECT) -> dict:
    """The front of points (each {"id", "values": measure(...), "feasible"?: bool, ...}).

    Every point comes back with "status" (front, tied, dominated, infeasible, or
    "unmeasured" when it lacks an objective), "tied_with" and "dominated_by" (the first
    dominating point, best-ranked); "front" lists the front's ids ("front" and "tied" points)
    in rank order. CRError when no objective is given."""
    if not objectives:
        raise CRError("no objective to rank by", hint=f"give one or more of: {', '.join(OBJECTIVES)}")
    names = [o.name for o in objectives]
    out = [{**p, "status": None, "tied_with": [], "dominated_by": None} for p in points]
    live = []
    for p in out:
        if any(n not in (p.get("values") or {}) for n in names):
            p["status"] = "unmeasured"
        elif p.get("feasible", True) is False:
            p["status"] = "infeasible"
        else:
            live.append(p)
    live.sort(key=lambda p: _rank_key(p, objectives))
    for p in live:
        for q in live:
            if q is not p and dominates(q, p, objectives, min_effect):
                p["status"], p["dominated_by"] = "dominated", q["id"]
                break
    front = [p for p in live if p["status"] is None]
    representatives: list[dict] = []
    for p in front:
        ties = [r["id"] for r in representatives
                if not any(beats(p["values"][o.name], r["values"][o.name], o, min_effect)
                           or beats(r["values"][o.name], p["values"][o.name], o, min_effect) for o in objectives)]
        if ties:
            p["status"], p["tied_with"] = "tied", ties
        else:
            p["status"] = "front"
            representatives.append(p)
    return {"rule": RULE, "objectives": names, "min_effect": min_effect, "front": [p["id"] for p in front], "points": out}


# ----------------------------------------------------------------------- search quality

def _minimised(values: dict, objectives: list[Objective]) -> list[float]:
    return [values[o.name] if o.better == "lower" else -values[o.name] for o in objectives]


def reference_point(values: list[dict], objectives: list[Objective]) -> dict:
    """{name: value}: the worst value of each objective over values ({name: value} each),
    moved 10% of its range further (10% of the value itself when the range is 0)."""
    if not values:
        raise CRError("no measured point to take a reference point from", hint="run at least one trial that succeeds")
    ref = {}
    for o in objectives:
        col = [v[o.name] for v in values]
        lo, hi = min(col), max(col)
        pad = 0.1 * (hi - lo) or 0.1 * abs(hi) or 1.0
        ref[o.name] = hi + pad if o.better == "lower" else lo - pad
    return ref


def _hv(points: list[list[float]], ref: list[float]) -> float:
    points = [p for p in points if all(x < r for x, r in zip(p, ref))]
    if not points:
        return 0.0
    if len(ref) == 1:
        return ref[0] - min(p[0] for p in points)
    points.sort(key=lambda p: p[-1])
    total = 0.0
    for i, p in enumerate(points):
        top = points[i + 1][-1] if i + 1 < len(points) else ref[-1]
        if top > p[-1]:
            total += _hv([q[:-1] for q in points[: i + 1]], ref[:-1]) * (top - p[-1])
    return total


def hypervolume(values: list[dict], objectives: list[Objective], reference: dict) -> float:
    """The volume the points ({name: value} each) dominate up to the reference point
    (exact; objectives to raise are negated first)."""
    ref = _minimised(reference, objectives)
    return _hv([_minimised(v, objectives) for v in values], ref)


def recall(exhaustive: list[dict], found: list[dict], objectives: list[Objective], min_effect: float = MIN_EFFECT) -> dict:
    """How much of the exhaustive front a search found: each front point of analyse(exhaustive)
    is matched when a found point is the same configuration (same id), or beats it or ties
    it on every objective (it beats that found point on none)."""
    front = [p for p in analyse(exhaustive, objectives, min_effect)["points"] if p["status"] in ("front", "tied")]
    usable = [f for f in found if all(o.name in (f.get("values") or {}) for o in objectives) and f.get("feasible", True) is not False]
    missed = []
    for p in front:
        if any(f["id"] == p["id"] for f in usable):
            continue
        if any(not any(beats(p["values"][o.name], f["values"][o.name], o, min_effect) for o in objectives) for f in usable):
            continue
        missed.append(p["id"])
    matched = len(front) - len(missed)
    return {"recall": matched / len(front) if front else 1.0, "matched": matched, "of": len(front), "missed": missed}
