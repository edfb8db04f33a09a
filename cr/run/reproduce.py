"""Reproduction: a solution made ready here, its declared actions run, and the results judged
against the reference results an archive carries (or the declared expectations).

    report = reproduce("lenet-digits-onnxruntime-1.0.0.cr.zip")   # init + run + compare
    report["outcome"]   # PASS | FAIL

Each reference is compared with the run here of the same configuration
(cr.results.summary.config_key: action, scenario, threads, batch size, backend options,
variant, ...); configurations without a counterpart are listed in report["unmatched"].
What must match is judged: accuracy within its tolerance (declared; else exact on an
identical software stack, else DEFAULT_TOLERANCE), and performance only where the solution
declares a tolerance for it (expected {"p50_ns": {"rel": 0.5}}). Everything else about
performance is shown beside the reference machine's. A miss names its likely cause from
the recorded pipelines, model hashes, variants and software versions. A solution with
nothing to compare (benchmark only, no reference) passes when every run succeeds.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..events import reporter
from ..results.summary import config_differences, config_key, config_label, describe_difference, platform_description
from ..store import catalog
from .actions import NotStored
from .solution import init, run_declared

ACCURACY = ("top1", "top5", "recall", "precision", "mean_iou", "detections", "ap", "ap50", "ap75", "coco_recall")
# The accuracy tolerance when the solution and model declare none and the software stack
# differs from the reference's (an identical stack must reproduce exactly): a few samples
# in a thousand (a kernel's rounding may flip a near tie), 1% of a detection count.
DEFAULT_TOLERANCE = {"top1": {"abs": 0.005}, "top5": {"abs": 0.005}, "recall": {"abs": 0.005},
                     "precision": {"abs": 0.005}, "mean_iou": {"abs": 0.005}, "detections": {"rel": 0.01},
                     "ap": {"abs": 0.005}, "ap50": {"abs": 0.005}, "ap75": {"abs": 0.005}, "coco_recall": {"abs": 0.005}}
# (key, where in metrics, which way is better): shown for every benchmark, judged only
# where the solution's "expected" declares a tolerance for the key.
PERFORMANCE = (
    ("p50_ns", ("latency_ns", "p50"), "lower"),
    ("p99_ns", ("latency_ns", "p99"), "lower"),
    ("queries_per_s", ("throughput", "queries_per_s"), "higher"),
    ("samples_per_s", ("throughput", "samples_per_s"), "higher"),
)
_EPS = 1e-9


def _step_diff(theirs: list, ours: list, stage: str) -> list[str]:
    out = []
    for i in range(max(len(theirs), len(ours))):
        a = theirs[i] if i < len(theirs) else None
        b = ours[i] if i < len(ours) else None
        if a != b:
            step = b if isinstance(b, dict) else a if isinstance(a, dict) else {}
            op = step.get("op", "?")
            out.append(f"{stage} step {i} ({op}) differs: reference {json.dumps(a, sort_keys=True)}, here {json.dumps(b, sort_keys=True)}")
    return out


def _software_diff(theirs: dict | None, ours: dict | None) -> list[str]:
    a = _stack({"lock": theirs}) or {}
    b = _stack({"lock": ours}) or {}
    return [f"{n} {a[n]} (reference) vs {b[n]} (here)" for n in sorted(a, key=str) if n in b and a[n] != b[n] and n != "python"]


def _number(data, *path):
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return float(data) if isinstance(data, (int, float)) and not isinstance(data, bool) else None


def _stack(record: dict) -> dict | None:
    """{software name: version} of the lock a record ran in; None when it names none."""
    lock = record.get("lock")
    if not isinstance(lock, dict) or not isinstance(lock.get("software"), list):
        return None
    return {s.get("name"): s.get("version") for s in lock["software"] if isinstance(s, dict)}


def _stack_difference(theirs: dict, ours: dict) -> str:
    """'onnxruntime 1.20.1 vs 1.32.0' (reference first), for every name that differs."""
    names = sorted(set(theirs) | set(ours), key=str)
    return ", ".join(f"{n} {theirs.get(n) or 'absent'} vs {ours.get(n) or 'absent'}" for n in names if theirs.get(n) != ours.get(n))


def accuracy_tolerance(metric: str, expected: dict, ref_rec: dict, ours: dict) -> dict:
    """{"abs", "rel", "basis"} of one accuracy check: the declared tolerance (an abs or rel in
    the solution's or model's expected), else exact when both ran on the same software
    (name -> version of their locks), else DEFAULT_TOLERANCE, saying why."""
    tol = expected.get(metric) if isinstance(expected.get(metric), dict) else {}
    if tol.get("abs") is not None or tol.get("rel") is not None:
        return {"abs": tol.get("abs"), "rel": tol.get("rel"), "basis": "declared"}
    theirs, here = _stack(ref_rec), _stack(ours)
    if theirs is not None and theirs == here:
        return {"abs": 0.0, "rel": None, "basis": "identical stack: exact"}
    default = DEFAULT_TOLERANCE.get(metric, {"abs": 0.0})
    if theirs is None or here is None:
        why = f"the {'reference' if theirs is None else 'run here'} records no software stack"
    else:
        why = f"stacks differ ({_stack_difference(theirs, here)})"
    return {"abs": default.get("abs"), "rel": default.get("rel"), "basis": f"default: {why}"}


def _allowed(tol: dict, base: float) -> float:
    return max(float(tol.get("abs") or 0.0), float(tol.get("rel") or 0.0) * abs(base))


def _accuracy_checks(ref_rec: dict, ours: dict, expected: dict, label: str) -> tuple[list[dict], list[str]]:
    """The accuracy checks of a validate run against its reference, and the likely causes of a miss."""
    checks = []
    for n in ACCURACY:
        want = _number(ref_rec, "validation", n)
        if want is None:
            continue
        got = _number(ours, "validation", n)
        tol = accuracy_tolerance(n, expected, ref_rec, ours)
        allowed = _allowed(tol, want)
        ok = got is not None and abs(got - want) <= allowed + _EPS
        checks.append({"metric": n, "config": label, "reference": want, "here": got, "allowed": allowed,
                       "tolerance": tol, "reference_uid": ref_rec.get("uid"), "here_uid": ours.get("uid"), "ok": ok})
    causes = []
    if any(not c["ok"] for c in checks):
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
    return checks, causes


def _performance_row(ref_rec: dict | None, ours: dict, expected: dict, label: str) -> tuple[dict, list[str]]:
    """One benchmark's figures beside its reference's (ratio here / reference), each judged
    where a performance tolerance is declared; the misses, worded."""
    m0, m1 = ((ref_rec or {}).get("metrics") or {}), (ours.get("metrics") or {})
    row = {"action": "benchmark", "scenario": m1.get("scenario") or m0.get("scenario"), "config": label,
           "reference_uid": (ref_rec or {}).get("uid"), "here_uid": ours.get("uid")}
    misses = []
    for key, path, better in PERFORMANCE:
        a, b = _number(m0, *path), _number(m1, *path)
        cell = {"reference": a, "here": b, "ratio": (b / a) if a and b else None}
        tol = expected.get(key) if isinstance(expected.get(key), dict) else None
        if tol:
            base = float(tol["value"]) if isinstance(tol.get("value"), (int, float)) else a
            cell["tolerance"] = {"abs": tol.get("abs"), "rel": tol.get("rel"), "value": tol.get("value"), "basis": "declared"}
            if base is None or b is None:
                cell["ok"] = None  # nothing to judge against (no reference, no declared value)
            else:
                allowed = _allowed(tol, base)
                worse = (b - base) if better == "lower" else (base - b)
                cell["allowed"] = allowed
                cell["ok"] = worse <= allowed + _EPS
                if not cell["ok"]:
                    against = "the declared value" if isinstance(tol.get("value"), (int, float)) else "the reference"
                    misses.append(f"{label} {key} {b:.6g} vs {base:.6g} ({against}): {'slower' if better == 'lower' else 'lower'} "
                                  f"than the declared tolerance allows ({allowed:.6g})")
        row[key] = cell
    return row, misses


def _newest_per_config(records: list[dict]) -> dict:
    """{config_key: record}: the newest record of each configuration (later in the list wins a tie)."""
    out: dict = {}
    for r in records:
        key = config_key(r)
        if key not in out or str(r.get("started") or "") >= str(out[key].get("started") or ""):
            out[key] = r
    return out


# Configuration fields a run fills in from its outcome (a failed run has none of them).
_FROM_OUTCOME = {"precision", "batch_size"}


def _nearest(record: dict, candidates: list[dict]) -> str:
    """How record's configuration differs from the closest candidate of the same action."""
    same = [c for c in candidates if c.get("action") == record.get("action")]
    if not same:
        return f"no {record.get('action')} run here"
    diffs, best = min(((config_differences(record, c), c) for c in same), key=lambda pair: len(pair[0]))
    if best.get("status") != "ok" and all(d[0] in _FROM_OUTCOME for d in diffs):
        return f"its run here failed ({best.get('uid')})"
    return "closest run here differs: " + "; ".join(describe_difference(*d) for d in diffs)


