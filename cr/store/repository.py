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
from typing import Iterator

from ..errors import InvalidMeta, RepoError
from .meta import load_json, validate_repo_meta
from .refs import KINDS

REPO_FILE = "cr-repo.json"


@dataclass(frozen=True)
class Repo:
    """A registered repository. origin is 'local', 'git', 'dir' or 'builtin'."""

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

    def scan(self) -> Iterator[tuple[str, os.stat_result]]:
        """Yield (meta path, its stat) for every meta file, without parsing any of them.

        Hidden entries (.git, temp dirs) are skipped; an unreadable directory is skipped
        too, since a search must never stop on one bad corner of one repository.
        """
        meta_file = self.meta_file
        if self.layout == "name":
            for entry in _dirs(str(self.path)):
                yield from _stat(entry + os.sep + meta_file)
            return
        for kind_dir in _dirs(str(self.path)):
            if os.path.basename(kind_dir) not in KINDS:
                continue
            for name_dir in _dirs(kind_dir):
                for version_dir in _dirs(name_dir):
                    yield from _stat(version_dir + os.sep + meta_file)


def _dirs(path: str) -> Iterator[str]:
    try:
        with os.scandir(path) as it:
            entries = [e.path for e in it if not e.name.startswith(".") and e.is_dir()]
    except OSError:
        return
    yield from sorted(entries)


def _stat(path: str) -> Iterator[tuple[str, os.stat_result]]:
    try:
        yield path, os.stat(path)
    except OSError:
        return


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
    return data
