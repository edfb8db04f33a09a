"""Run resolvelib over a Universe and explain conflicts in plain words."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CRError, NotFound
from ..events import reporter
from ..software.recipe import Requirement
from .provider import Candidate, Provider, Universe


@dataclass(frozen=True)
class ConflictCause:
    """One requirement in a conflict, as data (resolvelib's cause, in cr's words).

    software: the required software's name; requirement: the requirement as written
    ("software:onnxruntime@>=1.18"); requested_by: who asked ("numpy 2.1.3" for a software's
    own dependency, else the requirement's requester, e.g. "solution:demo@1.0.0");
    candidates: the versions on offer here, each "VERSION (ORIGIN)", newest first.
    """

    software: str
    requirement: str
    requested_by: str
    candidates: tuple[str, ...]

    def to_dict(self) -> dict:
        return {"software": self.software, "requirement": self.requirement, "requested_by": self.requested_by,
                "candidates": list(self.candidates)}


class ResolutionConflict(CRError):
    """No set of versions satisfies every requirement; the message says who asked for what,
    ``causes`` holds the same as ConflictCause records (for callers that render their own)."""

    def __init__(self, message: str, hint: str | None = None, causes=()):
        super().__init__(message, hint)
        self.causes: list[ConflictCause] = list(causes)


@dataclass
class Resolution:
    """The chosen candidate per software, in dependency order (dependencies first)."""

    chosen: list[Candidate]
    requested_by: dict[str, list[str]]


class _Reporter:
    """resolvelib reporter: counts rounds and keeps the latest conflict, so that giving up
    after too many rounds can still say which requirements fought."""

    def __init__(self):
        self.rounds = 0
        self.causes: list = []

    def starting(self): ...
    def starting_round(self, index): self.rounds = index + 1
    def ending_round(self, index, state): ...
    def ending(self, state): ...
    def adding_requirement(self, requirement, parent): ...
    def resolving_conflicts(self, causes): self.causes = list(causes)
    def rejecting_candidate(self, criterion, candidate): ...
    def pinning(self, candidate): ...


def resolve(requirements: list[Requirement], universe: Universe, max_rounds: int = 2000) -> Resolution:
    """Choose one candidate per required software; ResolutionConflict / NotFound when impossible."""
    from resolvelib import Resolver
    from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

    active = [r for r in requirements if r.applies(universe.markers)]
    for req in active:
        if not universe.candidates(req.name) and req.name not in universe.recipes:
            raise NotFound(
                f"unknown software {req.name!r} (needed by {req.requested_by or 'the request'})",
                hint="cr find software lists the recipes; add one under recipes/ (docs/howto-add-a-recipe.md)",
            )
    provider = Provider(universe)
    events = _Reporter()
    try:
        result = Resolver(provider, events).resolve(active, max_rounds=max_rounds)
    except ResolutionImpossible as exc:
        raise ResolutionConflict(explain(exc.causes, universe), hint="relax a version requirement, or add a recipe/method that offers a matching version",
                                 causes=structured(exc.causes, universe)) from None
    except ResolutionTooDeep:
        latest = f"; the latest conflict: {explain(events.causes, universe)}" if events.causes else ""
        raise ResolutionConflict(
            f"gave up after {max_rounds} rounds of backtracking{latest}",
            hint="pin versions of the software named here to cut the search short",
            causes=structured(events.causes, universe),
        ) from None

    order = _topological(result)
    requested_by: dict[str, list[str]] = {}
    for name, criterion in result.criteria.items():
        who = []
        for info in criterion.information:
            who.append(f"{info.parent.name} {info.parent.version}" if info.parent else (info.requirement.requested_by or "request"))
        requested_by[name] = sorted(set(who))
    reporter().info(f"resolved {len(order)} software")
    return Resolution([result.mapping[n] for n in order], requested_by)


def _topological(result) -> list[str]:
    """Dependencies before dependants; ties broken by name, so locks are deterministic."""
    graph = result.graph
    names = sorted(n for n in result.mapping)
    done: list[str] = []
    seen: set[str] = set()

    def visit(n: str, stack: set[str]) -> None:
        if n in seen or n in stack:
            return
        stack.add(n)
        for child in sorted(c for c in graph.iter_children(n) if c is not None):
            visit(child, stack)
        stack.discard(n)
        seen.add(n)
        done.append(n)

    for n in names:
        visit(n, set())
    return done


def structured(causes, universe: Universe) -> list[ConflictCause]:
    """resolvelib's causes (RequirementInformation: requirement, parent) as ConflictCause
    records, in resolvelib's order, repeats dropped."""
    found: list[ConflictCause] = []
    offers: dict[str, tuple[str, ...]] = {}
    for info in causes:
        req = info.requirement
        if req.name not in offers:
            offers[req.name] = tuple(f"{c.version} ({c.origin})" for c in universe.candidates(req.name))
        who = f"{info.parent.name} {info.parent.version}" if info.parent is not None else (req.requested_by or "the request")
        cause = ConflictCause(req.name, str(req), who, offers[req.name])
        if cause not in found:
            found.append(cause)
    return found


def explain(causes, universe: Universe) -> str:
    """'solution:x needs onnxruntime>=1.18; recipe onnxruntime offers 1.16.3 on armv7l' style text."""
    # {required name: {(who, spec): [parent versions]}}: "numpy (2.1.3, 1.26.4) needs python>=3.9"
    by_name: dict[str, dict[tuple[str, str], list[str]]] = {}
    for info in causes:
        req = info.requirement
        who = info.parent.name if info.parent is not None else (req.requested_by or "the request")
        versions = by_name.setdefault(req.name, {}).setdefault((who, _spec(req)), [])
        if info.parent is not None and info.parent.version not in versions:
            versions.append(info.parent.version)
    parts = []
    machine = universe.markers.get("platform_machine", "this platform")
    for name, askers in by_name.items():
        needs = []
        for (who, spec), versions in askers.items():
            which = f" ({', '.join(versions)})" if versions else ""
            needs.append(f"{who}{which} needs {name}{spec}")
        offers = _offers(name, universe, machine)
        parts.append("; ".join(needs) + "; " + offers)
    return "conflicting requirements: " + " | ".join(parts)


def _spec(req: Requirement) -> str:
    return req.ref.spec if req.ref.spec and req.ref.spec[0] in "<>=!~" else (f"=={req.ref.spec}" if req.ref.spec else " (any version)")


def _offers(name: str, universe: Universe, machine: str) -> str:
    present = [f"{e.version} ({e.origin})" for e in universe.envs if e.name == name]
    recipe = universe.recipes.get(name)
    pieces = []
    if present:
        pieces.append(f"present here: {', '.join(present)}")
    if recipe is None:
        pieces.append(f"no recipe for {name}")
    else:
        versions = recipe.installable_versions(universe.markers, universe.capabilities)
        shown = ", ".join(versions[:6]) + (f" (+{len(versions) - 6} more)" if len(versions) > 6 else "")
        pieces.append(f"recipe {name} offers {shown} on {machine}" if versions else f"recipe {name} offers no version on {machine}")
    return "; ".join(pieces)
