"""The library's campaign operations (re-exported by the facade as cr.expand_campaign,
cr.run_campaign and cr.campaign_status); the CLI is a thin layer over the same calls.

    jobs = expand_campaign("digits-sweep")
    run = run_campaign("digits-sweep")                                  # this machine
    run = run_campaign("digits-sweep", scheduler="tcp://127.0.0.1:8786", retries=1)
    run = run_campaign("digits-sweep", executor="ray", options={"address": "auto"})
    run.summary(), run.failed_any()
    campaign_status("digits-sweep")                                     # per job, from the journal

Executors are found by name in the entry-point group cr.executors (cr.campaign.executors).
"""
from __future__ import annotations

from . import executors, spec
from .coordinator import Run, status

# run_campaign's keyword arguments of before executors were plugins: the dask executor's options
_DASK_KEYWORDS = ("scheduler", "retries", "wait_for_workers", "timeout", "connect_timeout", "security")


def expand_campaign(name: str) -> list[spec.CampaignJob]:
    """The campaign's jobs, in their deterministic order (CRError for a bad campaign)."""
    return spec.expand(spec.load(name))


def executor_name(executor: str | None, options: dict | None = None) -> str:
    """The executor to use: the one named, else dask when a scheduler is given, else local."""
    return executor or ("dask" if (options or {}).get("scheduler") else executors.DEFAULT)


def drive(executor, run: Run) -> Run:
    """executor.run(run), then the journal closed; on Ctrl-C the jobs cut short recorded
    (run.interrupted()) before KeyboardInterrupt goes on: a later run resumes."""
    try:
        executor.run(run)
    except KeyboardInterrupt:
        run.interrupted()
        raise
    finally:
        run.close()
    return run


def run_campaign(name: str, executor: str | None = None, scheduler: str | None = None, rerun: bool = False,
                 retries: int | None = None, wait_for_workers: int | None = None, timeout: float | None = None,
                 connect_timeout: float | None = None, security=None, listener=None, prepared: Run | None = None,
                 options: dict | None = None) -> Run:
    """Run the jobs not finished yet (all with rerun); the Run holds every job's state, result
    uids and key metrics (run.outcomes, run.summary()); the records are in the results store.

    executor: a registered executor's name (cr.campaign.executors.available()): "local"
    (the default), "dask" (the default when scheduler is given), or a plugin's; options:
    its options (its OPTIONS; unknown ones are refused). scheduler, retries,
    wait_for_workers, timeout, connect_timeout and security (a cr.campaign.link.Tls, which
    cr.campaign.link.security builds from files) are the dask executor's options,
    kept as keywords. listener(kind, job, info): progress events (started, done, failed,
    retry, unplaceable, skipped). KeyboardInterrupt leaves the journal consistent; a later
    run resumes.
    """
    given = dict(options or {})
    legacy = dict(zip(_DASK_KEYWORDS, (scheduler, retries, wait_for_workers, timeout, connect_timeout, security)))
    given.update({k: v for k, v in legacy.items() if v is not None})
    chosen = executors.make(executor_name(executor, given), given)
    run = prepared
    if run is None:
        campaign = spec.load(name)
        run = Run(campaign, spec.expand(campaign), rerun=rerun, listener=listener)
    return drive(chosen, run)


def campaign_status(name: str) -> list[dict]:
    """Per job: platform, state, attempts, worker, result uids or error (cr campaign status)."""
    campaign = spec.load(name)
    return status(campaign, spec.expand(campaign))
