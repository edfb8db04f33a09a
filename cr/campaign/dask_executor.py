"""The cluster executor (registered as ``dask``): a campaign's jobs on the workers of a
`cr scheduler` (`cr worker` processes).

    cr campaign run NAME --scheduler tcp://127.0.0.1:8786 --retries 2 --wait-for-workers 3
    DaskExecutor(scheduler="tcp://127.0.0.1:8786", retries=2, wait_for_workers=3).run(run)

It keeps its name and options from when the cluster was a Dask one; since issue 24 the
cluster speaks cr's own wire (cr.campaign.link, cr.campaign.cluster): the coordinator
sends jobs as JSON and archives as bytes, and receives events and outcomes as data. Nothing
the scheduler sends is unpickled or run here.

Placement is checked by cr (cr.campaign.placement): before a job is submitted, and whenever
a worker leaves, a job that no connected worker matches is reported unplaceable at once,
naming for each worker what it lacks. A job is submitted restricted to the workers that
match, asking for one ``benchmark`` slot (or one ``gpu`` slot) and its capability labels.
Each solution's archive goes to the scheduler once, with its sha256; a worker gets it
with each job and checks it (cr.campaign.worker): workers need no shared file system. The
scheduler says when it sent a job to a worker (``started``, naming the worker from its own
state), when a worker left mid-job (``lost``: it queues the job again while --retries
lasts) and what came back (``result``, the outcome of the worker the job was sent to). At
most WINDOW jobs per slot are in flight, so the memory of both stays flat.
"""
from __future__ import annotations

import queue
import threading
import time
from collections import deque

from ..errors import CRError
from .coordinator import Run
from .executors import Executor, Option
from .link import INSECURE_FLAG, LinkError, address as full_address, as_tls, check_plain, connect as link_to, split
from .placement import needs, placement, slots, unplaceable_reason
from .spec import CampaignJob
from .wire import Archives

WINDOW = 8  # jobs in flight per slot of the cluster (at least MIN_WINDOW)
MIN_WINDOW = 16
WAIT_S = 0.5


class DaskExecutor(Executor):
    """The jobs on the cr workers of a cr scheduler (`cr scheduler`, `cr worker`)."""

    name = "dask"
    summary = "on the cr workers of the cr scheduler (--scheduler ADDR)"
    OPTIONS = (
        Option("scheduler", str, None, "the scheduler's address, tcp://HOST:PORT or tls://... (cr scheduler prints it)",
               required=True, flag="--scheduler"),
        Option("retries", int, 2, "runs of a job again after its worker left mid-job", flag="--retries"),
        Option("wait_for_workers", int, 0, "wait until this many cr workers joined", flag="--wait-for-workers"),
        Option("timeout", float, 60.0, "seconds to wait for wait_for_workers", flag="--timeout"),
        Option("connect_timeout", float, 10.0, "seconds to wait for the scheduler to answer", flag="--connect-timeout"),
        Option("tls_ca_file", str, None, "TLS: the CA certificate (PEM) both sides trust", flag="--tls-ca-file"),
        Option("tls_cert", str, None, "TLS: this side's certificate (PEM)", flag="--tls-cert"),
        Option("tls_key", str, None, "TLS: this side's private key (PEM)", flag="--tls-key"),
        Option("insecure_no_tls", bool, False, "connect to a scheduler off loopback without TLS (anyone on the network "
               "can read and change what crosses)", flag=INSECURE_FLAG),
        Option("security", object, None, "a cr.campaign.link.Tls (or a distributed.Security naming its files) instead "
               "of the tls_* files (library)"),
    )

    def __init__(self, scheduler: str, retries: int = 2, wait_for_workers: int = 0, timeout: float = 60.0,
                 connect_timeout: float = 10.0, tls_ca_file: str | None = None, tls_cert: str | None = None,
                 tls_key: str | None = None, insecure_no_tls: bool = False, security=None, noop: bool = False):
        from .link import security as tls

        self.security = as_tls(security) if security is not None else tls(tls_ca_file, tls_cert, tls_key)
        self.address = full_address(scheduler, self.security)
        check_plain(split(self.address)[0], self.security, bool(insecure_no_tls), "the scheduler is at")
        self.retries, self.wait_for_workers, self.timeout = retries, wait_for_workers, timeout
        self.connect_timeout = connect_timeout
        self.noop = noop  # dispatch only (benchmarks/bench_campaign.py): run no job, measure the round trip

    def where(self) -> str:
        return self.address

    def run(self, run: Run) -> None:
        session = Session(self.address, self.security, self.connect_timeout)
        try:
            if self.wait_for_workers:
                session.wait_for(self.wait_for_workers, self.timeout)
            run_jobs(run, session, self.retries, self.noop)
        finally:  # also on Ctrl-C: the scheduler drops the queued jobs of a coordinator that leaves
            session.close()


