"""Environment composition: the exact variables and interpreter for a child process, from a lock.

No venvs: each software env contributes its exports; path lists (PATH, PYTHONPATH,
LD_LIBRARY_PATH, ...) are prepended in lock order ahead of the parent's entries, other
variables are set. The result is deterministic for a given lock and parent environment.
"""
from __future__ import annotations

import os

from ..errors import CRError
from ..software.envs import PATH_VARS


def compose(lock: dict, base: dict | None = None) -> dict:
    """A new environment dict for running inside the lock; base defaults to os.environ."""
    if lock.get("missing"):
        raise CRError(
            f"{lock['root']} needs software that is not installed here: {', '.join(lock['missing'])}",
            hint="install it first: " + "; ".join(f"cr install software {n}" for n in lock["missing"]),
        )
    env = dict(os.environ if base is None else base)
    lists: dict[str, list[str]] = {var: [] for var in PATH_VARS}
    for sw in lock["software"]:
        for var, value in (sw.get("exports") or {}).items():
            if var in lists:
                lists[var].extend(value if isinstance(value, list) else str(value).split(os.pathsep))
            else:
                env[var] = str(value)
    for var, entries in lists.items():
        if not entries:
            continue
        old = [p for p in env.get(var, "").split(os.pathsep) if p]
        env[var] = os.pathsep.join(dict.fromkeys(entries + old))
    env["CR_LOCK_ROOT"] = lock["root"]
    env["CR_PYTHON"] = lock["interpreter"]
    return env


def missing_paths(lock: dict) -> list[str]:
    """Prefixes/locations the lock relies on that no longer exist (the lock is stale then)."""
    gone = []
    for sw in lock["software"]:
        for key in ("prefix", "location"):
            p = sw.get(key)
            if p and not os.path.exists(p):
                gone.append(f"{sw['name']} {sw['version']}: {p}")
    return gone
