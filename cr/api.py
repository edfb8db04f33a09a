"""The library API: every operation the CLI offers, as functions returning dataclasses/dicts.

    import cr
    cr.find("model", tags=["onnx"])
    cr.show("model:lenet-digits@>=1")
    cr.new("dataset", "my-data", version="1.0.0", tags=["images"])
    cr.check()

Nothing here prints: warnings go to the Reporter (cr.events). CRError is raised for
anything a user can fix.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from .errors import Conflict, CRError, InvalidMeta, NotFound, RepoError
from .events import reporter
from .fsutil import atomic_write_bytes, atomic_write_json, json_bytes, sha256_file
from .paths import cr_home, ensure_home
from .store import registry
from .store.index import Component, Index
from .store.meta import Problem, load_json, validate, validate_repo_meta
from .store.refs import Ref, check_kind, check_name, parse_ref, parse_spec, parse_version
from .store.repository import REPO_FILE, Repo, read_repo

__all__ = [
    "Component", "CheckReport", "FileCheck", "find", "show", "resolve", "new", "check",
    "verify_files", "rehash", "repo_list", "repo_add", "repo_init", "repo_pull", "repo_update", "repo_rm",
    "open_index", "lock", "env_for", "install_missing",
]


def open_index(refresh: bool = True, kind: str | None = None, name: str | None = None) -> Index:
    """The search index over every registered repo, brought up to date.

    With kind (and name), only what a query for that kind (that component) can return is
    brought up to date (see Index.refresh); the index must then be asked nothing else.
    Invalid metas (in that scope) are reported as warnings naming the file; they never
    stop a search.
    """
    home = cr_home()
    _close_writer()  # a search ends a run of new(): its connection goes, the index is checkpointed
    index = Index(home, registry.all_repos(home))
    if refresh:
        index.refresh(kind, name)
        for repo, path, error in index.invalid(kind, name):
            reporter().warning(f"skipped invalid component ({repo}): {error}")
    return index


def find(
    kind: str | None = None,
    tags: list[str] | tuple[str, ...] = (),
    version: str | None = None,
    repo: str | None = None,
    name: str | None = None,
) -> list[Component]:
    """Components matching every filter, highest precedence first.

    tags: names that must be present; a leading '-' means must be absent ('-deprecated').
    version: a PEP 440 specifier or a bare version. name: exact name or a glob ('lenet*').
    """
    if kind is not None:
        check_kind(kind)
    want = tuple(t for t in tags if t and not t.startswith("-"))
    avoid = tuple(t[1:] for t in tags if t.startswith("-") and len(t) > 1)
    spec = parse_spec(version) if version else None
    exact = name if name and not any(c in name for c in "*?[") else None
    index = open_index(kind=kind, name=exact)
    try:
        if repo is not None and repo not in index.rank:
            raise RepoError(f"no repository named {repo!r}", hint="cr repo list shows the registered ones")
        found = index.components(kind=kind, name=exact, tags=want, not_tags=avoid, repo=repo)
    finally:
        index.close()
    if name and exact is None:
        import fnmatch

        found = [c for c in found if fnmatch.fnmatchcase(c.name, name)]
    if spec is not None:
        found = [c for c in found if spec.contains(parse_version(c.version), prereleases=True)]
    _warn_shadowed(found)
    return found


def _warn_shadowed(components: list[Component]) -> None:
    first: dict[tuple[str, str, str], Component] = {}
    for c in components:
        key = (c.kind, c.name, c.version)
        if key in first and first[key].uid != c.uid:
            reporter().warning(f"{c.ref} in repo {c.repo!r} is shadowed by the one in repo {first[key].repo!r}")
        elif key not in first:
            first[key] = c


def resolve(ref: str | Ref, index: Index | None = None) -> Component:
    """The component a ref means: the newest matching version, from the highest-precedence repo."""
    return matching(ref, index)[0]


def matching(ref: str | Ref, index: Index | None = None) -> list[Component]:
    """Every component ref may mean, best first (newest version, highest-precedence repo).

    A version with a local label (``1.0.0+onnx``, what ``cr compile`` writes) satisfies
    ``==1.0.0`` in PEP 440; a spec that names no label prefers the unlabelled versions, so
    ``model:x@1.0.0`` keeps meaning the original after a compile. Without a spec, the
    newest version wins, labelled or not.
    """
    ref = parse_ref(ref) if isinstance(ref, str) else ref
    own = index is None
    index = index or open_index(kind=ref.kind, name=ref.name)
    try:
        candidates = index.components(kind=ref.kind, name=ref.name)
        repos = [r.name for r in index.repos]
    finally:
        if own:
            index.close()
    if not candidates:
        raise NotFound(
            f"no component {ref.kind}:{ref.name}",
            hint=f"searched repositories: {', '.join(repos)}; cr find {ref.kind} lists what exists",
        )
    matching = [c for c in candidates if ref.matches_version(c.version)]
    if not matching:
        versions = ", ".join(dict.fromkeys(c.version for c in candidates))
        raise NotFound(f"no version of {ref.kind}:{ref.name} matches {ref.spec!r}", hint=f"available versions: {versions}")
    if ref.spec and "+" not in ref.spec:
        plain = [c for c in matching if "+" not in c.version]
        matching = plain or matching
    best = matching[0]
    for other in matching[1:]:
        if other.version == best.version and other.uid != best.uid:  # an identical copy (an unpacked archive's) is no news
            reporter().warning(f"{best.ref} from repo {best.repo!r} shadows the one in repo {other.repo!r}")
    return matching


@dataclass(frozen=True)
class FileCheck:
    """Verification of one file listed in a meta's files: status is ok, missing or mismatch."""

    path: str
    expected: str
    actual: str | None
    status: str

    def to_dict(self) -> dict:
        return {"path": self.path, "expected": self.expected, "actual": self.actual, "status": self.status}


