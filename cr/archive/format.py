"""The solution archive format (DESIGN.md "Archive", a contract): names, constants, manifest.

An archive ``NAME-VERSION.cr.zip`` is a zip whose root is a component repository:

    cr-repo.json                       name NAME-VERSION, default layout
    <kind>/<name>/<version>/meta.json  the solution and every component it needs, with the
    <kind>/<name>/<version>/...        files their meta lists (software recipes included, as
                                       software/<name>/<version>/meta.json)
    lock.json                          the lock it was benchmarked with (optional)
    results/<uid>.json (+ side files)  reference results (optional)
    manifest.json                      format, creator, solution, components, excluded
                                       payloads, and path/size/sha256 of every other entry

Entries are written in sorted order with manifest.json last, all with the same timestamp
(1980-01-01), mode 0644 and deflate level, and no extra fields: packing the same solution
twice gives the same bytes (with the same zlib).
"""
from __future__ import annotations

import json
import re
import unicodedata

from ..errors import CRError

FORMAT = 1
MANIFEST = "manifest.json"
REPO_FILE = "cr-repo.json"
LOCK_FILE = "lock.json"
RESULTS_DIR = "results"
SUFFIX = ".cr.zip"

DATE_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest a zip can say: nothing of the packing host
FILE_MODE = 0o644
COMPRESSLEVEL = 6  # zlib's default: Info-ZIP's speed, and ~all the gain of level 9
CHUNK = 1 << 20

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_DRIVE = re.compile(r"^[A-Za-z]:")
_SAFE_STEM = re.compile(r"[^a-z0-9._-]+")


class ArchiveError(CRError):
    """An archive that cannot be packed or must not be unpacked."""


def stem(name: str, version: str) -> str:
    """NAME-VERSION as a repository name (lowercase; characters a repo name refuses become '-')."""
    text = _SAFE_STEM.sub("-", f"{name}-{version}".lower()).strip("._-")
    return text[:128].rstrip("._-")


def file_name(name: str, version: str) -> str:
    return stem(name, version) + SUFFIX


def unsafe_name(name: str) -> str | None:
    """Why an entry name cannot be written inside a target directory, or None when it is safe.

    Refused: empty names, absolute paths, drive letters and other colons, backslashes,
    control, format (bidi, zero-width), private-use, unassigned and line/paragraph
    separator characters (cr.store.refs.REFUSED_CATEGORIES), characters Windows refuses in
    file names, '.' / '..' / empty components (and so directory entries, which end with
    '/'), components that end with a dot or a space or that are Windows device names
    (CON, nul.txt, COM1, ...), over-long names.
    """
    from ..store.refs import device_name, odd_character

    if not isinstance(name, str) or not name:
        return "has an empty name"
    if name.startswith("/"):
        return "is an absolute path"
    if _DRIVE.match(name):
        return "starts with a drive letter"
    if "\\" in name:
        return "contains a backslash (a Windows path separator)"
    if ":" in name:
        return "contains ':' (a drive or stream separator on Windows)"
    odd = odd_character(name)
    if odd:
        return f"contains {odd}"
    bad = next((c for c in name if c in _WINDOWS_REFUSED), None)
    if bad:
        return f"contains {bad!r} (Windows refuses it in file names)"
    parts = name.split("/")
    if ".." in parts:
        return "escapes the target ('..')"
    if name.endswith("/"):
        return "is a directory entry (archives hold files only)"
    if any(p in ("", ".") for p in parts):
        return "has an empty or '.' path component"
    if len(name.encode("utf-8", "surrogatepass")) > 1024 or any(len(p.encode("utf-8", "surrogatepass")) > 255 for p in parts):
        return "is too long"
    for part in parts:
        if part[-1] in ". ":
            return f"has a path component ending with a dot or a space ({part!r}; Windows drops them)"
        if device_name(part):
            return f"has a path component that is a Windows device name ({part!r})"
    return None


_WINDOWS_REFUSED = frozenset('<>"|?*')


def name_key(name: str) -> str:
    """Names that one file system may store as the same file (case, Unicode normal form)."""
    return unicodedata.normalize("NFC", name).casefold()


