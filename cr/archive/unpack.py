"""cr unpack: verify a solution archive completely, then make it a registered repository.

Order of work, so that a bad archive leaves nothing behind:
  1. the zip's directory: nothing before the first entry or after the end record, every
     entry name, type, flag and size, duplicates, overlaps, limits (entries, per entry,
     total, compression ratio of an entry and of the whole archive); the manifest's format
     and that it lists exactly the entries there are, with their sizes;
  2. extraction into a fresh temp directory on the target's file system (CR_HOME/tmp for a
     target inside CR_HOME, else .cr-unpack-PID-* beside it; a later unpack deletes those
     of dead processes), each entry streamed, counted and hashed (its CRC checked by
     zipfile too) and compared with the manifest;
  3. the contents: cr-repo.json, every component meta (schema, place, the sha256 of its
     files), the lock and the result records, all read with the bounded JSON loader; and
     that every file belongs to one of them;
  4. one rename makes the directory visible; then it is registered as a repository.
Any failure before 4 removes the temp directory. Nothing from the archive is executed
or imported: metas and records are parsed as JSON, nothing more.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import zipfile
import zlib
from pathlib import Path

from ..errors import CRError
from ..events import reporter
from .format import (
    CHUNK, LOCK_FILE, MANIFEST, REPO_FILE, RESULTS_DIR, ArchiveError, is_sha256, name_key, parse_json, parse_manifest,
    stem, unsafe_name,
)
from .limits import DEFAULT, Limits, human

_UNSAFE_HINT = "the archive is unsafe or damaged; nothing was unpacked"
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_LOCAL_MAGIC = b"PK\x03\x04"  # what the first bytes of a zip cr pack writes are
_END_MAGIC, _END_RECORD = b"PK\x05\x06", 22  # the end of central directory record, without a comment


def _refuse(where: str, what: str, hint: str = _UNSAFE_HINT) -> ArchiveError:
    return ArchiveError(f"refused {where}: {what}", hint=hint)


def _entry(where: str, name: str, why: str, hint: str = _UNSAFE_HINT) -> ArchiveError:
    return _refuse(where, f"entry {name!r} {why}", hint)


def _limit_hint(option: str, metavar: str = "SIZE") -> str:
    return f"if you trust this archive, raise the limit: cr unpack FILE {option} {metavar} (nothing was unpacked)"


def unpack(path: str | Path, target_repo_dir: str | Path | None = None, limits: Limits | None = None, force: bool = False) -> dict:
    """Verify and unpack an archive into target_repo_dir (default CR_HOME/archives/NAME-VERSION)
    and register it as a repository; returns what was unpacked.

    The same archive (same manifest) already unpacked there is reused as it is. Another
    archive of the same solution name and version is refused unless force, which
    replaces it (and its registration). ArchiveError for any refusal, naming the entry.
    """
    from ..paths import ensure_home
    from ..store import registry

    limits = limits or DEFAULT
    path = Path(path).expanduser()
    where = path.name
    if not path.is_file():
        raise CRError(f"archive {path} does not exist", hint="give the path of a NAME-VERSION.cr.zip file")
    home = ensure_home()
    into = Path(os.path.abspath(Path(target_repo_dir).expanduser())) if target_repo_dir else None
    sweep(home, home / "archives", *([into.parent] if into else []))  # what killed unpacks left behind
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as exc:
        raise _refuse(where, f"it is not a zip archive or it is truncated ({exc})", "download or copy it again; nothing was unpacked") from None
    with zf:
        members = _scan(zf, path, where, limits)
        manifest_data = _read_small(zf, members[MANIFEST], where, limits.max_manifest_bytes)
        manifest = parse_manifest(manifest_data, where)
        listed = _check_listing(members, manifest, where)
        solution = _check_layout(members, manifest, where)
        repo_name = manifest["repo"]
        target = into or home / "archives" / repo_name
        total = sum(members[n].file_size for n in listed)
        info = {
            "archive": str(path.absolute()), "target": str(target), "repo": repo_name, "solution": solution,
            "components": [c["ref"] for c in manifest.get("components", [])], "excluded": manifest.get("excluded", []),
            "lock": str(target / LOCK_FILE) if manifest.get("lock") else None,
            "results": [str(target / r) for r in manifest.get("results", [])],
            "files": len(listed), "bytes": total, "reused": False, "replaced": False, "unregistered": [],
        }
        state = _target_state(target)
        if state == "other":
            raise ArchiveError(f"cannot unpack into {target}: it exists and is not an unpacked reefkit archive",
                               hint="choose a new or empty directory with --into")
        same = state == "archive" and _sha(target / MANIFEST) == hashlib.sha256(manifest_data).hexdigest()
        if state == "archive" and not same and not force:
            raise ArchiveError(
                f"{target} already holds another archive of {solution} (its manifest differs)",
                hint="unpack with --force to replace it, or into another directory with --into",
            )
        stale = _registration_conflicts(registry.registered(home), repo_name, target, force)
        if same:
            info["reused"] = True
        else:
            created = _missing_dirs(target.parent)
            _check_space(target, total, where)
            work = made = None
            try:
                work, made = _work_dir(target, home)
                tree = _extract(zf, members, listed, manifest_data, work, where)
                _check_contents(tree, manifest, listed, where)
                info["replaced"] = _commit(tree, target, state, work)
            except BaseException:
                if work is not None:
                    shutil.rmtree(work, ignore_errors=True)
                for made_dir in created + ([made] if made else []):  # deepest first
                    _remove_empty(made_dir)
                raise
            shutil.rmtree(work, ignore_errors=True)
            if made:
                _remove_empty(made)
    for repo in stale:
        registry.unregister(repo.name, home)
        info["unregistered"].append({"name": repo.name, "path": str(repo.path)})
    if not any(r.name == repo_name and r.path == target for r in registry.registered(home)):
        try:
            registry.add_dir(target, home, origin="archive")  # untrusted until the user says so
        except BaseException:
            if not info["reused"] and not info["replaced"]:
                shutil.rmtree(target, ignore_errors=True)  # nothing half-done stays behind
            raise
    return info


# -- 1. the zip's directory and the manifest --------------------------------------------

def _scan(zf: zipfile.ZipFile, path: Path, where: str, limits: Limits) -> dict[str, zipfile.ZipInfo]:
    """Every entry by name, once each entry passed every check on the directory alone."""
    infos = zf.infolist()
    if infos:
        _check_framing(path, infos, where)
    if len(infos) > limits.max_entries:
        raise _refuse(where, f"it holds {len(infos)} entries, over the limit of {limits.max_entries}", _limit_hint("--max-entries", "N"))
    members: dict[str, zipfile.ZipInfo] = {}
    keys: dict[str, str] = {}
    total = 0
    for info in infos:
        name = info.orig_filename
        why = unsafe_name(name) or _type_problem(info)
        if why is None and info.filename != name:
            why = "contains a NUL character"
        if why is not None:
            raise _entry(where, name, why)
        if name in members:
            raise _entry(where, name, "appears twice (duplicate entries)")
        key = name_key(name)
        if key in keys:
            raise _entry(where, name, f"collides with entry {keys[key]!r} (the same file on a case-insensitive file system)")
        members[name], keys[key] = info, name
        if info.file_size > limits.max_entry_bytes:
            raise _entry(where, name, f"unpacks to {human(info.file_size)}, over the limit of {human(limits.max_entry_bytes)} per entry",
                         _limit_hint("--max-entry-size"))
        if info.file_size >= limits.ratio_min_bytes and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            ratio = info.file_size / max(info.compress_size, 1)
            raise _entry(where, name, f"inflates {ratio:.0f} times (over the limit of {limits.max_ratio:g}): a zip bomb?",
                         _limit_hint("--max-ratio", "R"))
        total += info.file_size
        if total > limits.max_total_bytes:
            raise _entry(where, name, f"takes the archive over the limit of {human(limits.max_total_bytes)} unpacked",
                         _limit_hint("--max-total-size"))
    packed = sum(info.compress_size for info in infos)
    if total >= limits.ratio_min_bytes and total > limits.max_total_ratio * max(packed, 1):
        raise _refuse(where, f"it unpacks to {human(total)} from {human(packed)} compressed, {total / max(packed, 1):.0f} times "
                             f"(over the limit of {limits.max_total_ratio:g} for the whole archive): a zip bomb?",
                      _limit_hint("--max-total-ratio", "R"))
    for name in members:
        parts = name.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in members:
                raise _entry(where, prefix, f"is a file, but entry {name!r} needs it to be a directory")
    _check_overlaps(infos, zf, where)
    if MANIFEST not in members:
        raise _refuse(where, f"it holds no {MANIFEST}: not a reefkit solution archive", "make archives with cr pack; nothing was unpacked")
    return members


def _check_framing(path: Path, infos: list[zipfile.ZipInfo], where: str) -> None:
    """Nothing before the first entry and nothing after the end record: cr pack writes
    neither, and zipfile accepts both (a prefix is how a self-extracting or a polyglot
    file hides a zip; a comment or appended bytes can carry anything)."""
    first = min(info.header_offset for info in infos)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(size - _END_RECORD, 0))
            tail = f.read(_END_RECORD)
    except OSError as exc:
        raise _refuse(where, f"it cannot be read ({exc.strerror or exc})", "download or copy it again; nothing was unpacked") from None
    if first != 0:
        raise _refuse(where, f"it has {first} bytes of other data before its first entry (a prefixed or self-extracting zip; cr pack writes none)")
    if head != _LOCAL_MAGIC:
        raise _refuse(where, "it does not start with a zip entry (a prefixed or crafted zip; cr pack writes none)")
    if len(tail) != _END_RECORD or tail[:4] != _END_MAGIC or tail[20:22] != b"\0\0":
        raise _refuse(where, "it has data after the zip's end record (a comment or appended bytes; cr pack writes none)")


def _type_problem(info: zipfile.ZipInfo) -> str | None:
    mode = info.external_attr >> 16
    kind = stat.S_IFMT(mode)
    if kind == stat.S_IFLNK:
        return "is a symbolic link"
    if kind == stat.S_IFDIR or info.external_attr & 0x10:
        return "is a directory entry (archives hold files only)"
    if kind not in (0, stat.S_IFREG):
        return "is a special file (device, FIFO, socket or link)"
    if info.flag_bits & 0x1:
        return "is encrypted"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        return f"uses compression method {info.compress_type} (archives use deflate or none)"
    return None


def _check_overlaps(infos: list[zipfile.ZipInfo], zf: zipfile.ZipFile, where: str) -> None:
    """Entries whose data overlap (two names for the same bytes: the zip way of a hard
    link, and the trick of the worst zip bombs) or run into the zip's directory."""
    ordered = sorted(infos, key=lambda i: i.header_offset)
    for a, b in zip(ordered, ordered[1:] + [None]):
        encoding = "utf-8" if a.flag_bits & 0x800 else "cp437"
        try:
            name_len = len(a.orig_filename.encode(encoding))
        except UnicodeEncodeError:
            name_len = len(a.orig_filename.encode("utf-8"))
        end = a.header_offset + _LOCAL_HEADER + name_len + a.compress_size
        if b is not None and end > b.header_offset:
            raise _entry(where, b.orig_filename, f"shares its bytes with entry {a.orig_filename!r} (overlapping entries: a hard link or a zip bomb)")
        if b is None and end > getattr(zf, "start_dir", end):
            raise _entry(where, a.orig_filename, "runs into the zip's directory (corrupt or crafted archive)")


