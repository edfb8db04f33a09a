"""cr dashboard build: result records -> a static site that works from file:// and offline.

    from cr.dashboard import build
    info = build("~/.local/share/reefkit/results", "site/")   # BuildInfo
    # site/index.html, app.js, style.css, vendor/..., data/index.js (leaderboard),
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
"""
from __future__ import annotations

import json
import os
import sys
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import CRError
from ..events import reporter
from . import records
from .leaderboard import Leaderboard

# Bump when records.py writes different detail files or summaries: what older builds left is then redone.
CACHE_FORMAT = 2
CACHE_FILE = ".cr-dashboard.json"  # marks a folder as a dashboard cr built, and what it copied there
STATE_DIR = ".cr-dashboard"  # <bundle>.json: the files of each bundle at the last build
BUNDLE_SIZE = 32  # record files per detail file, on average
PARALLEL_MIN = 2000  # below this many files to read, worker processes cost more than they save
JOB_FILES = 512  # record files per worker task


@dataclass
class BuildInfo:
    out_dir: str
    index_html: str
    results: int  # records on the site
    skipped: int  # files that were not usable records (each warned about)
    rows: int  # leaderboard rows
    processed: int  # record files read this time
    reused: int  # record files whose bundle from the last build was still right
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
    found = _scan(results, skip_dir=out)  # before anything is written: a bad --results leaves out untouched
    results_dir, state_dir = out / "data" / "results", out / STATE_DIR
    results_dir.mkdir(parents=True, exist_ok=True)
    state_dir.mkdir(exist_ok=True)

    phases = {"scan": time.perf_counter() - started}
    count = _bundle_count(len(found))
    previous = _load_meta(out)
    by_bundle: dict[str, list] = {}
    for item in found:
        by_bundle.setdefault(_bundle_of(item[1], count), []).append(item)

    # A bundle is read again when any of its files is new, changed or gone, or its detail
    # file is missing; the state of the others comes from state_dir/<bundle>.json.
    existing = {n[:-3] for n in os.listdir(results_dir) if n.endswith(".js")}
    states = {n[:-5] for n in os.listdir(state_dir) if n.endswith(".json")}
    reuse = incremental and previous.get("bundles") == count
    entries, jobs = {}, []
    for bundle, items in sorted(by_bundle.items()):
        state = _load_state(state_dir, bundle) if reuse and bundle in states else None
        if state is not None and len(state) == len(items) and all(
                p in state and state[p][0] == m and state[p][1] == s for p, _, m, s in items):
            if bundle in existing or all(state[p][2] is None for p, _, _, _ in items):
                for path, _, _, _ in items:
                    entries[path] = state[path]
                continue
        jobs.append((bundle, items))

    workers = _workers(workers, sum(len(items) for _, items in jobs))
    # Records join the leaderboard bundle by bundle, in bundle order, as they are read: the
    # per-record work here overlaps the workers'. Of two records with one uid, the first in
    # that order is shown.
    board, first_path, shown = Leaderboard(), {}, 0
    read = iter(_run(jobs, str(results_dir), str(state_dir), workers))
    dirty = {bundle for bundle, _ in jobs}
    for bundle in sorted(by_bundle):
        items = by_bundle[bundle]
        if bundle in dirty:
            outcomes = next(read)
            for (path, _name, mtime_ns, size), (summary, why) in zip(items, outcomes):
                entries[path] = [mtime_ns, size, summary, why]
        for path, _name, _, _ in items:
            summary, why = entries[path][2], entries[path][3]
            if summary is None:
                reporter().warning(f"{path}: skipped, {why}")
                continue
            uid = summary[0]
            if uid in first_path:
                reporter().warning(f"{path}: skipped, its uid {uid} is already used by {first_path[uid]}")
                continue
            first_path[uid] = path
            board.add(summary)
            shown += 1
    phases["read"] = time.perf_counter() - started - sum(phases.values())

    # detail and state files of bundles whose files are gone, or numbered for another bundle count
    live = {e[2][records.F["loc"]] for e in entries.values() if e[2] is not None}
    for stale in sorted(existing - live):
        _unlink(results_dir / f"{stale}.js")
    for stale in sorted(states - set(by_bundle)):
        _unlink(state_dir / f"{stale}.json")

    from ..__about__ import __version__

    meta = {"cr_version": __version__, "generated": max(board.newest_on.values(), key=lambda s: s[records.F["time"]],
                                                            default=[""] * len(records.F))[records.F["time"]]}
    index, runs = board.result(meta)
    phases["index"] = time.perf_counter() - started - sum(phases.values())
    _write_if_changed(out / "data" / "index.js", _script("CR_DATA_INDEX", index))
    _write_if_changed(out / "data" / "runs.js", _script("CR_DATA_RUNS", runs))
    static = _copy_sources(out, previous.get("static") or [])
    _write_if_changed(out / CACHE_FILE, json.dumps(
        {"format": CACHE_FORMAT, "note": "what cr dashboard build wrote here (state of each bundle in .cr-dashboard/); safe to delete",
         "bundles": count, "static": static}, indent=1).encode("utf-8"))
    phases["write"] = time.perf_counter() - started - sum(phases.values())
    processed = sum(len(items) for _, items in jobs)
    return BuildInfo(
        out_dir=str(out), index_html=str(out / "index.html"), results=shown,
        skipped=sum(1 for e in entries.values() if e[2] is None), rows=len(index["rows"]),
        processed=processed, reused=len(found) - processed, bundles=len(live), workers=workers,
        seconds=round(time.perf_counter() - started, 3), phases={k: round(v, 3) for k, v in phases.items()},
    )


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
    if out.is_dir() and not (out / CACHE_FILE).is_file() and any(out.iterdir()):
        raise CRError(
            f"{out} is not empty and holds no dashboard built by cr ({CACHE_FILE} is missing); refusing to write into it",
            hint="choose an empty or new directory with --out",
        )


