"""Work over many metas shared out over forked processes (a cold index build).

Reading, parsing and validating a meta costs ~100 µs of Python and a read that may wait
on the disk; a first build of 100,000 metas did that one after the other on one core. A
thread pool cannot share it out (the GIL), so, as cr.store.snapshot does for the stats
of a warm refresh, forked children each take a contiguous share of the list, compute
their results and send them back through a pipe (marshal: plain tuples of str, int,
bytes and None), while this process does its own share. A child that dies or sends
something unreadable costs nothing but time: its share is done again here. A process
with any other thread never forks (the child would inherit that thread's locks without
the thread), and neither does one on a single usable CPU or with little work.
"""
from __future__ import annotations

import marshal
import os
from typing import Callable, Sequence, TypeVar


T = TypeVar("T")
SIGKILL = 9  # POSIX fixes its number (importing signal would import enum)
# Below this many items the fork, the copy of the results and the wait cost more than
# what they share out (a fork of a ~60 MB process is a few ms; 500 metas are ~50 ms).
PARALLEL_MIN = 500
MAX_PROCESSES = 4


def processes(count: int) -> int:
    """How many processes (this one included) should share count items."""
    if count < PARALLEL_MIN or not hasattr(os, "fork") or not hasattr(os, "sched_getaffinity"):
        return 1
    try:
        if not single_threaded():
            return 1
        cpus = usable_cpus()
    except OSError:
        return 1
    return max(1, min(cpus, MAX_PROCESSES, count // (PARALLEL_MIN // 2)))


def map_shared(work: Callable[[T], object], items: Sequence[T]) -> list:
    """[work(item) for item in items], in order, shared out over forked processes.

    work must return what marshal can carry and must not touch state the parent relies on
    (a child's writes are lost; it never runs the parent's cleanup: it leaves by _exit).
    A share whose child failed is done again here.
    """
    n = processes(len(items))
    if n == 1:
        return [work(item) for item in items]
    bounds = [len(items) * share // n for share in range(n + 1)]

    def share_of(share: int) -> list:
        return [work(item) for item in items[bounds[share]:bounds[share + 1]]]

    results = run_shares(share_of, n)
    return [item for share, got in enumerate(results)
            for item in (got if isinstance(got, list) and len(got) == bounds[share + 1] - bounds[share]
                         else share_of(share))]


_FAILED = object()


def run_shares(compute: Callable[[int], object], n: int, stop: Callable[[object], bool] | None = None) -> list:
    """[compute(share) for share in range(n)], share 0 here and the others in forked children
    (the caller decides n: see processes()). A child that fails, dies or sends what cannot
    be read gives _FAILED (test with failed()). stop(result of share 0): when true, the
    children are stopped unheard and their results are _FAILED."""
    children: list[tuple[int, int, int]] = []  # (pid, read end, share)
    results: list = [_FAILED] * n
    try:
        for share in range(1, n):
            try:
                read_fd, write_fd = os.pipe()
            except OSError:
                break
            try:
                pid = os.fork()
            except OSError:
                os.close(read_fd)
                os.close(write_fd)
                break
            if pid == 0:  # the child: one share, its result down the pipe, nothing else
                code = 1
                try:
                    os.close(read_fd)
                    view = memoryview(marshal.dumps(compute(share)))
                    while view:
                        view = view[os.write(write_fd, view):]
                    code = 0
                finally:
                    os._exit(code)
            os.close(write_fd)
            children.append((pid, read_fd, share))
        handed_out = {share for _, _, share in children}
        for share in range(n):
            if share not in handed_out:  # share 0, and any no child could be started for
                results[share] = compute(share)
        if stop is not None and stop(results[0]):
            return results
        while children:
            pid, read_fd, share = children.pop(0)
            results[share] = _receive(pid, read_fd)
    finally:
        for pid, read_fd, _ in children:  # stopped early, or interrupted: none is left behind
            os.close(read_fd)
            _stop(pid)
    return results


def failed(result) -> bool:
    """Whether a result of run_shares is a child's failure."""
    return result is _FAILED


def _receive(pid: int, read_fd: int):
    """A child's result (_FAILED when it failed)."""
    chunks = []
    try:
        while True:
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    _, status = os.waitpid(pid, 0)
    if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
        return _FAILED
    try:
        return marshal.loads(b"".join(chunks))
    except (ValueError, EOFError, TypeError):
        return _FAILED


def single_threaded() -> bool:
    # A fork copies only the calling thread: never fork beside others (any thread of the
    # process, the C libraries' included, may hold a lock the child would need).
    return len(os.listdir("/proc/self/task")) == 1


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


def _stop(pid: int) -> None:
    try:
        os.kill(pid, SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
