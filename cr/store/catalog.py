"""The catalog: what components exist, where, and what a ref means (read side of the store).

    from cr.store import catalog
    catalog.find("model", tags=["onnx"])
    catalog.show("model:lenet-digits@>=1")["meta"]
    catalog.resolve("model:lenet-digits")          # -> Component (newest, highest precedence)

Every layer above the store looks components up here (never through cr.api, the facade
for users). Registering and listing repositories (repo_*) is here too: it decides what
the catalog holds. Nothing here prints: warnings go to the Reporter (cr.events).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import CRError, NotFound, RepoError, similar
from ..events import reporter
from ..fsutil import sha256_file
from ..paths import cr_home
from . import registry
from .index import Component, Index
from .refs import Ref, check_kind, parse_ref, parse_spec, parse_version
from .repository import REPO_FILE, Repo
from .content import component_sha256
from .trust import prefer_trusted

__all__ = [
    "Component", "FileCheck", "open_index", "find", "resolve", "matching", "show", "verify_files",
    "component_sha256", "repo_list", "repo_add", "repo_init", "repo_pull", "repo_update", "repo_rm",
]


def open_index(refresh: bool = True, kind: str | None = None, name: str | None = None) -> Index:
    """The search index over every registered repo, brought up to date.

    With kind (and name), only what a query for that kind (that component) can return is
    brought up to date (see Index.refresh); the index must then be asked nothing else.
    Invalid metas (in that scope) are reported as warnings naming the file; they never
    stop a search.
    """
    home = cr_home()
    close_writer()  # a search ends a run of new(): its connection goes, the index is checkpointed
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
        if name and exact is None:
            import fnmatch

            found = [c for c in found if fnmatch.fnmatchcase(c.name, name)]
        if spec is not None:
            found = [c for c in found if spec.contains(parse_version(c.version), prereleases=True)]
        found = prefer_trusted(found, index)
        _warn_shadowed(found, index)
        found = _drop_identical_copies(found, index)
    finally:
        index.close()
    return found


def _drop_identical_copies(components: list[Component], index: Index) -> list[Component]:
    """components (best first) without the later copies of one that another repository
    holds identically (same kind/name/version and uid, same meta content: an unpacked
    archive's copy of a shipped component): it is listed once, from the repository that
    comes first in precedence (the trusted one). A copy that differs stays listed."""
    kept: list[Component] = []
    first: dict[tuple[str, str, str], list[Component]] = {}
    for c in components:
        key = (c.kind, c.name, c.version)
        shown = first.setdefault(key, [])
        if any(s.uid == c.uid and component_sha256(index.meta_of(s)) == component_sha256(index.meta_of(c)) for s in shown):
            continue
        shown.append(c)
        kept.append(c)
    return kept


def _warn_shadowed(components: list[Component], index: Index) -> None:
    """A warning for each component hidden by another of the same kind/name/version whose
    content differs (identical copies, such as an unpacked archive's, are no news)."""
    first: dict[tuple[str, str, str], Component] = {}
    for c in components:
        key = (c.kind, c.name, c.version)
        if key not in first:
            first[key] = c
        elif component_sha256(index.meta_of(c)) != component_sha256(index.meta_of(first[key])):
            reporter().warning(f"{c.ref} in repo {c.repo!r} is shadowed by the one in repo {first[key].repo!r}, "
                               "which differs from it")


def resolve(ref: str | Ref, index: Index | None = None, prefer_repo: str | None = None) -> Component:
    """The component a ref means: the newest matching version, from the highest-precedence repo
    (prefer_repo: that repository first, for what a solution names; see matching)."""
    return matching(ref, index, prefer_repo)[0]


def matching(ref: str | Ref, index: Index | None = None, prefer_repo: str | None = None) -> list[Component]:
    """Every component ref may mean, best first (newest version, highest-precedence repo).

    Versions with a local label (``1.0.0+onnx``, what ``cr compile`` writes) are chosen
    explicitly, never by default:

    - no spec (``model:x``): the unlabelled versions come first (newest first), then the
      labelled ones (newest first), so a plain ref means the source, not its newest
      compile; only a component that has nothing but labelled versions resolves to one.
      Callers that need a particular format walk the rest of the list (cr.run.actions
      picks the first version whose variants the backend loads: the ``+onnx`` compile of
      a torch model for onnxruntime).
    - a spec that names no label (``@1.0.0``, ``@>=1``, ``@==1.*``): ``1.0.0+onnx``
      satisfies ``==1.0.0`` in PEP 440, but only the unlabelled versions that match are
      returned when there are any, so ``model:x@1.0.0`` keeps meaning the original.
    - a spec that names a label (``@1.0.0+onnx``, ``@==1.0.0+onnx.int8.static``): exactly
      that version (PEP 440 compares local labels exactly); ``@===1.0.0`` is the unlabelled
      one, exactly.

    Among copies of one version, an untrusted repository's never wins over a trusted one
    whose content differs (cr.store.trust.prefer_trusted), except for prefer_repo: the
    components a solution names come from the solution's own repository first, so that an
    archive's solution runs with the archive's components (their code still needs consent)
    while everything else keeps the trusted ones.
    """
    ref = parse_ref(ref) if isinstance(ref, str) else ref
    own = index is None
    index = index or open_index(kind=ref.kind, name=ref.name)
    try:
        candidates = index.components(kind=ref.kind, name=ref.name)
        if prefer_repo is not None and any(c.repo == prefer_repo for c in candidates):
            candidates = _prefer(candidates, prefer_repo)
        else:
            candidates = prefer_trusted(candidates, index)
        repos = [r.name for r in index.repos]
        if not candidates:
            close = _close_names(index, ref)
            raise NotFound(
                f"no component {ref.kind}:{ref.name}" + (f" (did you mean {' or '.join(close)}?)" if close else ""),
                hint=f"searched repositories: {', '.join(repos)}; cr find {ref.kind} lists what exists",
            )
        matching = [c for c in candidates if ref.matches_version(c.version)]
        if not matching:
            versions = ", ".join(dict.fromkeys(c.version for c in candidates))
            raise NotFound(f"no version of {ref.kind}:{ref.name} matches {ref.spec!r}", hint=f"available versions: {versions}")
        if ref.spec and "+" not in ref.spec:
            plain = [c for c in matching if "+" not in c.version]
            matching = plain or matching
        elif not ref.spec:  # unlabelled first, the order within each kept (a stable sort)
            matching = sorted(matching, key=lambda c: "+" in c.version)
        best = matching[0]
        same = [c for c in matching[1:] if c.version == best.version]
        if same:  # an identical copy (an unpacked archive's) is no news; a differing one is
            digest = component_sha256(index.meta_of(best))
            for other in same:
                if component_sha256(index.meta_of(other)) != digest:
                    reporter().warning(f"{best.ref} from repo {best.repo!r} shadows the one in repo {other.repo!r}")
    finally:
        if own:
            index.close()
    return matching


def _close_names(index: Index, ref: Ref) -> list[str]:
    """Names of ref's kind close to its name (the "did you mean" of a ref that matches nothing);
    the index is brought up to date for the whole kind first (a name-scoped one may not hold
    the others), on this error path only."""
    try:
        index.refresh(ref.kind)
        return similar(ref.name, {c.name for c in index.components(kind=ref.kind)})
    except CRError:
        return []


def _prefer(components: list[Component], repo: str) -> list[Component]:
    """components with, within each kind/name/version, repo's copy first (order otherwise kept)."""
    out = list(components)
    for i, c in enumerate(components):
        if c.repo == repo:
            first = next(j for j, o in enumerate(out) if (o.kind, o.name, o.version) == (c.kind, c.name, c.version))
            out.remove(c)
            out.insert(first, c)
    return out


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


def show(ref: str | Ref, verify: bool = True, prefer_repo: str | None = None) -> dict:
    """A component's meta, location and (with verify) the checksum state of its files
    (prefer_repo: see matching)."""
    ref = parse_ref(ref) if isinstance(ref, str) else ref
    index = open_index(kind=ref.kind, name=ref.name)
    try:
        comp = resolve(ref, index, prefer_repo)
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


# The index connection new() keeps open (cr.store.authoring), one per thread, so that creating
# thousands of components in a loop costs no more than writing their files (opening and
# closing one per call would checkpoint and sync the index every time); a search closes it.
_writers: dict[int, tuple[int, Index]] = {}  # thread id -> (pid, its open index)


def writer_index(home: Path) -> Index:
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


def close_writer() -> None:
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
            counts = index.counts_by_repo()
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
            "trusted": repo.is_trusted,
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
    from . import gitrepo

    return gitrepo.pull(url, ref)


def repo_update(name: str | None = None) -> list[dict]:
    """Fetch and check out the recorded revision of one or every git repo."""
    from . import gitrepo

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