class Session:
    """This coordinator's connection to the scheduler: messages in a queue read by a thread."""

    def __init__(self, addr: str, sec, timeout: float):
        try:
            self.link = link_to(addr, sec, timeout)
            self.link.send({"op": "hello", "role": "coordinator"})
            answer, _ = self.link.recv(timeout=timeout)
        except (OSError, LinkError) as exc:
            raise CRError(f"the scheduler at {addr} does not answer (waited {timeout:g} s): {type(exc).__name__}",
                          hint="start it (cr scheduler) and check the address, the port and the --tls-* options") from None
        if answer.get("op") != "welcome":
            self.link.close()
            raise CRError(f"the scheduler at {addr} refused this coordinator", hint="check the address")
        self.addr = addr
        self.workers: dict[str, dict] = {}
        try:  # the scheduler's view of its workers comes right after its welcome
            first, _ = self.link.recv(timeout=timeout)
        except LinkError as exc:
            raise CRError(f"the scheduler at {addr} went away: {exc}", hint="start it again") from None
        if first.get("op") == "workers" and isinstance(first.get("workers"), dict):
            self.workers = _workers(first["workers"])
        self.inbox: queue.Queue = queue.Queue()
        self.gone: str | None = None
        self.link.heartbeat()
        threading.Thread(target=self._read, daemon=True, name="cr-coordinator-reader").start()

    def _read(self) -> None:
        while True:
            try:
                msg, blobs = self.link.recv()
            except LinkError as exc:
                self.inbox.put(({"op": "gone", "why": str(exc)}, []))
                return
            self.inbox.put((msg, blobs))

    def next(self, timeout: float) -> tuple[dict, list] | None:
        try:
            msg, blobs = self.inbox.get(timeout=timeout)
        except queue.Empty:
            return None
        if msg.get("op") == "workers" and isinstance(msg.get("workers"), dict):
            self.workers = _workers(msg["workers"])
        elif msg.get("op") == "gone":
            raise CRError(f"the scheduler at {self.addr} went away: {msg.get('why')}",
                          hint="start it again; cr campaign run NAME resumes (finished jobs are skipped)")
        return msg, blobs

    def wait_for(self, n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.workers) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CRError(f"{len(self.workers)} cr worker(s) joined within {timeout:g} s, {n} were awaited",
                              hint="start more with cr worker --scheduler ADDR, or lower --wait-for-workers")
            got = self.next(min(left, WAIT_S))
            if got is not None and got[0].get("op") != "workers":
                self.inbox.put(got)  # pragma: no cover - nothing else comes before a submit

    def send(self, header: dict, blobs=()) -> None:
        try:
            self.link.send(header, blobs)
        except LinkError as exc:
            raise CRError(f"the scheduler at {self.addr} went away: {exc}",
                          hint="start it again; cr campaign run NAME resumes (finished jobs are skipped)") from None

    def close(self) -> None:
        self.link.close()


def _workers(view: dict) -> dict[str, dict]:
    """name -> {"name", "resources", "platform" (Platform), "info"} of the scheduler's view."""
    from ..platform.model import Platform

    out = {}
    for name, w in view.items():
        info = w.get("info") if isinstance(w, dict) else None
        res = w.get("resources") if isinstance(w, dict) else None
        if not isinstance(info, dict) or not isinstance(res, dict):
            continue
        try:
            platform = Platform.from_dict(info.get("platform") or {})
        except (CRError, TypeError, ValueError, KeyError, AttributeError):
            continue  # a platform this coordinator cannot read: that worker gets no job
        out[name] = {"name": name, "resources": res, "platform": platform, "info": info}
    return out


