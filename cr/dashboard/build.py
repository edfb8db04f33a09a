"""cr dashboard build: result records -> a static site that works from file:// and offline.

    from cr.dashboard import build
    info = build("~/.local/share/reefkit/results", "site/")   # BuildInfo
    # site/index.html, app.js, lib/, views/, style.css, vendor/..., data/index.js (leaderboard),
    # data/runs.js (every run), data/results/<bundle>.js (the records, loaded on demand)

Data travels as scripts (``window.CR_DATA_INDEX = JSON.parse('...')``) because browsers
refuse fetch() of local files. The first page needs only data/index.js (one row per
configuration, strings stored once); a detail page loads the one bundle that holds its
record.

Detail files are bundles of about BUNDLE_SIZE records, chosen by a hash of the record
file's path: creating 100,000 small files costs more than everything else the build
does (and a site of 3,000 files publishes faster than one of 100,000), while a bundle is
still small enough to load in a few milliseconds. The output is deterministic: the same
records give the same bytes. A rebuild rewrites only the bundles whose record files
changed (size and mtime, kept in .cr-dashboard/) and the index.

A build survives being killed and being run twice at once. Its first write into a new
folder is the marker .cr-dashboard.json (saying "not complete"), so a folder left by a
killed build is still recognised as cr's, and the next build into it reads everything
again; the marker says "complete" only once everything else is written. While a build
writes, it holds an exclusive lock on .cr-dashboard/build.lock (flock: the kernel drops
it when the process dies, so a killed build never leaves it held); a second build into
the same folder waits for it, then builds. Worker processes end with the build (see
_worker_init). Every temporary file of a build is inside the folder (``*.<pid>.tmp``
beside its target) and the next build sweeps those a killed one left.
"""
from __future__ import annotations

import json
import os
import sys
import time
import zlib
from dataclasses import asdict, dataclass
from operator import itemgetter
from pathlib import Path

from ..errors import CRError
from ..events import reporter
from ..fsutil import atomic_file
from . import records
from .leaderboard import Leaderboard

# Bump when records.py writes different detail files or summaries: what older builds left is then redone.
CACHE_FORMAT = 7  # 3: rows carry their configuration and dataset; 4: and detection AP; 5: and the tasks' metrics;
# 6: sealed states (records.seal_state) keyed by inode too, and the marker's fingerprints of inputs and outputs;
# 7: detail files hold compact records and side-file samples as byte planes ("samples_planes")
CACHE_FILE = ".cr-dashboard.json"  # marks a folder as a dashboard cr built, and what it copied there
STATE_DIR = ".cr-dashboard"  # <bundle>.json: the files of each bundle at the last build
LOCK_FILE = "build.lock"  # in STATE_DIR: held by the build writing into the folder
BUNDLE_SIZE = 32  # record files per detail file, on average
PARALLEL_MIN = 2000  # below this many files to read, worker processes cost more than they save
JOB_FILES = 512  # record files per worker task
KEY_FILE = "dashboard-cache.key"  # in CR_HOME: the key that seals the build's saved states (_cache_key)


@dataclass
class BuildInfo:
    out_dir: str
    index_html: str
    results: int  # records on the site
    skipped: int  # files that were not usable records (each warned about)
    rows: int  # leaderboard rows
    processed: int  # record files read this time
    reused: int  # record files whose bundle from the last build was still right
    rejected: int  # saved bundle states of the last build that did not verify (corrupt or edited): read again
    bundles: int  # detail files
    workers: int
    seconds: float
    phases: dict  # seconds spent finding files, reading records, building the index, writing the rest

    def to_dict(self) -> dict:
        return asdict(self)


def build(results, out_dir, *, workers: int | None = None, incremental: bool = True) -> BuildInfo:
    """Build the dashboard for the result records under results into out_dir.

    results is a directory (searched recursively for *.json; LoadGen log folders and
    hidden files left out), a record file, or a list of those. A file that is not a
    usable record is skipped with a warning naming it. out_dir must be empty, absent or
    a dashboard built before (it holds .cr-dashboard.json); anything else is refused.
    workers: processes reading records (default: one per CPU for large builds).
    """
    import gc

    # Hundreds of thousands of small lists and dicts make the cyclic collector run over
    # and over (2-3x the time of the build); none of them forms a cycle.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _build(results, out_dir, workers, incremental)
    finally:
        if collecting:
            gc.enable()


