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

from .. import jsonio
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
    """Parse a JSON object from path; InvalidMeta names the file, line and column on failure.

    Read and parsed by cr.jsonio: a regular file only (a FIFO is refused, never waited
    on), bounded in size and in nesting depth (checked here, so validation never recurses
    deeply), NaN and Infinity refused."""
    where = str(path)
    return parse_json_text(jsonio.read_file(path, where=where), where)


def read_bytes(path: Path) -> bytes:
    """The bytes of a meta file; InvalidMeta naming the file when it cannot be read, is not
    a regular file (never opened blocking) or is too large (cr.jsonio.read_file)."""
    return jsonio.read_file(path, where=str(path))


def decode_json_bytes(data: bytes, where: str) -> str:
    """UTF-8 text with universal newlines (as a text-mode read gives), or InvalidMeta."""
    return jsonio.decode(data, where)


def parse_json_text(text: str | bytes, where: str) -> dict:
    """The JSON object of text (cr.jsonio.loads: bounded depth, no NaN); InvalidMeta otherwise."""
    data = jsonio.loads(text, where)
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


# A model format is an open name (docs/howto-add-a-backend.md): any name of this shape is
# valid in a meta; the registered backends and converters say whether one is handled.
_MODEL_FORMAT = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")


def _is_model_format(value: object) -> bool:
    return not isinstance(value, str) or (len(value) <= 64 and _MODEL_FORMAT.fullmatch(value) is not None)


_REGEX_DEPTH = 100  # groups nested deeper are refused (re's parser recurses once per level)


def _is_regex(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if _group_depth(value) > _REGEX_DEPTH:
        # decided here, not by a RecursionError: whether re.compile recurses too deep depends
        # on the process's recursion limit, which a library may raise (onnx2tf sets 2**31-1)
        return False
    try:
        re.compile(value)
        return True
    except (re.error, OverflowError, RecursionError):  # 'a{99999999999}'
        return False


def _group_depth(pattern: str) -> int:
    """How deep the groups of pattern nest (escapes and character classes skipped)."""
    depth = deepest = 0
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1:i + 2] == "]":  # a leading ']' is a literal
                i += 1
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth -= 1
        i += 1
    return deepest


_FORMAT_TEXT = {
    "pep440-version": "a PEP 440 version (e.g. 1.0.0)",
    "component-ref": "a component reference kind:name[@spec]",
    "requirement": "a requirement kind:name[@spec][; marker]",
    "pep508-marker": "a PEP 508 marker (e.g. platform_machine == \"aarch64\")",
    "relative-path": "a relative path inside the component (no '..', no leading '/', '/' as separator)",
    "regex": "a valid regular expression",
    "model-format": "a format name: lowercase letters and digits, words joined by '-', at most 64 characters (e.g. onnx, torch-state-dict)",
}


_FORMATS = {
    "pep440-version": _is_pep440,
    "component-ref": _is_ref,
    "requirement": _is_requirement,
    "pep508-marker": _is_marker,
    "relative-path": _is_relative_path,
    "regex": _is_regex,
    "model-format": _is_model_format,
}


@lru_cache(maxsize=None)
def _schema_file(name: str) -> dict:
    """A schema file of SCHEMA_DIR, parsed once per process (never modified by its users)."""
    return json.loads((SCHEMA_DIR / name).read_text(encoding="utf-8"))


def _schema_files() -> list[Path]:
    return sorted(p for p in SCHEMA_DIR.iterdir() if p.suffix == ".json")


@lru_cache(maxsize=None)
def _documents() -> dict[str, dict]:
    """Every schema file by file name and by $id: what $refs may name."""
    docs = {}
    for schema_file in _schema_files():
        schema = _schema_file(schema_file.name)
        docs[schema_file.name] = schema
        docs[schema["$id"]] = schema
    return docs


def _schema(kind: str) -> dict:
    return _merged_schema(kind) if kind != "repo" else _schema_file("repo.json")


