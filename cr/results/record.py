"""The result record of one action run (DESIGN.md "Result", a contract).

    {"format": 1, "uid", "action", "status": "ok" | "failed", "started", "ended",
     "cr_version", "components": [{ref, kind, name, version, uid, repo, sha256}],
     "backend": {name, entry, origin, options, info}, "lock": {...} | null,
     "platform": {...}, "config": {every parameter, as run}, "inputs": {...},
     "model_file": {path, sha256, package, package_version}, "metrics": {...} | null,
     "pipeline": {sha256, preprocess, postprocess, variant, precision},
     "validation": {outcome, checks, top1, ...} (validate), "predictions": [...] (run),
     "parity": {outcome, pairs} (validate --parity),
     "raw": {"latencies_ns": [...]} | {"latencies_ns_file", "format", "count", "sha256"},
     "error": null | {kind, message, hint, ...}, "runtime": {python, executable, pid},
     "machine": {start, end, during, summary} (benchmark: cr.run.monitor),
     "image": {digest, id, solution, lock_sha256, software} (only inside an image that
     `cr export solution` built: docs/containers.md),
     and every other key the action's child returned (a user action's own outputs)}

Raw latencies are inline up to INLINE_MAX values; beyond, they go beside the record as
``<record stem>.latencies.i64`` (little-endian int64) named, counted and hashed in "raw"
(both shapes: cr.results.latencies).
"""
from __future__ import annotations

import datetime as _dt
import secrets
from array import array
from pathlib import Path

from ..__about__ import __version__
from ..fsutil import atomic_write_bytes, atomic_write_json
from .latencies import SIDE_SUFFIX, encode, inline_raw, side_raw

FORMAT = 1
INLINE_MAX = 100_000


def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def component_entry(info: dict) -> dict:
    from ..store.catalog import component_sha256

    entry = {
        "ref": info["ref"], "kind": info["kind"], "name": info["name"], "version": info["version"],
        "uid": info["uid"], "repo": info["repo"], "sha256": component_sha256(info["meta"]),
    }
    task = info["meta"].get("task")
    if info["kind"] in ("model", "solution") and isinstance(task, str):
        entry["task"] = task  # what the dashboard groups by, also for benchmark-only runs
    return entry


def image_provenance() -> dict | None:
    """The image this process runs in, when `cr export solution` built it: what the image
    says of itself ($REEFKIT_IMAGE, a JSON file: solution, lock sha256, locked versions)
    and what only its runner can know (an image cannot hold its own digest):
    $REEFKIT_IMAGE_DIGEST (the manifest digest), else podman's /run/.containerenv imageid."""
    import os

    path = os.environ.get("REEFKIT_IMAGE")
    if not path:
        return None
    from ..jsonio import loads, read_file

    try:
        info = loads(read_file(path, where=path), path)
    except Exception:  # an unreadable file says so in the record; it never fails a run
        info = {}
    info = info if isinstance(info, dict) else {}
    out = {"digest": os.environ.get("REEFKIT_IMAGE_DIGEST") or None, "id": None,
           "solution": info.get("solution"), "lock_sha256": info.get("lock_sha256"),
           "software": info.get("software")}
    try:
        with open("/run/.containerenv", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.strip().partition("=")
                if key == "imageid":
                    out["id"] = value.strip('"') or None
    except OSError:
        pass
    return out


def new(action: str, components: list[dict], backend: dict, config: dict, lock: dict | None, started: str) -> dict:
    from ..platform import current

    record = {
        "format": FORMAT,
        "uid": secrets.token_hex(8),
        "action": action,
        "status": None,
        "started": started,
        "ended": None,
        "cr_version": __version__,
        "components": components,
        "backend": backend,
        "lock": lock,
        "platform": current().to_dict(),
        "config": config,
        "inputs": None,
        "model_file": None,
        "metrics": None,
        "pipeline": None,
        "raw": None,
        "error": None,
        "runtime": None,
    }
    image = image_provenance()
    if image is not None:
        record["image"] = image
    return record


# keys the host owns: a child's result cannot set them (status, error, raw and backend_info
# are taken from it below, each in its own way)
RESERVED = frozenset({"format", "uid", "action", "status", "started", "ended", "cr_version", "components", "backend",
                      "lock", "platform", "config", "raw", "error", "backend_info", "image"})


def complete(record: dict, result: dict, latencies: array | None) -> dict:
    """Fill record from the child's result (ok or failed): its status and error, and every
    other key it returns (metrics, validation, a user action's own ...), except the
    RESERVED ones and those starting with "_" (the child's private notes)."""
    record["ended"] = now()
    record["status"] = result.get("status", "failed")
    record["error"] = result.get("error")
    for key, value in result.items():
        if value is not None and key not in RESERVED and not key.startswith("_"):
            record[key] = value
    if result.get("backend_info") is not None:
        record["backend"]["info"] = result["backend_info"]
    if latencies is not None:
        record["raw"] = {"latencies_ns": latencies}  # turned into a list or a file by write()/to_json()
    return record


def write(record: dict, path: str | Path) -> Path:
    """Write the record as JSON at path (and its latencies beside it when there are many)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = dict(record)
    raw = record.get("raw") or {}
    values = raw.get("latencies_ns")
    if isinstance(values, array) and len(values) > INLINE_MAX:
        blob = encode(values)
        side = path.with_name(path.stem + SIDE_SUFFIX)
        atomic_write_bytes(side, blob, durable=True)
        data["raw"] = side_raw(blob, side.name)
    atomic_write_json(path, to_json(data), durable=True)
    return path


def to_json(record: dict) -> dict:
    """The record with raw latencies as a plain list (for printing or writing)."""
    raw = record.get("raw") or {}
    if isinstance(raw.get("latencies_ns"), array):
        record = {**record, "raw": inline_raw(raw["latencies_ns"])}
    return record
