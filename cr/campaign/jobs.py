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


def run_here(job: CampaignJob, ref: str, init: bool = True) -> dict:
    """Run the job's actions of solution ref on this machine (after init: idempotent)."""
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
                got = solution.run_declared(ref, only=action, overrides=overrides, store=False, **kw)
            except NotStored as exc:  # store=False: not expected, but the records are what counts
                got = exc.records
            records += got
    except CRError as exc:
        error = {"message": exc.message, "hint": exc.hint}
    failed = [r for r in records if r.get("status") != "ok"]
    if error is None and failed:
        err = failed[0].get("error") or {}
        error = {"message": f"{failed[0]['action']} failed: {err.get('message')}", "hint": err.get("hint")}
    return {"status": "failed" if error else "ok", "records": records, "error": error,
            "started": started, "ended": now(), "seconds": round(time.monotonic() - t0, 3)}
