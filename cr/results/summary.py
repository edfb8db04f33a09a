"""The results vocabulary: how cr names a result, wherever it shows one.

One owner for every label, so `cr results list/show`, compare, reproduce, pack, the
dashboard and campaigns word the same run the same way:

- the configuration: FIELDS, the table of run parameters (which identify a configuration,
  in what order labels show them, their short names and defaults; a unit is part of a
  name: latency_bound_ms);
  config_fields / config_key / config_differences read it, config_words / config_label
  word it ('single-stream threads=2 batch=1 intra_op_num_threads=1');
- the platform: platform_description ('Raspberry Pi 4 Model B (linux/aarch64, 4 cores)');
- the dataset: dataset_label ('digits@1.0.0 test');
- values: value_text (a parameter's value), duration_text / throughput_text / metric_text
  (measured figures with their units);
- the summary of a record: COLUMNS / summarize, what the index keeps per result, list
  shows and CSV holds: its configuration as run (effective_threads: the threads the
  backend ran with) and where it came from (a campaign job, a study's trial).

Every value is read defensively (a record imported from elsewhere may lack a part or hold
another type there): what is missing or of the wrong type is None, never an exception.
Standard library only: the dashboard builder's worker processes import this module.
"""
from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import re
from dataclasses import dataclass

# Summary columns, in the order `cr results export --format csv` writes them.
# The configuration columns (split .. batch_size, pipeline) and where a result came from
# (campaign .. trial) let stored results answer "which stack" without reading every record.
COLUMNS = (
    "uid", "action", "status", "started", "ended", "solution", "model", "dataset", "split", "backend",
    "variant", "precision", "threads", "batch_size", "pipeline", "platform", "platform_description", "scenario",
    "p50_ns", "p99_ns", "throughput_qps", "throughput_sps", "top1", "top5", "task_metric", "task_value", "outcome",
    "validity", "samples", "error", "campaign", "campaign_job", "study", "trial", "file",
)
# The headline metric of a validation of each task beyond classification and detection
# (cr.runtime.tasks; docs/tasks.md), in the order looked for: the task_metric and
# task_value columns hold it where classification has top1.
TASK_METRICS = {"segmentation": ("miou",), "landmarks": ("nme", "mean_error"), "regression": ("rmse",)}


def task_metric(validation) -> tuple[str | None, float | None]:
    """(name, value) of a validation's headline metric for its task, or (None, None)."""
    for name in TASK_METRICS.get(_get(validation, "task", kind=str), ()):
        value = _number(validation, name)
        if value is not None:
            return name, value
    return None, None


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


def _text(value, limit: int) -> str:
    """A string value cut to limit; '' for anything else (a label never shows a wrong type)."""
    return value[:limit] if isinstance(value, str) else ""


# ------------------------------------------------------------------------------- values

def value_text(value) -> str:
    """A parameter's value as labels show it: JSON's words (true, null), integral numbers
    without '.0', others to 6 significant digits, text and objects cut to 60 characters."""
    if isinstance(value, str):
        return value[:60]
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else f"{value:.6g}"[:60]
    if isinstance(value, int):
        return str(value)[:60]
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)[:60]
    except (TypeError, ValueError):
        return str(value)[:60]


def duration_text(ns) -> str:
    """A latency in the unit that keeps it readable: 25.14 us, 12.34 ms, 1.234 s ('' when unknown)."""
    if ns is None:
        return ""
    if ns < 1e6:
        return f"{ns / 1e3:.2f} us"
    if ns < 1e9:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e9:.3f} s"


def throughput_text(samples_per_s, queries_per_s) -> str:
    """'3840.0 samples/s (120.0 queries/s)'; the queries only when they differ from the samples
    (a batch or multi-stream query holds several samples)."""
    if samples_per_s is None:
        return "" if queries_per_s is None else f"{queries_per_s:.1f} queries/s"
    text = f"{samples_per_s:.1f} samples/s"
    if queries_per_s is not None and abs(queries_per_s - samples_per_s) > 1e-6 * max(1.0, samples_per_s):
        text += f" ({queries_per_s:.1f} queries/s)"
    return text


def metric_text(unit: str, value) -> str:
    """A measured value with its unit (the units of cr.results.compare.METRICS): ns as a
    duration, bytes in MiB, rates to 0.1, unitless ratios (top-1, noise) to 4 decimals."""
    if value is None:
        return ""
    if unit == "ns":
        return duration_text(value)
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    if unit in ("queries/s", "samples/s"):
        return f"{value:.1f} {unit}"
    return f"{value:.4f}"