def verify_files(component_dir: Path, meta: dict) -> list[FileCheck]:
    """sha256 of every file in meta['files'] compared with what is on disk."""
    checks = []
    files = meta.get("files") if isinstance(meta.get("files"), dict) else {}
    for rel, expected in sorted(files.items()):
        target = component_dir / rel
        if not isinstance(expected, str):
            continue
        if not target.is_file():
            checks.append(FileCheck(rel, expected, None, "missing"))
            continue
        actual = sha256_file(target)
        checks.append(FileCheck(rel, expected, actual, "ok" if actual == expected else "mismatch"))
    return checks


def show(ref: str | Ref, verify: bool = True) -> dict:
    """A component's meta, location and (with verify) the checksum state of its files."""
    ref = parse_ref(ref) if isinstance(ref, str) else ref
    index = open_index(kind=ref.kind, name=ref.name)
    try:
        comp = resolve(ref, index)
        meta = index.meta_of(comp)
    finally:
        index.close()
    out = comp.to_dict()
    out["meta_path"] = str(comp.meta_path)
    out["meta"] = meta
    if verify:
        checks = verify_files(comp.path, meta)
        out["files"] = [c.to_dict() for c in checks]
        out["verified"] = all(c.status == "ok" for c in checks)
    return out


def _skeleton(kind: str, name: str, version: str, tags: list[str], description: str) -> dict:
    import secrets  # only where something is created: searching never needs it

    meta = {
        "uid": secrets.token_hex(8),
        "kind": kind,
        "name": name,
        "version": version,
        "tags": list(dict.fromkeys(tags)),
        "description": description,
        "license": "",
        "deps": [],
        "files": {},
    }
    if kind == "action":
        meta["entry"] = f"cr_actions.{name.replace('-', '_').replace('.', '_')}:main"
        meta["parameters"] = {"type": "object", "properties": {}}
        meta["defaults"] = {}
    return meta


