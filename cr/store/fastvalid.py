"""A fast yes/no validator for the part of JSON Schema (draft 2020-12) reefkit's schemas use.

Importing jsonschema costs ~80 ms, more than everything else a `cr find` does after one
meta changed. This module answers only "is this instance valid?", with jsonschema's exact
semantics for the keywords below (bool is not a number, 1 == 1.0 in enum/const, `pattern`
is re.search, an unregistered format passes, ...); cr.store.meta trusts a "valid" answer
and asks jsonschema only to word the errors of an invalid meta. tests/test_meta.py checks
both agree on generated and mutated metas of every kind.

A schema using a keyword not listed here raises Unsupported when the validator is built,
so that the caller falls back to jsonschema instead of accepting what it cannot check.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Callable
from urllib.parse import urljoin

# Keywords that only annotate: they never make an instance invalid.
ANNOTATIONS = frozenset({
    "$schema", "$id", "$defs", "$comment", "title", "description", "default", "examples",
    "deprecated", "readOnly", "writeOnly",
})
# Keywords whose value is a schema / a dict of schemas / a list of schemas.
_SUBSCHEMA = frozenset({"items", "additionalProperties", "propertyNames"})
_SCHEMA_MAP = frozenset({"properties", "patternProperties", "$defs"})
_SCHEMA_LIST = frozenset({"anyOf", "oneOf"})
_VALUES = frozenset({
    "$ref", "type", "enum", "const", "pattern", "format", "required", "minimum",
    "exclusiveMinimum", "maximum", "exclusiveMaximum", "minItems", "maxItems", "uniqueItems",
})
KEYWORDS = ANNOTATIONS | _SUBSCHEMA | _SCHEMA_MAP | _SCHEMA_LIST | _VALUES

_TYPES: dict[str, Callable[[object], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


class Unsupported(Exception):
    """The schema uses something this validator does not implement."""


# -- jsonschema's equality (jsonschema._utils.equal / uniq), reproduced exactly ---------------

_TRUE, _FALSE = object(), object()


def _unbool(element):
    if element is True:
        return _TRUE
    if element is False:
        return _FALSE
    return element


def equal(one, two) -> bool:
    """Equality where True != 1 and False != 0, recursively; 1 == 1.0."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(equal(i, j) for i, j in zip(one, two))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(key in two and equal(value, two[key]) for key, value in one.items())
    return _unbool(one) == _unbool(two)


def unique(container: list) -> bool:
    """jsonschema's uniqueItems test (sorting first when the items allow it)."""
    try:
        ordered = sorted(_unbool(i) for i in container)
        for i, j in zip(ordered, ordered[1:]):
            if equal(i, j):
                return False
    except (NotImplementedError, TypeError):
        seen: list = []
        for e in container:
            e = _unbool(e)
            for i in seen:
                if equal(i, e):
                    return False
            seen.append(e)
    return True


# -- the validator --------------------------------------------------------------------------

