"""Export of stored results: CSV (the summary columns, one row per result) or JSON (full records).

Records are written one at a time, never all held in memory; a file is written to a temp
file beside it and renamed into place, so an interrupted export leaves no half file.
"""
from __future__ import annotations

import csv
import json
import os
import sys

from ..errors import CRError
from ..fsutil import atomic_file
from .latencies import inline_raw
from .summary import COLUMNS

FORMATS = ("csv", "json")


def export(store, fmt: str, out=None, raw: bool = True, **filters) -> int:
    """See ResultStore.export. out: a path, a text stream, or None (stdout)."""
    if fmt not in FORMATS:
        raise CRError(f"unknown export format {fmt!r}", hint="use csv or json")
    rows = store.list(**filters)
    if out is None or out == "-":
        return _write(store, fmt, rows, sys.stdout, raw)
    if not isinstance(out, (str, os.PathLike)):
        return _write(store, fmt, rows, out, raw)
    with atomic_file(out, "w", encoding="utf-8", newline="", hint="check free disk space and permissions") as stream:
        count = _write(store, fmt, rows, stream, raw)
    return count


def _write(store, fmt: str, rows: list[dict], stream, raw: bool) -> int:
    if fmt == "csv":
        writer = csv.DictWriter(stream, fieldnames=list(COLUMNS), extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        return len(rows)
    stream.write("[")
    count = 0
    for row in rows:
        try:
            record = store.get(row["uid"], raw=raw)
        except CRError as exc:  # removed or broken since it was listed: said, and left out
            from ..events import reporter

            reporter().warning(f"{exc.message} (left out of the export)")
            continue
        if raw:
            latencies = (record.get("raw") or {}).get("latencies_ns")
            record["raw"] = inline_raw(latencies) if latencies is not None else None
        else:
            record["raw"] = None
        # one record a line: json's C encoder (indent= would run the pure-Python one, 10x slower)
        stream.write(("," if count else "") + "\n" + json.dumps(record, ensure_ascii=False))
        count += 1
    stream.write("\n]\n" if count else "]\n")
    return count

