"""What a study found: its points, the Pareto set (ties within noise), the pick, the gap to the grid.

    result = report(study)                    # {"front": [...], "points": [...], "recommendation": {...}, ...}
    gap = verify(study, grid_study)           # hypervolume ratio, frontier recall, device time of each

The frontier rule is cr.results.pareto's, shared with `cr results pareto` and the
dashboard: A beats B on an objective when their 95% intervals do not overlap and the
difference exceeds min_effect of B; points within noise of a front point are tied, not
dominated. Points that miss a constraint are "infeasible" and stay out of the frontier.
"""
from __future__ import annotations

from ..results import pareto
from .study import INTERRUPTED, Study, reference_value, violations

PICK_RULE = ("the front point best on the first objective ({first}); when other front or tied points are within noise "
             "of it there (their 95% intervals overlap), the best of those on the next objective, and so on; then the "
             "fewest threads, then the smallest batch")


def points(study: Study) -> list[dict]:
    """One point per measured configuration (duplicates and interrupted trials left out), with
    its status: ok (feasible), infeasible (a constraint missed) or failed (the reason)."""
    out = []
    for t in study.trials():
        a = t.user_attrs
        if "config" not in a or "duplicate_of" in a or a.get(INTERRUPTED) or not t.state.is_finished():
            continue
        outcome = a.get("outcome") or {}
        point = {"id": a["config"]["key"], "trial": t.number, "config": a["config"], "record": outcome.get("record"),
                 "validation": outcome.get("validation"), "device_s": outcome.get("device_s", 0.0),
                 "setup_s": outcome.get("setup_s", 0.0)}
        if outcome.get("status") != "ok":
            out.append({**point, "state": "failed", "error": outcome.get("error") or a.get("error") or "failed", "values": {}})
            continue
        values = outcome["values"]
        if outcome.get("unchecked"):  # a feasible point dominates it on performance: its accuracy decides nothing
            out.append({**point, "state": "ok", "missed": [], "values": values,
                        "accuracy": "not validated: a feasible point dominates it on performance"})
            continue
        missed = [c.text for c, v in zip(study.constraints, violations(study, values)) if v > 0]
        out.append({**point, "state": "infeasible" if missed else "ok", "missed": missed,
                    "values": values})
    return out


def analyse(study: Study, pts: list[dict]) -> dict:
    feasible = [{"id": p["id"], "values": {o.name: p["values"][o.name] for o in study.objectives}, "config": p["config"]}
                for p in pts if p["state"] == "ok"]
    if not feasible:
        return {"rule": None, "front": [], "points": []}
    return pareto.analyse(feasible, study.objectives)


def pick(study: Study, analysis: dict) -> dict | None:
    """The recommendation by PICK_RULE among the front (and the points tied with it)."""
    cands = [p for p in analysis["points"] if p["status"] in ("front", "tied")]
    if not cands:
        return None
    for obj in study.objectives:
        sign = -1 if obj.better == "higher" else 1
        best = min(cands, key=lambda p: sign * p["values"][obj.name]["value"])
        b = best["values"][obj.name]
        cands = [p for p in cands if _overlap(p["values"][obj.name], b)]
        if len(cands) == 1:
            break
    cands.sort(key=lambda p: (p["config"]["threads"], p["config"]["batch_size"], p["id"]))
    return cands[0]


def _overlap(a: dict, b: dict) -> bool:
    return a["lo"] <= b["hi"] and b["lo"] <= a["hi"]


