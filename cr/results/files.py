"""The files of one stored result: where they live, how they are written, read and checked.

    <xx>/<uid>.json              the record, one line per top-level field (record_bytes)
    <xx>/<uid>.latencies.i64     its raw latencies, little-endian int64, named, counted and
                                 hashed in the record's "raw" (xx: the uid's first two digits)

The latencies' encoding is cr.results.latencies'; int64s and read_side here are its
functions with their errors as InvalidResult (same messages).
"""
from __future__ import annotations

import json
import re
from array import array
from pathlib import Path

from .. import jsonio
from . import latencies
from .latencies import SIDE_SUFFIX, LatencyError
from .validate import InvalidResult, problems

UID = re.compile(r"^[0-9a-f]{16}$")


def record_file(uid: str) -> str:
    """Where the record of uid lives, relative to the store's root."""
    return f"{uid[:2]}/{uid}.json"


def side_file(uid: str) -> str:
    """Where the raw latencies of uid live, relative to the store's root."""
    return f"{uid[:2]}/{uid}{SIDE_SUFFIX}"


def uid_of_file(rel: str) -> str | None:
    """The uid whose record belongs at rel ('ab/ab12....json'), None for any other path."""
    stem = rel.rsplit("/", 1)[-1][:-len(".json")] if rel.endswith(".json") else ""
    return stem if UID.match(stem) and rel == record_file(stem) else None


def record_bytes(record: dict) -> bytes:
    """A record as stored: one line per top-level field, each value compact.

    Readable and editable by hand (uid, status, each part on its own line), and 5-10x
    faster to write than json.dumps(indent=2), which runs Python's pure encoder.
    NaN and Infinity are refused (ValueError): no JSON reader, cr.jsonio included, reads them back.
    """
    lines = [f"  {json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False, allow_nan=False)}"
             for key, value in record.items()]
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def load(root: Path, rel: str) -> tuple[dict | None, str | None]:
    """(record, None) for a valid result file at root/rel; (None, problem) otherwise, the
    problem naming the file; (None, None) when it is gone."""
    path = root / rel
    try:
        # a regular file only, never waited on; bounded in size and depth, no NaN (cr.jsonio)
        record = jsonio.load_file(path)
    except jsonio.MissingFile:
        return None, None
    except jsonio.InvalidJSON as exc:
        return None, exc.message
    found = problems(record, str(path))
    if not found:
        uid = record["uid"]
        raw = record["raw"]
        if rel != record_file(uid):
            found = [f"{path}: /uid: a result {uid} belongs in {record_file(uid)}"]
        elif isinstance(raw, dict) and raw.get("latencies_ns_file", uid + SIDE_SUFFIX) != uid + SIDE_SUFFIX:
            found = [f"{path}: /raw/latencies_ns_file: expected {uid + SIDE_SUFFIX!r}, found {raw['latencies_ns_file']!r}"]
    if found:
        more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
        return None, found[0] + more
    return record, None


def int64s(values, where: str) -> array:
    """values (an array, or a list of integers from JSON) as array('q'): latencies.int64s,
    InvalidResult when they are not int64 integers."""
    try:
        return latencies.int64s(values, where)
    except LatencyError as exc:
        raise InvalidResult(exc.message) from None


def read_side(path: Path, raw: dict, where: str) -> array:
    """A side file's int64 values, checked against the record's count and sha256:
    latencies.read_side, InvalidResult when it is missing, unreadable or does not match."""
    try:
        return latencies.read_side(path, raw, where)
    except LatencyError as exc:
        raise InvalidResult(exc.message) from None


def same_bytes(path: Path, data: bytes) -> bool:
    """Whether path already holds exactly data (re-adding a result rewrites nothing)."""
    try:
        if path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False
