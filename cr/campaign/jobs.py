"""Running one campaign job on this machine: init + the declared actions.

    outcome = run_here(job, "solution:lenet-digits-onnxruntime@1.0.0")

An outcome is {"status": "ok" | "failed", "records": [result records, their raw latencies
an array('q'); cr.campaign.wire turns them into bytes to cross machines], "error":
{"message", "hint"} | None, "started", "ended"}. A job fails when a run fails or when cr
refuses it (missing software, a bad override): that is a failed job, never an exception.
Nothing here imports Dask: every executor's worker side (cr.campaign.worker) uses it.
(Which machine may run a job: cr.campaign.placement.)
"""
from __future__ import annotations

import time

from ..errors import CRError
from .spec import CampaignJob, run_kwargs


def describe(platform) -> str:
    """A platform (a cr.platform Platform) in the words results use for it
    (cr.results.summary.platform_description), so a worker reads as its results do."""
    from ..results.summary import platform_description

    return platform_description(platform.to_dict())


def run_here(job: CampaignJob, ref: str, init: bool = True, install: bool = False) -> dict:
    """Run the job's actions of solution ref on this machine (after init: idempotent).

    A job whose overrides change the backend, variant, precision or dataset runs in the
    environment of its own target (cr.run.solution.run_declared); software it lacks is
    installed with install=True, else the job fails naming it (and --install). A validation
    whose outcome is FAIL (its metrics outside the expected tolerances) fails the job."""
    from ..results.record import now
    from ..run import solution
    from ..run.actions import NotStored

    started = now()
    t0 = time.monotonic()
    records: list[dict] = []
    error = None
    try:
        if init:
            solution.init(ref)
        overrides, kw = run_kwargs(job)
        for action in job.actions or [None]:
            try:
                got = solution.run_declared(ref, only=action, overrides=overrides, store=False, install=install, **kw)
            except NotStored as exc:  # store=False: not expected, but the records are what counts
                got = exc.records
            records += got
        records += _sustained_phase(job, ref, overrides, kw, records, install)
    except CRError as exc:
        error = {"message": exc.message, "hint": exc.hint}
    failed = [r for r in records if r.get("status") != "ok"]
    if error is None and failed:
        err = failed[0].get("error") or {}
        error = {"message": f"{failed[0]['action']} failed: {err.get('message')}", "hint": err.get("hint")}
    judged = [r for r in records if r.get("status") == "ok" and verdict(r) == "FAIL"]
    if error is None and judged:
        error = {"message": f"validation FAIL: {failed_checks(judged[0])}",
                 "hint": "the model ran but its accuracy is outside the expected tolerance (cr results show UID lists each check)"}
    return {"status": "failed" if error else "ok", "records": records, "error": error,
            "started": started, "ended": now(), "seconds": round(time.monotonic() - t0, 3)}


def _sustained_phase(job: CampaignJob, ref: str, overrides: dict, kw: dict, records: list, install: bool) -> list:
    """The campaign's sustained phase (its option "sustained", in job.params): the job's
    benchmark again with sustained_s, after a cold benchmark that succeeded; [] otherwise."""
    from ..run import solution
    from ..run.actions import NotStored
    from .spec import SUSTAINED

    phase = job.params.get(SUSTAINED)
    if not phase or not any(r.get("action") == "benchmark" and r.get("status") == "ok" for r in records):
        return []
    bench = {**(overrides.get("benchmark") or {}), **phase}
    bench["timeout_s"] = max(float(bench.get("timeout_s") or 0), phase["sustained_s"] + 600)
    try:
        return solution.run_declared(ref, only="benchmark", overrides={**overrides, "benchmark": bench}, store=False,
                                     install=install, **kw)
    except NotStored as exc:
        return exc.records


def is_sustained(record: dict) -> bool:
    return isinstance((record.get("metrics") or {}).get("sustained"), dict)


def verdict(record: dict) -> str | None:
    """PASS / FAIL of a record's validation against its expectations (None: not judged)."""
    validation = record.get("validation") if isinstance(record.get("validation"), dict) else {}
    parity = record.get("parity") if isinstance(record.get("parity"), dict) else {}
    outcome = validation.get("outcome") or parity.get("outcome")
    return outcome if outcome in ("PASS", "FAIL") else None


