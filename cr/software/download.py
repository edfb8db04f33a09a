"""Downloads (requests, resume, sha256) into CR_HOME/cache/downloads, and safe extraction.

A download is kept in the cache under its sha256, so a second install (or an offline
one) reuses it; a partial file (``.part``) is resumed with an HTTP Range request; a file
whose sha256 does not match is deleted and never used. Extraction refuses members that
would land outside the target (absolute paths, '..'), links and device files.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from ..errors import CRError
from ..events import reporter
from ..paths import cr_home

CHUNK = 1 << 16
CONNECT_TIMEOUT = 15.0
READ_TIMEOUT = 60.0


def cache_dir() -> Path:
    return cr_home() / "cache" / "downloads"


def cached_path(url: str, sha256: str, filename: str | None = None) -> Path:
    """Where the verified download of url lives: cache/downloads/<sha256[:16]>-<file name>."""
    name = filename or url.rstrip("/").rsplit("/", 1)[-1].split("?")[0] or "download"
    return cache_dir() / f"{sha256[:16]}-{name}"


def fetch(url: str, sha256: str, filename: str | None = None, offline: bool = False, what: str = "") -> Path:
    """The verified file for url: from the cache, else downloaded (resuming a partial file).

    offline=True never touches the network: a cached file is used, anything else is an
    error saying what is missing and where to put it.
    """
    target = cached_path(url, sha256, filename)
    if target.is_file():
        if _sha256(target) == sha256:
            return target
        target.unlink()
    if offline:
        raise CRError(
            f"offline: {what or 'this install'} needs {url} (sha256 {sha256}), which is not in the download cache",
            hint=f"run without --offline, or put the file at {target}",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    _download(url, part, what or target.name)
    actual = _sha256(part)
    if actual != sha256:
        part.unlink()
        raise CRError(
            f"sha256 mismatch for {url}: expected {sha256}, got {actual}; the file was discarded",
            hint="the file on the server changed or was corrupted in transit; if the recipe is out of date, fix its sha256",
        )
    os.replace(part, target)
    return target


def _download(url: str, part: Path, label: str) -> None:
    import requests

    have = part.stat().st_size if part.exists() else 0
    headers = {"Range": f"bytes={have}-"} if have else {}
    try:
        with requests.get(url, headers=headers, stream=True, timeout=(CONNECT_TIMEOUT, READ_TIMEOUT)) as resp:
            if resp.status_code == 416 and have:
                # Range not satisfiable: the partial file may already be complete; the
                # sha256 check decides. A wrong one is discarded there.
                return
            if resp.status_code not in (200, 206):
                raise CRError(f"download of {url} failed: HTTP {resp.status_code} {resp.reason}", hint="check the URL in the recipe and that the server is reachable")
            resumed = resp.status_code == 206 and have > 0
            if have and not resumed:
                have = 0  # the server ignored Range: start again from the first byte
            total = _total(resp, have)
            if resumed:
                reporter().info(f"resuming download of {label} at {have} bytes")
            else:
                reporter().info(f"downloading {label}")
            done = have
            with open(part, "ab" if resumed else "wb") as f:
                for block in resp.iter_content(CHUNK):
                    f.write(block)
                    done += len(block)
                    reporter().progress(f"download {label}", done, total)
    except requests.RequestException as exc:
        raise CRError(
            f"download of {url} failed: {type(exc).__name__}: {exc}",
            hint="check the network and retry: the partial file is kept and the download resumes where it stopped",
        ) from None


def _total(resp, have: int) -> int | None:
    length = resp.headers.get("Content-Length")
    if length is None or not length.isdigit():
        return None
    return int(length) + (have if resp.status_code == 206 else 0)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- extraction ------------------------------------------------------------------------

def archive_kind(path: Path, declared: str | None = None) -> str:
    """'tar', 'zip' or 'file' (copied as is): as declared, else from the content."""
    if declared:
        return declared
    if zipfile.is_zipfile(path):
        return "zip"
    if tarfile.is_tarfile(path):
        return "tar"
    return "file"


def extract(archive: Path, dest: Path, kind: str | None = None, strip_components: int = 0, filename: str | None = None) -> None:
    """Unpack archive into dest safely; 'file' copies it, executable, to dest/bin/<filename>.

    Refused (CRError, nothing further written): absolute paths, '..' components, links,
    devices and FIFOs. The caller owns dest and deletes it on failure.
    """
    kind = archive_kind(archive, kind)
    dest.mkdir(parents=True, exist_ok=True)
    if kind == "file":
        target = dest / "bin" / (filename or archive.name.split("-", 1)[-1])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(archive, target)
        os.chmod(target, 0o755)
        return
    if kind == "zip":
        _extract_zip(archive, dest, strip_components)
    else:
        _extract_tar(archive, dest, strip_components)


def _safe_relative(name: str, strip: int, archive: Path) -> PurePosixPath | None:
    """The member's path inside dest, None for a member stripped away; CRError if unsafe."""
    if name.startswith("/") or name.startswith("\\") or (len(name) > 1 and name[1] == ":"):
        raise CRError(f"refused to extract {archive.name}: member {name!r} has an absolute path", hint="the archive is unsafe; it was not extracted")
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".")]
    if ".." in parts:
        raise CRError(f"refused to extract {archive.name}: member {name!r} points outside the target ('..')", hint="the archive is unsafe; it was not extracted")
    parts = parts[strip:]
    return PurePosixPath(*parts) if parts else None