def _build(results, out_dir, workers: int | None, incremental: bool) -> BuildInfo:
    started = time.perf_counter()
    out = Path(out_dir).expanduser().absolute()
    _check_out_dir(out)
    # Each file's size, mtime and inode tell a rebuild what it can keep; a first build
    # (nothing built in out) reads everything anyway, and its workers stat the files
    # (100,000 stats off the builder's serial path)
    found = _scan(results, skip_dir=out, stats=incremental and (out / CACHE_FILE).exists())  # a bad --results leaves out untouched
    phases = {"scan": time.perf_counter() - started}
    lock = _claim(out)
    try:
        if lock.waited:  # what was added while the other build ran is part of this one
            found = _scan(results, skip_dir=out, stats=incremental)
        phases["wait"] = time.perf_counter() - started - sum(phases.values())
        return _build_locked(out, found, workers, incremental, lock, started, phases)
    finally:
        lock.release()


def _build_locked(out: Path, found: list, workers: int | None, incremental: bool, lock: "_Lock", started: float,
                  phases: dict) -> BuildInfo:
    """The build proper, under the folder's lock."""
    from ..__about__ import __version__

    results_dir, state_dir = out / "data" / "results", out / STATE_DIR
    key = _cache_key()
    previous = _load_meta(out, key)
    stated = all(item[2] is not None for item in found)
    if previous.get("complete") is not True or not stated:
        # the last build into out was killed, failed or cannot be verified: its state is not
        # trusted; or the listing has no stats to compare with it (a build finished between
        # the listing and the lock)
        incremental = False
    count = _bundle_count(len(found))
    # The record files as listed (path, name, mtime_ns, size, inode), this cr and its
    # format: when they are what the last complete build read, it warned about nothing,
    # and the data files are as it left them, that output is this build's byte for byte
    # (a build is deterministic): nothing is read or written but the static files' check.
    inputs = _fingerprint([__version__, CACHE_FORMAT, _code(), count, found]) if stated else None
    if incremental and previous.get("inputs") == inputs and previous.get("warnings") == 0 \
            and previous.get("outputs") == _outputs(out):
        static = _copy_sources(out, previous.get("static") or [])
        if static != previous.get("static"):
            _write_if_changed(out / CACHE_FILE, _marker(key, True, count, static, previous))
        phases["write"] = time.perf_counter() - started - sum(phases.values())
        return BuildInfo(
            out_dir=str(out), index_html=str(out / "index.html"), results=previous["results"], skipped=0,
            rows=previous["rows"], processed=0, reused=len(found), rejected=0, bundles=previous["detail_files"],
            workers=0, seconds=round(time.perf_counter() - started, 3), phases={k: round(v, 3) for k, v in phases.items()})

    # Until the end, the folder is "a dashboard whose last build did not complete".
    _write_if_changed(out / CACHE_FILE, _marker(key, False, None, previous.get("static") or []))
    results_dir.mkdir(parents=True, exist_ok=True)
    by_bundle: dict[str, list] = {}
    for item in found:
        by_bundle.setdefault(_bundle_of(item[1], count), []).append(item)

    # A bundle is read again when any of its files is new, changed or gone, its detail
    # file is not the one its state says was written, or its state does not verify; the
    # state of the others comes from state_dir/<bundle>.json (records.open_state).
    # Temp files here are a killed build's (no other build writes while we hold the lock).
    listed = {results_dir: _listing(results_dir), state_dir: _listing(state_dir)}
    existing = {n[:-3] for n in listed[results_dir] if n.endswith(".js")}
    states = {n[:-5] for n in listed[state_dir] if n.endswith(".json")}
    _sweep_temp_files(out, listed)
    reuse = incremental and previous.get("bundles") == count
    entries, jobs, rejected = {}, [], 0
    for bundle, items in sorted(by_bundle.items()):
        state = None
        if reuse and bundle in states:
            state = _load_state(state_dir, bundle, key)
            if state is None:
                rejected += 1
                reporter().warning(f"{state_dir / bundle}.json: the build's saved state does not verify (corrupt or"
                                   " edited); reading its records again")
        if state is not None and _still_right(state, items, bundle in existing and _stat(results_dir / f"{bundle}.js")):
            files = state["files"]
            for item in items:
                entries[item[0]] = files[item[0]]
            continue
        jobs.append((bundle, items))

    workers = _workers(workers, sum(len(items) for _, items in jobs))
    # Records join the leaderboard bundle by bundle, in bundle order, as they are read: the
    # per-record work here overlaps the workers'. Of two records with one uid, the first in
    # that order is shown.
    board, first_path, shown, warnings = Leaderboard(), {}, 0, 0
    read = _run(jobs, str(results_dir), str(state_dir), workers, lock.fd, key)
    try:
        dirty = {bundle for bundle, _ in jobs}
        for bundle in sorted(by_bundle):
            items = by_bundle[bundle]
            if bundle in dirty:
                for item, entry in zip(items, next(read)):
                    entries[item[0]] = entry
            for item in items:
                path = item[0]
                summary, why = entries[path][2], entries[path][3]
                if summary is None:
                    reporter().warning(f"{path}: skipped, {why}")
                    warnings += 1
                    continue
                uid = summary[0]
                if uid in first_path:
                    reporter().warning(f"{path}: skipped, its uid {uid} is already used by {first_path[uid]}")
                    warnings += 1
                    continue
                first_path[uid] = path
                board.add(summary)
                shown += 1
    finally:
        read.close()  # on an error or Ctrl-C here: the workers are stopped now, not when the generator is collected
    phases["read"] = time.perf_counter() - started - sum(phases.values())

    # detail and state files of bundles whose files are gone, or numbered for another bundle count
    live = {e[2][records.F["loc"]] for e in entries.values() if e[2] is not None}
    for stale in sorted(existing - live):
        _unlink(results_dir / f"{stale}.js")
    for stale in sorted(states - set(by_bundle)):
        _unlink(state_dir / f"{stale}.json")

    meta = {"cr_version": __version__, "generated": max(board.newest_on.values(), key=lambda s: s[records.F["time"]],
                                                            default=[""] * len(records.F))[records.F["time"]]}
    index, runs = board.result(meta)
    phases["index"] = time.perf_counter() - started - sum(phases.values())
    _write_if_changed(out / "data" / "index.js", _script("CR_DATA_INDEX", index))
    _write_if_changed(out / "data" / "runs.js", _script("CR_DATA_RUNS", runs))
    static = _copy_sources(out, previous.get("static") or [])
    if inputs is None:  # the listing as the next build's will be, with the stats the workers took
        stats = list(map(entries.__getitem__, map(itemgetter(0), found)))  # (map and zip: C loops, not a comprehension)
        inputs = _fingerprint([__version__, CACHE_FORMAT, _code(), count,
                               list(zip(map(itemgetter(0), found), map(itemgetter(1), found), map(itemgetter(0), stats),
                                        map(itemgetter(1), stats), map(itemgetter(4), stats)))])
    done = {"inputs": inputs, "outputs": _outputs(out), "warnings": warnings, "results": shown,
            "rows": len(index["rows"]), "detail_files": len(live)}
    _write_if_changed(out / CACHE_FILE, _marker(key, True, count, static, done))  # last: everything before it is written
    phases["write"] = time.perf_counter() - started - sum(phases.values())
    processed = sum(len(items) for _, items in jobs)
    return BuildInfo(
        out_dir=str(out), index_html=str(out / "index.html"), results=shown,
        skipped=sum(1 for e in entries.values() if e[2] is None), rows=len(index["rows"]),
        processed=processed, reused=len(found) - processed, rejected=rejected, bundles=len(live), workers=workers,
        seconds=round(time.perf_counter() - started, 3), phases={k: round(v, 3) for k, v in phases.items()},
    )


