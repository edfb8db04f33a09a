"""Reading and validating meta.json files against the per-kind JSON Schemas.

Validation never raises on bad input: it returns a list of :class:`Problem`, each naming
the file, the JSON pointer, what was expected and what was found. Loading raises
InvalidMeta with the same precision for files that are not JSON at all.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import CRError, InvalidMeta
from .refs import KINDS, parse_ref, parse_version

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a meta: where (file + JSON pointer) and what."""

    file: str
    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.pointer or '/'}: {self.message}"


def load_json(path: Path) -> dict:
    """Parse a JSON object from path; InvalidMeta names the file, line and column on failure."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidMeta(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise InvalidMeta(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InvalidMeta(f"{path}: cannot read ({exc.strerror})") from None
    return parse_json_text(text, str(path))


def parse_json_text(text: str, where: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidMeta(
            f"{where}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            hint="fix the JSON syntax (a trailing comma or a missing quote is the usual cause)",
        ) from None
    if not isinstance(data, dict):
        raise InvalidMeta(f"{where}: /: expected a JSON object, found {type(data).__name__}")
    return data


# --- formats -------------------------------------------------------------------------

_REL_BAD = re.compile(r"(^/|^[A-Za-z]:|\\|(^|/)\.\.(/|$)|^$)")


def _is_pep440(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        parse_version(value)
        return True
    except CRError:
        return False


def _is_ref(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        parse_ref(value)
        return True
    except CRError:
        return False


def _is_marker(value: object) -> bool:
    if not isinstance(value, str):
        return True
    from packaging.markers import InvalidMarker, Marker

    try:
        Marker(value)
        return True
    except InvalidMarker:
        return False


def _is_requirement(value: object) -> bool:
    if not isinstance(value, str):
        return True
    ref, _, marker = value.partition(";")
    return _is_ref(ref.strip()) and (not marker.strip() or _is_marker(marker.strip()))


def _is_relative_path(value: object) -> bool:
    return not isinstance(value, str) or not _REL_BAD.search(value)


def _is_regex(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        re.compile(value)
        return True
    except (re.error, OverflowError, RecursionError):  # 'a{99999999999}', deeply nested groups
        return False


_FORMAT_TEXT = {
    "pep440-version": "a PEP 440 version (e.g. 1.0.0)",
    "component-ref": "a component reference kind:name[@spec]",
    "requirement": "a requirement kind:name[@spec][; marker]",
    "pep508-marker": "a PEP 508 marker (e.g. platform_machine == \"aarch64\")",
    "relative-path": "a relative path inside the component (no '..', no leading '/', '/' as separator)",
    "regex": "a valid regular expression",
}


@lru_cache(maxsize=None)
def _validator(kind: str):
    # jsonschema is imported here, not at module level: it costs ~0.1 s of start-up,
    # and only changed or checked metas ever need it.
    import jsonschema
    from referencing import Registry, Resource

    resources = []
    for schema_file in SCHEMA_DIR.glob("*.json"):
        schema = json.loads(schema_file.read_text(encoding="utf-8"))
        resources.append((schema_file.name, Resource.from_contents(schema)))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    checker = jsonschema.FormatChecker(formats=())
    for name, func in (
        ("pep440-version", _is_pep440),
        ("component-ref", _is_ref),
        ("requirement", _is_requirement),
        ("pep508-marker", _is_marker),
        ("relative-path", _is_relative_path),
        ("regex", _is_regex),
    ):
        checker.checks(name)(func)
    schema = _merged_schema(kind) if kind != "repo" else json.loads((SCHEMA_DIR / "repo.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry, format_checker=checker)


def _merged_schema(kind: str) -> dict:
    """common.json's fields plus the kind's own, with unknown fields refused.

    Merged here rather than composed with allOf/unevaluatedProperties: with the latter,
    one failing common field makes every field 'unevaluated' and buries the real error.
    """
    common = json.loads((SCHEMA_DIR / "common.json").read_text(encoding="utf-8"))
    own = json.loads((SCHEMA_DIR / f"{kind}.json").read_text(encoding="utf-8"))
    return {
        "$schema": own["$schema"],
        "$id": own["$id"],
        "type": "object",
        "required": list(dict.fromkeys(common["required"] + own.get("required", []))),
        "properties": {**common["properties"], **own.get("properties", {})},
        "patternProperties": common["patternProperties"],
        "additionalProperties": False,
        "$defs": own.get("$defs", {}),
    }


def schema_fingerprint() -> str:
    """A hash of all schema files: the index re-validates everything when it changes."""
    import hashlib

    h = hashlib.sha256()
    for schema_file in sorted(SCHEMA_DIR.glob("*.json")):
        h.update(schema_file.name.encode())
        h.update(schema_file.read_bytes())
    return h.hexdigest()[:16]


def _pointer(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _found(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def _describe(error) -> tuple[str, str]:
    """Turn a jsonschema error into (pointer, 'expected ..., found ...')."""
    pointer = _pointer(error.absolute_path)
    v, val, inst = error.validator, error.validator_value, error.instance
    if v == "required":
        missing = [name for name in val if isinstance(inst, dict) and name not in inst]
        return pointer, f"missing required field {missing[0] if missing else val!r}"
    if v == "additionalProperties" and isinstance(inst, dict):
        known = error.schema.get("properties", {})
        extra = [k for k in inst if k not in known and not k.startswith("x-")]
        hint = "; prefix your own fields with 'x-'" if "^x-" in error.schema.get("patternProperties", {}) else ""
        return pointer, f"unknown field(s) {', '.join(map(repr, extra))}{hint}"
    if v == "type":
        return pointer, f"expected {val if isinstance(val, str) else ' or '.join(val)}, found {_found(inst)}"
    if v in ("enum", "const"):
        options = val if v == "enum" else [val]
        return pointer, f"expected one of {', '.join(json.dumps(o) for o in options)}, found {_found(inst)}"
    if v == "pattern":
        return pointer, f"expected a string matching {val}, found {_found(inst)}"
    if v == "format":
        return pointer, f"expected {_FORMAT_TEXT.get(val, val)}, found {_found(inst)}"
    if v in _BOUNDS:
        return pointer, f"expected a number {_BOUNDS[v]} {val}, found {_found(inst)}"
    if v == "uniqueItems" and isinstance(inst, list):
        dups = [x for i, x in enumerate(inst) if x in inst[:i]]
        if dups:
            return pointer, f"expected unique items, found {_found(dups[0])} more than once"
    if v in ("oneOf", "anyOf") and error.context:
        # deepest first; at equal depth, the branch whose type matched says what is wrong
        deepest = max(error.context, key=lambda e: (len(e.absolute_path), e.validator != "type"))
        return _describe(deepest)
    return pointer, error.message


def validate_repo_meta(meta: object, file: str = "cr-repo.json") -> list[Problem]:
    """Problems of a cr-repo.json; a 'name' layout must also say which kind it holds."""
    if not isinstance(meta, dict):
        return [Problem(file, "", f"expected a JSON object, found {type(meta).__name__}")]
    problems = [Problem(file, *_describe(e)) for e in _validator("repo").iter_errors(meta)]
    if meta.get("layout") == "name" and "kind" not in meta:
        problems.append(Problem(file, "", "missing required field 'kind' (a 'name' layout holds one kind)"))
    return sorted(set(problems), key=lambda p: (p.pointer, p.message))


def validate(meta: object, file: str = "meta.json", kind: str | None = None) -> list[Problem]:
    """Every schema problem of meta, sorted by pointer; [] when valid. Never raises on bad meta."""
    if not isinstance(meta, dict):
        return [Problem(file, "", f"expected a JSON object, found {type(meta).__name__}")]
    kind = kind or meta.get("kind")
    if kind not in KINDS:
        return [Problem(file, "/kind", f"expected one of {', '.join(KINDS)}, found {_found(kind)}")]
    problems = []
    for error in _validator(kind).iter_errors(meta):
        pointer, message = _describe(error)
        problems.append(Problem(file, pointer, message))
    problems = sorted(set(problems), key=lambda p: (p.pointer, p.message))
    return problems