def _inside(dest: Path, rel: PurePosixPath, archive: Path, name: str) -> Path:
    target = (dest / rel).resolve()
    root = dest.resolve()
    if target != root and root not in target.parents:
        raise CRError(f"refused to extract {archive.name}: member {name!r} resolves outside the target", hint="the archive is unsafe; it was not extracted")
    return target


def _extract_tar(archive: Path, dest: Path, strip: int) -> None:
    try:
        tf = tarfile.open(archive)
    except tarfile.TarError as exc:
        raise CRError(f"cannot open {archive.name} as a tar archive ({exc})", hint="the download is not the archive the recipe expects") from None
    with tf:
        members = tf.getmembers()
        # Check every member before writing anything.
        plan = []
        for m in members:
            if m.issym() or m.islnk():
                raise CRError(f"refused to extract {archive.name}: member {m.name!r} is a link (to {m.linkname!r})", hint="the archive is unsafe; it was not extracted")
            if not (m.isfile() or m.isdir()):
                raise CRError(f"refused to extract {archive.name}: member {m.name!r} is a device or FIFO", hint="the archive is unsafe; it was not extracted")
            rel = _safe_relative(m.name, strip, archive)
            if rel is not None:
                plan.append((m, _inside(dest, rel, archive, m.name)))
        for m, target in plan:
            if m.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tf.extractfile(m)
            with src, open(target, "wb") as f:
                shutil.copyfileobj(src, f, CHUNK)
            os.chmod(target, (m.mode & 0o777 & ~0o022) | 0o600)


def _extract_zip(archive: Path, dest: Path, strip: int) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise CRError(f"cannot open {archive.name} as a zip archive ({exc})", hint="the download is not the archive the recipe expects") from None
    with zf:
        plan = []
        for info in zf.infolist():
            mode = info.external_attr >> 16
            if stat.S_ISLNK(mode):
                raise CRError(f"refused to extract {archive.name}: member {info.filename!r} is a link", hint="the archive is unsafe; it was not extracted")
            rel = _safe_relative(info.filename, strip, archive)
            if rel is not None:
                plan.append((info, mode, _inside(dest, rel, archive, info.filename)))
        for info, mode, target in plan:
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as f:
                shutil.copyfileobj(src, f, CHUNK)
            if mode & 0o777:
                os.chmod(target, (mode & 0o777 & ~0o022) | 0o600)
