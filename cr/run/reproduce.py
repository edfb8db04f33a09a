"""Reproduction: a solution made ready here, its declared actions run, and the results judged
against the reference results an archive carries (or the declared expectations).

    report = reproduce("lenet-digits-onnxruntime-1.0.0.cr.zip")   # init + run + compare
    report["outcome"]   # PASS | FAIL | INCONCLUSIVE
    report["lines"]     # one verdict per configuration, with the rule that decided

Each reference is compared with the run here of the same configuration
(cr.results.summary.config_key: action, scenario, threads, batch size, backend options,
variant, ...); configurations without a counterpart are listed in report["unmatched"].
Each configuration run here gets a line (RULE): its run must succeed; accuracy must match
within its tolerance (declared; else exact on an identical software stack, else
DEFAULT_TOLERANCE), shown on the line of each benchmark of the same stack; performance is
judged only where the solution declares a tolerance (expected {"p50_ns": {"rel": 0.5}}),
against the 95% interval of the ratio here / reference (cr.results.significance.compare_pair,
the one statistic `cr results compare` uses): FAIL when the whole interval lies beyond the
tolerance, PASS when it lies within, INCONCLUSIVE when it straddles the limit. Without a
declared tolerance the comparison (faster / slower / inconclusive) is shown, not judged. A
FAIL or INCONCLUSIVE names its likely causes (cr.results.causes). A solution with nothing to
compare (benchmark only, no reference) passes when every run succeeds.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..events import reporter
from ..results.summary import (config_differences, config_fields, config_key, config_label, describe_difference, duration_text,
                               platform_description, throughput_text)
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


# The performance of a line: (metric, label, which way is better, the metric's key in
# cr.results.significance.compare_pair, the keys of "expected" judged on it). A matched
# pair has the same batch size and samples per query, so samples/s and queries/s have
# the same ratio and share the throughput interval.
LINE_METRICS = (
    ("p50_ns", "p50 latency", "lower", "p50_ns", ("p50_ns",)),
    ("p99_ns", "p99 latency", "lower", "p99_ns", ("p99_ns",)),
    ("throughput", "throughput", "higher", "throughput_qps", ("queries_per_s", "samples_per_s")),
)
RULE = ("a line FAILS when its run here failed, an accuracy metric misses its tolerance, or the whole 95% interval "
        "of a performance ratio (here / reference) lies beyond a declared tolerance; it is INCONCLUSIVE when such an "
        "interval straddles the tolerance's limit (the difference cannot be told from noise); else it PASSES. "
        "Without a declared tolerance performance is shown, not judged; without raw samples a tolerance is judged "
        "on the point ratio, saying so. The outcome: FAIL if any line fails, else INCONCLUSIVE if any is, else PASS")
_WORST = ("FAIL", "INCONCLUSIVE", "PASS")


def figure_text(key: str, value, samples=None) -> str:
    """A figure in the units of the tables: a latency as 290.12 us / 4.76 ms, a rate to 0.1."""
    if value is None:
        return "?"
    if key.endswith("_ns"):
        return f"{value:.0f} ns" if abs(value) < 1e3 else duration_text(value)
    if key == "samples_per_s":
        return f"{value:.1f} samples/s"
    return throughput_text(samples, value)


def _tolerance_words(tol: dict, key: str) -> str:
    """'declared rel 0.5, abs 200.00 us' (the abs in the metric's unit)."""
    parts = [f"rel {tol['rel']:g}" if tol.get("rel") is not None else "",
             f"abs {figure_text(key, float(tol['abs'])) if key.endswith('_ns') else tol['abs']}" if tol.get("abs") is not None else ""]
    return "declared " + ", ".join(p for p in parts if p)


def _worst(verdicts) -> str | None:
    found = [v for v in verdicts if v]
    return min(found, key=_WORST.index) if found else None


def judge_tolerance(tol: dict, key: str, better: str, reference, here, ratio, ci, why_no_interval=None) -> dict:
    """One declared performance tolerance (expected[key], e.g. {"rel": 0.5}) judged:
    {"key", "tolerance", "verdict" (PASS | FAIL | INCONCLUSIVE, or None: nothing to judge
    against), "bound" (the ratio here / reference at the limit), "rule"}.

    Against the reference, allowed = max(abs, rel x reference) gives the limit of the
    ratio, 1 + allowed / reference for a latency (lower is better), 1 - allowed / reference
    for a throughput: FAIL when the whole 95% interval ci lies beyond it, PASS when the
    whole interval lies within it (better than the reference is never a miss),
    INCONCLUSIVE when it straddles it. Without an interval (why_no_interval) and against a
    declared "value" the point figure is judged, and the rule says so."""
    lower = better == "lower"
    tolerance = {"abs": tol.get("abs"), "rel": tol.get("rel"), "value": tol.get("value"), "basis": "declared"}
    out = {"key": key, "tolerance": tolerance, "verdict": None, "bound": None, "rule": ""}
    words = _tolerance_words(tol, key)
    value = tol.get("value")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if here is None:
            out["rule"] = f"{key}: not judged: the run here has no such figure"
            return out
        base = float(value)
        allowed = _allowed(tol, base)
        limit = base + allowed if lower else base - allowed
        worse = (here - base) if lower else (base - here)
        out["verdict"] = "FAIL" if worse > allowed + _EPS * max(1.0, abs(base)) else "PASS"
        out["rule"] = (f"{key} {figure_text(key, here)} against the declared value {figure_text(key, base)} "
                       f"({words}: {'at most' if lower else 'at least'} {figure_text(key, limit)}), judged on the figure "
                       f"(an interval is of the ratio to a reference result)")
        return out
    if reference is None or here is None or reference <= 0 or ratio is None:
        out["rule"] = f"{key}: not judged: no reference figure of this configuration to judge against"
        return out
    allowed = _allowed(tol, reference)
    bound = 1 + allowed / reference if lower else max(0.0, 1 - allowed / reference)
    out["bound"] = bound
    limit = f"ratio {'at most' if lower else 'at least'} {bound:.3f} ({words})"
    if ci:
        lo, hi = ci
        beyond = lo > bound + _EPS if lower else hi < bound - _EPS
        within = hi <= bound + _EPS if lower else lo >= bound - _EPS
        span = f"{key} ratio {ratio:.3f}, 95% interval {lo:.3f} .. {hi:.3f}"
        if beyond:
            out.update(verdict="FAIL", rule=f"{span}: the whole interval lies beyond the limit, {limit}")
        elif within:
            out.update(verdict="PASS", rule=f"{span}: the whole interval lies within the limit, {limit}")
        else:
            out.update(verdict="INCONCLUSIVE", rule=f"{span} straddles the limit, {limit}: the difference cannot be told "
                                                    f"from noise")
        return out
    miss = ratio > bound + _EPS if lower else ratio < bound - _EPS
    out.update(verdict="FAIL" if miss else "PASS",
               rule=f"{key} ratio {ratio:.3f} {'beyond' if miss else 'within'} the limit, {limit}, judged on the point "
                    f"ratio: no interval ({why_no_interval or 'no raw samples'})")
    return out


def _metric_rows(ref_rec: dict | None, ours: dict, expected: dict, sig: dict | None) -> list[dict]:
    """The performance of one line: per LINE_METRICS entry both figures (the ones the interval
    is of), the ratio, the interval, the significance verdict and each declared tolerance judged."""
    m0, m1 = ((ref_rec or {}).get("metrics") or {}), (ours.get("metrics") or {})
    by_metric = {m.get("metric"): m for m in (sig or {}).get("metrics") or []}
    rows = []
    for metric, label, better, sig_key, tol_keys in LINE_METRICS:
        m = by_metric.get(sig_key) or {}
        if metric == "throughput":
            ref_v, here_v = _number(m0, "throughput", "queries_per_s"), _number(m1, "throughput", "queries_per_s")
            ref_s, here_s = _number(m0, "throughput", "samples_per_s"), _number(m1, "throughput", "samples_per_s")
        else:
            q = "p50" if metric == "p50_ns" else "p99"
            ref_v, here_v = _number(m0, "latency_ns", q), _number(m1, "latency_ns", q)
            ref_s = here_s = None
        if m.get("ratio") is not None:  # the figures the ratio and its interval are of
            ref_v, here_v = m.get("baseline"), m.get("value")
        if ref_v is None and here_v is None:
            continue
        ratio = m.get("ratio") if m.get("ratio") is not None else (here_v / ref_v if ref_v and here_v else None)
        why = m.get("why") or (sig or {}).get("missing") or (None if ref_rec else "no reference result")
        row = {"metric": metric, "label": label, "better": better, "reference": ref_v, "here": here_v,
               "reference_text": figure_text(metric, ref_v, ref_s) if ref_rec else None,
               "here_text": figure_text(metric, here_v, here_s), "ratio": ratio, "ci": m.get("ci"),
               "comparison": m.get("verdict"), "why": None if m.get("ci") else why, "judged": []}
        for key in tol_keys:
            tol = expected.get(key)
            if not isinstance(tol, dict):
                continue
            if key == "samples_per_s":
                a, b = ref_s, here_s
                r = (b / a) if a and b else None
            else:
                a, b, r = ref_v, here_v, ratio
            why_short = "its note says why" if (sig or {}).get("missing") else row["why"]
            row["judged"].append(judge_tolerance(tol, key, better, a if ref_rec else None, b, r, m.get("ci"), why_short))
        row["verdict"] = _worst(j["verdict"] for j in row["judged"])
        rows.append(row)
    return rows


def _performance_row(line: dict) -> dict:
    """The line's figures as report["performance"] has carried them: one cell per PERFORMANCE
    key ({"reference", "here", "ratio"}, and "tolerance", "verdict", "ok" where declared)."""
    ref_rec, ours = line.pop("_reference", None), line.pop("_here")
    m0, m1 = ((ref_rec or {}).get("metrics") or {}), (ours.get("metrics") or {})
    row = {"action": "benchmark", "scenario": m1.get("scenario") or m0.get("scenario"), "config": line["config"],
           "reference_uid": line["reference_uid"], "here_uid": line["here_uid"]}
    judged = {j["key"]: j for r in line["performance"] for j in r["judged"]}
    for key, path, _ in PERFORMANCE:
        a, b = _number(m0, *path), _number(m1, *path)
        cell = {"reference": a, "here": b, "ratio": (b / a) if a and b else None}
        if key in judged:
            j = judged[key]
            cell.update(tolerance=j["tolerance"], verdict=j["verdict"], rule=j["rule"],
                        ok={"PASS": True, "FAIL": False}.get(j["verdict"]))
        row[key] = cell
    if line.get("_significance") is not None:
        row["significance"] = line.pop("_significance")
    return row

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


def _stack_key(record: dict) -> tuple:
    """What accuracy depends on (not threads, batch size or scenario): backend, variant, precision."""
    f = config_fields(record)
    return f.get("backend"), f.get("variant"), f.get("precision")


def _line(action: str, label: str, ref_rec: dict | None, ours: dict | None) -> dict:
    return {"config": label, "action": action, "verdict": None, "rule": None,
            "reference_uid": (ref_rec or {}).get("uid"), "here_uid": (ours or {}).get("uid"), "error": None,
            "performance": [], "interval": None, "accuracy": [], "accuracy_from": None,
            "likely_causes": [], "notes": [], "_causes": []}


def _benchmark_line(ref_rec: dict | None, ours: dict, expected: dict, latencies) -> dict:
    line = _line("benchmark", config_label(ref_rec or ours), ref_rec, ours)
    sig = _significance(ref_rec, ours, latencies) if ref_rec else None
    line["performance"] = _metric_rows(ref_rec, ours, expected, sig)
    line.update(_reference=ref_rec, _here=ours, _significance=sig)
    if sig:
        line["interval"] = None if sig.get("missing") else {k: sig.get(k) for k in ("confidence", "method", "resamples", "seed")}
        line["notes"] = list(sig.get("notes") or [])
        if sig.get("missing"):
            line["notes"].insert(0, f"no confidence interval: {sig['missing']}")
        from ..results.causes import likely_causes

        pair = {k: v for k, v in sig.items() if k != "likely_causes"}
        line["_perf_causes"] = [f"{c['cause']}: {c['detail']}" for c in likely_causes(ref_rec, ours, pair)]
    return line


def _validate_line(ref_rec: dict | None, ours: dict, expected: dict) -> dict:
    label = config_label(ref_rec or ours)
    line = _line("validate", label, ref_rec, ours)
    if ref_rec:
        line["accuracy"], line["_causes"] = _accuracy_checks(ref_rec, ours, expected, label)
    else:
        line["accuracy"] = _declared_checks(ours, label)
    line["accuracy_from"] = ours.get("uid")
    line["_validate"] = ours
    return line


def _failed_line(record: dict, ref_rec: dict | None) -> dict:
    line = _line(record.get("action") or "?", config_label(ref_rec or record), ref_rec, record)
    line["error"] = (record.get("error") or {}).get("message") or f"status {record.get('status')}"
    return line


def _counterpart(record: dict, candidates: dict) -> tuple | None:
    """The key of the first candidate whose configuration is record's, allowing for what a
    failed run could not fill in (precision, batch size); None when none is."""
    for key, cand in candidates.items():
        if cand.get("action") == record.get("action") and all(
                d[0] in _FROM_OUTCOME for d in config_differences(cand, record)):
            return key
    return None


def _accuracy_words(c: dict) -> str:
    if c.get("detail"):
        return c["detail"]
    if c.get("here") is None:
        return f"{c['metric']}: no figure here (reference {c['reference']:.4f})"
    allowed = "exactly" if not c.get("allowed") else f"within +- {c['allowed']:.4f}"
    return (f"{c['metric']} {c['here']:.4f} vs {c['reference']:.4f} (off by {abs(c['here'] - c['reference']):.4f}; "
            f"must match {allowed}: {(c.get('tolerance') or {}).get('basis')})")


def _decide(line: dict) -> None:
    """The line's verdict and the rule that decided it (RULE), with the likely causes of a
    FAIL or INCONCLUSIVE."""
    if line["error"]:
        line.update(verdict="FAIL", rule=f"the run here failed: {line['error']}")
        return
    judged = [(r, j) for r in line["performance"] for j in r["judged"] if j["verdict"]]
    bad_acc = [c for c in line["accuracy"] if c["ok"] is False]
    failed = [j["rule"] for _, j in judged if j["verdict"] == "FAIL"]
    unsure = [(r, j) for r, j in judged if j["verdict"] == "INCONCLUSIVE"]
    causes = list(line["_causes"]) if bad_acc else []
    if failed or unsure:
        causes += [c for c in line.get("_perf_causes") or [] if c not in causes]
    for r, j in unsure:
        lo, hi = r["ci"]
        causes.append(f"noise: the {r['label']} interval {lo:.3f} .. {hi:.3f} holds the limit {j['bound']:.3f}; a longer "
                      f"run (min_duration_s, min_queries) or a quieter machine narrows it")
    line["likely_causes"] = causes
    if bad_acc or failed:
        line.update(verdict="FAIL", rule="; ".join([_accuracy_words(c) for c in bad_acc] + failed))
    elif unsure:
        line.update(verdict="INCONCLUSIVE", rule="; ".join(j["rule"] for _, j in unsure))
    else:
        words = ["the run here succeeded"]
        if line["accuracy"]:
            words.append("accuracy within its tolerance (" + ", ".join(c["metric"] for c in line["accuracy"]) + ")")
        words += [j["rule"] for _, j in judged]
        declared = [j for r in line["performance"] for j in r["judged"]]
        if line["performance"] and not judged:
            words.append("performance not judged: " + (
                declared[0]["rule"].split(": not judged: ", 1)[-1] if declared else "no tolerance declared"
                if line["reference_uid"] else "no reference result and no tolerance declared"))
        line.update(verdict="PASS", rule="; ".join(words))


def compare(reference: list[dict], here: list[dict], expected: dict, latencies=None) -> dict:
    """The reproduction report: one line per configuration run here (its reference matched by
    config_key), each PASS, FAIL or INCONCLUSIVE with the rule that decided (RULE):

        {"outcome", "rule", "lines": [{"config", "action", "verdict", "rule", "reference_uid",
          "here_uid", "error", "performance": [{"metric", "label", "better", "reference", "here",
          "reference_text", "here_text", "ratio", "ci", "comparison" (faster | slower |
          inconclusive | None), "why" (no interval), "judged": [judge_tolerance()], "verdict"}],
          "interval", "accuracy": [check], "accuracy_from", "likely_causes", "notes"}],
         "checks", "performance", "likely_causes", "failures" ([{"verdict", "config", "rule"}] of every
         line that did not pass), "unmatched", "notes"}

    A benchmark line carries the accuracy of the validate run of its stack (backend, variant,
    precision: accuracy does not depend on threads, batch or scenario); a validate without
    one has its own line. Configurations on one side only are listed in "unmatched".
    latencies (record -> array | None) gives the raw samples the intervals are drawn from
    (cr.results.significance.compare_pair)."""
    refs = _newest_per_config([r for r in reference if r.get("status") == "ok"])
    ours_by_key = _newest_per_config([r for r in here if r.get("status") == "ok"])
    failed_here = [r for r in here if r.get("status") != "ok"]
    lines, unmatched, notes = [], [], []
    matched, accuracy_refs, failed_refs = set(), [], {}
    for key, ref_rec in refs.items():
        action = ref_rec.get("action")
        label = config_label(ref_rec)
        ours = ours_by_key.get(key)
        if action == "validate":
            accuracy_refs.append((ref_rec, label))
        if ours is None:
            failed = next((f for f in failed_here if _counterpart(f, {key: ref_rec})), None)
            if failed is not None:
                failed_refs[failed.get("uid")] = ref_rec
                continue
            # the closest run here: a failed one, or one without a reference of its own
            spare = failed_here + [r for k, r in ours_by_key.items() if k not in refs]
            unmatched.append({"side": "reference", "uid": ref_rec.get("uid"), "action": action, "config": label,
                              "detail": _nearest(ref_rec, spare or here)})
            continue
        matched.add(key)
        if action == "validate":
            lines.append(_validate_line(ref_rec, ours, expected))
        elif action == "benchmark":
            lines.append(_benchmark_line(ref_rec, ours, expected, latencies))
    for key, ours in ours_by_key.items():
        if key in matched:
            continue
        label = config_label(ours)
        if reference:
            judged = "; judged against the declared expectations" if ours.get("action") in ("validate", "benchmark") else ""
            unmatched.append({"side": "here", "uid": ours.get("uid"), "action": ours.get("action"), "config": label,
                              "detail": "no reference result of this configuration" + judged})
        if ours.get("action") == "validate":  # judged against the declared expectations instead
            lines.append(_validate_line(None, ours, expected))
        elif ours.get("action") == "benchmark" and ours.get("metrics"):
            lines.append(_benchmark_line(None, ours, expected, latencies))
    lines += [_failed_line(f, failed_refs.get(f.get("uid"))) for f in failed_here]
    if accuracy_refs and not any(l["reference_uid"] for l in lines if l["action"] == "validate"):
        ref_rec, label = accuracy_refs[0]
        line = _line("validate", label, ref_rec, None)
        line["accuracy"] = [{"metric": "validate", "config": label, "reference": None, "here": None, "allowed": None,
                             "tolerance": None, "reference_uid": ref_rec.get("uid"), "here_uid": None, "ok": False,
                             "detail": f"no successful validate run here of the reference's configuration "
                                       f"({_nearest(ref_rec, here)})"}]
        lines.append(line)
    for u in unmatched:
        where = "the reference" if u["side"] == "reference" else "this run"
        notes.append(f"{u['action']} {u['config']} ({where} {u['uid']}): {u['detail']}"
                     + ("" if "judged" in u["detail"] else "; not compared with a reference"))
    order = {r.get("uid"): i for i, r in enumerate(here)}  # as the solution declares its actions
    lines.sort(key=lambda l: order.get(l["here_uid"], len(order)))
    checks = [c for l in lines if l["action"] == "validate" for c in l["accuracy"]]  # before the join moves them
    lines = _join_accuracy(lines)
    performance = []
    for line in lines:
        _decide(line)
        if "_here" in line:
            performance.append(_performance_row(line))
        for private in [k for k in line if k.startswith("_")]:
            del line[private]
    verdicts = {l["verdict"] for l in lines}
    outcome = "FAIL" if "FAIL" in verdicts else "INCONCLUSIVE" if "INCONCLUSIVE" in verdicts else "PASS"
    causes, failures = [], []
    for line in lines:
        if line["verdict"] != "PASS":
            failures.append({"verdict": line["verdict"], "config": line["config"], "rule": line["rule"]})
            causes += [c for c in line["likely_causes"] if c not in causes]
    return {"outcome": outcome, "rule": RULE, "lines": lines, "checks": checks, "likely_causes": causes,
            "failures": failures, "performance": performance, "unmatched": unmatched, "notes": notes}


def _join_accuracy(lines: list[dict]) -> list[dict]:
    """Each successful validate line's accuracy onto the benchmark lines of its stack (the
    validate line then has no line of its own); a validate with no such benchmark keeps its own."""
    out = []
    benches = [l for l in lines if l["action"] == "benchmark" and "_here" in l]
    for line in lines:
        if line["action"] != "validate" or line["error"] or not line["here_uid"] or "_validate" not in line:
            out.append(line)
            continue
        stack = _stack_key(line["_validate"])
        joined = [b for b in benches if _stack_key(b["_here"]) == stack]
        for b in joined:
            b["accuracy"] += line["accuracy"]
            b["accuracy_from"] = line["accuracy_from"]
            b["_causes"] += [c for c in line["_causes"] if c not in b["_causes"]]
        if not joined:
            out.append(line)
    return out

def _significance(ref_rec: dict, ours: dict, latencies) -> dict:
    """The run here against the reference: bootstrap verdicts and likely causes."""
    from ..results.causes import likely_causes, state_notes
    from ..results.significance import compare_pair, settings

    lat = latencies or (lambda record: None)
    pair = compare_pair(ref_rec, ours, lat(ref_rec), lat(ours))
    pair["likely_causes"] = likely_causes(ref_rec, ours, pair) if pair.get("beyond_noise") else []
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

    outcome PASS when every line passes, FAIL when one fails, else INCONCLUSIVE (compare()); with
    no reference results the declared expectations are judged, else only that every run succeeds."""
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