# ----------------------------------------------------------------------------- platform

_CPU_NOISE = re.compile(r"\((?:R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@\s*[\d.]+\s*[GM]Hz|\b\d+-Core\b", re.IGNORECASE)


@functools.lru_cache(maxsize=256)  # a few machines label thousands of records
def short_cpu(model: str | None) -> str | None:
    """'Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz' -> 'Intel Xeon Gold 6338'."""
    if not model:
        return None
    return " ".join(_CPU_NOISE.sub(" ", model).split()) or model


def platform_description(platform) -> str:
    """The machine a result ran on, in one line that tells machines apart:
    'Raspberry Pi 4 Model B (linux/aarch64, 4 cores)', 'Intel Xeon Gold 6338 (linux/x86_64,
    32 cores) + NVIDIA H200 x8'; an emulated one says so, so that it is never mistaken for
    (or ranked with) the real board: '... [emulated: qemu-user aarch64 on x86_64]'.

    The name is the board, else the phone (android manufacturer and model), else the CPU
    model without its trademarks and clock; 'unknown machine' when nothing names it."""
    if not isinstance(platform, dict):
        platform = {}
    cpu = platform.get("cpu")
    cpu = cpu if isinstance(cpu, dict) else {}
    name = _text(platform.get("board"), 100)
    if not name and isinstance(platform.get("android"), dict):  # a phone
        name = " ".join(x for x in (_text(platform["android"].get(k), 60) for k in ("manufacturer", "model")) if x)
    name = name or short_cpu(_text(cpu.get("model"), 100)) or "unknown machine"
    where = "/".join(x for x in (_text(platform.get("os"), 40), _text(platform.get("arch"), 40)) if x)
    cores = cpu.get("cores")
    cores = f"{cores} core{'s' if cores > 1 else ''}" if type(cores) is int and cores > 0 else ""
    facts = ", ".join(x for x in (where, cores) if x)
    text = f"{name} ({facts})" if facts else name
    counts: dict[str, int] = {}
    accelerators = platform.get("accelerators")
    for a in accelerators if isinstance(accelerators, list) else ():
        accelerator = _text(a.get("name"), 100) if isinstance(a, dict) else ""
        if accelerator:
            counts[accelerator] = counts.get(accelerator, 0) + 1
    if counts:
        text += " + " + ", ".join(n + (f" x{c}" if c > 1 else "") for n, c in counts.items())
    if platform.get("emulated"):
        text += (f" [emulated: {_text(platform['emulated'], 40) or 'yes'} {_text(platform.get('arch'), 40)}"
                 f" on {_text(platform.get('host_arch'), 40) or 'unknown'}]")
    return text


# -------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class Field:
    """One run parameter (a key of record["config"]) as results name it."""

    key: str
    word: str | None = ""  # how a label names it, 'word=value' ("": its key; None: the value stands alone)
    identity: bool = True  # part of config_key: results that differ in it are different configurations
    shown: str = "always"  # in labels: "always", "judged" (runs that judge samples, not a benchmark), "never"
    default: object = None  # a value labels leave out (the action's default)
    scenario: str = ""  # meaningful in this scenario only (else None in config_fields)

    @property
    def name(self) -> str:
        """Its name in labels and differences (a unit, where it has one, is part of the key:
        latency_bound_ms, target_qps)."""
        return self.word or self.key