def _read_small(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, limit: int) -> bytes:
    if info.file_size > limit:
        raise _entry(where, info.orig_filename, f"is {human(info.file_size)}, over the limit of {human(limit)}")
    try:
        with zf.open(info) as src:
            data = src.read(limit + 1)
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        raise _entry(where, info.orig_filename, f"is corrupt ({exc})") from None
    if len(data) != info.file_size:
        raise _entry(where, info.orig_filename, f"holds {len(data)} bytes, its header says {info.file_size}")
    return data


def _check_listing(members: dict, manifest: dict, where: str) -> dict[str, dict]:
    """The manifest's files by path: exactly the entries there are (less the manifest), same sizes."""
    listed: dict[str, dict] = {}
    for item in manifest["files"]:
        name = item["path"]
        why = unsafe_name(name) or ("is the manifest itself" if name == MANIFEST else None)
        if why is not None:
            raise _refuse(where, f"{MANIFEST} lists {name!r}, which {why}")
        if name in listed:
            raise _refuse(where, f"{MANIFEST} lists {name!r} twice")
        listed[name] = item
    for name, info in members.items():
        if name != MANIFEST and name not in listed:
            raise _entry(where, name, f"is not listed in {MANIFEST}")
    for name, item in listed.items():
        if name not in members:
            raise _entry(where, name, f"is listed in {MANIFEST} but missing from the archive")
        if members[name].file_size != item["size"]:
            raise _entry(where, name, f"has {members[name].file_size} bytes, {MANIFEST} says {item['size']} (size mismatch)")
    return listed


