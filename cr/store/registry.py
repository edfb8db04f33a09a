"""The set of registered repositories, in precedence order, persisted in CR_HOME/repos.json.

Precedence (first wins when the same kind/name/version exists twice): the user's local
repo, then registered repos in the order they were added, then the shipped repos, then
unpacked archives (origin 'archive', what `cr unpack` and `cr reproduce` register) in the
order they were added: an archive brings copies of components to run them, not
replacements, so a plain ref keeps meaning the shipped or the user's own component (a
solution still takes its own archive's components first: catalog.matching's prefer_repo).
repos.json is only ever replaced atomically, under a file lock, so concurrent `cr`
processes and crashes cannot leave it half-written.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from ..errors import RepoError, StoreError
from ..fsutil import atomic_write_json
from ..paths import cr_home, data_dir, ensure_home
from ..events import reporter
from .repository import REPO_FILE, Repo, read_repo, repo_descriptor, repo_from_meta

REGISTRY_FILE = "repos.json"
REGISTRY_FORMAT = 1
LOCAL_REPO = "local"
BUILTIN_REPOS = (("builtin", "repo"), ("builtin-actions", "actions"), ("builtin-recipes", "recipes"))


def builtin_repos() -> list[Repo]:
    """The repositories shipped with reefkit (repo/, actions/, recipes/)."""
    return list(_builtin_repos())


@lru_cache(maxsize=None)
def _builtin_repos() -> tuple[Repo, ...]:
    # read once per process: they ship with reefkit and change only with it
    return tuple(read_repo(data_dir(folder), "builtin", validate=False) for _, folder in BUILTIN_REPOS)


def local_repo_path(home: Path | None = None) -> Path:
    return (home or cr_home()) / "local"


def ensure_local_repo(home: Path | None = None) -> Repo:
    """The user's local repo, created with its cr-repo.json on first use."""
    home = home or ensure_home()
    path = local_repo_path(home)
    if not (path / REPO_FILE).is_file():
        import secrets

        meta = {
            "name": LOCAL_REPO,
            "uid": secrets.token_hex(8),
            "version": "1.0.0",
            "description": "The user's own components (cr new puts them here by default)",
        }
        atomic_write_json(path / REPO_FILE, meta)
    return read_repo(path, "local", validate=False)


def _read_registry(home: Path) -> list[dict]:
    path = home / REGISTRY_FILE
    from ..jsonio import InvalidJSON, MissingFile, load_file

    try:
        data = load_file(path)
    except MissingFile:
        return []
    except InvalidJSON as exc:
        if "cannot read" in exc.message:
            raise StoreError(exc.message, hint="CR_HOME must be a readable, writable directory: set CR_HOME, "
                                               "e.g. export CR_HOME=~/.reefkit") from None
        raise StoreError(f"{path} is damaged ({exc.message.split(': ', 1)[-1]})",
                         hint="fix it by hand, or move it away and re-register your repos with cr repo add / cr repo pull") from None
    try:
        entries = data["repos"]
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "name" in e and "path" in e for e in entries):
            raise ValueError("'repos' must be a list of objects with name and path")
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(
            f"{path} is damaged ({exc})",
            hint=f"fix it by hand, or move it away and re-register your repos with cr repo add / cr repo pull",
        ) from None
    return entries


def registered(home: Path | None = None) -> list[Repo]:
    """Repos registered in repos.json (not the local or shipped ones), in the order added."""
    home = home or cr_home()
    repos = []
    for entry in _read_registry(home):
        extra = {k: entry[k] for k in ("url", "ref") if entry.get(k)}
        if isinstance(entry.get("trusted"), bool):
            extra["trusted"] = entry["trusted"]
        repos.append(repo_from_meta(entry, Path(entry["path"]), entry.get("origin", "dir"), **extra))
    return repos


def all_repos(home: Path | None = None) -> list[Repo]:
    """Every repository to search, highest precedence first."""
    home = home or cr_home()
    repos = []
    if (local_repo_path(home) / REPO_FILE).is_file():
        repos.append(read_repo(local_repo_path(home), "local", validate=False))
    added = registered(home)
    repos.extend(r for r in added if r.origin != "archive")
    repos.extend(builtin_repos())
    repos.extend(r for r in added if r.origin == "archive")
    return repos


def is_writable_path(path: Path) -> bool:
    """False for files inside the repositories shipped with reefkit."""
    path = Path(path).resolve()
    for _, folder in BUILTIN_REPOS:
        if data_dir(folder).resolve() in path.parents:
            return False
    return True


def find_repo(name: str, home: Path | None = None) -> Repo:
    for repo in all_repos(home):
        if repo.name == name:
            return repo
    names = ", ".join(r.name for r in all_repos(home))
    raise RepoError(f"no repository named {name!r}", hint=f"registered repositories: {names} (cr repo list shows them)")