@lru_cache(maxsize=None)
def _validator(kind: str):
    """The jsonschema validator of kind: it words the errors (and `cr check` uses it)."""
    # jsonschema is imported here, not at module level: it costs ~80 ms of start-up, and
    # only invalid or checked metas need it (_fast_validator decides validity).
    import jsonschema
    from referencing import Registry, Resource

    registry = Registry().with_resources((uri, Resource.from_contents(schema)) for uri, schema in _documents().items())
    checker = jsonschema.FormatChecker(formats=())
    for name, func in _FORMATS.items():
        checker.checks(name)(func)
    schema = _schema(kind)
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry, format_checker=checker)


@lru_cache(maxsize=None)
def _fast_validator(kind: str):
    """A cr.store.fastvalid.Validator for kind, or None if the schema needs jsonschema itself."""
    from .fastvalid import Unsupported, Validator

    try:
        return Validator(_schema(kind), _documents(), _FORMATS)
    except Unsupported:
        return None


def _is_valid_fast(meta: dict, kind: str) -> bool:
    """True only when meta is certainly valid for kind; False means: ask jsonschema."""
    fast = _fast_validator(kind)
    if fast is None:
        return False
    try:
        return fast.is_valid(meta)
    except RecursionError:  # absurdly deep nesting: jsonschema has the last word
        return False


def _merged_schema(kind: str) -> dict:
    """common.json's fields plus the kind's own, with unknown fields refused.

    Merged here rather than composed with allOf/unevaluatedProperties: with the latter,
    one failing common field makes every field 'unevaluated' and buries the real error.
    """
    common = _schema_file("common.json")
    own = _schema_file(f"{kind}.json")
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


@lru_cache(maxsize=None)
def schema_fingerprint() -> str:
    """A hash of all schema files: the index re-validates everything when it changes.

    Computed once per process: the schemas ship with reefkit and change only with it.
    (zlib's checksums, not hashlib: importing hashlib costs more than a `cr find`'s query.)"""
    import zlib

    crc, adler, size = 0, 1, 0
    for schema_file in _schema_files():
        for chunk in (schema_file.name.encode(), b"\0", schema_file.read_bytes(), b"\0"):
            crc, adler, size = zlib.crc32(chunk, crc), zlib.adler32(chunk, adler), size + len(chunk)
    return f"{crc:08x}{adler:08x}{size:x}"


def _pointer(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _found(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, (dict, list)) else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def describe_error(error) -> tuple[str, str]:
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
        return describe_error(deepest)
    return pointer, error.message


def validate_repo_meta(meta: object, file: str = "cr-repo.json") -> list[Problem]:
    """Problems of a cr-repo.json; a 'name' layout must also say which kind it holds."""
    if not isinstance(meta, dict):
        return [Problem(file, "", f"expected a JSON object, found {type(meta).__name__}")]
    if _is_valid_fast(meta, "repo"):
        problems = []
    else:
        problems = _too_deep(meta, file) or _schema_problems(meta, file, "repo")
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
    if _is_valid_fast(meta, kind):
        return []
    problems = _too_deep(meta, file) or _schema_problems(meta, file, kind)
    return sorted(set(problems), key=lambda p: (p.pointer, p.message))


def _too_deep(meta: dict, file: str) -> list[Problem]:
    """[the Problem] when meta nests deeper than cr.jsonio.MAX_DEPTH, else []: jsonschema
    (which recurses) never sees such a meta. load_json refuses them already; this guards
    metas built in memory."""
    try:
        jsonio.check_depth(meta, file)
    except jsonio.InvalidJSON:
        return [Problem(file, "", f"nested deeper than {jsonio.MAX_DEPTH} levels (no meta cr writes nests this deep)")]
    return []


def _schema_problems(meta: dict, file: str, kind: str) -> list[Problem]:
    try:
        return [Problem(file, *describe_error(error)) for error in _validator(kind).iter_errors(meta)]
    except RecursionError:  # not deep by check_depth, yet too deep for this stack
        return [Problem(file, "", "nested too deeply to validate")]
