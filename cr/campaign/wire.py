"""What crosses between the coordinator and a worker, whatever carries it (Dask, Ray, a
batch system's files): a job's payload, and the outcome that comes back.

    archives = Archives()                          # coordinator: each solution packed once a run
    payload = job_payload(job, *archives.get(job.solution))
    outcome = to_wire(run_here(...))               # worker: latencies as the codec's bytes
    outcome = from_wire(outcome)                   # coordinator (Run.finished does it): checked

A payload is {"job": CampaignJob.to_dict(), "kind": "job" | "noop", "archive": the
solution's archive bytes, "sha256": their hex digest}; the worker checks the digest before
it unpacks anything (cr.campaign.worker).

An outcome (cr.campaign.jobs.run_here) is {"status", "records", "error", "started",
"ended", ...}. In memory a record's raw latencies are an array('q'). On the wire each
record's "raw" is cr.results.latencies.side_raw(blob) ({"format", "count", "sha256"}) and
the outcome's "latencies" holds the blobs, one per record (None for a record without
latencies): little-endian int64 bytes (the codec's encode), never a JSON list. from_wire
decodes them, checking count and sha256. A channel that carries JSON only (a child's
stdout) carries the blobs as side files: to_files / from_files.
"""
from __future__ import annotations

from array import array
from pathlib import Path

from ..errors import CRError
from ..results.latencies import SIDE_SUFFIX, decode, encode, read_side, side_raw
from .spec import CampaignJob


class Archives:
    """The solutions' archives of one run, each packed once: ref -> (bytes, sha256)."""

    def __init__(self):
        self._packed: dict[str, tuple[bytes, str]] = {}

    def get(self, ref: str) -> tuple[bytes, str]:
        if ref not in self._packed:
            import hashlib
            import tempfile

            from ..archive import pack

            with tempfile.TemporaryDirectory(prefix="cr-campaign-") as tmp:
                data = Path(pack(ref, output=tmp + "/")).read_bytes()
            self._packed[ref] = (data, hashlib.sha256(data).hexdigest())
        return self._packed[ref]


def job_payload(job: CampaignJob, archive: bytes | None = None, sha256: str | None = None, noop: bool = False) -> dict:
    """What a worker is sent for job (noop: the round trip only, for measuring dispatch)."""
    payload = {"job": job.to_dict(), "kind": "noop" if noop else "job"}
    if not noop:
        payload["archive"], payload["sha256"] = archive, sha256
    return payload


def _latencies(record) -> object:
    raw = record.get("raw") if isinstance(record, dict) else None
    return raw.get("latencies_ns") if isinstance(raw, dict) else None


def to_wire(outcome: dict) -> dict:
    """outcome with each record's latencies as encoded bytes in "latencies" (see above)."""
    records, blobs = [], []
    for record in outcome.get("records") or []:
        values = _latencies(record)
        blob = encode(values) if isinstance(values, (array, list)) else None
        if blob is not None:
            record = {**record, "raw": side_raw(blob)}
        records.append(record)
        blobs.append(blob)
    return {**outcome, "records": records, "latencies": blobs}


def from_wire(outcome: dict) -> dict:
    """outcome with its records' latencies back as array('q'), each checked against the count
    and sha256 its record names; an outcome without "latencies" (in memory) as it is.
    LatencyError (a CRError) naming the record for bytes that do not match."""
    blobs = outcome.get("latencies")
    if blobs is None:
        return outcome
    records = list(outcome.get("records") or [])
    if not isinstance(blobs, list) or len(blobs) != len(records):
        raise CRError(f"the outcome holds {len(records)} record(s) but latencies for "
                      f"{len(blobs) if isinstance(blobs, list) else type(blobs).__name__}")
    for i, (record, blob) in enumerate(zip(records, blobs)):
        if blob is None:
            continue
        raw = record.get("raw") if isinstance(record, dict) else None
        if not isinstance(blob, bytes) or not isinstance(raw, dict):
            raise CRError(f"record {i} of the outcome: its latencies are not bytes described by its raw")
        count, sha = raw.get("count"), raw.get("sha256")
        values = decode(blob, count if isinstance(count, int) else -1, sha if isinstance(sha, str) else "",
                        source=f"result {record.get('uid')}: the latencies that came with it")
        records[i] = {**record, "raw": {"latencies_ns": values}}
    return {k: v for k, v in outcome.items() if k != "latencies"} | {"records": records}


def to_files(outcome: dict, folder: str | Path) -> dict:
    """outcome (in memory or on the wire) with its latencies written as side files in folder
    (N.latencies.i64 for record N), each record's "raw" naming its file: JSON only."""
    wired = to_wire(from_wire(outcome))
    records = []
    for i, (record, blob) in enumerate(zip(wired["records"], wired.pop("latencies"))):
        if blob is not None:
            name = f"{i}{SIDE_SUFFIX}"
            (Path(folder) / name).write_bytes(blob)
            record = {**record, "raw": side_raw(blob, name)}
        records.append(record)
    return {**wired, "records": records}


def from_files(outcome: dict, folder: str | Path) -> dict:
    """The in-memory outcome of to_files' outcome and folder, each side file checked against
    the count and sha256 its record names (LatencyError)."""
    records = []
    for i, record in enumerate(outcome.get("records") or []):
        raw = record.get("raw") if isinstance(record, dict) else None
        if isinstance(raw, dict) and "latencies_ns_file" in raw:
            where = f"result {record.get('uid')}"
            record = {**record, "raw": {"latencies_ns": read_side(Path(folder) / f"{i}{SIDE_SUFFIX}", raw, where)}}
        records.append(record)
    return {**outcome, "records": records}
