"""Backends: the entry-point group ``cr.backends`` and the checks a backend passes at load.

A distribution registers a backend in its pyproject.toml::

    [project.entry-points."cr.backends"]
    onnxruntime = "cr.runtime.backends.onnxruntime:OnnxruntimeBackend"

The environment variable ``CR_BACKENDS`` ("name=module:attr,name2=module:attr") adds
backends without packaging them (backend development, tests). Names are listed without
importing anything; a backend's module is imported only when it is loaded, and the class
is then checked like a pluggy hookspec: it must be a class with callable ``load``,
``inputs``, ``run`` and ``close`` that accept the arguments cr passes them, and a ``name``
attribute, if present, must match the registered name. Its class attributes ``FORMATS``
and ``REQUIRES`` are what the host knows of it without loading a framework: the variant
to run, the software a solution or a compiled model needs. Every error names the entry point and the distribution it comes from.

Model formats are open names: a format means what the registered backends' ``FORMATS``
(``formats()``) and the converters' inputs and outputs (``converters()``) say it means.
A model whose format nothing here handles is refused where its variant is chosen
(cr.runtime.variants.choose) and reported as a warning by ``cr check`` (format_problem).

Standard library only: the parent lists backends with it, the child loads one.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import CRError, similar

GROUP = "cr.backends"
ENV_VAR = "CR_BACKENDS"
REQUIRED_METHODS = ("load", "inputs", "run", "close")
# The positional parameters (after self) each method is called with.
SIGNATURES = {"load": ("model_path", "meta", "options"), "inputs": (), "run": ("batch",), "close": ()}
# What the runtime itself needs wherever an action runs (harness, pipeline), whatever the backend.
RUNTIME_REQUIRES = ("software:numpy@>=1.23",)
_VALUE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
# The same pattern as a solution meta's "backend" (cr/store/schemas/solution.json): every
# registered backend can be named in a solution.
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class BackendError(CRError):
    """A backend that is unknown, registered twice, or breaks the backend contract."""


@dataclass(frozen=True)
class BackendEntry:
    """One registered backend: its name, ``module:attr`` and who registered it."""

    name: str
    value: str
    origin: str  # "reefkit 0.1.0" or "CR_BACKENDS environment variable"

    def to_dict(self) -> dict:
        return {"name": self.name, "entry": self.value, "origin": self.origin}

    @property
    def where(self) -> str:
        return f"entry point {self.name} = {self.value!r} of {self.origin}"


def _installed() -> list[BackendEntry]:
    from ..plugins import installed

    return [BackendEntry(*found) for found in installed(GROUP)]


def _from_env() -> list[BackendEntry]:
    text = os.environ.get(ENV_VAR, "").strip()
    found = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not _VALUE.match(value):
            raise BackendError(
                f"{ENV_VAR} has a malformed entry {item!r}",
                hint=f"use name=module:attr, comma-separated, e.g. {ENV_VAR}=mybackend=my_pkg.backend:MyBackend",
            )
        found.append(BackendEntry(name, value, f"{ENV_VAR} environment variable"))
    return found


def entries() -> tuple[dict[str, BackendEntry], dict[str, list[BackendEntry]]]:
    """(name -> entry, name -> the conflicting entries of names registered twice)."""
    from ..plugins import by_name

    return by_name(_installed() + _from_env())


def available() -> list[str]:
    """Names of the registered backends (none imported)."""
    return sorted(entries()[0])


def find(name: str) -> BackendEntry:
    """The entry registered under name; BackendError if unknown, invalid or registered twice."""
    chosen, conflicts = entries()
    if name in conflicts:
        found = conflicts[name]
        raise BackendError(
            f"backend {name!r} is registered more than once: " + "; ".join(e.where for e in found),
            hint="uninstall one of these distributions, or rename its entry point in the group cr.backends",
        )
    if name not in chosen:
        names = ", ".join(sorted(chosen)) or "none"
        close = similar(name, chosen)
        raise BackendError(
            f"unknown backend {name!r}" + (f" (did you mean {' or '.join(close)}?)" if close else ""),
            hint=f"available backends: {names}; a distribution adds one under the entry-point group {GROUP}",
        )
    entry = chosen[name]
    if not _NAME.match(name):
        raise BackendError(f"backend name {name!r} ({entry.where}) is not valid", hint="start with a lowercase letter; then lowercase letters, digits, '-' and '_'")
    if not _VALUE.match(entry.value):
        raise BackendError(f"{entry.where} does not name module:attr", hint="an entry point value looks like my_pkg.backend:MyBackend")
    return entry


def load_class(entry: BackendEntry) -> type:
    """Import the backend's class and check it against the contract."""
    from ..plugins import LoadError, load_attr

    try:
        obj = load_attr(entry.value)
    except LoadError as exc:
        if exc.stage == "import":
            raise BackendError(f"backend {entry.name!r} cannot be imported ({entry.where}): {exc}",
                               hint="is its framework installed in the environment the benchmark runs in?") from exc
        raise BackendError(f"{entry.where}: {exc}", hint="fix the entry point's value") from None
    check_class(obj, entry)
    return obj


