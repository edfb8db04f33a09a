"""`cr results pareto`: the Pareto front of stored results, one point per configuration.

Stored records are single runs: a benchmark measures latency, throughput, memory (and
energy where a meter is), a validate measures accuracy. A *configuration* joins them
(JOIN, in words):

  - a benchmark configuration is its platform, model, pipeline sha256 and run parameters
    (cr.results.summary.config_key: backend and options, variant, precision, scenario,
    batch, dataset and split) with the threads the backend ran with;
  - its accuracy comes from a validate record of the same platform, model, backend,
    variant, precision, pipeline and dataset split (the benchmark's; any, where it ran on
    synthetic inputs): accuracy does not depend on threads, batch size or scenario;
  - of repeated runs of a configuration the newest successful one counts (the others are
    counted in "runs");
  - asked only accuracy objectives, the points are the validate configurations alone.

The front, ties and intervals are cr.results.pareto's (one rule for every study). Standard
library only.
"""
from __future__ import annotations

from ..errors import CRError
from ..events import reporter
from . import pareto
from .summary import config_key, effective_threads

JOIN = ("a benchmark configuration (platform, model, pipeline, backend and its options, variant, precision, "
        "scenario, threads as run, batch, dataset split) takes its accuracy from the newest validate of the same "
        "platform, model, backend, variant, precision, pipeline and split (accuracy does not depend on threads, "
        "batch or scenario); of repeated runs the newest successful one counts")
_PERF = ("benchmark",)
_MEASURES = ("a benchmark measures p50, p90, p99, throughput and memory (energy with a meter), a validate top1 and "
             "top5 (map: a detector)")


def _stack(row: dict) -> tuple:
    """What accuracy depends on: the validate join's key (split None: any)."""
    return (row["platform"], row["model"], row["backend"], row["variant"], row["precision"], row["pipeline"], row["dataset"],
            row["split"])


def _config(row: dict) -> dict:
    return {k: row.get(k) for k in ("model", "solution", "platform", "platform_description", "backend", "variant", "precision",
                                     "threads", "batch_size", "pipeline", "dataset", "split", "scenario", "campaign",
                                     "campaign_job", "study", "trial")}


def _labels(points: list[dict]) -> None:
    """Each point's label: backend/variant (precision) and the settings that vary among the points;
    its id: the label, made unique with the record's uid where two read the same."""
    def varies(key):
        return len({p["config"].get(key) for p in points}) > 1

    extra = [k for k in ("model", "platform_description", "dataset", "split", "scenario") if varies(k)]
    for p in points:
        c = p["config"]
        words = ["/".join(x for x in (c["backend"], c["variant"]) if x) + (f" ({c['precision']})" if c["precision"] else "")]
        words += [f"threads={c['threads']}" if c["threads"] else "", f"batch={c['batch_size']}" if c["batch_size"] else ""]
        if varies("pipeline"):
            words.append(f"pipeline={(c['pipeline'] or 'none')[:8]}")
        words += [str(c[k]) for k in extra if c.get(k)]
        p["label"] = " ".join(w for w in words if w)
    seen: dict[str, int] = {}
    for p in points:
        seen[p["label"]] = seen.get(p["label"], 0) + 1
    for p in points:
        p["id"] = p["label"] if seen[p["label"]] == 1 else f"{p['label']} [{p['uid'][:8]}]"


