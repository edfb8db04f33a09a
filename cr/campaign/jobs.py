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
        out.append({**row, "varied": varied, **key_metrics(records), "validation": validation,
                    "significance": row.get("significance"), "_validate": next((r for r in records if r.get("action") == "validate"), None)})
    return _with_significance(out)


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
