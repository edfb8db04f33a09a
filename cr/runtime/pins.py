"""Pinned payloads: a model file taken from a registry package (meta ``source`` {package,
path}) is trusted by its sha256, recorded by ``cr hash`` with the package version it came
from (docs/security.md, "Pinned payloads").

Loading a model checks the file found in the installed package against the pin; a file
whose bytes differ is a failed run (PinMismatch), never another graph measured quietly.
The rule:

- ``sha256`` pinned: the file's sha256 must equal it. A different installed package
  version with the same bytes runs the same graph: it passes, and is reported
  ("verified, package 0.10.15 installed, 0.10.14 pinned").
- only ``package_version`` pinned: nothing proves the bytes, so the installed version must
  equal it.
- nothing pinned: the file loads as before; ``cr check`` warns that it is unpinned.

Hashing a 20 MB weight file costs tens of milliseconds on every run, so sha256s are cached
in CR_HOME/cache/payload-sha256.json keyed by the file's real path, size, mtime (ns),
inode and device: a file rewritten in place changes its mtime, a replaced one its inode;
a file modified less than 2 s ago is not cached (a rewrite in the same mtime tick).
The cache is the user's own, like the rest of CR_HOME; ``cr check`` never reads it (it
re-hashes: it is the audit). Standard library only: this runs in the measured child.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import CRError

CACHE_NAME = "payload-sha256.json"
_CACHE_MAX_ENTRIES = 4096  # a cache, not a record: the oldest entries go beyond this
_RACY_NS = 2_000_000_000  # a file modified this recently is hashed, not cached (git's "racy" rule)

# The states of a pin, as cr check / cr show / archives name them.
VERIFIED, MISMATCH, NOT_INSTALLED, UNPINNED, PINNED = "verified", "mismatch", "not installed", "unpinned", "pinned"


class PinMismatch(CRError):
    """An installed package's file is not the one the model meta pins."""


def pin_of(meta: dict) -> dict | None:
    """{package, path, package_version, sha256} of a package-sourced model, else None."""
    source = meta.get("source") if isinstance(meta.get("source"), dict) else {}
    if not (isinstance(source.get("package"), str) and isinstance(source.get("path"), str)) or meta.get("file"):
        return None
    return {"package": source["package"], "path": source["path"],
            "package_version": source.get("package_version"), "sha256": source.get("sha256")}


def _cache_path() -> Path | None:
    home = os.environ.get("CR_HOME")
    if not home:
        try:
            import platformdirs  # the host has it; a bare child interpreter may not
        except ImportError:
            return None
        home = platformdirs.user_data_dir("reefkit", appauthor=False)
    return Path(home).expanduser() / "cache" / CACHE_NAME


def _stamp(path: str) -> tuple[str, list[int]]:
    st = os.stat(path)
    return os.path.realpath(path), [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def _read_cache(cache: Path) -> dict:
    import json

    try:
        if cache.stat().st_size > 8 << 20:
            return {}
        data = json.loads(cache.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}  # absent or damaged: a cache is rebuilt, never trusted when unreadable
    return data if isinstance(data, dict) and data.get("version") == 1 and isinstance(data.get("files"), dict) else {}


def file_sha256(path: str, cached: bool = True) -> str:
    """The sha256 of a file; with cached, taken from (and recorded in) the CR_HOME cache
    when the file's size, mtime, inode and device are those recorded."""
    from ..fsutil import sha256_file

    cache = _cache_path() if cached else None
    if cache is None:
        return sha256_file(Path(path))
    key, stamp = _stamp(path)
    data = _read_cache(cache)
    entry = (data.get("files") or {}).get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp and isinstance(entry.get("sha256"), str):
        return entry["sha256"]
    digest = sha256_file(Path(path))
    if _stamp(path)[1] != stamp or time.time_ns() - stamp[1] < _RACY_NS:
        # changed while it was read, or so recently that a rewrite within the same mtime
        # tick (a coarse file system's) could keep its stamp: not worth remembering
        return digest
    files = {k: v for k, v in (data.get("files") or {}).items() if k != key}
    files[key] = {"stamp": stamp, "sha256": digest}
    if len(files) > _CACHE_MAX_ENTRIES:
        files = dict(list(files.items())[-_CACHE_MAX_ENTRIES:])
    try:
        from ..fsutil import atomic_write_json

        cache.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(cache, {"version": 1, "files": files}, durable=False)
    except (OSError, CRError):
        pass  # a read-only CR_HOME costs a re-hash next time, nothing else
    return digest


def judge(pin: dict, installed_version: str | None, sha256: str | None) -> tuple[str, str | None]:
    """(state, what differs or None) of a pin against the installed file (sha256 None:
    not installed)."""
    if sha256 is None:
        return NOT_INSTALLED, None
    if pin.get("sha256"):
        if pin["sha256"] != sha256:
            return MISMATCH, "sha256"
        return VERIFIED, None
    if pin.get("package_version"):
        if installed_version != pin["package_version"]:
            return MISMATCH, "package_version"
        return VERIFIED, None
    return UNPINNED, None


def verify(meta: dict, located: dict, ref: str = "the model", cached: bool = True) -> dict:
    """Check the located file of a package-sourced model against its pin: the pin state
    {state, package, path, package_version, installed_version, sha256, pinned_sha256};
    PinMismatch naming the file, the package, both versions and both sha256s."""
    pin = pin_of(meta)
    if pin is None or not located.get("path"):
        return {"state": None}
    digest = file_sha256(located["path"], cached=cached)
    installed = located.get("package_version")
    state, differs = judge(pin, installed, digest)
    out = {"state": state, "package": pin["package"], "path": pin["path"], "package_version": pin["package_version"],
           "installed_version": installed, "pinned_sha256": pin["sha256"], "sha256": digest}
    if state == MISMATCH:
        raise PinMismatch(mismatch_message(ref, located["path"], pin, installed, digest, differs),
                          hint=mismatch_hint(pin, ref))
    return out


def mismatch_message(ref: str, path: str, pin: dict, installed: str | None, digest: str, differs: str) -> str:
    versions = f"package {pin['package']} {installed or '(version unknown)'} installed, {pin.get('package_version') or 'no version'} pinned"
    if differs == "sha256":
        return f"{ref}: its file {path} does not match its pin ({versions}; sha256 {digest}, pinned {pin['sha256']})"
    return f"{ref}: its file {path} comes from another package version than pinned ({versions}; sha256 {digest}, none pinned)"


def mismatch_hint(pin: dict, ref: str = "REF") -> str:
    version = pin.get("package_version")
    install = f"install {pin['package']} {version}, the pinned version" if version else f"reinstall {pin['package']}"
    return f"{install}; or, if this file is the one you mean to trust, re-pin it: cr hash {ref} (on a copy in a repository you can write)"


def describe(state: dict) -> str:
    """One line for a person: 'verified (mediapipe 0.10.14, sha256 bbff11ce...)'."""
    version = state.get("installed_version") or state.get("package_version") or "?"
    digest = (state.get("sha256") or state.get("pinned_sha256") or "")[:12]
    detail = f"{state['package']} {version}" + (f", sha256 {digest}..." if digest else "")
    return f"{state['state']} ({detail})" + (f": {state['message']}" if state.get("message") and state["state"] != NOT_INSTALLED else "")
