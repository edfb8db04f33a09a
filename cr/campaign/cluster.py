"""The scheduler and worker processes of a campaign cluster (`cr scheduler`, `cr worker`).

    serve_scheduler(host="127.0.0.1", port=8786, sec=None)               # `cr scheduler`
    serve_worker("tcp://127.0.0.1:8786", name="pi", platform=plat)        # `cr worker`

They speak cr's own wire (cr.campaign.link: JSON headers and raw bytes, over TCP or mutual
TLS), not Dask's: nothing a peer sends is unpickled, imported or called, by the scheduler,
a worker or the coordinator. What each side may say is fixed by the role it announced
when it connected, and everything else ends the connection:

    worker -> scheduler       hello {role: worker, name, info, resources}; result {key, outcome} + latencies;
                              event {key, text} (what a running job is doing)
    scheduler -> worker       job {key, payload} + the solution's archive bytes
    coordinator -> scheduler  hello {role: coordinator}; archive {sha256} + bytes;
                              submit {jobs: [{key, job, kind, sha256, needs, workers, retries}]}; cancel {keys}
    scheduler -> coordinator  workers {name: {resources, info}}; started {key, worker, attempt};
                              result {key, worker, outcome} + latencies; lost {key, worker, attempt, retry};
                              event {key, worker, text}

The scheduler keeps the queue and the workers' free slots (cr.campaign.placement's
resources: ``benchmark`` = 1, ``gpu`` = the GPUs, one label per capability) and sends a
job to a worker only when the worker has the slots it asks for, so a job that reaches a
worker starts at once: "started" is the scheduler's own event, naming the worker it sent
the job to. A result counts only from the connection of the worker the job was sent to,
and carries that worker's registered name whatever the worker says. Worker names are
unique. A worker that leaves mid-job (its connection closes, or it is silent for
link.SILENCE_S) loses that attempt: the scheduler tells the coordinator and queues the job
again while the job's retries last. A coordinator's jobs are its own: nobody else sees
or cancels them; when it disconnects its queued jobs are dropped.

A worker runs cr.campaign.worker.run_payload, cr's job function, and nothing else: it
never listens on a port (it connects to the scheduler), so no other process can reach it.
"""
from __future__ import annotations

import itertools
import threading
from collections import deque

from ..errors import CRError
from .link import (INSECURE_FLAG, Link, LinkError, Tls, accept, address, check_plain, connect, join, listen,
                   security, split)

__all__ = ["address", "security", "serve_scheduler", "serve_worker", "Scheduler", "INSECURE_FLAG"]
MAX_NAME = 200
MAX_EVENT = 300  # characters of a worker's event text


def _number(v) -> bool:
    return type(v) in (int, float) and v >= 0


class _Job:
    __slots__ = ("key", "wkey", "session", "job", "kind", "sha", "needs", "allowed", "retries", "attempts", "worker")

    def __init__(self, key, session, spec: dict):
        self.key, self.session = key, session
        self.wkey = f"{session}/{key}"  # what the worker knows it by: two coordinators may submit the same job
        self.job, self.kind, self.sha = spec["job"], spec["kind"], spec.get("sha256")
        self.needs = spec["needs"]
        self.allowed = set(spec["workers"])
        self.retries = spec["retries"]
        self.attempts = 0
        self.worker = None


class _Peer:
    def __init__(self, link: Link):
        self.link = link


