"""Checking result records against cr/results/schema/result.json (the Result contract).

A valid record is decided by cr.store.fastvalid (no jsonschema import); only an invalid
one pays for jsonschema, which words its problems the way `cr check` words a bad meta:
file, JSON pointer, what was expected and what was found.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from ..errors import CRError

SCHEMA_FILE = Path(__file__).resolve().parent / "schema" / "result.json"
FORMAT = 1


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


def problems(record: object, where: str = "result") -> list[str]:
    """Every schema problem of record as 'where: /pointer: message', sorted; [] when valid."""
    if not isinstance(record, dict):
        return [f"{where}: /: expected a JSON object, found {type(record).__name__}"]
    try:
        if _fast().is_valid(record):
            return []
    except RecursionError:  # absurd nesting: jsonschema has the last word
        pass
    import jsonschema

    from ..store.meta import describe_error

    found = set()
    for error in jsonschema.Draft202012Validator(schema()).iter_errors(record):
        pointer, message = describe_error(error)
        found.add(f"{where}: {pointer or '/'}: {message}")
    if not found:  # the fast validator and jsonschema disagree: trust jsonschema
        return []
    return sorted(found)