def report(study: Study) -> dict:
    pts = points(study)
    analysis = analyse(study, pts)
    status = {p["id"]: p for p in analysis["points"]}
    for p in pts:
        if p["id"] in status:
            s = status[p["id"]]
            p.update(status=s["status"], tied_with=s.get("tied_with") or [], dominated_by=s.get("dominated_by"))
        else:
            p["status"] = p["state"]
    chosen = pick(study, analysis)
    refs = {c.metric: reference_value(study, c.metric) for c in study.constraints if c.relative}
    validations = {k.split(":", 1)[1]: v for k, v in study.optuna.user_attrs.items() if k.startswith("validation:")}
    return {
        "study": {"name": study.name, "uid": study.uid, "file": str(study.path)},
        "model": study.space.model, "dataset": study.space.dataset, "split": study.space.split,
        "space": study.space.to_dict(), "unavailable": study.space.unavailable, "configurations": len(study.space.configs()),
        "objectives": [{"name": o.name, "label": o.label, "unit": o.unit, "better": o.better} for o in study.objectives],
        "constraints": [{"text": c.text, "bound": c.bound(refs.get(c.metric))} for c in study.constraints],
        "reference": ({"stack": study.get("reference"), **{m: v for m, v in refs.items()}} if study.get("reference") else None),
        "frontier_rule": analysis.get("rule"),
        "front": analysis.get("front", []),
        "points": pts,
        "recommendation": None if chosen is None else {
            "id": chosen["id"], "config": chosen["config"], "values": chosen["values"],
            "rule": PICK_RULE.format(first=study.objectives[0].name)},
        "trials": {"measured": len(pts), "failed": sum(p["state"] == "failed" for p in pts),
                   "infeasible": sum(p["state"] == "infeasible" for p in pts), "proposed": len(study.trials())},
        "device_s": round(device_seconds(study, pts), 3),
        "validations": {k: {"status": v.get("status"), "uid": v.get("uid"), "error": v.get("error"),
                            "device_s": v.get("device_s", 0.0)} for k, v in validations.items()},
    }


def device_seconds(study: Study, pts: list[dict] | None = None) -> float:
    """The device time a study spent: its benchmark runs and validations (set-up not counted)."""
    pts = points(study) if pts is None else pts
    own = sum(p.get("device_s") or 0.0 for p in pts)
    # trials' device_s already hold the validations they triggered; the reference's ran before any trial
    ref = study.get("reference_device_s") or 0.0
    return own + ref


def verify(found: dict, grid: dict, grid_study: Study) -> dict:
    """The measured gap between a search (found: its report) and the full grid (grid: its report).

    hypervolume ratio: the hypervolume of the configurations the search measured, taken at
    the grid's measurements of them, over the grid's (one reference point: the grid's worst
    of each objective widened 10%); so noise between the two runs cannot make it exceed 1.
    recall: the grid's front points matched by a point the search measured (same
    configuration, tied or better: cr.results.pareto.recall, with the search's own figures).
    """
    objs = grid_study.objectives
    gpoints = {p["id"]: p for p in grid["points"] if p["state"] == "ok"}
    all_values = [{o.name: p["values"][o.name]["value"] for o in objs} for p in gpoints.values()]
    if not all_values:
        return {"error": "no configuration of the grid succeeded and met the constraints"}
    refp = pareto.reference_point(all_values, objs)
    hv_grid = pareto.hypervolume(all_values, objs, reference=refp)
    found_ids = [p["id"] for p in found["points"] if p["state"] == "ok"]
    at_grid = [{o.name: gpoints[i]["values"][o.name]["value"] for o in objs} for i in found_ids if i in gpoints]
    hv_found = pareto.hypervolume(at_grid, objs, reference=refp) if at_grid else 0.0
    grid_pts = [{"id": p["id"], "values": {o.name: p["values"][o.name] for o in objs}} for p in gpoints.values()]
    found_pts = [{"id": p["id"], "values": {o.name: p["values"][o.name] for o in objs}} for p in found["points"] if p["state"] == "ok"]
    rec = pareto.recall(grid_pts, found_pts, objs)
    return {
        "grid": {"study": grid_study.name, "configurations": grid["configurations"], "measured": grid["trials"]["measured"],
                 "front": grid["front"], "device_s": grid["device_s"]},
        "hypervolume": {"found": hv_found, "exhaustive": hv_grid, "ratio": (hv_found / hv_grid) if hv_grid else None,
                        "reference_point": refp},
        "recall": rec,
        "device_s": {"tune": found["device_s"], "exhaustive": grid["device_s"],
                     "ratio": (found["device_s"] / grid["device_s"]) if grid["device_s"] else None},
        "rule": "hypervolume ratio: the configurations the search measured, at the grid's measurements, over the whole "
                "grid (reference: the grid's worst of each objective widened 10%); recall: grid front points matched by "
                "a point the search measured (same configuration, tied within noise, or better)",
    }