def _check_layout(members: dict, manifest: dict, where: str) -> str:
    """Every entry where the format puts it; returns the solution's ref."""
    from ..errors import InvalidRef
    from ..store.refs import KINDS, check_name, parse_version

    sol = manifest["solution"]
    try:
        check_name(sol["name"])
        parse_version(sol["version"])
    except InvalidRef as exc:
        raise _refuse(where, f"{MANIFEST} /solution: {exc.message}") from None
    if manifest.get("repo") != stem(sol["name"], sol["version"]):
        raise _refuse(where, f"{MANIFEST} /repo must be {stem(sol['name'], sol['version'])!r}, found {manifest.get('repo')!r}")
    dirs = set()
    for comp in manifest.get("components", []):
        cpath = comp.get("path") if isinstance(comp, dict) else None
        parts = cpath.split("/") if isinstance(cpath, str) else []
        if len(parts) != 3 or parts[0] not in KINDS or unsafe_name(cpath) or not isinstance(comp.get("ref"), str):
            raise _refuse(where, f"{MANIFEST} lists a component at {cpath!r}, which is not <kind>/<name>/<version>")
        if f"{cpath}/meta.json" not in members:
            raise _entry(where, f"{cpath}/meta.json", f"is missing: {MANIFEST} lists the component {comp['ref']}")
        dirs.add(cpath)
    solution_dir = f"solution/{sol['name']}/{sol['version']}"
    if solution_dir not in dirs:
        raise _refuse(where, f"{MANIFEST} does not list the solution's own directory {solution_dir}")
    if REPO_FILE not in members:
        raise _refuse(where, f"it holds no {REPO_FILE}")
    for name in members:
        parts = name.split("/")
        if name in (MANIFEST, REPO_FILE, LOCK_FILE) or (parts[0] == RESULTS_DIR and len(parts) == 2):
            continue
        if len(parts) >= 4 and "/".join(parts[:3]) in dirs:
            continue
        raise _entry(where, name, "is outside the archive layout (<kind>/<name>/<version>/..., results/, lock.json)")
    return f"solution:{sol['name']}@{sol['version']}"


