"""A regression gate for CI: is the candidate slower than the baseline, beyond noise?

    from cr.results.gate import Side, evaluate
    report = evaluate(Side.of(base_record, base_lat, "stored result"), Side.of(...), metric="p50", threshold=0.05)
    report["verdict"]  # "PASS" | "REGRESSION" | "INCONCLUSIVE"; report["exit_code"] 0 | 1 | 2

The statistic is the one every comparison in cr uses: cr.results.significance.compare_pair,
the 95% interval of candidate / baseline for the chosen metric. With the slowdown s (the
ratio for a latency, its inverse for a throughput: above 1 is worse) and the threshold t:

    REGRESSION    the whole interval of s lies above 1 + t/2
    PASS          otherwise, when the interval's upper end lies below 1 + t
                  (a regression of t or more is ruled out)
    INCONCLUSIVE  anything else: the interval is too wide to tell either

Why t/2: a true regression of exactly t has its interval centred on 1 + t, so it is caught
whenever the interval's half-width (plus the chance deviation of the estimate) is under
t/2; an unchanged pair is flagged only when its interval ends more than t/2 from 1 (a
drift between the two runs that large, beyond their sampling noise). Measured error rates:
docs/ci.md (benchmarks/bench_gate.py).

The noise floor: before judging, the baseline's own samples are split into two halves that
each span the whole run (16 blocks of consecutive queries, the even blocks against the odd
ones: an A/A comparison with the same statistic). The farthest its interval reaches from 1
is the floor f: what two unchanged sides can show by chance (sampling noise, and state that
lasts a block). A drift between two separate runs is not in it: that is what interleaved
A/B runs (--ab) cancel and two stored results cannot. The smallest change caught in 95% of runs is about
DETECTABLE_FACTOR * f (a half-split interval is sqrt(2) wider than a whole-run comparison;
the rule needs t/2 > half-width + 1.645 sigma of the estimate: 2 * 3.605 / (1.96 * sqrt(2))
~ 2.6). A threshold below it is refused (CRError naming what is detectable), not judged.

Standard library only at import (`cr gate` on stored results imports no numpy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import CRError

DEFAULT_METRIC = "p50"
DEFAULT_THRESHOLD = 0.05
DETECTABLE_FACTOR = 2.6
EXIT = {"PASS": 0, "REGRESSION": 1, "INCONCLUSIVE": 2}
# --metric name -> (compare_pair's metric key, label, unit)
METRICS = {
    "p50": ("p50_ns", "p50 latency", "ns"),
    "p90": ("p90_ns", "p90 latency", "ns"),
    "p99": ("p99_ns", "p99 latency", "ns"),
    "mean": ("mean_ns", "mean latency", "ns"),
    "throughput": ("throughput_qps", "throughput", "queries/s"),
}


class GateError(CRError):
    """The gate cannot judge these inputs (different models, no raw samples, a threshold
    below the noise floor, no matching baseline)."""


@dataclass
class Side:
    """One side of the gate: a record (its configuration, machine and summary figures), its
    raw latencies in time order (array('q') or a list; None when it has none), where it
    came from (words), and the uids of the runs pooled into it (A/B rounds)."""

    record: dict
    latencies: object
    source: str
    uids: list = field(default_factory=list)

    @classmethod
    def of(cls, record: dict, latencies, source: str) -> "Side":
        return cls(record, latencies, source, [record.get("uid")])


def rule_text(metric: str, threshold: float) -> str:
    """The decision rule in words, with this gate's metric and threshold."""
    label = METRICS[metric][1]
    t, half = _pct(threshold), _pct(threshold / 2)
    worse = "candidate/baseline" if metric != "throughput" else "baseline/candidate"
    return (f"{label}, 95% interval of {worse} (>1 is slower): REGRESSION when the whole interval lies above "
            f"1+{half}; PASS when its upper end lies below 1+{t} (a {t} regression ruled out); INCONCLUSIVE otherwise")


def decide(slow_lo: float, slow_hi: float, threshold: float) -> str:
    """The verdict from the interval [slow_lo, slow_hi] of the slowdown (above 1 is worse)."""
    if slow_lo > 1 + threshold / 2:
        return "REGRESSION"
    if slow_hi < 1 + threshold:
        return "PASS"
    return "INCONCLUSIVE"


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.3g}%"


