"""Small file-system helpers shared across the package: atomic (streamed) writes and hashing."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path

from .errors import StoreError

WRITE_HINT = "check free disk space and that the folder is writable, or set CR_HOME elsewhere"


@contextmanager
def atomic_file(path, mode: str = "wb", durable: bool = False, prefix: str | None = None, suffix: str = ".tmp",
                hint: str = WRITE_HINT, encoding: str | None = None, newline: str | None = None):
    """A file to write path through: readers see the old file or the whole new one, never a part.

        with atomic_file(path, "w", encoding="utf-8") as f:   # streamed: write in as many chunks as needed
            f.write(...)

    The block writes a new temp file beside path (<prefix><random><suffix>, prefix default
    ".<name>."; a caller that sweeps its own leftovers names them so that it knows them);
    when the block ends normally the file is closed and renamed over path, and when it
    raises the temp file is removed and path is left as it was. The file gets the mode
    open() would give (0666 under the umask), not mkstemp's 0600. durable=True fsyncs the
    data before the rename and the folder after it, so that not even a power loss leaves a
    half-written file (results, repos.json); without, a killed process still cannot.
    Any OSError (the folder, the disk, the rename) becomes a StoreError naming path, with hint.
    """
    path = Path(path)
    head = f".{path.name}." if prefix is None else prefix
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(100):
            tmp = path.parent / f"{head}{os.urandom(6).hex()}{suffix}"
            try:
                fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
                break
            except FileExistsError:
                continue
        else:
            raise FileExistsError(f"no free temporary name in {path.parent}")
    except OSError as exc:
        raise _write_error(path, exc, hint) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding, newline=newline) as f:
            yield f
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
            raise _write_error(path, exc, hint) from exc
        raise


def _write_error(path: Path, exc: OSError, hint: str) -> StoreError:
    return StoreError(f"cannot write {path} ({exc.strerror or exc})", hint=hint)


def atomic_write_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Write data to path so that readers see the old or the new file, never a mix.

    atomic_file in one write. durable=True (the default) fsyncs the data and the directory
    entry (repos.json, results); component metas skip the fsync, which makes bulk creation
    100x faster and is still crash-safe for the process.
    """
    with atomic_file(path, durable=durable) as f:
        f.write(data)


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
