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
    work, fds = [], []
    try:
        for base, dirs, dir_stamps, metas, meta_stamps in groups:
            if len(dirs) != len(dir_stamps) or len(metas) != len(meta_stamps):
                return None
            fd = None
            if base and os.stat in os.supports_dir_fd:
                try:
                    fd = os.open(base, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
                except OSError:
                    return None  # the repository's directory is gone: let the walk see what is left
                fds.append(fd)
            work.append((base, dirs, dir_stamps, metas, meta_stamps, fd))
        n = _processes(work)
        same = _parallel_same(work, n) if n > 1 else _share_same(work, 0, 1)
    finally:
        for fd in fds:
            os.close(fd)
    return scanned if same else None


# The stats are the whole cost of a warm refresh, and each one is ~1 µs of kernel time
# inside ~2 µs of Python. Threads cannot share that out (the GIL changes hands at every
# call, which costs more than the call), processes can: over PARALLEL_MIN paths, on a
# machine with more than one usable CPU, forked children check contiguous shares of
# the paths while this process checks its own, and each answers with its exit status
# (0: all the same). Measured on 2 CPUs over 20,000 paths: 64 ms alone, 52 ms shared
# (the kernel's reference counts on the one mount are shared too).
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
    return len(os.listdir("/proc/self/task")) == 1


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


SIGKILL = 9  # POSIX fixes its number (importing signal would import enum)


def _parallel_same(work, n: int) -> bool:
    children: list[int] = []
    same = False
    try:
        for share in range(1, n):
            try:
                pid = os.fork()
            except OSError:
                break  # no more processes: the shares not handed out are checked here
            if pid == 0:  # the child: check one share, answer with the exit status, run nothing else
                code = 2
                try:
                    code = 0 if _share_same(work, share, n) else 1
                finally:
                    os._exit(code)
            children.append(pid)
        same = all(_share_same(work, share, n) for share in [0, *range(len(children) + 1, n)])
        for pid in children:
            _, status = os.waitpid(pid, 0) if same else _stop(pid)
            same = same and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        children = []
    finally:
        for pid in children:  # interrupted, or decided without them: none is left behind
            _stop(pid)
    return same


def _stop(pid: int) -> tuple[int, int]:
    try:
        os.kill(pid, SIGKILL)
    except OSError:
        pass
    try:
        return os.waitpid(pid, 0)
    except ChildProcessError:
        return pid, 1 << 8  # already reaped: counts as "different"


def _share_same(work, share: int, n: int) -> bool:
    """Whether the stamps of the share-th of n contiguous parts of each list are as recorded
    (contiguous, not interleaved: each process then touches, and copies on write, only the
    memory of its own part)."""
    for base, dirs, dir_stamps, metas, meta_stamps, fd in work:
        if n > 1:
            d0, d1 = len(dirs) * share // n, len(dirs) * (share + 1) // n
            m0, m1 = len(metas) * share // n, len(metas) * (share + 1) // n
            dirs, dir_stamps = dirs[d0:d1], dir_stamps[d0:d1]
            metas, meta_stamps = metas[m0:m1], meta_stamps[m0:m1]
        if not _same(base, dirs, dir_stamps, metas, meta_stamps, fd):
            return False
    return True


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