class _Lock:
    """Serialises read-modify-write of repos.json between processes."""

    def __init__(self, home: Path):
        from filelock import FileLock  # imported lazily: ~50 ms of start-up otherwise

        self._lock = FileLock(str(home / (REGISTRY_FILE + ".lock")), timeout=60)

    def __enter__(self):
        self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()


def _write_registry(home: Path, entries: list[dict]) -> None:
    atomic_write_json(home / REGISTRY_FILE, {"format": REGISTRY_FORMAT, "repos": entries})


def register(repo: Repo, home: Path | None = None) -> Repo:
    """Add repo to repos.json; refuses a second repo of the same name or path."""
    home = home or ensure_home()
    with _Lock(home):
        entries = _read_registry(home)
        taken = {e["name"]: e for e in entries}
        reserved = {LOCAL_REPO} | {name for name, _ in BUILTIN_REPOS}
        if repo.name in reserved:
            raise RepoError(
                f"repository name {repo.name!r} is reserved for reefkit's own repositories",
                hint=f"rename it in {repo.path / REPO_FILE}",
            )
        if repo.name in taken:
            raise RepoError(
                f"a repository named {repo.name!r} is already registered ({taken[repo.name]['path']})",
                hint=f"remove it first with: cr repo rm {repo.name}",
            )
        for e in entries:
            if Path(e["path"]) == repo.path:
                raise RepoError(f"{repo.path} is already registered as {e['name']!r}")
        entries.append(repo_descriptor(repo))
        _write_registry(home, entries)
    return repo


def unregister(name: str, home: Path | None = None) -> Repo:
    """Remove a repo from repos.json; a git clone that cr made under CR_HOME/repos is deleted too."""
    home = home or ensure_home()
    if name == LOCAL_REPO or name in {n for n, _ in BUILTIN_REPOS}:
        raise RepoError(
            f"repository {name!r} is part of reefkit and cannot be removed",
            hint="cr repo list shows the repositories you registered (origin git or dir)",
        )
    with _Lock(home):
        entries = _read_registry(home)
        keep = [e for e in entries if e["name"] != name]
        if len(keep) == len(entries):
            names = ", ".join(e["name"] for e in entries) or "none"
            raise RepoError(f"no registered repository named {name!r}", hint=f"registered: {names}")
        gone = next(e for e in entries if e["name"] == name)
        _write_registry(home, keep)
    repo = repo_from_meta(gone, Path(gone["path"]), gone.get("origin", "dir"))
    clones = (home / "repos").resolve()
    if repo.origin == "git" and clones in repo.path.resolve().parents:
        import shutil

        shutil.rmtree(repo.path, ignore_errors=True)
    return repo


def replace_entry(repo: Repo, home: Path | None = None) -> None:
    """Update the stored descriptor of an already registered repo (after a git update)."""
    home = home or ensure_home()
    with _Lock(home):
        entries = _read_registry(home)
        for i, e in enumerate(entries):
            if e["name"] == repo.name:
                entries[i] = repo_descriptor(repo)
                break
        else:
            raise RepoError(f"no registered repository named {repo.name!r}")
        _write_registry(home, entries)


def add_dir(path: Path, home: Path | None = None, origin: str = "dir", trusted: bool | None = None) -> Repo:
    """Register a directory that holds cr-repo.json (origin 'archive' for an unpacked archive)."""
    repo = read_repo(Path(path).expanduser(), origin, **({"trusted": trusted} if trusted is not None else {}))
    return register(repo, home)


def set_trusted(name: str, trusted: bool, home: Path | None = None) -> Repo:
    """Mark a registered repository trusted (or not); returns it as now registered."""
    import dataclasses

    repo = next((r for r in registered(home) if r.name == name), None)
    if repo is None:
        names = ", ".join(r.name for r in registered(home)) or "none"
        raise RepoError(f"no registered repository named {name!r}", hint=f"registered: {names}")
    repo = dataclasses.replace(repo, trusted=trusted)
    replace_entry(repo, home)
    return repo


def init_dir(path: Path, name: str, layout: str = "kind/name/version") -> Repo:
    """Create cr-repo.json in path (which may not exist yet) and return the repo."""
    from .refs import check_name

    check_name(name)
    path = Path(path).expanduser().absolute()
    if (path / REPO_FILE).exists():
        raise RepoError(f"{path} already holds {REPO_FILE}", hint=f"register it with: cr repo add {path}")
    import secrets

    meta = {"name": name, "uid": secrets.token_hex(8), "version": "1.0.0", "layout": layout}
    atomic_write_json(path / REPO_FILE, meta)
    reporter().info(f"created {path / REPO_FILE}")
    return read_repo(path, "dir")
