"""Component references: ``kind:name``, ``kind:name@1.2.0``, ``kind:name@>=1,<2``.

A bare version after ``@`` means exactly that version; anything else after ``@`` is a
PEP 440 specifier set. The CLI also accepts the two-word form ``KIND NAME`` (CK style),
which :func:`parse_ref_words` turns into the same :class:`Ref`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InvalidRef

KINDS = ("model", "dataset", "solution", "platform", "action", "software")

NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?$")
_REF_RE = re.compile(r"^(?:(?P<kind>[A-Za-z]+):)?(?P<name>[^@:\s]+)(?:@(?P<spec>.*))?$")


def check_kind(kind: str) -> str:
    """Return kind if it is a known component kind, else raise InvalidRef naming the kinds."""
    if kind not in KINDS:
        raise InvalidRef(
            f"unknown kind {kind!r}",
            hint="kinds are: " + ", ".join(KINDS),
        )
    return kind


def check_name(name: str) -> str:
    """Component names: lowercase letters, digits, '.', '_' and '-', starting and ending alphanumeric."""
    if not NAME_RE.match(name):
        raise InvalidRef(
            f"invalid component name {name!r}",
            hint="use lowercase letters, digits, '.', '_' and '-', starting and ending with a letter or digit",
        )
    return name


@lru_cache(maxsize=256)
def parse_version(text: str):
    """A packaging Version, or InvalidRef with the PEP 440 hint."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number past Python's int-string limit
        raise InvalidRef(
            f"invalid version {text!r}",
            hint="versions follow PEP 440, e.g. 1.0.0, 2.1rc1, 0.3.post1",
        ) from None


@lru_cache(maxsize=256)
def parse_spec(text: str):
    """A packaging SpecifierSet for a version constraint; a bare version means '=='."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    text = text.strip()
    if not text:
        raise InvalidRef("empty version after '@'", hint="write kind:name@1.0.0 or kind:name@>=1,<2")
    if text[0].isdigit() or (text[0] in "vV" and text[1:2].isdigit()):
        parse_version(text)  # a bare version (PEP 440 allows a leading v) must itself be valid
        text = "==" + text
    try:
        specs = SpecifierSet(text)
        for one in specs:  # parses each version now, so matching can never raise later
            one.contains("0", prereleases=True)
        return specs
    except (InvalidSpecifier, ValueError):
        raise InvalidRef(
            f"invalid version specifier {text!r}",
            hint="use a version (1.2.0) or PEP 440 specifiers (>=1.2, ==1.*, >=1,<2)",
        ) from None


@dataclass(frozen=True)
class Ref:
    """A parsed reference. kind may be None where the caller supplies it (e.g. ``cr find``)."""

    kind: str | None
    name: str
    spec: str | None = None

    def matches_version(self, version: str) -> bool:
        """True if version satisfies the spec (always true without a spec); pre-releases count."""
        if not self.spec:
            return True
        try:
            v = parse_version(version)
        except InvalidRef:
            return False
        return parse_spec(self.spec).contains(v, prereleases=True)

    def __str__(self) -> str:
        head = f"{self.kind}:{self.name}" if self.kind else self.name
        return f"{head}@{self.spec}" if self.spec else head


def parse_ref(text: str, kind: str | None = None) -> Ref:
    """Parse ``kind:name[@spec]``; ``kind`` fills in (or must agree with) the kind in text."""
    m = _REF_RE.match(text.strip())
    if not m:
        raise InvalidRef(
            f"cannot parse component reference {text!r}",
            hint="write kind:name, kind:name@1.0.0 or kind:name@>=1,<2",
        )
    got_kind, name, spec = m.group("kind"), m.group("name"), m.group("spec")
    if got_kind and kind and got_kind != kind:
        raise InvalidRef(f"reference {text!r} names kind {got_kind!r}, but {kind!r} was asked for")
    final_kind = got_kind or kind
    if final_kind is None:
        raise InvalidRef(
            f"reference {text!r} names no kind",
            hint="write kind:name (e.g. model:lenet-digits) or two words: KIND NAME",
        )
    check_kind(final_kind)
    check_name(name)
    if spec is not None:
        spec = spec.strip()
        parse_spec(spec)
    return Ref(final_kind, name, spec or None)


def parse_ref_words(words: tuple[str, ...] | list[str]) -> Ref:
    """Accept ``["kind:name@spec"]`` or the CK-style ``["KIND", "NAME[@spec]"]``."""
    words = list(words)
    if len(words) == 1:
        return parse_ref(words[0])
    if len(words) == 2:
        return parse_ref(words[1], kind=check_kind(words[0]))
    raise InvalidRef(
        "expected a reference: kind:name[@spec] or KIND NAME[@spec]",
        hint="e.g. cr show model:lenet-digits or cr show model lenet-digits@1.0.0",
    )