def _scan(results, skip_dir: Path) -> list[tuple[str, str, int, int]]:
    """(path, name shown on the site, mtime_ns, size) of every candidate record file, sorted by path."""
    roots = results if isinstance(results, (list, tuple)) else [results]
    found: dict[str, tuple] = {}
    for root in roots:
        root = Path(root).expanduser().absolute()
        if root.is_file():
            st = root.stat()
            found[str(root)] = (str(root), root.name, st.st_mtime_ns, st.st_size)
        elif root.is_dir():
            _walk(str(root), len(os.path.join(str(root), "")), str(skip_dir), found)
        else:
            raise CRError(f"results path {root} does not exist", hint="pass a directory of result JSON files with --results")
    return [found[p] for p in sorted(found)]


def _walk(folder: str, prefix: int, skip_dir: str, found: dict) -> None:
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
            _walk(entry.path, prefix, skip_dir, found)
        elif entry.name.endswith(".json") and entry.is_file():
            st = entry.stat()
            found[entry.path] = (entry.path, entry.path[prefix:].replace(os.sep, "/"), st.st_mtime_ns, st.st_size)


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


def _run(jobs: list, results_dir: str, state_dir: str, workers: int):
    """records.write_bundle for each (bundle, items) job; yields each bundle's outcomes in
    job order, as soon as they are there. In worker processes when asked."""
    # progress in bytes of record files read (the CLI shows MB)
    progress, total, done = reporter().progress, sum(i[3] for _, items in jobs for i in items), 0
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
            yield from records.write_bundles(task, results_dir, state_dir)
            done += sum(i[3] for _, items in task for i in items)
            progress("reading results", done, total)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context(_start_method())) as pool:
        for task, part in zip(tasks, pool.map(records.write_bundles, tasks, [results_dir] * len(tasks),
                                              [state_dir] * len(tasks))):
            yield from part
            done += sum(i[3] for _, items in task for i in items)
            progress("reading results", done, total)


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
    """Write through a temp file and rename, so a reader never sees half a file.

    Not fsutil.atomic_write_bytes: its mkstemp files are private (0600), and a site
    is meant to be read by a web server or another user (0644 under the usual umask).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise CRError(f"cannot write {path} ({exc.strerror or exc})", hint="check free disk space and permissions of --out") from None


def _copy_sources(out: Path, previous: list[str]) -> list[str]:
    """Copy the site's static files (index.html, app.js, style.css, vendor/) into out; remove ones no longer shipped."""
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
        try:
            (out / rel).unlink()
        except OSError:
            pass
    return copied


def _load_meta(out: Path) -> dict:
    """What the last build into out recorded in .cr-dashboard.json ({} when unreadable or another format)."""
    try:
        with open(out / CACHE_FILE, encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) and meta.get("format") == CACHE_FORMAT else {}


def _load_state(state_dir: Path, bundle: str) -> dict | None:
    """path -> [mtime_ns, size, summary, why skipped] of a bundle's files at the last build."""
    try:
        with open(state_dir / f"{bundle}.json", "rb") as f:
            state = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None