class Scheduler:
    """The cluster's scheduler: accepts workers and coordinators on one port (see the module)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8786, sec: Tls | None = None):
        self.sec = sec
        self._ctx = sec.context(server=True) if sec is not None else None
        try:
            self.sock = listen(host, port)
        except OSError as exc:
            raise CRError(f"the scheduler cannot listen on {host}:{port}: {exc.strerror or exc}",
                          hint="choose another --port (0: any free one), or stop what uses it") from None
        bound = self.sock.getsockname()
        self.address = join("tls" if sec is not None else "tcp", bound[0], bound[1])
        self._lock = threading.Lock()
        self.workers: dict[str, _Peer] = {}  # name -> worker peer
        self.sessions: dict[int, _Peer] = {}
        self._queue: deque[_Job] = deque()
        self._ids = itertools.count(1)
        self._stopped = threading.Event()

    # -- connections ------------------------------------------------------------------------

    def serve(self) -> None:
        """Accept connections until stop()."""
        self.sock.settimeout(0.5)
        while not self._stopped.is_set():
            try:
                sock, peer = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._stopped.is_set():
                    return
                raise
            threading.Thread(target=self._serve_one, args=(sock, f"{peer[0]}:{peer[1]}"), daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()
        self.sock.close()
        with self._lock:
            peers = list(self.workers.values()) + list(self.sessions.values())
        for p in peers:
            p.link.close()

    def _serve_one(self, sock, peer: str) -> None:
        import ssl

        try:
            link = accept(sock, peer, self.sec, self._ctx)
            hello, _ = link.recv(timeout=10)
        except (LinkError, OSError, ssl.SSLError, ValueError):
            sock.close()
            return
        role = hello.get("role")
        try:
            if hello.get("op") == "hello" and role == "worker":
                self._worker(link, hello)
            elif hello.get("op") == "hello" and role == "coordinator":
                self._coordinator(link)
        except LinkError:
            pass
        finally:
            link.close()

    # -- workers ------------------------------------------------------------------------------

    def _worker(self, link: Link, hello: dict) -> None:
        name, info, res = hello.get("name"), hello.get("info"), hello.get("resources")
        if not (isinstance(name, str) and 0 < len(name) <= MAX_NAME and name.isprintable()
                and isinstance(info, dict) and isinstance(res, dict) and all(_number(v) for v in res.values())):
            link.send({"op": "refused", "message": "a worker's hello needs a name, its info and its resources"})
            return
        peer = _Peer(link)
        peer.name, peer.info, peer.resources = name, {**info, "name": name}, dict(res)
        peer.free, peer.running = dict(res), {}
        with self._lock:
            if name in self.workers:
                link.send({"op": "refused", "message": f"a worker named {name} is already connected to this scheduler"})
                return
            self.workers[name] = peer
        try:
            link.send({"op": "welcome", "address": self.address})
            link.heartbeat()
            self._tell_workers()
            self._dispatch()
            while True:
                msg, blobs = link.recv()
                if msg.get("op") == "event":
                    self._event(peer, msg)
                    continue
                if msg.get("op") != "result":
                    raise LinkError(f"worker {name} sent {str(msg.get('op'))[:40]!r}")
                self._result(peer, msg, blobs)
        finally:
            self._worker_gone(peer)

    def _result(self, peer: _Peer, msg: dict, blobs: list[bytes]) -> None:
        with self._lock:
            job = peer.running.pop(msg.get("key"), None) if isinstance(msg.get("key"), str) else None
            if job is None:
                return  # not a job this worker was sent: dropped
            self._release(peer, job)
            session = self.sessions.get(job.session)
            wanted = session is not None and session.jobs.get(job.key) is job  # not cancelled, its coordinator still there
        if not wanted:
            self._dispatch()
            return
        outcome = msg.get("outcome") if isinstance(msg.get("outcome"), dict) else {
            "status": "failed", "records": [], "error": {"message": f"worker {peer.name} sent no outcome", "hint": None}}
        # who ran it is the connection's worker, whatever the outcome says
        worker = outcome.get("worker") if isinstance(outcome.get("worker"), dict) else {}
        outcome = {**outcome, "worker": {**worker, "name": peer.name}}
        self._send(job.session, {"op": "result", "key": job.key, "worker": peer.name, "outcome": outcome,
                                 "latencies": msg.get("latencies")}, blobs)
        self._dispatch()

    def _event(self, peer: _Peer, msg: dict) -> None:
        """What a worker says about a job it runs, passed to that job's coordinator only
        (text, cut to MAX_EVENT characters; about a job it was not sent: dropped)."""
        key, text = msg.get("key"), msg.get("text")
        with self._lock:
            job = peer.running.get(key) if isinstance(key, str) else None
        if job is None or not isinstance(text, str):
            return
        self._send(job.session, {"op": "event", "key": job.key, "worker": peer.name, "text": text[:MAX_EVENT]})

    def _release(self, peer: _Peer, job: _Job) -> None:
        for k, v in job.needs.items():
            peer.free[k] = peer.free.get(k, 0) + v

    def _worker_gone(self, peer: _Peer) -> None:
        lost = []
        with self._lock:
            if self.workers.get(peer.name) is not peer:
                return
            del self.workers[peer.name]
            for job in peer.running.values():
                session = self.sessions.get(job.session)
                retry = job.attempts <= job.retries and session is not None and session.jobs.get(job.key) is job
                lost.append((job, retry))
                if retry:
                    job.worker = None
                    self._queue.appendleft(job)
            peer.running.clear()
        for job, retry in lost:
            self._send(job.session, {"op": "lost", "key": job.key, "worker": peer.name, "attempt": job.attempts, "retry": retry})
        self._tell_workers()
        self._dispatch()

    def _tell_workers(self) -> None:
        with self._lock:
            view = {n: {"resources": p.resources, "info": p.info} for n, p in self.workers.items()}
            sessions = list(self.sessions)
        for sid in sessions:
            self._send(sid, {"op": "workers", "workers": view})

    # -- coordinators -------------------------------------------------------------------------

    def _coordinator(self, link: Link) -> None:
        peer = _Peer(link)
        peer.archives, peer.jobs = {}, {}
        with self._lock:
            sid = next(self._ids)
            self.sessions[sid] = peer
        try:
            link.send({"op": "welcome", "address": self.address})
            link.heartbeat()
            self._tell_workers()
            while True:
                msg, blobs = link.recv()
                op = msg.get("op")
                if op == "archive":
                    self._archive(peer, msg, blobs)
                elif op == "submit":
                    self._submit(sid, peer, msg)
                elif op == "cancel":
                    self._cancel(peer, msg)
                else:
                    raise LinkError(f"a coordinator sent {str(op)[:40]!r}")
        finally:
            with self._lock:
                del self.sessions[sid]
                queued = [j for j in self._queue if j.session == sid]
                for job in queued:
                    self._queue.remove(job)

    def _archive(self, peer: _Peer, msg: dict, blobs: list[bytes]) -> None:
        import hashlib

        if len(blobs) != 1 or hashlib.sha256(blobs[0]).hexdigest() != msg.get("sha256"):
            raise LinkError("an archive whose bytes do not match its sha256")
        peer.archives[msg["sha256"]] = blobs[0]

    def _submit(self, sid: int, peer: _Peer, msg: dict) -> None:
        jobs = msg.get("jobs")
        if not isinstance(jobs, list):
            raise LinkError("submit without a list of jobs")
        refused = []
        with self._lock:
            for spec in jobs:
                why = _bad_spec(spec, peer)
                if why is None and spec["key"] in peer.jobs:
                    why = "submitted twice"
                if why:
                    refused.append((spec.get("key") if isinstance(spec, dict) else None, why))
                    continue
                job = _Job(spec["key"], sid, spec)
                peer.jobs[job.key] = job
                self._queue.append(job)
        for key, why in refused:
            self._send(sid, {"op": "refused", "key": key if isinstance(key, str) else None, "message": why})
        self._dispatch()

    def _cancel(self, peer: _Peer, msg: dict) -> None:
        keys = msg.get("keys") if isinstance(msg.get("keys"), list) else []
        with self._lock:
            for key in keys:
                job = peer.jobs.pop(key, None) if isinstance(key, str) else None
                if job is not None and job in self._queue:
                    self._queue.remove(job)

    # -- placing jobs -------------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Send every queued job that a worker has free slots for (FIFO, the least busy worker)."""
        sends = []
        with self._lock:
            for job in list(self._queue):
                session = self.sessions.get(job.session)
                if session is None or session.jobs.get(job.key) is not job:
                    self._queue.remove(job)
                    continue
                fits = [p for n, p in self.workers.items()
                        if n in job.allowed and all(p.free.get(k, 0) >= v for k, v in job.needs.items())]
                if not fits:
                    continue
                peer = min(fits, key=lambda p: len(p.running))
                for k, v in job.needs.items():
                    peer.free[k] -= v
                self._queue.remove(job)
                job.attempts += 1
                job.worker = peer.name
                peer.running[job.wkey] = job
                archive = session.archives.get(job.sha) if job.sha else None
                sends.append((job, peer, archive))
        for job, peer, archive in sends:
            self._send(job.session, {"op": "started", "key": job.key, "worker": peer.name, "attempt": job.attempts})
            payload = {"job": job.job, "kind": job.kind, "sha256": job.sha}
            try:
                peer.link.send({"op": "job", "key": job.wkey, "payload": payload}, [archive] if archive is not None else [])
            except LinkError:
                pass  # its reader sees the link closed and reports the job lost

    def _send(self, sid: int, header: dict, blobs=()) -> None:
        with self._lock:
            peer = self.sessions.get(sid)
        if peer is None:
            return
        if header.get("op") in ("result",) or (header.get("op") == "lost" and not header.get("retry")):
            with self._lock:
                peer.jobs.pop(header.get("key"), None)
        try:
            peer.link.send(header, blobs)
        except LinkError:
            pass