def connect(addr: str, sec=None, timeout: float = 10.0) -> Session:
    """A Session with the scheduler at addr (HOST:PORT or a full address)."""
    return Session(full_address(addr, sec), sec, timeout)


def run_jobs(run: Run, session: Session, retries: int, noop: bool, place=placement, on_left=None, hold=None,
             why_left=None) -> None:
    """The cluster executor's loop over a connected session (the slurm executor runs it too):
    placement, submission in a window, the scheduler's events into the Run, until every job is final.
    place: placement() or one that narrows it (the slurm executor's: a target's own worker jobs).
    on_left(names): told when workers left (the slurm executor submits a replacement worker job);
    hold(job): True while a job no worker fits should wait (a replacement is coming) rather
    than be reported unplaceable; why_left(worker): why a worker that left mid-job went, or
    None (the slurm executor asks Slurm: a time limit, preemption), added to the attempt's reason."""
    hold = hold or (lambda job: False)
    holding, gone = False, set()  # whether a job waits on hold(), the workers that left
    known = session.workers
    pending: deque[CampaignJob] = deque()
    for job in run.todo:
        fit, why = place(job, known)
        if fit:
            pending.append(job)
        else:
            run.not_run(job, "unplaceable", unplaceable_reason(job, why))
    by_key = {_key(j): j for j in run.todo}
    in_flight: set[str] = set()  # keys submitted and not final
    running_on: dict[str, str] = {}  # job id -> the worker name of its current attempt
    archives = Archives()
    sent: set[str] = set()  # archives the scheduler has
    while pending or in_flight:
        batch, held = [], []
        while pending and len(in_flight) + len(batch) < max(MIN_WINDOW, WINDOW * slots(known)):
            job = pending.popleft()
            fit, why = place(job, known)
            if not fit:
                if hold(job):
                    held.append(job)
                else:
                    run.not_run(job, "unplaceable", unplaceable_reason(job, why))
                continue
            batch.append(_spec(job, [known[n]["name"] for n in fit], retries, noop, archives, sent, session))
        pending.extendleft(reversed(held))
        if batch:
            session.send({"op": "submit", "jobs": batch})
            in_flight.update(b["key"] for b in batch)
        got = session.next(WAIT_S)
        finished = False
        while got is not None:
            msg, blobs = got
            finished |= _event(run, msg, blobs, by_key, in_flight, running_on, session, retries, why_left)
            got = session.next(0)
        if finished:
            run.sync()  # one fsync for the batch: every "done" above is on disk before more is submitted
        if session.workers is not known:
            left = {n for n in known if n not in session.workers}
            known = session.workers
            if left:
                gone |= left
                if on_left is not None:
                    on_left(left)
                holding = _worker_left(run, gone, in_flight, pending, by_key, running_on, known, session, place, hold)
        elif holding:  # a held job's replacement may have failed since: look again
            holding = _worker_left(run, gone, in_flight, pending, by_key, running_on, known, session, place, hold)


def _key(job: CampaignJob) -> str:
    return f"cr-job-{job.id}"


def _spec(job: CampaignJob, fit: list[str], retries: int, noop: bool, archives: Archives, sent: set, session) -> dict:
    spec = {"key": _key(job), "job": job.to_dict(), "kind": "noop" if noop else "job", "sha256": None,
            "needs": needs(job), "workers": fit, "retries": retries}
    if not noop:
        data, sha = archives.get(job.solution)
        if sha not in sent:
            session.send({"op": "archive", "sha256": sha}, [data])
            sent.add(sha)
        spec["sha256"] = sha
    return spec