# -- 2. extraction ----------------------------------------------------------------------

def _target_state(target: Path) -> str:
    """'absent', 'empty', 'archive' (an earlier unpack) or 'other'."""
    if not target.exists() and not target.is_symlink():
        return "absent"
    if target.is_symlink() or not target.is_dir():
        return "other"
    if not any(target.iterdir()):
        return "empty"
    if (target / MANIFEST).is_file() and (target / REPO_FILE).is_file():
        return "archive"
    return "other"


def _registration_conflicts(registered, repo_name: str, target: Path, force: bool) -> list:
    """Registered repos that must go for this one (force), else ArchiveError."""
    stale = []
    for repo in registered:
        if repo.name == repo_name and repo.path != target:
            if not force:
                raise ArchiveError(
                    f"a repository named {repo_name} is already registered ({repo.path})",
                    hint=f"unpack there (--into {repo.path}), replace it with --force, or remove it: cr repo rm {repo_name}",
                )
            stale.append(repo)
        elif repo.path == target and repo.name != repo_name and force:
            stale.append(repo)  # an earlier archive of another solution in the same directory
    return stale


def _check_space(target: Path, total: int, where: str) -> None:
    probe = target.parent
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        free = shutil.disk_usage(probe).free
    except OSError:
        return
    if total > free:
        raise _refuse(where, f"it unpacks to {human(total)}, but {probe} has only {human(free)} free", "free some space or use --into elsewhere")


