"""The Dask executor: a campaign's jobs on the workers of a Dask cluster.

    run_dask(run, "tcp://127.0.0.1:8786", retries=2, wait_for_workers=3)

Placement is checked here, not left to Dask (which keeps a task no worker can run pending
forever, silently): before a job is submitted, and whenever a worker leaves, a job that
no connected worker matches is reported unplaceable at once, naming for each worker what
it lacks. A job is submitted restricted to the workers that match (their markers and
capabilities), asking for one ``benchmark`` slot (or one ``gpu`` slot) and its capability
labels. Each job carries its solution's archive bytes and their sha256: workers need no
shared file system. A worker that leaves mid-job fails that attempt (recorded with its
name); Dask runs the job again on another matching worker, up to --retries more times.
At most WINDOW jobs per slot are in flight, so the coordinator's memory stays flat.
"""
from __future__ import annotations

import queue
import time
from collections import deque

from ..errors import CRError
from .cluster import TOPIC, address as full_address
from .coordinator import Run
from .jobs import lacking
from .spec import Job

WINDOW = 8  # jobs in flight per slot of the cluster (at least MIN_WINDOW)
MIN_WINDOW = 16
REFRESH_S = 0.5


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


def placement(job: Job, known: dict[str, dict]) -> tuple[list[str], list[str]]:
    """(addresses of the workers that can run job, per-worker reasons for the others)."""
    fit, why = [], []
    for addr, w in sorted(known.items(), key=lambda kv: kv[1]["name"]):
        reason = lacking(job.target, w["platform"])
        if reason is None and job.uses_gpu and not w["resources"].get("gpu"):
            reason = "has no GPU slot"
        if reason is None:
            fit.append(addr)
        else:
            why.append(f"{w['name']} ({w['info'].get('description')}) {reason}")
    return fit, why


def _unplaceable_reason(job: Job, why: list[str]) -> str:
    need = ", ".join(job.target.get("requires") or []) or job.target.get("marker") or "any machine"
    return f"no connected worker can run platform {job.platform!r} (needs {need}): " + ("; ".join(why) or "no worker is connected")


def _wait_for(client, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(workers(client)) < n:
        if time.monotonic() > deadline:
            have = len(workers(client))
            raise CRError(f"{have} cr worker(s) joined within {timeout:g} s, {n} were awaited",
                          hint="start more with cr worker --scheduler ADDR, or lower --wait-for-workers")
        time.sleep(0.2)


def _archive(ref: str, cache: dict) -> tuple[bytes, str]:
    """The solution's archive bytes and sha256, packed once per run."""
    if ref not in cache:
        import hashlib
        import tempfile
        from pathlib import Path

        from ..archive import pack

        with tempfile.TemporaryDirectory(prefix="cr-campaign-") as tmp:
            data = Path(pack(ref, output=tmp + "/")).read_bytes()
        cache[ref] = (data, hashlib.sha256(data).hexdigest())
    return cache[ref]


def run_dask(run: Run, addr: str, sec=None, retries: int = 2, wait_for_workers: int = 0, timeout: float = 60.0,
             connect_timeout: float = 10.0, noop: bool = False) -> None:
    """Run the jobs of run on the cluster at addr (noop: dispatch only, for measuring)."""
    from distributed import wait

    client = connect(addr, sec, connect_timeout)
    events: queue.Queue = queue.Queue()
    try:
        client.subscribe_topic(TOPIC, lambda event: events.put(event[1] if isinstance(event, tuple) else event))
        if wait_for_workers:
            _wait_for(client, wait_for_workers, timeout)
        _loop(run, client, events, retries, noop, wait)
    except KeyboardInterrupt:
        run.interrupted()
        raise
    finally:
        try:
            client.close(timeout=5)
        except Exception:  # noqa: BLE001 - closing a client of a scheduler already gone
            pass
    run.close()


def _loop(run: Run, client, events, retries: int, noop: bool, wait) -> None:
    known = workers(client)
    pending: deque[Job] = deque()
    for job in run.todo:
        fit, why = placement(job, known)
        if fit:
            pending.append(job)
        else:
            run.not_run(job, "unplaceable", _unplaceable_reason(job, why))
    by_id = {j.id: j for j in run.todo}
    futures: dict[str, object] = {}  # job id -> future
    running_on: dict[str, str] = {}  # job id -> the worker name of its current attempt
    archives: dict[str, tuple[bytes, str]] = {}
    refreshed = time.monotonic()
    names = {a: w["name"] for a, w in known.items()}
    while pending or futures:
        slots = sum(int(w["resources"].get("benchmark", 0) + w["resources"].get("gpu", 0)) for w in known.values()) or 1
        while pending and len(futures) < max(MIN_WINDOW, WINDOW * slots):
            job = pending.popleft()
            fit, why = placement(job, known)
            if not fit:
                run.not_run(job, "unplaceable", _unplaceable_reason(job, why))
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


def _submit(client, job: Job, fit: list[str], archives: dict, noop: bool):
    payload = {"job": job.to_dict(), "kind": "noop" if noop else "job"}
    if not noop:
        payload["archive"], payload["sha256"] = _archive(job.solution, archives)
    res = {"gpu": 1} if job.uses_gpu else {"benchmark": 1}
    for cap in job.target.get("requires") or []:
        res.setdefault(cap, 1)
    from .cluster import job_entry

    return client.submit(job_entry, payload, key=f"cr-job-{job.id}", resources=res, workers=fit,
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


def _collect(run: Run, job: Job, fut, running_on: dict, outcome: dict | None) -> None:
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


def _lost(run: Run, job: Job, name: str, futures: dict, retries: int) -> bool:
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
            run.not_run(job, "unplaceable", _unplaceable_reason(job, why) + f" (after {', '.join(sorted(left))} left)")
    for job in list(pending):
        fit, why = placement(job, known)
        if not fit:
            pending.remove(job)
            run.not_run(job, "unplaceable", _unplaceable_reason(job, why) + f" (after {', '.join(sorted(left))} left)")
