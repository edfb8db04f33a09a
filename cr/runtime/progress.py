"""Phase marks from the runtime child to cr: one JSON line per phase boundary.

    from cr.runtime import progress
    progress.mark("warm-up", max_s=5.0)
    progress.mark("steady", expect_s=10.2, max_s=25.0)   # written *before* the timed loop starts

Every child cr starts through cr.run.launch.run_job marks its phases this way: a benchmark
or validation, a profile (warm-up, plain queries, the profiled run, layer table, trace) and
each hop of a compile ("step 2/3 onnx -> tflite (onnx2tf-tflite, onnx2tf)", parity check).

The parent (cr.run.launch) passes the write end of a pipe and names it in CR_PROGRESS_FD;
without it (the harness in a test or a script) a mark does nothing. A mark is written only
between phases, never inside the timed window: nothing the child does while it measures
depends on anyone watching. The parent's reader thread blocks on the pipe; on a terminal
the CLI's ticker shows the elapsed time and ETA of the phase (cr.cli.progress).

stdlib only: it runs in the measured process.
"""
from __future__ import annotations

import json
import os

ENV = "CR_PROGRESS_FD"


def _fd() -> int | None:
    raw = os.environ.get(ENV)
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


_FD = _fd()


def mark(phase: str, **info) -> None:
    """Tell the parent the run entered phase (info: expect_s, max_s, samples... JSON values)."""
    if _FD is None:
        return
    try:
        os.write(_FD, (json.dumps({"phase": phase, **info}) + "\n").encode())
    except (OSError, TypeError, ValueError):  # no parent listening, or a value JSON cannot hold: never the run's failure
        pass


def steady_estimate(settings, query_ns: float | None) -> tuple[float | None, float | None]:
    """(expected seconds, at most seconds) of the measured phase, from the run's own limits
    (min_duration_s, min_queries, max_duration_s, sustained_s, target_qps) and the warm-up's
    median query time (None: unknown, the minimum duration is then the guess)."""
    if getattr(settings, "sustained_s", None):
        return float(settings.sustained_s), float(settings.sustained_s)
    least = float(settings.min_duration_s or 0.0)
    most = max(float(settings.max_duration_s), least) if settings.max_duration_s else None
    per = None
    if settings.scenario == "server" and settings.target_qps:
        per = 1.0 / float(settings.target_qps)
    elif query_ns:
        per = query_ns / 1e9
    expect = max(least, settings.min_queries * per) if per is not None else (least or None)
    if expect is not None and most is not None:
        expect = min(expect, most)
    return expect, most
