"""Recipes: how to detect and how to install one software, read from kind=software components.

A recipe is data (recipes/<name>/recipe.json, DESIGN.md "Recipe"); this module gives it a
typed face. Requirements everywhere are strings ``kind:name[@spec][; marker]`` (or
objects with ``ref``/``marker``), parsed by :func:`parse_requirement`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from ..errors import InvalidMeta, NotFound
from ..store.refs import Ref, parse_ref, parse_version


@dataclass(frozen=True)
class Requirement:
    """A dependency: a ref, an optional PEP 508 marker, and who asked for it (for explanations)."""

    ref: Ref
    marker: str | None = None
    optional: bool = False
    requested_by: str = ""

    @property
    def name(self) -> str:
        return self.ref.name

    @property
    def kind(self) -> str:
        return self.ref.kind or "software"

    def applies(self, markers: dict) -> bool:
        """Whether the marker (if any) holds on a platform with these PEP 508 markers."""
        return marker_holds(self.marker, markers)

    def __str__(self) -> str:
        text = str(self.ref)
        return f"{text}; {self.marker}" if self.marker else text


def marker_holds(marker: str | None, markers: dict) -> bool:
    """Evaluate a PEP 508 marker against a platform's marker environment (None holds)."""
    if not marker:
        return True
    return _marker_holds(marker, tuple(sorted(markers.items())))


@lru_cache(maxsize=4096)
def _marker_holds(marker: str, environment: tuple) -> bool:
    # A resolution evaluates the same few markers hundreds of times: parse each once.
    from packaging.markers import InvalidMarker, Marker, UndefinedEnvironmentName

    try:
        return bool(Marker(marker).evaluate(dict(environment)))
    except (InvalidMarker, UndefinedEnvironmentName, ValueError, TypeError) as exc:
        # packaging's message may run over several lines (the marker, then a caret): the first says it
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        shown = marker if len(marker) <= 120 else marker[:117] + "..."
        raise InvalidMeta(f"invalid marker {shown!r}: {why}", hint="see PEP 508 for marker syntax") from None


def parse_requirement(item, requested_by: str = "") -> Requirement:
    """'software:numpy@>=1.21; python_version >= "3.9"' or {'ref': ..., 'marker': ...} -> Requirement."""
    if isinstance(item, dict):
        text, marker, optional = item.get("ref", ""), item.get("marker"), bool(item.get("optional", False))
    else:
        text, _, marker = str(item).partition(";")
        marker, optional = marker.strip() or None, False
    ref = parse_ref(text.strip(), kind=None if ":" in text else "software")
    return Requirement(ref, marker, optional, requested_by)


# What each detect probe type and install method cannot work without. The schema says
# which fields exist and what they hold; these say which ones a type needs (at least one
# field of each group), checked where the recipe is used: methods_for, probes_for.
PROBE_NEEDS = {"python": (("module",),), "executable": (("names", "paths"),), "library": (("globs",),)}
METHOD_NEEDS = {"pip": (("packages",),), "apt": (("packages",),), "download": (("url",), ("sha256",)),
                "script": (("script",),)}


def _lacks(spec: dict, needs: dict, kind: str, what: str) -> str | None:
    """Why spec (a probe or a method of type `kind`) cannot work, or None."""
    groups = needs.get(kind)
    if groups is None:
        return f"unknown {what} {kind!r}"
    for group in groups:
        if not any(spec.get(f) for f in group):
            return f"a {kind} {what} needs {' or '.join(repr(f) for f in group)}"
    return None


@dataclass(frozen=True)
class InstallMethod:
    """One way to install: pip/apt/download/script, valid where its marker holds."""

    method: str
    marker: str | None
    versions: tuple[str, ...]
    spec: dict = field(compare=False, hash=False, repr=False)

    @property
    def requires(self) -> tuple[str, ...]:
        """Platform capabilities this method needs (e.g. 'cuda'); PEP 508 has no marker for them."""
        return tuple(self.spec.get("requires", ()))

    def applies(self, markers: dict, capabilities=frozenset()) -> bool:
        return marker_holds(self.marker, markers) and capabilities_hold(self.requires, capabilities)

    def packages_for(self, version: str) -> list[str]:
        """The method's `packages` with {version} filled in ("onnxruntime=={version}")."""
        return [fill(p, version=version) for p in self.spec.get("packages", ())]


def capabilities_hold(requires, capabilities) -> bool:
    """Whether a platform with these capabilities meets requires: every plain name present,
    every '!name' absent ('!cuda': the CPU build, where onnxruntime-gpu is not chosen)."""
    caps = set(capabilities)
    return all((c[1:] not in caps) if c.startswith("!") else (c in caps) for c in requires)


