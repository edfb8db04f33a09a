"""Small file-system helpers shared across the package: atomic writes and hashing."""
from __future__ import annotations

import _thread
import json
import os
from pathlib import Path

from .errors import StoreError

_umask: int | None = None
_umask_lock = _thread.allocate_lock()  # threading's Lock, without importing threading


def umask() -> int:
    """This process's umask, read once (the files cr writes get 0666 & ~umask, as open() gives).

    Read from /proc/self/status ("Umask:") where the kernel offers it, which changes
    nothing; elsewhere os.umask is set and put back, once, under a lock and at import
    (before a program's threads create files), so that no thread sees it changed.
    """
    global _umask
    if _umask is None:
        with _umask_lock:
            if _umask is None:
                _umask = _read_umask()
    return _umask


def _read_umask() -> int:
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8) & 0o777
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)
    os.umask(old)
    return old & 0o777


umask()  # at import: see umask()


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write data to path so that readers see the old or the new file, never a mix.

    A temp file in the same directory is renamed over path. With durable=True the data
    and the directory entry are fsynced, so a crash or power loss cannot leave a
    half-written file (used for repos.json and results); component metas skip the
    fsync, which makes bulk creation 100x faster and is still crash-safe for the process.
    """
    import tempfile  # here, not at the top: commands that only read never pay for it

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise StoreError(
            f"cannot write {path} ({exc.strerror or exc})",
            hint="check that the directory exists and is writable, or set CR_HOME elsewhere",
        ) from None
    try:
        _chmod_default(fd, tmp)  # mkstemp's files are 0600: give the one open() would
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable and hasattr(os, "O_DIRECTORY"):
            dfd = os.open(path.parent, os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):  # disk full, I/O error: a user-fixable problem, not a bug
            raise StoreError(
                f"cannot write {path} ({exc.strerror or exc})",
                hint="check free disk space and permissions, or set CR_HOME elsewhere",
            ) from exc
        raise


def _chmod_default(fd: int, path: str) -> None:
    mode = 0o666 & ~umask()
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(path, mode)


def json_bytes(data: object) -> bytes:
    """What atomic_write_json writes: JSON with 2-space indent, keys in the order given, a final newline."""
    return (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def atomic_write_json(path: Path, data: object, durable: bool = True) -> None:
    """JSON with 2-space indent, sorted keys left as given, and a final newline."""
    atomic_write_bytes(path, json_bytes(data), durable=durable)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB chunks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()
