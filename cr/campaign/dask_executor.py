"""The Dask executor: a campaign's jobs on the workers of a Dask cluster.

    cr campaign run NAME --scheduler tcp://127.0.0.1:8786 --retries 2 --wait-for-workers 3
    DaskExecutor(scheduler="tcp://127.0.0.1:8786", retries=2, wait_for_workers=3).run(run)

Placement is checked by cr (cr.campaign.placement), not left to Dask (which keeps a task no
worker can run pending forever, silently): before a job is submitted, and whenever a
worker leaves, a job that no connected worker matches is reported unplaceable at once,
naming for each worker what it lacks. A job is submitted restricted to the workers that
match (their markers and capabilities), asking for one ``benchmark`` slot (or one ``gpu``
slot) and its capability labels. Each job carries its solution's archive bytes and their
sha256 (cr.campaign.wire): workers need no shared file system. A worker that leaves
mid-job fails that attempt (recorded with its name); Dask runs the job again on another
matching worker, up to --retries more times. At most WINDOW jobs per slot are in flight,
so the coordinator's memory stays flat. The workers run cr.campaign.cluster.job_entry.
"""
from __future__ import annotations

import queue
import time
from collections import deque

from ..errors import CRError
from .cluster import TOPIC, address as full_address
from .coordinator import Run
from .executors import Executor, Option
from .placement import needs, placement, slots, unplaceable_reason
from .spec import CampaignJob
from .wire import Archives, job_payload

WINDOW = 8  # jobs in flight per slot of the cluster (at least MIN_WINDOW)
MIN_WINDOW = 16
REFRESH_S = 0.5


class DaskExecutor(Executor):
    """The jobs on the cr workers of a Dask scheduler (`cr scheduler`, `cr worker`)."""

    name = "dask"
    summary = "on the cr workers of a Dask scheduler (--scheduler ADDR)"
    OPTIONS = (
        Option("scheduler", str, None, "the Dask scheduler's address, tcp://HOST:PORT or tls://... (cr scheduler prints it)",
               required=True, flag="--scheduler"),
        Option("retries", int, 2, "runs of a job again after its worker left mid-job", flag="--retries"),
        Option("wait_for_workers", int, 0, "wait until this many cr workers joined", flag="--wait-for-workers"),
        Option("timeout", float, 60.0, "seconds to wait for wait_for_workers", flag="--timeout"),
        Option("connect_timeout", float, 10.0, "seconds to wait for the scheduler to answer", flag="--connect-timeout"),
        Option("tls_ca_file", str, None, "TLS: the CA certificate (PEM) both sides trust", flag="--tls-ca-file"),
        Option("tls_cert", str, None, "TLS: this side's certificate (PEM)", flag="--tls-cert"),
        Option("tls_key", str, None, "TLS: this side's private key (PEM)", flag="--tls-key"),
        Option("security", object, None, "a distributed.Security to use instead of the tls_* files (library)"),
    )

    def __init__(self, scheduler: str, retries: int = 2, wait_for_workers: int = 0, timeout: float = 60.0,
                 connect_timeout: float = 10.0, tls_ca_file: str | None = None, tls_cert: str | None = None,
                 tls_key: str | None = None, security=None, noop: bool = False):
        from .cluster import security as tls

        self.security = security if security is not None else tls(tls_ca_file, tls_cert, tls_key)
        self.address = full_address(scheduler, self.security)
        self.retries, self.wait_for_workers, self.timeout = retries, wait_for_workers, timeout
        self.connect_timeout = connect_timeout
        self.noop = noop  # dispatch only (benchmarks/bench_campaign.py): run no job, measure the round trip

    def where(self) -> str:
        return self.address

    def run(self, run: Run) -> None:
        from distributed import wait

        client = connect(self.address, self.security, self.connect_timeout)
        events: queue.Queue = queue.Queue()
        try:
            client.subscribe_topic(TOPIC, lambda event: events.put(event[1] if isinstance(event, tuple) else event))
            if self.wait_for_workers:
                _wait_for(client, self.wait_for_workers, self.timeout)
            _loop(run, client, events, self.retries, self.noop, wait)
        finally:  # also on Ctrl-C: the scheduler releases the jobs of a client that leaves
            try:
                client.close(timeout=5)
            except Exception:  # noqa: BLE001 - closing a client of a scheduler already gone
                pass


def connect(addr: str, sec=None, timeout: float = 10.0):
    from distributed import Client

    from .cluster import _quiet_logs

    _quiet_logs()
    addr = full_address(addr, sec)
    try:
        return Client(addr, security=sec, timeout=timeout, set_as_default=True)
    except (OSError, TimeoutError) as exc:
        raise CRError(f"the scheduler at {addr} does not answer (waited {timeout:g} s): {type(exc).__name__}",
                      hint="start it (cr scheduler) and check the address, the port and the --tls-* options") from None


def workers(client) -> dict[str, dict]:
    """address -> {"name", "resources", "platform" (Platform), "info"} of the connected cr workers."""
    from ..platform.model import Platform

    out = {}
    for addr, w in client.scheduler_info(n_workers=-1)["workers"].items():
        info = w.get("cr")
        if not isinstance(info, dict):
            continue  # not a cr worker: it never gets a job
        out[addr] = {"name": str(w.get("name")), "resources": w.get("resources") or {},
                     "platform": Platform.from_dict(info.get("platform") or {}), "info": info}
    return out


