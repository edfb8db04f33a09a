"""Raw benchmark latencies (int64 nanoseconds, one per query, in issue order): the one codec.

Every place that turns latencies into bytes or JSON, or back, goes through here: the
runtime child (its latencies file), the host reading it (cr.run.launch), the record
writer (cr.results.record), the results store (cr.results.files, cr.results.store),
exports, the dashboard and publishing. Standard library only (array, os, sys, hashlib
when hashing; and cr.errors): the measured child imports this module, and it must stay
as light as the runtime.

On the wire:

    bytes        little-endian int64, 8 bytes a value, nothing else (no header): encode/decode
    side file    ``<record stem>.latencies.i64`` (SIDE_SUFFIX) beside a record, whose "raw" is
                 {"latencies_ns_file", "format": "int64-le" (SIDE_FORMAT), "count", "sha256"}
                 (side_raw; read back checked by read_side)
    inline       "raw": {"latencies_ns": [int, ...]} in the record itself (inline_raw; a JSON
                 list read back by int64s)
    child file   ``latencies.i64`` (CHILD_FILE) in the child's result directory, described in
                 its result as "raw": {"file", "dtype": "int64", "byteorder", "count"}
                 (write_child / read_child)

In memory latencies are an array('q') (native byte order), whatever they were read from.
"""
from __future__ import annotations

import os
import sys
from array import array

from ..errors import CRError

SIDE_SUFFIX = ".latencies.i64"
SIDE_FORMAT = "int64-le"
CHILD_FILE = "latencies.i64"

__all__ = ["SIDE_SUFFIX", "SIDE_FORMAT", "CHILD_FILE", "LatencyError", "encode", "decode", "digest", "int64s",
           "inline_raw", "side_raw", "read_side", "write_child", "read_child"]


class LatencyError(CRError):
    """Latencies that are not what they claim: bytes of the wrong size or hash, a list
    holding something other than int64 integers, a side file missing or unreadable. The
    message is complete (it names where and what); the results store re-raises it as
    InvalidResult with the same message (cr.results.files)."""


def encode(values) -> bytes:
    """values (an array('q'), or any iterable of ints that fit in int64) as little-endian
    int64 bytes. OverflowError / TypeError for values that are not such ints."""
    if not (isinstance(values, array) and values.typecode == "q"):
        values = array("q", values)
    if sys.byteorder == "little":
        return values.tobytes()
    swapped = array("q", values)
    swapped.byteswap()
    return swapped.tobytes()


def digest(blob: bytes) -> str:
    """The sha256 (hex) of encoded latencies, as a side file's "raw" names it."""
    import hashlib  # here: loading it (OpenSSL) is paid only by who hashes latencies

    return hashlib.sha256(blob).hexdigest()


def decode(blob: bytes, count: int | None = None, sha256: str | None = None, source: str = "latencies",
           byteorder: str = "little") -> array:
    """blob (int64 values in byteorder: 'little', or 'big') as array('q').

    Checked in this order, LatencyError with source (what blob is, for the message, e.g.
    "result ab12...: /path/ab12....latencies.i64") at the start of its message:
    count (when given) against the size of blob, blob being a whole number of int64
    values, then sha256 (when given: its hex digest) against blob's.
    """
    if count is not None and len(blob) != 8 * count:
        raise LatencyError(f"{source} holds {len(blob)} bytes, expected {8 * count} ({count} int64 values)")
    if len(blob) % 8:
        raise LatencyError(f"{source} is not a whole number of int64 values ({len(blob)} bytes)")
    if sha256 is not None and digest(blob) != sha256:
        raise LatencyError(f"{source} does not match the sha256 in the record (changed or damaged)")
    values = array("q")
    values.frombytes(blob)
    if byteorder != sys.byteorder:
        values.byteswap()
    return values


def int64s(values, where: str) -> array:
    """values (an array('q') as it is, or a JSON list of integers: "raw"."latencies_ns") as
    array('q'). Integral floats (1.0) are taken as integers; LatencyError naming where and
    the JSON pointer for anything else, or for a value that does not fit in int64."""
    if isinstance(values, array) and values.typecode == "q":
        return values
    try:
        return array("q", values)
    except TypeError:
        pass
    except OverflowError:
        raise LatencyError(f"{where}: /raw/latencies_ns: a value does not fit in int64") from None
    out = array("q")
    for i, v in enumerate(values):
        if isinstance(v, float) and v.is_integer():
            out.append(int(v))
        elif isinstance(v, int) and not isinstance(v, bool):
            out.append(v)
        else:
            raise LatencyError(f"{where}: /raw/latencies_ns/{i}: expected an integer, found {v!r}")
    return out


def inline_raw(values) -> dict:
    """A record's "raw" with the latencies inline: {"latencies_ns": [int, ...]} (a plain
    list, ready for JSON)."""
    return {"latencies_ns": values.tolist() if isinstance(values, array) else list(values)}


def side_raw(blob: bytes, name: str | None = None) -> dict:
    """A record's "raw" for latencies kept in a side file holding blob (encode()'s bytes):
    {"latencies_ns_file": name, "format": SIDE_FORMAT, "count", "sha256"}, in this order;
    without "latencies_ns_file" when name is None (a content address not yet named)."""
    raw = {"latencies_ns_file": name} if name is not None else {}
    raw.update(format=SIDE_FORMAT, count=len(blob) // 8, sha256=digest(blob))
    return raw


def read_side(path, raw: dict, where: str) -> array:
    """The latencies in the side file at path, checked against the record's "raw" (its
    format when given; its count and sha256 when they are an int and a string).
    LatencyError, its message starting with where, when the format is another, the file
    is missing or unreadable, or its bytes do not match (decode's checks)."""
    if raw.get("format", SIDE_FORMAT) != SIDE_FORMAT:
        raise LatencyError(f"{where}: /raw/format: expected {SIDE_FORMAT!r}, found {raw.get('format')!r}")
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except FileNotFoundError:
        raise LatencyError(f"{where}: its raw latencies file {path} is missing") from None
    except OSError as exc:
        raise LatencyError(f"{where}: cannot read {path} ({exc.strerror or exc})") from None
    count, sha256 = raw.get("count"), raw.get("sha256")
    return decode(blob, count if isinstance(count, int) else None, sha256 if isinstance(sha256, str) else None,
                  source=f"{where}: {path}")


def write_child(folder: str, values) -> dict:
    """Write values (array('q')) as the child's latencies file, CHILD_FILE in folder,
    little-endian; returns what the child's result says of it:
    {"file": CHILD_FILE, "dtype": "int64", "byteorder": "little", "count"}."""
    blob = encode(values)
    with open(os.path.join(folder, CHILD_FILE), "wb") as f:
        f.write(blob)
    return {"file": CHILD_FILE, "dtype": "int64", "byteorder": "little", "count": len(blob) // 8}


def read_child(folder, raw: dict) -> array | None:
    """The latencies a child left in folder, as its result's "raw" describes them (in the
    byteorder it names: 'little' from write_child; a child that wrote native order named
    its own; none named: this machine's); None when raw names no CHILD_FILE or it is
    not there. Not checked beyond decode's whole-number check: the child is this
    package, run a moment ago."""
    path = os.path.join(folder, CHILD_FILE)
    if raw.get("file") != CHILD_FILE or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        blob = f.read()
    return decode(blob, source=path, byteorder=raw.get("byteorder", sys.byteorder))
