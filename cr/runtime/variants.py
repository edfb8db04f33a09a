"""Model variants: one model component, the same network in several formats or precisions.

A model meta names its main file (``format``, ``file`` or ``source``) and may list
``variants``: [{"name", "format", "file" | "source", "precision", and optionally its own
"inputs", "outputs", "expected", "provenance", "preprocess", "postprocess"}]
(a backbone variant has its own pipeline: the graph's post-processing done in numpy). ``effective(meta, name)`` is the meta a
backend sees for one of them: the component's meta with the variant's fields laid over
it and ``variants`` removed, plus ``variant`` (its name). The main file is the variant
named by ``default_name(meta)`` (the format's name, e.g. "onnx").

``choose(meta, formats, name)`` picks what a backend runs: the named variant, else the
first one (main file first, then the list in order) whose format the backend loads and
whose precision is fp32 when there is one, else the first it loads at all. Formats are
open names (any well-formed one passes the schema): when the backend loads none of the
model's variants and no registered backend loads their formats either, the error says
so, naming the backends and what each loads (cr.runtime.registry.format_problem).

Standard library only: the parent chooses, the child loads.
"""
from __future__ import annotations

from ..errors import CRError

_OWN = ("format", "file", "source", "precision", "inputs", "outputs", "expected", "provenance", "description",
        "preprocess", "postprocess")


def default_name(meta: dict) -> str:
    return meta.get("variant") or meta.get("format") or "default"


def names(meta: dict) -> list[str]:
    main = [default_name(meta)] if meta.get("format") else []
    return main + [v["name"] for v in meta.get("variants") or []]


def effective(meta: dict, name: str | None = None) -> dict:
    """The meta of variant ``name`` (None: the main file)."""
    base = {k: v for k, v in meta.items() if k != "variants"}
    if name is None or name == default_name(meta):
        base.setdefault("precision", "fp32")
        base["variant"] = default_name(meta)
        return base
    for variant in meta.get("variants") or []:
        if variant["name"] == name:
            for key in ("file", "source"):  # a variant's file replaces the main one entirely
                base.pop(key, None)
            base.update({k: variant[k] for k in _OWN if k in variant})
            base.setdefault("precision", "fp32")
            base["variant"] = name
            return base
    raise CRError(
        f"{meta.get('kind', 'model')}:{meta.get('name', '?')} has no variant {name!r}",
        hint=f"its variants: {', '.join(names(meta)) or 'none'}",
    )


def choose(meta: dict, formats: tuple[str, ...] | list[str] | None, name: str | None = None,
           backend: str = "the backend", ref: str | None = None) -> dict:
    """The effective meta a backend with ``formats`` (None: any) should run."""
    ref = ref or f"model {meta.get('name', '?')}"
    if name is not None:
        chosen = effective(meta, name)
        if formats is not None and chosen.get("format") not in formats:
            _refuse_unknown([chosen.get("format")], f"variant {name!r} of {ref}")
            raise CRError(
                f"variant {name!r} of {ref} is {chosen.get('format')}, which {backend} does not load",
                hint=f"{backend} loads {', '.join(formats)}; variants: " + _listing(meta),
            )
        return chosen
    candidates = [effective(meta, n) for n in names(meta)] or [effective(meta)]
    loadable = [c for c in candidates if formats is None or c.get("format") in formats]
    if not loadable:
        _refuse_unknown([c.get("format") for c in candidates], ref)
        raise CRError(
            f"{backend} cannot load {ref}: its variants are {_listing(meta)}; the backend loads {', '.join(formats or ())}",
            hint="choose a backend for one of those formats, or cr compile the model to a format this backend loads",
        )
    fp32 = [c for c in loadable if c.get("precision", "fp32") == "fp32"]
    return (fp32 or loadable)[0]


def _refuse_unknown(fmts: list, what: str) -> None:
    """CRError when no registered backend (nor converter) handles any of fmts (the formats
    of what): then the fix is a backend for the format, not another --backend."""
    from . import registry

    loads = registry.formats()
    problems = [registry.format_problem(f, loads) for f in dict.fromkeys(fmts)]
    if problems and all(problems):
        unknown = ", ".join(repr(f) for f in dict.fromkeys(fmts))
        raise CRError(
            f"{what} is in format {unknown}, which no registered backend loads; backends: {registry.describe_formats(loads)}",
            hint="install or register a backend whose FORMATS include it (docs/howto-add-a-backend.md), "
                 "or check the meta's format for a typo",
        )


def _listing(meta: dict) -> str:
    return ", ".join(f"{n} ({effective(meta, n).get('format')}, {effective(meta, n).get('precision')})" for n in names(meta)) or "none"
