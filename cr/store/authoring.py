"""Authoring: creating components, recording their files' checksums, checking metas.

    from cr.store import authoring
    authoring.new("dataset", "my-data", version="1.0.0", tags=["images"])
    authoring.rehash("model:my-net")       # meta 'files' <- sha256 of every file
    authoring.check()                      # every registered repo: schema, files, duplicates

The write side of the store, above the catalog (it resolves refs there). Nothing here
prints; CRError is raised for anything a user can fix.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Conflict, CRError, InvalidMeta, NotFound, RepoError
from ..fsutil import atomic_write_bytes, atomic_write_json, json_bytes, sha256_file
from ..paths import cr_home, ensure_home
from . import modelfiles, registry
from .catalog import component_sha256, open_index, resolve, verify_files, writer_index
from .index import Component
from .meta import Problem, load_json, validate, validate_repo_meta
from .refs import check_kind, check_name, parse_version
from .repository import REPO_FILE, Repo, read_repo

__all__ = ["CheckReport", "new", "rehash", "check"]


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
    if kind == "campaign":  # a campaign to fill in: cr campaign show NAME --jobs expands it
        meta.update({"solutions": [], "matrix": {}, "platforms": {}, "repeat": 1})
    return meta


def new(
    kind: str,
    name: str,
    version: str = "0.1.0",
    tags: list[str] | tuple[str, ...] = (),
    repo: str | None = None,
    description: str = "",
    fields: dict | None = None,
) -> Component:
    """Create a component in repo (default: the local repo) and index it.

    The meta is a valid skeleton of its kind with ``fields`` laid over it; the whole meta
    is validated before the one atomic write, so a bad field leaves nothing behind.
    """
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
    meta = {**_skeleton(kind, name, version, list(tags), description), **(fields or {})}
    problems = validate(meta, kind=kind)
    if problems:
        hint = "tags use lowercase letters, digits and . _ + -" if not fields else f"see the {kind} schema (docs/components.md)"
        raise InvalidMeta(f"cannot create {kind}:{name}: {problems[0]}", hint=hint)
    meta_path = target.meta_path(kind, name, version)
    if meta_path.exists():
        raise Conflict(f"{kind}:{name}@{version} already exists in repo {target.name!r} ({meta_path})", hint="choose another --version")
    data = json_bytes(meta)
    atomic_write_bytes(meta_path, data, durable=False)
    writer_index(home).add(target, meta_path, meta, data)  # validated above, placed by target.meta_path
    return Component(kind, name, version, meta["uid"], target.name, meta_path, tuple(meta["tags"]), description)


# Per-process state of new(), so that creating thousands of components in a loop costs
# no more than writing their files: the CR_HOME check and an open index connection
# (opening and closing one per call would checkpoint and sync the index every time).
_checked_homes: set[Path] = set()
_local_repos: dict[str | None, tuple[Path, Repo, tuple]] = {}  # $CR_HOME -> (home, local repo, its cr-repo.json's stat)


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
    """What `cr check` found: checked counts components, problems lists every issue;
    warnings (which leave it ok) are what may work elsewhere but not with what is
    registered here. model_formats: (meta file, JSON pointer, format) of every valid model
    meta's formats, for the layer that knows the backends (cr.run.check) to judge."""

    checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    model_formats: list[tuple[str, str, str]] = field(default_factory=list, repr=False)
    payloads: list[dict] = field(default_factory=list)  # pin states of package-sourced models (cr.run.pins)
    # one entry per model file opened (cr.store.modelfiles): {ref, file (the meta), pointer,
    # path, format, ok, problem}
    models: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": [{"file": p.file, "pointer": p.pointer, "message": p.message} for p in self.problems],
            "warnings": [{"file": p.file, "pointer": p.pointer, "message": p.message} for p in self.warnings],
            "payloads": self.payloads,
            "models": self.models,
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
    if meta["kind"] == "model":
        holders = [("", meta)] + [(f"/variants/{i}", v) for i, v in enumerate(meta.get("variants") or [])]
        report.model_formats += [(str(meta_path), f"{where}/format", h["format"]) for where, h in holders if h.get("format")]
    if repo is not None:
        why = repo.misplaced(meta_path, meta["kind"], meta["name"], meta["version"])
        if why:
            report.problems.append(Problem(str(meta_path), "", why))
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
    if meta["kind"] == "model":
        _check_model_files(meta_path, meta, report)