def parse_threshold(text: str) -> float:
    """'5', '5%' or '0.5%' as a fraction (0.05, 0.005): a percentage either way."""
    value = str(text).strip().removesuffix("%").strip()
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    if not math.isfinite(number) or not 0 < number < 1000:
        raise GateError(f"--threshold {text!r}: expected a percentage above 0 and below 1000, e.g. 5 or 5%",
                        hint="the largest slowdown that may pass, in percent of the baseline (default 5%)")
    return number / 100


def _row(pair: dict, key: str, metric: str) -> dict:
    for row in pair["metrics"]:
        if row["metric"] == key:
            return row
    judged = ", ".join(sorted(name for name, (k, _, _) in METRICS.items() if any(r["metric"] == k for r in pair["metrics"])))
    raise GateError(f"--metric {metric}: the comparison statistic does not judge it here (it judges {judged})",
                    hint=f"choose one of: {judged}")


def _slowdown(row: dict) -> tuple[float, float, float]:
    """(point, lo, hi) of the slowdown (>1 worse) of a compare_pair metric row."""
    ratio, (lo, hi) = row["ratio"], row["ci"]
    if row["better"] == "higher":
        return 1 / ratio, 1 / hi, 1 / lo
    return ratio, lo, hi


def component_name(record: dict, kind: str) -> str | None:
    """A component's name without its version ('model:lenet-digits@1.0.0' -> 'lenet-digits')."""
    from .summary import summarize

    ref = summarize(record).get(kind)
    return ref.split(":", 1)[-1].split("@", 1)[0] if ref else None


def check_comparable(baseline: Side, candidate: Side) -> None:
    """GateError when the two sides are results of different models or datasets (the
    refusal names both); other differences (configuration, machine) are notes."""
    for kind in ("model", "dataset"):
        a, b = component_name(baseline.record, kind), component_name(candidate.record, kind)
        if a != b:
            raise GateError(f"the baseline ({_uid(baseline)}) is a result of {kind} {a or 'none'}, the candidate "
                            f"({_uid(candidate)}) of {kind} {b or 'none'}: a gate compares one {kind} against itself",
                            hint=f"give a baseline of {kind} {b or 'none'} (cr results list --{kind} {b or 'NAME'})")


def _uid(side: Side) -> str:
    uid = side.record.get("uid") or "?"
    return f"result {uid}" if len(side.uids) <= 1 else f"{len(side.uids)} runs pooled, first {uid}"


def _missing(side: Side, role: str) -> None:
    from .significance import missing_reason

    why = missing_reason(side.record, side.latencies)
    if why:
        raise GateError(f"no interval for the {role}: {why}",
                        hint="gate on results that keep their raw latencies: run cr benchmark again, or export without "
                             "--no-raw (cr results show UID says what a result carries)")


AA_BLOCKS = 16  # the A/A split: 16 runs of consecutive queries, the even ones against the odd ones


