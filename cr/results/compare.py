"""Comparing results metric by metric, and judging whether a latency difference is noise.

Stdlib only (no numpy: `cr results compare` must stay light). For each latency statistic
of two runs A (the baseline, first) and B:

  - the statistic of each run comes from its raw samples (linear interpolation between
    closest ranks, as numpy and the harness compute it);
  - its standard error comes from a distribution-free 95% confidence interval: for the
    q-quantile of n samples the interval runs between the order statistics of ranks
    n*q -+ 1.96*sqrt(n*q*(1-q)) (the binomial method: what a percentile bootstrap of the
    quantile converges to, without resampling and without a random seed); for the mean,
    stdev/sqrt(n);
  - the difference B - A is *within noise* when it is no larger than 1.96 times the
    combined standard error sqrt(se_A^2 + se_B^2), or smaller than MIN_EFFECT (1%) of
    A: run-to-run effects of that size (frequency scaling, cache and page state) are
    routine even when the samples inside each run are tight.

Without raw samples the p50 falls back to the record's IQR and count (se of a median
~ 1.2533 * sigma / sqrt(n), sigma ~ IQR / 1.349) and the mean to its stdev and count;
higher percentiles are then not judged. Single-stream throughput is one query at a time,
so its relative noise is that of the mean latency; other throughputs are not judged (None).
Accuracies are judged sample by sample in the report's "accuracy" section (cr.results.accuracy:
exact McNemar and a paired bootstrap), not here.
"""
from __future__ import annotations

import math
from array import array

Z = 1.959964  # two-sided 95%
MIN_EFFECT = 0.01

# (metric key, label, unit, where in the record, quantile or None, which way is better)
METRICS = (
    ("p50_ns", "p50 latency", "ns", ("metrics", "latency_ns", "p50"), 0.50, "lower"),
    ("p90_ns", "p90 latency", "ns", ("metrics", "latency_ns", "p90"), 0.90, "lower"),
    ("p99_ns", "p99 latency", "ns", ("metrics", "latency_ns", "p99"), 0.99, "lower"),
    ("mean_ns", "mean latency", "ns", ("metrics", "latency_ns", "mean"), None, "lower"),
    ("throughput_qps", "throughput (queries/s)", "queries/s", ("metrics", "throughput", "queries_per_s"), None, "higher"),
    ("throughput_sps", "throughput (samples/s)", "samples/s", ("metrics", "throughput", "samples_per_s"), None, "higher"),
    ("noise", "noise (IQR/p50)", "", ("metrics", "noise"), None, "lower"),
    ("peak_rss_bytes", "peak RSS", "bytes", ("metrics", "peak_rss_bytes"), None, "lower"),
    ("top1", "top-1", "", ("validation", "top1"), None, "higher"),
    ("top5", "top-5", "", ("validation", "top5"), None, "higher"),
)
_LATENCY = {"p50_ns", "p90_ns", "p99_ns", "mean_ns"}


