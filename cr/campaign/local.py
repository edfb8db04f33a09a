"""The local executor: the campaign's jobs one at a time on this machine.

One at a time because benchmarks must not compete for cores. Each job runs in the
environment of its own target (cr.campaign.jobs.run_here); with the install option
(`cr campaign run --install`) the software a job's stack lacks is installed first. A job whose platform target
this machine does not match is skipped, with the reason (what it lacks). Ctrl-C ends the
run after the journal records which job was cut short; a rerun resumes.
"""
from __future__ import annotations

import socket

from .coordinator import Run
from .executors import Executor, Option
from .jobs import run_here
from .placement import lacking


class LocalExecutor(Executor):
    name = "local"
    summary = "one job at a time on this machine"
    OPTIONS = (Option("install", bool, False, "install the software a job's own stack lacks (else the job fails naming it)",
                      flag="--install"),)

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
            outcome = run_here(job, job.solution, init=job.solution not in inited,
                               install=bool(self.options.get("install")))
            if outcome["status"] == "ok":
                inited.add(job.solution)
            run.finished(job, outcome, worker)