def check_class(cls: object, entry: BackendEntry) -> None:
    """Raise BackendError naming the entry point when cls breaks the backend contract."""
    if not isinstance(cls, type):
        raise BackendError(
            f"{entry.where} is a {type(cls).__name__}, not a class",
            hint="the entry point must name a class with load(), inputs(), run() and close()",
        )
    missing = [m for m in REQUIRED_METHODS if not callable(getattr(cls, m, None))]
    if missing:
        raise BackendError(
            f"{entry.where}: class {cls.__name__} lacks the method(s) {', '.join(missing)}",
            hint="a backend implements load(model_path, meta, options), inputs(), run(batch) and close()",
        )
    for method, params in SIGNATURES.items():
        _check_signature(cls, method, params, entry)
    requires = getattr(cls, "REQUIRES", None)
    if requires is not None and (not isinstance(requires, (tuple, list)) or not all(isinstance(r, str) for r in requires)):
        raise BackendError(f"{entry.where}: class {cls.__name__} declares REQUIRES = {requires!r}",
                           hint='REQUIRES is a tuple of requirement strings, e.g. ("software:onnxruntime@>=1.17",)')
    declared = getattr(cls, "name", None)
    if declared and declared != entry.name:
        raise BackendError(
            f"{entry.where}: class {cls.__name__} declares name {declared!r}, registered as {entry.name!r}",
            hint="make the entry point name and the class's name attribute agree",
        )


def _check_signature(cls: type, method: str, params: tuple[str, ...], entry: BackendEntry) -> None:
    import inspect

    func = getattr(cls, method)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):  # a builtin or C method: nothing to check
        return
    bound_args = (None, *params) if not isinstance(inspect.getattr_static(cls, method), (staticmethod, classmethod)) else params
    try:
        signature.bind(*bound_args)
    except TypeError:
        wanted = ", ".join(("self", *params))
        raise BackendError(
            f"{entry.where}: {cls.__name__}.{method}{signature} cannot be called as {method}({wanted})",
            hint=f"a backend's {method} takes ({wanted}); see cr/runtime/backends/base.py",
        ) from None


def requirements(entry: BackendEntry) -> tuple[str, ...]:
    """The software the backend declares it needs (REQUIRES), without importing its framework.

    A backend whose class cannot be imported here (it lives only in a lock's interpreter)
    or that declares nothing adds nothing to RUNTIME_REQUIRES.
    """
    try:
        declared = getattr(load_class(entry), "REQUIRES", None)
    except BackendError:
        declared = None
    return tuple(declared or ())


def native_backend(fmt: str) -> BackendEntry | None:
    """The registered backend whose first (native) format is fmt: what a model in fmt runs on.

    When several claim it, reefkit's own backend wins (a plugin does not silently change
    the deps of models compiled to a shipped format), then the first by name.
    """
    chosen = entries()[0]
    claimants = [chosen[name] for name, loads in formats().items() if loads and loads[0] == fmt]
    claimants.sort(key=lambda e: (not e.value.startswith("cr.runtime.backends."), e.name))
    return claimants[0] if claimants else None


def formats() -> dict[str, tuple[str, ...] | None]:
    """Backend name -> the model formats it loads (its FORMATS; None: any format), for every
    registered backend whose class can be imported here (no framework is imported).

    Model formats are open names (cr/store/schemas/model.json takes any well-formed one):
    this table and the converters' (converters()) are what gives a format a meaning.
    """
    found: dict[str, tuple[str, ...] | None] = {}
    for name in available():
        try:
            declared = getattr(load_class(find(name)), "FORMATS", None)
        except BackendError:
            continue  # broken, registered twice, or importable only in a lock's interpreter
        found[name] = tuple(declared) if declared is not None else None
    return found


def converters() -> dict[str, tuple[str, ...]]:
    """Output format -> the source formats ``cr compile`` converts into it."""
    from .actions.compile import READS

    return {to: tuple(reads) for to, reads in READS.items()}


def format_problem(fmt: str | None, loads: dict[str, tuple[str, ...] | None] | None = None) -> str | None:
    """None when a registered backend loads models in fmt or a converter reads it; else
    why fmt cannot be used here, naming the backends and the formats each loads.

    A backend that takes any format (FORMATS = None, e.g. null) does not count: it loads
    nothing in particular. loads: formats() when the caller already has it.
    """
    loads = formats() if loads is None else loads
    if fmt is None or any(fmt in (declared or ()) for declared in loads.values()):
        return None
    if any(fmt in reads for reads in converters().values()):
        return None
    return f"no registered backend loads the format {fmt!r} and no converter reads it (backends: {describe_formats(loads)})"


def describe_formats(loads: dict[str, tuple[str, ...] | None] | None = None) -> str:
    """'null (any format), onnxruntime (onnx), ...': the backends and what each loads."""
    loads = formats() if loads is None else loads
    return ", ".join(f"{name} ({', '.join(declared) if declared is not None else 'any format'})"
                     for name, declared in sorted(loads.items())) or "none registered"


def describe() -> str:
    """The registered backend names for help texts: 'null, onnxruntime, ...'."""
    return ", ".join(available()) or "none registered"


def load_backend(name: str):
    """A new, not yet loaded instance of the backend registered under name."""
    return load_class(find(name))()
