"""The one root error type of reefkit.

Library code raises :class:`CRError` (or a subclass) for every problem a user can fix:
bad input, missing components, unreachable repositories. Only the CLI turns it into
``Error: message`` + hint and exit code 1. Any other exception is a bug in ``cr`` and
keeps its traceback.
"""
from __future__ import annotations


class CRError(Exception):
    """A user-facing error: one line saying what is wrong, and a hint saying what to do."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class NotFound(CRError):
    """A component, repository or file that was asked for does not exist."""


class InvalidMeta(CRError):
    """A meta.json (or cr-repo.json, recipe.json) is not valid JSON or violates its schema."""


class InvalidRef(CRError):
    """A component reference (``kind:name@spec``) cannot be parsed."""


class RepoError(CRError):
    """A repository cannot be registered, pulled, updated or removed."""


class StoreError(CRError):
    """CR_HOME or one of its files cannot be read or written."""


class Conflict(CRError):
    """Something already exists where it would be created."""


def similar(word: str, choices, n: int = 2) -> list[str]:
    """The closest of choices to a mistyped word (difflib's ratio >= 0.75), best first: what an
    error's "did you mean" names. Empty when nothing is close."""
    import difflib

    return difflib.get_close_matches(word, sorted(choices), n=n, cutoff=0.75)
