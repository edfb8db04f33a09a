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

KINDS = ("model", "dataset", "solution", "platform", "action", "software", "campaign")

#: Names that Windows opens as a device, whatever the case and extension ('con', 'CON.txt'):
#: a component, a repository or an archive member by that name cannot be a file there.
WINDOWS_DEVICES = frozenset(
    ["con", "prn", "aux", "nul"] + [f"{p}{d}" for p in ("com", "lpt") for d in "0123456789\u00b9\u00b2\u00b3"]
)
#: Unicode categories no name, tag, version or archive path may hold: controls (C0 and C1),
#: format characters (bidi overrides such as U+202E, zero-width U+200B), surrogates, private
#: use, unassigned code points, and the line and paragraph separators.
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_CATEGORY_WORDS = {
    "Cc": "a control character", "Cf": "an invisible format character (bidi or zero-width)", "Cs": "a surrogate",
    "Co": "a private-use character", "Cn": "an unassigned code point", "Zl": "a line separator",
    "Zp": "a paragraph separator",
}

# The name pattern of cr/store/schemas/common.json and repo.json, character for character:
# ASCII lowercase, alphanumeric at both ends, never a device name. '$(?!\n)' because in
# Python '$' alone also matches before a final newline ("lenet\n"); it means the same in
# the ECMA-262 dialect JSON Schema names, so the schemas stay usable by other validators.
NAME_PATTERN = r"^(?!(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\.|$))[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?$(?!\n)"
NAME_RE = re.compile(NAME_PATTERN)
_NAME_HINT = "use lowercase letters, digits, '.', '_' and '-', starting and ending with a letter or digit"
# What is stripped around a reference: ASCII blanks only (str.strip would also take U+0085
# or U+2028, which are then refused as what they are).
_ASCII_SPACE = " \t\r\n\f\v"
_REF_RE = re.compile(r"^(?:(?P<kind>[A-Za-z]+):)?(?P<name>[^@:\s]+)(?:@(?P<spec>.*))?$")


def check_kind(kind: str) -> str:
    """Return kind if it is a known component kind, else raise InvalidRef naming the kinds."""
    if kind not in KINDS:
        raise InvalidRef(
            f"unknown kind {kind!r}",
            hint="kinds are: " + ", ".join(KINDS),
        )
    return kind


def odd_character(text: str) -> str | None:
    """What the first character of text in REFUSED_CATEGORIES is ("U+202E RIGHT-TO-LEFT
    OVERRIDE, an invisible format character (bidi or zero-width)"), or None when there is none."""
    import unicodedata  # here, not at start-up: most commands never check a name

    for char in text:
        category = unicodedata.category(char)
        if category in REFUSED_CATEGORIES:
            label = unicodedata.name(char, "")
            return f"U+{ord(char):04X}{' ' + label if label else ''}, {_CATEGORY_WORDS[category]}"
    return None


def device_name(part: str) -> bool:
    """Whether Windows takes this file name for a device: CON, nul.txt, Com1.tar.gz, 'aux .x'."""
    return part.split(".", 1)[0].rstrip(" ").lower() in WINDOWS_DEVICES


def name_problem(name: object) -> str | None:
    """Why name is not a valid component or repository name ('' when it merely breaks the
    pattern: see the hint), or None when it is valid."""
    if not isinstance(name, str):
        return f"expected a string, found {type(name).__name__}"
    if NAME_RE.match(name):
        return None
    odd = odd_character(name)
    if odd:
        return f"it contains {odd}"
    if name[-1:] in (".", " "):
        return "it ends with a dot or a space (Windows drops them)"
    if device_name(name):
        return "it is a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with or without an extension)"
    return ""


def check_name(name: str, what: str = "component name") -> str:
    """Component (and repository) names: lowercase letters, digits, '.', '_' and '-', starting
    and ending alphanumeric, never a Windows device name; InvalidRef naming the value (repr:
    escaped) and, for an odd character, which one."""
    why = name_problem(name)
    if why is not None:
        raise InvalidRef(f"invalid {what} {name!r}" + (f": {why}" if why else ""), hint=_NAME_HINT)
    return name


@lru_cache(maxsize=256)
def parse_version(text: str):
    """A packaging Version, or InvalidRef with the PEP 440 hint."""
    from packaging.version import InvalidVersion, Version

    hint = "versions follow PEP 440, e.g. 1.0.0, 2.1rc1, 0.3.post1"
    if not isinstance(text, str):
        raise InvalidRef(f"invalid version {text!r}: expected a string", hint=hint)
    # packaging strips any Unicode whitespace ('1.0\x85', '1.0\u2028', '1.0 ') and folds
    # some non-ASCII letters into ASCII ones (the Kelvin sign into 'k'); a version is also a
    # directory name, so only the printable ASCII PEP 440 spells is accepted.
    odd = _version_problem(text)
    if odd:
        raise InvalidRef(f"invalid version {text!r}: {odd}", hint=hint)
    try:
        return Version(text)
    except (InvalidVersion, ValueError):  # ValueError: a number past Python's int-string limit
        raise InvalidRef(f"invalid version {text!r}", hint=hint) from None


def _version_problem(text: str, spaces: bool = False) -> str | None:
    """Why text cannot be (part of) a version or specifier before packaging parses it."""
    if text.isascii() and text.isprintable() and (spaces or " " not in text):
        return None
    odd = odd_character(text)
    if odd:
        return f"it contains {odd}"
    if not text.isascii():
        return "it is not ASCII"
    return "it contains a space"


@lru_cache(maxsize=256)
def parse_spec(text: str):
    """A packaging SpecifierSet for a version constraint; a bare version means '=='."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    text = text.strip(_ASCII_SPACE)
    if not text:
        raise InvalidRef("empty version after '@'", hint="write kind:name@1.0.0 or kind:name@>=1,<2")
    odd = _version_problem(text, spaces=True)
    if odd:
        raise InvalidRef(f"invalid version specifier {text!r}: {odd}",
                         hint="use a version (1.2.0) or PEP 440 specifiers (>=1.2, ==1.*, >=1,<2)")
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
    m = _REF_RE.match(text.strip(_ASCII_SPACE))
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
        spec = spec.strip(_ASCII_SPACE)
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