def points(store, objectives: list, **filters) -> tuple[list[dict], int]:
    """(points, records read): one point per configuration of the matching ok results (JOIN),
    each {"id", "label", "uid", "config", "records": {"benchmark", "validate"}, "runs",
    "values": pareto.measure(...), "missing": {objective: why}}."""
    rows = [r for r in store.list(status="ok", **filters) if r["action"] in ("benchmark", "validate")]
    perf = [o for o in objectives if o.name not in pareto.ACCURACY]
    accuracy = [o for o in objectives if o.name in pareto.ACCURACY]
    validations: dict[tuple, dict] = {}
    for r in rows:
        if r["action"] == "validate":
            validations.setdefault(_stack(r), r)  # newest first: the first is the newest
    if not perf:
        chosen = {}
        for r in rows:
            if r["action"] == "validate":
                entry = chosen.setdefault(_stack(r), {"row": r, "runs": 0, "validate": r})
                entry["runs"] += 1
    else:
        chosen = {}
        done = 0
        benchmarks = [r for r in rows if r["action"] in _PERF]
        for r in benchmarks:
            record = store.get(r["uid"])
            key = (r["platform"], r["model"], r["pipeline"], config_key(record), effective_threads(record))
            entry = chosen.setdefault(key, {"row": r, "runs": 0, "record": record})
            entry["runs"] += 1
            done += 1
            reporter().progress("reading results", done, len(benchmarks), "results")
        for entry in chosen.values():
            r = entry["row"]
            match = validations.get(_stack(r))
            if match is None and r["split"] is None:  # synthetic inputs: the newest validate of this stack, any split
                match = next((v for k, v in validations.items() if k[:6] == _stack(r)[:6]), None)
            entry["validate"] = match
    out = []
    for entry in chosen.values():
        row = entry["row"]
        values, missing = {}, {}
        if perf:
            record = entry["record"]
            try:
                latencies = store.latencies(record)
            except CRError as exc:  # a damaged side file: the summary's intervals instead
                reporter().warning(f"{exc.message} (its p50 interval comes from the IQR)")
                latencies = None
            values.update(pareto.measure(record, perf, latencies))
            missing.update(pareto.missing(record, perf))
        if accuracy:
            v = entry.get("validate")
            if v is None:
                missing.update({o.name: "no validate record of this configuration's stack (cr validate with the same "
                                        "backend, variant and pipeline)" for o in accuracy})
            else:
                record = store.get(v["uid"])
                values.update(pareto.measure(record, accuracy))
                missing.update(pareto.missing(record, accuracy))
        validate = entry.get("validate")
        out.append({"uid": row["uid"], "config": _config(row), "runs": entry["runs"], "values": values, "missing": missing,
                    "records": {"benchmark": row["uid"] if perf else None, "validate": validate["uid"] if validate else None}})
    _labels(out)
    return out, len(rows)


def report(store, names: list[str], min_effect: float = pareto.MIN_EFFECT, **filters) -> dict:
    """The front over the named objectives of the matching stored results.

    {"objectives": [{"name", "label", "unit", "better"}], "rule", "join", "min_effect",
    "front": [ids], "points": [points() + status, tied_with, dominated_by], "records": how
    many were read}. CRError when an objective is unknown or given twice, when nothing
    matches, or when no matching result measures an objective (with the records' reason:
    'no energy meter measured this run')."""
    if not names:
        raise CRError("no objective to rank by", hint=f"give --objective, one or more of: {', '.join(pareto.OBJECTIVES)}")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CRError(f"objective {twice[0]} given twice", hint="give each --objective once")
    objectives = [pareto.objective(n) for n in names]
    found, read = points(store, objectives, **filters)
    if not found:
        shown = ", ".join(f"{k}={v}" for k, v in filters.items() if v is not None) or "none"
        what = "validate" if all(o.name in pareto.ACCURACY for o in objectives) else "benchmark"
        raise CRError(f"no successful {what} result matches (filters: {shown})",
                      hint=f"see what is stored with cr results list and the same filters; run cr {what} first")
    for o in objectives:
        if not any(o.name in p["values"] for p in found):
            reasons = sorted({p["missing"].get(o.name) for p in found if p["missing"].get(o.name)})
            raise CRError(f"no matching result measures {o.label} ({o.name}): {reasons[0] if reasons else 'not recorded'}",
                          hint=_MEASURES if o.name != "energy" else
                          "energy needs a meter where the benchmark runs (RAPL, NVML, INA3221 rails, a Pi 5 PMIC or "
                          "CR_ENERGY_COMMAND); rank by another objective: " + _MEASURES)
    result = pareto.analyse(found, objectives, min_effect)
    order = {"front": 0, "tied": 1, "dominated": 2, "infeasible": 3, "unmeasured": 4}
    front = {pid: i for i, pid in enumerate(result["front"])}
    result["points"].sort(key=lambda p: (order.get(p["status"], 5), front.get(p["id"], 0), p["id"]))
    return {"objectives": [{"name": o.name, "label": o.label, "unit": o.unit, "better": o.better} for o in objectives],
            "rule": result["rule"], "join": JOIN if any(o.name in pareto.ACCURACY for o in objectives) and
            any(o.name not in pareto.ACCURACY for o in objectives) else None,
            "min_effect": result["min_effect"], "front": result["front"], "points": result["points"], "records": read}