def _event(run: Run, msg: dict, blobs: list, by_key: dict, in_flight: set, running_on: dict, session, retries: int,
           why_left=None) -> bool:
    """Apply one message of the scheduler to the run; True when a job became final."""
    op, key = msg.get("op"), msg.get("key")
    job = by_key.get(key) if isinstance(key, str) else None
    if job is None or run.is_final(job):
        return False
    name = msg.get("worker") if isinstance(msg.get("worker"), str) else None
    if op == "event":
        if isinstance(msg.get("text"), str):
            run.event(job, name, msg["text"])
        return False
    if op == "started":
        if run.outcomes.get(job.id, {}).get("state") == "running":
            # started again before the loss of the attempt before was told: that attempt ended
            _lost(run, job, running_on.get(job.id), True, in_flight, session, retries, why_left)
        running_on[job.id] = name
        run.started(job, name)
        return False
    if op == "lost":
        if msg.get("attempt") != run.attempts[job.id] or run.outcomes.get(job.id, {}).get("state") != "running":
            return False  # an attempt already counted as lost
        running_on.pop(job.id, None)
        return _lost(run, job, name, bool(msg.get("retry")), in_flight, session, retries, why_left)
    if op == "refused":
        in_flight.discard(key)
        run.finished(job, {"status": "failed", "records": [], "error": {
            "message": f"the scheduler refused the job: {str(msg.get('message'))[:300]}", "hint": None}}, {"name": None}, sync=False)
        return True
    if op == "result":
        in_flight.discard(key)
        outcome = msg.get("outcome") if isinstance(msg.get("outcome"), dict) else {}
        outcome = {**outcome, "latencies": _blobs(msg.get("latencies"), blobs)}
        worker = outcome.get("worker") if isinstance(outcome.get("worker"), dict) else {}
        worker = {**worker, "name": name}  # the scheduler's word for who ran it
        if run.outcomes.get(job.id, {}).get("state") != "running":
            run.started(job, name)
        running_on.pop(job.id, None)
        run.finished(job, outcome, worker, sync=False)
        return True
    return False


def _blobs(index, blobs: list) -> list | None:
    """The outcome's latencies (bytes or None per record) from the message's index into blobs."""
    if not isinstance(index, list):
        return None
    return [blobs[i] if type(i) is int and 0 <= i < len(blobs) else None for i in index]


def _lost(run: Run, job: CampaignJob, name: str | None, retry: bool, in_flight: set, session, retries: int,
          why_left=None) -> bool:
    """The current attempt of job ended with its worker: record it (with why_left(name) when
    it says); True when no retry is left (the job is then failed and cancelled at the scheduler)."""
    attempt = run.attempts[job.id]
    why = why_left(name) if why_left is not None and name else None
    run.attempt_failed(job, name, f"worker {name} left mid-job (attempt {attempt})" + (f": {why}" if why else ""))
    if retry:
        return False
    key = _key(job)
    if key in in_flight:
        in_flight.discard(key)
        session.send({"op": "cancel", "keys": [key]})
    run.finished(job, {"status": "failed", "records": [], "error": {
        "message": f"worker {name} left mid-job, attempt {attempt} of {retries + 1}" + (f" ({why})" if why else "")
                   + ": no retry is left",
        "hint": "raise --retries, or keep the workers running"}}, {"name": name})
    return True


def _worker_left(run: Run, left: set[str], in_flight: set, pending: deque, by_key: dict, running_on: dict,
                 known: dict, session, place=placement, hold=lambda job: False) -> bool:
    """Jobs that no remaining worker matches are unplaceable now (cancelled at the scheduler),
    unless hold(job) says a worker for them is coming; True when a job is held so."""
    cancel, held = [], False
    for key in list(in_flight):
        job = by_key[key]
        fit, why = place(job, known)
        if fit or run.is_final(job):
            continue
        if hold(job):
            held = True
        else:
            in_flight.discard(key)
            cancel.append(key)
            running_on.pop(job.id, None)
            run.not_run(job, "unplaceable", unplaceable_reason(job, why) + f" (after {', '.join(sorted(left))} left)")
    if cancel:
        session.send({"op": "cancel", "keys": cancel})
    for job in list(pending):
        fit, why = place(job, known)
        if fit:
            continue
        if hold(job):
            held = True
        else:
            pending.remove(job)
            run.not_run(job, "unplaceable", unplaceable_reason(job, why) + f" (after {', '.join(sorted(left))} left)")
    return held
