"""The local results store: one JSON file per result, its raw latencies beside it, a SQLite index.

    from cr.results.store import default_store
    store = default_store()                   # CR_HOME/results/
    uid = store.add(record)                   # a record from cr.results.record
    store.list(model="lenet-digits", backend="onnxruntime", limit=10)   # summaries, newest first
    record = store.get(uid[:6], raw=True)     # record["raw"]["latencies_ns"]: array('q')

Layout of the store's directory (DESIGN.md "Where things live"):

    index.sqlite                 one row per result (summary columns, cr.results.summary), WAL
    <xx>/<uid>.json              the record (cr/results/schema/result.json), written atomically;
                                 xx: the uid's first two hex digits
    <xx>/<uid>.latencies.i64     its raw latencies, little-endian int64 (always here, never
                                 inline: records stay small); the record's "raw" names the
                                 file with its format, count and sha256

Why the 256 shard directories: a directory's (inode, mtime, ctime) changes exactly when
an entry is added, removed or renamed, so a shard whose stamp is unchanged need not be
listed. The store's root cannot serve so (SQLite creates and deletes index.sqlite-wal and
-shm there on every open and close), and with 100,000 results in one directory every
added result would cost the next command a listing of all of them.

The JSON files are the truth; the index is a cache rebuilt from them at any time. Each
list/get first stats the shards: the files of a changed shard are compared with its rows
by name (known files are not stat'ed), so results added or removed behind the store's
back (a copy, rsync, rm) are noticed; the rows a query returns are stat'ed, so a result
edited by hand is re-read. reindex(full=True) also stats every file. A file that is not
valid JSON, violates the schema or sits in the wrong place is a warning naming the file,
never an abort. JSON files dropped into the root are not the store's: `cr results add`
imports them.

Modules: cr.results.files (one result's files: paths, bytes, loading and checking),
cr.results.index (the SQLite index: schema, rows, filters), this one (the store).

Crash safety: add() writes the side file, then the JSON (each a temp file renamed into
place, fsynced when durable), then the index row: a kill at any point leaves either no
visible result or a complete one; an orphan side file or temp file is removed by a later
reindex once it is older than ORPHAN_GRACE_S. Concurrent processes are safe: every file
name is unique to its uid, and each insert is one short IMMEDIATE transaction.
"""
from __future__ import annotations

import os
import re
import sqlite3
import time
from array import array
from pathlib import Path

from .. import jsonio, sqlcache
from ..errors import CRError, NotFound, StoreError
from ..events import reporter
from ..fsutil import atomic_write_bytes
from . import index
from .files import UID, int64s, load, read_side, record_bytes, record_file, same_bytes, side_file
from .index import INDEX_FILE
from .latencies import SIDE_SUFFIX, encode, side_raw
from .summary import COLUMNS, summarize

# list()'s filters on the configuration and origin columns (cr.results.index.where)
CONFIG_FILTERS = ("variant", "precision", "split", "threads", "batch_size", "pipeline", "campaign", "campaign_job", "study")
from .traces import trace_file
from .validate import InvalidResult, problems

__all__ = ["ResultStore", "default_store", "InvalidResult", "ReindexStats", "record_file", "side_file",
           "INDEX_FILE", "ORPHAN_GRACE_S", "RESULTS_DIR"]

RESULTS_DIR = "results"
PAGE = 500  # rows() reads the index this many rows at a time
# A directory changed this recently before it was listed may change again within the file
# system's timestamp granularity without its stamp changing: it is listed again next time.
RACY_NS = 2_000_000_000
# Leftovers of an interrupted add (side file without its JSON, temp files) younger than
# this may belong to an add still running in another process: they are left alone.
ORPHAN_GRACE_S = 600.0

_PREFIX = re.compile(r"^[0-9a-f]{1,16}$")
_SHARD = re.compile(r"^[0-9a-f]{2}$")