def _halves(side: Side) -> tuple[Side, Side]:
    """The A/A split of one side's samples: its queries cut into AA_BLOCKS consecutive
    blocks, the even blocks against the odd ones. Both halves span the whole run, as the
    two sides of an interleaved A/B run do, so a slow drift falls on both alike and what
    is left is the noise a comparison of these samples cannot get under."""
    from array import array

    from .significance import latency_figures

    lat = side.latencies
    size = max(1, len(lat) // AA_BLOCKS)
    even, odd = array("q"), array("q")
    for i, start in enumerate(range(0, size * AA_BLOCKS if len(lat) >= AA_BLOCKS else len(lat), size)):
        (even if i % 2 == 0 else odd).extend(lat[start:start + size])
    uid = side.record.get("uid")
    whole_mean = latency_figures(lat)["mean"] if len(lat) else None  # once for both halves (it sorts the run)
    return (Side(with_figures(dict(side.record, uid=f"{uid}:even-blocks"), even, whole_mean), even, side.source),
            Side(with_figures(dict(side.record, uid=f"{uid}:odd-blocks"), odd, whole_mean), odd, side.source))


def with_figures(record: dict, latencies, whole_mean: float | None = None) -> dict:
    """record with its latency figures (p50, p90, p99, mean) computed from latencies, the
    samples this side really holds (a pool of rounds, a half of a run): compare_pair takes
    its point from the records' figures, so a record must state those of its own samples.
    whole_mean: the mean latency of the samples the record's throughput was measured over;
    the throughput is scaled by it over these samples' (queries/s ~ 1 / mean latency), as
    compare_pair's interval does."""
    from .significance import latency_figures

    if not latencies:
        return record
    metrics = dict(record.get("metrics") or {})
    figures = latency_figures(latencies)
    metrics["latency_ns"] = {**(metrics.get("latency_ns") or {}), **figures}
    qps = (metrics.get("throughput") or {}).get("queries_per_s")
    if whole_mean is not None and isinstance(qps, (int, float)) and figures["mean"] > 0:
        metrics["throughput"] = {**metrics["throughput"], "queries_per_s": qps * whole_mean / figures["mean"]}
    return dict(record, metrics=metrics)


def noise_floor(side: Side, metric: str) -> dict | None:
    """The A/A noise floor of one side's samples for metric: {"floor" (fraction), "detectable"
    (fraction: DETECTABLE_FACTOR * floor), "ratio", "ci", "samples"}; None when the halves
    are too short for an interval."""
    from .significance import compare_pair, missing_reason

    first, second = _halves(side)
    if missing_reason(first.record, first.latencies):
        return None
    pair = compare_pair(first.record, second.record, first.latencies, second.latencies)
    row = _row(pair, METRICS[metric][0], metric)
    if not row.get("ci"):
        return None
    point, lo, hi = _slowdown(row)
    floor = max(hi - 1, 1 - lo, 0.0)
    return {"floor": floor, "detectable": DETECTABLE_FACTOR * floor, "ratio": point, "ci": [lo, hi],
            "samples": len(first.latencies)}


def evaluate(baseline: Side, candidate: Side, metric: str = DEFAULT_METRIC, threshold: float = DEFAULT_THRESHOLD,
             check_floor: bool = True) -> dict:
    """The gate's report for candidate against baseline (see the module doc).

    {"verdict", "exit_code", "rule", "metric", "label", "unit", "threshold", "baseline_value",
    "candidate_value", "ratio" (candidate/baseline as measured), "slowdown" (>1 worse), "ci" (of
    the slowdown), "noise_floor" (noise_floor() of the baseline, or None), "baseline", "candidate"
    (describe()), "other_metrics", "notes", "statistic" (significance.settings())}.
    GateError for different models or datasets, a side without raw samples, or (check_floor)
    a threshold below what the baseline's noise lets the gate detect.
    """
    from .compare import config_comparison
    from .significance import compare_pair, settings
    from .summary import describe_difference, platform_description

    if metric not in METRICS:
        raise GateError(f"--metric {metric!r} is not one of {', '.join(METRICS)}", hint="the default is p50")
    check_comparable(baseline, candidate)
    _missing(baseline, "baseline")
    _missing(candidate, "candidate")
    key, label, unit = METRICS[metric]
    floor = noise_floor(baseline, metric)
    if check_floor and floor is not None and threshold < floor["detectable"]:
        raise GateError(
            f"--threshold {_pct(threshold)} is below the noise floor of the baseline ({_uid(baseline)}): smallest "
            f"detectable change here: {_pct(floor['detectable'])} ({label}: an A/A split of its own samples "
            f"gave {floor['ratio']:.3f}, 95% interval {floor['ci'][0]:.3f} .. {floor['ci'][1]:.3f})",
            hint=f"raise --threshold to {_pct(math.ceil(floor['detectable'] * 1000) / 1000)} or more, or make the runs "
                 "quieter or longer (more queries, more --ab rounds, an idle machine)")
    pair = compare_pair(baseline.record, candidate.record, baseline.latencies, candidate.latencies,
                        min_effect=threshold / 2)
    row = _row(pair, key, metric)
    if not row.get("ci"):
        raise GateError(f"no interval for {label}: {row.get('why') or 'the statistic gave none'}",
                        hint="choose another --metric (p50 is judged wherever raw latencies exist)")
    point, lo, hi = _slowdown(row)
    verdict = decide(lo, hi, threshold)
    notes = []
    pa, pb = (platform_description(s.record.get("platform")) for s in (baseline, candidate))
    fa, fb = ((s.record.get("platform") or {}).get("fingerprint") for s in (baseline, candidate))
    if fa != fb:
        notes.append(f"different machines: baseline on {pa}, candidate on {pb}")
    differences = config_comparison([baseline.record, candidate.record])[1]["differences"]
    if differences:
        notes.append("config differs: " + "; ".join(describe_difference(d["field"], d["baseline"], d["value"])
                                                    for d in differences))
    for side, role in ((baseline, "baseline"), (candidate, "candidate")):
        if (side.record.get("metrics") or {}).get("noisy"):
            notes.append(f"the {role} run was marked noisy (IQR/p50 {side.record['metrics'].get('noise', 0):.3f})")
    if verdict == "PASS" and hi < 1:
        notes.append("the candidate is faster than the baseline")
    return {
        "verdict": verdict, "exit_code": EXIT[verdict], "rule": rule_text(metric, threshold), "metric": metric,
        "label": label, "unit": unit, "threshold": threshold, "baseline_value": row["baseline"],
        "candidate_value": row["value"], "ratio": row["ratio"], "slowdown": point, "ci": [lo, hi],
        "noise_floor": floor, "baseline": describe(baseline), "candidate": describe(candidate),
        "other_metrics": [{k: m[k] for k in ("metric", "label", "baseline", "value", "ratio", "ci")}
                          for m in pair["metrics"] if m["metric"] != key and m.get("ci")],
        "notes": notes, "statistic": {**settings(), "min_effect": threshold / 2},
    }


def describe(side: Side) -> dict:
    """What the summary says of one side: source, uids, model, dataset, backend and version,
    configuration label, machine, samples and when it started."""
    from .summary import config_label, dataset_label, platform_description, summarize

    record = side.record
    s = summarize(record)
    info = (record.get("backend") or {}).get("info") or {} if isinstance(record.get("backend"), dict) else {}
    backend = s.get("backend") or "?"
    if isinstance(info, dict) and info.get("version"):
        backend += f" {info['version']}"
    return {"source": side.source, "uids": [u for u in side.uids if u], "target": s.get("solution") or s.get("model"),
            "model": s.get("model"), "dataset": dataset_label(record) or s.get("dataset"), "backend": backend,
            "variant": s.get("variant"), "config": config_label(record), "machine": platform_description(record.get("platform")),
            "fingerprint": s.get("platform"), "samples": len(side.latencies) if side.latencies is not None else 0,
            "started": s.get("started")}


# ----------------------------------------------------------------------------- rendering

def _value(unit: str, value) -> str:
    from .summary import metric_text

    return metric_text(unit, value)


def lines(report: dict) -> list[str]:
    """The report as terminal lines: the verdict, the figures and interval, the rule, each
    side, the noise floor and the notes."""
    lo, hi = report["ci"]
    unit = report["unit"]
    out = [f"{report['verdict']}: {report['label']} {_value(unit, report['candidate_value'])} (candidate) vs "
           f"{_value(unit, report['baseline_value'])} (baseline), slowdown {report['slowdown']:.3f} "
           f"({100 * (report['slowdown'] - 1):+.1f}%), 95% interval {lo:.3f} .. {hi:.3f}, threshold {_pct(report['threshold'])}",
           f"rule: {report['rule']}"]
    for role in ("baseline", "candidate"):
        d = report[role]
        out.append(f"{role}: {d['source']}; {d['target']} on {d['backend']} ({d['config']}); {d['samples']} samples; "
                   f"{d['machine']}; {', '.join(u[:16] for u in d['uids'])}")
    floor = report.get("noise_floor")
    if floor:
        out.append(f"noise floor of the baseline (A/A split of its samples): {_pct(floor['floor'])}; smallest detectable "
                   f"change here: {_pct(floor['detectable'])}")
    out += [f"note: {n}" for n in report["notes"]]
    return out


def _md(text) -> str:
    """Markdown table cell text: no pipes or line breaks, 'us' as 'µs'."""
    text = str(text if text is not None else "-").replace("|", "\\|").replace("\n", " ")
    return text.replace(" us", " µs")


def markdown(report: dict) -> str:
    """A summary a CI job can post: verdict, figures, interval, rule, and each side's
    configuration and machine."""
    icon = {"PASS": "✅", "REGRESSION": "❌", "INCONCLUSIVE": "⚠️"}[report["verdict"]]
    lo, hi = report["ci"]
    unit = report["unit"]
    b, c = report["baseline"], report["candidate"]
    out = [f"## cr gate: {report['verdict']} {icon}", "",
           f"**{report['label']}**: {_md(_value(unit, report['candidate_value']))} (candidate) vs "
           f"{_md(_value(unit, report['baseline_value']))} (baseline): slowdown **{report['slowdown']:.3f}** "
           f"({100 * (report['slowdown'] - 1):+.1f}%), 95% interval {lo:.3f} .. {hi:.3f}, threshold {_pct(report['threshold'])}.",
           "", f"Rule: {report['rule']}.", "",
           "| | baseline | candidate |", "|---|---|---|"]
    rows = [("source", b["source"], c["source"]), ("results", ", ".join(b["uids"]), ", ".join(c["uids"])),
            ("target", b["target"], c["target"]), ("dataset", b["dataset"], c["dataset"]),
            ("backend", b["backend"], c["backend"]), ("variant", b["variant"], c["variant"]),
            ("configuration", b["config"], c["config"]), ("machine", b["machine"], c["machine"]),
            ("samples", b["samples"], c["samples"]),
            (report["label"], _value(unit, report["baseline_value"]), _value(unit, report["candidate_value"]))]
    for m in report["other_metrics"]:
        u = METRICS.get({"p50_ns": "p50", "p99_ns": "p99", "mean_ns": "mean"}.get(m["metric"], "throughput"))[2]
        rows.append((f"{m['label']} (ratio {m['ratio']:.3f}, 95% {m['ci'][0]:.3f} .. {m['ci'][1]:.3f})",
                     _value(u, m["baseline"]), _value(u, m["value"])))
    out += [f"| {_md(name)} | {_md(x)} | {_md(y)} |" for name, x, y in rows]
    floor = report.get("noise_floor")
    if floor:
        out += ["", f"Noise floor of the baseline (an A/A split of its own samples): {_pct(floor['floor'])}; "
                    f"smallest detectable change here: {_pct(floor['detectable'])}."]
    if report["notes"]:
        out += [""] + [f"- {_md(n)}" for n in report["notes"]]
    st = report["statistic"]
    out += ["", f"<sub>{st['method']}, {st['resamples']} resamples, seed {st['seed']} (cr.results.significance); "
                "exit 0 PASS, 1 REGRESSION, 2 INCONCLUSIVE.</sub>", ""]
    return "\n".join(out)


# ------------------------------------------------------------------------------- sources

def from_store(uid: str, role: str, store=None) -> Side:
    """A stored result (a uid or its first digits) with its raw latencies."""
    from ..errors import NotFound
    from .store import default_store

    store = store or default_store()
    try:
        record = store.get(uid)
    except NotFound as exc:
        raise GateError(f"{role} {uid!r}: {exc.message}", hint=exc.hint or "cr results list shows the uids") from None
    return Side.of(record, store.latencies(record), f"stored result {record['uid']}")


def matches(record: dict, candidate: dict, same_machine: bool = True) -> bool:
    """Whether record can be candidate's baseline: an ok benchmark of the same model and
    dataset, the same configuration (cr.results.summary.config_key) and, with same_machine,
    the same platform fingerprint; never the candidate itself."""
    from .summary import config_key

    if record.get("uid") == candidate.get("uid") or record.get("action") != "benchmark" or record.get("status") != "ok":
        return False
    if any(component_name(record, k) != component_name(candidate, k) for k in ("model", "dataset")):
        return False
    if same_machine and (record.get("platform") or {}).get("fingerprint") != (candidate.get("platform") or {}).get("fingerprint"):
        return False
    return config_key(record) == config_key(candidate)


def pool(records: list[dict], latencies: list, source: str) -> Side:
    """One side of an A/B gate: its rounds' latencies joined in time order, the first
    round's record with the latency figures of the joined samples and the pooled throughput
    (all queries over all timed seconds)."""
    from array import array

    joined = array("q")
    for lat in latencies:
        joined.extend(lat)
    first = records[0]
    metrics = dict(first.get("metrics") or {})
    queries = [(r.get("metrics") or {}).get("queries") for r in records]
    seconds = [(r.get("metrics") or {}).get("duration_s") for r in records]
    if all(isinstance(q, (int, float)) for q in queries) and all(isinstance(s, (int, float)) and s > 0 for s in seconds):
        throughput = dict(metrics.get("throughput") or {})
        throughput["queries_per_s"] = sum(queries) / sum(seconds)
        metrics["throughput"] = throughput
    metrics["noisy"] = any((r.get("metrics") or {}).get("noisy") for r in records)
    return Side(with_figures(dict(first, metrics=metrics), joined), joined, source, [r.get("uid") for r in records])
