"""A sustained run's window rule, on the device side (the harness checks it before the run)
and the host's (the CLI and campaign check it first): standard library.

    window_for(300.0)                # 1.0: the default window (duration / MAX_WINDOWS above 10 min)
"""
from __future__ import annotations

from ..durations import format_duration
from ..errors import CRError

MAX_WINDOWS = 600  # the default window is 1 s, longer for runs above 10 minutes
MIN_WINDOW_S = 0.1


def window_for(duration_s: float, window_s: float | None = None, where: str = "--sustained-window") -> float:
    """The window length: window_s, else 1 s (duration / MAX_WINDOWS for runs above 10 min);
    CRError when a run would have fewer than two windows or a window below MIN_WINDOW_S."""
    window = float(window_s) if window_s else max(1.0, duration_s / MAX_WINDOWS)
    if window < MIN_WINDOW_S:
        raise CRError(f"{where}: a window of {window:g} s is shorter than {MIN_WINDOW_S:g} s",
                      hint="a window needs enough queries for a p99: use 1s (the default) or longer")
    if duration_s < 2 * window:
        raise CRError(f"{where}: a window of {format_duration(window)} leaves fewer than two windows in a "
                      f"{format_duration(duration_s)} sustained run",
                      hint=f"use a window of at most {format_duration(duration_s / 2)}, or a longer --sustained")
    return window
