"""Comparing results metric by metric; latency and throughput differences judged by the one
statistic of cr.results.significance.

Stdlib only (no numpy: `cr results compare` must stay light). Each row holds every run's
figure as its record states it (what `cr results show` prints) and its difference from the
first run (the baseline). The p50, p90, p99 and mean latency and the single-stream
throughput (queries/s) of each run against the baseline are judged by
cr.results.significance.compare_pair, the statistic `cr results compare`'s verdicts, `cr
reproduce` and the dashboard use: a row's "within_noise" is its verdict being inconclusive,
its "interval" the 95% interval of B / A turned into B - A in the row's unit. Samples/s
follows the queries/s verdict when both runs put the same number of samples in a query
(the ratio is then the same); otherwise it is not judged. Without raw samples nothing is
judged (the significance section says why): there is no second, weaker rule to fall back to.
Accuracies are judged sample by sample in the report's "accuracy" section (cr.results.accuracy:
exact McNemar and a paired bootstrap), not here.
"""
from __future__ import annotations

from .summary import number_at

# (metric key, label, unit, where in the record, which way is better)
METRICS = (
    ("p50_ns", "p50 latency", "ns", ("metrics", "latency_ns", "p50"), "lower"),
    ("p90_ns", "p90 latency", "ns", ("metrics", "latency_ns", "p90"), "lower"),
    ("p99_ns", "p99 latency", "ns", ("metrics", "latency_ns", "p99"), "lower"),
    ("mean_ns", "mean latency", "ns", ("metrics", "latency_ns", "mean"), "lower"),
    ("throughput_qps", "throughput (queries/s)", "queries/s", ("metrics", "throughput", "queries_per_s"), "higher"),
    ("throughput_sps", "throughput (samples/s)", "samples/s", ("metrics", "throughput", "samples_per_s"), "higher"),
    ("noise", "noise (IQR/p50)", "", ("metrics", "noise"), "lower"),
    ("peak_rss_bytes", "peak RSS", "bytes", ("metrics", "peak_rss_bytes"), "lower"),
    ("top1", "top-1", "", ("validation", "top1"), "higher"),
    ("top5", "top-5", "", ("validation", "top5"), "higher"),
)
Z = 1.959964  # two-sided 95% (cr.results.pareto's intervals)
_QPS = ("metrics", "throughput", "queries_per_s")
_SPS = ("metrics", "throughput", "samples_per_s")


def same_samples_per_query(a: dict, b: dict) -> bool:
    """Whether samples/s over queries/s is the same for both records (then their samples/s
    ratio is their queries/s ratio, and the queries/s verdict holds for it)."""
    qa, qb, sa, sb = number_at(a, _QPS), number_at(b, _QPS), number_at(a, _SPS), number_at(b, _SPS)
    if not (qa and qb and sa and sb):
        return False
    return abs((sa / qa) / (sb / qb) - 1) < 1e-9


def _judged(key: str, pair: dict | None, a: dict, b: dict):
    """The significance row that judges metric key of B against A (None when none does)."""
    if pair is None:
        return None
    if key == "throughput_sps":
        if not same_samples_per_query(a, b):
            return None
        key = "throughput_qps"
    return next((m for m in pair.get("metrics") or [] if m["metric"] == key), None)


def compare_records(records: list[dict], latencies: list) -> dict:
    """Every metric of records side by side, each relative to the first (the baseline).

    Returns {"baseline": uid, "uids": [...], "metrics": [{"metric", "label", "unit",
    "better", "values", "rel_diff", "verdict", "within_noise", "interval", "method"}], "config":
    config_comparison(records), "notes": [...], "significance": cr.results.significance.report(),
    "accuracy": cr.results.accuracy.section() (validate records: the paired test of each against the
    baseline's top-1/top-5, or the reason none was run; None when the baseline is no validate record)}
    (bootstrap verdicts faster/slower/inconclusive per metric, likely causes; notes name what differs besides the
    metrics: platforms, models, and every configuration field, 'config differs: threads 1 vs 2');
    rel_diff, verdict, within_noise and interval are None for the baseline and where unknown or not judged;
    verdict and within_noise (verdict inconclusive) are those of the significance section; interval is
    its 95% interval of B / A as B - A in the metric's unit.
    """
    from .accuracy import section as accuracy
    from .significance import METHOD, report as significance

    sig = significance(records, latencies)
    pairs = [None] + sig["pairs"]
    rows = []
    for key, label, unit, path, better in METRICS:
        values = [number_at(r, path) for r in records]
        if all(value is None for value in values):
            continue
        base = values[0]
        rel, verdicts, within, interval = [None], [None], [None], [None]
        judged_any = False
        for record, value, pair in zip(records[1:], values[1:], pairs[1:]):
            rel.append((value - base) / base if value is not None and base else None)
            row = _judged(key, pair, records[0], record)
            if row is None or row.get("verdict") is None or base is None:
                verdicts.append(None), within.append(None), interval.append(None)
                continue
            judged_any = True
            lo, hi = row["ci"]
            verdicts.append(row["verdict"])
            within.append(row["verdict"] == "inconclusive")
            interval.append([base * (lo - 1), base * (hi - 1)])
        rows.append({
            "metric": key, "label": label, "unit": unit, "better": better, "values": values, "rel_diff": rel,
            "verdict": verdicts, "within_noise": within, "interval": interval, "method": METHOD if judged_any else None,
        })
    config = config_comparison(records)
    return {"baseline": records[0].get("uid"), "uids": [r.get("uid") for r in records], "metrics": rows,
            "config": config, "notes": _notes(records, config), "significance": sig, "accuracy": accuracy(records)}


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
