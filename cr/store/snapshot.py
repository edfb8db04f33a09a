"""The warm path of an index refresh: 'nothing changed', confirmed with one stat per path.

A refresh walks the repositories in its scope: it stats each directory whose remembered
listing it uses and each meta file those listings lead to. When a walk leaves nothing to
do later (no meta or directory it saw is racy, see below), the index stores a Snapshot of
it: every path it stat'ed, in order, with the stamp it found. The next refresh of the same
scope over the same repositories stats exactly those paths in one tight loop; if every
stamp is the same, the walk would take the same steps and find the same files unchanged,
so there is nothing to do: no listing, no per-component objects, no per-row SQL. The first
difference ends the check, and the full walk runs (and stores a new snapshot).

Why equal stamps mean an unchanged store:

- directories are stamped (inode, mtime, ctime): adding, removing or renaming an entry
  changes a directory's mtime and ctime, and a directory replaced by another has another
  inode and ctime. A path where no directory was found is stamped None, so one appearing
  there (a kind directory created, a symlink's target made) is a difference.
- meta files are stamped (mtime, size, inode, ctime): an in-place edit changes the mtime
  and the ctime, and the ctime cannot be set back (utime() sets it to now), so even an
  edit that keeps the size and restores the mtime is seen; a file replaced by another
  file or by a directory has another inode and ctime. A meta not found is stamped None.
- a timestamp is only as fine as the file system keeps it, so a second change within
  the same tick could keep every stamp: a walk that saw anything changed within RACY_NS
  of its start stores no snapshot (the next refresh walks again, and the walk re-reads
  such files: cr.store.index), until everything it sees is older than that.
- what the walk does depends on the repositories (their order, paths, layouts, meta file
  names, names): a snapshot is used only for exactly the repositories it was taken with.

The snapshot is a cache of a cache: the index drops every snapshot whenever it writes
anything else, and a missing or unreadable one only means one full walk.
"""
from __future__ import annotations

import json
import marshal
import os
import stat as stat_module

# Bumped whenever what a snapshot holds changes: an older one is then simply not used.
FORMAT = 2


def dir_stamp(st: os.stat_result | None) -> tuple[int, int, int] | None:
    """What a directory is stamped with; None when what was found is no directory."""
    if st is None or not stat_module.S_ISDIR(st.st_mode):
        return None
    return st.st_ino, st.st_mtime_ns, st.st_ctime_ns


def file_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns


def repos_key(repos) -> str:
    """Everything about the repositories (in order) that decides what a walk does."""
    return json.dumps([[r.name, str(r.path), r.layout, r.kind, r.meta_file] for r in repos])


class Recorder:
    """Collects what one walk stat'ed (fed by the index's listing and stat hooks), one group
    per repository: paths under its root are kept relative to it, so that the check stats
    them relative to an open descriptor of the root (less path to resolve, a smaller blob)."""

    def __init__(self):
        self.groups: list[tuple[str, list, list, list, list]] = []
        self.begin("")

    def begin(self, base: str) -> None:
        """Paths recorded from now on are relative to base (a directory path ending with a separator)."""
        self.base = base
        self.dirs, self.dir_stamps, self.metas, self.meta_stamps = [], [], [], []
        self.groups.append((base, self.dirs, self.dir_stamps, self.metas, self.meta_stamps))

    def _rel(self, path: str) -> str:
        base = self.base
        return path[len(base):] if base and path.startswith(base) and len(path) > len(base) else path

    def saw_dir(self, path: str, st: os.stat_result | None) -> None:
        self.dirs.append(self._rel(path))
        self.dir_stamps.append(dir_stamp(st))

    def stat_meta(self, path: str) -> os.stat_result:
        """os.stat(path), recorded (a path with no file is recorded too, then raised)."""
        try:
            st = os.stat(path)
        except OSError:
            self.metas.append(self._rel(path))
            self.meta_stamps.append(None)
            raise
        self.metas.append(self._rel(path))
        self.meta_stamps.append(file_stamp(st))
        return st

    def pack(self, repos: str, scanned: int) -> bytes:
        groups = [g for g in self.groups if g[1] or g[3]]
        return marshal.dumps((FORMAT, repos, scanned, groups))


def unchanged(blob: bytes | None, repos: str) -> int | None:
    """The number of metas the recorded walk found, if every stamp is still the same;
    None when anything differs (or the snapshot is missing, unreadable or for other
    repositories): the caller must then walk."""
    if not blob:
        return None
    try:
        fmt, their_repos, scanned, groups = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return None
    if fmt != FORMAT or their_repos != repos:
        return None
    for base, dirs, dir_stamps, metas, meta_stamps in groups:
        if len(dirs) != len(dir_stamps) or len(metas) != len(meta_stamps):
            return None
        if not base or os.stat not in os.supports_dir_fd:
            same = _same(base, dirs, dir_stamps, metas, meta_stamps, None)
        else:
            try:
                fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
            except OSError:
                return None  # the repository's directory is gone: let the walk see what is left
            try:
                same = _same(base, dirs, dir_stamps, metas, meta_stamps, fd)
            finally:
                os.close(fd)
        if not same:
            return None
    return scanned


def _same(base: str, dirs, dir_stamps, metas, meta_stamps, fd: int | None) -> bool:
    if fd is None:  # no stat relative to a descriptor here: whole paths (absolute ones stay)
        dirs = [os.path.join(base, p) for p in dirs]
        metas = [os.path.join(base, p) for p in metas]
    stat, isdir = os.stat, stat_module.S_ISDIR
    # Two tight loops: this is the whole cost of a warm refresh (a stat is ~2 µs of
    # kernel time; the Python around it is kept to a tuple and a comparison).
    for path, want in zip(dirs, dir_stamps):
        try:
            st = stat(path, dir_fd=fd)
        except OSError:
            if want is not None:
                return False
            continue
        if want is None:
            if isdir(st.st_mode):
                return False
        elif (st.st_ino, st.st_mtime_ns, st.st_ctime_ns) != want or not isdir(st.st_mode):
            return False
    for path, want in zip(metas, meta_stamps):
        try:
            st = stat(path, dir_fd=fd)
        except OSError:
            if want is not None:
                return False
            continue
        if (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns) != want:
            return False
    return True
