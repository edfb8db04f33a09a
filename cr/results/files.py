"""The files of one stored result: where they live, how they are written, read and checked.

    <xx>/<uid>.json              the record, one line per top-level field (record_bytes)
    <xx>/<uid>.latencies.i64     its raw latencies, little-endian int64, named, counted and
                                 hashed in the record's "raw" (xx: the uid's first two digits)
"""
from __future__ import annotations

import json
import re
import sys
from array import array
from pathlib import Path

from .validate import InvalidResult, problems

SIDE_SUFFIX = ".latencies.i64"
SIDE_FORMAT = "int64-le"
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
    """
    lines = [f"  {json.dumps(key, ensure_ascii=False)}: {json.dumps(value, ensure_ascii=False)}" for key, value in record.items()]
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def load(root: Path, rel: str) -> tuple[dict | None, str | None]:
    """(record, None) for a valid result file at root/rel; (None, problem) otherwise, the
    problem naming the file; (None, None) when it is gone."""
    path = root / rel
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{path}: cannot read ({exc.strerror or exc})"
    try:
        record = json.loads(data)
    except json.JSONDecodeError as exc:
        return None, f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    except ValueError as exc:  # not UTF-8
        return None, f"{path}: not UTF-8 JSON text ({exc})"
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


def little_endian(values: array) -> bytes:
    if sys.byteorder == "little":
        return values.tobytes()
    swapped = array("q", values)
    swapped.byteswap()
    return swapped.tobytes()


def int64s(values, where: str) -> array:
    """values (an array, or a list of integers from JSON) as array('q')."""
    if isinstance(values, array) and values.typecode == "q":
        return values
    try:
        return array("q", values)
    except TypeError:
        pass
    except OverflowError:
        raise InvalidResult(f"{where}: /raw/latencies_ns: a value does not fit in int64") from None
    out = array("q")
    for i, v in enumerate(values):
        if isinstance(v, float) and v.is_integer():
            out.append(int(v))
        elif isinstance(v, int) and not isinstance(v, bool):
            out.append(v)
        else:
            raise InvalidResult(f"{where}: /raw/latencies_ns/{i}: expected an integer, found {v!r}")
    return out


def read_side(path: Path, raw: dict, where: str) -> array:
    """A side file's int64 values, checked against the record's count and sha256."""
    if raw.get("format", SIDE_FORMAT) != SIDE_FORMAT:
        raise InvalidResult(f"{where}: /raw/format: expected {SIDE_FORMAT!r}, found {raw.get('format')!r}")
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        raise InvalidResult(f"{where}: its raw latencies file {path} is missing") from None
    except OSError as exc:
        raise InvalidResult(f"{where}: cannot read {path} ({exc.strerror or exc})") from None
    count, digest = raw.get("count"), raw.get("sha256")
    if isinstance(count, int) and len(blob) != 8 * count:
        raise InvalidResult(f"{where}: {path} holds {len(blob)} bytes, expected {8 * count} ({count} int64 values)")
    if len(blob) % 8:
        raise InvalidResult(f"{where}: {path} is not a whole number of int64 values ({len(blob)} bytes)")
    import hashlib  # here: only reading or writing latencies needs it

    if isinstance(digest, str) and hashlib.sha256(blob).hexdigest() != digest:
        raise InvalidResult(f"{where}: {path} does not match the sha256 in the record (changed or damaged)")
    values = array("q")
    values.frombytes(blob)
    if sys.byteorder != "little":
        values.byteswap()
    return values


def same_bytes(path: Path, data: bytes) -> bool:
    """Whether path already holds exactly data (re-adding a result rewrites nothing)."""
    try:
        if path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False
