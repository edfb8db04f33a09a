"""Checking result records against cr/results/schema/result.json (the Result contract).

A valid record is decided by cr.store.fastvalid (no jsonschema import); only an invalid
one pays for jsonschema, which words its problems the way `cr check` words a bad meta:
file, JSON pointer, what was expected and what was found.

Latencies, rates, durations and counts must be finite and >= 0. The schema says so with
minimum 0 and maximum (the largest double; "$defs/amount"), which refuse negatives and
both infinities; NaN passes every bound (it compares false with everything), so the
fields of FINITE are also checked here for NaN, which Python's json reads from "NaN" and
a computation can produce. Raw latencies are integers (the schema's type refuses NaN);
latency_problem() checks an int64 array of them for negatives, for callers that hold
them as an array rather than in the record (the upload server).
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from ..errors import CRError

SCHEMA_FILE = Path(__file__).resolve().parent / "schema" / "result.json"
FORMAT = 1
_DOUBLE_MAX = 1.7976931348623157e308  # "$defs/amount"'s maximum: refuses Infinity


class InvalidResult(CRError):
    """A result record that is not valid JSON or violates the Result schema."""


@lru_cache(maxsize=None)
def schema() -> dict:
    """The result schema, parsed once per process (callers must not modify it)."""
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def _fast():
    from ..store.fastvalid import Validator

    s = schema()
    return Validator(s, {s["$id"]: s}, {})


#: where a NaN is refused: (path to an object, its keys; None: every key); the schema
#: bounds the same fields with "$defs/amount"
FINITE = (
    (("metrics",), ("duration_s",)),
    (("metrics", "latency_ns"), None),
    (("metrics", "throughput"), ("queries_per_s", "samples_per_s")),
    (("runtime",), ("seconds",)),
)


def _nan_problems(record: dict, where: str) -> list[str]:
    found = []
    for path, keys in FINITE:
        node = record
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        for key in node if keys is None else keys:
            value = node.get(key)
            if isinstance(value, float) and math.isnan(value):
                pointer = "/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in (*path, key))
                found.append(f"{where}: {pointer}: expected a finite number >= 0, found NaN")
    return found


def latency_problem(values, where: str = "result") -> str | None:
    """'where: /raw/latencies_ns/i: ...' for the first negative value of values (raw
    latencies as an array('q') or a list of ints), None when there is none."""
    if not len(values) or min(values) >= 0:
        return None
    i = next(i for i, v in enumerate(values) if v < 0)
    return f"{where}: /raw/latencies_ns/{i}: expected a latency >= 0 ns, found {values[i]}"


def problems(record: object, where: str = "result") -> list[str]:
    """Every schema problem of record as 'where: /pointer: message', sorted; [] when valid."""
    if not isinstance(record, dict):
        return [f"{where}: /: expected a JSON object, found {type(record).__name__}"]
    nan = _nan_problems(record, where)
    try:
        if _fast().is_valid(record):
            return nan
    except RecursionError:  # absurd nesting: jsonschema has the last word
        pass
    import jsonschema

    from ..store.meta import describe_error

    found = set()
    for error in jsonschema.Draft202012Validator(schema()).iter_errors(record):
        pointer, message = describe_error(error)
        message = message.replace(f"a number <= {_DOUBLE_MAX!r}", "a finite number >= 0")  # (Infinity)
        found.add(f"{where}: {pointer or '/'}: {message}")
    # (none found: the fast validator and jsonschema disagree; trust jsonschema)
    return sorted(found.union(nan))
