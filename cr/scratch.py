"""Scratch space: every temporary directory cr makes lives under CR_HOME/tmp, is named after
what made it and the process that owns it, and is swept once that process is gone.

    with scratch("unpack") as tmp:      # CR_HOME/tmp/unpack-<pid>-<random>/
        ...                              # deleted at the end, whatever happens
    path = make("job")                   # the caller deletes it (or a later sweep does)

A `kill -9` leaves a directory behind; the next scratch() or make() of any kind, in any cr
process, deletes every directory whose owner process no longer exists. Directories of live
processes (another cr running now) are never touched.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from .paths import ensure_home

_NAME = re.compile(r"^(?P<kind>[a-z][a-z0-9-]*)-(?P<pid>\d+)-[A-Za-z0-9_]+$")


def root() -> Path:
    path = ensure_home() / "tmp"
    path.mkdir(parents=True, exist_ok=True)
    return path


def make(kind: str) -> Path:
    """A new directory CR_HOME/tmp/<kind>-<pid>-<random>, after sweeping dead processes' ones."""
    base = root()
    sweep(base)
    return Path(tempfile.mkdtemp(prefix=f"{kind}-{os.getpid()}-", dir=base))


@contextmanager
def scratch(kind: str):
    """make(kind), deleted when the block ends (normally or not)."""
    path = make(kind)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def sweep(base: Path | None = None) -> list[str]:
    """Delete the scratch directories (and files) of processes that no longer exist; their names."""
    base = base or root()
    removed = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        m = _NAME.match(entry.name)
        if not m or int(m.group("pid")) == os.getpid() or alive(int(m.group("pid"))):
            continue
        try:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                os.unlink(entry.path)
            removed.append(entry.name)
        except OSError:
            continue
    return removed


def alive(pid: int) -> bool:
    """Whether a process with this id exists (it may belong to another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True
