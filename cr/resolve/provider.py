"""The resolvelib provider: maps software envs (present) and recipes (installable) onto the
generic backtracking resolver that pip uses.

The algorithm knows nothing about software; this module answers its five questions.
Candidates already present on the machine are preferred over ones that would have to be
installed, and newer over older within each group.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from resolvelib import AbstractProvider

from ..software.envs import SoftwareEnv
from ..software.recipe import InstallMethod, Recipe, Requirement
from ..store.refs import parse_version


@dataclass(frozen=True)
class Candidate:
    """One concrete choice for a software: a present env, or a version a recipe can install."""

    name: str
    version: str
    env: SoftwareEnv | None = field(default=None, compare=False, hash=False)
    method: InstallMethod | None = field(default=None, compare=False, hash=False)
    origin: str = "installable"  # 'detected', 'installed' or 'installable'

    @property
    def present(self) -> bool:
        return self.env is not None

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.origin})"


@dataclass
class Universe:
    """What the resolver may choose from on one platform.

    envs: registered software envs usable here (already filtered to this platform and
    interpreter); recipes: by software name; markers/capabilities: of the target platform.
    """

    envs: list[SoftwareEnv]
    recipes: dict[str, Recipe]
    markers: dict
    capabilities: frozenset = frozenset()

    def candidates(self, name: str) -> list[Candidate]:
        """Present envs first (newest first), then installable versions (newest first)."""
        present = [Candidate(e.name, e.version, env=e, origin=e.origin) for e in self.envs if e.name == name]
        present.sort(key=lambda c: (parse_version(c.version), c.origin == "installed"), reverse=True)
        seen = {c.version for c in present}
        installable = []
        recipe = self.recipes.get(name)
        if recipe is not None:
            for version in recipe.installable_versions(self.markers, self.capabilities):
                if version not in seen:
                    installable.append(Candidate(name, version, method=recipe.method_for(version, self.markers, self.capabilities)))
        return present + installable

    def dependencies(self, candidate: Candidate) -> list[Requirement]:
        recipe = self.recipes.get(candidate.name)
        return recipe.deps_for(self.markers) if recipe is not None else []


class Provider(AbstractProvider):
    def __init__(self, universe: Universe):
        self.universe = universe
        self._cache: dict[str, list[Candidate]] = {}

    def _all(self, name: str) -> list[Candidate]:
        if name not in self._cache:
            self._cache[name] = self.universe.candidates(name)
        return self._cache[name]

    def identify(self, requirement_or_candidate) -> str:
        return requirement_or_candidate.name

    def get_preference(self, identifier, resolutions, candidates, information, backtrack_causes):
        # Decide first what caused backtracking, then the most constrained names
        # (fewest candidates), as pip does; the name breaks ties deterministically.
        caused = any(identifier == c.requirement.name for c in backtrack_causes)
        count = sum(1 for _ in candidates[identifier])
        return (not caused, count, identifier)

    def find_matches(self, identifier, requirements, incompatibilities):
        reqs = list(requirements[identifier])
        bad = {c.version for c in incompatibilities[identifier]}
        return [
            c for c in self._all(identifier)
            if c.version not in bad and all(r.ref.matches_version(c.version) for r in reqs)
        ]

    def is_satisfied_by(self, requirement, candidate) -> bool:
        return requirement.ref.matches_version(candidate.version)

    def get_dependencies(self, candidate):
        return self.universe.dependencies(candidate)