def new(
    kind: str,
    name: str,
    version: str = "0.1.0",
    tags: list[str] | tuple[str, ...] = (),
    repo: str | None = None,
    description: str = "",
) -> Component:
    """Create a valid skeleton component in repo (default: the local repo) and index it."""
    check_kind(kind)
    check_name(name)
    parse_version(version)
    if repo in (None, registry.LOCAL_REPO):
        home, target = _local_repo()
    else:
        home = _usable_home()
        target = registry.find_repo(repo, home)
    if not target.writable:
        raise RepoError(f"repository {target.name!r} is shipped with reefkit and read-only", hint="leave out --repo to use your local repo")
    if target.layout == "name" and target.kind != kind:
        raise RepoError(f"repository {target.name!r} holds only {target.kind} components")
    meta = _skeleton(kind, name, version, list(tags), description)
    problems = validate(meta, kind=kind)
    if problems:
        raise InvalidMeta(f"cannot create {kind}:{name}: {problems[0]}", hint="tags use lowercase letters, digits and . _ + -")
    meta_path = target.meta_path(kind, name, version)
    if meta_path.exists():
        raise Conflict(f"{kind}:{name}@{version} already exists in repo {target.name!r} ({meta_path})", hint="choose another --version")
    data = json_bytes(meta)
    atomic_write_bytes(meta_path, data, durable=False)
    _writer_index(home).add(target, meta_path, meta, data)  # validated above, placed by target.meta_path
    return Component(kind, name, version, meta["uid"], target.name, meta_path, tuple(meta["tags"]), description)


# Per-process state of new(), so that creating thousands of components in a loop costs
# no more than writing their files: the CR_HOME check and an open index connection
# (opening and closing one per call would checkpoint and sync the index every time).
_checked_homes: set[Path] = set()
_local_repos: dict[str | None, tuple[Path, Repo, tuple]] = {}  # $CR_HOME -> (home, local repo, its cr-repo.json's stat)
_writers: dict[int, tuple[int, Index]] = {}  # thread id -> (pid, its open index)


def _usable_home() -> Path:
    """CR_HOME, checked for writing once per process (ensure_home writes a probe file)."""
    home = cr_home()
    if home not in _checked_homes or not home.is_dir():
        home = ensure_home()
        _checked_homes.add(home)
    return home


def _local_repo() -> tuple[Path, Repo]:
    """(CR_HOME, the local repo), read again only when its cr-repo.json is not the one read."""
    import os

    key = os.environ.get("CR_HOME")
    cached = _local_repos.get(key)
    if cached is not None:
        home, repo, seen = cached
        try:
            st = os.stat(repo.path / REPO_FILE)
        except OSError:
            st = None
        if st is not None and (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size) == seen:
            return home, repo
    home = _usable_home()
    repo = registry.ensure_local_repo(home)
    st = os.stat(repo.path / REPO_FILE)
    _local_repos[key] = (home, repo, (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size))
    return home, repo


def _writer_index(home: Path) -> Index:
    """The index connection new() keeps open, one per thread (for the last CR_HOME used);
    opened again after a fork, or once its file was deleted or rebuilt by someone else."""
    import os
    from _thread import get_ident

    thread, pid = get_ident(), os.getpid()
    cached = _writers.pop(thread, None)
    if cached is not None:
        if cached[0] == pid and cached[1].home == home and cached[1].is_current():
            _writers[thread] = cached
            return cached[1]
        if cached[0] == pid:  # never close a connection a parent process opened
            cached[1].close()
    if not _writers:  # (again) something to close at exit
        import atexit

        atexit.unregister(_close_writers)
        atexit.register(_close_writers)
    index = Index(home, [])  # add() needs no repository list
    _writers[thread] = (pid, index)
    return index


def _close_writer() -> None:
    """Close this thread's new() connection, if any (closing the last one checkpoints the index)."""
    if _writers:
        import os
        from _thread import get_ident

        cached = _writers.pop(get_ident(), None)
        if cached is not None and cached[0] == os.getpid():
            cached[1].close()


