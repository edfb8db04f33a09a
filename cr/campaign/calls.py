"""`cr campaign show|status|run` as calls: what their --json prints."""
from __future__ import annotations


def campaign_show(name: str, jobs: bool = False) -> dict:
    """Campaign name (`cr campaign show NAME [--jobs] --json`): {"ref", "uid", "meta_path",
    "meta", "jobs"}: how many jobs it expands to, or with jobs=True the expanded jobs."""
    from . import spec

    c = spec.load(name)
    expanded = spec.expand(c)
    return {"ref": c.ref, "uid": c.uid, "meta_path": c.meta_path, "meta": c.meta,
            "jobs": [j.to_dict() for j in expanded] if jobs else len(expanded)}


def campaign_report(name: str) -> list[dict]:
    """Per job of campaign name (`cr campaign status NAME --json`): the varied keys, state,
    validation PASS/FAIL, p50, throughput, top-1, attempts, worker, result uids or the error
    (cr.campaign_status's journal joined with the expanded jobs)."""
    from .jobs import joined
    from .runner import campaign_status, expand_campaign

    jobs = expand_campaign(name)  # an unknown or invalid campaign is said first
    return joined(campaign_status(name), jobs)


def campaign_run(name: str, executor: str | None = None, options: dict | None = None, rerun: bool = False,
                 dry_run: bool = False, listener=None, on_start=None) -> list[dict]:
    """Run campaign name's jobs not finished yet (all with rerun) and return what `cr campaign
    run NAME --json` prints: one row per job, as the run ends: its state, attempts, worker,
    result uids or error, "earlier" (finished by a run before), p50, throughput, top-1 and
    the varied keys (cr.campaign.jobs.joined). A job that failed is a row whose state is "failed" or "unplaceable" (the command
    then exits 1 with failure(rows, ...)'s message); nothing is raised for it here.

    dry_run: run nothing; each job's row (its to_dict(), "setting", "state": "to run" or
    "done (earlier)") as `--dry-run --json` prints them. executor and options: as
    cr.run_campaign's (the executor's options are checked first, even for a dry run).
    listener(kind, job, info): progress events; on_start(run, executor): called once the
    jobs are known, before any runs (the CLI's progress line holds the Run). cr.run_campaign
    keeps returning the Run itself (its outcomes and summary())."""
    from . import executors, spec
    from .coordinator import Run
    from .jobs import joined
    from .runner import drive, executor_name

    chosen = executors.make(executor_name(executor, options), dict(options or {}))
    c = spec.load(name)
    jobs = spec.expand(c)
    run = Run(c, jobs, rerun=rerun, listener=listener)
    if dry_run:
        run.close()
        return [{**j.to_dict(), "setting": j.setting, "state": "done (earlier)" if j not in run.todo else "to run"}
                for j in jobs]
    if on_start is not None:
        on_start(run, chosen)
    drive(chosen, run)
    return joined(run.summary(), jobs)


def failure(rows: list[dict], ref: str, name: str):
    """The CRError `cr campaign run` ends with when a job of campaign ref did not succeed (None: all did)."""
    from ..errors import CRError

    bad = [r for r in rows if r["state"] in ("failed", "unplaceable")]
    if not bad:
        return None
    first = bad[0]
    return CRError(f"{len(bad)} job(s) of {ref} did not succeed; first: {first['solution']} on {first['platform']} "
                   f"[{first['setting']}]: {first['state']}: {first.get('error') or first.get('reason')}",
                   hint=f"cr campaign status {name} shows every job; fix and run again (finished jobs are skipped)")
