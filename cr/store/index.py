"""The persistent search index: SQLite in CR_HOME, refreshed incrementally.

Each refresh walks the registered repositories and stats every meta file; only files
whose (mtime, size) changed since they were indexed are read and validated, so a warm
index over thousands of components costs a directory walk and no JSON parsing.
Metas that fail to parse or validate are indexed too, with their error, so that they
are reported (as warnings naming the file) without being re-read on every call.

The index is a cache: if it is damaged it is deleted and rebuilt from the repositories.
WAL mode plus a busy timeout make it safe for concurrent `cr` processes.
"""
from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidMeta, StoreError
from ..events import reporter
from .meta import load_json, schema_fingerprint, validate
from .repository import Repo

INDEX_FILE = "index.sqlite"
INDEX_FORMAT = "1"
# Files modified this recently may change again within the file system's timestamp
# granularity without their (mtime, size) changing; they are re-read next time.
RACY_NS = 2_000_000_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    path TEXT PRIMARY KEY,
    repo TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    kind TEXT, name TEXT, version TEXT, uid TEXT,
    tags TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    meta TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS entries_kind_name ON entries(kind, name);
CREATE INDEX IF NOT EXISTS entries_repo ON entries(repo);
CREATE INDEX IF NOT EXISTS entries_uid ON entries(uid);
CREATE TABLE IF NOT EXISTS tags (path TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (tag, path)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_path ON tags(path);
CREATE TABLE IF NOT EXISTS info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Component:
    """One indexed component. meta is the parsed meta.json (loaded on demand by show)."""

    kind: str
    name: str
    version: str
    uid: str
    repo: str
    meta_path: Path
    tags: tuple[str, ...] = ()
    description: str = ""

    @property
    def path(self) -> Path:
        """The component's directory."""
        return self.meta_path.parent

    @property
    def ref(self) -> str:
        return f"{self.kind}:{self.name}@{self.version}"

    def load_meta(self) -> dict:
        return load_json(self.meta_path)

    def to_dict(self) -> dict:
        return {
            "ref": self.ref,
            "kind": self.kind,
            "name": self.name,
            "version": self.version,
            "uid": self.uid,
            "repo": self.repo,
            "path": str(self.path),
            "tags": list(self.tags),
            "description": self.description,
        }


@dataclass
class RefreshStats:
    scanned: int = 0
    parsed: int = 0
    removed: int = 0
    invalid: int = 0


def _parse(meta_path: str, repo: Repo) -> tuple[dict | None, str | None]:
    """(meta, None) for a valid meta, (meta or None, 'first problem (+N more)') otherwise."""
    try:
        meta = load_json(Path(meta_path))
    except InvalidMeta as exc:
        return None, exc.message
    problems = validate(meta, meta_path, kind=repo.kind if repo.layout == "name" else None)
    if not problems:
        problems = _placement_problems(meta, meta_path, repo)
    if problems:
        more = f" (+{len(problems) - 1} more: cr check {meta_path})" if len(problems) > 1 else ""
        return meta, f"{problems[0]}{more}"
    return meta, None


def _placement_problems(meta: dict, meta_path: str, repo: Repo) -> list[str]:
    """A meta must sit where its kind/name/version say, or refs would find the wrong file."""
    expected = repo.meta_path(meta["kind"], meta["name"], meta["version"])
    if Path(meta_path) != expected:
        rel = expected.relative_to(repo.path)
        return [f"{meta_path}: /: kind/name/version say it belongs at {rel}"]
    return []


def _recovering(method):
    """Damage found by a query (not by opening) rebuilds the index and asks again, once."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError):  # locked, read-only, disk I/O: not damage
                raise
            self.db.close()
            self.db = self._rebuild(exc)
            self._refresh()
            return method(self, *args, **kwargs)

    return wrapper


class Index:
    """Open with Index(home, repos); call refresh() before queries (find/show do)."""

    def __init__(self, home: Path, repos: list[Repo]):
        self.home = home
        self.repos = repos
        self.rank = {r.name: i for i, r in enumerate(repos)}
        self.path = home / INDEX_FILE
        self.db = self._open()

    # -- opening ------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if not self.path.exists():
                raise self._unwritable(exc) from None
            return self._rebuild(exc)

    def _rebuild(self, exc: Exception) -> sqlite3.Connection:
        """The index is a cache: a damaged one is deleted and built again from the repositories."""
        reporter().warning(f"search index {self.path} was damaged ({exc}); rebuilding it")
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(str(self.path) + suffix)
            except FileNotFoundError:
                pass
        return self._connect()

    def _unwritable(self, exc: Exception) -> StoreError:
        return StoreError(
            f"cannot open the search index {self.path} ({exc})",
            hint="CR_HOME must be a writable directory: set CR_HOME, e.g. export CR_HOME=~/.reefkit",
        )

    def _connect(self) -> sqlite3.Connection:
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._unwritable(exc) from None
        db = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        db.execute("PRAGMA busy_timeout = 60000")
        fingerprint = f"{INDEX_FORMAT}:{schema_fingerprint()}"
        if _stored_fingerprint(db) != fingerprint:
            # A new index, or the schemas changed since it was built: start over.
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                db.execute("PRAGMA journal_mode = WAL")
            db.execute("BEGIN IMMEDIATE")
            try:
                if _stored_fingerprint(db) != fingerprint:  # another process may have done it
                    db.execute("DROP TABLE IF EXISTS entries")
                    db.execute("DROP TABLE IF EXISTS tags")
                    for stmt in _SCHEMA.split(";"):
                        if stmt.strip():
                            db.execute(stmt)
                    db.execute("INSERT OR REPLACE INTO info VALUES ('fingerprint', ?)", (fingerprint,))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        db.execute("PRAGMA synchronous = NORMAL")
        return db

    def close(self) -> None:
        self.db.close()

    # -- refreshing ----------------------------------------------------------------
    @_recovering
    def refresh(self) -> RefreshStats:
        """Bring the index up to date with the repositories; parses only changed metas."""
        return self._refresh()

    def _refresh(self) -> RefreshStats:
        stats = RefreshStats()
        now = time.time_ns()
        known_rows = self.db.execute("SELECT path, repo, mtime_ns, size FROM entries").fetchall()
        known = {path: (repo, mtime, size) for path, repo, mtime, size in known_rows}
        seen: set[str] = set()
        changed: list[tuple[Repo, str, os.stat_result]] = []
        for repo in self.repos:
            for meta_path, st in repo.scan():
                if meta_path in seen:
                    continue  # the same directory registered twice: first (higher precedence) wins
                seen.add(meta_path)
                stats.scanned += 1
                old = known.get(meta_path)
                if old is None or old != (repo.name, st.st_mtime_ns, st.st_size):
                    changed.append((repo, meta_path, st))
        gone = [p for p in known if p not in seen]
        if changed or gone:
            rows = []
            for repo, meta_path, st in changed:
                meta, error = _parse(meta_path, repo)
                mtime = st.st_mtime_ns if now - st.st_mtime_ns > RACY_NS else -1
                rows.append((repo, meta_path, mtime, st.st_size, meta, error))
                stats.parsed += 1
                stats.invalid += error is not None
            self._write(rows, gone)
            stats.removed = len(gone)
        return stats

    def _write(self, rows, gone) -> None:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            for path in gone:
                db.execute("DELETE FROM entries WHERE path = ?", (path,))
                db.execute("DELETE FROM tags WHERE path = ?", (path,))
            for repo, meta_path, mtime, size, meta, error in rows:
                self._upsert(repo, meta_path, mtime, size, meta, error)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may already have rolled back (e.g. on a damaged file)
                db.execute("ROLLBACK")
            raise

    def _upsert(self, repo: Repo, meta_path: str, mtime: int, size: int, meta: dict | None, error: str | None):
        meta = meta if isinstance(meta, dict) else {}
        good = error is None

        def field(key: str) -> str | None:
            value = meta.get(key)
            return value if isinstance(value, str) else None

        kind = field("kind") or (repo.kind if repo.layout == "name" else None)
        tags = [t for t in meta.get("tags", []) if isinstance(t, str)] if good else []
        self.db.execute(
            "INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                meta_path, repo.name, mtime, size,
                kind, field("name"), field("version"), field("uid"),
                ",".join(tags), field("description") or "",
                json.dumps(meta) if good else None, error,
            ),
        )
        self.db.execute("DELETE FROM tags WHERE path = ?", (meta_path,))
        self.db.executemany("INSERT OR IGNORE INTO tags VALUES (?, ?)", [(meta_path, t) for t in tags])

    @_recovering
    def add(self, repo: Repo, meta_path: Path) -> None:
        """Index one just-written meta without walking anything (used by `cr new`)."""
        path = str(meta_path)
        st = os.stat(path)
        meta, error = _parse(path, repo)
        mtime = st.st_mtime_ns if time.time_ns() - st.st_mtime_ns > RACY_NS else -1
        self._write([(repo, path, mtime, st.st_size, meta, error)], [])

    # -- querying ------------------------------------------------------------------
    @_recovering
    def components(
        self,
        kind: str | None = None,
        name: str | None = None,
        tags: tuple[str, ...] = (),
        not_tags: tuple[str, ...] = (),
        repo: str | None = None,
        uid: str | None = None,
    ) -> list[Component]:
        """Valid components matching every filter, in precedence order (repo rank, then newest)."""
        sql = ["SELECT kind, name, version, uid, repo, path, tags, description FROM entries WHERE error IS NULL"]
        args: list = []
        for column, value in (("kind", kind), ("name", name), ("repo", repo), ("uid", uid)):
            if value is not None:
                sql.append(f"AND {column} = ?")
                args.append(value)
        for tag in tags:
            sql.append("AND path IN (SELECT path FROM tags WHERE tag = ?)")
            args.append(tag)
        for tag in not_tags:
            sql.append("AND path NOT IN (SELECT path FROM tags WHERE tag = ?)")
            args.append(tag)
        out = [
            Component(k, n, v, u, r, Path(p), tuple(t.split(",")) if t else (), d)
            for k, n, v, u, r, p, t, d in self.db.execute(" ".join(sql), args)
            if r in self.rank
        ]
        return sort_components(out, self.rank)

    @_recovering
    def meta_of(self, component: Component) -> dict:
        """The meta as indexed (no re-read): what find/show saw when they matched."""
        row = self.db.execute("SELECT meta FROM entries WHERE path = ?", (str(component.meta_path),)).fetchone()
        return json.loads(row[0]) if row and row[0] else component.load_meta()

    @_recovering
    def invalid(self) -> list[tuple[str, str, str]]:
        """(repo, meta path, error) of every meta that failed to parse or validate."""
        rows = self.db.execute("SELECT repo, path, error FROM entries WHERE error IS NOT NULL ORDER BY path")
        return [(r, p, e) for r, p, e in rows if r in self.rank]

    @_recovering
    def duplicates(self) -> list[tuple[str, list[Component]]]:
        """Groups sharing kind/name/version or uid across the index, as ('what', components)."""
        groups = []
        for key, label in (("kind, name, version", "kind/name/version"), ("uid", "uid")):
            dup_keys = self.db.execute(
                f"SELECT {key} FROM entries WHERE error IS NULL GROUP BY {key} HAVING COUNT(*) > 1"
            ).fetchall()
            for values in dup_keys:
                where = " AND ".join(f"{c.strip()} = ?" for c in key.split(","))
                rows = self.db.execute(
                    "SELECT kind, name, version, uid, repo, path, tags, description FROM entries "
                    f"WHERE error IS NULL AND {where}", values,
                ).fetchall()
                comps = sort_components(
                    [Component(k, n, v, u, r, Path(p), tuple(t.split(",")) if t else (), d) for k, n, v, u, r, p, t, d in rows if r in self.rank],
                    self.rank,
                )
                if len(comps) > 1:
                    groups.append((f"{label} {'/'.join(map(str, values))}", comps))
        return groups


def _stored_fingerprint(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM info WHERE key = 'fingerprint'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None
    return row[0] if row else None


def sort_components(components: list[Component], rank: dict[str, int]) -> list[Component]:
    """Order by kind, name, then newest version first, then repo precedence (deterministic)."""
    from .refs import parse_version

    components.sort(key=lambda c: (rank.get(c.repo, 1 << 30), str(c.meta_path)))
    components.sort(key=lambda c: parse_version(c.version), reverse=True)
    components.sort(key=lambda c: (c.kind, c.name))
    return components
