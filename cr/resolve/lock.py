"""Locks: the exact resolution of a component (usually a solution) on one platform.

Contract (DESIGN.md "Lock"): every software with version, origin, source and hashes,
every component with uid and sha256, and the platform fingerprint. A lock is plain JSON,
written atomically; `cr env exec` composes a child environment from it.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
from pathlib import Path

from ..__about__ import __version__
from ..errors import CRError, InvalidMeta
from ..events import reporter
from ..fsutil import atomic_write_json
from ..paths import cr_home
from ..software.recipe import Requirement, parse_requirement
from ..store.catalog import component_sha256

# The resolver (and resolvelib, packaging.markers) is imported only when a lock cannot be
# reused: a cached `cr resolve` never needs it.

LOCK_FORMAT = 1


def collect(ref: str, index) -> tuple[list, list[Requirement]]:
    """The component ref names, every component it refers to, and all software requirements.

    A solution refers to its model and dataset; any component's deps may name other
    components (resolved through the index) or software (returned as requirements).
    """
    from ..store.catalog import resolve as resolve_component

    root = resolve_component(ref, index)
    own = home_repo(root)
    components, requirements, queue, seen = [], [], [root], set()
    if root.kind == "software":  # the environment of a software (cr env exec software:X) holds X itself
        requirements.append(parse_requirement(f"software:{root.name}", requested_by=root.ref))
    while queue:
        comp = queue.pop(0)
        if comp.meta_path in seen:
            continue
        seen.add(comp.meta_path)
        meta = index.meta_of(comp)
        components.append((comp, meta))
        refs = [meta[k] for k in ("model", "dataset") if isinstance(meta.get(k), str)]
        if isinstance(meta.get("dataset"), dict) and meta["dataset"].get("ref"):  # a model's evaluation dataset
            refs.append(meta["dataset"]["ref"])
        for item in meta.get("deps", ()):
            try:
                req = parse_requirement(item, requested_by=comp.ref)
            except CRError as exc:
                raise InvalidMeta(f"{comp.meta_path}: /deps: {exc.message}", hint=exc.hint) from None
            if req.kind == "software":
                requirements.append(req)
            else:
                refs.append(str(req.ref))
        for sub in refs:
            queue.append(resolve_component(sub, index, own))
    return components, requirements


def home_repo(root) -> str | None:
    """The repository whose copies a solution's components come from first (its own: an
    archive's solution runs with the archive's components); None for other roots."""
    return root.repo if root.kind == "solution" else None


def host_universe(index, platform, interpreter: str, detect_missing: list[str] = (), foreign: bool = False,
                  prefer_repo: str | None = None):
    """What this host offers: registered envs for its fingerprint and interpreter, and recipes.

    Software in detect_missing with no registered env is detected first, so a first
    `cr resolve` works without a separate `cr detect`.
    """
    from ..software.envs import list_envs
    from ..software.recipe import load_recipes
    from .provider import Universe

    recipes = load_recipes(index, prefer_repo)
    if foreign:
        # Planning for another machine (captured with `cr platform --capture`): nothing of
        # this host applies; its python is taken as present, everything else must install.
        envs = []
        if platform.python:
            from ..software.envs import SoftwareEnv

            envs.append(SoftwareEnv("python", platform.python, "detected", "platform", platform.fingerprint, interpreter=interpreter))
        return Universe(envs, recipes, platform.markers(), frozenset(platform.capabilities()))
    envs = usable_envs(list_envs(platform=platform.fingerprint), interpreter)
    missing = sorted({n for n in detect_missing if n in recipes and not any(e.name == n for e in envs)})
    if missing:
        from ..software.detect import detect

        reporter().info(f"detecting {', '.join(missing)}")
        detect(missing, interpreter=interpreter)
        envs = usable_envs(list_envs(platform=platform.fingerprint), interpreter)
    return Universe(envs, recipes, platform.markers(), frozenset(platform.capabilities()))


def usable_envs(envs, interpreter: str):
    """Python packages are usable only with the interpreter they were found/installed for;
    the python env itself only if it is that interpreter."""
    out = []
    for e in envs:
        if e.name == "python":
            if _same_file(e.location, interpreter):
                out.append(e)
        elif not e.interpreter or _same_file(e.interpreter, interpreter):
            out.append(e)
    return out


def _same_file(a: str, b: str) -> bool:
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:
        return a == b


def build_lock(ref: str, index, platform, interpreter: str, use_cache: bool = True, foreign: bool = False,
               requires: tuple[str, ...] | list[str] = (), requested_by: str = "") -> dict:
    """Resolve ref on this platform and return the lock dict (saved by the caller).

    requires: more software requirements than ref's own deps (what a backend, an action or
    a pipeline step needs to run ref: cr.resolve.plan.run_requirements), recorded in the
    lock as "requires" and asked for by requested_by; each distinct set is its own lock.
    The previous lock of the same component (and requires) on this platform is reused when
    nothing it depends on changed (see _state_key): no resolver run, no detection, no
    marker parsing.
    """
    components, requirements = collect(ref, index)
    requires = sorted(dict.fromkeys(requires))
    for item in requires:
        requirements.append(parse_requirement(item, requested_by=requested_by or f"running {components[0][0].ref}"))
    path = lock_path(components[0][0].ref, platform.fingerprint, requires)
    if use_cache and not foreign and path.is_file():
        try:
            old = load_lock(path)
        except CRError:
            old = None
        if old and old.get("cache_key") == _state_key(components, index, platform, interpreter, requires) and not _gone(old):
            old["cached"] = True
            return old
    from .resolver import resolve

    own = home_repo(components[0][0])
    universe = host_universe(index, platform, interpreter, detect_missing=closure_names(requirements, index, own),
                             foreign=foreign, prefer_repo=own)
    resolution = resolve(requirements, universe)
    lock = lock_dict(components, resolution, universe, platform, interpreter)
    if requires:
        lock["requires"] = requires
    if foreign:
        lock["planned_for"] = platform.to_dict()
    else:  # after resolution: detection on the way may have registered envs
        lock["cache_key"] = _state_key(components, index, platform, interpreter, requires)
    return lock


def _gone(lock: dict) -> bool:
    from .compose import missing_paths

    return bool(missing_paths(lock))


def _state_key(components, index, platform, interpreter: str, requires=()) -> str:
    """A hash of everything a resolution depends on, cheap to compute (stats, no parsing of recipes).

    Components (their meta hashes), the recipes' index entries, the registered envs of this
    platform, the interpreter, and the modification times of the directories holding the
    interpreter's detected packages: a `pip install` outside cr changes those, so a
    package that was missing is looked for again.
    """
    import os

    from ..software.envs import list_envs

    h = hashlib.sha256()

    def add(*parts) -> None:
        h.update(json.dumps(parts, default=str).encode())
        h.update(b"\n")

    add(__version__, platform.fingerprint, interpreter, list(requires))
    for comp, meta in components:
        add(comp.ref, comp.repo, component_sha256(meta))
    for row in index.file_states("software"):
        add(*row)
    dirs = set()
    for env in usable_envs(list_envs(platform=platform.fingerprint), interpreter):
        add(env.id, env.version, env.location, env.prefix)
        if env.interpreter and env.location:
            dirs.add(os.path.dirname(env.location))
    for d in sorted(dirs):
        try:
            add(d, os.stat(d).st_mtime_ns)
        except OSError:
            add(d, None)
    return h.hexdigest()


def closure_names(requirements: list[Requirement], index, prefer_repo: str | None = None) -> list[str]:
    """Names of required software and of their recipes' deps, transitively."""
    from ..software.recipe import load_recipes

    recipes = load_recipes(index, prefer_repo)
    names, queue = set(), [r.name for r in requirements]
    while queue:
        n = queue.pop()
        if n in names:
            continue
        names.add(n)
        if n in recipes:
            queue.extend(d.name for d in recipes[n].deps)
    return sorted(names)


