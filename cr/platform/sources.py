"""Where detection reads from: this host, or a directory of captured files.

A :class:`HostSource` reads the host's files and runs its tools, each with a timeout;
a :class:`CapturedSource` reads the same paths under a root directory and, instead of
running a tool, reads what it printed from ``<root>/commands/<name>.txt``
(layout: tests/fixtures/platforms/README.md). Either answers None for anything it cannot
read or run, so detection code never handles an exception.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from .. import procs

READ_LIMIT = 8 * 1024 * 1024  # /proc/cpuinfo of a 224-thread server is ~600 KB


def read_text(path: str | os.PathLike, limit: int = READ_LIMIT) -> str | None:
    """Text of a regular file (undecodable bytes replaced), or None.

    Only regular files are read: a FIFO or device under a captured root would block.
    (/proc and /sys files are regular files whose stat size is 0, hence the read limit.)
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, "rb") as f:
            # in pieces: /proc/sys refuses one read larger than the kernel's kmalloc limit (ENOMEM)
            parts, size = [], 0
            while size < limit:
                part = f.read(min(1 << 16, limit - size))
                if not part:
                    break
                parts.append(part)
                size += len(part)
            data = b"".join(parts)
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", errors="replace")


def run_tool(argv: list[str], timeout: float, merge_stderr: bool = False) -> tuple[int, str] | None:
    """(exit code, stdout) of a command, or None if it cannot start or prints more than
    READ_LIMIT bytes (cr.procs.run_bounded, which stops its whole process group).

    Raises subprocess.TimeoutExpired after killing the command's whole process group:
    a wrapper script's children must not linger holding the pipe.
    """
    try:
        code, out = procs.run_bounded(argv, timeout, env={**os.environ, "LC_ALL": "C", "LANG": "C"},
                                      limit=READ_LIMIT, stderr=merge_stderr)
    except (OSError, ValueError):
        return None
    except procs.Timeout:
        raise subprocess.TimeoutExpired(argv, timeout) from None
    return None if code is None else (code, out)


class Source:
    """What detection may ask: files by absolute path, directory listings, tool outputs."""

    live = False
    root: Path | None = None

    def read(self, path: str) -> str | None:
        raise NotImplementedError

    def listdir(self, path: str) -> list[str]:
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def tool(self, name: str, argv: list[str], merge_stderr: bool = False) -> str | None:
        """Output of argv (stdout, plus stderr if merge_stderr), saved under name when captured.

        A live source returns None if the tool is missing, fails (exit code != 0, unless
        merge_stderr) or outlives the timeout; a captured one if commands/<name>.txt is absent.
        """
        raise NotImplementedError


class HostSource(Source):
    """This machine. Tools run with a timeout; a tool that timed out once is not run again."""

    live = True

    def __init__(self, timeout: float = 10.0):
        self.timeout = timeout
        self.timed_out: list[str] = []

    def read(self, path: str) -> str | None:
        return read_text(path)

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def tool(self, name: str, argv: list[str], merge_stderr: bool = False) -> str | None:
        exe = argv[0] if os.path.isabs(argv[0]) else shutil.which(argv[0])
        if not exe or argv[0] in self.timed_out:
            return None
        try:
            done = run_tool([exe, *argv[1:]], self.timeout, merge_stderr)
        except subprocess.TimeoutExpired:
            self.timed_out.append(argv[0])
            return None
        if done is None or (done[0] != 0 and not merge_stderr):
            return None
        return done[1]


class CapturedSource(Source):
    """Files captured from a machine, under root; tools' outputs in root/commands/<name>.txt.

    Paths never leave root: an absolute symlink copied from a device (etc/os-release ->
    /usr/lib/os-release) must not read this host's file.
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)
        self._real_root = os.path.realpath(self.root)

    def _path(self, path: str) -> str | None:
        full = os.path.realpath(os.path.join(self._real_root, path.lstrip("/")))
        if full != self._real_root and not full.startswith(self._real_root.rstrip(os.sep) + os.sep):
            return None
        return full

    def read(self, path: str) -> str | None:
        full = self._path(path)
        return read_text(full) if full else None

    def listdir(self, path: str) -> list[str]:
        full = self._path(path)
        try:
            return sorted(os.listdir(full)) if full else []
        except OSError:
            return []

    def exists(self, path: str) -> bool:
        full = self._path(path)
        return bool(full) and os.path.exists(full)

    def tool(self, name: str, argv: list[str], merge_stderr: bool = False) -> str | None:
        return self.read(f"/commands/{name}.txt")


class RecordingSource(HostSource):
    """This host, copying every file read and every tool output under dest (a capture)."""

    def __init__(self, dest: Path, timeout: float = 10.0):
        super().__init__(timeout)
        self.dest = dest

    def _save(self, rel: str, text: str) -> None:
        target = self.dest / rel.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def read(self, path: str) -> str | None:
        text = super().read(path)
        if text is not None:
            if path == "/proc/cpuinfo":  # a board's serial number has no place in a shared capture
                text = re.sub(r"^(Serial\s*:\s*)\S+", lambda m: m.group(1) + "0" * 16, text, flags=re.MULTILINE)
            self._save(path, text)
        return text

    def tool(self, name: str, argv: list[str], merge_stderr: bool = False) -> str | None:
        text = super().tool(name, argv, merge_stderr)
        if text is not None:
            self._save(f"/commands/{name}.txt", text)
        return text