def _still_right(state: dict, items: list, detail) -> bool:
    """Whether a bundle's verified state from the last build describes its files as they are
    now (the same paths, each with the same mtime_ns, size and inode) and its detail file is
    the one that build wrote (detail: its [size, mtime_ns, inode] now, or False when missing)."""
    files = state["files"]
    if len(files) != len(items):
        return False
    for path, _, mtime_ns, size, inode in items:
        entry = files.get(path)
        if entry is None or entry[0] != mtime_ns or entry[1] != size or entry[4] != inode:
            return False
    return state.get("detail") == (detail or None)


def _stat(path: Path):
    """[size, mtime_ns, inode] of path, False when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _fingerprint(value) -> str:
    """sha256 of repr(value), for lists and tuples of str and int (deterministic; ~0.17 s
    for the 100,000 tuples of a large listing, a little less than JSON)."""
    import hashlib

    return hashlib.sha256(repr(value).encode("utf-8", "backslashreplace")).hexdigest()


def _code() -> str:
    """sha256 of the source of the modules that decide the site's data (this one, records,
    leaderboard and what records uses from cr.results): a changed builder, even one whose
    version and CACHE_FORMAT were left as they were, is never taken for the last build's."""
    import hashlib

    from ..results import latencies, pareto, significance, summary, traces
    from . import leaderboard

    digest = hashlib.sha256()
    for module in (sys.modules[__name__], records, leaderboard, latencies, pareto, significance, summary, traces):
        try:
            with open(module.__file__, "rb") as f:
                digest.update(f.read())
        except (OSError, TypeError):
            digest.update(os.urandom(16))  # source not readable: never a match
    return digest.hexdigest()