def lock_dict(components, resolution, universe, platform, interpreter: str) -> dict:
    software = []
    for cand in resolution.chosen:
        recipe = universe.recipes.get(cand.name)
        entry = {
            "name": cand.name,
            "version": cand.version,
            "origin": cand.origin,
            "requested_by": resolution.requested_by.get(cand.name, []),
            "recipe_uid": recipe.uid if recipe else "",
        }
        if cand.env is not None:
            e = cand.env
            entry.update({
                "env_id": e.id, "source": e.source, "location": e.location, "prefix": e.prefix,
                "interpreter": e.interpreter, "exports": e.exports, "packages": e.packages,
            })
        else:
            install = {}
            if cand.method is not None:
                install = {k: v for k, v in cand.method.spec.items() if k != "versions"}
                if "packages" in install:
                    install["packages"] = cand.method.packages_for(cand.version)
            entry.update({"source": cand.method.method if cand.method else "", "install": install})
        software.append(entry)
    missing = [s["name"] for s in software if s["origin"] == "installable"]
    root = components[0][0]
    return {
        "format": LOCK_FORMAT,
        "cr_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "root": root.ref,
        "platform": {
            "fingerprint": platform.fingerprint,
            "arch": universe.markers.get("platform_machine", ""),
            "system": universe.markers.get("platform_system", ""),
            "python": universe.markers.get("python_full_version", ""),
        },
        "interpreter": interpreter,
        "status": "ready" if not missing else "needs-install",
        "missing": missing,
        "components": [
            {"ref": c.ref, "uid": c.uid, "repo": c.repo, "sha256": component_sha256(meta)} for c, meta in components
        ],
        "software": software,
    }


