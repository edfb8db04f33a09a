"""Reproduction: a solution made ready here, its declared actions run, and the results judged
against the reference results an archive carries (or the declared expectations).

    report = reproduce("lenet-digits-onnxruntime-1.0.0.cr.zip")   # init + run + compare
    report["outcome"]   # PASS | FAIL | NO-REFERENCE

Only what must match is judged (accuracy within tolerance); performance is shown beside
the reference machine's. A miss names its likely cause from the recorded pipelines,
model hashes, variants and software versions.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..events import reporter
from ..results.summary import platform_description
from ..store import catalog
from .actions import NotStored
from .solution import init, run_declared



def _metric(record: dict, name: str):
    v = record.get("validation") or {}
    return v.get(name)


def _step_diff(theirs: list, ours: list, stage: str) -> list[str]:
    out = []
    for i in range(max(len(theirs), len(ours))):
        a = theirs[i] if i < len(theirs) else None
        b = ours[i] if i < len(ours) else None
        if a != b:
            op = (b or a or {}).get("op", "?")
            out.append(f"{stage} step {i} ({op}) differs: reference {json.dumps(a, sort_keys=True)}, here {json.dumps(b, sort_keys=True)}")
    return out


def _software_diff(theirs: dict | None, ours: dict | None) -> list[str]:
    a = {s["name"]: s["version"] for s in (theirs or {}).get("software") or []}
    b = {s["name"]: s["version"] for s in (ours or {}).get("software") or []}
    return [f"{n} {a[n]} (reference) vs {b[n]} (here)" for n in sorted(a) if n in b and a[n] != b[n] and n != "python"]


def compare(reference: list[dict], here: list[dict], expected: dict) -> dict:
    """The reproduction report: what must match (accuracy) and what is shown (performance)."""
    checks, performance, causes = [], [], []
    for ref_rec in reference:
        if ref_rec.get("status") != "ok":
            continue
        ours = next((r for r in here if r["action"] == ref_rec["action"] and r.get("status") == "ok"
                     and (r.get("config") or {}).get("scenario") == (ref_rec.get("config") or {}).get("scenario")), None)
        if ref_rec["action"] == "validate":
            if ours is None:
                checks.append({"metric": "validate", "ok": False, "detail": "no successful validate run here"})
                continue
            names = [n for n in ("top1", "top5", "recall", "precision", "mean_iou", "detections") if _metric(ref_rec, n) is not None]
            for n in names:
                want, got = float(_metric(ref_rec, n)), _metric(ours, n)
                tol = expected.get(n) or {}
                allowed = max(float(tol.get("abs", 0.0)), float(tol.get("rel", 0.0)) * abs(want), 1e-9)
                ok = got is not None and abs(float(got) - want) <= allowed
                checks.append({"metric": n, "reference": want, "here": got, "allowed": allowed, "ok": ok})
            rp, op = ref_rec.get("pipeline") or {}, ours.get("pipeline") or {}
            if rp.get("sha256") and rp.get("sha256") != op.get("sha256"):
                causes += _step_diff(rp.get("preprocess") or [], op.get("preprocess") or [], "preprocess")
                causes += _step_diff(rp.get("postprocess") or [], op.get("postprocess") or [], "postprocess")
            if (ref_rec.get("model_file") or {}).get("sha256") != (ours.get("model_file") or {}).get("sha256"):
                causes.append("the model file differs (sha256) from the reference's")
            if rp.get("variant") != op.get("variant"):
                causes.append(f"model variant {rp.get('variant')} (reference) vs {op.get('variant')} (here)")
            diff = _software_diff(ref_rec.get("lock"), ours.get("lock"))
            if diff:
                causes.append("software versions differ: " + "; ".join(diff))
        elif ref_rec["action"] == "benchmark" and ref_rec.get("metrics"):
            m0, m1 = ref_rec["metrics"], (ours or {}).get("metrics") or {}
            row = {"scenario": m0.get("scenario")}
            for key, path in (("p50_ns", ("latency_ns", "p50")), ("p99_ns", ("latency_ns", "p99")),
                              ("queries_per_s", ("throughput", "queries_per_s"))):
                a, b = (m0.get(path[0]) or {}).get(path[1]), (m1.get(path[0]) or {}).get(path[1])
                row[key] = {"reference": a, "here": b, "ratio": (b / a) if a and b else None}
            performance.append(row)
    failed = [c for c in checks if not c["ok"]]
    outcome = "PASS" if checks and not failed else ("FAIL" if failed else "NO-REFERENCE")
    return {"outcome": outcome, "checks": checks, "likely_causes": causes if failed else [], "performance": performance}


def reproduce(source: str, offline: bool = False, output_dir: str | Path | None = None, trust: bool = False) -> dict:
    """init + the declared actions + a comparison with the reference results."""
    ready = init(source, offline=offline, trust=trust)
    ref = ready["solution"]
    sol = catalog.show(ref, verify=False)
    reference = _reference_results(ready.get("archive"), ref)
    not_stored = None
    try:
        here = run_declared(ref, output_dir=output_dir)
    except NotStored as exc:  # the runs happened: judge them, then say they were not kept
        here, not_stored = exc.records, exc
    model = catalog.show(sol["meta"]["model"], verify=False, prefer_repo=sol["repo"])
    expected = {**(model["meta"].get("expected") or {}), **(sol["meta"].get("expected") or {})}
    report = compare(reference, here, expected)
    if not reference:  # no reference results: judge accuracy against the declared expectations
        report = _against_expected(here, expected)
    report.update({
        "solution": ref, "init": ready, "results": [r["uid"] for r in here],
        "reference_results": [r.get("uid") for r in reference],
        "platforms": {"reference": platform_description((reference[0] if reference else {}).get("platform")) if reference else None,
                      "here": platform_description(here[0].get("platform") if here else None)},
        "failed_runs": [{"action": r["action"], "error": (r.get("error") or {}).get("message")} for r in here if r["status"] != "ok"],
    })
    if report["failed_runs"]:
        report["outcome"] = "FAIL"
    report["not_stored"] = {"message": not_stored.message, "hint": not_stored.hint, "kept": not_stored.kept} if not_stored else None
    return report


def _against_expected(here: list[dict], expected: dict) -> dict:
    checks = []
    for r in here:
        for c in (r.get("validation") or {}).get("checks") or []:
            if c.get("expected") is not None:
                checks.append({"metric": c["metric"], "reference": c["expected"], "here": c["value"], "allowed": c["allowed"], "ok": c["ok"]})
    failed = [c for c in checks if not c["ok"]]
    perf = [{"scenario": r["metrics"]["scenario"], "p50_ns": {"reference": None, "here": r["metrics"]["latency_ns"]["p50"], "ratio": None}}
            for r in here if r["action"] == "benchmark" and r.get("metrics")]
    return {"outcome": "FAIL" if failed else ("PASS" if checks else "NO-REFERENCE"), "checks": checks,
            "likely_causes": [], "performance": perf}


def _reference_results(archive: dict | None, ref: str) -> list[dict]:
    """The reference results an archive carries (newest first per action)."""
    if not archive:
        return []
    folder = Path(archive["target"]) / "results"
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            out.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            reporter().warning(f"skipped reference result {path}: {exc}")
    return out
