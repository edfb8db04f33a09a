"""cr pack: a solution and everything it needs as one deterministic, verifiable zip.

Every file is read once: streamed into the zip while its sha256 is computed, and compared
with the sha256 its component's meta lists. A mismatch (or a file that changes while it
is read) aborts the pack and removes the partial archive: an archive never holds a file
its meta does not vouch for. The lock and the result records travel as copies without
the packing host's paths (hostpaths.py). The partial archive is named after this process
(.NAME.cr-pack-PID-RANDOM.tmp beside the output), so that the next pack into the folder
deletes one a kill left behind.
"""
from __future__ import annotations

import hashlib
import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..__about__ import __version__
from ..errors import NotFound
from ..events import reporter
from ..fsutil import atomic_file
from .collect import Item, check_lock, collect, exclusions, file_plan
from .hostpaths import Scrubber
from .format import (
    CHUNK, COMPRESSLEVEL, DATE_TIME, FILE_MODE, FORMAT, LOCK_FILE, MANIFEST, REPO_FILE, RESULTS_DIR,
    ArchiveError, file_name, is_sha256, manifest_bytes, record_bytes, stem, unsafe_name,
)

_UID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


@dataclass
class Entry:
    """One file of the archive: its bytes (data) or a file to stream (path), and the
    sha256 it must have (None: whatever it has, e.g. a meta or a record)."""

    name: str
    data: bytes | None = None
    path: Path | None = None
    sha256: str | None = None
    owner: str = ""  # what to name when it does not match (a component ref, a result)

    def size(self) -> int:
        return len(self.data) if self.data is not None else os.stat(self.path).st_size


def pack(
    solution_ref: str,
    output: str | Path | None = None,
    lock: str | Path | dict | None = None,
    results: list[dict] | list[str | Path] | None = None,
) -> Path:
    """Write the archive of a solution and return its path.

    output: a file, or a directory to put NAME-VERSION.cr.zip in (default: the current
    directory). lock: the lock the solution was benchmarked with (a lock file or dict).
    results: reference result records (dicts) or paths of result JSON files; a record
    whose raw latencies live in a side file must be given as a path (the side file is
    found beside it). CRError when something needed is missing or does not match.
    """
    from ..store.catalog import open_index
    from ..store.catalog import component_sha256

    ref = solution_ref if ":" in str(solution_ref) else f"solution:{solution_ref}"
    sweep_partials(_output_folder(output))  # what a killed pack into this folder left behind
    lock_doc = _read_lock(lock)
    index = open_index()
    try:
        items = collect(str(ref), index, lock_doc)
    finally:
        index.close()
    if lock_doc is not None:
        check_lock(lock_doc, items)
    excluded = exclusions(items)
    solution = items[0]
    scrub = Scrubber([p for item in items for p in list(item.source_dir.parents)[:3]])
    lock_data = record_bytes(scrub(lock_doc)) if lock_doc is not None else None

    entries = [Entry(f"{item.arcdir}/meta.json", data=item.meta_bytes, owner=item.ref) for item in items]
    for item in items:
        entries += [Entry(name, path=src, sha256=sha, owner=item.ref) for name, src, sha in file_plan(item)]
    repo_name = stem(solution.name, solution.version)
    entries.append(Entry(REPO_FILE, data=record_bytes(_repo_meta(solution, repo_name))))
    if lock_data is not None:
        entries.append(Entry(LOCK_FILE, data=lock_data, owner="the lock"))
    result_names = []
    for entry in _result_entries(results or [], solution, scrub):
        entries.append(entry)
        if entry.name.endswith(".json"):
            result_names.append(entry.name)
    entries.sort(key=lambda e: e.name)
    _check_unique(entries)

    manifest = {
        "format": FORMAT,
        "created_by": f"reefkit {__version__}",
        "solution": {"ref": solution.ref, "name": solution.name, "version": solution.version, "uid": solution.uid},
        "repo": repo_name,
        "components": [
            {"ref": i.ref, "uid": i.uid, "path": i.arcdir, "sha256": component_sha256(i.meta)} for i in items
        ],
        "excluded": excluded,
        "lock": LOCK_FILE if lock_data is not None else None,
        "results": sorted(result_names),
        "files": [],
    }
    target = _output_path(output, solution)
    _write(target, entries, manifest, f"pack {solution.name}")
    return target