class ReindexStats:
    """listed: whether a shard was listed; parsed: files read (new or changed); removed:
    rows of files gone; invalid: files now known to be invalid; cleaned: orphan side
    files and temp files deleted. (Not a dataclass: dataclasses imports inspect, and
    every `cr results` command would pay for it.)"""

    def __init__(self) -> None:
        self.listed = False
        self.parsed = self.removed = self.invalid = self.cleaned = 0

    def __repr__(self) -> str:
        return (f"ReindexStats(listed={self.listed}, parsed={self.parsed}, removed={self.removed}, "
                f"invalid={self.invalid}, cleaned={self.cleaned})")


def default_store() -> "ResultStore":
    """The store under CR_HOME/results/, where benchmark and validate save every result."""
    return ResultStore()


def _refill(store: "ResultStore", exc: Exception) -> None:
    """A damaged index (not a locked one) found by a query is rebuilt from the files (the query is asked again)."""
    if store._db is None:
        raise exc
    store._rebuild(exc)


_recovering = sqlcache.recovering(_refill)


class ResultStore:
    """Results under root (default CR_HOME/results/). durable=False skips the fsyncs: still
    safe against a killed process, not against a power loss (bulk imports, benchmarks)."""

    def __init__(self, root: str | Path | None = None, durable: bool = True):
        if root is None:
            from ..paths import cr_home

            root = cr_home() / RESULTS_DIR
        self.root = Path(root).absolute()
        self.durable = durable
        self.index_path = self.root / INDEX_FILE
        self._db: sqlite3.Connection | None = None

    # -- the index -------------------------------------------------------------------------
    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _open(self, create: bool) -> sqlite3.Connection | None:
        """The index connection; None when the store does not exist and create is False."""
        if self._db is not None:
            return self._db
        if not create and not self.root.is_dir():
            return None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the results store {self.root} ({exc.strerror or exc})",
                             hint="set CR_HOME to a writable directory") from None
        try:
            self._db = index.connect(self.index_path)
        except sqlite3.OperationalError as exc:  # locked for too long, read-only, I/O: not damage
            raise StoreError(f"cannot open the results index {self.index_path} ({exc})",
                             hint="CR_HOME must be a writable directory; another cr may hold the index") from None
        except sqlite3.DatabaseError as exc:
            self._rebuild(exc)
        return self._db

    def _rebuild(self, exc: Exception) -> None:
        """The index is a cache: a damaged one is deleted and built again from the files."""
        if self._db is not None:
            self._db.close()
            self._db = None
        sqlcache.discard(self.index_path, "results index", exc)
        self._db = index.connect(self.index_path)
        self._reindex(full=True)

    def _write(self, statements) -> None:
        index.write(self._db, statements)

    # -- (re)indexing ------------------------------------------------------------------------
    def _index_files(self, rels) -> tuple[list, int]:
        """Statements bringing the rows of the named files up to date, and how many are invalid."""
        statements, invalid = [], 0
        for rel in rels:
            try:
                st = os.stat(self.root / rel)  # before reading: a later change shows as a new stat
            except FileNotFoundError:
                statements += index.forget(rel)
                continue
            record, problem = load(self.root, rel)
            if record is None and problem is None:
                statements += index.forget(rel)
            elif problem is not None:
                invalid += 1
                statements += index.invalid(rel, st, problem)
            else:
                statements += index.indexed(rel, summarize(record), st)
        return statements, invalid

    @_recovering
    def reindex(self, full: bool = False, orphan_grace_s: float = ORPHAN_GRACE_S) -> ReindexStats:
        """Bring the index up to date with the files (see the module doc); full also stats
        every known file. Listing a shard removes its orphans older than orphan_grace_s."""
        if self._open(create=False) is None:
            return ReindexStats()
        return self._reindex(full, orphan_grace_s)

    def _reindex(self, full: bool = False, orphan_grace_s: float = ORPHAN_GRACE_S) -> ReindexStats:
        db = self._db
        stats = ReindexStats()
        now = time.time_ns()
        shards: dict[str, str] = {}  # shard -> 'inode:mtime:ctime|racy'
        strays = []
        try:
            with os.scandir(self.root) as it:
                for entry in it:
                    if _SHARD.match(entry.name) and entry.is_dir(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        racy = int(now - max(st.st_mtime_ns, st.st_ctime_ns) <= RACY_NS)
                        shards[entry.name] = f"{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns}|{racy}"
                    elif entry.name.endswith(".json") and not entry.name.startswith("."):
                        strays.append(entry.name)
        except FileNotFoundError:
            pass
        for name in strays:
            reporter().warning(f"{self.root / name} is not in the store's layout (ignored); "
                               f"import it with: cr results add {self.root / name}")
        known_dirs = dict(db.execute("SELECT shard, stamp FROM dirs"))
        to_list = [s for s, stamp in shards.items() if full or known_dirs.get(s) != stamp or stamp.endswith("|1")]
        vanished = [s for s in known_dirs if s not in shards]
        to_read: list[str] = []
        gone: list[str] = []
        for shard in to_list + vanished:
            stats.listed = True
            # rows first, then the listing: a result added in between is then seen as a new
            # file (read again, harmlessly), never as a row whose file is gone
            known = dict(db.execute("SELECT file, mtime_ns || '|' || size FROM results WHERE uid >= ? AND uid < ?",
                                    (shard, shard + "g")))
            known.update(db.execute("SELECT file, mtime_ns || '|' || size FROM invalid WHERE file >= ? AND file < ?",
                                    (shard + "/", shard + "0")))
            try:
                names = os.listdir(self.root / shard) if shard in shards else []
            except (FileNotFoundError, NotADirectoryError):
                names = []
            files = {f"{shard}/{n}" for n in names if n.endswith(".json") and not n.startswith(".")}
            to_read += [f for f in files if f not in known]
            gone += [f for f in known if f not in files]
            if full:
                for rel in files.intersection(known):
                    try:
                        fst = os.stat(self.root / rel)
                    except FileNotFoundError:
                        gone.append(rel)
                        continue
                    if known[rel] != f"{fst.st_mtime_ns}|{fst.st_size}":
                        to_read.append(rel)
            stats.cleaned += self._clean_orphans(shard, names, files, orphan_grace_s)
        # invalid files (few) are stat'ed every time: fixing one by hand is seen at once
        for rel, mtime_ns, size in db.execute("SELECT file, mtime_ns, size FROM invalid").fetchall():
            try:
                fst = os.stat(self.root / rel)
            except FileNotFoundError:
                gone.append(rel)
                continue
            if (fst.st_mtime_ns, fst.st_size) != (mtime_ns, size):
                to_read.append(rel)
        to_read = sorted(set(to_read))
        gone = [rel for rel in dict.fromkeys(gone) if rel not in to_read and not (self.root / rel).exists()]
        statements, stats.invalid = self._index_files(to_read)
        for rel in gone:
            statements += index.forget(rel)
        statements += [("INSERT OR REPLACE INTO dirs VALUES (?, ?)", (s, shards[s])) for s in to_list]
        statements += [("DELETE FROM dirs WHERE shard = ?", (s,)) for s in vanished]
        stats.parsed, stats.removed = len(to_read), len(gone)
        if statements:
            self._write(statements)
        return stats

    def _clean_orphans(self, shard: str, names: list[str], files: set[str], grace_s: float) -> int:
        """Delete side files without their record and temp files of interrupted writes, once old enough."""
        cleaned = 0
        limit = time.time() - grace_s
        for name in names:
            if name.endswith(SIDE_SUFFIX) and not name.startswith("."):
                if f"{shard}/{name[:-len(SIDE_SUFFIX)]}.json" in files:
                    continue
            elif not (name.startswith(".") and name.endswith(".tmp")):
                continue
            path = self.root / shard / name
            try:
                if os.stat(path).st_mtime <= limit:
                    os.unlink(path)
                    cleaned += 1
            except FileNotFoundError:
                pass
            except OSError as exc:
                reporter().warning(f"cannot remove the leftover {path} ({exc.strerror or exc})")
        return cleaned

    def _refresh(self) -> sqlite3.Connection | None:
        """The index, brought up to date cheaply, with invalid files reported; None when no store."""
        db = self._open(create=False)
        if db is None:
            return None
        self._reindex()
        for _, problem in db.execute("SELECT file, problem FROM invalid ORDER BY file"):
            reporter().warning(f"{problem} (result skipped)")
        return db

    def _verify_rows(self, rows) -> bool:
        """Stat the files of (file, mtime_ns, size) rows about to be returned; re-index
        those that changed or are gone. True if any did."""
        root = str(self.root) + os.sep
        stale = []
        for rel, mtime_ns, size in rows:
            try:
                st = os.stat(root + rel)
            except FileNotFoundError:
                stale.append(rel)
                continue
            if st.st_mtime_ns != mtime_ns or st.st_size != size:
                stale.append(rel)
        if not stale:
            return False
        statements, invalid = self._index_files(stale)
        self._write(statements)
        if invalid:
            for rel in stale:
                row = self._db.execute("SELECT problem FROM invalid WHERE file = ?", (rel,)).fetchone()
                if row:
                    reporter().warning(f"{row[0]} (result skipped)")
        return True

    def _row_stat(self, uid: str) -> list[tuple]:
        """[(file, mtime_ns, size)] of uid's row, or [(its file, -1, -1)] when it has none."""
        row = self._db.execute("SELECT file, mtime_ns, size FROM results WHERE uid = ?", (uid,)).fetchone()
        return [tuple(row) if row else (record_file(uid), -1, -1)]

    # -- adding ----------------------------------------------------------------------------
    @_recovering
    def add(self, record: dict, base: str | Path | None = None) -> str:
        """Store record (as cr.results.record.complete() leaves it, or as read from a
        file); returns its uid. Adding the same uid again replaces it (the same bytes are not
        rewritten). Raw latencies may be an array('q'), a list, or a side-file reference
        resolved against base (the directory of the file the record was read from).
        InvalidResult when the record violates the Result schema."""
        if not isinstance(record, dict):
            raise InvalidResult(f"a result must be a JSON object, found {type(record).__name__}")
        uid = record.get("uid")
        where = f"result {uid}" if isinstance(uid, str) else "result"
        latencies = self._latencies_of(record, base, where)
        if latencies is not None:
            from .validate import latency_problem

            bad = latency_problem(latencies, where)
            if bad:  # a latency cannot be negative: refused like any other schema problem
                raise InvalidResult(bad, hint="a result cr writes has no negative latency; fix or drop the record")
        data = dict(record)
        if latencies is not None:
            blob = encode(latencies)
            data["raw"] = side_raw(blob, f"{uid}{SIDE_SUFFIX}")
        try:
            jsonio.check_depth(data, where)  # before validation, which recurses
        except jsonio.InvalidJSON as exc:
            raise InvalidResult(exc.message, hint=exc.hint) from None
        found = problems(data, where)
        if found:
            more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
            raise InvalidResult(found[0] + more, hint="a result must follow cr/results/schema/result.json")
        try:
            text = record_bytes(data)
        except UnicodeEncodeError as exc:  # a lone surrogate: not Unicode text
            raise InvalidResult(f"{where}: a string holds {exc.object[exc.start:exc.end]!r}, which is not Unicode text",
                                hint="a result's strings must be text (UTF-8)") from None
        except ValueError:  # NaN or Infinity: not JSON, and no reader (cr.jsonio) would take the file back
            raise InvalidResult(f"{where}: holds NaN or Infinity, which JSON cannot hold",
                                hint="a result's numbers must be finite (null where there is none)") from None
        self._open(create=True)
        rel = record_file(uid)
        side = self.root / side_file(uid)
        if latencies is not None and not same_bytes(side, blob):
            atomic_write_bytes(side, blob, durable=self.durable)  # first: a visible record's side file exists
        path = self.root / rel
        if not same_bytes(path, text):
            atomic_write_bytes(path, text, durable=self.durable)
        if latencies is None:
            try:
                side.unlink()  # left by an earlier version of this result
            except FileNotFoundError:
                pass
        st = os.stat(path)
        self._write(index.indexed(rel, summarize(data), st))
        return uid

    def _latencies_of(self, record: dict, base, where: str) -> array | None:
        raw = record.get("raw")
        if not isinstance(raw, dict):
            return None
        if "latencies_ns" in raw:
            values = raw["latencies_ns"]
            if not isinstance(values, (list, array)):
                raise InvalidResult(f"{where}: /raw/latencies_ns: expected an array, found {type(values).__name__}")
            return int64s(values, where)
        if "latencies_ns_file" in raw:
            name = raw["latencies_ns_file"]
            if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
                raise InvalidResult(f"{where}: /raw/latencies_ns_file: expected a file name beside the record, found {name!r}")
            if base is not None:
                folder = Path(base)
            elif isinstance(record.get("uid"), str) and UID.match(record["uid"]):
                folder = self.root / record["uid"][:2]
            else:
                raise InvalidResult(f"{where}: /uid: expected 16 lowercase hex digits, found {record.get('uid')!r}")
            return read_side(folder / name, raw, where)
        return None

    def add_file(self, path: str | Path) -> list[str]:
        """Import a result file (one record, or a list of them as `export --format json` writes);
        side files are looked up beside it. Returns the uids added."""
        path = Path(path)
        try:
            # a regular file only (a FIFO is refused, never waited on); bounded in size and
            # nesting depth, NaN and Infinity refused (cr.jsonio)
            data = jsonio.load_file(path)
        except jsonio.MissingFile as exc:
            raise NotFound(exc.message) from None
        except jsonio.InvalidJSON as exc:
            raise InvalidResult(exc.message, hint=exc.hint) from None
        records = data if isinstance(data, list) else [data]
        for i, record in enumerate(records):  # all checked before any is added
            at = f"{path}" + (f" (record {i})" if isinstance(data, list) else "")
            if not isinstance(record, dict):
                raise InvalidResult(f"{at}: expected a result object, found {type(record).__name__}")
            found = problems({**record, "raw": None}, at)
            if found:
                raise InvalidResult(found[0] + (f" (+{len(found) - 1} more)" if len(found) > 1 else ""),
                                    hint="a result must follow cr/results/schema/result.json")
        if len(records) < 2 or not self.durable or not hasattr(os, "sync"):
            return [self.add(record, base=path.parent) for record in records]
        # Many at once (an export from another machine): no fsync per file, one sync at
        # the end. A power loss before it may leave some of them empty (each then a warning
        # naming its file); importing the file again repairs them.
        self.durable = False
        try:
            return [self.add(record, base=path.parent) for record in records]
        finally:
            self.durable = True
            os.sync()

    # -- finding ---------------------------------------------------------------------------
    @_recovering
    def resolve(self, prefix: str) -> str:
        """The full uid of the one result whose uid starts with prefix."""
        prefix = prefix.strip().lower()
        if not _PREFIX.match(prefix):
            raise NotFound(f"{prefix!r} is not a result uid (1 to 16 hex digits)", hint="cr results list shows the uids")
        for attempt in range(2):
            db = self._open(create=False) if attempt == 0 else self._refresh()
            if db is None:
                break
            upper = prefix + "g"  # every hex digit sorts before 'g'
            found = [u for (u,) in db.execute("SELECT uid FROM results WHERE uid >= ? AND uid < ? ORDER BY uid LIMIT 6",
                                              (prefix, upper))]
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
                raise CRError(f"{prefix!r} matches several results ({shown})", hint="give more digits of the uid")
        raise NotFound(f"no result {prefix!r} in {self.root}", hint="cr results list shows the uids")

    @_recovering
    def get(self, uid: str, raw: bool = False) -> dict:
        """The record of uid (or a unique prefix). With raw, record["raw"] is
        {"latencies_ns": array('q')} (the side file's sha256 verified), as
        cr.results.record.complete() leaves it; without raw, "raw" is as stored."""
        full = self.resolve(uid)
        rel = record_file(full)
        record, problem = load(self.root, rel)
        self._verify_rows(self._row_stat(full))
        if record is None:
            if problem is None:
                raise NotFound(f"result {full} is gone (its file {self.root / rel} was removed)")
            raise InvalidResult(problem, hint=f"fix or remove {self.root / rel}")
        if raw and isinstance(record.get("raw"), dict):
            record["raw"] = {"latencies_ns": self.latencies(record)}
        return record

    def latencies(self, record: dict) -> array | None:
        """The raw latencies of a stored record (or of a record with inline ones), verified."""
        return self._latencies_of(record, None, f"result {record.get('uid')}")

    @_recovering
    def list(self, solution: str | None = None, model: str | None = None, backend: str | None = None,
             platform: str | None = None, action: str | None = None, status: str | None = None,
             since: str | None = None, limit: int | None = None, dataset: str | None = None,
             **config) -> list[dict]:
        """Summaries (cr.results.summary.COLUMNS, file as a path) of the matching results, newest first.

        solution/model/dataset: a name, kind:name or [kind:]name@version; platform: a
        fingerprint (or its first digits) or words of the description ('aarch64', 'H200');
        since: an ISO date or date-time (local time unless it names its zone); config: the
        configuration and origin columns, equal to the value given (CONFIG_FILTERS: variant,
        precision, split, threads, batch_size, campaign, campaign_job, study; pipeline: a
        sha256 or its first digits). rows() gives the same, page by page.
        """
        return list(self.rows(solution=solution, model=model, backend=backend, platform=platform, action=action,
                              status=status, since=since, limit=limit, dataset=dataset, **config))

    def rows(self, solution: str | None = None, model: str | None = None, backend: str | None = None,
             platform: str | None = None, action: str | None = None, status: str | None = None,
             since: str | None = None, limit: int | None = None, dataset: str | None = None,
             page: int | None = None, **config):
        """What list() returns, as an iterator that holds one page of rows at a time, however
        many results match (cr results list prints them as they come).

        Pages are read from the index by keyset, (started, uid) below the last row given,
        so each is one index seek, never a scan of the rows before it. The files of each
        page are stat'ed before it is given (as list() does): one edited or removed behind
        the store's back is re-read and the page asked again. A result changed while the
        iteration runs shows as it was when its page was read.
        """
        unknown = sorted(set(config) - set(CONFIG_FILTERS))
        if unknown:
            raise TypeError(f"rows() got unexpected filters {unknown}")
        try:
            db = self._refresh()
        except sqlite3.DatabaseError as exc:
            if not sqlcache.damaged(exc):
                raise
            _refill(self, exc)  # damaged: rebuilt from the files (as @_recovering does for list())
            db = self._refresh()
        if db is None:
            return
        where, args = index.where(solution=solution, model=model, dataset=dataset, backend=backend, platform=platform,
                                  action=action, status=status, since=since, **config)
        if limit is not None and limit < 1:
            raise CRError(f"limit must be at least 1, found {limit}")
        root = str(self.root) + os.sep
        names = COLUMNS[:-1]
        started, uid = names.index("started"), names.index("uid")
        select = f"SELECT {index.SUMMARY_SELECT}, mtime_ns, size FROM results"
        left, after = limit, None
        # (started, uid) descending, the order of the index every filter ends with: SQLite
        # puts NULL last when descending, so the rows without a start time (none in a
        # valid record) come in a second pass, by uid alone.
        for phase in ("started IS NOT NULL", "started IS NULL"):
            after = None
            while left is None or left > 0:
                clauses = [where[len("WHERE "):]] if where else []
                clauses.append(phase)
                values = list(args)
                if after is not None:
                    clauses.append("(started, uid) < (?, ?)" if phase == "started IS NOT NULL" else "uid < ?")
                    values += list(after) if phase == "started IS NOT NULL" else [after[1]]
                size = page or PAGE
                size = size if left is None else min(size, left)
                sql = f"{select} WHERE {' AND '.join(clauses)} ORDER BY started DESC, uid DESC LIMIT {int(size)}"
                batch = self._fresh(sql, values)
                for row in batch:
                    yield dict(zip(names, row[:-3]), file=root + row[-3])
                if left is not None:
                    left -= len(batch)
                if len(batch) < size:
                    break
                after = (batch[-1][started], batch[-1][uid])

    def _fresh(self, sql: str, values: list) -> list:
        """The rows of one query, asked again (at most twice) when a file they name changed."""
        for _ in range(3):
            try:
                batch = self._db.execute(sql, values).fetchall()
            except sqlite3.DatabaseError as exc:
                if not sqlcache.damaged(exc):
                    raise
                _refill(self, exc)  # damaged: rebuilt from the files, then asked again
                batch = self._db.execute(sql, values).fetchall()
            if not self._verify_rows([row[-3:] for row in batch]):
                break
        return batch

    def count(self) -> int:
        """How many valid results the index holds (after a cheap reindex)."""
        db = self._refresh()
        return db.execute("SELECT COUNT(*) FROM results").fetchone()[0] if db is not None else 0

    # -- removing, exporting, comparing --------------------------------------------------------
    @_recovering
    def remove(self, uids) -> list[str]:
        """Remove the results named (uids or unique prefixes; all resolved before any is
        removed); returns their full uids. The JSON goes first: a crash part-way leaves at
        most a side file, cleaned by a later reindex."""
        full = []
        for u in uids:
            try:
                full.append(self.resolve(u))
            except NotFound:
                broken = u.strip().lower()  # a record broken by hand is not indexed, yet removable by its full uid
                if not (UID.match(broken) and self.root.joinpath(record_file(broken)).exists()):
                    raise
                full.append(broken)
        full = list(dict.fromkeys(full))
        for uid in full:
            for rel in (record_file(uid), side_file(uid), trace_file(uid)):  # a profile's trace too
                try:
                    os.unlink(self.root / rel)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    raise StoreError(f"cannot remove {self.root / rel} ({exc.strerror or exc})") from None
        if full:
            self._write([s for uid in full for s in index.forget(record_file(uid))])
        return full

    def export(self, fmt: str, out=None, raw: bool = True, **filters) -> int:
        """Write the matching results (list()'s filters) to out (a path, a text stream, or
        None for stdout) as "csv" (one row per result, the summary columns) or "json" (a list
        of full records; with raw, latencies inline so the file is self-contained and `cr
        results add` can import it; without, "raw" is null). Returns how many."""
        from .export import export

        return export(self, fmt, out, raw=raw, **filters)

    def compare(self, uids) -> dict:
        """Metrics of the named results side by side, relative to the first, with a noise
        judgement for latencies (cr.results.compare)."""
        from .compare import compare_records

        if len(uids) < 2:
            raise CRError("compare needs two or more results", hint="cr results compare UID UID [UID...]")
        records = [self.get(u) for u in uids]
        result = compare_records(records, [self.latencies(r) for r in records])
        result["results"] = [{**summarize(r), "file": str(self.root / record_file(r["uid"]))} for r in records]
        return result
