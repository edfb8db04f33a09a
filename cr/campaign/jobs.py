"""Running one campaign job on this machine: the platform check, init + the declared actions.

    reason = lacking(job.target, platform)     # None when the platform can run the job
    outcome = run_here(job, "solution:lenet-digits-onnxruntime@1.0.0")

An outcome is {"status": "ok" | "failed", "records": [result records as JSON], "error":
{"message", "hint"} | None, "started", "ended"}. A job fails when a run fails or when cr
refuses it (missing software, a bad override): that is a failed job, never an exception.
Nothing here imports Dask: the local executor and the worker's job function both use it.
"""
from __future__ import annotations

import time

from ..errors import CRError
from .spec import Job, run_kwargs


def lacking(target: dict, platform) -> str | None:
    """What platform (a cr.platform Platform) lacks for target, in words; None when it matches."""
    from ..software.recipe import marker_holds

    missing = [c for c in target.get("requires") or [] if c not in platform.capabilities()]
    problems = []
    if missing:
        problems.append("lacks " + ", ".join(missing))
    marker = target.get("marker")
    if marker and not marker_holds(marker, platform.markers()):
        problems.append(f"marker {marker!r} is false (platform_machine={platform.markers().get('platform_machine')!r})")
    return "; ".join(problems) or None


def describe(platform) -> str:
    """A platform (a cr.platform Platform) in the words results use for it
    (cr.results.summary.platform_description), so a worker reads as its results do."""
    from ..results.summary import platform_description

    return platform_description(platform.to_dict())


def run_here(job: Job, ref: str, init: bool = True) -> dict:
    """Run the job's actions of solution ref on this machine (after init: idempotent)."""
    from ..results.record import now, to_json
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
    return {"status": "failed" if error else "ok", "records": [to_json(r) for r in records], "error": error,
            "started": started, "ended": now(), "seconds": round(time.monotonic() - t0, 3)}
