"""The coordinator's side of a campaign run, whatever the executor: what to run, storing
results exactly once, the journal, progress and the summary.

    run = Run(campaign, jobs, rerun=False, listener=print_progress)
    for job in run.todo: ...                 # the jobs not finished yet
    run.started(job, attempt=1, worker="pi")
    run.finished(job, outcome, worker={...}) # stores the records (once per job id), journals
                                             # (outcome in memory or in wire form: cr.campaign.wire)
                                             # and keeps only their uids and key metrics
    run.summary()                            # one row per job

Every stored record carries ``campaign`` ({"name", "uid", "job", "attempt"}) and
``worker`` ({"name", "host", "platform"}), and the platform of the machine that ran it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import CRError
from . import journal as journals
from .spec import Campaign, CampaignJob
from .wire import from_wire

STATES = ("done", "running", "failed", "unplaceable", "skipped", "remaining")


def eta_s(durations: list[float], remaining: int, running_elapsed: list[float], parallelism: int) -> float | None:
    """Seconds until the campaign's jobs are through, from the durations of the jobs finished
    so far: their median for each job still to start, what the median leaves of each running
    one, spread over the jobs that run at once. None before any job finished: an ETA then
    would be a guess (the first jobs also set solutions up and install software)."""
    if not durations:
        return None
    from statistics import median

    per = median(durations)
    work = per * remaining + sum(max(per - e, 0.0) for e in running_elapsed)
    return work / max(1, parallelism)


@dataclass
class Progress:
    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    unplaceable: int = 0
    skipped: int = 0
    already: int = 0  # finished by an earlier run (not counted in done)
    started_at: float = field(default_factory=time.monotonic)
    durations: list = field(default_factory=list)  # seconds of each job finished in this run (started -> outcome)
    since: dict = field(default_factory=dict)  # job id -> when its current attempt started
    parallelism: int = 1  # the most jobs seen running at once
    clock: object = time.monotonic

    @property
    def remaining(self) -> int:
        return self.total - self.done - self.failed - self.unplaceable - self.skipped - self.running

    def begin(self, job_id: str) -> None:
        self.running += 1
        self.since[job_id] = self.clock()
        self.parallelism = max(self.parallelism, self.running)

    def end(self, job_id: str, measured: bool) -> None:
        """The job's attempt ended; measured: it ran to an outcome (its duration counts)."""
        self.running -= 1
        began = self.since.pop(job_id, None)
        if measured and began is not None:
            self.durations.append(self.clock() - began)

    def eta_s(self) -> float | None:
        now = self.clock()
        return eta_s(self.durations, self.remaining, [now - t for t in self.since.values()], self.parallelism)

    def line(self) -> str:
        left = self.remaining + self.running
        eta = self.eta_s() if left else None
        return (f"{self.done} done, {self.running} running, {self.failed} failed, {self.unplaceable} unplaceable, "
                f"{self.skipped} skipped, {self.remaining} remaining"
                + (f", ETA {eta:.0f} s" if eta is not None else ", ETA unknown" if left else ""))