def _wait_for(client, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(workers(client)) < n:
        if time.monotonic() > deadline:
            have = len(workers(client))
            raise CRError(f"{have} cr worker(s) joined within {timeout:g} s, {n} were awaited",
                          hint="start more with cr worker --scheduler ADDR, or lower --wait-for-workers")
        time.sleep(0.2)


def _loop(run: Run, client, events, retries: int, noop: bool, wait) -> None:
    known = workers(client)
    pending: deque[CampaignJob] = deque()
    for job in run.todo:
        fit, why = placement(job, known)
        if fit:
            pending.append(job)
        else:
            run.not_run(job, "unplaceable", unplaceable_reason(job, why))
    by_id = {j.id: j for j in run.todo}
    futures: dict[str, object] = {}  # job id -> future
    running_on: dict[str, str] = {}  # job id -> the worker name of its current attempt
    archives = Archives()
    refreshed = time.monotonic()
    names = {a: w["name"] for a, w in known.items()}
    while pending or futures:
        while pending and len(futures) < max(MIN_WINDOW, WINDOW * slots(known)):
            job = pending.popleft()
            fit, why = placement(job, known)
            if not fit:
                run.not_run(job, "unplaceable", unplaceable_reason(job, why))
                continue
            futures[job.id] = _submit(client, job, fit, archives, noop)
        if futures:
            try:
                wait(list(futures.values()), timeout=0.1, return_when="FIRST_COMPLETED")
            except TimeoutError:
                pass
        _drain(run, events, by_id, running_on, futures, retries)
        done = [(jid, fut) for jid, fut in futures.items() if fut.done()]
        if done:
            for jid, _ in done:
                del futures[jid]
            finished = [fut for _, fut in done if fut.status == "finished"]
            outcomes = dict(zip([f.key for f in finished], client.gather(finished, errors="skip"))) if finished else {}
            for jid, fut in done:
                _collect(run, by_id[jid], fut, running_on, outcomes.get(fut.key))
            run.sync()  # one fsync for the batch: every "done" above is on disk before more is submitted
        if time.monotonic() - refreshed > REFRESH_S:
            refreshed = time.monotonic()
            now = workers(client)
            left = {names[a] for a in known if a not in now}
            names.update({a: w["name"] for a, w in now.items()})
            known = now
            if left:
                _worker_left(run, left, futures, pending, by_id, running_on, retries, known)


def _submit(client, job: CampaignJob, fit: list[str], archives: Archives, noop: bool):
    from .cluster import job_entry

    payload = job_payload(job, noop=True) if noop else job_payload(job, *archives.get(job.solution))
    return client.submit(job_entry, payload, key=f"cr-job-{job.id}", resources=needs(job), workers=fit,
                         allow_other_workers=False, pure=False, retries=0)


def _drain(run: Run, events, by_id: dict, running_on: dict, futures: dict, retries: int) -> None:
    while True:
        try:
            msg = events.get_nowait()
        except queue.Empty:
            return
        job = by_id.get(msg.get("job")) if isinstance(msg, dict) else None
        if job is None or run.is_final(job):
            continue
        if msg.get("event") == "started":
            name = msg.get("cr_worker")
            before = running_on.get(job.id)
            if before == name and run.outcomes.get(job.id, {}).get("state") == "running":
                continue  # the same attempt announced twice
            if before is not None and run.outcomes.get(job.id, {}).get("state") == "running":
                # Dask started it again elsewhere before this loop saw the first worker go:
                # the first attempt ended without an outcome
                if _lost(run, job, before, futures, retries):
                    continue
            running_on[job.id] = name
            run.started(job, name)


def _collect(run: Run, job: CampaignJob, fut, running_on: dict, outcome: dict | None) -> None:
    if fut.status == "cancelled" or run.is_final(job):
        return
    if fut.status == "finished" and isinstance(outcome, dict):
        worker = outcome.get("worker") or {}
    else:
        exc = fut.exception() if fut.status == "error" else None
        name = running_on.get(job.id)
        what = f"{type(exc).__name__}: {exc}" if exc is not None else "no outcome came back"
        outcome = {"status": "failed", "records": [],
                   "error": {"message": f"the job failed on worker {name}: {what}", "hint": None}}
        worker = {"name": name}
    if run.outcomes.get(job.id, {}).get("state") != "running":  # its result came before its start event
        run.started(job, worker.get("name"))
    running_on.pop(job.id, None)
    run.finished(job, outcome, worker, sync=False)


def _lost(run: Run, job: CampaignJob, name: str, futures: dict, retries: int) -> bool:
    """The current attempt of job ended with its worker: record it; True when no retry is left
    (the job is then failed and its future cancelled)."""
    attempt = run.attempts[job.id]
    run.attempt_failed(job, name, f"worker {name} left mid-job (attempt {attempt})")
    if attempt <= retries:
        return False
    fut = futures.pop(job.id, None)
    if fut is not None:
        fut.cancel()
    run.finished(job, {"status": "failed", "records": [], "error": {
        "message": f"worker {name} left mid-job, attempt {attempt} of {retries + 1}: no retry is left",
        "hint": "raise --retries, or keep the workers running"}}, {"name": name})
    return True


def _worker_left(run: Run, left: set[str], futures: dict, pending: deque, by_id: dict, running_on: dict,
                 retries: int, known: dict) -> None:
    for jid, name in list(running_on.items()):
        job = by_id[jid]
        if name not in left or run.is_final(job):
            continue
        del running_on[jid]
        _lost(run, job, name, futures, retries)
    for jid in list(futures):
        job = by_id[jid]
        fit, why = placement(job, known)
        if not fit:
            futures.pop(jid).cancel()
            running_on.pop(jid, None)
            run.not_run(job, "unplaceable", unplaceable_reason(job, why) + f" (after {', '.join(sorted(left))} left)")
    for job in list(pending):
        fit, why = placement(job, known)
        if not fit:
            pending.remove(job)
            run.not_run(job, "unplaceable", unplaceable_reason(job, why) + f" (after {', '.join(sorted(left))} left)")
