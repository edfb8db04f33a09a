"""The summary of a result record: what the index keeps per result, list shows and CSV holds.

Every value is read defensively (a record imported from elsewhere may lack a part or hold
another type there): what is missing or of the wrong type is None, never an exception.
"""
from __future__ import annotations

import datetime as _dt
import re

# Summary columns, in the order `cr results export --format csv` writes them.
COLUMNS = (
    "uid", "action", "status", "started", "ended", "solution", "model", "dataset", "backend",
    "variant", "precision", "platform", "platform_description", "scenario", "p50_ns", "p99_ns",
    "throughput_qps", "throughput_sps", "top1", "top5", "outcome", "validity", "samples", "error", "file",
)


def _get(data, *path, kind=None):
    """data[path[0]][path[1]]... or None; with kind, None unless the value is of that type."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    if kind is None:
        return data
    if isinstance(data, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        return None  # JSON true is not a number
    return data if isinstance(data, kind) else None


def _number(data, *path) -> float | None:
    value = _get(data, *path, kind=(int, float))
    return float(value) if value is not None else None


def _component(record: dict, kind: str) -> tuple[str | None, str | None]:
    """(ref, name) of the record's first component of kind."""
    for c in _get(record, "components", kind=list) or []:
        if isinstance(c, dict) and c.get("kind") == kind:
            ref, name = c.get("ref"), c.get("name")
            return (ref if isinstance(ref, str) else None), (name if isinstance(name, str) else None)
    return None, None


_CPU_NOISE = re.compile(r"\((?:R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@\s*[\d.]+\s*[GM]Hz|\b\d+-Core\b", re.IGNORECASE)


def short_cpu(model: str | None) -> str | None:
    """'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz' -> 'Intel Xeon Gold 6338'."""
    if not model:
        return None
    return " ".join(_CPU_NOISE.sub(" ", model).split()) or model


def platform_description(platform) -> str:
    """'linux/x86_64 Intel Xeon + NVIDIA H200': os/arch, board or CPU, accelerators."""
    if not isinstance(platform, dict):
        return ""
    os_arch = "/".join(x for x in (_get(platform, "os", kind=str), _get(platform, "arch", kind=str)) if x)
    what = _get(platform, "board", kind=str) or short_cpu(_get(platform, "cpu", "model", kind=str))
    accelerators = [a.get("name") for a in _get(platform, "accelerators", kind=list) or []
                    if isinstance(a, dict) and isinstance(a.get("name"), str)]
    text = " ".join(x for x in (os_arch, what) if x)
    if accelerators:
        text += " + " + ", ".join(accelerators)
    return text


def utc(timestamp: object) -> str | None:
    """An ISO 8601 timestamp as UTC 'YYYY-MM-DDTHH:MM:SS.mmmZ' (sortable as text); None if unreadable."""
    if not isinstance(timestamp, str):
        return None
    try:
        moment = _dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.timezone.utc)
    moment = moment.astimezone(_dt.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def since_utc(text: str) -> str | None:
    """A --since value as a UTC timestamp like utc() gives: an ISO date or date-time, in
    local time unless it names its zone; None if unreadable."""
    try:
        moment = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.astimezone()  # naive: local time
    return utc(moment.isoformat())


def summarize(record: dict) -> dict:
    """The summary columns of a (valid) record, without 'file' (the store adds it)."""
    solution, _ = _component(record, "solution")
    model, _ = _component(record, "model")
    dataset, _ = _component(record, "dataset")
    pipeline = _get(record, "pipeline", kind=dict) or {}
    config = _get(record, "config", kind=dict) or {}
    metrics = _get(record, "metrics", kind=dict) or {}
    validation = _get(record, "validation", kind=dict) or {}
    error = _get(record, "error", kind=dict)
    outcome = _get(validation, "outcome", kind=str) or _get(record, "parity", "outcome", kind=str)
    samples = _get(metrics, "latency_ns", "count", kind=int)
    if samples is None:
        samples = _get(record, "raw", "count", kind=int)
    return {
        "uid": record.get("uid"),
        "action": record.get("action"),
        "status": record.get("status"),
        "started": utc(record.get("started")),
        "ended": utc(record.get("ended")),
        "solution": solution,
        "model": model,
        "dataset": dataset,
        "backend": _get(record, "backend", "name", kind=str),
        "variant": _get(pipeline, "variant", kind=str) or _get(config, "variant", kind=str),
        "precision": _get(pipeline, "precision", kind=str) or _get(config, "precision", kind=str),
        "platform": _get(record, "platform", "fingerprint", kind=str),
        "platform_description": platform_description(record.get("platform")),
        "scenario": _get(metrics, "scenario", kind=str) or _get(config, "scenario", kind=str),
        "p50_ns": _number(metrics, "latency_ns", "p50"),
        "p99_ns": _number(metrics, "latency_ns", "p99"),
        "throughput_qps": _number(metrics, "throughput", "queries_per_s"),
        "throughput_sps": _number(metrics, "throughput", "samples_per_s"),
        "top1": _number(validation, "top1"),
        "top5": _number(validation, "top5"),
        "outcome": outcome,
        "validity": _get(metrics, "validity", kind=str),
        "samples": samples,
        "error": _get(error, "message", kind=str) if error else None,
    }