def _repo_meta(solution: Item, name: str) -> dict:
    uid = hashlib.sha256(f"reefkit-archive:{solution.uid}:{solution.version}".encode()).hexdigest()[:16]
    return {
        "name": name,
        "uid": uid,
        "version": solution.version,
        "description": f"Solution archive of {solution.ref} (cr pack; see manifest.json)",
    }


def _read_lock(lock) -> dict | None:
    """The lock given (a dict or a lock file), checked for shape; None without one.

    What travels is a copy without host paths (hostpaths.py): the lock names this
    machine's interpreter and prefixes, which mean nothing where the archive goes.
    """
    from ..jsonio import load_file
    from ..resolve.lock import LOCK_FORMAT

    if lock is None:
        return None
    if isinstance(lock, dict):
        doc, where = lock, "the lock given"
    else:
        path = Path(lock)
        if not path.is_file():
            raise NotFound(f"lock file {path} does not exist", hint="write one with cr resolve solution:NAME -o FILE")
        doc, where = load_file(path), f"lock file {path}"
    if not isinstance(doc, dict) or doc.get("format") != LOCK_FORMAT or not isinstance(doc.get("software"), list):
        raise ArchiveError(f"{where} is not a reefkit lock of format {LOCK_FORMAT}", hint="give a lock written by cr resolve")
    return doc


def _result_entries(results, solution: Item, scrub) -> list[Entry]:
    """The entries of the reference results: each record (a copy without host paths) and
    the raw latencies file beside a record that has one (byte for byte: its sha256)."""
    from ..jsonio import InvalidJSON, loads, read_file

    out = []
    for given in results:
        if isinstance(given, dict):
            record, base = given, None
            where = f"result {given.get('uid', '?')}"
            if isinstance(given.get("path"), str):
                base = Path(given["path"]).parent
        else:
            path = Path(given)
            where = f"result file {path}"
            if not path.exists():
                raise NotFound(f"{where} does not exist", hint="give the path of a result record (JSON)")
            try:
                record = loads(read_file(path, where=where), where, parse_constant=float)  # NaN as Python writes it
            except InvalidJSON as exc:
                raise ArchiveError(f"cannot read {where} ({exc.message})", hint="give the path of a result record (JSON)") from None
            base = path.parent
        if not isinstance(record, dict):
            raise ArchiveError(f"{where} is not a result record (a JSON object)")
        uid = record.get("uid")
        if not isinstance(uid, str) or not _UID.match(uid):
            raise ArchiveError(f"{where} has no usable uid (found {uid!r})", hint="give records written by cr benchmark / cr validate")
        _check_result_solution(record, solution, where)
        out.append(Entry(f"{RESULTS_DIR}/{uid}.json", data=record_bytes(scrub(record)), owner=where))
        raw = record.get("raw") if isinstance(record.get("raw"), dict) else {}
        side = raw.get("latencies_ns_file")
        if isinstance(side, str):
            if unsafe_name(side) or "/" in side:
                raise ArchiveError(f"{where} names an unsafe side file {side!r}")
            if base is None:
                raise ArchiveError(f"{where} keeps its latencies in {side}, which can only be found from the record's path", hint="pass the record's path instead of the record")
            src = base / side
            if not src.is_file():
                raise NotFound(f"{where}: its latencies file {src} is missing")
            sha = raw.get("sha256") if is_sha256(raw.get("sha256")) else None
            out.append(Entry(f"{RESULTS_DIR}/{side}", path=src, sha256=sha, owner=where))
    return out


def _check_result_solution(record: dict, solution: Item, where: str) -> None:
    comps = record.get("components")
    if not isinstance(comps, list):
        return
    solutions = [c.get("ref") for c in comps if isinstance(c, dict) and str(c.get("ref", "")).startswith("solution:")]
    if solutions and solution.ref not in solutions:
        raise ArchiveError(f"{where} is a result of {solutions[0]}, not of {solution.ref}", hint="give results of the solution being packed")


def _check_unique(entries: list[Entry]) -> None:
    from .format import name_key

    seen: dict[str, Entry] = {}
    for e in entries:
        key = name_key(e.name)
        if key in seen:
            raise ArchiveError(f"two files would be stored as {e.name} ({seen[key].owner or 'cr'} and {e.owner or 'cr'})", hint="give results with distinct uids")
        seen[key] = e