def manifest_bytes(manifest: dict) -> bytes:
    """The manifest as stored: sorted keys, 1-space indent, a final newline (stable bytes)."""
    return (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def record_bytes(data: object) -> bytes:
    """A JSON document the packer creates (cr-repo.json, a lock or result given as a dict)."""
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def parse_manifest(data: bytes, where: str) -> dict:
    """The manifest from its bytes, checked for shape; ArchiveError naming what is wrong.

    A format other than FORMAT is refused before anything else is looked at: a newer
    format may mean things this reefkit cannot check.
    """
    hint = "the archive is damaged or was not made by cr pack; nothing was unpacked"
    manifest = parse_json(data, where, MANIFEST, hint)
    if not isinstance(manifest, dict):
        raise ArchiveError(f"refused {where}: {MANIFEST} is not a JSON object", hint=hint)
    fmt = manifest.get("format")
    if fmt != FORMAT:
        raise ArchiveError(
            f"refused {where}: {MANIFEST} has unknown archive format {fmt!r} (this reefkit reads format {FORMAT})",
            hint=f"it was made by {manifest.get('created_by', 'another tool')!s:.60}; upgrade reefkit to unpack it",
        )
    solution = manifest.get("solution")
    if not (isinstance(solution, dict) and all(isinstance(solution.get(k), str) for k in ("ref", "name", "version"))):
        raise ArchiveError(f"refused {where}: {MANIFEST} /solution must name the solution (ref, name, version)", hint=hint)
    files = manifest.get("files")
    if not isinstance(files, list):
        raise ArchiveError(f"refused {where}: {MANIFEST} /files must be a list", hint=hint)
    for i, entry in enumerate(files):
        ok = (
            isinstance(entry, dict) and isinstance(entry.get("path"), str)
            and isinstance(entry.get("size"), int) and not isinstance(entry.get("size"), bool) and entry["size"] >= 0
            and isinstance(entry.get("sha256"), str) and _HEX64.match(entry["sha256"])
        )
        if not ok:
            raise ArchiveError(f"refused {where}: {MANIFEST} /files/{i} must be {{path, size, sha256}}, found {str(entry)[:80]}", hint=hint)
    for key in ("components", "excluded", "results"):
        if not isinstance(manifest.get(key, []), list):
            raise ArchiveError(f"refused {where}: {MANIFEST} /{key} must be a list", hint=hint)
    for i, entry in enumerate(manifest.get("excluded", [])):
        # printed to the user, with a command to run: only plain text, and only cr install
        if not _plain_excluded(entry):
            raise ArchiveError(f"refused {where}: {MANIFEST} /excluded/{i} is not {{ref, reason, ...}} in plain text, "
                               f"with install 'cr install software:NAME', sha256 64 hex digits, redistributable true or false", hint=hint)
    if not all(isinstance(r, str) for r in manifest.get("results", [])):
        raise ArchiveError(f"refused {where}: {MANIFEST} /results must list paths", hint=hint)
    for name in manifest.get("results", []):
        parts = name.split("/")
        if unsafe_name(name) or len(parts) != 2 or parts[0] != RESULTS_DIR or not parts[1].endswith(".json"):
            raise ArchiveError(f"refused {where}: {MANIFEST} /results lists {name[:80]!r}, which is not {RESULTS_DIR}/<uid>.json", hint=hint)
    if manifest.get("lock") not in (None, LOCK_FILE):
        raise ArchiveError(f"refused {where}: {MANIFEST} /lock must be {LOCK_FILE!r} or null, found {str(manifest.get('lock'))[:80]!r}", hint=hint)
    return manifest


def parse_json(data: bytes, where: str, name: str, hint: str, constants: bool = False, label: str | None = None):
    """The JSON value of an archive member, read with the bounded loader (cr/jsonio.py): a
    member nested too deep, too large or not UTF-8 is an ArchiveError naming it (label,
    default its name), never a RecursionError. constants: accept NaN/Infinity (a result
    record may hold them, as Python's json writes them)."""
    from ..jsonio import InvalidJSON, loads

    try:
        return loads(data, name, parse_constant=float if constants else None)
    except InvalidJSON as exc:
        why = exc.message
        for prefix in (f"{name}: ", "invalid JSON: ", "invalid JSON "):
            why = why[len(prefix):] if why.startswith(prefix) else why
        raise ArchiveError(f"refused {where}: {label or name} is not valid JSON ({why})", hint=hint) from None


_INSTALL = re.compile(r"^cr install software:[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?$")
_EXCLUDED_TEXT = ("ref", "reason", "install", "homepage", "package", "package_version", "url", "path")


def _plain_excluded(entry: object) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("ref"), str) or not isinstance(entry.get("reason"), str):
        return False
    texts = [entry.get(k, "") for k in _EXCLUDED_TEXT]
    files = entry.get("files", [])
    if not isinstance(files, list):
        return False
    texts += files
    if not all(isinstance(t, str) and len(t) <= 2000 and not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in t) for t in texts):
        return False
    if "sha256" in entry and not is_sha256(entry["sha256"]) or not isinstance(entry.get("redistributable", True), bool):
        return False
    return "install" not in entry or bool(_INSTALL.match(entry["install"]))


def is_sha256(text: object) -> bool:
    return isinstance(text, str) and bool(_HEX64.match(text))
