"""Reading result records for the dashboard: one summary row and one detail file per record.

This module runs in the builder's worker processes, so it imports only the standard
library, the raw-latency codec (cr.results.latencies), the results vocabulary
(cr.results.summary: every label a row holds), the Pareto rule's intervals
(cr.results.pareto.measure) and the bounds of cr.jsonio (all standard library only). Records are read by cr.jsonio's rules, with a faster parser: a
record nested deeper than cr.jsonio.MAX_DEPTH, or holding NaN or Infinity, is skipped
(with a warning naming it) like any other file that is not valid JSON.
Everything here is per record and touches the record once: parse, pick the summary
fields, shrink the raw samples, append it to its detail file ``data/results/<bundle>.js``
(a bundle holds the records of a few dozen files).

A summary is a list in the order of FIELDS (lists, not dicts: 100,000 of them are kept
in memory and in the state files of the build). FIELDS, the empty summary and the
leaderboard's and run list's columns (cr.dashboard.leaderboard) all come from one table,
TABLE: one Field per summary value, saying how it is computed from a record (an expression), what kind
of value it is and which leaderboard columns take it. Adding a figure to the site is one
Field here (appended: the positions of older summaries stay) plus its use in the view.
"""
from __future__ import annotations

import binascii
import hashlib
import hmac
import json
import math
import os
import re
import stat
import sys
from array import array
from typing import NamedTuple

from ..fsutil import atomic_file
from ..jsonio import MAX_DEPTH, InvalidJSON, check_depth
from ..results.latencies import decode, digest
from ..results.pareto import OBJECTIVES, measure
from ..results.significance import SAMPLES_MAX, thin
from ..results.summary import config_label, dataset_label, effective_threads, platform_description, value_text
from ..results.traces import SUFFIX as TRACE_SUFFIX, is_profiled

# Result uids become keys in the detail files and URL parts (#/result/<uid>): the record format
# says 16 lowercase hex digits; anything outside this safe alphabet is refused.
UID_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_KEY_RE = re.compile(r"[A-Za-z0-9_:-]*\Z")  # detail-file keys that json.dumps would leave as they are
_NAME_RE = re.compile(r"[A-Za-z0-9_./-]*\Z")  # record file names that json.dumps would leave as they are

# Raw latencies kept per detail file: at most SAMPLES_MAX, every ceil(n / SAMPLES_MAX)-th in time
# order (SAMPLES_MAX and thin come from cr.results.significance): exactly the samples `cr results
# compare` judges a pair by, so the site's verdicts are the CLI's.

try:  # orjson (a dependency; absent only where no wheel exists): 1.5-2x the standard parser on a record, ~10x json.dumps
    from orjson import dumps as _fast_dumps, loads as _fast_loads
except ImportError:  # pragma: no cover - every platform cr supports has a wheel
    _fast_dumps = _fast_loads = None


def _fast_json(value) -> bytes | None:
    """orjson's compact UTF-8 JSON of value, or None where it has none (no orjson; a
    non-string key, an integer beyond 64 bits, a lone surrogate): the caller's json.dumps
    writes it then. NaN and Infinity come out as null, as _reencode makes them anyway."""
    if _fast_dumps is None:
        return None
    try:
        return _fast_dumps(value)
    except TypeError:
        return None


class Skip(Exception):
    """This file is not a usable result record; the message says why."""


def js_literal(data) -> str:
    """JSON that is also safe JavaScript inside or outside a <script> element.

    ensure_ascii escapes U+2028/U+2029 (line terminators in older JS engines) and every
    other non-ASCII character; '<' and '>' (which only occur inside strings) become
    \\u003c / \\u003e, so neither "</script>" nor "<!--" can end or comment out a script.
    """
    blob = _fast_json(data)  # ~10x json.dumps on the index's 100,000 runs; non-ASCII output is redone by json.dumps
    if blob is not None and blob.isascii():
        text = blob.decode("ascii")
    else:
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    if "<" in text or ">" in text:
        text = text.replace("<", "\\u003c").replace(">", "\\u003e")
    return text


def read_fd(fd: int, size: int) -> bytes:
    """Everything fd holds: one read of size bytes when the size is known (no buffering layer),
    then to the end in 1 MiB reads when it is not (size < 0) or the file holds more."""
    data = os.read(fd, size + 1) if size >= 0 else b""
    if size < 0 or len(data) > size:
        chunks = [data]
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
        data = b"".join(chunks)
    return data


