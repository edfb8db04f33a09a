"""Resolver cases as data (tests/resolver_cases/*.json): platform markers and capabilities,
present envs, recipes, a request, and the expected choice per software or the expected
conflict explanation. The provider and resolver run exactly as in `cr resolve`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cr.errors import NotFound
from cr.resolve.provider import Universe
from cr.resolve.resolver import ResolutionConflict, resolve
from cr.software.envs import SoftwareEnv
from cr.software.recipe import Recipe, parse_requirement

CASES = sorted((Path(__file__).parent / "resolver_cases").glob("*.json"))


def _universe(case: dict) -> Universe:
    envs = [SoftwareEnv(e["name"], e["version"], e.get("origin", "detected"), "system", "fp") for e in case["envs"]]
    recipes = {}
    for r in case["recipes"]:
        meta = {"uid": "0" * 16, "kind": "software", "name": r["name"], "version": "1.0.0",
                "install": r.get("install", []), "deps": r.get("deps", [])}
        recipes[r["name"]] = Recipe.from_meta(meta)
    universe = Universe(envs, recipes, case["markers"], frozenset(case.get("capabilities", ())))
    per_version = {r["name"]: r["deps_by_version"] for r in case["recipes"] if "deps_by_version" in r}
    if per_version:
        plain = universe.dependencies

        def dependencies(candidate):
            deps = per_version.get(candidate.name, {}).get(candidate.version)
            if deps is None:
                return plain(candidate)
            return [parse_requirement(d, requested_by=candidate.name) for d in deps]

        universe.dependencies = dependencies
    return universe


@pytest.mark.parametrize("case_file", CASES, ids=[c.stem for c in CASES])
def test_resolver_case(case_file):
    case = json.loads(case_file.read_text())
    universe = _universe(case)
    request = [parse_requirement(r, requested_by="solution:demo@1.0.0") for r in case["request"]]
    if "expect_conflict" in case:
        with pytest.raises(ResolutionConflict) as err:
            resolve(request, universe)
        for fragment in case["expect_conflict"]:
            assert fragment in err.value.message, f"{fragment!r} not in: {err.value.message}"
        return
    if "expect_error" in case:
        with pytest.raises(NotFound) as err:
            resolve(request, universe)
        for fragment in case["expect_error"]:
            assert fragment in err.value.message
        return
    result = resolve(request, universe)
    got = {c.name: f"{c.version} {c.origin}" for c in result.chosen}
    assert got == case["expect"], case["description"]


def test_resolution_order_puts_dependencies_first():
    case = json.loads((Path(__file__).parent / "resolver_cases" / "prefers-present.json").read_text())
    result = resolve([parse_requirement(r, requested_by="x") for r in case["request"]], _universe(case))
    names = [c.name for c in result.chosen]
    assert names.index("python") < names.index("numpy") < names.index("onnxruntime")
    assert result.requested_by["numpy"] == ["onnxruntime 1.18.0"]


def test_giving_up_on_a_deep_conflict_still_names_the_fighting_requirements():
    """A chain of 12 software with two interchangeable versions each, whose end needs leaf<1
    while the request needs leaf>=2: backtracking is exponential, so the resolver gives up,
    and the message must still say who needs what."""
    def recipe(name, versions, deps):
        meta = {"uid": "0" * 16, "kind": "software", "name": name, "version": "1.0.0", "deps": deps,
                "install": [{"method": "pip", "versions": versions, "packages": [name + "=={version}"]}]}
        return Recipe.from_meta(meta)

    chain = [f"c{k}" for k in range(12)]
    recipes = {n: recipe(n, ["1.0", "2.0"], [f"software:{chain[k + 1]}" if k + 1 < len(chain) else "software:leaf@<1"]) for k, n in enumerate(chain)}
    recipes["leaf"] = recipe("leaf", ["0.5", "2.0"], [])
    universe = Universe([], recipes, {"platform_machine": "x86_64"})
    request = [parse_requirement("software:c0", requested_by="me"), parse_requirement("software:leaf@>=2", requested_by="me")]
    with pytest.raises(ResolutionConflict) as err:
        resolve(request, universe, max_rounds=200)
    message = err.value.message
    assert "gave up after 200 rounds" in message
    assert "me needs leaf>=2" in message and "c11 (2.0, 1.0) needs leaf<1" in message
    assert "recipe leaf offers 2.0, 0.5" in message


def test_a_conflict_keeps_its_causes_as_data():
    """A caller can render a conflict its own way: each cause names the requirement, who
    asked and what is on offer here, the same facts as the message."""
    case = json.loads((Path(__file__).parent / "resolver_cases" / "armv7l-conflict.json").read_text())
    request = [parse_requirement(r, requested_by="solution:demo@1.0.0") for r in case["request"]]
    with pytest.raises(ResolutionConflict) as err:
        resolve(request, _universe(case))
    assert "solution:demo@1.0.0 needs onnxruntime>=1.18" in err.value.message  # the message stays
    causes = [c.to_dict() for c in err.value.causes]
    assert causes == [{"software": "onnxruntime", "requirement": "software:onnxruntime@>=1.18",
                       "requested_by": "solution:demo@1.0.0", "candidates": ["1.16.3 (installable)"]}]


def test_giving_up_keeps_the_latest_causes():
    def recipe(name, versions, deps):
        meta = {"uid": "0" * 16, "kind": "software", "name": name, "version": "1.0.0", "deps": deps,
                "install": [{"method": "pip", "versions": versions, "packages": [name + "=={version}"]}]}
        return Recipe.from_meta(meta)

    chain = [f"c{k}" for k in range(12)]
    recipes = {n: recipe(n, ["1.0", "2.0"], [f"software:{chain[k + 1]}" if k + 1 < len(chain) else "software:leaf@<1"]) for k, n in enumerate(chain)}
    recipes["leaf"] = recipe("leaf", ["0.5", "2.0"], [])
    universe = Universe([], recipes, {"platform_machine": "x86_64"})
    request = [parse_requirement("software:c0", requested_by="me"), parse_requirement("software:leaf@>=2", requested_by="me")]
    with pytest.raises(ResolutionConflict) as err:
        resolve(request, universe, max_rounds=200)
    by_asker = {c.requested_by: c for c in err.value.causes}
    assert by_asker["me"].requirement == "software:leaf@>=2"
    assert any(who.startswith("c11 ") and c.requirement == "software:leaf@<1" for who, c in by_asker.items())
    assert all(c.software == "leaf" and c.candidates == ("2.0 (installable)", "0.5 (installable)") for c in err.value.causes)
