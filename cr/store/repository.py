"""A repository: a directory of components described by cr-repo.json.

Two layouts exist. The default, ``kind/name/version``, holds
``<repo>/<kind>/<name>/<version>/meta.json``. The ``name`` layout holds one kind as
``<repo>/<name>/<meta_file>`` (the version is in the meta): that is how recipes/
(``recipes/<software>/recipe.json``) and actions/ (``actions/<name>/meta.json``) are
laid out, so they are repositories like any other rather than special cases.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from ..errors import InvalidMeta, RepoError
from .meta import load_json, validate_repo_meta
from .refs import KINDS

REPO_FILE = "cr-repo.json"
# Origins whose repositories are trusted unless marked otherwise (see Repo.trusted).
TRUSTED_ORIGINS = ("builtin", "local", "dir")


@dataclass(frozen=True)
class Repo:
    """A registered repository. origin is 'local', 'git', 'dir', 'archive' or 'builtin'.

    trusted: whether what executes or fetches (install scripts and methods, executable
    probes, Python files, action entries) may take effect from it without the user's
    consent at the time (docs/security.md). None means the origin's default: shipped, the
    local repo and directories the user registered are trusted; pulled git repositories
    and unpacked archives are not, until the user says so (cr repo trust, --trust).
    """

    name: str
    path: Path
    origin: str
    uid: str = ""
    version: str = ""
    layout: str = "kind/name/version"
    kind: str | None = None
    meta_file: str = "meta.json"
    url: str | None = None
    ref: str | None = None
    description: str = ""
    trusted: bool | None = None

    def to_dict(self) -> dict:
        """What `cr repo add --json` prints: repo_descriptor(self)."""
        return repo_descriptor(self)

    @property
    def is_trusted(self) -> bool:
        if self.trusted is not None:
            return self.trusted
        return self.origin in TRUSTED_ORIGINS

    @property
    def writable(self) -> bool:
        """Whether `cr new` may create components here (not in the shipped repos)."""
        return self.origin != "builtin"

    def component_dir(self, kind: str, name: str, version: str) -> Path:
        """Where a component of this kind/name/version lives (or would live) in this repo."""
        if self.layout == "name":
            return self.path / name
        return self.path / kind / name / version

    def meta_path(self, kind: str, name: str, version: str) -> Path:
        return self.component_dir(kind, name, version) / self.meta_file

    def misplaced(self, meta_path: str | Path, kind: str, name: str, version: str) -> str | None:
        """Why a meta at meta_path is not where its kind/name/version put it in this
        repository (None: it is). A meta one directory level off says so and names the
        layout: a search would otherwise find nothing there and say nothing."""
        # The common case, as strings (a cold index build asks this of every meta it
        # parses, and building Paths cost ~40 µs of each): the path the scan made from
        # the repository's root, exactly where the meta belongs.
        sep, root = os.sep, str(self.path)
        if isinstance(meta_path, str) and (
            meta_path == f"{root}{sep}{name}{sep}{self.meta_file}" if self.layout == "name"
            else meta_path == f"{root}{sep}{kind}{sep}{name}{sep}{version}{sep}{self.meta_file}"
        ) and os.path.isabs(root) and sep not in name and sep not in version and sep not in kind:
            return None
        expected = self.meta_path(kind, name, version)
        found = Path(meta_path)
        if found.absolute() == expected.absolute():
            return None
        rel = expected.relative_to(self.path)
        try:
            depth = len(found.absolute().relative_to(self.path.absolute()).parts) - len(rel.parts)
        except ValueError:
            depth = 0
        if depth:
            shape = (f"<repo>/<name>/{self.meta_file}" if self.layout == "name"
                     else f"<repo>/<kind>/<name>/<version>/{self.meta_file}")
            return (f"one level too {'deep' if depth > 0 else 'shallow'} for repository {self.name!r}, whose layout "
                    f"'{self.layout}' keeps metas at {shape}: move it to {rel}")
        return f"kind/name/version say it belongs at {rel}"

    def scope(self, kind: str, name: str | None = None) -> str | None:
        """The directory (as a string ending with a separator) under which every meta of kind
        (and name) in this repo lies, or None when this repo cannot hold that kind.

        A valid meta sits where its kind/name/version say (anything else is 'misplaced'),
        so a refresh for one kind or one component needs to walk only this directory.
        """
        if self.layout == "name":
            if self.kind is not None and self.kind != kind:
                return None
            parts = (name,) if name is not None else ()
        else:
            parts = (kind, name) if name is not None else (kind,)
        return os.path.join(str(self.path), *parts, "")

    def scan(
        self, kind: str | None = None, name: str | None = None, listdir: Callable[[str], list[str]] | None = None,
        stat: Callable[[str], os.stat_result] | None = None,
    ) -> Iterator[tuple[str, os.stat_result]]:
        """Yield (meta path, its stat) for every meta file, without parsing any of them.

        With kind (and name), only the metas under scope(kind, name) are yielded.
        Hidden entries (.git, temp dirs) are skipped; an unreadable directory is skipped
        too, since a search must never stop on one bad corner of one repository.
        listdir(path) lists the sub-directories of path as paths (default: read it); the
        index passes one that remembers listings (what it yields may also name entries
        that turn out not to be directories: their meta is simply not found).
        Whatever stats as the meta file is yielded with its stat, also a FIFO, a socket or
        a device: the caller must not open it blindly (the index reports it as an invalid
        component from the stat alone; cr.jsonio.read_file refuses it without blocking).
        stat(path) stats a meta file's path (default os.stat; OSError: not there): the index
        passes one that records every path looked at, found or not.
        """
        listdir = listdir or _dirs
        stat, sep, meta_file = stat or os.stat, os.sep, self.meta_file
        root = str(self.path)
        if kind is not None and self.scope(kind, name) is None:
            return
        if name is not None and (name.startswith(".") or sep in name or (os.altsep and os.altsep in name)):
            return  # not a component name: nothing valid can be found under it
        if self.layout == "name":
            dirs = [os.path.join(root, name)] if kind is not None and name is not None else listdir(root)
            for entry in dirs:
                path = entry + sep + meta_file
                try:
                    st = stat(path)
                except OSError:
                    yield from _deeper(entry, meta_file, listdir, stat)
                    continue
                yield path, st
            return
        if kind is not None:
            kind_dirs = [os.path.join(root, kind)]
        else:
            kind_dirs = [d for d in listdir(root) if os.path.basename(d) in KINDS]
        for kind_dir in kind_dirs:
            name_dirs = [os.path.join(kind_dir, name)] if kind is not None and name is not None else listdir(kind_dir)
            for name_dir in name_dirs:
                found = False
                for version_dir in listdir(name_dir):
                    path = version_dir + sep + meta_file
                    try:
                        st = stat(path)
                    except OSError:
                        for misplaced in _deeper(version_dir, meta_file, listdir, stat):
                            found = True
                            yield misplaced
                        continue
                    found = True
                    yield path, st
                if not found:  # a name directory holding no version: is its meta one level up?
                    path = name_dir + sep + meta_file
                    try:
                        yield path, stat(path)
                    except OSError:
                        pass


def _deeper(path: str, meta_file: str, listdir, stat) -> Iterator[tuple[str, os.stat_result]]:
    """Metas one level below where this layout puts them (a directory without its meta):
    yielded so the index reports them as misplaced instead of a search silently finding
    nothing. Only directories that lack their meta are looked into, so a healthy
    repository pays nothing for it."""
    for sub in listdir(path):
        candidate = sub + os.sep + meta_file
        try:
            yield candidate, stat(candidate)
        except OSError:
            continue


def _dirs(path: str) -> list[str]:
    """The visible sub-directories of path, as sorted paths ([] when it cannot be read)."""
    try:
        with os.scandir(path) as it:
            entries = [e.path for e in it if not e.name.startswith(".") and e.is_dir()]
    except OSError:
        return []
    entries.sort()
    return entries


def read_repo(path: Path, origin: str, validate: bool = True, **extra) -> Repo:
    """Load the Repo at path from its cr-repo.json; RepoError when it is not a repository.

    validate=False skips the schema check (and the jsonschema import) for the shipped
    repositories, whose cr-repo.json the test suite checks instead.
    """
    path = Path(path).absolute()
    if not path.is_dir():
        raise RepoError(f"{path} is not a directory", hint="give the path of a directory holding cr-repo.json")
    repo_file = path / REPO_FILE
    if not repo_file.is_file():
        raise RepoError(
            f"{path} is not a reefkit repository (no {REPO_FILE})",
            hint=f"create one with: cr repo init {path} --name NAME",
        )
    try:
        meta = load_json(repo_file)
    except InvalidMeta as exc:
        raise RepoError(exc.message, hint=exc.hint) from None
    problems = validate_repo_meta(meta, str(repo_file)) if validate else []
    if problems:
        raise RepoError(str(problems[0]), hint=f"fix {repo_file}; `cr check {path}` lists every problem")
    return repo_from_meta(meta, path, origin, **extra)


def repo_from_meta(meta: dict, path: Path, origin: str, **extra) -> Repo:
    """A Repo from an already validated cr-repo.json dict (or its copy in repos.json)."""
    return Repo(
        name=meta["name"],
        path=path,
        origin=origin,
        uid=meta.get("uid", ""),
        version=meta.get("version", ""),
        layout=meta.get("layout", "kind/name/version"),
        kind=meta.get("kind"),
        meta_file=meta.get("meta_file", "meta.json"),
        description=meta.get("description", ""),
        **extra,
    )


def repo_descriptor(repo: Repo) -> dict:
    """What repos.json keeps of a registered repo, so listing never re-reads cr-repo.json."""
    data = {
        "name": repo.name,
        "path": str(repo.path),
        "origin": repo.origin,
        "uid": repo.uid,
        "version": repo.version,
        "layout": repo.layout,
        "meta_file": repo.meta_file,
        "description": repo.description,
    }
    for key in ("kind", "url", "ref"):
        if getattr(repo, key):
            data[key] = getattr(repo, key)
    if repo.trusted is not None:
        data["trusted"] = repo.trusted
    return data
