"""Phases of long work on stderr (the CLI's rendering of Reporter.phase events).

    view = PhaseView()                      # CLIReporter makes one on the first phase
    view.phase("benchmark model:lenet-digits", "steady", expect_s=10.2, max_s=25.0)
    view.phase("benchmark model:lenet-digits", None, "ran")  # the task ended

On a terminal it is one live line, rewritten in place: every open task's phase, the
innermost with its elapsed time and ETA (from the phase's expected duration, which comes
from the run's own limits), redrawn twice a second by a ticker thread in cr, never by the
measured child. Each task that ends leaves one line ("benchmark ...: ran in 14.2 s").
Elsewhere (a pipe, a log file) each phase is one plain line when it starts, and nothing is
rewritten. `cr -q` shows none of it (CLIReporter never makes a view); stdout is never used.

Tentative phases ("resolve", a solution's "action i/n"), where bad input is found, are held
(in a pipe) until the work gets past them: a command refused for a misspelt backend prints
its Error: and Hint: lines alone, as before, and a task that ends in them leaves no line.

Why not rich's Live or Progress: they own the terminal while they run, so the warnings
and infos cr prints meanwhile would have to go through them, and importing rich costs more
than this whole line; a carriage return and an erase-to-end-of-line is all a phase needs.
"""
from __future__ import annotations

import sys
import threading
import time

TICK_S = 0.5


def _s(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def limits(expect_s: float | None, max_s: float | None) -> str:
    """' (about 10 s, at most 25 s)' or '' : what a phase line says of its duration."""
    parts = []
    if expect_s is not None:
        parts.append(f"about {_s(expect_s)}")
    if max_s is not None and (expect_s is None or max_s > expect_s * 1.05):
        parts.append(f"at most {_s(max_s)}")
    return f" ({', '.join(parts)})" if parts else ""


def eta(elapsed: float, expect_s: float | None, max_s: float | None) -> str:
    """What is left of a phase: 'ETA 7 s', 'ETA at most 12 s', 'finishing' or '' (unknown)."""
    if expect_s is not None and expect_s - elapsed >= 0.5:
        return f"ETA {_s(expect_s - elapsed)}"
    if max_s is not None and max_s - elapsed >= 0.5:
        return f"ETA at most {_s(max_s - elapsed)}"
    return "finishing" if expect_s is not None or max_s is not None else ""


def _short(task: str) -> tuple[str, str]:
    """("benchmark", "lenet-digits-onnxruntime") of "benchmark solution:lenet-digits-onnxruntime@1.0.0":
    what the live line names (a terminal line has no room for kinds and versions, nor for
    the same solution twice)."""
    verb, _, ref = task.partition(" ")
    return verb, ref.partition(":")[2].partition("@")[0] or ref if ":" in ref else ref


class _Open:
    __slots__ = ("name", "detail", "expect_s", "max_s", "since", "began", "real")

    def __init__(self, began: float):
        self.began, self.real = began, False
        self.name, self.detail, self.expect_s, self.max_s, self.since = "", "", None, None, began


class PhaseView:
    def __init__(self, stream=None, tty: bool | None = None, clock=time.monotonic):
        self.stream = stream
        self.tty = self._stream().isatty() if tty is None else tty
        self.clock = clock
        self.open: dict[str, _Open] = {}  # task -> its current phase, in the order the tasks began
        self._lock = threading.RLock()
        self._shown = False  # a live line is on the terminal
        self._pending: list[tuple[str, str]] = []  # pipe: tentative phases' lines, held until work gets past them
        self._ticker: threading.Thread | None = None
        self.status = ""  # a whole run's own line (a campaign's counts and ETA), shown before the phases

    def _stream(self):
        return self.stream or sys.stderr

    def _write(self, text: str) -> None:
        out = self._stream()
        if out is None:
            return
        try:
            out.write(text)
            out.flush()
        except (OSError, ValueError):  # a closed stderr: progress is not worth an error
            pass

    def phase(self, task: str, name: str | None, detail: str = "", expect_s: float | None = None,
              max_s: float | None = None) -> None:
        from ..textsafe import shown as clean  # names from refs and metas: one line, no escape sequences

        task, detail = clean(task), clean(detail)
        with self._lock:
            now = self.clock()
            if name is None:
                state = self.open.pop(task, None)
                self._pending = [(t, line) for t, line in self._pending if t != task]
                self._clear()
                if state is not None and state.real:  # work that ended in a tentative phase leaves no line
                    self._write(f"{task}: {detail or 'done'} in {_s(now - state.began)}\n")
                self._draw()
                return
            state = self.open.get(task) or self.open.setdefault(task, _Open(now))
            state.name, state.detail, state.expect_s, state.max_s, state.since = clean(name), detail, expect_s, max_s, now
            tentative = state.name == "resolve" or state.name.startswith("action ")
            if not tentative:
                for t in self.open.values():  # the work got past its checks: every open task is real now
                    t.real = True
            if not self.tty:
                line = f"{task}: {state.name}{f' ({detail})' if detail else ''}{limits(expect_s, max_s)}\n"
                if tentative:
                    self._pending.append((task, line))
                    return
                for _, held in self._pending:
                    self._write(held)
                self._pending = []
                self._write(line)
                return
            self._draw()
            self._start_ticker()

    def _start_ticker(self) -> None:
        if self.tty and (self._ticker is None or not self._ticker.is_alive()):
            self._ticker = threading.Thread(target=self._tick, daemon=True, name="cr-progress")
            self._ticker.start()

    def set_status(self, text: str | None) -> None:
        """A run's own summary (a campaign's "3/8 done, ETA 40 s") at the head of the live line, so a
        local campaign's job phases and its counts share one line instead of overwriting each other.
        None or "" takes it off."""
        from ..textsafe import shown as clean

        with self._lock:
            self.status = clean(text or "")
            if not self.status and not self.open:
                self._clear()
                return
            self._draw()
            self._start_ticker()

    def line(self) -> str:
        """The live line: the run's status, then each open task's phase, the innermost with
        elapsed time and ETA."""
        with self._lock:
            now = self.clock()
            items = list(self.open.items())
            status = self.status
        parts, seen = ([status] if status else []), set()
        for i, (task, st) in enumerate(items):
            verb, ref = _short(task)
            text = f"{verb if ref in seen else f'{verb} {ref}'}: {st.name}{f' ({st.detail})' if st.detail else ''}"
            if i == len(items) - 1:
                elapsed = now - st.since
                left = eta(elapsed, st.expect_s, st.max_s)
                text += f" {_s(elapsed)}" + (f", {left}" if left else "")
            parts.append(text)
            seen.add(ref)
        return " | ".join(parts)

    def _draw(self) -> None:
        if not self.tty or not (self.open or self.status):
            return
        import shutil

        width = shutil.get_terminal_size((100, 24)).columns - 1
        text = self.line()
        if len(text) > width:
            text = "..." + text[-(width - 3):]  # the innermost phase and its ETA are at the end
        self._write("\r" + text + "\x1b[K")
        self._shown = True

    def _clear(self) -> None:
        if self._shown:
            self._write("\r\x1b[K")
            self._shown = False

    def clear(self) -> None:
        """Take the live line off before something else is printed (the next tick redraws it)."""
        with self._lock:
            self._clear()

    def _tick(self) -> None:
        while True:
            time.sleep(TICK_S)
            with self._lock:
                if not self.open and not self.status:
                    return
                self._draw()
