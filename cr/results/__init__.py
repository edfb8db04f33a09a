"""Result records: the local store (JSON files + SQLite index), compare and export.

    from cr.results import default_store
    uid = default_store().add(record)

Public names: ResultStore, default_store, InvalidResult (cr.results.store); the summary
columns (cr.results.summary.COLUMNS); the record schema (cr/results/schema/result.json,
checked by cr.results.validate.problems). Importing this package imports no numerical
framework.
"""
from __future__ import annotations

from .store import InvalidResult, ResultStore, default_store

__all__ = ["InvalidResult", "ResultStore", "default_store"]
