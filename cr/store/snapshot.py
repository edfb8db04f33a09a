"""The warm path of an index refresh: 'nothing changed', confirmed with one stat per path.

A refresh walks the repositories in its scope: it stats each directory whose remembered
listing it uses and each meta file those listings lead to. When a walk leaves nothing to
do later (no meta or directory it saw is racy, see below), the index stores a Snapshot of
it: every path it stat'ed, in order, with the stamp it found. The next refresh of the same
scope over the same repositories stats exactly those paths in one tight loop; if every
stamp is the same, the walk would take the same steps and find the same files unchanged,
so there is nothing to do: no listing, no per-component objects, no per-row SQL. The check
hands back the metas whose stamps differ (and the racy ones, below), so that the index
reads only those; a directory that differs, a meta that appeared or disappeared, or too
many changes, and the full walk runs (and stores a new snapshot).

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
  the same tick could keep every stamp: a meta stamped within RACY_NS of the refresh
  that recorded it is listed as racy, and every check hands it back to be compared by
  content until it is older than that; a walk that saw a directory changed that recently
  stores no snapshot (the next refresh walks again).
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
from itertools import islice

from .parallel import failed, run_shares, single_threaded, usable_cpus

# Bumped whenever what a snapshot holds changes: an older one is then simply not used.
FORMAT = 3  # 3: the racy metas listed
# A file modified this recently before it was indexed ('racy') may change again within
# the file system's timestamp granularity without its (mtime, size) changing: the next
# refresh reads it again and compares the sha256 of its bytes (parsing it only if they
# changed), until one finds it older than this. (Here, below the index that uses it most.)
RACY_NS = 2_000_000_000


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

    def pack(self, repos: str, scanned: int, now: int) -> bytes:
        groups = [g for g in self.groups if g[1] or g[3]]
        return marshal.dumps((FORMAT, repos, scanned, groups, racy_metas(groups, now)))


class Snapshot:
    """A loaded snapshot: what check() found, and what update() needs to record a new one."""

    def __init__(self, repos: str, scanned: int, groups: list, racy: list):
        self.repos, self.scanned, self.groups, self.racy = repos, scanned, groups, racy

    def meta_path(self, group: int, i: int) -> str:
        base, _, _, metas, _ = self.groups[group]
        return os.path.join(base, metas[i])

    def was_found(self, group: int, i: int) -> bool:
        return self.groups[group][4][i] is not None

    def pack(self, restamped: dict[tuple[int, int], tuple[int, int, int, int]], now: int) -> bytes:
        """The snapshot again, with the metas in restamped (group, index) -> file_stamp
        stamped anew; the racy ones (see racy_metas) listed for the next check."""
        for (group, i), stamp in restamped.items():
            self.groups[group][4][i] = stamp
        # only these stamps changed: the racy ones are among them and the racy of before
        # (looking through all of them costs ~0.1 s at 100,000 metas)
        self.racy = sorted(
            (g, i) for g, i in {*map(tuple, self.racy), *restamped}
            if self.groups[g][4][i] is not None and now - max(self.groups[g][4][i][0], self.groups[g][4][i][3]) <= RACY_NS
        )
        return marshal.dumps((FORMAT, self.repos, self.scanned, self.groups, self.racy))


def racy_metas(groups, now: int) -> list[tuple[int, int]]:
    """(group, index) of every meta stamped less than RACY_NS before now (or after it): a
    second edit within the file system's timestamp tick could keep its stamp, so check()
    always hands these back to be compared by content (as the index does with racy rows)."""
    return [(g, i) for g, group in enumerate(groups) for i, stamp in enumerate(group[4])
            if stamp is not None and now - max(stamp[0], stamp[3]) <= RACY_NS]


def load(blob: bytes | None, repos: str) -> Snapshot | None:
    """The snapshot in blob, if it is one of this format for exactly these repositories."""
    if not blob:
        return None
    try:
        fmt, their_repos, scanned, groups, racy = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return None
    if fmt != FORMAT or their_repos != repos:
        return None
    for group in groups:
        if len(group) != 5 or len(group[1]) != len(group[2]) or len(group[3]) != len(group[4]):
            return None
    return Snapshot(repos, scanned, groups, racy)


# At most this many metas found changed are handed back (each is then read again alone);
# more, or any directory changed, and the caller walks.
MAX_CHANGED = 256


def check(snap: Snapshot) -> list[tuple[int, int]] | None:
    """[] when every stamp is still the same and no meta is racy; else the (group, index)
    of each meta whose stamp differs or that is racy, to be looked at one by one; None
    when a directory differs, a repository's directory is gone, or over MAX_CHANGED metas
    differ: the caller must then walk."""
    work, fds = [], []
    try:
        for base, dirs, dir_stamps, metas, meta_stamps in snap.groups:
            fd = None
            if base and os.stat in os.supports_dir_fd:
                try:
                    fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
                except OSError:
                    return None  # the repository's directory is gone: let the walk see what is left
                fds.append(fd)
            work.append((base, dirs, dir_stamps, metas, meta_stamps, fd))
        n = _processes(work)
        if n > 1:
            answers = run_shares(lambda share: _share_diffs(work, share, n), n, stop=lambda got: got is None)
        else:
            answers = [_share_diffs(work, 0, 1)]
    finally:
        for fd in fds:
            os.close(fd)
    changed: set[tuple[int, int]] = set()
    for got in answers:
        if got is None or failed(got) or not isinstance(got, list):
            return None
        changed.update((g, i) for g, i in got)
    changed.update((g, i) for g, i in snap.racy)
    return None if len(changed) > MAX_CHANGED else sorted(changed)


def unchanged(blob: bytes | None, repos: str) -> int | None:
    """The number of metas the recorded walk found, if every stamp is still the same and
    none is racy; None otherwise (or when the snapshot is missing, unreadable or for other
    repositories)."""
    snap = load(blob, repos)
    if snap is None:
        return None
    return snap.scanned if check(snap) == [] else None


# The stats are the whole cost of a warm refresh, and each one is ~1 µs of kernel time
# inside ~2 µs of Python. Threads cannot share that out (the GIL changes hands at every
# call, which costs more than the call), processes can: over PARALLEL_MIN paths, on a
# machine with more than one usable CPU, forked children check contiguous shares of
# the paths while this process checks its own, and each sends back what differed in its
# share (cr.store.parallel). Measured on 2 CPUs over 20,000 paths: 64 ms alone, 52 ms
# shared (the kernel's reference counts on the one mount are shared too).
PARALLEL_MIN = 6000
MAX_PROCESSES = 4


def _processes(work) -> int:
    total = sum(len(w[1]) + len(w[3]) for w in work)
    if total < PARALLEL_MIN or not hasattr(os, "fork") or not hasattr(os, "sched_getaffinity"):
        return 1
    try:
        # A fork copies only the calling thread: never fork beside others (any thread of
        # the process, the C libraries' included, may hold a lock the child would need).
        if not _single_threaded():
            return 1
        cpus = _usable_cpus()
    except OSError:
        return 1
    return max(1, min(cpus, MAX_PROCESSES, total // max(1, PARALLEL_MIN // 2)))


def _single_threaded() -> bool:
    return single_threaded()


def _usable_cpus() -> int:
    return usable_cpus()


def _share_diffs(work, share: int, n: int) -> list[tuple[int, int]] | None:
    """The (group, index) of the metas whose stamps differ in the share-th of n contiguous
    parts of each group's lists; None if a directory there differs or too many metas do
    (contiguous, not interleaved: each process then touches, and copies on write, only
    the memory of its own part)."""
    changed: list[tuple[int, int]] = []
    for g, (base, dirs, dir_stamps, metas, meta_stamps, fd) in enumerate(work):
        d0, d1 = len(dirs) * share // n, len(dirs) * (share + 1) // n
        m0, m1 = len(metas) * share // n, len(metas) * (share + 1) // n
        if n > 1:
            dirs, dir_stamps = dirs[d0:d1], dir_stamps[d0:d1]
            metas, meta_stamps = metas[m0:m1], meta_stamps[m0:m1]
        if fd is None:  # no stat relative to a descriptor here: whole paths (absolute ones stay)
            dirs = [os.path.join(base, p) for p in dirs]
            metas = [os.path.join(base, p) for p in metas]
        if not _dirs_same(dirs, dir_stamps, fd):
            return None
        start = 0
        while True:
            at = _first_meta_diff(metas, meta_stamps, fd, start)
            if at < 0:
                break
            changed.append((g, m0 + at))
            if len(changed) > MAX_CHANGED:
                return None
            start = at + 1
    return changed


def _dirs_same(dirs, dir_stamps, fd: int | None) -> bool:
    stat, isdir = os.stat, stat_module.S_ISDIR
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
    return True


def _first_meta_diff(metas, meta_stamps, fd: int | None, start: int) -> int:
    """The index of the first meta from start on whose stamp differs; -1 if none does."""
    stat = os.stat
    # A tight loop: this is the whole cost of a warm refresh (a stat is ~2 µs of kernel
    # time; the Python around it is kept to a tuple and a comparison).
    pairs = zip(metas, meta_stamps) if not start else zip(islice(metas, start, None), islice(meta_stamps, start, None))
    for i, (path, want) in enumerate(pairs, start):
        try:
            st = stat(path, dir_fd=fd)
        except OSError:
            if want is not None:
                return i
            continue
        if (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns) != want:
            return i
    return -1
