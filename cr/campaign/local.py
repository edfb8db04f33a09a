"""The local executor: the campaign's jobs one at a time on this machine.

One at a time because benchmarks must not compete for cores. A job whose platform target
this machine does not match is skipped, with the reason (what it lacks). Ctrl-C ends the
run after the journal records which job was cut short; a rerun resumes.
"""
from __future__ import annotations

import socket

from .coordinator import Run
from .executors import Executor
from .jobs import run_here
from .placement import lacking


class LocalExecutor(Executor):
    name = "local"
    summary = "one job at a time on this machine"

    def where(self) -> str:
        return "this machine"

    def run(self, run: Run) -> None:
        from ..platform import current

        here = current()
        worker = {"name": "local", "host": socket.gethostname()}
        inited: set[str] = set()
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