def failed_checks(record: dict) -> str:
    """The failed checks of a validation, in words: 'top1 0.5000, expected 0.9875 +/- 0.02'
    (the rule: |value - expected| <= allowed, cr.runtime.actions.infer)."""
    checks = (record.get("validation") or {}).get("checks") or []
    words = []
    for check in checks if isinstance(checks, list) else []:
        if isinstance(check, dict) and check.get("ok") is False:
            try:
                words.append(f"{check['metric']} {float(check['value']):.4f}, expected {float(check['expected']):.4f} "
                             f"+/- {float(check['allowed']):.4g}")
            except (KeyError, TypeError, ValueError):
                words.append(str(check.get("metric") or check))
    return "; ".join(words) or "its validation outcome is FAIL"


def joined(rows: list[dict], jobs: list[CampaignJob], records_of=None) -> list[dict]:
    """The campaign summary's rows (cr campaign run's end table, cr campaign status): each
    row of a job (coordinator summary or status) joined with its benchmark and validate
    records: "varied" ({matrix key: value} the job sets), p50_ns, samples_per_s, top1,
    "validation" (PASS / FAIL against the expectations; None when not judged), and a
    "significance" slot (None here) for a study's paired test of its accuracy against a
    baseline job (cr.results.accuracy, wired by the study report). records_of(row) -> the
    job's records (default: read from the results store by the row's result uids)."""
    from ..errors import CRError
    from .coordinator import key_metrics
    from .spec import is_matrix_key, key_order

    by_id = {j.id: j for j in jobs}
    store = None
    out = []
    for row in rows:
        job = by_id.get(row.get("job"))
        records = records_of(row) if records_of is not None else None
        if records is None:
            records = []
            for uid in row.get("results") or []:
                if store is None:
                    from ..results.store import default_store

                    store = default_store()
                try:
                    records.append(store.get(uid))
                except CRError:
                    pass
        varied = {k: job.overrides[k] for k in sorted(job.overrides, key=key_order) if is_matrix_key(k)} if job else {}
        verdicts = [verdict(r) for r in records if verdict(r) is not None]
        validation = "FAIL" if "FAIL" in verdicts else ("PASS" if verdicts else None)
        bench = [next((r for r in records if r.get("action") == "benchmark" and r.get("status") == "ok"
                       and is_sustained(r) == warm), None) for warm in (False, True)]
        validate = next((r for r in records if r.get("action") == "validate"), None)
        out.append({**row, "varied": varied, **key_metrics([r for r in records if not is_sustained(r)]),
                    "validation": validation, "significance": row.get("significance"),
                    # what the comparisons below need, and no more: thousands of rows hold it at once
                    "_validate": validate if (validate and (validate.get("validation") or {}).get("hits")) else None,
                    "_bench": [_slim(r) for r in bench] if bench[1] is not None else None})
    return _with_significance(_with_sustained(out, store))


def _slim(record: dict | None) -> dict | None:
    """What the sustained comparison reads of a benchmark record: its uid, metrics and raw."""
    return None if record is None else {k: record[k] for k in ("uid", "metrics", "raw", "_latencies") if k in record}


def _with_sustained(rows: list[dict], store=None) -> list[dict]:
    """Rows of a campaign with a sustained phase get "sustained": {"uid", "p50_ns", "verdict",
    "cold_rank", "sustained_rank", "swaps": [the swaps this row is in], "rule"}: the cold and
    sustained rankings of the rows on one platform and repetition, compared by
    cr.results.sustained.compare_rankings (a swap counts only beyond noise in both phases)."""
    from ..results.sustained import compare_rankings

    groups: dict[tuple, list] = {}
    for r in rows:
        bench = r.pop("_bench", None) or [None, None]
        if bench[1] is not None:
            groups.setdefault((r.get("platform"), r.get("repetition")), []).append((r, bench))
    for members in groups.values():
        entries = []
        for r, (cold, warm) in members:
            entries.append({"id": r.get("job"), "label": _label(r),
                            "cold": {"p50_ns": ((cold or {}).get("metrics") or {}).get("latency_ns", {}).get("p50"),
                                     "latencies": _latencies(cold, store)},
                            "sustained": {"p50_ns": warm["metrics"].get("latency_ns", {}).get("p50"),
                                          "latencies": _latencies(warm, store)}})
        ranking = compare_rankings(entries)
        ranks = {x["id"]: x for x in ranking["ranks"]}
        for r, (cold, warm) in members:
            rank = ranks.get(r.get("job")) or {}
            r["sustained"] = {"uid": warm.get("uid"), "p50_ns": warm["metrics"].get("latency_ns", {}).get("p50"),
                              "verdict": warm["metrics"]["sustained"].get("verdict"),
                              "cold_rank": rank.get("cold_rank"), "sustained_rank": rank.get("sustained_rank"),
                              "swaps": [x for x in ranking["swaps"] if r.get("job") in (x["faster_cold"], x["faster_sustained"])],
                              "rule": ranking["rule"]}
    return rows