class Validator:
    """is_valid(instance) for schema, whose $refs name documents (by file name or $id) of
    documents; formats maps a format name to its check (returns falsy when not conforming)."""

    def __init__(self, schema: dict, documents: Mapping[str, dict], formats: Mapping[str, Callable[[object], object]]):
        self.schema = schema
        self.documents = documents
        self.formats = formats
        self._refs: dict[tuple[int, str], tuple[object, dict]] = {}
        self._patterns: dict[str, re.Pattern] = {}
        self._prepare(schema, schema, set())

    # Every keyword is checked, every $ref resolved and every pattern compiled up front,
    # so that validating can never meet something it does not know.
    def _prepare(self, schema, root: dict, done: set) -> None:
        if isinstance(schema, bool):
            return
        if not isinstance(schema, dict):
            raise Unsupported(f"a schema must be an object or a boolean, found {type(schema).__name__}")
        if (id(schema), id(root)) in done:
            return
        done.add((id(schema), id(root)))
        for key, value in schema.items():
            if key not in KEYWORDS:
                raise Unsupported(f"keyword {key!r}")
            if key in _SUBSCHEMA:
                self._prepare(value, root, done)
            elif key in _SCHEMA_MAP:
                for name, sub in value.items():
                    if key == "patternProperties":
                        self._compile(name)
                    self._prepare(sub, root, done)
            elif key in _SCHEMA_LIST:
                for sub in value:
                    self._prepare(sub, root, done)
            elif key == "$ref":
                target, target_root = self._resolve(value, root)
                self._refs[id(root), value] = (target, target_root)
                self._prepare(target, target_root, done)
            elif key == "type":
                for name in [value] if isinstance(value, str) else value:
                    if name not in _TYPES:
                        raise Unsupported(f"type {name!r}")
            elif key == "pattern":
                self._compile(value)
        if "patternProperties" in schema:
            self._compile("|".join(schema["patternProperties"]))

    def _compile(self, pattern: str) -> None:
        if pattern not in self._patterns:
            try:
                self._patterns[pattern] = re.compile(pattern)
            except (re.error, TypeError) as exc:
                raise Unsupported(f"pattern {pattern!r}: {exc}") from None

    def _resolve(self, ref: str, root: dict) -> tuple[object, dict]:
        doc, _, fragment = ref.partition("#")
        if doc:
            target = self.documents.get(doc)
            if target is None and isinstance(root.get("$id"), str):
                target = self.documents.get(urljoin(root["$id"], doc))
            if target is None:
                raise Unsupported(f"$ref to an unknown document {ref!r}")
        else:
            target = root
        new_root = target
        if fragment:
            if not fragment.startswith("/"):
                raise Unsupported(f"$ref to an anchor {ref!r}")
            for part in fragment[1:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                if isinstance(target, dict) and part in target:
                    target = target[part]
                elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                    target = target[int(part)]
                else:
                    raise Unsupported(f"unresolvable $ref {ref!r}")
        return target, new_root

    def is_valid(self, instance) -> bool:
        return self._valid(instance, self.schema, self.schema)

    def _valid(self, inst, schema, root) -> bool:  # noqa: C901 (one branch per keyword)
        if schema is True:
            return True
        if schema is False:
            return False
        is_dict = isinstance(inst, dict)
        for key, val in schema.items():
            if key == "type":
                if isinstance(val, str):
                    if not _TYPES[val](inst):
                        return False
                elif not any(_TYPES[t](inst) for t in val):
                    return False
            elif key == "properties":
                if is_dict:
                    for name, sub in val.items():
                        if name in inst and not self._valid(inst[name], sub, root):
                            return False
            elif key == "pattern":
                if isinstance(inst, str) and not self._patterns[val].search(inst):
                    return False
            elif key == "required":
                if is_dict:
                    for name in val:
                        if name not in inst:
                            return False
            elif key == "additionalProperties":
                if is_dict:
                    props = schema.get("properties", {})
                    pats = schema.get("patternProperties")
                    joined = self._patterns["|".join(pats)] if pats else None
                    for name in inst:
                        if name in props or (joined is not None and joined.search(name)):
                            continue
                        if not self._valid(inst[name], val, root):
                            return False
            elif key == "patternProperties":
                if is_dict:
                    for pattern, sub in val.items():
                        compiled = self._patterns[pattern]
                        for name, value in inst.items():
                            if compiled.search(name) and not self._valid(value, sub, root):
                                return False
            elif key == "items":
                if isinstance(inst, list):
                    for item in inst:
                        if not self._valid(item, val, root):
                            return False
            elif key == "enum":
                if all(not equal(each, inst) for each in val):
                    return False
            elif key == "const":
                if not equal(inst, val):
                    return False
            elif key == "format":
                check = self.formats.get(val)
                if check is not None and not check(inst):
                    return False
            elif key == "$ref":
                target, target_root = self._refs[id(root), val]
                if not self._valid(inst, target, target_root):
                    return False
            elif key == "uniqueItems":
                if val and isinstance(inst, list) and not unique(inst):
                    return False
            elif key == "oneOf":
                if sum(1 for sub in val if self._valid(inst, sub, root)) != 1:
                    return False
            elif key == "anyOf":
                if not any(self._valid(inst, sub, root) for sub in val):
                    return False
            elif key == "propertyNames":
                if is_dict:
                    for name in inst:
                        if not self._valid(name, val, root):
                            return False
            elif key == "minimum":
                if _TYPES["number"](inst) and inst < val:
                    return False
            elif key == "exclusiveMinimum":
                if _TYPES["number"](inst) and inst <= val:
                    return False
            elif key == "maximum":
                if _TYPES["number"](inst) and inst > val:
                    return False
            elif key == "exclusiveMaximum":
                if _TYPES["number"](inst) and inst >= val:
                    return False
            elif key == "minItems":
                if isinstance(inst, list) and len(inst) < val:
                    return False
            elif key == "maxItems":
                if isinstance(inst, list) and len(inst) > val:
                    return False
            # annotations: nothing to check
        return True