def compare(reference: list[dict], here: list[dict], expected: dict, latencies=None) -> dict:
    """The reproduction report: each reference compared with the run here of the same
    configuration: accuracy must match (checks), performance is shown (and judged where
    a tolerance is declared); configurations on one side only are listed in "unmatched".
    latencies (record -> array | None) gives raw samples: each matched benchmark row then
    carries "significance" (cr.results.significance.compare_pair, with likely causes)."""
    refs = _newest_per_config([r for r in reference if r.get("status") == "ok"])
    ours_by_key = _newest_per_config([r for r in here if r.get("status") == "ok"])
    checks, performance, causes, unmatched, perf_misses, notes = [], [], [], [], [], []
    matched, accuracy_refs = set(), []
    for key, ref_rec in refs.items():
        action = ref_rec.get("action")
        label = config_label(ref_rec)
        ours = ours_by_key.get(key)
        if action == "validate":
            accuracy_refs.append((ref_rec, label))
        if ours is None:
            # the closest run here: a failed one, or one without a reference of its own
            spare = [r for r in here if r.get("status") != "ok"] + [r for k, r in ours_by_key.items() if k not in refs]
            unmatched.append({"side": "reference", "uid": ref_rec.get("uid"), "action": action, "config": label,
                              "detail": _nearest(ref_rec, spare or here)})
            continue
        matched.add(key)
        if action == "validate":
            found, why = _accuracy_checks(ref_rec, ours, expected, label)
            checks += found
            causes += [c for c in why if c not in causes]
        elif action == "benchmark":
            row, misses = _performance_row(ref_rec, ours, expected, label)
            row["significance"] = _significance(ref_rec, ours, latencies)
            performance.append(row)
            perf_misses += misses
    for key, ours in ours_by_key.items():
        if key in matched:
            continue
        label = config_label(ours)
        if reference:
            judged = "; judged against the declared expectations" if ours.get("action") == "validate" else ""
            unmatched.append({"side": "here", "uid": ours.get("uid"), "action": ours.get("action"), "config": label,
                              "detail": "no reference result of this configuration" + judged})
        if ours.get("action") == "validate":  # judged against the declared expectations instead
            checks += _declared_checks(ours, label)
        elif ours.get("action") == "benchmark" and ours.get("metrics"):
            row, misses = _performance_row(None, ours, expected, label)
            performance.append(row)
            perf_misses += misses
    if accuracy_refs and not any(c.get("reference_uid") for c in checks):
        ref_rec, label = accuracy_refs[0]
        checks.append({"metric": "validate", "config": label, "reference": None, "here": None, "allowed": None,
                       "tolerance": None, "reference_uid": ref_rec.get("uid"), "here_uid": None, "ok": False,
                       "detail": f"no successful validate run here of the reference's configuration ({_nearest(ref_rec, here)})"})
    for u in unmatched:
        where = "the reference" if u["side"] == "reference" else "this run"
        notes.append(f"{u['action']} {u['config']} ({where} {u['uid']}): {u['detail']}"
                     + ("" if "judged" in u["detail"] else "; not compared with a reference"))
    order = {r.get("uid"): i for i, r in enumerate(here)}  # as the solution declares its actions
    checks.sort(key=lambda c: order.get(c.get("here_uid"), len(order)))
    performance.sort(key=lambda p: order.get(p.get("here_uid"), len(order)))
    failed = [c for c in checks if c["ok"] is False]
    outcome = "FAIL" if failed or perf_misses else "PASS"
    return {"outcome": outcome, "checks": checks, "likely_causes": (causes if failed else []) + perf_misses,
            "performance": performance, "unmatched": unmatched, "notes": notes}