def _extract(zf, members: dict, listed: dict, manifest_data: bytes, work: Path, where: str) -> Path:
    """work/repo: every listed entry, each verified (the directory that becomes target)."""
    tree = work / "repo"
    try:
        tree.mkdir()  # its mode from the umask (mkdtemp's 0700 would become the repository's)
    except OSError as exc:
        raise CRError(f"cannot write in {work} ({exc.strerror or exc})", hint="choose a writable place with --into") from None
    order = sorted(listed, key=lambda n: members[n].header_offset)  # one pass through the file
    total = sum(listed[n]["size"] for n in order)
    done = 0
    for name in order:
        _extract_one(zf, members[name], listed[name], tree, where)
        done += listed[name]["size"]
        reporter().progress(f"unpack {where}", done, total)
    _write_new(tree / MANIFEST, manifest_data)
    return tree


# Where the tree is extracted before the one rename that makes it visible: on the target's
# file system, and named after this process so that a later unpack deletes it once the
# process is gone (kill -9 leaves it): CR_HOME/tmp/unpack-PID-xxx (cr/scratch.py) for a
# target inside CR_HOME, else .cr-unpack-PID-xxx beside the target.
_BESIDE = ".cr-unpack-"
_BESIDE_NAME = re.compile(r"^\.cr-unpack-(?P<pid>\d+)-[A-Za-z0-9_]+$")


def _work_dir(target: Path, home: Path) -> tuple[Path, Path | None]:
    """(a new empty directory on target's file system, CR_HOME/tmp when this call created it)."""
    from .. import scratch

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if _in_home(target, home):
            base = home / "tmp"
            made = None if base.exists() else base
            return scratch.make("unpack"), made
        return _new_dir(target.parent, f"{_BESIDE}{os.getpid()}-"), None
    except OSError as exc:
        raise CRError(f"cannot create a temporary directory for {target} ({exc.strerror or exc})",
                      hint="choose a writable place with --into") from None


def _in_home(target: Path, home: Path) -> bool:
    """Whether target lies inside CR_HOME, on the file system of CR_HOME/tmp (a rename away)."""
    real, real_home = Path(os.path.realpath(target.parent)), Path(os.path.realpath(home))
    if real != real_home and real_home not in real.parents:
        return False
    try:
        return os.stat(real).st_dev == os.stat(real_home).st_dev
    except OSError:
        return False


def sweep(home: Path, *folders: Path) -> list[str]:
    """Delete what killed unpacks left: CR_HOME/tmp's scratch directories of dead processes,
    and .cr-unpack-PID-* directories of dead processes in folders; their names."""
    from .. import scratch

    removed = scratch.sweep(home / "tmp") if (home / "tmp").is_dir() else []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            m = _BESIDE_NAME.match(entry.name)
            if not m or int(m.group("pid")) == os.getpid() or scratch.alive(int(m.group("pid"))):
                continue
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(entry.name)
    return removed


def _write_new(dest: Path, data: bytes) -> None:
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _extract_one(zf, info: zipfile.ZipInfo, item: dict, tmp: Path, where: str) -> None:
    name = info.orig_filename
    dest = tmp.joinpath(*name.split("/"))
    h = hashlib.sha256()
    size, expected = 0, item["size"]
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except OSError as exc:
        raise _entry(where, name, f"cannot be written ({exc.strerror or exc})", "check the target's file system; nothing was unpacked") from None
    try:
        with os.fdopen(fd, "wb") as out, zf.open(info) as src:
            while True:
                block = src.read(CHUNK)
                if not block:
                    break
                size += len(block)
                if size > expected:
                    raise _entry(where, name, f"inflates to more than the {expected} bytes {MANIFEST} says (size mismatch)")
                h.update(block)
                out.write(block)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
        raise _entry(where, name, f"is corrupt ({exc})") from None
    except OSError as exc:
        raise _entry(where, name, f"cannot be read or written ({exc.strerror or exc})", "the archive is damaged or the disk is full; nothing was unpacked") from None
    if size != expected:
        raise _entry(where, name, f"holds {size} bytes, {MANIFEST} says {expected} (size mismatch or truncated)")
    if h.hexdigest() != item["sha256"]:
        raise _entry(where, name, f"does not match its sha256 in {MANIFEST} (expected {item['sha256'][:12]}..., found {h.hexdigest()[:12]}...)")