def _check_model_files(meta_path: Path, meta: dict, report: CheckReport) -> None:
    """Open each model file the meta and its variants name in the component's directory
    and read its structure (cr.store.modelfiles: never run, never unpickled). A file from
    a registry package (source.package) is judged by its pinned sha256 instead."""
    ref = f"model:{meta['name']}@{meta['version']}"
    holders = [("", meta)] + [(f"/variants/{i}", v) for i, v in enumerate(meta.get("variants") or [])]
    seen = set()
    for where, holder in holders:
        rel, fmt = holder.get("file"), holder.get("format") or meta.get("format") or ""
        path = meta_path.parent / rel if isinstance(rel, str) else None
        if path is None or (rel, fmt) in seen or not (path.is_file() or path.is_dir()):
            continue  # no file of its own, seen already, or missing (a problem said so above)
        seen.add((rel, fmt))
        kind = modelfiles.checked_format(fmt, path)
        if kind is None:
            continue
        wrong = modelfiles.problem(fmt, path)
        report.models.append({"ref": ref, "file": str(meta_path), "pointer": f"{where}/file", "path": rel,
                              "format": fmt, "ok": wrong is None, "problem": wrong})
        if wrong:
            report.problems.append(Problem(str(meta_path), f"{where}/file", f"{ref}: {rel}: {wrong}"))


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
                if len({component_sha256(index.meta_of(c)) for c in comps}) == 1:
                    continue  # identical copies (an unpacked archive's, say): nothing is shadowed
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
        try:
            comp = resolve(target)
        except NotFound:
            # An invalid meta is not indexed as a component: find it among the index's
            # invalid entries of that kind/name, and say what is wrong with it.
            broken = _invalid_metas(target)
            if not broken:
                raise
            for repo, meta_path in broken:
                _check_meta_file(meta_path, repo, report)
            return report
        repo = next((r for r in registry.all_repos() if r.name == comp.repo), None)
        _check_meta_file(comp.meta_path, repo, report)
        return report
    raise NotFound(f"{target} is neither an existing path nor a component reference", hint="e.g. cr check ./my-repo or cr check model:lenet-digits")


def _invalid_metas(target: str) -> list[tuple[Repo | None, Path]]:
    """(repo, meta path) of the invalid metas a ref's kind/name may mean, in precedence
    order: those whose version (its meta's, else its directory's) matches the ref's spec,
    or every one of that kind/name when the version cannot be read."""
    from .refs import parse_ref

    ref = parse_ref(target)
    index = open_index(refresh=False)
    try:
        index.refresh(ref.kind, ref.name)
        rows = index.invalid(ref.kind, ref.name)
        repos = {r.name: r for r in index.repos}
        rank = index.rank
    finally:
        index.close()
    found = []
    for repo_name, path, _ in sorted(rows, key=lambda row: (rank.get(row[0], len(rank)), row[1])):
        meta_path = Path(path)
        if ref.spec:
            try:
                version = load_json(meta_path).get("version")
            except (InvalidMeta, AttributeError):
                version = None
            if not isinstance(version, str) and repos.get(repo_name) is not None and repos[repo_name].layout != "name":
                version = meta_path.parent.name
            try:
                parse_version(version)
            except (CRError, TypeError):
                version = None  # not a version at all: the check says so
            if version is not None and not ref.matches_version(version):
                continue
        found.append((repos.get(repo_name), meta_path))
    return found


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
