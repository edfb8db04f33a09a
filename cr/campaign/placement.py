"""Placement, whatever the executor: which machine can run which job, and what a machine offers.

    lacking(job.target, platform)            # None, or what platform lacks, in words
    resources(platform)                      # what a worker advertises: slots and labels
    needs(job)                               # what a job asks of a worker
    fit, why = placement(job, workers)       # the workers that can run it, and why the others cannot

A worker offers ``benchmark`` = 1 (one benchmark at a time on a machine), ``gpu`` = its
number of GPUs (a GPU job takes one GPU slot instead of the machine's slot) and one label
per capability (``aarch64``, ``raspberry-pi-4``, ``nvidia-gpu``, ...; quantity LABEL, never
what limits concurrency). cr's scheduler (cr.campaign.cluster) counts these; another maps
them onto its own (Ray custom resources, Slurm GRES and features).

Placement is checked by cr, not left to a scheduler (which may keep a task no worker can
run pending forever): a job no worker matches is reported unplaceable at once, naming
for each worker what it lacks. Nothing here imports a scheduler.
"""
from __future__ import annotations

from .spec import CampaignJob

LABEL = 1000  # quantity of a capability resource: a label, never what limits concurrency


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


def gpu_count(platform) -> int:
    """The GPUs a job can be given one of (CUDA_VISIBLE_DEVICES)."""
    return len([a for a in platform.accelerators if a.vendor in ("nvidia", "amd", "intel")])


def resources(platform) -> dict[str, float]:
    """What a worker on platform advertises: {"benchmark": 1, "gpu": N, capability: LABEL, ...}."""
    gpus = gpu_count(platform)
    res = {"benchmark": 1.0}
    if gpus:
        res["gpu"] = float(gpus)
    for cap in sorted(platform.capabilities()):
        if cap not in res:
            res[cap] = float(LABEL)
    return res


def needs(job: CampaignJob) -> dict[str, int]:
    """What job asks of a worker: one GPU slot or the machine's benchmark slot, and its labels."""
    res = {"gpu": 1} if job.uses_gpu else {"benchmark": 1}
    for cap in job.target.get("requires") or []:
        res.setdefault(cap, 1)
    return res


def slots(workers: dict[str, dict]) -> int:
    """How many jobs the workers run at once (benchmark slots + GPU slots); at least 1."""
    return sum(int(w["resources"].get("benchmark", 0) + w["resources"].get("gpu", 0)) for w in workers.values()) or 1


def placement(job: CampaignJob, workers: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(keys of the workers that can run job, per-worker reasons for the others).

    workers: key (an address) -> {"name", "resources", "platform" (a Platform), "info"
    ({"description": ...})}, as an executor knows its connected workers."""
    fit, why = [], []
    for key, w in sorted(workers.items(), key=lambda kv: kv[1]["name"]):
        reason = lacking(job.target, w["platform"])
        if reason is None and job.uses_gpu and not w["resources"].get("gpu"):
            reason = "has no GPU slot"
        if reason is None:
            fit.append(key)
        else:
            why.append(f"{w['name']} ({w['info'].get('description')}) {reason}")
    return fit, why


def unplaceable_reason(job: CampaignJob, why: list[str]) -> str:
    """The reason a job is unplaceable, from placement()'s per-worker reasons."""
    need = ", ".join(job.target.get("requires") or []) or job.target.get("marker") or "any machine"
    return f"no connected worker can run platform {job.platform!r} (needs {need}): " + ("; ".join(why) or "no worker is connected")
