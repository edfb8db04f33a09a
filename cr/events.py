"""Reporter hooks: the core never prints, it tells a Reporter.

The default Reporter ignores everything; the CLI installs one that renders warnings
on stderr and progress bars with rich. Library users may pass their own.
"""
from __future__ import annotations


class Reporter:
    """No-op base. Subclass and override what you want to see."""

    def warning(self, message: str) -> None:
        """A problem that does not stop the operation (a malformed meta, a shadowed duplicate)."""

    def info(self, message: str) -> None:
        """A step worth telling a user about (cloning, indexing)."""

    def progress(self, task: str, done: int, total: int | None, unit: str = "B") -> None:
        """Progress of long work; total is None when unknown. unit: what done and total
        count, "B" for bytes (shown in MB), else a plural noun ("results", "trials")."""

    def phase(self, task: str, name: str | None, detail: str = "", expect_s: float | None = None,
              max_s: float | None = None) -> None:
        """Long work (task: "benchmark solution:lenet-digits-onnxruntime") entered phase name
        ("resolve", "load", "warm-up", "steady", "action 1/2 benchmark"); detail: a few words
        more; expect_s / max_s: how long the phase should last and may last at most, from
        the run's own limits (None: unknown). name None: the task ended (detail: how)."""


class CollectingReporter(Reporter):
    """Keeps warnings and infos in lists; handy in tests and in the library API."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.infos: list[str] = []
        self.phases: list[tuple[str, str | None, str]] = []  # (task, phase, detail)

    def warning(self, message: str) -> None:
        self.warnings.append(message)

    def info(self, message: str) -> None:
        self.infos.append(message)

    def phase(self, task, name, detail="", expect_s=None, max_s=None) -> None:
        self.phases.append((task, name, detail))


_current: Reporter = Reporter()
_local = None  # threading.local() once a thread has a reporter of its own (for_this_thread)


def reporter() -> Reporter:
    """The reporter in force for this thread: its own (for_this_thread), else the process's."""
    if _local is not None:
        own = getattr(_local, "reporter", None)
        if own is not None:
            return own
    return _current


class for_this_thread:
    """with for_this_thread(rep): events of this thread go to rep (a campaign worker runs
    several jobs in threads, each forwarding its own events to its coordinator)."""

    def __init__(self, rep: Reporter) -> None:
        self.rep = rep

    def __enter__(self):
        global _local
        if _local is None:
            import threading

            _local = threading.local()
        self._old = getattr(_local, "reporter", None)
        _local.reporter = self.rep
        return self

    def __exit__(self, *exc) -> None:
        _local.reporter = self._old


def set_reporter(new: Reporter) -> Reporter:
    """Install a reporter; returns the previous one so callers can restore it."""
    global _current
    old, _current = _current, new
    return old


class _WithoutInfo(Reporter):
    """Passes warnings and progress on to another reporter, drops infos."""

    def __init__(self, inner: Reporter) -> None:
        self.inner = inner

    def warning(self, message: str) -> None:
        self.inner.warning(message)

    def progress(self, task: str, done: int, total: int | None, unit: str = "B") -> None:
        self.inner.progress(task, done, total, unit)

    def phase(self, task, name, detail="", expect_s=None, max_s=None) -> None:
        self.inner.phase(task, name, detail, expect_s, max_s)


class quiet_info:
    """with quiet_info(): infos (routine steps such as resolving a lock) are not shown;
    warnings and progress still are."""

    def __enter__(self):
        self._old = set_reporter(_WithoutInfo(reporter()))
        return self

    def __exit__(self, *exc) -> None:
        set_reporter(self._old)