def _close_writers() -> None:
    """At exit: close what new() left open (the last connection to close checkpoints the index)."""
    import os

    for thread, (pid, index) in list(_writers.items()):
        if pid == os.getpid():
            try:
                index.close()
            except Exception:  # another thread's connection: SQLite recovers it on next open
                pass
        _writers.pop(thread, None)


def rehash(target: str | Path) -> dict:
    """Record every file of a component (a ref or its directory) with its sha256 in meta 'files'.

    Hidden files and the meta file itself are left out. Returns {added, changed, removed}
    lists of relative paths; the meta is rewritten atomically only when something changed.
    """
    path = Path(target)
    if path.exists():
        comp_dir = path.absolute() if path.is_dir() else path.absolute().parent
        metas = [p for p in (comp_dir / "meta.json", comp_dir / "recipe.json") if p.is_file()]
        if not metas:
            raise NotFound(f"{comp_dir} holds no meta.json", hint="give a component directory or a ref")
        meta_path = metas[0]
    else:
        meta_path = resolve(str(target)).meta_path
        comp_dir = meta_path.parent
    if not registry.is_writable_path(meta_path):
        raise RepoError(f"{meta_path} belongs to a repository shipped with reefkit", hint="copy the component into your local repo first")
    meta = load_json(meta_path)
    old = meta.get("files") if isinstance(meta.get("files"), dict) else {}
    files = {}
    for file in sorted(comp_dir.rglob("*")):
        rel = file.relative_to(comp_dir).as_posix()
        if file.is_file() and file != meta_path and not any(part.startswith(".") for part in rel.split("/")):
            files[rel] = sha256_file(file)
    changes = {
        "added": sorted(set(files) - set(old)),
        "changed": sorted(k for k in files if k in old and old[k] != files[k]),
        "removed": sorted(set(old) - set(files)),
    }
    if any(changes.values()):
        meta["files"] = files
        atomic_write_json(meta_path, meta, durable=True)
    return {"meta_path": str(meta_path), **changes}


@dataclass
class CheckReport:
    """What `cr check` found: checked counts components, problems lists every issue."""

    checked: int = 0
    problems: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": [{"file": p.file, "pointer": p.pointer, "message": p.message} for p in self.problems],
        }


def _check_meta_file(meta_path: Path, repo: Repo | None, report: CheckReport) -> None:
    report.checked += 1
    try:
        meta = load_json(meta_path)
    except InvalidMeta as exc:
        report.problems.append(Problem(str(meta_path), "", exc.message.split(": ", 1)[-1]))
        return
    fixed_kind = repo.kind if repo is not None and repo.layout == "name" else None
    problems = validate(meta, str(meta_path), kind=fixed_kind)
    report.problems.extend(problems)
    if problems:
        return
    if repo is not None:
        expected = repo.meta_path(meta["kind"], meta["name"], meta["version"])
        if expected.absolute() != meta_path.absolute():
            report.problems.append(Problem(str(meta_path), "", f"kind/name/version say it belongs at {expected}, found at {meta_path}"))
    for check in verify_files(meta_path.parent, meta):
        pointer = "/files/" + check.path.replace("~", "~0").replace("/", "~1")
        if check.status == "missing":
            report.problems.append(Problem(str(meta_path), pointer, f"expected file {check.path}, found nothing"))
        elif check.status == "mismatch":
            report.problems.append(Problem(str(meta_path), pointer, f"expected sha256 {check.expected}, found {check.actual}"))
    for key in ("file", "labels"):
        rel = meta.get(key)
        if isinstance(rel, str) and not (meta_path.parent / rel).is_file():
            report.problems.append(Problem(str(meta_path), f"/{key}", f"expected file {rel}, found nothing"))
        elif isinstance(rel, str) and rel not in meta.get("files", {}):
            report.problems.append(Problem(str(meta_path), f"/{key}", f"{rel} is not listed in files (no checksum)"))


