"""Environment composition: the exact variables and interpreter for a child process, from a lock.

No venvs: each software env contributes its exports; path lists (PATH, PYTHONPATH,
LD_LIBRARY_PATH, ...) are prepended in lock order ahead of the parent's entries, other
variables are set. The result is deterministic for a given lock and parent environment.
"""
from __future__ import annotations

import os
import re

from ..errors import CRError
from ..software.envs import PATH_VARS

# A variable a lock may export: a shell identifier (no '=', no NUL, not empty).
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def exports_problem(exports: object) -> tuple[str, str] | None:
    """(pointer below the entry, what is wrong) of an entry's exports that no child
    environment can hold, or None: a mapping of variable names to a string, or for the
    path lists (PATH, PYTHONPATH, ...) a list of strings; no NUL anywhere."""
    if exports is None:
        return None
    if not isinstance(exports, dict):
        return "/exports", f"expected a mapping of variable names to values, found {type(exports).__name__}"
    for var, value in exports.items():
        if not isinstance(var, str) or not _VAR.fullmatch(var):
            return "/exports", f"{var!r} is not a variable name (letters, digits and '_', not starting with a digit)"
        values = value if isinstance(value, list) and var in PATH_VARS else [value]
        for item in values:
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                what = "a string or a list of strings" if var in PATH_VARS else "a string"
                return f"/exports/{var}", f"expected {what}, found {type(item).__name__}"
            if "\0" in str(item):
                return f"/exports/{var}", "holds a NUL character, which no environment variable can"
    return None


def compose(lock: dict, base: dict | None = None) -> dict:
    """A new environment dict for running inside the lock; base defaults to os.environ.

    The lock's exports are checked as they are used (a lock given as a dict never went
    through load_lock): CRError naming the entry and the field, never a ValueError from the
    operating system when the child starts."""
    root = lock.get("root") if isinstance(lock.get("root"), str) else "?"
    missing = lock.get("missing")
    if missing:
        names = [str(n) for n in missing] if isinstance(missing, list) else [str(missing)]
        raise CRError(
            f"{root} needs software that is not installed here: {', '.join(names)}",
            hint="install it first: " + "; ".join(f"cr install software {n}" for n in names),
        )
    interpreter = lock.get("interpreter")
    software = lock.get("software")
    if not isinstance(interpreter, str) or "\0" in interpreter or not isinstance(software, list):
        raise CRError(f"the lock of {root} names no interpreter or no software list",
                      hint="re-create it with cr resolve REF -o FILE")
    env = dict(os.environ if base is None else base)
    lists: dict[str, list[str]] = {var: [] for var in PATH_VARS}
    for i, sw in enumerate(software):
        exports = sw.get("exports") if isinstance(sw, dict) else None
        problem = exports_problem(exports) if isinstance(sw, dict) else ("", "expected an object")
        if problem:
            raise CRError(f"the lock of {root}: /software/{i}{problem[0]}: {problem[1]}",
                          hint="re-create it with cr resolve REF -o FILE")
        for var, value in (exports or {}).items():
            if var in lists:
                lists[var].extend([str(v) for v in value] if isinstance(value, list) else str(value).split(os.pathsep))
            else:
                env[var] = str(value)
    for var, entries in lists.items():
        if not entries:
            continue
        old = [p for p in env.get(var, "").split(os.pathsep) if p]
        env[var] = os.pathsep.join(dict.fromkeys(entries + old))
    env["CR_LOCK_ROOT"] = root
    env["CR_PYTHON"] = interpreter
    return env


def merge(locks: list[dict]) -> dict:
    """One lock holding the software of several (in order: the first target's exports come
    first on every path list), for `cr env exec TARGET TARGET ... -- CMD`.

    The same software at one version in two locks is kept once (the first's entry); at two
    versions, or two targets locked for different interpreters, it is a CRError naming both
    targets and both versions: no environment can hold both, and picking one silently would
    run the other target against software it was not resolved with."""
    roots = [str(lk.get("root") or "?") for lk in locks]
    interpreters = {lk.get("interpreter") for lk in locks}
    if len(interpreters) > 1:
        raise CRError(f"{' and '.join(roots)} are locked for different interpreters: {', '.join(sorted(map(str, interpreters)))}",
                      hint="resolve them for one interpreter: cr env exec --python PATH TARGET ... -- CMD")
    seen: dict[str, tuple[str, dict]] = {}
    software, missing = [], []
    for root, lk in zip(roots, locks):
        for sw in lk.get("software") or ():
            if not isinstance(sw, dict) or not isinstance(sw.get("name"), str):
                raise CRError(f"the lock of {root} has a software entry without a name", hint="re-create it with cr resolve REF -o FILE")
            first = seen.get(sw["name"])
            if first is None:
                seen[sw["name"]] = (root, sw)
                software.append(sw)
            elif str(first[1].get("version")) != str(sw.get("version")):
                raise CRError(
                    f"{first[0]} needs {sw['name']} {first[1].get('version')} and {root} needs {sw['name']} {sw.get('version')}: "
                    "one environment cannot hold both",
                    hint=f"run them apart (cr env exec {first[0]} -- CMD; cr env exec {root} -- CMD), "
                         f"or align what they require of {sw['name']}")
        missing += [m for m in (lk.get("missing") or ()) if m not in missing]
    return {"root": ", ".join(roots), "roots": roots, "interpreter": locks[0].get("interpreter"),
            "software": software, "missing": missing, "status": "needs-install" if missing else "ready"}


def missing_paths(lock: dict) -> list[str]:
    """Prefixes/locations the lock relies on that no longer exist (the lock is stale then)."""
    gone = []
    for sw in lock.get("software") or ():
        if not isinstance(sw, dict):
            continue
        for key in ("prefix", "location"):
            p = sw.get(key)
            if p and isinstance(p, str) and not os.path.exists(p):
                gone.append(f"{sw.get('name', '?')} {sw.get('version', '?')}: {p}")
    return gone