def _outputs(out: Path) -> str:
    """A fingerprint of the generated data files as they are on disk (name, size, mtime_ns,
    inode): any file in data/, data/results or data/traces written, replaced, added or
    removed since changes it."""
    listing = []
    for folder in ("data", "data/results", f"data/{records.TRACES_DIR}"):
        try:
            with os.scandir(out / folder) as it:
                for entry in it:
                    if entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        listing.append((folder, entry.name, st.st_size, st.st_mtime_ns, st.st_ino))
        except OSError:
            continue
    return _fingerprint(sorted(listing))


def _cache_key() -> bytes:
    """The key that seals the build's saved states (records.seal_state) and its marker: 32
    random bytes in CR_HOME/KEY_FILE (mode 0600), made on first use. It lives outside the
    site's folder, so whoever can write that folder (a copy, a checkout, a shared
    directory) cannot make a state that verifies. Where CR_HOME cannot be used, a key for
    this build only: nothing it leaves is trusted, and the next build reads everything."""
    from ..paths import cr_home

    try:
        path = cr_home() / KEY_FILE
        for _ in range(2):
            try:
                with open(path, "rb") as f:
                    key = f.read(64)
                if len(key) == 32:
                    return key
                os.unlink(path)  # damaged: a new key (whatever the old one sealed is read again)
            except FileNotFoundError:
                pass
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                continue  # another build made it first: read that one
            key = os.urandom(32)
            try:
                os.write(fd, key)
            finally:
                os.close(fd)
            return key
    except OSError:
        pass
    return os.urandom(32)


def _marker(key: bytes, complete: bool, bundles: int | None, static: list[str], done: dict | None = None) -> bytes:
    """The text of .cr-dashboard.json. complete: the build that wrote it finished (until then,
    the next build does not trust the state it finds); done: what a complete build read and
    wrote (fingerprints of its inputs and outputs, its counts). Sealed with the states' key."""
    meta = {"format": CACHE_FORMAT,
            "note": "what cr dashboard build wrote here (state of each bundle in .cr-dashboard/); safe to delete",
            "complete": complete}
    if bundles is not None:
        meta["bundles"] = bundles
    meta["static"] = static
    for name in ("inputs", "outputs", "warnings", "results", "rows", "detail_files"):
        if done and name in done:
            meta[name] = done[name]
    meta["seal"] = _seal(key, meta)
    return json.dumps(meta, indent=1).encode("utf-8")