def lock_path(root_ref: str, fingerprint: str, requires=()) -> Path:
    """Where the latest lock of a component on a platform is kept in CR_HOME (one per set of
    extra requirements: <fingerprint>+<hash of them>.json)."""
    kind, rest = root_ref.split(":", 1)
    name, _, version = rest.partition("@")
    suffix = ""
    if requires:
        suffix = "+" + hashlib.sha256("\n".join(sorted(requires)).encode()).hexdigest()[:12]
    return cr_home() / "locks" / kind / name / version / f"{fingerprint}{suffix}.json"


def save_lock(lock: dict, path: Path | None = None) -> Path:
    path = path or lock_path(lock["root"], lock["platform"]["fingerprint"], lock.get("requires") or ())
    atomic_write_json(Path(path), lock, durable=True)
    return Path(path)


def load_lock(path: Path) -> dict:
    """The lock at path; InvalidMeta naming the file (and the field) when it is not one.

    Read by cr.jsonio (through load_json): a regular file only, bounded in size and depth
    (a hostile lock nesting thousands of levels is one error, not a RecursionError), no NaN.
    A lock may come from anywhere (an archive, a colleague), so every field that running
    or installing reads is checked here, once: its type, and for names, versions, paths,
    exports and install records what they may hold (_lock_problem)."""
    from ..store.meta import load_json

    lock = load_json(Path(path))
    software = lock.get("software")
    if lock.get("format") != LOCK_FORMAT or not isinstance(software, list) or not all(isinstance(sw, dict) for sw in software):
        raise InvalidMeta(f"{path}: not a reefkit lock of format {LOCK_FORMAT}", hint="re-create it with cr resolve REF -o FILE")
    problem = _lock_problem(lock)
    if problem:
        pointer, why = problem
        raise InvalidMeta(f"{path}: {pointer}: {why}", hint="re-create it with cr resolve REF -o FILE")
    return lock


_ORIGINS = ("detected", "installed", "installable")
_ENTRY_TEXT = ("recipe_uid", "env_id", "source", "location", "prefix", "interpreter")
_INSTALL_TEXT = ("method", "url", "script", "archive", "index_url", "hint", "marker")


def _shown(value: object) -> str:
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, (dict, list)):
        return type(value).__name__
    return repr(value)[:60]


def _text_problem(value: object, pointer: str, required: bool = False) -> tuple[str, str] | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        return pointer, f"expected a string, found {_shown(value)}"
    if "\0" in value:
        return pointer, "holds a NUL character"
    return None


