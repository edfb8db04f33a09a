"""The persistent search index: SQLite in CR_HOME, refreshed incrementally.

Each refresh walks the registered repositories (or, for a query of one kind or one
component, only the directories that can hold it) and stats every meta file; only files
whose (mtime, size) changed since they were indexed are read and validated, so a warm
index over thousands of components costs a directory walk and no JSON parsing. Files
that were modified just before they were indexed are re-read and re-hashed (see RACY_NS),
and so are files whose (mtime, size) is as indexed but whose inode or ctime is not. When
nothing changed, a refresh does not even walk: it re-stats the paths the last quiet walk
looked at (cr.store.snapshot) and stops there; when only some metas changed in place, it
reads those alone (Index._update) and walks only when something appeared, disappeared
or moved. A cold build reads and validates over forked processes (cr.store.parallel).
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
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from .. import sqlcache
from ..errors import InvalidMeta, StoreError
from ..jsonio import not_regular
from .meta import decode_json_bytes, load_json, parse_json_text, read_bytes, schema_fingerprint, validate
from .parallel import map_shared
from .repository import Repo
from . import snapshot
from .snapshot import RACY_NS, Recorder, repos_key

INDEX_FILE = "index.sqlite"
# 3: metas are read by cr.jsonio (NaN, lone surrogates and nesting deeper than its
# MAX_DEPTH refused): an index built before holds such metas as valid, so it is rebuilt
INDEX_FORMAT = "4"  # 4: metas' inode and ctime kept; snapshots (cr.store.snapshot)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    path TEXT PRIMARY KEY,
    repo TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    ino INTEGER NOT NULL DEFAULT 0,
    ctime_ns INTEGER NOT NULL DEFAULT 0,
    racy INTEGER NOT NULL,
    sha256 BLOB NOT NULL,
    kind TEXT, name TEXT, version TEXT, uid TEXT,
    tags TEXT NOT NULL DEFAULT '',
    description TEXT NOT NULL DEFAULT '',
    meta TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS entries_kind_name ON entries(kind, name);
CREATE INDEX IF NOT EXISTS entries_repo ON entries(repo);
CREATE INDEX IF NOT EXISTS entries_uid ON entries(uid);
CREATE INDEX IF NOT EXISTS entries_invalid ON entries(path) WHERE error IS NOT NULL;
CREATE INDEX IF NOT EXISTS entries_racy ON entries(path) WHERE racy;
CREATE INDEX IF NOT EXISTS entries_stat ON entries(path, repo, mtime_ns, size);
CREATE TABLE IF NOT EXISTS tags (path TEXT NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (tag, path)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tags_path ON tags(path);
CREATE TABLE IF NOT EXISTS dirs (path TEXT PRIMARY KEY, stamp TEXT NOT NULL, racy INTEGER NOT NULL, names TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (scope TEXT PRIMARY KEY, data BLOB NOT NULL);
"""


@dataclass(frozen=True)
class Component:
    """One indexed component. meta is the parsed meta.json (loaded on demand by show).

    location: the meta file's path as a string (a Path given is turned into one); the
    Path (meta_path) is made when first asked for, since a search may return thousands
    of components of which a table shows only the refs."""

    kind: str
    name: str
    version: str
    uid: str
    repo: str
    location: str
    tags: tuple[str, ...] = ()
    description: str = ""

    def __post_init__(self):
        if not isinstance(self.location, str):
            object.__setattr__(self, "location", os.fspath(self.location))

    @functools.cached_property
    def meta_path(self) -> Path:
        return Path(self.location)

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
            "path": os.path.dirname(self.location),
            "tags": list(self.tags),
            "description": self.description,
        }


@dataclass
class RefreshStats:
    """scanned: metas stat'ed; parsed: read and validated (new or changed); rehashed: racy
    ones read again to compare their sha256 (they count as parsed only if it changed);
    removed: gone from disk; invalid: parsed ones that failed."""

    scanned: int = 0
    parsed: int = 0
    removed: int = 0
    invalid: int = 0
    rehashed: int = 0


