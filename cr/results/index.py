"""The results index: SQLite (WAL) in the store's root, one row per valid result.

A cache of the JSON files (cr.results.store rebuilds it from them whenever it is missing,
damaged or of another INDEX_FORMAT). Tables:

    results   uid, file (relative path), mtime_ns, size, and the summary columns
              (cr.results.summary.COLUMNS) plus solution_name/model_name/dataset_name
              for the filters
    invalid   file, mtime_ns, size, problem: result files that failed to parse or validate
    dirs      shard, stamp: the shard directories as last listed
    info      format
"""
from __future__ import annotations

import os
import sqlite3

from .. import sqlcache
from ..errors import CRError
from .files import uid_of_file
from .summary import COLUMNS, since_utc

INDEX_FILE = "index.sqlite"
# another format: the index is dropped and rebuilt from the files (3: one platform label;
# 4: the configuration columns, campaign job and study; 5: a task's headline metric)
INDEX_FORMAT = "5"

ROW = ("uid", "file", "mtime_ns", "size", "action", "status", "started", "ended", "solution", "solution_name",
       "model", "model_name", "dataset", "dataset_name", "split", "backend", "variant", "precision", "threads",
       "batch_size", "pipeline", "platform", "platform_description", "scenario", "p50_ns", "p99_ns", "throughput_qps",
       "throughput_sps", "top1", "top5", "task_metric", "task_value", "outcome", "validity", "samples", "error", "campaign", "campaign_job",
       "study", "trial")
_REAL = ("p50_ns", "p99_ns", "throughput_qps", "throughput_sps", "top1", "top5", "task_value")
_INTEGER = ("samples", "threads", "batch_size")
SUMMARY_SELECT = ", ".join(COLUMNS)
UPSERT = f"INSERT OR REPLACE INTO results ({', '.join(ROW)}) VALUES ({', '.join('?' * len(ROW))})"

# Every index ends with (started, uid): the listing order, so no query sorts.
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS results (
    uid TEXT PRIMARY KEY, file TEXT NOT NULL, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL,
    {", ".join(f"{c} {'REAL' if c in _REAL else 'INTEGER' if c in _INTEGER else 'TEXT'}" for c in ROW[4:])}
);
CREATE INDEX IF NOT EXISTS results_started ON results(started, uid);
CREATE INDEX IF NOT EXISTS results_solution ON results(solution_name, started, uid);
CREATE INDEX IF NOT EXISTS results_model ON results(model_name, started, uid);
CREATE INDEX IF NOT EXISTS results_backend ON results(backend, started, uid);
CREATE INDEX IF NOT EXISTS results_platform ON results(platform, started, uid);
CREATE INDEX IF NOT EXISTS results_campaign ON results(campaign, started, uid);
CREATE INDEX IF NOT EXISTS results_study ON results(study, started, uid);
CREATE TABLE IF NOT EXISTS invalid (file TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL, size INTEGER NOT NULL, problem TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS dirs (shard TEXT PRIMARY KEY, stamp TEXT NOT NULL);
"""


def connect(path) -> sqlite3.Connection:
    """Open (creating or re-creating when of another format) the index at path.

    A cache of the JSON files: synchronous NORMAL (no fsync per commit in WAL mode) cannot
    corrupt it on a crash, and a commit lost to a power cut is redone by a reindex."""
    return sqlcache.connect(path, INDEX_FORMAT, _SCHEMA, key="format", synchronous="NORMAL")


def write(db: sqlite3.Connection, statements) -> None:
    """Run (sql, args) pairs in one short IMMEDIATE transaction."""
    db.execute("BEGIN IMMEDIATE")
    try:
        for sql, args in statements:
            db.execute(sql, args)
        db.execute("COMMIT")
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise


def _name(ref: str | None) -> str | None:
    """'model:lenet-digits@1.0.0' -> 'lenet-digits'."""
    return ref.split(":", 1)[-1].split("@", 1)[0] if ref else None


def row(summary: dict, rel: str, st: os.stat_result) -> tuple:
    """The results row (ROW order) of a record's summary, stored at rel with stat st."""
    values = dict(summary, file=rel, mtime_ns=st.st_mtime_ns, size=st.st_size,
                  solution_name=_name(summary["solution"]), model_name=_name(summary["model"]),
                  dataset_name=_name(summary["dataset"]))
    return tuple(values[c] for c in ROW)


def indexed(rel: str, summary: dict, st: os.stat_result) -> list:
    """Statements recording the valid result at rel."""
    return [(UPSERT, row(summary, rel, st)), ("DELETE FROM invalid WHERE file = ?", (rel,))]


def invalid(rel: str, st: os.stat_result, problem: str) -> list:
    """Statements recording the file rel as invalid (it then has no results row)."""
    return forget(rel) + [("INSERT OR REPLACE INTO invalid VALUES (?, ?, ?, ?)", (rel, st.st_mtime_ns, st.st_size, problem))]


def forget(rel: str) -> list:
    """Statements dropping what the index knows of the file rel (a results row exists only
    for a valid record at record_file(uid): its uid is the file's stem)."""
    statements = [("DELETE FROM invalid WHERE file = ?", (rel,))]
    uid = uid_of_file(rel)
    if uid is not None:
        statements.append(("DELETE FROM results WHERE uid = ?", (uid,)))
    return statements


def _ref_filter(kind: str, value: str) -> tuple[str, str]:
    """('solution_name', 'x') for 'x' or 'solution:x'; ('solution', 'solution:x@1.0') with a version."""
    value = value.strip()
    if value.startswith(kind + ":"):
        value = value[len(kind) + 1:]
    if "@" in value:
        return kind, f"{kind}:{value}"
    return f"{kind}_name", value


def _like(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def where(**filters) -> tuple[str, list]:
    """The WHERE clause (and its arguments) of ResultStore.list's filters."""
    clauses, args = [], []
    for kind in ("solution", "model", "dataset"):
        if filters.get(kind):
            column, value = _ref_filter(kind, filters[kind])
            clauses.append(f"{column} = ?")
            args.append(value)
    # A handful of backends each hold a large share of the rows: with a solution, model
    # or dataset given, '+' keeps SQLite from choosing the backend index over theirs.
    plus = "+" if clauses else ""
    for column in ("backend", "action", "status", "variant", "precision", "split", "campaign", "campaign_job", "study"):
        if filters.get(column):
            clauses.append(f"{plus if column == 'backend' else ''}{column} = ?")
            args.append(filters[column])
    for column in ("threads", "batch_size"):
        if filters.get(column) is not None:
            clauses.append(f"{column} = ?")
            args.append(int(filters[column]))
    if filters.get("pipeline"):  # a sha256 or its first digits
        clauses.append("pipeline LIKE ? ESCAPE '\\'")
        args.append(_like(filters["pipeline"].strip().lower()) + "%")
    if filters.get("platform"):
        p = filters["platform"].strip()
        clauses.append("(platform LIKE ? ESCAPE '\\' OR platform_description LIKE ? ESCAPE '\\')")
        args += [_like(p.lower()) + "%", "%" + _like(p) + "%"]
    if filters.get("since"):
        since = since_utc(filters["since"])
        if since is None:
            raise CRError(f"--since {filters['since']!r} is not an ISO date or time",
                          hint="e.g. --since 2026-11-30 (local time) or --since 2026-11-30T12:00:00Z")
        clauses.append("started >= ?")
        args.append(since)
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", args
