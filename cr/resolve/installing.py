"""`cr install software NAME` as a call: the software, then what it needs beside itself."""
from __future__ import annotations


def install_software(name: str, spec: str | None = None, offline: bool = False, python: str | None = None,
                     trust: bool = False) -> dict:
    """Install software name (at the newest version satisfying spec) and the software its
    lock lists as missing beside it (numpy for onnxruntime: left out of its prefix because a
    lock provides it), so that `cr env exec software:NAME` works right after. Returns what
    `cr install software NAME[@SPEC] --json` prints: the env's dict (cr.install's SoftwareEnv)
    plus "dependencies_installed" (the env dicts of those dependencies). trust: consent to
    what an untrusted recipe runs (its repository is trusted first, as --trust); without it
    such an install raises cr.store.trust.Untrusted naming exactly what would run."""
    from ..software.install import install
    from .plan import install_missing

    if trust:
        _trust_recipe(name)
    env = install(name, spec, offline=offline, interpreter=python)
    result = install_missing(f"software:{env.name}", python=python, offline=offline, trust=trust)
    return {**env.to_dict(), "dependencies_installed": [d for d in result["installed"] if d["name"] != env.name]}


def _trust_recipe(name: str) -> None:
    """With the user's consent: an untrusted recipe's repository is trusted, its items reported."""
    from ..events import reporter
    from ..software.recipe import load_recipe
    from ..store import trust as trust_mod

    recipe = load_recipe(name)
    if not recipe.trusted:
        for item in trust_mod.recipe_items(recipe):
            reporter().info(f"  {item.line()}")
        trust_mod.trust_repos([recipe.repo])
