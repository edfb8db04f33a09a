"""Result records: the local store (JSON files + SQLite index), compare and export.

    from cr.results import default_store
    uid = default_store().add(record)

Public names: ResultStore, default_store, InvalidResult (cr.results.store); the summary
columns (cr.results.summary.COLUMNS); the record schema (cr/results/schema/result.json,
checked by cr.results.validate.problems); the raw-latency codec (cr.results.latencies).

Importing this package imports nothing: the names above load cr.results.store on first
use (PEP 562), so the runtime child can import cr.results.latencies (standard library
only) without the store, sqlite3 or jsonschema.
"""
from __future__ import annotations

__all__ = ["InvalidResult", "ResultStore", "default_store"]


def __getattr__(name: str):
    if name in __all__:
        from . import store

        value = getattr(store, name)
        globals()[name] = value  # looked up once
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