def _bad_spec(spec, session: _Peer) -> str | None:
    """Why a submitted job cannot be queued (None: it can)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("key"), str) or not isinstance(spec.get("job"), dict):
        return "a job needs a key and a job"
    if spec.get("kind") not in ("job", "noop"):
        return "a job's kind is job or noop"
    if spec["kind"] == "job" and spec.get("sha256") not in session.archives:
        return "its archive was not sent first"
    needs, workers = spec.get("needs"), spec.get("workers")
    if not isinstance(needs, dict) or not all(isinstance(k, str) and _number(v) for k, v in needs.items()):
        return "needs must map resource names to amounts"
    if not isinstance(workers, list) or not all(isinstance(w, str) for w in workers):
        return "workers must list worker names"
    if type(spec.get("retries")) is not int or spec["retries"] < 0:
        return "retries must be a whole number"
    return None


def serve_scheduler(host: str = "127.0.0.1", port: int = 8786, sec=None, on_ready=None, insecure: bool = False) -> None:
    """Run a scheduler until interrupted; on_ready(address) once it listens. A host off
    loopback without TLS is refused unless insecure (the user's --insecure-no-tls)."""
    check_plain(host, sec, insecure, "the scheduler would listen on")
    scheduler = Scheduler(host, port, sec)
    if on_ready:
        on_ready(scheduler.address)
    try:
        scheduler.serve()
    finally:
        scheduler.stop()


# -- the worker ------------------------------------------------------------------------------------

MAX_NAME_TRIES = 64


def serve_worker(scheduler: str, name: str, platform, sec=None, on_ready=None, trust: bool = False,
                 insecure: bool = False, timeout: float = 10.0, unique: bool = False, log=None) -> None:
    """Run a worker until interrupted or until its scheduler goes away (CRError then).
    unique: name is a default (the host name): when a worker of that name is connected
    already, join as NAME-2, NAME-3... instead of being refused. log(line): one line when a
    job starts and one when it ends (its status and duration), for the worker's log."""
    from .placement import resources
    from .worker import GpuSlots, worker_info

    addr = address(scheduler, sec)
    host, _ = split(addr)
    check_plain(host, sec, insecure, "this worker would connect to the scheduler at")
    res = resources(platform)
    gpus = int(res.get("gpu", 0))
    base = name
    for attempt in range(1, (MAX_NAME_TRIES if unique else 1) + 1):
        name = base if attempt == 1 else f"{base}-{attempt}"
        info = worker_info(name, platform, gpus)
        try:
            link = connect(addr, sec, timeout)
            link.send({"op": "hello", "role": "worker", "name": name, "info": info, "resources": res})
            answer, _ = link.recv(timeout=timeout)
        except (OSError, LinkError) as exc:
            raise CRError(f"the scheduler at {addr} does not answer: {exc}",
                          hint="start it first (cr scheduler) and check the address and the --tls-* options") from None
        if answer.get("op") == "welcome":
            break
        link.close()
        taken = "already connected" in str(answer.get("message"))
        if not (taken and unique):
            raise CRError(f"the scheduler at {addr} refused this worker: {str(answer.get('message'))[:300]}",
                          hint="give this worker another --name" if taken else None)
    else:
        raise CRError(f"the scheduler at {addr} already has workers named {base} to {base}-{MAX_NAME_TRIES}",
                      hint="give this worker a --name")
    link.heartbeat()
    if on_ready:
        on_ready(addr, res, name)
    slots = GpuSlots(gpus)
    try:
        while True:
            msg, blobs = link.recv()
            if msg.get("op") != "job" or not isinstance(msg.get("key"), str) or not isinstance(msg.get("payload"), dict):
                raise LinkError(f"the scheduler sent {str(msg.get('op'))[:40]!r}")
            payload = {**msg["payload"], "archive": blobs[0] if blobs else None}
            threading.Thread(target=_job, args=(link, msg["key"], payload, info, trust, slots, log or (lambda line: None)),
                             daemon=True).start()
    except LinkError as exc:
        raise CRError(f"the scheduler at {addr} went away: {exc}", hint="start the worker again once the scheduler is back") from None
    finally:
        link.close()


def _job(link: Link, key: str, payload: dict, info: dict, trust: bool, slots, log) -> None:
    """Run one job with cr's job function and send its outcome back (latencies as blobs);
    what it is doing meanwhile goes to the scheduler as events; log gets its start and end."""
    import time

    from .worker import failed, run_payload

    def tell(text: str) -> None:
        try:
            link.send({"op": "event", "key": key, "text": str(text)[:MAX_EVENT]})
        except (LinkError, TypeError, ValueError):
            pass  # an event is worth no job's failure

    job = payload.get("job") if isinstance(payload.get("job"), dict) else {}
    what = f"job {job.get('id')} ({job.get('solution')} on {job.get('platform')})"
    if payload.get("kind") != "noop":
        log(f"{what} started")
    t0 = time.monotonic()
    try:
        outcome = run_payload(payload, info, trust=trust, gpus=slots, tell=tell)
    except Exception as exc:  # noqa: BLE001 - a job's failure is an outcome, never the worker's end
        outcome = failed(f"the job failed on worker {info['name']}: {type(exc).__name__}: {exc}")
    if payload.get("kind") != "noop":
        err = outcome.get("error") if isinstance(outcome.get("error"), dict) else {}
        log(f"{what} {outcome.get('status')} in {time.monotonic() - t0:.1f} s"
            + (f": {str(err.get('message'))[:300]}" if err.get("message") else ""))
    blobs, index = [], []
    for blob in outcome.pop("latencies", None) or []:
        index.append(None if blob is None else len(blobs))
        if blob is not None:
            blobs.append(blob)
    try:
        link.send({"op": "result", "key": key, "outcome": outcome, "latencies": index}, blobs)
    except (TypeError, ValueError) as exc:  # an outcome that is not JSON
        bad = failed(f"worker {info['name']} could not send the job's outcome: {type(exc).__name__}: {exc}")
        try:
            link.send({"op": "result", "key": key, "outcome": bad, "latencies": []})
        except LinkError:
            pass
    except LinkError:
        pass  # the scheduler is gone: the worker ends, the attempt is lost