# What identifies a result's configuration and how labels word it, in label order (the
# backend's options always come last). Fields with shown="never" have columns of their own
# wherever a result is shown (its action, backend, variant, precision, dataset).
FIELDS = (
    Field("scenario", word=None),
    Field("threads"),
    Field("batch_size", word="batch"),
    Field("samples_per_query", scenario="multi-stream"),
    Field("target_qps", scenario="server"),
    Field("latency_bound_ms", scenario="server"),
    Field("engine", default="cr"),
    Field("inputs", default="auto"),
    Field("include_preprocess", default=False),
    Field("split", shown="judged"),
    # settings of one action (not part of the key: pack and reproduce match on the fields above)
    Field("limit", identity=False),
    Field("iou_threshold", identity=False, default=0.5),
    Field("top_k", identity=False, default=5),
    Field("calibration_samples", identity=False, default=100),
    Field("allow_degraded", identity=False, default=False),
    Field("action", shown="never"),
    Field("backend", shown="never"),
    Field("backend_options", shown="never"),  # labels show each option as name=value, last
    Field("variant", shown="never"),
    Field("precision", shown="never"),
    Field("dataset", shown="never"),
)
# How long or how often to measure, where output goes: never in a label (they change the
# precision of a figure, not the figure) and not part of a configuration.
MEASUREMENT = frozenset((
    "min_duration_s", "min_queries", "warmup_queries", "seed", "input_pool", "timeout_s", "max_duration_s",
    "warmup_max_s", "warmup_until_stable", "warmup_window", "warmup_threshold", "warmup_max_queries", "fidelity",
    "keep_outputs", "parity_atol", "parity_rtol", "synthetic_seed", "save_outputs", "samples", "warmup",
    "system_interval_ms", "top", "stream", "annotate",
    "require_placement",  # a check on where the model runs (cr.runtime.placement), not a setting of the run
))
FIELD = {f.key: f for f in FIELDS}
# config_key's fields, in its tuple's order
CONFIG_FIELDS = tuple(f.key for f in FIELDS if f.identity)
_KNOWN = frozenset(FIELD) | MEASUREMENT
# (key, name or None, default, its only scenario, shown only when judged) of the fields labels show
_LABELLED = tuple((f.key, None if f.word is None else f.name, f.default, f.scenario, f.shown == "judged")
                  for f in FIELDS if f.shown != "never")


def _plain(value):
    """A JSON value in one canonical form (2.0 -> 2, keys sorted), hashable as text for dicts and lists."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (dict, list)) and not value:
        return None  # no options given is the same as {}
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _backend_options(record) -> dict | None:
    config = _get(record, "config", kind=dict) or {}
    options = config.get("backend_options")
    if not isinstance(options, dict):
        options = _get(record, "backend", "options")
    return options if isinstance(options, dict) else None


def _scenario(record, config: dict):
    return _get(config, "scenario", kind=str) or _get(record, "metrics", "scenario", kind=str)


def _batch_size(record, config: dict):
    """As run: the model's own batch size when none was given (a failed run: as given)."""
    return (config.get("batch_size") or _get(record, "metrics", "batch_size", kind=int)
            or _get(record, "inputs", "batch_size", kind=int))


