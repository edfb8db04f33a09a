"""`cr campaign show|status` as calls: what their --json prints."""
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
