"""How a finished run becomes the library's answer: the data `--json` prints, or a CRError.

The CLI prints a failed run's record and then `Error: ...` + hint; the library raises
RunFailed with the same words and the same data on ``.result``, so nothing is lost.
"""
from __future__ import annotations

from ..errors import CRError


class RunFailed(CRError):
    """A run that ended with status "failed": the message and hint the CLI prints, and
    ``result``, what its --json prints (the record, or a comparison with its records)."""

    def __init__(self, message: str, hint: str | None = None, result=None):
        super().__init__(message, hint)
        self.result = result


def failure(record: dict) -> RunFailed | None:
    """The error a failed record stands for (None when it succeeded): its message, its hint,
    and where its traceback and output are kept (cr results show UID)."""
    if record.get("status") == "ok":
        return None
    error = record.get("error") or {}
    hint = error.get("hint") or ""
    if record.get("uid") and (error.get("traceback") or error.get("stderr_tail")):
        hint = (hint + "; " if hint else "") + f"its traceback and output: cr results show {record['uid']}"
    return RunFailed(error.get("message", f"the {record.get('action')} failed"), hint=hint or None)


def first_failure(records: list[dict], label: str) -> RunFailed | None:
    """The error of the first failed record of several (``label(record)`` names the run)."""
    failed = [r for r in records if r.get("status") != "ok"]
    if not failed:
        return None
    error = failed[0].get("error") or {}
    return RunFailed(f"{label(failed[0])} failed: {error.get('message')}", hint=error.get("hint"))


def finished(data, error: RunFailed | None, not_stored=None):
    """data, or the error with data attached (a failed run first, then a record the store
    did not take: cr.run.actions.NotStored, which carries the records itself)."""
    if error is not None:
        error.result = data
        raise error
    if not_stored is not None:
        raise not_stored
    return data