def number_at(data, path):
    """The number at path (keys) inside data, as a float; None when missing or not a number."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return float(data) if isinstance(data, (int, float)) and not isinstance(data, bool) else None


def quantile(ordered, q: float) -> float:
    """The q-quantile of sorted values, linear between closest ranks (numpy's default)."""
    pos = q * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def quantile_se(ordered, q: float) -> float:
    """Standard error of the q-quantile from its distribution-free 95% interval."""
    n = len(ordered)
    spread = Z * math.sqrt(n * q * (1 - q))
    lo = max(0, min(n - 1, math.floor(n * q - spread)))
    hi = max(0, min(n - 1, math.ceil(n * q + spread)))
    return (ordered[hi] - ordered[lo]) / (2 * Z)


class _Run:
    """One record's figures for a metric: value and standard error (None when unknown)."""

    def __init__(self, record: dict, latencies: array | None):
        self.record = record
        self.sorted = sorted(latencies) if latencies else None
        lat = (record.get("metrics") or {}).get("latency_ns") if isinstance(record.get("metrics"), dict) else None
        self.lat = lat if isinstance(lat, dict) else {}
        self.scenario = (record.get("metrics") or {}).get("scenario") if isinstance(record.get("metrics"), dict) else None

    def count(self) -> int | None:
        if self.sorted:
            return len(self.sorted)
        n = self.lat.get("count")
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None

    def mean_se(self) -> tuple[float | None, float | None]:
        if self.sorted:
            n = len(self.sorted)
            mean = math.fsum(self.sorted) / n
            if n < 2:
                return mean, None
            var = math.fsum((x - mean) ** 2 for x in self.sorted) / (n - 1)
            return mean, math.sqrt(var / n)
        mean, stdev, n = number_at(self.lat, ("mean",)), number_at(self.lat, ("stdev",)), self.count()
        return mean, (stdev / math.sqrt(n) if stdev is not None and n else None)

    def figure(self, key: str, path, q: float | None) -> tuple[float | None, float | None, str | None]:
        """(value, standard error, method) of one metric for this run."""
        if key in _LATENCY:
            if key == "mean_ns":
                mean, se = self.mean_se()
                return mean, se, ("raw samples" if self.sorted else "stdev and count")
            if self.sorted:
                return quantile(self.sorted, q), quantile_se(self.sorted, q), "raw samples"
            value, iqr, n = number_at(self.record, path), number_at(self.lat, ("iqr",)), self.count()
            if key == "p50_ns" and iqr is not None and n:
                return value, 1.2533 * (iqr / 1.349) / math.sqrt(n), "IQR and count"
            return value, None, None
        value = number_at(self.record, path)
        if key == "throughput_qps" and self.scenario == "single-stream" and value is not None:
            mean, se = self.mean_se()
            if mean and se is not None:
                return value, value * se / mean, "mean latency"
        return value, None, None


def compare_records(records: list[dict], latencies: list[array | None]) -> dict:
    """Every metric of records side by side, each relative to the first (the baseline).

    Returns {"baseline": uid, "uids": [...], "metrics": [{"metric", "label", "unit",
    "better", "values", "rel_diff", "within_noise", "interval", "method"}], "config":
    config_comparison(records), "notes": [...], "significance": cr.results.significance.report(),
    "accuracy": cr.results.accuracy.section() (validate records: the paired test of each against the
    baseline's top-1/top-5, or the reason none was run; None when the baseline is no validate record)}
    (bootstrap verdicts faster/slower/inconclusive per metric, likely causes; notes name what differs besides the
    metrics: platforms, models, and every configuration field, 'config differs: threads 1 vs 2');
    rel_diff, within_noise and interval are None for the baseline and where unknown;
    interval is the 95% interval of B - A in the metric's unit.
    """
    runs = [_Run(r, lat) for r, lat in zip(records, latencies)]
    rows = []
    for key, label, unit, path, q, better in METRICS:
        figures = [run.figure(key, path, q) for run in runs]
        if all(value is None for value, _, _ in figures):
            continue
        base, base_se, _ = figures[0]
        rel, within, interval = [None], [None], [None]
        for value, se, _ in figures[1:]:
            if value is None or base is None:
                rel.append(None), within.append(None), interval.append(None)
                continue
            diff = value - base
            rel.append(diff / base if base else None)
            if se is None or base_se is None:
                within.append(None), interval.append(None)
                continue
            margin = Z * math.sqrt(se * se + base_se * base_se)
            interval.append([diff - margin, diff + margin])
            within.append(abs(diff) <= max(margin, MIN_EFFECT * abs(base)))
        methods = {m for _, _, m in figures if m}
        rows.append({
            "metric": key, "label": label, "unit": unit, "better": better,
            "values": [value for value, _, _ in figures], "rel_diff": rel, "within_noise": within,
            "interval": interval, "method": ", ".join(sorted(methods)) or None,
        })
    config = config_comparison(records)
    from .accuracy import section as accuracy
    from .significance import report as significance

    return {"baseline": records[0].get("uid"), "uids": [r.get("uid") for r in records], "metrics": rows,
            "config": config, "notes": _notes(records, config), "significance": significance(records, latencies),
            "accuracy": accuracy(records)}


def config_comparison(records: list[dict]) -> list[dict]:
    """Each run's configuration (cr.results.summary.config_fields, its label) and how it
    differs from the baseline's: [{"uid", "label", "fields", "differences": [{"field",
    "baseline", "value"}]}] (the baseline's differences are empty)."""
    from .summary import config_differences, config_fields, config_label

    out = []
    for r in records:
        out.append({"uid": r.get("uid"), "label": config_label(r), "fields": config_fields(r),
                    "differences": [{"field": f, "baseline": a, "value": b} for f, a, b in config_differences(records[0], r)]})
    return out


def _notes(records: list[dict], config: list[dict]) -> list[str]:
    """What differs between the runs besides the metrics (the comparison may be unfair):
    the platform, model or solution, and every configuration field (action, scenario,
    backend and its options, threads, batch size, variant, ...), e.g. 'config differs:
    threads 1 vs 2'."""
    from .summary import describe_difference, summarize

    notes = []
    summaries = [summarize(r) for r in records]
    for key, what in (("platform", "platforms"), ("model", "models"), ("solution", "solutions")):
        values = [s[key] for s in summaries]
        if len(set(values)) > 1:
            notes.append(f"different {what}: " + ", ".join(str(v) for v in values))
    for c in config[1:]:
        if c["differences"]:
            words = "; ".join(describe_difference(d["field"], d["baseline"], d["value"]) for d in c["differences"])
            notes.append(f"config differs: {words}" if len(config) == 2 else f"config of {c['uid']} differs from the baseline: {words}")
    for s in summaries:
        if s["status"] != "ok":
            notes.append(f"{s['uid']} has status {s['status']}")
        if s["validity"] not in (None, "VALID"):
            notes.append(f"{s['uid']} is an {s['validity']} run")
    return notes
