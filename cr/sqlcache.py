"""SQLite caches: databases that cr can always build again from files it owns (the search
index of components, cr.store.index; the results index, cr.results.index).

    db = connect(path, version, SCHEMA)      # created, or re-created when of another version
    discard(path, "search index", exc)        # damaged: warned about, deleted (with -wal, -shm)

    @recovering(rebuild)                      # a query that finds damage rebuilds, asks again once
    def components(self, ...): ...

A cache is never repaired: one that is damaged (sqlite3.DatabaseError that is not an
OperationalError: "file is not a database", "database disk image is malformed") is deleted
and built again; one of another version (its `info` table says so, or has none) has its
tables dropped and re-created in one transaction. A locked, read-only or unreadable
database (OperationalError) is not damage: deleting it would not help, and the caller
reports it. WAL mode and a busy timeout let several cr processes share one cache.

Standard library and the foundation only: any layer may use it.
"""
from __future__ import annotations

import functools
import os
import random
import sqlite3
import time

from .events import reporter

BUSY_TIMEOUT_S = 60


def damaged(exc: BaseException) -> bool:
    """Whether exc says the database file is damaged (not locked, read-only or unreadable)."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


def stored_version(db: sqlite3.Connection, key: str = "format") -> str | None:
    """The version the cache says it is (its info table's key), None when it says none."""
    try:
        row = db.execute("SELECT value FROM info WHERE key = ?", (key,)).fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return None
    return row[0] if row else None


def connect(path, version: str, schema: str, key: str = "format", synchronous: str = "NORMAL") -> sqlite3.Connection:
    """The cache at path, created, or emptied and re-created when its version is not `version`.

    schema: CREATE statements separated by ';' (an `info (key, value)` table is added, which
    holds the version under key). Re-creating drops every table first, in one IMMEDIATE
    transaction that checks the version again (another process may have just done it).
    synchronous: the PRAGMA for the connection (a cache can afford OFF or NORMAL: what a
    crash loses is rebuilt). sqlite3.DatabaseError when the file is damaged (see damaged()).
    """
    db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000}")
        if stored_version(db, key) != version:
            if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                _into_wal(db)
            db.execute("BEGIN IMMEDIATE")
            try:
                if stored_version(db, key) != version:
                    tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
                    for table in tables:
                        if not table.startswith("sqlite_"):
                            db.execute(f'DROP TABLE IF EXISTS "{table}"')
                    db.execute("CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                    for stmt in schema.split(";"):
                        if stmt.strip():
                            db.execute(stmt)
                    db.execute("INSERT INTO info VALUES (?, ?)", (key, version))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        db.execute(f"PRAGMA synchronous = {synchronous}")
    except BaseException:
        db.close()
        raise
    return db


def _into_wal(db: sqlite3.Connection) -> None:
    """Switch db to WAL mode, waiting out other processes for up to BUSY_TIMEOUT_S.

    SQLite answers a journal-mode change that meets another connection's write lock with
    "database is locked" at once, without calling its busy handler: processes creating the
    same cache together (eight `cr` commands adding results to a fresh store) failed so."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL").fetchone()
            return
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(pause * (0.5 + random.random()))  # jittered, so the waiters do not retry in step
        pause = min(pause * 2, 0.05)


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether exc is SQLite's "database is locked" (SQLITE_BUSY and its extended codes)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF == sqlite3.SQLITE_BUSY if code is not None else "locked" in str(exc)


def discard(path, what: str, exc: BaseException) -> None:
    """Warn that the cache (`what`, e.g. "search index") at path is damaged, and delete it
    with its -wal and -shm files; the caller connects again and refills it."""
    reporter().warning(f"{what} {path} was damaged ({exc}); rebuilding it")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(str(path) + suffix)
        except FileNotFoundError:
            pass


def recovering(rebuild):
    """A decorator for the query methods of a cache's owner: when one finds the cache
    damaged, rebuild(self, exc) deletes and refills it, and the method is asked again, once.
    Any other error (a locked database included) goes to the caller."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except sqlite3.DatabaseError as exc:
                if not damaged(exc):
                    raise
                rebuild(self, exc)
                return method(self, *args, **kwargs)

        return wrapper

    return decorate