def _significance(ref_rec: dict, ours: dict, latencies) -> dict:
    """The run here against the reference: bootstrap verdicts and likely causes."""
    from ..results.causes import likely_causes, state_notes
    from ..results.significance import compare_pair, settings

    lat = latencies or (lambda record: None)
    pair = compare_pair(ref_rec, ours, lat(ref_rec), lat(ours))
    pair["likely_causes"] = likely_causes(ref_rec, ours, pair) if pair["beyond_noise"] else []
    pair["notes"] = state_notes(ref_rec, ours)
    return {**settings(), **pair}


def _raw_latencies(folders: dict):
    """record -> its raw latencies, or None: inline ones, a side file beside a reference
    record (folders: uid -> the folder it was read from), or the results store's."""
    from ..errors import CRError
    from ..results.latencies import int64s, read_side
    from ..results.store import default_store

    def read(record: dict):
        raw = record.get("raw")
        uid = record.get("uid")
        if not isinstance(raw, dict):
            return None
        try:
            if raw.get("latencies_ns") is not None:
                return int64s(raw["latencies_ns"], f"result {uid}")
            name = raw.get("latencies_ns_file")
            if uid in folders and isinstance(name, str) and "/" not in name and "\\" not in name:
                return read_side(folders[uid] / name, raw, f"result {uid}")
            return default_store().latencies(record)
        except CRError as exc:
            reporter().warning(f"no raw latencies for result {uid}: {exc.message}")
            return None

    return read