def _seal(key: bytes, meta: dict) -> str:
    return records.seal_state(key, CACHE_FILE, meta).partition(b"\n")[0].rpartition(b" ")[2].decode("ascii")


class _Lock:
    """The exclusive lock of one build on its output folder (see _claim)."""

    def __init__(self, fd: int | None, release, waited: bool) -> None:
        self.fd = fd  # the descriptor holding the flock (None with filelock): worker processes close their copy
        self.release = release
        self.waited = waited


def _claim(out: Path) -> _Lock:
    """Make out a dashboard folder cr recognises, then take its lock (waiting for another build).

    The marker comes first: created only when missing (O_EXCL, so a build that got there
    first keeps its own), it makes a folder that a build killed at any later point left
    behind still cr's. The lock is flock(2) on STATE_DIR/LOCK_FILE, which the kernel
    releases when the holder dies, so it never outlives a killed build; the file stays
    (removing it would let a third build lock a new file while a second holds the old one).
    filelock does the same where fcntl is missing (Windows); it is not used on POSIX
    because importing it costs ~25 ms, a tenth of a small build.
    """
    marker, lock_path = out / CACHE_FILE, out / STATE_DIR / LOCK_FILE
    try:
        out.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            pass
        else:
            try:
                os.write(fd, _marker(b"", False, None, []))  # sealed with no key: never verifies
            finally:
                os.close(fd)
        lock_path.parent.mkdir(exist_ok=True)
        try:
            import fcntl
        except ImportError:  # Windows
            fcntl = None
        if fcntl is None:
            from filelock import FileLock, Timeout

            lock = FileLock(str(lock_path))
            try:
                lock.acquire(timeout=0)
                return _Lock(None, lock.release, False)
            except Timeout:
                reporter().info(f"waiting for another build of {out}")
                lock.acquire()
                return _Lock(None, lock.release, True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        raise CRError(f"cannot write {out} ({exc.strerror or exc})", hint="check free disk space and permissions of --out") from None
    waited = False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            reporter().info(f"waiting for another build of {out}")
            waited = True
            fcntl.flock(fd, fcntl.LOCK_EX)  # Ctrl-C interrupts it
    except BaseException:
        os.close(fd)
        raise
    return _Lock(fd, lambda: os.close(fd), waited)  # closing the descriptor releases the lock


def _listing(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []


def _is_temp(name: str) -> bool:
    """<name>.<pid>.tmp: a file being written by _replace or records.write_file."""
    return name.endswith(".tmp") and name[:-4].rpartition(".")[2].isdigit()


def _sweep_temp_files(out: Path, listed: dict) -> None:
    """Delete the temp files a killed build left in out; listed: {folder: its names} already read.
    Called under the lock, so no other build is writing one."""
    for folder, names in listed.items():
        for name in names:
            if _is_temp(name):
                _unlink(folder / name)
    for folder, dirs, files in os.walk(out):
        dirs[:] = [d for d in dirs if Path(folder, d) not in listed]
        for name in files:
            if _is_temp(name):
                _unlink(Path(folder) / name)


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _bundle_count(files: int) -> int:
    """A power of two near files / BUNDLE_SIZE (so a store that grows 2x re-bundles once)."""
    count = 1
    while count * BUNDLE_SIZE < files and count < 65536:
        count *= 2
    return count


def _bundle_of(name: str, count: int) -> str:
    return f"{zlib.crc32(name.encode('utf-8', 'surrogateescape')) & (count - 1):04x}"


def _script(name: str, data) -> bytes:
    """window.NAME = JSON.parse('...'): engines parse a JSON string much faster than the same
    data as an object literal. The text is ASCII with '<' and '>' escaped (js_literal); in
    the single-quoted string only backslashes and quotes need escaping."""
    text = records.js_literal(data).replace("\\", "\\\\").replace("'", "\\'")
    return f"window.{name}=JSON.parse('{text}');\n".encode("ascii")


def _check_out_dir(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise CRError(f"{out} is a file, not a directory", hint="choose a directory for the dashboard with --out")
    # A folder holding nothing but cr's own state (its marker lost) is cr's too.
    if out.is_dir() and not (out / CACHE_FILE).is_file() and any(not n.startswith(STATE_DIR) for n in os.listdir(out)):
        raise CRError(
            f"{out} is not empty and holds no dashboard built by cr ({CACHE_FILE} is missing); refusing to write into it",
            hint="choose an empty or new directory with --out",
        )


def _scan(results, skip_dir: Path, stats: bool = True) -> list[tuple[str, str, int | None, int | None, int | None]]:
    """(path, name shown on the site, mtime_ns, size, inode) of every candidate record file,
    sorted by path; without stats, the files found in folders have None for the last three."""
    roots = results if isinstance(results, (list, tuple)) else [results]
    found: dict[str, tuple] = {}
    for root in roots:
        root = Path(root).expanduser().absolute()
        if root.is_file():
            st = root.stat()
            found[str(root)] = (str(root), root.name, st.st_mtime_ns, st.st_size, st.st_ino)
        elif root.is_dir():
            _walk(str(root), len(os.path.join(str(root), "")), str(skip_dir), found, stats)
        else:
            raise CRError(f"results path {root} does not exist", hint="pass a directory of result JSON files with --results")
    return [found[p] for p in sorted(found)]


def _walk(folder: str, prefix: int, skip_dir: str, found: dict, stats: bool) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError as exc:
        reporter().warning(f"{folder}: skipped, cannot list it ({exc.strerror or exc})")
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue  # hidden files, and the temp files of writes in progress
        if entry.is_dir(follow_symlinks=False):
            if entry.name.endswith(".loadgen") or entry.path == skip_dir:
                continue  # MLPerf LoadGen logs beside a record; the dashboard itself
            _walk(entry.path, prefix, skip_dir, found, stats)
        elif entry.name.endswith(".json") and entry.is_file():  # d_type: no stat but for a symlink
            if stats:
                st = entry.stat()
                found[entry.path] = (entry.path, entry.path[prefix:].replace(os.sep, "/"), st.st_mtime_ns, st.st_size,
                                     st.st_ino)
            else:
                found[entry.path] = (entry.path, entry.path[prefix:].replace(os.sep, "/"), None, None, None)


def _workers(asked: int | None, files: int) -> int:
    if asked is not None:
        return max(1, asked)
    if files < PARALLEL_MIN:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8))


def _run(jobs: list, results_dir: str, state_dir: str, workers: int, lock_fd: int | None, key: bytes):
    """records.write_bundle for each (bundle, items) job; yields each bundle's outcomes in
    job order, as soon as they are there. In worker processes when asked; lock_fd: the
    build's lock, which forked workers must not keep."""
    # progress in bytes of record files read (the CLI shows MB); in files where the listing
    # did not stat them
    progress, done = reporter().progress, 0
    sized = all(i[3] is not None for _, items in jobs for i in items)
    unit = "B" if sized else "files"

    def amount(task: list) -> int:
        return sum(i[3] if sized else 1 for _, items in task for i in items)

    total = amount(jobs)
    tasks, task = [], []
    for job in jobs:  # whole bundles per task, about JOB_FILES files each
        task.append(job)
        if sum(len(items) for _, items in task) >= JOB_FILES:
            tasks.append(task)
            task = []
    if task:
        tasks.append(task)
    if workers <= 1 or len(tasks) < 2:
        for task in tasks:
            yield from records.write_bundles(task, results_dir, state_dir, key)
            done += amount(task)
            progress("reading results", done, total, unit)
        return
    pooled = _in_workers(tasks, results_dir, state_dir, workers, lock_fd, key)
    try:
        for task, outcomes in zip(tasks, pooled):
            yield from outcomes
            done += amount(task)
            progress("reading results", done, total, unit)
    finally:
        pooled.close()  # when this generator is closed early: stops the workers now


def _in_workers(tasks: list, results_dir: str, state_dir: str, workers: int, lock_fd: int | None, key: bytes):
    """records.write_bundles(task) for each task in worker processes; yields the outcomes in task order.

    A pipe per worker. Forked workers have the task list already, so they are sent task
    numbers, two ahead (a few bytes: the builder never blocks on a worker busy sending
    its result); other workers are sent a task only when they wait for one. Not
    concurrent.futures or multiprocessing.Pool, because a build must be stoppable at
    once and must fail, not hang, when a worker dies: ProcessPoolExecutor cannot stop the
    tasks it runs before Python 3.14 (shutdown lets them finish, and killing its
    processes can leave its feeder thread blocked for good on a full pipe), and Pool
    waits forever for the task of a worker that was killed. On any exception here or in
    the caller (Ctrl-C, an error, the generator closed) the workers are killed before it
    propagates.
    """
    import multiprocessing
    from collections import deque
    from multiprocessing.connection import wait

    method = _start_method()
    context = multiprocessing.get_context(method)
    forked = method == "fork"
    ahead = 2 if forked else 1
    processes, sent, finished, queue = [], {}, {}, iter(range(len(tasks)))
    try:
        for _ in range(min(workers, len(tasks))):
            here, there = context.Pipe()
            process = context.Process(target=_worker, name="cr-dashboard-build", daemon=True, args=(
                there, tasks if forked else None, results_dir, state_dir, os.getpid(), forked, lock_fd if forked else None,
                key))
            process.start()
            there.close()
            processes.append((process, here))
            sent[here] = deque()  # task numbers sent to that worker, oldest first (it answers in order)
        sentinels = [p.sentinel for p, _ in processes]
        for want in range(len(tasks)):
            while want not in finished:
                for conn, numbers in sent.items():
                    while len(numbers) < ahead:
                        number = next(queue, None)
                        if number is None:
                            break
                        try:
                            conn.send(number if forked else tasks[number])
                        except OSError:
                            raise _worker_died() from None
                        numbers.append(number)
                ready = wait([c for c, numbers in sent.items() if numbers] + sentinels)
                answered = [c for c in ready if c in sent]
                for conn in answered:
                    try:
                        ok, outcome = conn.recv()
                    except EOFError:
                        raise _worker_died() from None
                    if not ok:
                        raise outcome  # what write_bundles raised in the worker (a write error, ...)
                    finished[sent[conn].popleft()] = outcome
                if not answered:  # only sentinels: a worker ended, though none ends before it is told to
                    raise _worker_died()
            yield finished.pop(want)
        for _, conn in processes:
            try:
                conn.send(None)  # done
            except OSError:
                pass  # it ended already; all its work is in
        for process, _ in processes:
            process.join()
    except BaseException:
        for process, _ in processes:
            try:
                process.kill()
            except (OSError, ValueError):
                pass  # already gone
        for process, _ in processes:
            process.join(5)
        raise
    finally:
        for _, conn in processes:
            conn.close()


def _worker_died() -> CRError:
    return CRError("a worker process of the dashboard build ended unexpectedly (killed, or out of memory)",
                   hint="run the build again")


def _worker(conn, tasks: list | None, results_dir: str, state_dir: str, builder: int, forked: bool,
            lock_fd: int | None, key: bytes) -> None:
    """A worker process: tasks (or their numbers in tasks) in through conn, (True, outcomes) or
    (False, the exception) out, in order; None ends it."""
    _worker_init(builder, forked, lock_fd)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return  # the builder closed its end
        if task is None:
            return
        try:
            answer = (True, records.write_bundles(tasks[task] if tasks is not None else task, results_dir, state_dir, key))
        except Exception as exc:
            answer = (False, exc)
        conn.send(answer)


def _worker_init(builder: int, forked: bool, lock_fd: int | None) -> None:
    """First thing in each worker process: end when the build ends, leave Ctrl-C to the build.

    A worker must not outlive a build killed with kill -9 (it would read on, write into
    the folder while the next build does, hold the folder's lock through the descriptor
    it inherited, and could wait forever for its next task). On Linux a forked worker asks the kernel, prctl(PR_SET_PDEATHSIG),
    for SIGKILL the moment its parent, the builder, ends. Otherwise (a fork server's or
    spawned worker, whose parent is not the builder or whose builder may run threads; or
    no prctl: macOS, the BSDs, Windows) a daemon thread waits on multiprocessing's parent
    sentinel, a pipe that closes when the builder ends, and ends the process then: within
    milliseconds, or once the record being parsed is done. The forked copy of the lock's
    descriptor is closed, so only the builder holds the lock.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group; the builder stops us
    if lock_fd is not None:
        try:
            os.close(lock_fd)
        except OSError:
            pass
    if forked and _die_with_parent():
        if os.getppid() != builder:
            os._exit(1)  # the builder ended before prctl took effect: no signal is coming
        return
    import multiprocessing
    import threading

    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), name="cr-exit-with-build", daemon=True).start()


def _die_with_parent() -> bool:
    """prctl(PR_SET_PDEATHSIG, SIGKILL) on Linux; False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        import signal

        return ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def _exit_with(parent) -> None:
    parent.join()  # returns when the parent's sentinel closes: the builder has ended
    os._exit(1)


def _start_method() -> str:
    """fork where it is safe (no other thread in this process): it starts at once and, unlike
    forkserver and spawn, does not re-run the caller's __main__ module in each worker."""
    import multiprocessing
    import threading

    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods and threading.active_count() == 1:
        return "fork"  # (on macOS fork is unsafe with system frameworks loaded)
    return "forkserver" if "forkserver" in methods else "spawn"


def _write_if_changed(path: Path, data: bytes) -> bool:
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    _replace(path, data)
    return True


def _replace(path: Path, data: bytes) -> None:
    """Write through a temp file and rename (fsutil.atomic_file), so a reader never sees half a file;
    the temp file is named <...>.<pid>.tmp, which _sweep_temp_files knows."""
    with atomic_file(path, suffix=f".{os.getpid()}.tmp", hint="check free disk space and permissions of --out") as f:
        f.write(data)


def _copy_sources(out: Path, previous: list[str]) -> list[str]:
    """Copy the site's static files (everything in dashboard/ but its README) into out; remove ones no longer shipped."""
    from ..paths import data_dir

    source = data_dir("dashboard")
    copied = []
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            src = Path(folder) / name
            rel = src.relative_to(source).as_posix()
            if rel == "README.md" or name.startswith(".") or rel.startswith("data/"):
                continue  # never let a stray source file shadow the generated data
            _write_if_changed(out / rel, src.read_bytes())
            copied.append(rel)
    for rel in sorted(set(previous) - set(copied)):
        if not isinstance(rel, str) or rel.startswith(("/", "\\")) or ".." in rel.replace("\\", "/").split("/"):
            continue  # never outside out, whatever a damaged or edited marker lists
        try:
            (out / rel).unlink()
        except OSError:
            pass
    return copied


def _load_meta(out: Path, key: bytes) -> dict:
    """What the last build into out recorded in .cr-dashboard.json: {} when unreadable or of
    another format; only its list of static files when not sealed with key (then nothing
    else the last build left is trusted)."""
    try:
        with open(out / CACHE_FILE, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT:
        return {}
    import hmac

    seal = meta.pop("seal", None)
    if not isinstance(seal, str) or not hmac.compare_digest(seal, _seal(key, meta)):
        static = meta.get("static")
        return {"static": static} if isinstance(static, list) and all(isinstance(n, str) for n in static) else {}
    return meta


def _load_state(state_dir: Path, bundle: str, key: bytes) -> dict | None:
    """{"detail": [size, mtime_ns, inode] of its detail file or None, "files": path ->
    [mtime_ns, size, summary, why skipped, inode]} of a bundle at the last build; None when
    unreadable or when it does not verify (records.open_state)."""
    try:
        with open(state_dir / f"{bundle}.json", "rb") as f:
            blob = f.read()
    except OSError:
        return None
    return records.open_state(key, bundle, blob)
