"""A profile's trace file beside its result record.

    <xx>/<uid>.trace.json.gz     in the results store, beside <xx>/<uid>.json
    <stem>.trace.json.gz         beside a record written with -o <stem>.json

Gzipped Chrome Trace Event JSON (Perfetto and chrome://tracing open .json.gz as is).
The record's "trace" names the file and holds its sha256 and size, so a copied or
edited trace is detected (check()). The store's listing reads only ``*.json`` files, so
the trace is never taken for a record.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

from ..errors import CRError
from ..fsutil import atomic_write_bytes

SUFFIX = ".trace.json.gz"


def encode(trace: dict) -> bytes:
    """Deterministic bytes of a trace (gzip without a timestamp)."""
    return gzip.compress(json.dumps(trace, separators=(",", ":")).encode("utf-8"), mtime=0)


def entry(blob: bytes, name: str, events: int) -> dict:
    """The record's "trace" for blob kept under name."""
    return {"file": name, "format": "chrome-trace-json+gzip", "sha256": hashlib.sha256(blob).hexdigest(),
            "bytes": len(blob), "events": events}


def write(blob: bytes, path: str | Path) -> Path:
    """Write the trace at path (gzipped when the name ends .gz, else plain JSON)."""
    path = Path(path)
    atomic_write_bytes(path, blob if path.name.endswith(".gz") else gzip.decompress(blob), durable=True)
    return path


def trace_file(uid: str) -> str:
    """Where the trace of uid lives, relative to the results store's root."""
    return f"{uid[:2]}/{uid}{SUFFIX}"


def beside_store(root: str | Path, uid: str) -> Path:
    return Path(root) / trace_file(uid)


def beside_output(output: str | Path) -> Path:
    output = Path(output)
    return output.with_name(output.stem + SUFFIX)


def load(path: str | Path, expected_sha256: str | None = None) -> dict:
    """The trace object at path (gzipped or plain); CRError naming the file when it is
    unreadable or its sha256 is not the record's."""
    path = Path(path)
    try:
        blob = path.read_bytes()
    except OSError as exc:
        raise CRError(f"cannot read the trace {path}: {exc.strerror or exc}", hint="the trace lies beside its result record") from None
    if expected_sha256 and path.name.endswith(".gz") and hashlib.sha256(blob).hexdigest() != expected_sha256:
        raise CRError(f"the trace {path} is not the one its record names (sha256 differs)",
                      hint="it was replaced or edited after the profile; profile again")
    try:
        text = gzip.decompress(blob) if blob[:2] == b"\x1f\x8b" else blob
        return json.loads(text)
    except (OSError, ValueError) as exc:
        raise CRError(f"the trace {path} is not Chrome Trace JSON: {exc}", hint="profile again") from None


def is_profiled(record: dict) -> bool:
    """A benchmark that ran with a framework's profiler on (e.g. -O profile=true on
    onnxruntime): its latencies are profiled ones, so it stays out of the leaderboard."""
    return record.get("action") == "benchmark" and bool(record.get("profile"))
