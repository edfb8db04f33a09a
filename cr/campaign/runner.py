"""The library's campaign operations (re-exported by the facade as cr.expand_campaign,
cr.run_campaign and cr.campaign_status); the CLI is a thin layer over the same calls.

    jobs = expand_campaign("digits-sweep")
    run = run_campaign("digits-sweep")                                  # this machine
    run = run_campaign("digits-sweep", scheduler="tcp://127.0.0.1:8786", retries=1)
    run.summary(), run.failed_any()
    campaign_status("digits-sweep")                                     # per job, from the journal
"""
from __future__ import annotations

from ..errors import CRError
from . import spec
from .coordinator import Run, status


def expand_campaign(name: str) -> list[spec.Job]:
    """The campaign's jobs, in their deterministic order (CRError for a bad campaign)."""
    return spec.expand(spec.load(name))


def run_campaign(name: str, executor: str | None = None, scheduler: str | None = None, rerun: bool = False,
                 retries: int = 2, wait_for_workers: int = 0, timeout: float = 60.0, connect_timeout: float = 10.0,
                 security=None, listener=None, prepared: Run | None = None) -> Run:
    """Run the jobs not finished yet (all with rerun); the Run holds every outcome.

    executor: "local" (default) or "dask" (the default when scheduler is given);
    security: a distributed.Security (cr.campaign.cluster.security builds one from files);
    listener(kind, job, info): progress events (started, done, failed, retry, unplaceable,
    skipped). KeyboardInterrupt leaves the journal consistent; a later run resumes.
    """
    executor = executor or ("dask" if scheduler else "local")
    if executor not in ("local", "dask"):
        raise CRError(f"unknown executor {executor!r}", hint="local or dask")
    if executor == "dask" and not scheduler:
        raise CRError("the dask executor needs a scheduler address", hint="start one with cr scheduler; it prints its address")
    run = prepared
    if run is None:
        campaign = spec.load(name)
        run = Run(campaign, spec.expand(campaign), rerun=rerun, listener=listener)
    if executor == "local":
        from .local import run_local

        run_local(run)
    else:
        from .dask_executor import run_dask

        run_dask(run, scheduler, security, retries=retries, wait_for_workers=wait_for_workers, timeout=timeout,
                 connect_timeout=connect_timeout)
    return run


def campaign_status(name: str) -> list[dict]:
    """Per job: platform, state, attempts, worker, result uids or error (cr campaign status)."""
    campaign = spec.load(name)
    return status(campaign, spec.expand(campaign))