def _output_path(output, solution: Item) -> Path:
    name = file_name(solution.name, solution.version)
    if output is None:
        return Path.cwd() / name
    out = Path(output).expanduser().absolute()
    return out / name if out.is_dir() or _names_a_dir(output) else out


def _names_a_dir(output) -> bool:
    """-o dist/ : a folder, made if needed (not a file named dist)."""
    text = str(output)
    return text.endswith(("/", os.sep))


def _output_folder(output) -> Path:
    """The folder the archive (and its partial file) will be written in."""
    if output is None:
        return Path.cwd()
    out = Path(output).expanduser().absolute()
    return out if out.is_dir() or _names_a_dir(output) else out.parent


# The partial archive: .NAME.cr-pack-PID-RANDOM.tmp beside the output (the final rename
# must stay on one file system), named after the process writing it, so that a pack into
# the same folder deletes the ones whose process is gone (killed: kill -9, power loss).
_PARTIAL = re.compile(r"^\.(?P<name>.+)\.cr-pack-(?P<pid>\d+)-[0-9a-f]+\.tmp$")


def _partial_prefix(target: Path) -> str:
    return f".{target.name}.cr-pack-{os.getpid()}-"


def sweep_partials(folder: Path) -> list[str]:
    """Delete the partial archives in folder whose packing process no longer exists; their names."""
    from ..scratch import alive

    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _PARTIAL.match(entry.name)
        if not m or int(m.group("pid")) == os.getpid() or alive(int(m.group("pid"))):
            continue
        try:
            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                os.unlink(entry.path)
                removed.append(entry.name)
        except OSError:
            continue
    return removed


def _zipinfo(name: str, size: int) -> zipfile.ZipInfo:
    """The same header for every entry but its name and size: nothing of this host or time."""
    info = zipfile.ZipInfo(name, DATE_TIME)
    info.create_system = 3  # unix, so the mode below means what it says everywhere
    info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    try:
        info.compress_level = COMPRESSLEVEL  # Python >= 3.13
    except AttributeError:
        info._compresslevel = COMPRESSLEVEL  # before: a private slot
    info.file_size = size  # decides zip64 up front (only for entries near 4 GiB)
    return info


def _write(target: Path, entries: list[Entry], manifest: dict, task: str) -> None:
    total = sum(e.size() for e in entries)
    done = 0
    with atomic_file(target, "w+b", prefix=_partial_prefix(target),
                     hint="check free disk space and permissions, or give another place with -o") as raw, \
            zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESSLEVEL) as zf:
        for entry in entries:
            size, sha = _add(zf, entry, lambda n: reporter().progress(task, done + n, total))
            done += size
            manifest["files"].append({"path": entry.name, "size": size, "sha256": sha})
        data = manifest_bytes(manifest)
        with zf.open(_zipinfo(MANIFEST, len(data)), "w") as dst:
            dst.write(data)


def _add(zf: zipfile.ZipFile, entry: Entry, progress) -> tuple[int, str]:
    """Stream one entry into the zip; (size, sha256) once its sha256 matched."""
    h = hashlib.sha256()
    if entry.data is not None:
        with zf.open(_zipinfo(entry.name, len(entry.data)), "w") as dst:
            dst.write(entry.data)
        h.update(entry.data)
        size = len(entry.data)
    else:
        size = 0
        try:
            src = open(entry.path, "rb")
        except OSError as exc:
            raise ArchiveError(f"cannot pack {entry.owner}: cannot read {entry.path} ({exc.strerror or exc})") from None
        with src:
            expected = os.fstat(src.fileno()).st_size
            with zf.open(_zipinfo(entry.name, expected), "w") as dst:
                while True:
                    block = src.read(CHUNK)
                    if not block:
                        break
                    h.update(block)
                    dst.write(block)
                    size += len(block)
                    progress(size)
        if size != expected:
            raise ArchiveError(f"cannot pack {entry.owner}: {entry.path} changed while it was read", hint="run cr pack again when nothing writes to it")
    sha = h.hexdigest()
    if entry.sha256 is not None and sha != entry.sha256:
        rel = entry.name.split("/", 3)[-1] if entry.path is not None and ":" in entry.owner else entry.name
        raise ArchiveError(
            f"cannot pack {entry.owner}: {rel} does not match its sha256 (expected {entry.sha256[:12]}..., found {sha[:12]}...)",
            hint=f"the file changed or is damaged; if the change is intended, record it with cr hash {entry.owner}",
        )
    return size, sha