class Run:
    """One run of a campaign: the jobs still to do and what became of each."""

    def __init__(self, campaign: Campaign, jobs: list[CampaignJob], rerun: bool = False, listener=None):
        from ..results.store import default_store

        self.campaign = campaign
        self.jobs = jobs
        self.journal = journals.Journal(campaign.name, campaign.uid)
        self.store = default_store()
        self.listener = listener or (lambda kind, job, info: None)
        before = journals.state(self.journal.events())
        self.outcomes: dict[str, dict] = {}
        self.attempts: dict[str, int] = {j.id: before.get(j.id, {}).get("attempts", 0) for j in jobs}
        self.todo: list[CampaignJob] = []
        for job in jobs:
            prior = before.get(job.id)
            if prior and prior.get("storing") and not rerun:
                prior = self._finish_storing(job, prior)
            if not rerun and prior and prior["state"] == "done" and journals.stored(prior["results"], self.store):
                self.outcomes[job.id] = {"state": "done", "results": prior["results"], "worker": prior["worker"], "earlier": True}
            else:
                self.todo.append(job)
        self.progress = Progress(total=len(self.todo), already=len(jobs) - len(self.todo))

    def _finish_storing(self, job: CampaignJob, prior: dict) -> dict:
        """A job whose coordinator stopped while storing its records (the journal says
        "storing", then nothing): every record stored -> it is done (journaled now, not run
        again); some -> those are removed and it runs again. Either way each result is in the
        store once."""
        storing = prior["storing"]
        uids = storing["results"]
        present = [u for u in uids if journals.stored([u], self.store)]
        if uids and len(present) == len(uids):
            self.journal.append(job.id, "done", attempt=storing["attempt"], worker=prior.get("worker"), results=uids,
                                recovered=True)
            return {**prior, "state": "done", "results": uids}
        if present:
            self.store.remove(present)
        self.journal.append(job.id, "attempt-failed", attempt=storing["attempt"], worker=prior.get("worker"),
                            error="the coordinator stopped while storing this job's results; the ones stored were removed")
        return {**prior, "state": "retrying"}

    # -- events ------------------------------------------------------------------------

    def started(self, job: CampaignJob, worker: str) -> int:
        self.attempts[job.id] += 1
        attempt = self.attempts[job.id]
        self.journal.append(job.id, "started", attempt=attempt, worker=worker)
        self.outcomes[job.id] = {"state": "running", "worker": worker, "attempt": attempt}
        self.progress.begin(job.id)
        self.listener("started", job, {"worker": worker, "attempt": attempt})
        return attempt

    def attempt_failed(self, job: CampaignJob, worker: str, error: str) -> None:
        """An attempt that ended without an outcome (its worker left): the job may run again."""
        self.journal.append(job.id, "attempt-failed", attempt=self.attempts[job.id], worker=worker, error=error)
        if self.outcomes.get(job.id, {}).get("state") == "running":
            self.progress.end(job.id, measured=False)
        self.outcomes[job.id] = {"state": "retrying", "worker": worker, "error": error}
        self.listener("retry", job, {"worker": worker, "error": error})

    def is_final(self, job: CampaignJob) -> bool:
        return self.outcomes.get(job.id, {}).get("state") in ("done", "failed", "unplaceable", "skipped")

    def finished(self, job: CampaignJob, outcome: dict, worker: dict, sync: bool = True) -> None:
        """Store the outcome's records (once: a second outcome of a finished job is ignored).
        sync=False leaves the journal's fsync to sync(), for a batch of outcomes."""
        if self.is_final(job):
            return
        if self.outcomes.get(job.id, {}).get("state") == "running":
            self.progress.end(job.id, measured=True)
        attempt = self.attempts[job.id] or 1
        uids, not_stored = [], None
        try:
            outcome = from_wire(outcome)
        except CRError as exc:  # latencies that do not match their record: nothing of it is stored
            outcome = {**outcome, "status": "failed", "records": [],
                       "error": {"message": f"the outcome from worker {worker.get('name')} is damaged: {exc.message}",
                                 "hint": "run the campaign again: the job runs again"}}
        records = outcome.get("records") or []
        if records:  # before the store: a coordinator stopped in between is recognised on the next run
            self.journal.append(job.id, "storing", attempt=attempt, results=[r.get("uid") for r in records])
        for record in records:
            record["campaign"] = {"name": self.campaign.name, "uid": self.campaign.uid, "job": job.id, "attempt": attempt}
            record["worker"] = {k: worker.get(k) for k in ("name", "host", "gpu") if worker.get(k) is not None}
            if worker.get("platform"):
                record["platform"] = worker["platform"]
            try:
                self.store.add(record)
                uids.append(record["uid"])
            except (CRError, OSError) as exc:
                not_stored = getattr(exc, "message", None) or str(exc)
        error, state = outcome.get("error"), outcome.get("status")
        if not_stored:
            error = {"message": f"a result was not stored: {not_stored}", "hint": "free space or fix CR_HOME/results, then rerun"}
        name = worker.get("name")
        # Only the key metrics stay: the records (and their latencies) are in the store now,
        # and a campaign of thousands of jobs must not hold every one of them.
        metrics = key_metrics(records)
        del records, outcome
        if state == "ok" and not error:
            self.journal.append(job.id, "done", sync=sync, attempt=attempt, worker=name, results=uids)
            self.outcomes[job.id] = {"state": "done", "results": uids, "worker": name, "metrics": metrics}
            self.progress.done += 1
        else:
            self.journal.append(job.id, "failed", attempt=attempt, worker=name, results=uids, error=error)
            self.outcomes[job.id] = {"state": "failed", "results": uids, "worker": name, "error": error, "metrics": metrics}
            self.progress.failed += 1
        self.listener(self.outcomes[job.id]["state"], job, self.outcomes[job.id])

    def event(self, job: CampaignJob, worker: str | None, text: str) -> None:
        """What a worker says it is doing for job (setting up, installing X, a benchmark's phase):
        for the progress line and the coordinator's log; not journaled."""
        self.listener("event", job, {"worker": worker, "text": text})

    def not_run(self, job: CampaignJob, state: str, reason: str) -> None:
        """A job that will not run in this run: skipped (local) or unplaceable (no worker)."""
        if self.is_final(job):
            return
        if self.outcomes.get(job.id, {}).get("state") == "running":
            self.progress.end(job.id, measured=False)
        self.journal.append(job.id, state, reason=reason)
        self.outcomes[job.id] = {"state": state, "reason": reason}
        setattr(self.progress, state, getattr(self.progress, state) + 1)
        self.listener(state, job, {"reason": reason})

    def sync(self) -> None:
        self.journal.sync()

    def interrupted(self) -> None:
        for job in self.todo:
            if self.outcomes.get(job.id, {}).get("state") == "running":
                self.journal.append(job.id, "interrupted")
        self.journal.close()

    def close(self) -> None:
        self.journal.close()

    # -- the end -------------------------------------------------------------------------

    def failed_any(self) -> bool:
        return any(o.get("state") in ("failed", "unplaceable") for o in self.outcomes.values())

    def summary(self) -> list[dict]:
        """One row per job: solution, platform, setting, status, p50, throughput, top-1, results."""
        rows = []
        for job in self.jobs:
            o = self.outcomes.get(job.id) or {"state": "pending"}
            metrics = o.get("metrics")
            if metrics is None:  # finished by an earlier run: read from the store, one job at a time
                records = []
                for uid in o.get("results") or []:
                    try:
                        records.append(self.store.get(uid))
                    except CRError:
                        pass
                metrics = key_metrics(records)
            rows.append({"job": job.id, "solution": job.solution, "platform": job.platform, "setting": job.setting,
                         "repetition": job.repetition, "state": o["state"], "worker": o.get("worker"),
                         "attempts": self.attempts.get(job.id, 0), "results": o.get("results") or [],
                         "error": (o.get("error") or {}).get("message") if isinstance(o.get("error"), dict) else o.get("error"),
                         "reason": o.get("reason"), "earlier": bool(o.get("earlier")), **metrics})
        return rows