def _declared_checks(record: dict, label: str) -> list[dict]:
    """A validate run's own checks against the declared expectations (no reference)."""
    out = []
    for c in (record.get("validation") or {}).get("checks") or []:
        if isinstance(c, dict) and c.get("expected") is not None:
            out.append({"metric": c.get("metric"), "config": label, "reference": c["expected"], "here": c.get("value"),
                        "allowed": c.get("allowed"), "ok": bool(c.get("ok")), "reference_uid": None, "here_uid": record.get("uid"),
                        "tolerance": {"abs": c.get("abs"), "rel": c.get("rel"), "basis": "declared expectation (no reference result)"}})
    return out


def reproduce(source: str, offline: bool = False, output_dir: str | Path | None = None, trust: bool = False) -> dict:
    """init + the declared actions + a comparison with the reference results (compare()).

    outcome PASS when every run succeeded and everything that must match does (with no
    reference results: the declared expectations, else only that every run succeeds)."""
    ready = init(source, offline=offline, trust=trust)
    ref = ready["solution"]
    sol = catalog.show(ref, verify=False)
    folders: dict = {}
    reference = _reference_results(ready.get("archive"), ref, folders)
    not_stored = None
    try:
        here = run_declared(ref, output_dir=output_dir)
    except NotStored as exc:  # the runs happened: judge them, then say they were not kept
        here, not_stored = exc.records, exc
    model = catalog.show(sol["meta"]["model"], verify=False, prefer_repo=sol["repo"])
    expected = {**(model["meta"].get("expected") or {}), **(sol["meta"].get("expected") or {})}
    report = compare(reference, here, expected, _raw_latencies(folders))
    if not reference:
        report["notes"].insert(0, "no reference results: checked that every run succeeds"
                               + (", and accuracy against the declared expectations" if report["checks"] else ""))
    failed_runs = [{"action": r.get("action"), "config": config_label(r), "uid": r.get("uid"),
                    "error": (r.get("error") or {}).get("message")} for r in here if r.get("status") != "ok"]
    report.update({
        "solution": ref, "init": ready, "results": [r.get("uid") for r in here],
        "reference_results": [r.get("uid") for r in reference],
        "platforms": {"reference": platform_description(reference[0].get("platform")) if reference else None,
                      "here": platform_description(here[0].get("platform") if here else None)},
        "failed_runs": failed_runs,
    })
    if failed_runs:
        report["outcome"] = "FAIL"
    report["not_stored"] = {"message": not_stored.message, "hint": not_stored.hint, "kept": not_stored.kept} if not_stored else None
    return report


def _reference_results(archive: dict | None, ref: str, folders: dict | None = None) -> list[dict]:
    """Every reference result an archive carries (compare() takes the newest of each configuration);
    folders (when given) gets uid -> the folder each was read from (its side files are there)."""
    if not archive:
        return []
    folder = Path(archive["target"]) / "results"
    out = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            reporter().warning(f"skipped reference result {path}: {exc}")
            continue
        if isinstance(record, dict):
            out.append(record)
            if folders is not None and isinstance(record.get("uid"), str):
                folders[record["uid"]] = folder
        else:
            reporter().warning(f"skipped reference result {path}: not a result record")
    return out