def _read(meta_path: str, st: os.stat_result | None = None) -> tuple[bytes | None, str | None]:
    """(bytes, None), or (None, error) when the file cannot be read.

    st: the file's stat from the scan. Something that is not a regular file (a FIFO, a
    socket, a device named meta.json) is an error without being opened; what is opened is
    opened non-blocking and checked again (cr.jsonio.read_file)."""
    if st is not None and not stat.S_ISREG(st.st_mode):
        return None, not_regular(meta_path, st.st_mode).message
    try:
        return read_bytes(meta_path), None  # a str: a Path per meta cost more than the read
    except InvalidMeta as exc:
        return None, exc.message


def _digest(data: bytes | None) -> bytes:
    import hashlib  # only where a meta is read: a warm refresh reads none

    return hashlib.sha256(data).digest() if data is not None else b""


def _parse(meta_path: str, repo: Repo, data: bytes | None, read_error: str | None = None) -> tuple[dict | None, str | None, str | None]:
    """(meta, its JSON text, None) for a valid meta; (meta or None, None, 'first problem (+N more)') otherwise."""
    if data is None:
        return None, None, read_error
    try:
        text = decode_json_bytes(data, meta_path)
        meta = parse_json_text(text, meta_path)  # bounded in depth: validation cannot recurse far
    except InvalidMeta as exc:
        return None, None, exc.message
    problems = validate(meta, meta_path, kind=repo.kind if repo.layout == "name" else None)
    if not problems:
        problems = _placement_problems(meta, meta_path, repo)
    if problems:
        more = f" (+{len(problems) - 1} more: cr check {meta_path})" if len(problems) > 1 else ""
        return meta, None, f"{problems[0]}{more}"
    return meta, text, None


def _placement_problems(meta: dict, meta_path: str, repo: Repo) -> list[str]:
    """A meta must sit where its kind/name/version say, or refs would find the wrong file."""
    why = repo.misplaced(meta_path, meta["kind"], meta["name"], meta["version"])
    return [f"{meta_path}: /: {why}"] if why else []


class _Listings:
    """Directory listings remembered in the index (table dirs), for Repo.scan(listdir=...).

    Listing a directory costs several system calls, a stat one: a directory whose inode,
    mtime and ctime are what they were when it was listed holds the same entries (adding,
    removing or renaming an entry changes the directory's mtime and ctime, and neither
    can be set back: utime() sets the ctime to now). Like files, a directory that changed
    shortly before it was listed is 'racy' and listed again until a listing finds it older.
    The metas themselves are still stat'ed every time: only listings are remembered.
    """

    def __init__(self, rows, now: int, recorder: Recorder | None = None):
        self.known: dict[str, tuple[str, int, str]] = {path: (stamp, racy, names) for path, stamp, racy, names in rows}
        self.now = now
        self.updates: dict[str, tuple[str, int, str]] = {}
        self.gone: list[str] = []  # directories (with everything under them) no longer there
        self.recorder = recorder
        self.racy = False  # whether a directory listed was racy (then no snapshot is taken)

    def __call__(self, path: str) -> list[str]:
        try:
            st = os.stat(path)
        except OSError:
            if self.recorder is not None:
                self.recorder.saw_dir(path, None)
            if path in self.known:
                self.gone.append(path)
            return []
        if self.recorder is not None:
            self.recorder.saw_dir(path, st)
        if not stat.S_ISDIR(st.st_mode):
            return []
        stamp = f"{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}"
        old = self.known.get(path)
        prefix = path + os.sep
        if old is not None and old[0] == stamp and not old[1]:
            return [prefix + n for n in old[2].split("/")] if old[2] else []
        try:
            with os.scandir(path) as it:
                # symlinks too: one to a directory that does not exist yet must be seen
                # once it does, without its parent changing
                names = sorted(e.name for e in it if not e.name.startswith(".") and (e.is_dir() or e.is_symlink()))
        except OSError:
            names = []
        racy = int(self.now - max(st.st_mtime_ns, st.st_ctime_ns) <= RACY_NS)
        self.racy = self.racy or bool(racy)
        joined = "/".join(names)
        if old != (stamp, racy, joined):
            self.updates[path] = self.known[path] = (stamp, racy, joined)
            if old is not None and old[2]:
                self.gone.extend(prefix + n for n in set(old[2].split("/")).difference(names))
        return [prefix + n for n in names]


