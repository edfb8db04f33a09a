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


# ------------------------------------------------------------------------ configuration

# What identifies a result's configuration (besides its target, the solution or model):
# two results of the same target are comparable, and one is the reference for the other,
# only when every field is equal. Read from record["config"] (the parameters as run),
# record["pipeline"] and record["backend"]; a field a record lacks is None.
CONFIG_FIELDS = (
    "action", "scenario", "engine", "backend", "backend_options", "threads", "batch_size", "samples_per_query",
    "target_qps", "latency_bound_ms", "variant", "precision", "dataset", "split", "inputs", "include_preprocess",
)
_SCENARIO_ONLY = {"samples_per_query": "multi-stream", "target_qps": "server", "latency_bound_ms": "server"}
# How config_label() words each field (scenario and action stand alone).
_LABELS = {"engine": "engine", "backend": "backend", "backend_options": "options", "threads": "threads",
           "batch_size": "batch", "samples_per_query": "samples/query", "target_qps": "target_qps",
           "latency_bound_ms": "bound_ms", "variant": "variant", "precision": "precision", "dataset": "dataset",
           "split": "split", "inputs": "inputs", "include_preprocess": "preprocess"}


def _plain(value):
    """A JSON value in one canonical form (2.0 -> 2, keys sorted), hashable as text for dicts and lists."""
    import json

    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, dict) and not value:
        return None  # no options given is the same as {}
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def config_fields(record) -> dict:
    """{field: value} of CONFIG_FIELDS for a record (defensive: anything missing is None)."""
    config = _get(record, "config", kind=dict) or {}
    pipeline = _get(record, "pipeline", kind=dict) or {}
    backend = _get(record, "backend", kind=dict) or {}
    options = config.get("backend_options") if isinstance(config.get("backend_options"), dict) else backend.get("options")
    values = {
        "action": _get(record, "action", kind=str),
        "scenario": _get(config, "scenario", kind=str) or _get(record, "metrics", "scenario", kind=str),
        "engine": config.get("engine"),
        "backend": _get(backend, "name", kind=str) or _get(config, "backend", kind=str),
        "backend_options": options if isinstance(options, dict) else None,
        "threads": config.get("threads"),
        # as run: the model's own batch size when none was given (a failed run: as given)
        "batch_size": config.get("batch_size") or _get(record, "metrics", "batch_size", kind=int)
        or _get(record, "inputs", "batch_size", kind=int),
        "samples_per_query": config.get("samples_per_query"),
        "target_qps": config.get("target_qps"),
        "latency_bound_ms": config.get("latency_bound_ms"),
        "variant": _get(pipeline, "variant", kind=str) or _get(config, "variant", kind=str),
        "precision": _get(pipeline, "precision", kind=str) or _get(config, "precision", kind=str),
        "dataset": config.get("dataset"),
        "split": config.get("split"),
        "inputs": config.get("inputs"),
        "include_preprocess": config.get("include_preprocess") or None,  # false = not given
    }
    for key, scenario in _SCENARIO_ONLY.items():  # meaningful in one scenario only
        if values["scenario"] != scenario:
            values[key] = None
    return {k: _plain(v) for k, v in values.items()}


def config_key(record) -> tuple:
    """The result's configuration as a hashable tuple (CONFIG_FIELDS order): results with equal
    keys (and the same target) ran the same thing, so one can be the other's reference."""
    fields = config_fields(record)
    return tuple(fields[k] for k in CONFIG_FIELDS)


def config_differences(a, b) -> list[tuple[str, object, object]]:
    """(field, value in a, value in b) of every configuration field that differs."""
    fa, fb = config_fields(a), config_fields(b)
    return [(k, fa[k], fb[k]) for k in CONFIG_FIELDS if fa[k] != fb[k]]


def _word(field: str, value) -> str:
    if field in ("action", "scenario"):
        return str(value)
    return f"{_LABELS.get(field, field)}={value}"


def config_label(record, fields=None) -> str:
    """A short human label of a result's configuration, e.g. 'single-stream threads=2 batch=1'.

    fields: which CONFIG_FIELDS to show (default: the scenario, threads, batch size, any
    engine other than cr's, and the split of a run that is no benchmark); fields a record
    does not set are left out."""
    values = config_fields(record)
    if fields is None:
        fields = ["scenario", "threads", "batch_size", "samples_per_query", "target_qps"]
        if values["engine"] not in (None, "cr"):
            fields.append("engine")
        if values["action"] != "benchmark":  # a validate or run: which samples it judged
            fields.append("split")
    return " ".join(_word(f, values[f]) for f in fields if values.get(f) is not None) or "defaults"


def describe_difference(field: str, a, b) -> str:
    """'threads 1 vs 2' (a missing value reads 'unset')."""
    def show(v):
        return "unset" if v is None else str(v)

    return f"{_LABELS.get(field, field)} {show(a)} vs {show(b)}"