def _strings_problem(value: object, pointer: str) -> tuple[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        return pointer, f"expected a list of strings, found {_shown(value)}"
    for i, item in enumerate(value):
        problem = _text_problem(item, f"{pointer}/{i}", required=True)
        if problem:
            return problem
    return None


def _parse_problem(value, parse, at: str, expected: str) -> tuple[str, str] | None:
    """(at, what is wrong) when value is no string that parse (a refs parser) accepts."""
    try:
        if not isinstance(value, str):
            raise CRError("")
        parse(value)
    except CRError:
        return at, f"expected {expected}, found {_shown(value)}"
    return None


def _lock_problem(lock: dict) -> tuple[str, str] | None:
    """(JSON pointer, what is wrong) of the first field of a lock cr cannot use, or None."""
    from ..store.refs import name_problem, parse_ref, parse_version

    problem = _parse_problem(lock.get("root"), parse_ref, "/root", "a component reference (kind:name@version)")
    if problem:
        return problem
    problem = (_text_problem(lock.get("interpreter"), "/interpreter", required=True)
               or _strings_problem(lock.get("missing"), "/missing") or _strings_problem(lock.get("requires"), "/requires"))
    if problem:
        return problem
    for key in ("platform", "planned_for"):
        if key in lock and not isinstance(lock[key], dict):
            return f"/{key}", f"expected an object, found {_shown(lock[key])}"
    platform = lock.get("platform") or {}
    for key in ("fingerprint", "arch", "system", "python"):
        problem = _text_problem(platform.get(key), f"/platform/{key}")
        if problem:
            return problem
    components = lock.get("components", [])
    if not isinstance(components, list):
        return "/components", f"expected a list, found {_shown(components)}"
    for i, comp in enumerate(components):
        if not isinstance(comp, dict):
            return f"/components/{i}", f"expected an object, found {_shown(comp)}"
        for key in ("ref", "uid", "repo", "sha256"):
            problem = _text_problem(comp.get(key), f"/components/{i}/{key}")
            if problem:
                return problem
    names = set()
    for i, sw in enumerate(lock["software"]):
        at = f"/software/{i}"
        why = name_problem(sw.get("name"))
        if why is not None:
            return f"{at}/name", f"expected a software name, found {_shown(sw.get('name'))}" + (f" ({why})" if why else "")
        names.add(sw["name"])
        problem = _parse_problem(sw.get("version"), parse_version, f"{at}/version", "a PEP 440 version")
        if problem:
            return problem
        if sw.get("origin") not in _ORIGINS:
            return f"{at}/origin", f"expected one of {', '.join(_ORIGINS)}, found {_shown(sw.get('origin'))}"
        problem = _strings_problem(sw.get("requested_by"), f"{at}/requested_by")
        for key in _ENTRY_TEXT:
            problem = problem or _text_problem(sw.get(key), f"{at}/{key}")
        if problem:
            return problem
        if "packages" in sw and not isinstance(sw["packages"], list):
            return f"{at}/packages", f"expected a list, found {_shown(sw['packages'])}"
        from .compose import exports_problem

        problem = exports_problem(sw.get("exports"))
        if problem:
            return at + problem[0], problem[1]
        if sw["origin"] == "installable" or "install" in sw:
            problem = _install_problem(sw, at)
            if problem:
                return problem
    for i, name in enumerate(lock.get("missing") or ()):
        if name not in names:
            return f"/missing/{i}", f"{name!r} is not a software of the lock"
    return None


def _install_problem(sw: dict, at: str) -> tuple[str, str] | None:
    """What is wrong with the install record of an entry (what cr install --lock runs)."""
    install = sw.get("install")
    if not isinstance(install, dict):
        return f"{at}/install", f"expected the install record (an object), found {_shown(install)}"
    if sw.get("source") not in ("pip", "apt", "download", "script"):
        return f"{at}/source", f"expected the install method (pip, apt, download or script), found {_shown(sw.get('source'))}"
    for key in _INSTALL_TEXT + ("filename",):
        problem = _text_problem(install.get(key), f"{at}/install/{key}")
        if problem:
            return problem
    problem = _strings_problem(install.get("packages"), f"{at}/install/packages") \
        or _strings_problem(install.get("extra_index_urls"), f"{at}/install/extra_index_urls") \
        or _strings_problem(install.get("requires"), f"{at}/install/requires")
    if problem:
        return problem
    for j, package in enumerate(install.get("packages") or ()):
        if not package.strip() or package.lstrip().startswith("-"):
            return f"{at}/install/packages/{j}", f"expected a package requirement, found {_shown(package)} (an option or nothing)"
    filename = install.get("filename")
    if filename is not None and (filename in ("", ".", "..") or "/" in filename or "\\" in filename):
        return f"{at}/install/filename", f"expected a plain file name, found {_shown(filename)}"
    sha = install.get("sha256")
    if sha is not None and not isinstance(sha, str) and not (isinstance(sha, dict) and all(isinstance(v, str) for v in sha.values())):
        return f"{at}/install/sha256", f"expected a sha256 (or one per version), found {_shown(sha)}"
    strip = install.get("strip_components")
    if strip is not None and (isinstance(strip, bool) or not isinstance(strip, int) or strip < 0):
        return f"{at}/install/strip_components", f"expected a count (an integer >= 0), found {_shown(strip)}"
    if "no_deps" in install and not isinstance(install["no_deps"], bool):
        return f"{at}/install/no_deps", f"expected true or false, found {_shown(install['no_deps'])}"
    return None