def load(path: str, size: int = -1, stats: list | None = None) -> tuple[dict, bytes, bytes | None]:
    """(record, the JSON text that was parsed, the inline latency list's text or None); Skip when unusable.

    size: the file's size when known (one read, no buffering layer). stats: a list that gets
    the file's [mtime_ns, size, inode] (taken from the open file: no second path lookup),
    whose size is then the one read."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK)  # a FIFO swapped in after the scan: read empty, never waited on
        try:
            if stats is not None:
                st = os.fstat(fd)
                stats[:] = st.st_mtime_ns, st.st_size, st.st_ino
                size = st.st_size
            data = read_fd(fd, size)
        finally:
            os.close(fd)
    except OSError as exc:
        raise Skip(f"cannot read it ({exc.strerror or exc})") from None
    try:
        record, text, samples = parse(data)
    except ValueError as exc:
        raise Skip(f"not valid JSON ({exc})") from None
    check(record)
    return record, text, samples


# cr writes records with indent=2, so the top-level "raw" member starts at '\n  "raw": {'
# and its list ends at the first ']\n  }' after it (a newline cannot occur inside a JSON string).
_RAW_AT = b'\n  "raw": {'
_RAW_END = b"]\n  }"  # the list's closing bracket first: far faster to find than '\n  }' among "\n      123," lines
_RAW_NAME = b'"raw": {'
_SAMPLE_CHARS = b"0123456789,-"
_SAMPLES_OPEN = b'{"latencies_ns":['
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class _NotJSON(ValueError):
    """Text json.loads would take that cr does not (cr.jsonio's rules)."""


def _refuse_constant(name: str):
    raise _NotJSON(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)  # one for all calls (json.loads with a keyword builds one per call)




def _loads(data: bytes):
    """json.loads(data) (UTF-8, -16 or -32, as json.loads reads bytes) with NaN and Infinity
    refused and nesting too deep for the parser a ValueError, not a RecursionError.

    orjson parses first; whatever it refuses (NaN and Infinity, a number beyond a double
    such as 1e400, a lone surrogate escape, a byte-order mark, UTF-16/32, nesting past
    its limit) is parsed again by the standard parser, which decides: the outcome is the
    standard parser's. One difference is kept on purpose: an integer beyond 64 bits
    (no record cr writes holds one) comes back as the nearest double, which is also
    what the browser makes of it."""
    if _fast_loads is not None:
        try:
            return _fast_loads(data)
        except ValueError:
            pass
    try:
        return _DECODER.decode(data.decode(json.detect_encoding(data), "surrogatepass"))
    except RecursionError:
        raise _NotJSON(f"nested deeper than {MAX_DEPTH} levels") from None


def parse(data: bytes) -> tuple[dict, bytes, bytes | None]:
    """json.loads(data) by cr.jsonio's rules (no NaN, at most MAX_DEPTH levels: ValueError
    otherwise), faster for records laid out as cr writes them.

    Returns the record, the text that was parsed, and the samples' text. The latency list
    is most of a benchmark record and most of its parsing time (a 1,024-sample record
    parses in half the time without it): it is cut out (the text gets "raw": null
    instead), checked to be nothing but comma-separated integers (inert as JavaScript,
    valid as JSON) and returned as compact text ``[1,2,3]``. The platform, the same
    bytes in every record from one machine, is parsed once per distinct text (10% less
    time on an x86 record, whose CPU flags are long). Any other layout is parsed whole.
    """
    text, samples = data, None
    # '"raw":' can only be a member name (a '"' inside a string is escaped), so when it
    # occurs once, the member found is the top-level one (a hand-made file may indent a
    # nested "raw" by two spaces): its first occurrence must start _RAW_AT, and none may
    # follow the list (the list itself holds only digits, '-', ',' and whitespace)
    start = data.find(b'"raw":') - (len(_RAW_AT) - len(_RAW_NAME))
    if start >= 0 and data.startswith(_RAW_AT, start):
        start += len(_RAW_AT) - 1
        end = data.find(b"]", start)  # memchr; a ']' before the list's own would fail the shape check anyway
        if end > 0 and data.startswith(_RAW_END, end):
            end += len(_RAW_END)
            compact = data[start:end].translate(None, b"\t\r\n ")
            if (compact.startswith(_SAMPLES_OPEN) and compact.endswith(b"]}")
                    and data.find(b'"latencies_ns"', start, start + 64) > 0  # not a key that only loses its spaces
                    and not compact[len(_SAMPLES_OPEN):-2].translate(None, _SAMPLE_CHARS)
                    and data.find(b'"raw":', end) < 0):
                samples = _integer_list(compact)
                if samples is not None:
                    text = data[:start] + b"null" + data[end:]
    try:
        record, brackets = _with_known_platform(text)
    except ValueError:
        record = None
    if not isinstance(record, dict) or (samples is not None and ("raw" not in record or record["raw"] is not None)):
        record, text, samples = _loads(data), data, None  # not the layout assumed, or the cut was not the top-level "raw"
        brackets = None
    # Depth: at most the number of opening brackets in what was parsed (the samples hold
    # none), a few dozen in a record cr writes: only more than MAX_DEPTH costs a walk.
    if brackets is None:
        brackets = _brackets(text)
    if brackets > MAX_DEPTH:
        try:
            check_depth(record, "record")
        except InvalidJSON:
            raise _NotJSON(f"nested deeper than {MAX_DEPTH} levels") from None
    return record, text, samples


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[{")


def _brackets(text: bytes) -> int:
    """The number of opening brackets in text: one pass that deletes every other byte (two
    bytes.count passes took 1.4-2x its time on a 4 KB record)."""
    return len(text.translate(None, _NOT_BRACKETS))


_PLATFORM_AT = b'\n  "platform": {'
_PLATFORM_NAME = b'"platform": {'
_OBJECT_END = b"\n  }"
_platforms: dict[bytes, tuple[object, int]] = {}


def _with_known_platform(text: bytes) -> tuple[object, int | None]:
    """(json.loads(text), its number of opening brackets or None when not counted)."""
    # as for "raw" in parse(): the first '"platform":' starts _PLATFORM_AT and none follows
    # the object (one inside it is part of the value; the null check below catches the rest)
    start = text.find(b'"platform":') - (len(_PLATFORM_AT) - len(_PLATFORM_NAME))
    if start < 0 or not text.startswith(_PLATFORM_AT, start):
        return _loads(text), None
    start += len(_PLATFORM_AT) - 1
    end = text.find(_OBJECT_END, start)
    if end < 0 or text.find(b'"platform":', end) >= 0:
        return _loads(text), None
    end += len(_OBJECT_END)
    value = text[start:end]
    known = _platforms.get(value)
    if known is None:
        known = _loads(value), _brackets(value)  # a whole JSON value by itself, or ValueError
        if len(_platforms) >= 256:
            _platforms.clear()
        _platforms[value] = known  # shared by the records that carry it: nothing modifies a record
    rest = text[:start] + b"null" + text[end:]
    record = _loads(rest)
    if not isinstance(record, dict) or "platform" not in record or record["platform"] is not None:
        return _loads(text), None  # what was cut out was not the top-level "platform"
    record["platform"] = known[0]
    return record, _brackets(rest) + known[1]


def _integer_list(compact: bytes) -> bytes | None:
    """b'[1,-2,3]' from b'{"latencies_ns":[1,-2,3]}' when every element is an integer, else None."""
    lst = compact[len(b'{"latencies_ns":'):-1]
    if lst == b"[]":
        return lst
    # the shape check in parse() left digits, ',' and '-' between '[' and ']'
    if lst[:1] != b"[" or lst[-1:] != b"]" or lst[1:2] == b"," or lst[-2:-1] in (b",", b"-") or b",," in lst:
        return None
    if b"-" in lst and (b"-," in lst or b"-]" in lst or b"-" in lst.replace(b",-", b",").replace(b"[-", b"[")):
        return None  # a minus sign that does not start a number
    return lst


def check(record) -> None:
    """Skip unless record has what the dashboard relies on (format, uid, the types of the main members)."""
    if not isinstance(record, dict):
        raise Skip("not a JSON object")
    if record.get("format") != 1 or "action" not in record:
        raise Skip("not a reefkit result record of format 1 (no \"format\": 1 and \"action\")")
    uid = record.get("uid")
    if not isinstance(uid, str) or not UID_RE.match(uid):
        raise Skip(f"\"uid\" must be 1-64 letters, digits, '-' or '_', found {uid!r:.80}")
    for key in ("action", "status"):
        if record.get(key) is not None and not isinstance(record[key], str):
            raise Skip(f"\"{key}\" must be a string, found {type(record[key]).__name__}")
    for key in ("components", "tags"):
        if record.get(key) is not None and not isinstance(record[key], list):
            raise Skip(f"\"{key}\" must be a list, found {type(record[key]).__name__}")
    for key in ("backend", "platform", "config", "metrics", "pipeline", "validation", "raw", "error", "lock"):
        if record.get(key) is not None and not isinstance(record[key], dict):
            raise Skip(f"\"{key}\" must be an object or null, found {type(record[key]).__name__}")


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _str(value, limit: int = 200) -> str:
    if value is None:
        return ""
    return (value if isinstance(value, str) else str(value))[:limit]


def _num(value):
    """A finite number rounded to 6 significant digits (what a table or plot can show), else None."""
    kind = type(value)  # the types json.loads gives first: 1.8 million calls in a 100,000-record build
    if value is None:
        return None
    if kind is float:
        return float(f"{value:.6g}") if math.isfinite(value) else None
    if kind is int:
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, int):
        return value
    if not math.isfinite(value):
        return None
    return float(f"{value:.6g}")


def _energy(metrics: dict):
    """Joules per sample, where the record measured it (metrics.energy.joules_per_sample or metrics.energy_j_per_sample)."""
    energy = metrics.get("energy")
    if isinstance(energy, dict):
        return _num(energy.get("joules_per_sample"))
    return _num(metrics.get("energy_j_per_sample"))


def _reproduction(value) -> str:
    if isinstance(value, dict):
        return _str(value.get("outcome") or value.get("status") or ("checked" if value else ""), 40)
    return _str(value, 40)


# The site shows these beside the config cell: the scenario in the same cell, the split in
# the dataset column (cr.results.summary.dataset_label).
SHOWN_BESIDE = ("scenario", "split")


def _task(record: dict, components: list, validation: dict, metrics: dict) -> str:
    """The task: what validation measured, else what the record says (the model's meta
    copied into it: a component's "task", a top-level "task")."""
    task = validation.get("task") or metrics.get("task") or record.get("task")
    if not task and components:  # the subject first, then the model it uses
        task = components[0].get("task") or next(
            (c["task"] for c in components if c.get("kind") == "model" and c.get("task")), "")
    return _str(task, 60)


class Field(NamedTuple):
    """One value of a record's summary, and so of the site's data files.

    compute: a Python expression over p (the record's _Parts) and this module's names;
    summarise() evaluates the fields' expressions in one list display, written out from
    TABLE once at import (a lambda per field cost a call each: 55 calls, a fifth of
    summarise's time at 100,000 records).
    kind: "text" (a string, stored once in the data's "strings" and referred to by
    position), "id" (a string stored as it is: uids, times, error messages), "number"
    (None when absent) or "list" (of texts). Its empty value follows from it.
    row: which leaderboard column(s) take it, from which run of the row (see
    cr.dashboard.leaderboard.SOURCES): "bench", "validate", "other", "some" (the row's
    benchmark, else validate, else other run), "bench validate" (the first that is not
    blank), "key" (part of the configuration), or a rule of the leaderboard's own ("task",
    "label", "tags", "error"); a dict {column: source} for a field shown in several columns;
    "" for none. runs: whether data/runs.js (the run list) has it.
    """
    name: str
    kind: str
    compute: str
    row: str | dict = ""
    runs: bool = False

    @property
    def empty(self):
        """What a missing summary contributes (a row without a benchmark, an older summary's new fields)."""
        return None if self.kind == "number" else [] if self.kind == "list" else ""


class _Parts:
    """The parts of a record that the fields read, each looked up (and type-checked) once."""
    __slots__ = ("record", "components", "subject", "backend", "info", "config", "pipeline", "platform", "metrics",
                 "validation", "scenario", "measured", "study", "latencies")

    def __init__(self, record: dict, latencies=None) -> None:
        self.record = record
        self.latencies = latencies  # the raw latencies, where summarise was given them
        self.components = [c for c in record.get("components") or [] if isinstance(c, dict)]
        self.subject = self.components[0] if self.components else {}
        self.backend = _dict(record.get("backend"))
        self.info = _dict(self.backend.get("info"))
        self.config = _dict(record.get("config"))
        self.pipeline = _dict(record.get("pipeline"))
        self.platform = _dict(record.get("platform"))
        self.metrics = _dict(record.get("metrics"))
        self.validation = _dict(record.get("validation"))
        self.scenario = _str(self.metrics.get("scenario")
                             or (self.config.get("scenario") if record.get("action") == "benchmark" else ""), 40)
        self.measured = None  # the 95% intervals (_interval), worked out when first asked for
        self.study = _dict(record.get("study"))


# The figures whose 95% intervals the rows carry, for the Pareto rule (cr.results.pareto).
_INTERVALS = [OBJECTIVES[name] for name in ("p50", "throughput", "top1")]


def _interval(p: _Parts, name: str, end: str):
    """The lower or upper end of a figure's 95% interval, as cr.results.pareto.measure gives it:
    for a campaign's or a study's benchmark from its raw latencies (the p50's order statistics,
    as cr tune and cr results pareto take it), for any other record from what the record
    itself states (the p50 from its IQR and count: a wider interval), throughput from the mean
    latency's standard error, accuracy a Wilson interval over the samples judged. Reading and
    sorting every record's raw latencies would cost a 100,000-record build a third more time."""
    if p.measured is None:
        try:
            p.measured = measure(p.record, _INTERVALS, p.latencies)
        except (TypeError, ValueError, ArithmeticError):  # a record from elsewhere may hold anything
            p.measured = {}
    figure = p.measured.get(name)
    return _num(figure[end]) if figure else None


# What a campaign's matrix, a study or a pipeline study varies, read from what the record
# says ran (a campaign record carries its job's id, not the job's overrides): the keys of
# SETTING_KEYS, then each pipeline step parameter (a config key "pipeline.STEP.PARAM", or
# config.pipeline / pipeline.overrides as {"STEP.PARAM": value}).
SETTING_KEYS = ("backend", "variant", "precision", "threads", "batch_size", "scenario", "engine", "backend_options",
                "dataset", "split")


def _setting(p: _Parts) -> str:
    """The record's setting as compact JSON {key: value as labels show it} ('' when none)."""
    config, pipeline = p.config, p.pipeline
    values = {
        "backend": p.backend.get("name") or config.get("backend"),
        "variant": pipeline.get("variant") or config.get("variant"),
        "precision": pipeline.get("precision") or config.get("precision"),
        "scenario": p.scenario or None,
        "batch_size": config.get("batch_size"),
        "threads": effective_threads(p.record),  # as the backend ran (the record's own statement first)
        "dataset": config.get("dataset") or _dict(p.record.get("inputs")).get("dataset"),
        "split": config.get("split") or _dict(p.record.get("inputs")).get("split"),
    }
    out = {}
    for key in SETTING_KEYS:
        value = values[key] if key in values else config.get(key)
        if value is None or value == "" or value == {}:
            continue
        if key == "dataset" and isinstance(value, str) and value.startswith("dataset:"):
            value = value[len("dataset:"):]
        out[key] = value_text(value)
    steps = {}
    for source in (pipeline.get("overrides"), config.get("pipeline")):
        if isinstance(source, dict):
            steps.update({f"pipeline.{k}": v for k, v in source.items()})
    for k in config:
        if k[:9] == "pipeline.":
            steps[k] = config[k]
    for key in sorted(steps)[:20]:
        out[key[:80]] = value_text(steps[key])
    return _SETTING_JSON(out) if out else ""


_SETTING_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode  # one encoder (json.dumps with options builds one a call)


def _in_study(p: _Parts) -> bool:
    """The record comes from a campaign or a tune run (the views that compare settings read it)."""
    return bool(p.study) or isinstance(p.record.get("campaign"), dict)


FIGURES = ("p50_lo", "p50_hi", "throughput_lo", "throughput_hi", "top1_lo", "top1_hi", "samples", "hits")


def _figures(p: _Parts) -> str:
    """The run list's figures of a campaign's or study's record: the FIGURES as a JSON list
    (intervals as _interval gives them, the number of samples a validation judged, and
    "hits": the first 16 digits of the sha256 of the sample ids whose per-sample
    correctness the validation kept (cr.results.accuracy: two records with the same can be
    paired), else null)."""
    values = [_interval(p, name[:-3], name[-2:]) for name in FIGURES[:-2]]
    values.append(_num(p.validation.get("samples")))
    hits = _dict(p.validation.get("hits"))
    ids = hits.get("ids_sha256")
    values.append(ids[:16] if isinstance(ids, str) and hits.get("top1") is not None else None)
    return _SETTING_JSON(values)


def _study_mark(study: dict) -> str:
    """What a study's record says of its trial: 'recommended' (its study picked it) and/or
    'infeasible' (a constraint excluded it)."""
    marks = [m for m, on in (("recommended", study.get("recommended") is True),
                             ("infeasible", study.get("feasible") is False)) if on]
    return " ".join(marks)


_labels: dict[int, tuple[dict, str]] = {}


def _platform_label(platform: dict) -> str:
    """platform_description(platform), worked out once per platform object: the records that
    carry the same platform text share one parsed dict (_with_known_platform), which the
    memo holds, so its id is not reused while the entry lives."""
    known = _labels.get(id(platform))
    if known is not None and known[0] is platform:
        return known[1]
    label = platform_description(platform)
    if len(_labels) >= 256:
        _labels.clear()
    _labels[id(platform)] = (platform, label)
    return label


def _latency(p: _Parts, key: str):
    return _num(_dict(p.metrics.get("latency_ns")).get(key))


def _query_samples(p: _Parts):
    """Samples in one timed query (what one latency figure covers: 1 is a per-sample latency,
    more a per-batch one): samples / queries as measured, else the stated samples_per_query."""
    samples, queries = p.metrics.get("samples"), p.metrics.get("queries")
    if type(samples) is int and type(queries) is int and queries > 0 and samples >= queries:
        return samples // queries
    n = p.metrics.get("samples_per_query")
    return n if type(n) is int and n > 0 else None


# The summary's fields, in summary order. Append new ones at the end: the build's state files
# keep summaries as lists, and an older one is padded with the empty values of the fields it lacks.
TABLE = (
    Field("uid", "id", "p.record['uid']", row={"bench_uid": "bench", "validate_uid": "validate", "other_uid": "other"},
          runs=True),
    Field("action", "text", "_str('benchmark (profiled)' if is_profiled(p.record) else p.record.get('action'), 40)",
          row={"other_action": "other"}, runs=True),  # a profiled benchmark stays out of the leaderboard
    Field("status", "text", "_str(p.record.get('status'), 40) or 'unknown'",
          row={"bench_status": "bench", "validate_status": "validate"}, runs=True),
    Field("time", "id", "_str(p.record.get('ended') or p.record.get('started'), 40)", runs=True),
    Field("subject", "text", "_str(p.subject.get('ref')) or 'unknown'", row="key"),
    Field("kind", "text", "_str(p.subject.get('kind'), 40)", row="some"),
    Field("name", "text", "_str(p.subject.get('name')) or 'unknown'", row="some"),
    Field("version", "text", "_str(p.subject.get('version'), 60)", row="some"),
    Field("backend", "text", "_str(p.backend.get('name') or p.config.get('backend'), 60) or 'unknown'", row="key"),
    Field("backend_version", "text", "_str(p.info.get('version'), 60)", row="bench validate"),
    Field("variant", "text", "_str(p.pipeline.get('variant') or p.config.get('variant'), 80)", row="key"),
    Field("precision", "text", "_str(p.pipeline.get('precision'), 40)", row="key"),
    Field("platform", "text", "_str(p.platform.get('fingerprint'), 40) or 'unknown'", row="key"),
    Field("platform_label", "text", "_platform_label(p.platform)", row="label"),
    Field("arch", "text", "_str(p.platform.get('arch'), 40)", row="some"),
    Field("scenario", "text", "p.scenario", row="bench", runs=True),
    Field("task", "text", "_task(p.record, p.components, p.validation, p.metrics)", row="task"),
    Field("p50_ns", "number", "_latency(p, 'p50')", row="bench", runs=True),
    Field("p99_ns", "number", "_latency(p, 'p99')", row="bench"),
    Field("throughput", "number", "_num(_dict(p.metrics.get('throughput')).get('samples_per_s'))", row="bench",
          runs=True),
    Field("peak_rss", "number", "_num(p.metrics.get('peak_rss_bytes'))", row="bench"),
    Field("energy_j", "number", "_energy(p.metrics)", row="bench"),
    Field("top1", "number", "_num(p.validation.get('top1'))", row="validate", runs=True),
    Field("top5", "number", "_num(p.validation.get('top5'))", row="validate"),
    Field("outcome", "text", "_str(p.validation.get('outcome'), 40)", row="validate", runs=True),
    Field("validity", "text", "_str(p.metrics.get('validity'), 40)", row="bench"),
    Field("error", "id", "_str(_dict(p.record.get('error')).get('message'), 300)", row="error", runs=True),
    Field("tags", "list", "[_str(t, 100) for t in (p.record.get('tags') or [])[:20]]", row="tags"),
    Field("reproduction", "text", "_reproduction(p.record.get('reproduction'))", row="bench validate"),
    # the detail file (bundle) holding the record, set by write_bundle
    Field("loc", "text", "''", row={"bench_loc": "bench", "validate_loc": "validate"}, runs=True),
    Field("dataset", "text", "dataset_label(p.record)", row="validate bench"),
    Field("config", "text", "config_label(p.record, SHOWN_BESIDE, empty='')", row="some", runs=True),
    # the campaign run that made the record and the worker it ran on (cr campaign run)
    Field("campaign", "text", "_str(_dict(p.record.get('campaign')).get('name'), 130)", row="bench validate", runs=True),
    Field("worker", "text", "_str(_dict(p.record.get('worker')).get('name'), 130)", runs=True),
    # detection: COCO AP@[.5:.95] and AP50 of a validate (cr.runtime.coco_eval)
    Field("ap", "number", "_num(p.validation.get('ap'))", row="validate"),
    Field("ap50", "number", "_num(p.validation.get('ap50'))", row="validate"),
    # 95% intervals of the Pareto plot's figures (cr.results.pareto's rule decides ties with them)
    Field("p50_lo", "number", "_interval(p, 'p50', 'lo')", row="bench"),
    Field("p50_hi", "number", "_interval(p, 'p50', 'hi')", row="bench"),
    Field("throughput_lo", "number", "_interval(p, 'throughput', 'lo')", row="bench"),
    Field("throughput_hi", "number", "_interval(p, 'throughput', 'hi')", row="bench"),
    Field("top1_lo", "number", "_interval(p, 'top1', 'lo')", row="validate"),
    Field("top1_hi", "number", "_interval(p, 'top1', 'hi')", row="validate"),
    # campaigns and studies: the job that made the record, the tune run (record["study"]: name,
    # trial) and what the study said of the trial; for their records only (the others' are
    # blank: the run list stays small): what ran (_setting) and the figures with intervals
    Field("campaign_job", "id", "_str(_dict(p.record.get('campaign')).get('job'), 80)", runs=True),
    Field("study", "text", "_str(p.study.get('name'), 130)", row="bench validate", runs=True),
    Field("trial", "id", "_str(p.study.get('trial'), 40)", runs=True),
    Field("study_mark", "text", "_study_mark(p.study)", runs=True),
    Field("setting", "text", "_setting(p) if _in_study(p) else ''", runs=True),
    Field("figures", "id", "_figures(p) if _in_study(p) else ''", runs=True),
    # segmentation, landmarks, regression: their validation metrics (cr.runtime.tasks, docs/tasks.md)
    Field("miou", "number", "_num(p.validation.get('miou'))", row="validate"),
    Field("pixel_accuracy", "number", "_num(p.validation.get('pixel_accuracy'))", row="validate"),
    Field("nme", "number", "_num(p.validation.get('nme'))", row="validate"),
    Field("mean_error", "number", "_num(p.validation.get('mean_error'))", row="validate"),
    Field("mae", "number", "_num(p.validation.get('mae'))", row="validate"),
    Field("rmse", "number", "_num(p.validation.get('rmse'))", row="validate"),
    # what a latency figure covers (the Pareto plot never puts per-sample and per-batch latencies on one axis)
    Field("query_samples", "number", "_query_samples(p)", row="bench"),
)
FIELDS = tuple(f.name for f in TABLE)
F = {name: i for i, name in enumerate(FIELDS)}
EMPTY = tuple(f.empty for f in TABLE)  # the summary of nothing (its list is shared: copy before changing it)


# Texts the summaries repeat (names, backends, platforms, labels), one object each: a worker's
# answer pickles each once (a memo reference after), so the builder unpickles, keeps and
# frees a fraction of the strings it would otherwise (at most _KEPT_MAX kept at a time).
_KEPT: dict[str, str] = {}
_KEPT_MAX = 8192
_kept = _KEPT.setdefault


def _summarise_source() -> str:
    values = ", ".join(f"_kept(v := ({field.compute}), v)" if field.kind == "text" else f"({field.compute})" for field in TABLE)
    return ("def summarise(record: dict, latencies=None) -> list:\n"
            '    """The summary row of a record (FIELDS order); latencies: its raw latencies, when at hand."""\n'
            "    if len(_KEPT) > _KEPT_MAX:\n"
            "        _KEPT.clear()\n"
            "    p = _Parts(record, latencies)\n"
            f"    return [{values}]\n")


def _compile_summarise():
    """summarise(record, latencies=None): the summary row of a record (FIELDS order), each
    field's expression evaluated on its _Parts; latencies: its raw latencies, when at hand."""
    defined: dict = {}
    exec(compile(_summarise_source(), f"<{__name__}.summarise>", "exec"), globals(), defined)  # names: this module's
    return defined["summarise"]


summarise = _compile_summarise()


def study_latencies(record: dict, samples: bytes | None, record_path: str):
    """The raw latencies of a campaign's or a study's benchmark (the intervals its pages judge
    ties by: cr.results.pareto.measure with them), None for any other record or when unreadable."""
    if record.get("action") != "benchmark" or not (isinstance(record.get("study"), dict) and record["study"]
                                                  or isinstance(record.get("campaign"), dict)):
        return None
    if samples is not None:
        return json.loads(samples)
    raw = record.get("raw")
    if not isinstance(raw, dict):
        return None
    values = raw.get("latencies_ns")
    if values is None and raw.get("latencies_ns_file") is not None:
        values, _ = _read_side_file(record_path, raw)
    if not isinstance(values, (list, array)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return values


def _read_side_file(record_path: str, raw: dict) -> tuple[array | None, str]:
    """Latencies from the ``<stem>.latencies.i64`` file named in raw (checked against count and sha256).

    Its bytes are cr.results.latencies'; the problems are worded for the detail view, and
    checked in this order: readable, sha256, whole int64 values, count."""
    blob, problem = _side_file_bytes(record_path, raw)
    return (None, problem) if blob is None else (decode(blob), "")


def _side_file_bytes(record_path: str, raw: dict) -> tuple[bytes | None, str]:
    """The checked bytes (little-endian int64) of the side file named in raw, or (None, the problem)."""
    name = raw.get("latencies_ns_file")
    if not isinstance(name, str) or os.path.basename(name) != name or name in ("", ".", ".."):
        return None, "raw.latencies_ns_file is not a plain file name beside the record"
    # os.read with the size the record states, not open().read(): no buffered file object per record
    count = raw.get("count")
    expected = count * 8 if type(count) is int and 0 <= count <= 1 << 21 else -1  # a record's claim, bounded
    try:
        fd = os.open(os.path.join(os.path.dirname(record_path), name), os.O_RDONLY)
        try:
            blob = read_fd(fd, expected)
        finally:
            os.close(fd)
    except OSError as exc:
        return None, f"raw samples file {name} cannot be read ({exc.strerror or exc})"
    if raw.get("sha256") and digest(blob) != raw["sha256"]:
        return None, f"raw samples file {name} does not match its sha256"
    if len(blob) % 8:
        return None, f"raw samples file {name} is not a whole number of int64 values"
    if isinstance(raw.get("count"), int) and raw["count"] != len(blob) // 8:
        return None, f"raw samples file {name} holds {len(blob) // 8} values, the record says {raw['count']}"
    return blob, ""


def shrink_raw(raw, record_path: str) -> dict | None:
    """A record's raw latencies as the detail view needs them: at most SAMPLES_MAX, in time order.

    Sorting (for the CDF and histogram) is left to the browser, which does it in
    microseconds; exact percentiles are in metrics.latency_ns anyway.
    """
    if not isinstance(raw, dict):
        return None
    values, problem, source = raw.get("latencies_ns"), "", "inline"
    if values is None and raw.get("latencies_ns_file") is not None:
        values, problem = _read_side_file(record_path, raw)
        source = "file"
    if not isinstance(values, (list, array)):
        return {"count": raw.get("count"), "source": source, "problem": problem or "no latency samples", "step": 1, "samples_ns": []}
    step = -(-len(values) // SAMPLES_MAX) if len(values) > SAMPLES_MAX else 1
    return {"count": len(values), "source": source, "problem": "", "step": step, "samples_ns": thin(values)}


def _escape(text: bytes) -> bytes:
    """JSON text made safe to embed in a script: '<', '>' and U+2028/U+2029 (which occur
    only inside JSON strings) become \\u escapes, so neither "</script>" nor "<!--" can
    end or comment out a script, whatever element or file it ends up in."""
    if b"<" in text:
        text = text.replace(b"<", b"\\u003c")
    if b">" in text:
        text = text.replace(b">", b"\\u003e")
    if b"\xe2" in text and b"\xe2\x80" in text:  # memchr for the one byte first: a two-byte search costs 15x
        text = text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
    return text


def detail_js(record: dict, text: bytes, samples: bytes | None, record_path: str, source_name: str, key: str,
              trace: str | None = None) -> bytes:
    """One record's part of a detail file: CR_RESULTS[key] = {"source", "raw" (shrunk samples), "record"},
    and "trace": the site's copy of the record's profile trace (copy_trace), when it has one.

    The record goes as compact JSON without its "raw" member (the site reads the samples
    from "raw" beside it): a third fewer bytes than the indented text the store keeps, in
    about the time that cutting "raw" out of that text took. Only a record orjson cannot
    write (an integer beyond 64 bits) reuses its own text.
    """
    raw = record.get("raw")
    if samples is not None:
        count = 0 if samples == b"[]" else samples.count(b",") + 1
        if count <= SAMPLES_MAX:
            raw_js = b'{"count":%d,"source":"inline","problem":"","step":1,"samples_ns":%s}' % (count, samples)
        else:
            raw_js = js_literal(shrink_raw({"latencies_ns": json.loads(samples)}, record_path)).encode("ascii")
    elif isinstance(raw, dict):
        raw_js = _side_file_js(raw, record_path) or js_literal(shrink_raw(raw, record_path)).encode("ascii")
    else:
        raw_js = b"null"
    body = _compact_record(record)
    if body is None:
        body = text
        if isinstance(raw, dict) and samples is None:
            body = _without_raw(text, raw) or _reencode({k: v for k, v in record.items() if k != "raw"})
        if body.lstrip()[:1] != b"{":  # a UTF-16/32 file (json.loads reads those): not UTF-8 text to embed
            body = _reencode(record)
    # key is "<bundle>:<uid>": hex digits, ':' and UID_RE's alphabet need no escaping (json.dumps costs more)
    key_js = f'"{key}"' if _KEY_RE.match(key) else js_literal(key)
    source_js = f'"{source_name}"' if _NAME_RE.match(source_name) else js_literal(source_name)
    return b"".join((b"(window.CR_RESULTS=window.CR_RESULTS||{})[", key_js.encode("ascii"),
                     b']={"source":', source_js.encode("ascii"), b',"raw":', raw_js,
                     b',"trace":', b"null" if trace is None else js_literal(trace).encode("ascii"),
                     b',"record":', _escape(body), b"};\n"))


def _compact_record(record: dict) -> bytes | None:
    """The record without "raw" as compact JSON (orjson, which writes a non-finite float as
    null, as _reencode does), or None when orjson cannot write it or is absent."""
    if _fast_dumps is None:
        return None
    try:
        return _fast_dumps({k: v for k, v in record.items() if k != "raw"})
    except TypeError:  # an integer beyond 64 bits: the record's own text says it exactly
        return None


def _side_file_js(raw: dict, record_path: str) -> bytes | None:
    """shrink_raw's answer for latencies in a side file, with the samples as base64 of their
    bytes ("samples_b64", which the site's data.js turns back into "samples_ns" when it loads
    the record): the file's own bytes are copied, where writing 1,024 numbers as decimal
    text cost more than everything else a record's build does. When every value kept is in
    [0, 2**(8k)) for some k <= 4 (a latency under 16.8 ms takes 3 bytes, under 4.3 s 4),
    only their k low bytes go, as k planes ("samples_planes": k; plane b holds byte b of
    every value, in order): 3 or 4 bytes a value instead of 8, the same numbers. Else the
    little-endian int64s themselves. None when the record has no side file or it has a
    problem (shrink_raw words it)."""
    if raw.get("latencies_ns") is not None or raw.get("latencies_ns_file") is None:
        return None
    blob, _ = _side_file_bytes(record_path, raw)
    if blob is None:
        return None
    count, step = len(blob) // 8, 1
    if count > SAMPLES_MAX:  # every step-th, as thin() keeps them
        step = -(-count // SAMPLES_MAX)
        values = decode(blob)[::step]
        if sys.byteorder != "little":
            values.byteswap()
        blob = values.tobytes()
    planes, zero = 8, bytes(len(blob) // 8)
    while planes > 1 and blob[planes - 1::8] == zero:  # the high bytes that are zero in every value
        planes -= 1
    if blob and planes <= 4:
        return b'{"count":%d,"source":"file","problem":"","step":%d,"samples_planes":%d,"samples_b64":"%s"}' % (
            count, step, planes, binascii.b2a_base64(b"".join([blob[b::8] for b in range(planes)]), newline=False))
    return b'{"count":%d,"source":"file","problem":"","step":%d,"samples_b64":"%s"}' % (
        count, step, binascii.b2a_base64(blob, newline=False))


def _without_raw(text: bytes, raw: dict) -> bytes | None:
    """text without its top-level "raw" member (whose value is raw), for a record laid out as
    cr writes it (indent 2, "raw" not first); None for any other layout (the caller re-encodes).

    As in parse(): '"raw":' must occur once, starting the member at the top level's
    indentation; the cut runs from the comma before it to the first line "  }" after it,
    and is taken only when what it holds parses to raw (a shorter or longer cut would not
    be that one JSON object)."""
    at = text.find(b'"raw":')
    start = at - (len(_RAW_AT) - len(_RAW_NAME))
    if at < 0 or start < 1 or not text.startswith(_RAW_AT, start) or text[start - 1:start] != b"," \
            or text.find(b'"raw":', at + 1) >= 0:
        return None
    value_at = start + len(_RAW_AT) - 1
    end = text.find(_OBJECT_END, value_at)
    if end < 0:
        return None
    end += len(_OBJECT_END)
    try:
        if _loads(text[value_at:end]) != raw:
            return None
    except ValueError:
        return None
    return text[:start - 1] + text[end:]


def _reencode(record: dict) -> bytes:
    try:
        return js_literal(record).encode("ascii")
    except ValueError:  # NaN or Infinity: JSON cannot hold them, null can
        return js_literal(json.loads(json.dumps(record), parse_constant=lambda _: None)).encode("ascii")


def write_bundle(bundle: str, items: list[tuple[str, str, int | None, int | None, int | None]], results_dir: str,
                 state_dir: str, key: bytes) -> list[list]:
    """Summarise the record files of one bundle, write its detail file results_dir/<bundle>.js
    and what the next build needs to know about them, state_dir/<bundle>.json (seal_state).

    items are (path, name shown, mtime_ns, size, inode) in path order, the last three None
    where the listing did not stat the file (a first build: it is stat'ed here); returns
    [mtime_ns, size, summary, "", inode] or [mtime_ns, size, None, why skipped, inode] for
    each. Records are stored under "<bundle>:<uid>"; of two records with the same uid in a
    bundle only the first is written (the builder warns about the other). key: the
    build's cache key (seal_state).
    """
    out, parts, seen, files = [], [], set(), {}
    for path, name, mtime_ns, size, inode in items:
        try:
            if size is None:  # not stat'ed by the listing: stat'ed here, as it is read
                stats = [None, None, None]
                try:
                    record, text, samples = load(path, stats=stats)
                finally:
                    mtime_ns, size, inode = stats
            else:
                record, text, samples = load(path, size)
        except Skip as exc:
            files[path] = entry = [mtime_ns, size, None, str(exc), inode]
            out.append(entry)
            continue
        summary = summarise(record, study_latencies(record, samples, path))
        summary[F["loc"]] = bundle
        files[path] = entry = [mtime_ns, size, summary, "", inode]
        out.append(entry)
        if record["uid"] not in seen:
            seen.add(record["uid"])
            trace = copy_trace(record, path, os.path.dirname(results_dir))
            parts.append(detail_js(record, text, samples, path, name, f"{bundle}:{record['uid']}", trace))
    target = os.path.join(results_dir, bundle + ".js")
    detail = None
    if parts:
        write_file(target, b"".join(parts))
        st = os.stat(target)
        detail = [st.st_size, st.st_mtime_ns, st.st_ino]
    else:
        try:
            os.unlink(target)
        except FileNotFoundError:
            pass
    write_file(os.path.join(state_dir, bundle + ".json"), seal_state(key, bundle, {"detail": detail, "files": files}))
    return out


# The state of a bundle: b"cr-dashboard-state " + HMAC-SHA256 hex + b"\n" + its JSON. The
# state holds the summaries the next build shows without reading the records again, so
# whoever could write it could put figures on the site that no record holds: it is sealed
# with a key that lives in CR_HOME, not in the site's folder (cr.dashboard.build._cache_key),
# and bound to its bundle's name, so a state edited, corrupted, copied from another folder or
# moved to another bundle fails open_state and its records are read again.
_STATE_MAGIC = b"cr-dashboard-state "


def seal_state(key: bytes, bundle: str, state: dict) -> bytes:
    body = _fast_json(state)  # 5-10x json.dumps
    if body is None:
        body = json.dumps(state, separators=(",", ":")).encode("utf-8")
    return _STATE_MAGIC + _mac(key, bundle, body).encode("ascii") + b"\n" + body


def open_state(key: bytes, bundle: str, blob: bytes) -> dict | None:
    """The state seal_state wrote for bundle, or None when blob is not that (corrupt, edited, another key or bundle)."""
    if not blob.startswith(_STATE_MAGIC):
        return None
    head, _, body = blob.partition(b"\n")
    if not hmac.compare_digest(head[len(_STATE_MAGIC):], _mac(key, bundle, body).encode("ascii")):
        return None
    try:
        state = _loads(body)
    except ValueError:
        return None
    if not (isinstance(state, dict) and isinstance(state.get("files"), dict)):
        return None
    return state


def _mac(key: bytes, bundle: str, body: bytes) -> str:
    return hmac.new(key, bundle.encode("utf-8", "surrogateescape") + b"\0" + body, hashlib.sha256).hexdigest()


TRACES_DIR = "traces"  # beside data/results: data/traces/<sha256>.trace.json.gz
TRACE_MAX_BYTES = 64 * 2**20
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def copy_trace(record: dict, record_path: str, data_dir: str) -> str | None:
    """Copy a profile's trace file into the site, so that its result page can link to it;
    the site-relative path, or None (no trace, or not the one the record names).

    The record is input like any other: only a plain file name ending .trace.json.gz,
    beside the record, at most TRACE_MAX_BYTES, whose sha256 is the one the record
    states, is copied, under that sha256 (so a trace is kept once however many builds and
    bundles meet it, and no name of the record's reaches the site's file system).
    """
    trace = record.get("trace")
    if not isinstance(trace, dict):
        return None
    name, sha = trace.get("file"), trace.get("sha256")
    if not (isinstance(name, str) and isinstance(sha, str) and _SHA256_RE.match(sha) and name.endswith(TRACE_SUFFIX)
            and name == os.path.basename(name) and "\\" not in name):
        return None
    rel = f"data/{TRACES_DIR}/{sha}{TRACE_SUFFIX}"
    target = os.path.join(data_dir, TRACES_DIR, sha + TRACE_SUFFIX)
    if os.path.isfile(target):
        return rel
    source = os.path.join(os.path.dirname(record_path), name)
    try:  # no link followed, and a FIFO or device is not waited on: it is refused
        fd = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            blob = f.read(TRACE_MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(blob) > TRACE_MAX_BYTES or hashlib.sha256(blob).hexdigest() != sha:
        return None
    with atomic_file(target, suffix=f".{os.getpid()}.tmp") as f:  # <pid>.tmp: a killed build's is swept
        f.write(blob)
    return rel


def write_bundles(jobs: list, results_dir: str, state_dir: str, key: bytes) -> list[list[list]]:
    """write_bundle() for each (bundle, items): one task of the builder's worker pool."""
    import gc

    collecting = gc.isenabled()
    gc.disable()  # as in build(): many small containers, no cycles
    try:
        return [write_bundle(bundle, items, results_dir, state_dir, key) for bundle, items in jobs]
    finally:
        if collecting:
            gc.enable()


def write_file(target: str, blob: bytes) -> None:
    """Write blob at target (0644 under the usual umask). A file that exists is replaced
    through a temp file and a rename, so a reader never sees half of it; a new one is
    written in place (the rename would cost a second metadata update for each of
    thousands of files)."""
    exists = os.path.exists(target)
    path = f"{target}.{os.getpid()}.tmp" if exists else target
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    if exists:
        os.replace(path, target)