def key_metrics(records: list[dict]) -> dict:
    """p50 (ns), throughput (samples/s) of the first benchmark; top-1 of the first validation."""
    out = {"p50_ns": None, "samples_per_s": None, "top1": None}
    for r in records:
        m = r.get("metrics") or {}
        if r.get("action") == "benchmark" and out["p50_ns"] is None and m.get("latency_ns"):
            out["p50_ns"] = m["latency_ns"].get("p50")
            out["samples_per_s"] = (m.get("throughput") or {}).get("samples_per_s")
        v = r.get("validation") or {}
        if out["top1"] is None and v.get("top1") is not None:
            out["top1"] = v["top1"]
    return out


def status(campaign: Campaign, jobs: list[CampaignJob]) -> list[dict]:
    """Per job, from the journal: platform, state, attempts, worker, result uids or error."""
    from ..results.store import default_store

    st = journals.state(journals.Journal(campaign.name, campaign.uid).events())
    store = default_store()
    rows = []
    for job in jobs:
        s = st.get(job.id) or {"state": "pending", "attempts": 0, "worker": None, "results": [], "error": None, "reason": None, "history": []}
        state = s["state"]
        if state == "done" and not journals.stored(s["results"], store):
            state = "pending"  # its results were removed: the next run runs it again
        err = s.get("error")
        rows.append({"job": job.id, "solution": job.solution, "platform": job.platform, "setting": job.setting,
                     "repetition": job.repetition, "state": state, "attempts": s["attempts"], "worker": s["worker"],
                     "results": s["results"], "error": err.get("message") if isinstance(err, dict) else err,
                     "reason": s.get("reason"), "failed_attempts": s.get("history") or []})
    return rows


def result_uids(campaign: Campaign) -> list[str]:
    """Every result uid a run of this campaign stored (done and failed jobs)."""
    uids: list[str] = []
    for e in journals.Journal(campaign.name, campaign.uid).events():
        if e.get("event") in ("done", "failed"):
            uids += [u for u in e.get("results") or [] if isinstance(u, str)]
    return list(dict.fromkeys(uids))