# -- 3. contents ------------------------------------------------------------------------

def _check_pin(entry: dict | None, meta: dict, name: str, where: str) -> None:
    """A payload pin the manifest records (package, version, path, sha256) is the one the
    component's meta holds: the manifest is what a reader trusts before unpacking, the meta
    is what loading checks (cr.runtime.pins); they may not tell two stories."""
    if not entry or not any(k in entry for k in ("sha256", "path")):
        return
    source = meta.get("source") if isinstance(meta.get("source"), dict) else {}
    for key in ("package", "package_version", "path", "sha256"):
        if entry.get(key) != source.get(key):
            raise _entry(where, name, f"pins source.{key} {str(source.get(key))[:80]!r}, but {MANIFEST} /excluded records "
                                      f"{str(entry.get(key))[:80]!r} for {entry['ref']}: a tampered pin?")


def _check_contents(tree: Path, manifest: dict, listed: dict, where: str) -> None:
    """cr-repo.json, every meta and its files' checksums, the lock, the records; and that
    every file belongs to one of them (what cr pack writes, nothing else)."""
    from ..resolve.lock import LOCK_FORMAT
    from ..store.catalog import component_sha256
    from ..store.meta import validate, validate_repo_meta

    owned = {REPO_FILE}
    repo_meta = _json(tree, REPO_FILE, where)
    problems = validate_repo_meta(repo_meta, REPO_FILE) if isinstance(repo_meta, dict) else None
    if problems is None or problems:
        why = f"{problems[0].pointer or '/'} {problems[0].message}" if problems else "not a JSON object"
        raise _entry(where, REPO_FILE, f"is invalid: {why}")
    if repo_meta.get("name") != manifest["repo"] or repo_meta.get("layout", "kind/name/version") != "kind/name/version":
        raise _entry(where, REPO_FILE, f"must name the repository {manifest['repo']!r} with the default layout")
    excluded, pinned = {}, {}
    for entry in manifest.get("excluded", []):
        if isinstance(entry, dict) and isinstance(entry.get("ref"), str):
            excluded[entry["ref"]] = set(f for f in entry.get("files", []) if isinstance(f, str))
            pinned[entry["ref"]] = entry
    for comp in manifest["components"]:
        cpath = comp["path"]
        name = f"{cpath}/meta.json"
        meta = _json(tree, name, where)
        if not isinstance(meta, dict):
            raise _entry(where, name, "is invalid: / expected a JSON object")
        problems = validate(meta, name)
        if problems:
            raise _entry(where, name, f"is invalid: {problems[0].pointer or '/'} {problems[0].message}")
        if f"{meta['kind']}/{meta['name']}/{meta['version']}" != cpath:
            raise _entry(where, name, f"describes {meta['kind']}:{meta['name']}@{meta['version']}, which does not belong at {cpath}")
        ref = f"{meta['kind']}:{meta['name']}@{meta['version']}"
        if comp["ref"] != ref or (comp.get("uid") and comp["uid"] != meta.get("uid")):
            raise _entry(where, name, f"is {ref} uid {meta.get('uid')}, {MANIFEST} says {comp['ref']} uid {comp.get('uid')}")
        if comp.get("sha256") and comp["sha256"] != component_sha256(meta):
            raise _entry(where, name, f"does not match the component sha256 in {MANIFEST}")
        _check_pin(pinned.get(ref), meta, name, where)
        owned.add(name)
        for rel, sha in sorted((meta.get("files") or {}).items()):
            arc = f"{cpath}/{rel}"
            if arc in listed:
                if listed[arc]["sha256"] != sha:
                    raise _entry(where, arc, f"has sha256 {listed[arc]['sha256'][:12]}... in {MANIFEST}, but {ref} lists {str(sha)[:12]}...")
                owned.add(arc)
            elif rel not in excluded.get(ref, ()):
                raise _entry(where, arc, f"is missing: {ref} lists it, and {MANIFEST} does not say it was left out")
    if manifest.get("lock"):
        lock = _json(tree, LOCK_FILE, where)
        if not isinstance(lock, dict) or lock.get("format") != LOCK_FORMAT or not isinstance(lock.get("software"), list):
            raise _entry(where, LOCK_FILE, f"is not a valid lock (not a reefkit lock of format {LOCK_FORMAT})")
        owned.add(LOCK_FILE)
    for name in manifest.get("results", []):
        if name not in listed:
            raise _refuse(where, f"{MANIFEST} names the result {name!r}, which the archive does not hold")
        record = _json(tree, name, where, constants=True)
        if not isinstance(record, dict):
            raise _entry(where, name, "is not a result record (a JSON object)")
        owned.add(name)
        raw = record.get("raw") if isinstance(record.get("raw"), dict) else {}
        side = raw.get("latencies_ns_file")
        if side is None:
            continue
        arc = f"{RESULTS_DIR}/{side}" if isinstance(side, str) else None
        if arc is None or "/" in side or unsafe_name(arc) or arc not in listed:
            raise _entry(where, name, f"keeps its latencies in {str(side)[:80]!r}, which the archive does not hold")
        if is_sha256(raw.get("sha256")) and raw["sha256"] != listed[arc]["sha256"]:
            raise _entry(where, arc, f"has sha256 {listed[arc]['sha256'][:12]}... in {MANIFEST}, but {name} lists {raw['sha256'][:12]}...")
        owned.add(arc)
    for name in sorted(listed):
        if name not in owned:
            raise _entry(where, name, f"belongs to nothing in the archive: {_unowned(name, manifest)}")