def fill(template: str, **values) -> str:
    """Replace {key} placeholders (only the given keys; other braces are left alone)."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", str(value))
    return template


@dataclass(frozen=True)
class Recipe:
    """A typed view of a software component's meta."""

    name: str
    uid: str
    revision: str  # the recipe's own version
    detect: tuple[dict, ...]
    install: tuple[InstallMethod, ...]
    env: dict
    deps: tuple[Requirement, ...]
    path: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False, repr=False)
    #: the repository it comes from, and whether what it runs may take effect (cr.store.trust)
    repo: str = field(default="", compare=False)
    trusted: bool = field(default=True, compare=False)

    @classmethod
    def from_meta(cls, meta: dict, path: str = "", repo: str = "", trusted: bool = True) -> "Recipe":
        name = meta["name"]
        methods = tuple(
            InstallMethod(m["method"], m.get("marker"), tuple(m.get("versions", ())), m)
            for m in meta.get("install", ())
        )
        deps = tuple(parse_requirement(d, requested_by=f"software:{name}") for d in meta.get("deps", ()))
        return cls(name, meta["uid"], meta["version"], tuple(meta.get("detect", ())), methods, dict(meta.get("env", {})), deps, path, meta,
                   repo, trusted)

    def methods_for(self, markers: dict, capabilities=frozenset()) -> list[InstallMethod]:
        """Install methods usable on a platform, in the recipe's order of preference.

        A method without what it needs (a download without url) or a marker that cannot be
        evaluated raises InvalidMeta naming the recipe file and field.
        """
        applying = []
        for i, m in enumerate(self.install):  # every marker is checked, whichever method applies
            try:
                if m.applies(markers, capabilities):
                    applying.append((i, m))
            except InvalidMeta as exc:
                raise InvalidMeta(f"{self.path or self.name}: /install/{i}/marker: {exc.message}", hint=exc.hint) from None
        for i, m in applying:
            lacks = _lacks(m.spec, METHOD_NEEDS, m.method, "install method")
            if lacks:
                raise InvalidMeta(f"{self.path or self.name}: /install/{i}: {lacks}",
                                  hint="fix the recipe; docs/howto-add-a-recipe.md says what each method needs")
        return [m for _, m in applying]

    def probes_for(self, markers: dict, capabilities=frozenset()) -> list[tuple[int, dict]]:
        """(index, probe) of the detect probes whose marker and `requires` hold on a platform.

        A probe without what its type needs, or a marker that cannot be evaluated, raises
        InvalidMeta naming the recipe file and field (detection warns and goes on)."""
        out = []
        for i, probe in enumerate(self.detect):
            lacks = _lacks(probe, PROBE_NEEDS, probe.get("type"), "probe")
            if lacks:
                raise InvalidMeta(f"{self.path or self.name}: /detect/{i}: {lacks}",
                                  hint="fix the recipe; docs/howto-add-a-recipe.md says what each probe needs")
            try:
                holds = marker_holds(probe.get("marker"), markers)
            except InvalidMeta as exc:
                raise InvalidMeta(f"{self.path or self.name}: /detect/{i}/marker: {exc.message}", hint=exc.hint) from None
            if holds and capabilities_hold(probe.get("requires", ()), capabilities):
                out.append((i, probe))
        return out

    def installable_versions(self, markers: dict, capabilities=frozenset()) -> list[str]:
        """Versions some usable method can install here, newest first (deduplicated)."""
        versions = {v for m in self.methods_for(markers, capabilities) for v in m.versions}
        return sorted(versions, key=parse_version, reverse=True)

    def method_for(self, version: str, markers: dict, capabilities=frozenset()) -> InstallMethod | None:
        """The first usable method that offers this version."""
        for m in self.methods_for(markers, capabilities):
            if version in m.versions:
                return m
        return None

    def deps_for(self, markers: dict) -> list[Requirement]:
        return [d for d in self.deps if d.applies(markers)]


def load_recipe(name: str, index=None) -> Recipe:
    """The recipe for software `name` from the registered repositories (highest precedence)."""
    from ..store.catalog import open_index, resolve

    own = index is None
    if own:
        index = open_index(kind="software", name=name)
    try:
        try:
            comp = resolve(f"software:{name}", index)
        except NotFound:
            broken = _invalid_recipe_error(name, index)
            if broken:
                where, why = broken
                raise InvalidMeta(f"the recipe for software {name!r} is invalid: {why}",
                                  hint=f"fix the recipe; cr check {where} shows every problem") from None
            raise NotFound(f"unknown software {name!r}: no recipe for it", hint="cr find software lists the recipes") from None
        return _recipe(comp, index.meta_of(comp), index)
    finally:
        if own:
            index.close()


def recipe_of(comp, index) -> Recipe:
    """The Recipe of an indexed software component, with its repository and trust."""
    return _recipe(comp, index.meta_of(comp), index)


def _recipe(comp, meta: dict, index) -> Recipe:
    from ..store.trust import component_trusted

    return Recipe.from_meta(meta, str(comp.meta_path), comp.repo, component_trusted(comp, meta, index))


def _invalid_recipe_error(name: str, index=None) -> tuple[str, str] | None:
    """(its file, shell-quoted; the indexed error) of a recipe for `name` that failed validation
    (so is not searchable)."""
    import shlex
    from pathlib import Path

    own = index is None
    if own:
        from ..store.catalog import open_index

        index = open_index(refresh=False)
    try:
        for _repo, path, error in index.invalid():
            p = Path(path)
            if p.parent.name == name or (p.parent.parent.name == name and p.parent.parent.parent.name == "software"):
                return shlex.quote(str(path)), error
    finally:
        if own:
            index.close()
    return None


def load_recipes(index, prefer_repo: str | None = None) -> dict[str, Recipe]:
    """Every recipe in the index, by software name (highest precedence wins; an untrusted copy
    never wins over a trusted one that differs: cr.store.trust.prefer_trusted; prefer_repo:
    that repository's recipes first, for a solution that came with them)."""
    from ..store.trust import prefer_trusted

    out: dict[str, Recipe] = {}
    components = prefer_trusted(index.components(kind="software"), index)
    if prefer_repo is not None:
        components = [c for c in components if c.repo == prefer_repo] + [c for c in components if c.repo != prefer_repo]
    for comp in components:
        if comp.name not in out:
            out[comp.name] = _recipe(comp, index.meta_of(comp), index)
    return out