def _check_repo(repo: Repo, report: CheckReport) -> None:
    for meta_path, _ in repo.scan():
        _check_meta_file(Path(meta_path), repo, report)


def check(target: str | Path | None = None) -> CheckReport:
    """Validate metas and checksums: everything (None), a path (meta file, component dir or repo) or a ref."""
    report = CheckReport()
    if target is None:
        index = open_index(refresh=False)
        try:
            for repo in index.repos:
                _check_repo(repo, report)
            index.refresh()
            for what, comps in index.duplicates():
                where = "; ".join(f"{c.repo}: {c.meta_path}" for c in comps)
                report.problems.append(Problem(str(comps[1].meta_path), "", f"duplicate {what} (also in {comps[0].repo}); precedence keeps {comps[0].repo}: {where}"))
        finally:
            index.close()
        return report
    path = Path(target)
    if path.exists():
        path = path.absolute()
        if path.is_file():
            if path.name == REPO_FILE:
                _check_repo_file(path.parent, report)
            else:
                _check_meta_file(path, _owning_repo(path), report)
        elif (path / REPO_FILE).is_file():
            repo = _check_repo_file(path, report)
            if repo is not None:
                _check_repo(repo, report)
        else:
            metas = [p for p in (path / "meta.json", path / "recipe.json") if p.is_file()]
            if not metas:
                raise NotFound(f"{path} holds no meta.json and no {REPO_FILE}", hint="give a meta.json, a component directory, a repository or a ref")
            _check_meta_file(metas[0], _owning_repo(metas[0]), report)
        return report
    if isinstance(target, str) and ":" in target:
        comp = resolve(target)
        repo = next((r for r in registry.all_repos() if r.name == comp.repo), None)
        _check_meta_file(comp.meta_path, repo, report)
        return report
    raise NotFound(f"{target} is neither an existing path nor a component reference", hint="e.g. cr check ./my-repo or cr check model:lenet-digits")


def _check_repo_file(path: Path, report: CheckReport) -> Repo | None:
    try:
        meta = load_json(path / REPO_FILE)
    except InvalidMeta as exc:
        report.problems.append(Problem(str(path / REPO_FILE), "", exc.message.split(": ", 1)[-1]))
        return None
    problems = validate_repo_meta(meta, str(path / REPO_FILE))
    report.problems.extend(problems)
    return None if problems else read_repo(path, "dir", validate=False)


def _owning_repo(meta_path: Path) -> Repo | None:
    """The repository a meta file sits in (by cr-repo.json two or three levels up), if any."""
    for up in (meta_path.parent.parent, meta_path.parent.parent.parent.parent):
        if (up / REPO_FILE).is_file():
            try:
                repo = read_repo(up, "dir")
            except CRError:
                return None
            if repo.layout == "name" and up == meta_path.parent.parent:
                return repo
            if repo.layout != "name" and up == meta_path.parent.parent.parent.parent:
                return repo
    return None


# -- repositories -----------------------------------------------------------------------

def repo_list() -> list[dict]:
    """Every repository in precedence order, with its component count and whether it exists."""
    home = cr_home()
    repos = registry.all_repos(home)
    counts: dict[str, int] = {}
    try:
        index = Index(home, repos)
    except CRError:
        index = None
    if index is not None:
        try:
            index.refresh()
            for name, count in index.db.execute("SELECT repo, COUNT(*) FROM entries WHERE error IS NULL GROUP BY repo"):
                counts[name] = count
        finally:
            index.close()
    out = []
    for rank, repo in enumerate(repos):
        out.append({
            "rank": rank + 1,
            "name": repo.name,
            "origin": repo.origin,
            "path": str(repo.path),
            "url": repo.url,
            "ref": repo.ref,
            "exists": (repo.path / REPO_FILE).is_file(),
            "components": counts.get(repo.name, 0),
        })
    return out


def repo_add(path: str | Path) -> Repo:
    """Register a plain directory holding cr-repo.json."""
    return registry.add_dir(Path(path))