def _unowned(name: str, manifest: dict) -> str:
    """Why a file is nobody's (what would have made it belong)."""
    if name == LOCK_FILE:
        return f"{MANIFEST} names no lock (its /lock is null)"
    if name.startswith(f"{RESULTS_DIR}/"):
        if name.endswith(".json"):
            return f"{MANIFEST} /results does not name it"
        return f"it is not the latencies file of any result in {MANIFEST} /results"
    for comp in manifest.get("components", []):
        if name.startswith(f"{comp['path']}/"):
            return f"the meta of {comp['ref']} does not list it in its files"
    return "no component's meta lists it in its files"


def _json(tree: Path, name: str, where: str, constants: bool = False):
    """An extracted member's JSON value, read with the bounded loader."""
    from ..jsonio import InvalidJSON, read_file

    try:
        data = read_file(tree.joinpath(*name.split("/")), where=name)
    except InvalidJSON as exc:
        raise _entry(where, name, "is missing or unreadable" + (f" ({exc.message.split(': ', 1)[-1]})" if ": " in exc.message else "")) from None
    return parse_json(data, where, name, _UNSAFE_HINT, constants=constants, label=f"entry {name!r}")


# -- 4. making it visible -----------------------------------------------------------------

def _commit(tree: Path, target: Path, state: str, work: Path) -> bool:
    """Rename tree to target (replacing an earlier archive there, moved into work first);
    True when one was replaced."""
    if state == "empty":
        try:
            target.rmdir()
        except OSError:
            pass
    if state != "archive":
        try:
            os.rename(tree, target)
        except OSError as exc:
            raise CRError(f"cannot move the unpacked archive to {target} ({exc.strerror or exc})",
                          hint="another cr unpack may have created it meanwhile: run the command again") from None
        return False
    old = work / "old"
    os.rename(target, old)
    try:
        os.rename(tree, target)
    except BaseException:
        os.rename(old, target)
        raise
    return True


def _new_dir(parent: Path, prefix: str) -> Path:
    """A new directory with a random name, its mode from the umask (unlike mkdtemp's 0700:
    it becomes the repository)."""
    import secrets

    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name in {parent}")


def _missing_dirs(path: Path) -> list[Path]:
    """The directories that creating path will create, deepest first."""
    out = []
    while not path.exists() and path != path.parent:
        out.append(path)
        path = path.parent
    return out


def _remove_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None
