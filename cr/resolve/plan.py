"""Planning: what a component needs on this machine (a lock), the environment it runs in,
and installing what the lock lists as missing.

    from cr.resolve import plan
    the_lock = plan.lock("solution:lenet-digits-onnxruntime")      # resolve (or reuse) + save
    the_lock, env = plan.env_for("solution:lenet-digits-onnxruntime")
    plan.install_missing("solution:lenet-digits-onnxruntime")      # exactly what the lock says

Installation takes the lock as its input: each missing entry is installed with the
method, packages and version the lock recorded (cr.software.install.install_locked), so a
recipe edited between resolution and installation cannot change what gets installed.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import CRError, NotFound
from ..events import reporter
from ..store.catalog import open_index

__all__ = ["lock", "env_for", "install_missing"]


def lock(ref: str, python: str | None = None, output: str | Path | None = None, platform_root: str | Path | None = None,
         requires: tuple[str, ...] | list[str] = (), requested_by: str = "") -> dict:
    """Resolve what ref (a solution or any component with deps) needs on this platform.

    Returns the lock (DESIGN.md contract) and saves it in CR_HOME/locks (and at output).
    Software that is present is preferred; what must be installed is listed in 'missing'.
    With platform_root (a machine captured by `cr platform --capture DIR`), plan for that
    machine instead: nothing of this host is used, and the lock is only written to output.
    requires: more software than ref's deps (what running it with a backend needs:
    run_requirements()), asked for by requested_by; such a lock is kept apart.
    """
    import sys

    from ..platform import current, detect
    from .lock import build_lock, lock_path, save_lock

    if platform_root is not None:
        interpreter = python or "python3"
    else:
        from ..software.host import canonical_interpreter

        interpreter = str(Path(python).absolute()) if python else sys.executable
        if python and not Path(interpreter).is_file():
            raise NotFound(f"python interpreter {python} does not exist", hint="give the path of a python executable")
        interpreter = canonical_interpreter(interpreter)  # python and python3 must share a lock
    platform = detect(platform_root) if platform_root is not None else current()
    index = open_index()
    try:
        result = build_lock(ref, index, platform, interpreter, foreign=platform_root is not None,
                            requires=requires, requested_by=requested_by)
    finally:
        index.close()
    if platform_root is not None:
        if output:
            save_lock(result, Path(output))
        result["path"] = str(output) if output else None
        result["cached"] = False
        return result
    cached = result.pop("cached", False)
    result.pop("path", None)
    if output:
        save_lock(result, Path(output))
    if cached:
        result["path"] = str(lock_path(result["root"], result["platform"]["fingerprint"], result.get("requires") or ()))
    else:
        result["path"] = str(save_lock(result))
    result["cached"] = cached
    return result


def lock_for(ref_or_lock: str | Path, python: str | None = None) -> dict:
    """The lock of what ref needs here (resolved or reused); a lock file works too (checked:
    its prefixes still exist, its exports are this machine's)."""
    from .compose import missing_paths
    from .lock import load_lock

    path = Path(str(ref_or_lock))
    if path.is_file():  # a lock file (any name); otherwise a ref
        the_lock = load_lock(path)
        gone = missing_paths(the_lock)
        if gone:
            raise CRError(f"lock {path} refers to software that is gone: {gone[0]}", hint=f"re-resolve: cr resolve {the_lock['root']}")
        refuse_foreign(the_lock, path)
        return the_lock
    return lock(str(ref_or_lock), python=python)


def env_for(ref_or_lock: str | Path | list | tuple, python: str | None = None) -> tuple[dict, dict]:
    """(lock, environment variables) to run a command inside what ref needs; a lock file works too.

    Several targets (a list of refs and lock files) are composed in order into one lock
    (cr.resolve.compose.merge: the same software at two versions is a CRError naming both
    targets), whose environment holds every target's software."""
    from .compose import compose, merge

    if isinstance(ref_or_lock, (list, tuple)):
        locks = [lock_for(target, python) for target in ref_or_lock]
        the_lock = merge(locks) if len(locks) > 1 else locks[0]
    else:
        the_lock = lock_for(ref_or_lock, python)
    return the_lock, compose(the_lock)


def foreign_settings(the_lock: dict) -> list[str]:
    """What a lock would make a child run that this machine does not vouch for: exports
    (PYTHONPATH, LD_PRELOAD, any variable) that differ from those of the software env
    registered here under the entry's name and id. A lock is data, but exports run code
    unseen (a PYTHONPATH folder's sitecustomize.py, an LD_PRELOAD library): from a lock made
    elsewhere they are refused. The lock's interpreter is its one visible program: the one
    you name by giving the file (a wrapper of your own is a use, tests/test_crash_hygiene.py)."""
    from ..software.envs import list_envs

    registered = {(env.name, env.id): env.exports or {} for env in list_envs(prune=False)}
    out = []
    for sw in the_lock.get("software") or ():
        if not isinstance(sw, dict) or not sw.get("exports"):
            continue
        mine = registered.get((sw.get("name"), sw.get("env_id")))
        if mine != sw.get("exports"):
            shown = ", ".join(f"{k}={v}" for k, v in sorted(sw["exports"].items()))
            out.append(f"{sw.get('name')} {sw.get('version')} exports {shown}"
                       + (" (not as registered here)" if mine is not None else " (no such software env here)"))
    return out


def refuse_foreign(the_lock: dict, path: Path) -> None:
    """CRError listing what a lock file would run that this machine does not vouch for (foreign_settings)."""
    foreign = foreign_settings(the_lock)
    if not foreign:
        return
    from ..textsafe import shown

    root = the_lock.get("root") if isinstance(the_lock.get("root"), str) else "REF"
    raise CRError(f"lock {path} would run what this machine does not vouch for: " + "; ".join(shown(f) for f in foreign[:3])
                  + (f"; and {len(foreign) - 3} more" if len(foreign) > 3 else ""),
                  hint=f"resolve it on this machine instead: cr resolve {root} -o lock.json (cr install --lock {path} "
                       "installs what it records first, listing what would run)")


def install_missing(ref_or_lock: str | Path | dict, python: str | None = None, offline: bool = False,
                    trust: bool = False) -> dict:
    """Install every software a lock lists as missing, exactly as it recorded them (method,
    packages, version; dependencies first, in the lock's order), then resolve again.

    ref_or_lock: a ref (resolved here first: the lock cr resolve would give), a lock file
    or a lock dict. Returns {'installed': [env dicts], 'lock': the new lock}. trust: consent
    to what a recipe from an untrusted repository runs (consent()); without it, such an
    install raises cr.store.trust.Untrusted naming exactly what it would run.
    """
    from ..software.install import install_locked
    from .lock import load_lock

    if isinstance(ref_or_lock, dict):
        first = ref_or_lock
    elif Path(str(ref_or_lock)).is_file():
        first = load_lock(Path(str(ref_or_lock)))
    else:
        first = lock(str(ref_or_lock), python=python)
    if trust and any(sw["origin"] == "installable" for sw in first["software"]):
        consent(first["root"], True, f"installing what {first['root']} needs")
    installed = []
    todo = [sw for sw in first["software"] if sw["origin"] == "installable"]
    for i, sw in enumerate(todo):
        reporter().phase(f"install {first['root']}", f"installing {sw['name']} {sw.get('version') or ''}".rstrip(),
                         f"{i + 1}/{len(todo)}")
        env = install_locked(sw, interpreter=first["interpreter"], offline=offline, trusted=trust)
        installed.append(env.to_dict())
    if todo:
        reporter().phase(f"install {first['root']}", None, f"{len(todo)} installed")
    final = lock(first["root"], python=first["interpreter"], requires=first.get("requires") or ()) if installed else first
    return {"installed": installed, "lock": final}


def review(ref: str) -> list:
    """What resolving and installing ref's software would execute or fetch from repositories
    the user has not trusted (cr.store.trust.Item list, empty when nothing): the install
    methods and executable probes of its software's recipes. Nothing is run to find out.
    What running it would import or call (a net.py, a loader, an action entry) depends on
    the backend and variant: cr.run.solution reviews that, and the runs check it again."""
    from ..software.recipe import load_recipes
    from ..store import trust
    from .lock import closure_names, collect, home_repo

    index = open_index()
    try:
        components, requirements = collect(ref, index)
        own = home_repo(components[0][0])
        recipes = load_recipes(index, own)
        items = []
        for name in closure_names(requirements, index, own):
            recipe = recipes.get(name)
            if recipe is not None and not recipe.trusted:
                items += trust.recipe_items(recipe)
    finally:
        index.close()
    return list(dict.fromkeys(items))


def consent(ref: str, trust: bool, what: str, more=()) -> list:
    """Check (and with trust, grant) what ref would run from untrusted repositories: review(ref)
    and the items in more (what running it would import or call).

    Without trust: cr.store.trust.Untrusted listing it, before anything runs. With trust:
    every item is reported (the user sees exactly what will run), then the repositories are
    marked trusted. Returns the items.
    """
    from ..events import reporter
    from ..store import trust as trust_mod

    items = list(dict.fromkeys([*review(ref), *more]))
    if not items:
        return items
    if not trust:
        trust_mod.require(items, what)
    reporter().info(f"--trust: {what} will run code from repositories you had not trusted:")
    for item in items:
        reporter().info(f"  {item.line()}")
    for name in trust_mod.trust_repos([i.repo for i in items]):
        reporter().info(f"trusted repository {name!r} (cr repo untrust {name} takes it back)")
    return items


def repo_review(name: str) -> list:
    """Everything in registered repository `name` that would execute or fetch (recipes'
    install methods and executable probes, Python files, loaders, action entries), as
    cr.store.trust.Item: what `cr repo pull` and `cr repo trust` show."""
    from ..software.recipe import Recipe
    from ..store import trust

    index = open_index()
    try:
        items = []
        for comp in index.components(repo=name):
            meta = index.meta_of(comp)
            if comp.kind == "software":
                items += trust.recipe_items(Recipe.from_meta(meta, str(comp.meta_path), comp.repo, False))
            else:
                items += trust.meta_items(comp.kind, comp.ref, comp.repo, meta)
    finally:
        index.close()
    return items