def _count(value) -> int | None:
    """A positive count as given (an int, or a float or text that holds one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and value > 0 else None


def effective_threads(record) -> int | None:
    """The threads the backend ran with, as the record states them, first found of:
    record["threads"] (the effective value, where cr states it), the backend's own report
    (backend.info.threads: torch, tflite, tensorflow), its own thread option given
    (backend_options.intra_op_threads: onnxruntime takes it over threads), config.threads,
    backend_options.threads; None when nothing says (the framework's default)."""
    options = _backend_options(record) or {}
    config = _get(record, "config", kind=dict) or {}
    for value in (record.get("threads") if isinstance(record, dict) else None, _get(record, "backend", "info", "threads"),
                  options.get("intra_op_threads"), config.get("threads"), options.get("threads")):
        threads = _count(value)
        if threads is not None:
            return threads
    return None


def config_fields(record) -> dict:
    """{field: value} of CONFIG_FIELDS for a record, as run (defensive: anything missing is None)."""
    config = _get(record, "config", kind=dict) or {}
    pipeline = _get(record, "pipeline", kind=dict) or {}
    values = {
        "action": _get(record, "action", kind=str),
        "scenario": _scenario(record, config),
        "backend": _get(record, "backend", "name", kind=str) or _get(config, "backend", kind=str),
        "backend_options": _backend_options(record),
        "batch_size": _batch_size(record, config),
        "variant": _get(pipeline, "variant", kind=str) or _get(config, "variant", kind=str),
        "precision": _get(pipeline, "precision", kind=str) or _get(config, "precision", kind=str),
        "include_preprocess": config.get("include_preprocess") or None,  # false = not given
    }
    out = {}
    for key in CONFIG_FIELDS:
        value = values[key] if key in values else config.get(key)
        scenario = FIELD[key].scenario
        out[key] = None if scenario and values["scenario"] != scenario else _plain(value)  # meaningful in one scenario only
    return out


def config_key(record) -> tuple:
    """The result's configuration as a hashable tuple (CONFIG_FIELDS order): results with equal
    keys (and the same target) ran the same thing, so one can be the other's reference."""
    fields = config_fields(record)
    return tuple(fields[k] for k in CONFIG_FIELDS)


def config_differences(a, b) -> list[tuple[str, object, object]]:
    """(field, value in a, value in b) of every configuration field that differs."""
    fa, fb = config_fields(a), config_fields(b)
    return [(k, fa[k], fb[k]) for k in CONFIG_FIELDS if fa[k] != fb[k]]


def config_words(record, beside=()) -> list[str]:
    """The words of a result's configuration label, in FIELDS order: the settings that ran
    and change what is measured, as 'name=value' (the scenario alone), then the action's
    other parameters by name, then the backend's options by name.

    Left out: a field's default, a field of another scenario, the measurement knobs
    (MEASUREMENT), fields shown="never" (columns of their own) and those the caller shows
    beside the label (beside: keys of FIELDS, e.g. the dashboard's scenario and dataset)."""
    # (the dashboard labels every record it builds: only what a label shows is read)
    config = _get(record, "config", kind=dict) or {}
    scenario = _scenario(record, config)
    benchmark = _get(record, "action", kind=str) == "benchmark"
    words = []
    for key, name, default, only_in, judged in _LABELLED:
        value = scenario if key == "scenario" else _batch_size(record, config) if key == "batch_size" else config.get(key)
        if value is None or key in beside or (only_in and only_in != scenario) or (judged and benchmark):
            continue
        value = _plain(value)
        if value is None or (value == default and type(value) is type(default)):
            continue
        words.append(value_text(value) if name is None else f"{name}={value_text(value)}")
    for key in sorted(config.keys() - _KNOWN):  # another action's (or a user action's) parameters
        if _plain(config[key]) is not None:
            words.append(f"{key[:40]}={value_text(config[key])}")
    options = _backend_options(record) if "backend_options" not in beside else None
    for key in sorted(options or (), key=str):
        words.append(f"{str(key)[:40]}={value_text(options[key])}")
    return words


LABEL_MAX = 200  # characters of a configuration label (a record from elsewhere may hold anything)


def config_label(record, beside=(), empty: str = "defaults") -> str:
    """A short human label of a result's configuration, e.g. 'single-stream threads=2 batch=1'
    (config_words joined, at most LABEL_MAX characters); empty when it has no word."""
    return " ".join(config_words(record, beside))[:LABEL_MAX] or empty


def field_name(field: str) -> str:
    """How labels and differences name a configuration field ('batch' for batch_size)."""
    return FIELD[field].name if field in FIELD else field


def field_value(value) -> str:
    """A configuration field's value in a difference: value_text, 'unset' when missing."""
    return "unset" if value is None else value_text(value)


def describe_difference(field: str, a, b) -> str:
    """'threads 1 vs 2' (a missing value reads 'unset')."""
    return f"{field_name(field)} {field_value(a)} vs {field_value(b)}"


def dataset_label(record) -> str:
    """The dataset a run used, 'digits@1.0.0 test' (its ref without 'dataset:', and the split)."""
    config, inputs = _get(record, "config", kind=dict) or {}, _get(record, "inputs", kind=dict) or {}
    ref = config.get("dataset") or inputs.get("dataset")
    if not ref:
        return ""
    ref = str(ref)[:120]
    if ref.startswith("dataset:"):
        ref = ref[len("dataset:"):]
    split = config.get("split") or inputs.get("split")
    return f"{ref} {str(split)[:40]}" if split else ref


# ------------------------------------------------------------------------------ summary

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
        "task_metric": task_metric(validation)[0],
        "task_value": task_metric(validation)[1],
        "outcome": outcome,
        "validity": _get(metrics, "validity", kind=str),
        "samples": samples,
        "error": _get(error, "message", kind=str) if error else None,
        "split": _get(config, "split", kind=str) or _get(record, "inputs", "split", kind=str),
        "threads": effective_threads(record),
        "batch_size": _count(_batch_size(record, config)),
        "pipeline": _get(pipeline, "sha256", kind=str),
        "campaign": _get(record, "campaign", "name", kind=str),
        "campaign_job": _get(record, "campaign", "job", kind=str),
        "study": _get(record, "study", "name", kind=str),
        "trial": _trial(_get(record, "study", "trial")),
    }


def _trial(value) -> str | None:
    """A study's trial number or name as text (Optuna numbers them; a text column holds both)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, str)):
        return str(value)[:60]
    return None


def number_at(data, path):
    """The number at path (keys) inside data, as a float; None when missing or not a number."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return float(data) if isinstance(data, (int, float)) and not isinstance(data, bool) else None
