"""The local executor: the campaign's jobs one at a time on this machine.

One at a time because benchmarks must not compete for cores. A job whose platform target
this machine does not match is skipped, with the reason (what it lacks). Ctrl-C ends the
run after the journal records which job was cut short; a rerun resumes.
"""
from __future__ import annotations

import socket

from .coordinator import Run
from .jobs import lacking, run_here


def run_local(run: Run) -> None:
    from ..platform import current

    here = current()
    worker = {"name": "local", "host": socket.gethostname()}
    inited: set[str] = set()
    try:
        for job in run.todo:
            reason = lacking(job.target, here)
            if reason:
                run.not_run(job, "skipped", f"this machine {reason}")
                continue
            run.started(job, "local")
            outcome = run_here(job, job.solution, init=job.solution not in inited)
            if outcome["status"] == "ok":
                inited.add(job.solution)
            run.finished(job, outcome, worker)
    except KeyboardInterrupt:
        run.interrupted()
        raise
    run.close()