def repo_init(path: str | Path, name: str, register: bool = True) -> Repo:
    """Create cr-repo.json in path and (by default) register it."""
    repo = registry.init_dir(Path(path), name)
    return registry.register(repo) if register else repo


def repo_pull(url: str, ref: str | None = None) -> Repo:
    """Clone a git repository of components into CR_HOME/repos and register it."""
    from .store import gitrepo

    return gitrepo.pull(url, ref)


def repo_update(name: str | None = None) -> list[dict]:
    """Fetch and check out the recorded revision of one or every git repo."""
    from .store import gitrepo

    repos = [r for r in registry.registered() if r.origin == "git" and (name is None or r.name == name)]
    if name is not None and not repos:
        raise RepoError(f"no git repository named {name!r}", hint="cr repo list shows the registered ones")
    out = []
    for repo in repos:
        old, new_sha = gitrepo.update(repo)
        out.append({"name": repo.name, "old": old, "new": new_sha, "changed": old != new_sha})
    return out


def repo_rm(name: str) -> Repo:
    """Unregister a repository (deleting the clone if cr pulled it)."""
    return registry.unregister(name)


# -- resolution -------------------------------------------------------------------------

def lock(ref: str, python: str | None = None, output: str | Path | None = None, platform_root: str | Path | None = None) -> dict:
    """Resolve what ref (a solution or any component with deps) needs on this platform.

    Returns the lock (DESIGN.md contract) and saves it in CR_HOME/locks (and at output).
    Software that is present is preferred; what must be installed is listed in 'missing'.
    With platform_root (a machine captured by `cr platform --capture DIR`), plan for that
    machine instead: nothing of this host is used, and the lock is only written to output.
    """
    import sys

    from .platform import current, detect
    from .resolve.lock import build_lock, lock_path, save_lock

    if platform_root is not None:
        interpreter = python or "python3"
    else:
        from .software.host import canonical_interpreter

        interpreter = str(Path(python).absolute()) if python else sys.executable
        if python and not Path(interpreter).is_file():
            raise NotFound(f"python interpreter {python} does not exist", hint="give the path of a python executable")
        interpreter = canonical_interpreter(interpreter)  # python and python3 must share a lock
    platform = detect(platform_root) if platform_root is not None else current()
    index = open_index()
    try:
        result = build_lock(ref, index, platform, interpreter, foreign=platform_root is not None)
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
        result["path"] = str(lock_path(result["root"], result["platform"]["fingerprint"]))
    else:
        result["path"] = str(save_lock(result))
    result["cached"] = cached
    return result


def env_for(ref_or_lock: str | Path, python: str | None = None) -> tuple[dict, dict]:
    """(lock, environment variables) to run a command inside what ref needs; a lock file works too."""
    from .resolve.compose import compose, missing_paths
    from .resolve.lock import load_lock

    path = Path(str(ref_or_lock))
    if path.is_file():  # a lock file (any name); otherwise a ref
        the_lock = load_lock(path)
        gone = missing_paths(the_lock)
        if gone:
            raise CRError(f"lock {path} refers to software that is gone: {gone[0]}", hint=f"re-resolve: cr resolve {the_lock['root']}")
    else:
        the_lock = lock(str(ref_or_lock), python=python)
    return the_lock, compose(the_lock)


def install_missing(ref: str, python: str | None = None, offline: bool = False) -> dict:
    """Install every software ref's lock lists as missing (at the locked versions, dependencies
    first), then resolve again; returns {'installed': [env dicts], 'lock': the new lock}."""
    from .software.install import install

    first = lock(ref, python=python)
    installed = []
    for sw in first["software"]:
        if sw["origin"] == "installable":
            env = install(sw["name"], f"=={sw['version']}", offline=offline, interpreter=first["interpreter"])
            installed.append(env.to_dict())
    final = lock(ref, python=python) if installed else first
    return {"installed": installed, "lock": final}