def _refill(index: "Index", exc: Exception) -> None:
    """Damage found by a query (not by opening): rebuild the index, refresh it (the query is asked again)."""
    index.db.close()
    index.db = index._rebuild(exc)
    index._refresh()


_recovering = sqlcache.recovering(_refill)


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
            # only damage is rebuilt: a locked or unreadable index is another process's
            # or the file system's doing, and deleting it would pull it from under them
            if sqlcache.damaged(exc) and self.path.exists():
                return self._rebuild(exc)
            if "disk is full" in str(exc):
                raise  # a state of the disk: the CLI words it (cr.cli.output)
            raise self._unwritable(exc) from None

    def _rebuild(self, exc: Exception) -> sqlite3.Connection:
        """The index is a cache: a damaged one is deleted and built again from the repositories."""
        sqlcache.discard(self.path, "search index", exc)
        return self._connect()

    def _unwritable(self, exc: Exception) -> StoreError:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            hint = f"another process held the index for over {sqlcache.BUSY_TIMEOUT_S} s; run the command again when it is done"
        else:
            hint = "CR_HOME must be a writable directory: set CR_HOME, e.g. export CR_HOME=~/.reefkit"
        return StoreError(f"cannot open the search index {self.path} ({exc})", hint=hint)

    def _connect(self) -> sqlite3.Connection:
        try:
            self.home.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._unwritable(exc) from None
        # The index is a cache: a crash or power loss that damages it costs a rebuild
        # (see _rebuild), never data. Without fsyncs (synchronous OFF), bulk `cr new` stays fast.
        db = sqlcache.connect(self.path, f"{INDEX_FORMAT}:{schema_fingerprint()}", _SCHEMA, key="fingerprint",
                              synchronous="OFF")
        self._file_id = _file_id(self.path)
        return db

    def close(self) -> None:
        self.db.close()

    def is_current(self) -> bool:
        """False once the index file this connection opened was deleted or replaced
        (rebuilt by another process, say): a long-lived Index must then be opened again."""
        return self._file_id is not None and _file_id(self.path) == self._file_id

    # -- refreshing ----------------------------------------------------------------
    @_recovering
    def refresh(self, kind: str | None = None, name: str | None = None) -> RefreshStats:
        """Bring the index up to date with the repositories; parses only changed metas.

        With kind, only what a query for that kind can return is brought up to date: the
        <repo>/<kind>/ directories (<repo>/<kind>/<name>/ with name too) and the 'name'
        layout repositories that hold that kind (<repo>/<name>/ with name). Without kind,
        everything (name alone is ignored).
        """
        return self._refresh(kind, name)

    def _prefixes(self, kind: str | None, name: str | None) -> list[str] | None:
        """Path prefixes of the metas a refresh for (kind, name) covers; None for all of them."""
        if kind is None:
            return None
        return [p for p in (repo.scope(kind, name) for repo in self.repos) if p is not None]

    def _rows_under(self, columns: str, prefixes: list[str] | None, where: str = "1") -> list[tuple]:
        """Rows whose path starts with one of prefixes (all rows for None): ranges on the primary key."""
        if prefixes is None:
            return self.db.execute(f"SELECT {columns} FROM entries WHERE {where}").fetchall()
        rows = []
        for prefix in dict.fromkeys(prefixes):
            upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            rows += self.db.execute(
                f"SELECT {columns} FROM entries WHERE path >= ? AND path < ? AND {where}", (prefix, upper)
            ).fetchall()
        return rows

    def _refresh(self, kind: str | None = None, name: str | None = None) -> RefreshStats:
        now = time.time_ns()
        # A refresh of one kind or of everything first asks its snapshot (cr.store.snapshot)
        # whether anything changed since the last walk that left nothing to do: one stat
        # per path that walk looked at. One component's refresh walks little anyway.
        scope = None if kind is not None and name is not None else (kind or "*")
        repos = repos_key(self.repos) if scope is not None else ""
        if scope is not None:
            row = self.db.execute("SELECT data FROM snapshots WHERE scope = ?", (scope,)).fetchone()
            snap = snapshot.load(row[0] if row else None, repos)
            changed = snapshot.check(snap) if snap is not None else None
            if changed == []:
                return RefreshStats(scanned=snap.scanned)
            if changed is not None:
                stats = self._update(snap, changed, scope, now)
                if stats is not None:
                    return stats
        return self._walk(kind, name, now, scope, repos)

    def _update(self, snap: snapshot.Snapshot, changed: list[tuple[int, int]], scope: str,
                now: int) -> RefreshStats | None:
        """Bring the index up to date when the snapshot's check found only metas changed
        in place (or still racy): each is handled as the walk would handle it, alone (no
        listing, no other row fetched), and the snapshot is stamped anew. None when one
        of them appeared or disappeared (a missing meta makes the walk look for misplaced
        ones, a new one may lie under a repository that shadows it): the caller walks."""
        stats = RefreshStats(scanned=snap.scanned)
        found: list[tuple[Repo, str, os.stat_result]] = []
        restamped: dict[tuple[int, int], tuple[int, int, int, int]] = {}
        touched, reread = [], []
        by_name = {repo.name: repo for repo in self.repos}
        for group, i in changed:
            if not snap.was_found(group, i):
                return None
            meta_path = snap.meta_path(group, i)
            try:
                st = os.stat(meta_path)
            except OSError:
                return None
            row = self.db.execute(
                "SELECT repo, mtime_ns, size, ino, ctime_ns, racy, sha256 FROM entries WHERE path = ?", (meta_path,),
            ).fetchone()
            repo = by_name.get(row[0]) if row else None
            if repo is None:
                return None  # not indexed as the snapshot says it was: walk
            stamp = snapshot.file_stamp(st)
            if stamp != snap.groups[group][4][i]:
                restamped[group, i] = stamp
            if (row[1], row[2]) != (st.st_mtime_ns, st.st_size):
                found.append((repo, meta_path, st))
            elif row[5] or (row[3], row[4]) != (st.st_ino, st.st_ctime_ns) \
                    or now - max(st.st_mtime_ns, st.st_ctime_ns) <= RACY_NS:
                # same (mtime, size): compared by content, as the walk compares racy rows
                reread.append((repo, meta_path, st, row))
        for repo, meta_path, st, row in reread:
            stats.rehashed += 1
            data, _ = _read(meta_path, st)
            if data is not None and _digest(data) == row[6]:
                still_racy = int(now - st.st_mtime_ns <= RACY_NS)
                if (still_racy, st.st_ino, st.st_ctime_ns) != (row[5], row[3], row[4]):
                    touched.append((still_racy, st.st_ino, st.st_ctime_ns, meta_path))
                continue
            found.append((repo, meta_path, st))
        rows = [_indexed(item, now) for item in found]
        stats.parsed = len(rows)
        stats.invalid = sum(entry[15] is not None for entry, _ in rows)
        racy = snap.racy
        blob = snap.pack(restamped, now)
        if rows or touched or restamped or racy != snap.racy:
            self._write(rows, [], touched, None, (scope, blob))
        return stats

    def _walk(self, kind: str | None, name: str | None, now: int, scope: str | None, repos: str) -> RefreshStats:
        stats = RefreshStats()
        prefixes = self._prefixes(kind, name)
        # what each meta was when indexed: 'repo|mtime|size' (one string: thousands of rows
        # are fetched), its inode and ctime; racy ones with the sha256 of their bytes
        known = {p: (key, ino, ctime) for p, key, ino, ctime in self._rows_under(
            "path, repo || '|' || mtime_ns || '|' || size, ino, ctime_ns", prefixes)}
        racy_digests = dict(self._rows_under("path, sha256", prefixes, "racy"))
        recorder = Recorder() if scope is not None else None
        listings = _Listings(self._dirs_under(prefixes), now, recorder)
        stat_meta = recorder.stat_meta if recorder is not None else None
        seen: set[str] = set()
        changed: list[tuple[Repo, str, os.stat_result]] = []
        racy: list[tuple[Repo, str, os.stat_result, bytes | None]] = []
        for repo in self.repos:
            repo_name = repo.name
            if recorder is not None:
                recorder.begin(os.path.join(str(repo.path), ""))
            scan = repo.scan(kind, name, listings, stat_meta) if kind is not None else repo.scan(listdir=listings, stat=stat_meta)
            for meta_path, st in scan:
                if meta_path in seen:
                    continue  # the same directory registered twice: first (higher precedence) wins
                seen.add(meta_path)
                old = known.get(meta_path)
                if old is None or old[0] != f"{repo_name}|{st.st_mtime_ns}|{st.st_size}":
                    changed.append((repo, meta_path, st))
                elif meta_path in racy_digests:
                    racy.append((repo, meta_path, st, racy_digests[meta_path]))
                elif old[1] != st.st_ino or old[2] != st.st_ctime_ns:
                    # same mtime and size, yet another file or written since (the ctime
                    # cannot be set back): read again, like a racy one
                    racy.append((repo, meta_path, st, None))
        stats.scanned = len(seen)
        gone = [p for p in known if p not in seen]
        rows, touched = [], []
        for repo, meta_path, st, digest in racy:
            # (mtime, size) unchanged, but it was indexed right after it was written
            stats.rehashed += 1
            if digest is None:
                digest = self._digest_of(meta_path)
            data, read_error = _read(meta_path, st)
            if data is not None and _digest(data) == digest:
                still_racy = int(now - st.st_mtime_ns <= RACY_NS)
                if not still_racy or (known[meta_path][1], known[meta_path][2]) != (st.st_ino, st.st_ctime_ns):
                    # trusted from now on once old enough; the stamp it was read with kept
                    touched.append((still_racy, st.st_ino, st.st_ctime_ns, meta_path))
                continue
            changed.append((repo, meta_path, st))
        # read, parsed and validated over forked processes when there are many (cr.store.parallel)
        rows = map_shared(functools.partial(_indexed, now=now), changed)
        stats.parsed = len(rows)
        stats.invalid = sum(row[15] is not None for row, _ in rows)
        taken = None
        # metas changed within RACY_NS are listed in the snapshot as racy (its check hands
        # them back to be compared by content); a directory changed as recently is not
        # covered that way, and then no snapshot is taken
        if recorder is not None and not listings.racy:
            taken = (scope, recorder.pack(repos, stats.scanned, now))
        if rows or gone or touched or listings.updates or listings.gone:
            self._write(rows, gone, touched, listings, taken, replaced=bool(known))
            stats.removed = len(gone)
        elif taken is not None:
            self.db.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?)", taken)
        return stats

    def _digest_of(self, meta_path: str) -> bytes | None:
        row = self.db.execute("SELECT sha256 FROM entries WHERE path = ?", (meta_path,)).fetchone()
        return row[0] if row else None

    def _dirs_under(self, prefixes: list[str] | None) -> list[tuple]:
        """Remembered listings of the directories a refresh for prefixes walks (all for None)."""
        if prefixes is None:
            return self.db.execute("SELECT path, stamp, racy, names FROM dirs").fetchall()
        rows = []
        for prefix in dict.fromkeys(prefixes):
            upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
            rows += self.db.execute(
                "SELECT path, stamp, racy, names FROM dirs WHERE path = ? OR (path >= ? AND path < ?)",
                (prefix[:-1], prefix, upper),
            ).fetchall()
        return rows

    def _write(self, rows, gone, touched=(), listings: _Listings | None = None, snapshot=None,
               replaced: bool = True) -> None:
        """One transaction: rows parsed (as _entry makes them), paths gone, (racy, ino, ctime, path) of metas read
        again and found unchanged, listings, and the snapshot of the walk that wrote them.
        Every other snapshot is dropped: whatever changed may lie in its scope too.
        replaced: whether some of rows may already be indexed (False: the index held none
        of their paths, so they have no tags to delete)."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM snapshots")
            for path in gone:
                db.execute("DELETE FROM entries WHERE path = ?", (path,))
                db.execute("DELETE FROM tags WHERE path = ?", (path,))
            if rows:
                entries = rows
                # every row at once (one statement each, not three per row): a cold build
                # of 100,000 metas spent ~5 s in per-row statements
                db.executemany(
                    "INSERT OR REPLACE INTO entries (path, repo, mtime_ns, size, ino, ctime_ns, racy, sha256, kind, "
                    "name, version, uid, tags, description, meta, error) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    [row for row, _ in entries])
                if replaced:
                    db.executemany("DELETE FROM tags WHERE path = ?", [(row[0],) for row, _ in entries])
                db.executemany("INSERT OR IGNORE INTO tags VALUES (?, ?)",
                               [(row[0], t) for row, tags in entries for t in tags])
            db.executemany("UPDATE entries SET racy = ?, ino = ?, ctime_ns = ? WHERE path = ?", touched)
            if listings is not None:
                for path in listings.gone:
                    below = path + os.sep
                    db.execute("DELETE FROM dirs WHERE path = ? OR (path >= ? AND path < ?)",
                               (path, below, below[:-1] + chr(ord(below[-1]) + 1)))
                db.executemany(
                    "INSERT OR REPLACE INTO dirs VALUES (?, ?, ?, ?)",
                    [(path, *value) for path, value in listings.updates.items()],
                )
            if snapshot is not None:
                db.execute("INSERT OR REPLACE INTO snapshots VALUES (?, ?)", snapshot)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # SQLite may already have rolled back (e.g. on a damaged file)
                db.execute("ROLLBACK")
            raise

    @_recovering
    def add(self, repo: Repo, meta_path: Path, meta: dict | None = None, data: bytes | None = None) -> None:
        """Index one just-written meta without walking anything (used by `cr new`).

        meta and data: what the caller wrote there (meta already validated and placed by
        it, data its bytes); without them the file is read and validated. Just written, it
        is recorded as racy: the next refresh compares the file's sha256 with data's.
        """
        path = str(meta_path)
        st = os.stat(path)
        if meta is None or data is None:
            data, read_error = _read(path, st)
            meta, text, error = _parse(path, repo, data, read_error)
        else:
            text, error = data.decode("utf-8"), None
        self._write([_entry(repo, path, st, time.time_ns(), _digest(data), meta, text, error)], [])

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
        # With tags, the rows come from the tags table ('+' keeps SQLite from scanning
        # every row of the kind through its index instead).
        plus = "+" if tags else ""
        for column, value in (("kind", kind), ("name", name), ("repo", repo), ("uid", uid)):
            if value is not None:
                sql.append(f"AND {plus}{column} = ?")
                args.append(value)
        # The rarest tag supplies the rows; each other one is a lookup per row on the tags
        # table's key (an IN (...) would first collect every path of a common tag).
        for i, tag in enumerate(self._rarest_first(tags)):
            if i == 0:
                sql.append("AND path IN (SELECT path FROM tags WHERE tag = ?)")
            else:
                sql.append("AND EXISTS (SELECT 1 FROM tags WHERE tag = ? AND tags.path = entries.path)")
            args.append(tag)
        for tag in not_tags:
            sql.append("AND NOT EXISTS (SELECT 1 FROM tags WHERE tag = ? AND tags.path = entries.path)")
            args.append(tag)
        out = [
            Component(k, n, v, u, r, p, tuple(t.split(",")) if t else (), d)
            for k, n, v, u, r, p, t, d in self.db.execute(" ".join(sql), args)
            if r in self.rank
        ]
        return sort_components(out, self.rank)

    def _rarest_first(self, tags: tuple[str, ...]) -> list[str]:
        """tags, the one on fewest components first (counted up to a cap: the question is
        only which is smallest, and counting a tag every component has costs a scan)."""
        tags = list(dict.fromkeys(tags))
        if len(tags) < 2:
            return tags
        count = "SELECT COUNT(*) FROM (SELECT 1 FROM tags WHERE tag = ? LIMIT 2000)"
        return sorted(tags, key=lambda t: self.db.execute(count, (t,)).fetchone()[0])

    @_recovering
    def meta_of(self, component: Component) -> dict:
        """The meta as indexed (no re-read): what find/show saw when they matched."""
        row = self.db.execute("SELECT meta FROM entries WHERE path = ?", (component.location,)).fetchone()
        return json.loads(row[0]) if row and row[0] else component.load_meta()

    @_recovering
    def file_states(self, kind: str) -> list[tuple[str, int, int]]:
        """(meta path, mtime_ns, size) of every indexed meta of kind, by path: a cheap
        fingerprint of what those files held when last indexed (locks key their cache on it)."""
        return self.db.execute("SELECT path, mtime_ns, size FROM entries WHERE kind = ? ORDER BY path", (kind,)).fetchall()

    @_recovering
    def counts_by_repo(self) -> dict[str, int]:
        """Valid components per repository name."""
        return dict(self.db.execute("SELECT repo, COUNT(*) FROM entries WHERE error IS NULL GROUP BY repo").fetchall())

    @_recovering
    def invalid(self, kind: str | None = None, name: str | None = None) -> list[tuple[str, str, str]]:
        """(repo, meta path, error) of every meta that failed to parse or validate.

        With kind (and name): only those under the directories refresh(kind, name) covers.
        """
        rows = self._rows_under("repo, path, error", self._prefixes(kind, name), "error IS NOT NULL")
        return sorted(((r, p, e) for r, p, e in rows if r in self.rank), key=lambda row: row[1])

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
                    [Component(k, n, v, u, r, p, tuple(t.split(",")) if t else (), d) for k, n, v, u, r, p, t, d in rows if r in self.rank],
                    self.rank,
                )
                if len(comps) > 1:
                    groups.append((f"{label} {'/'.join(map(str, values))}", comps))
        return groups


def _indexed(item: tuple[Repo, str, os.stat_result], now: int) -> tuple[tuple, list[str]]:
    """The entries row and tags of one meta, read and validated now."""
    repo, meta_path, st = item
    data, read_error = _read(meta_path, st)
    meta, text, error = _parse(meta_path, repo, data, read_error)
    return _entry(repo, meta_path, st, now, _digest(data), meta, text, error)


def _entry(repo: Repo, meta_path: str, st: os.stat_result, now: int, digest: bytes,
           meta: dict | None, text: str | None, error: str | None) -> tuple[tuple, list[str]]:
    """The entries row of one meta read (as _write inserts it) and its tags."""
    meta = meta if isinstance(meta, dict) else {}
    good = error is None

    def field(key: str) -> str | None:
        value = meta.get(key)
        return value if isinstance(value, str) else None

    kind = field("kind") or (repo.kind if repo.layout == "name" else None)
    tags = [t for t in meta.get("tags", []) if isinstance(t, str)] if good else []
    row = (
        meta_path, repo.name, st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns,
        int(now - st.st_mtime_ns <= RACY_NS), digest,
        kind, field("name"), field("version"), field("uid"),
        ",".join(tags), field("description") or "",
        (text if text is not None else json.dumps(meta)) if good else None, error,
    )
    return row, list(dict.fromkeys(tags))


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def sort_components(components: list[Component], rank: dict[str, int]) -> list[Component]:
    """Order by kind, name, then newest version first, then repo precedence (deterministic).

    Versions are parsed (and packaging imported) only for names found in several versions.
    """
    groups: dict[tuple[str, str], int] = {}
    for c in components:
        groups[c.kind, c.name] = groups.get((c.kind, c.name), 0) + 1
    if any(n > 1 for n in groups.values()):
        from .refs import parse_version

        def newest(c: Component):
            return _Newest(parse_version(c.version)) if groups[c.kind, c.name] > 1 else 0
    else:
        def newest(c: Component):
            return 0
    # (newest(c) is only ever compared between components of one kind and name)
    components.sort(key=lambda c: (c.kind, c.name, newest(c), rank.get(c.repo, 1 << 30), c.location))
    return components


class _Newest:
    """A version that sorts newest first."""

    __slots__ = ("version",)

    def __init__(self, version):
        self.version = version

    def __eq__(self, other) -> bool:
        return self.version == other.version

    def __lt__(self, other) -> bool:
        return other.version < self.version