def _label(row: dict) -> str:
    setting = " ".join(f"{k}={v}" for k, v in (row.get("varied") or {}).items())
    return str(row.get("solution") or "").split(":", 1)[-1] + (f" [{setting}]" if setting else "")


def _latencies(record: dict | None, store=None):
    """A record's raw latencies: carried (a run's "_latencies", inline "raw"), else from the
    results store; None when there are none to read."""
    from array import array

    if record is None:
        return None
    if isinstance(record.get("_latencies"), array):
        return record["_latencies"]
    raw = record.get("raw") if isinstance(record.get("raw"), dict) else {}
    if isinstance(raw.get("latencies_ns"), (array, list)):
        return raw["latencies_ns"]
    try:
        if store is None:
            from ..results.store import default_store

            store = default_store()
        return store.latencies(record)
    except CRError:
        return None


def sustained_lines(rows: list[dict]) -> list[str]:
    """The summary's words on the cold and sustained rankings (nothing without a sustained phase)."""
    marked = [r for r in rows if isinstance(r.get("sustained"), dict)]
    if not marked:
        return []
    seen, counted, within = set(), [], 0
    for r in marked:
        for swap in r["sustained"]["swaps"]:
            key = (swap["faster_cold"], swap["faster_sustained"])
            if key in seen:
                continue
            seen.add(key)
            if swap["counted"]:
                counted.append(swap)
            else:
                within += 1
    if counted:
        head = (f"SUSTAINED: the ranking differs from the cold one: {len(counted)} pair(s) swapped beyond noise: "
                + "; ".join(f"{s['labels'][1]} now ahead of {s['labels'][0]} (its p50 / theirs: cold "
                            f"{s['cold']['ratio']:.2f}, sustained {1 / s['sustained']['ratio']:.2f})" for s in counted))
    else:
        head = "SUSTAINED: the ranking is the cold one" + (f" ({within} swap(s) within noise, not counted)" if within else "")
    lines = [head]
    lines += [f"  {_label(r)}: rank {r['sustained']['cold_rank']} cold, {r['sustained']['sustained_rank']} sustained; "
              f"{r['sustained']['verdict']}" for r in marked]
    lines.append(f"  rule: {marked[0]['sustained']['rule']}")
    return lines


def _with_significance(rows: list[dict]) -> list[dict]:
    """Each row's top-1 against the baseline row's, paired sample by sample
    (cr.results.accuracy.paired: exact McNemar + paired bootstrap), when two or more rows
    have a validation that kept its per-sample hits. The baseline is the first such row (the
    first job of the expansion: every matrix key at its first value). The row's
    "significance" becomes {"baseline": job, "verdict", "delta", "interval", "mcnemar_p",
    "pipeline": [the pipeline steps that differ], "rule"} or {"baseline", "reason"} when the
    two cannot be paired (other samples)."""
    from ..results.accuracy import paired, pipeline_differences

    def strip(rows):
        return [{k: v for k, v in r.items() if k != "_validate"} for r in rows]

    judged = [r for r in rows if r.get("_validate") and ((r["_validate"].get("validation") or {}).get("hits"))]
    if len(judged) < 2:
        return strip(rows)
    base = judged[0]
    for r in judged:
        if r is base:
            r["significance"] = {"baseline": r.get("job"), "verdict": "baseline"}
            continue
        test = paired(base["_validate"], r["_validate"], "top1")
        if test.get("comparable"):
            r["significance"] = {"baseline": base.get("job"), "verdict": test["verdict"], "delta": test["delta"],
                                 "interval": test["interval"], "mcnemar_p": test["mcnemar_p"],
                                 "pipeline": pipeline_differences(base["_validate"], r["_validate"]), "rule": test["rule"]}
        else:
            r["significance"] = {"baseline": base.get("job"), "verdict": "not paired", "reason": test.get("reason")}
    return strip(rows)


def varied_keys(rows: list[dict]) -> list[str]:
    """The matrix keys any row sets, in the jobs' key order: the summary's columns."""
    from .spec import key_order

    return sorted({k for r in rows for k in r.get("varied") or {}}, key=key_order)
