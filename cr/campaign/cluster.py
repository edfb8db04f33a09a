"""The scheduler and worker processes of a Dask cluster for campaigns, and what they share.

    serve_scheduler(host="127.0.0.1", port=8786, security=None)      # `cr scheduler`
    serve_worker("tcp://127.0.0.1:8786", name="pi", platform_root=DIR) # `cr worker`

The scheduler is distributed's own Scheduler inside cr's process (not `dask scheduler`):
so it binds to 127.0.0.1 unless told otherwise, takes the same --tls-* options as the
worker and `cr campaign run`, has no web dashboard to expose, and lets the coordinator
count attempts itself (distributed's allowed-failures is raised so that it never gives up
before --retries does).

A worker advertises its platform as worker resources: ``benchmark`` = 1 (one benchmark at
a time on a machine), ``gpu`` = the number of GPUs (a GPU job takes one and gets its
index in CUDA_VISIBLE_DEVICES), and one label resource per capability (``aarch64``,
``raspberry-pi-4``, ``nvidia-gpu``, ...; quantity LABEL, never the limit). Its platform
(markers and capabilities) goes to the scheduler with its registration, where the
coordinator reads it to place jobs and to explain why a job fits no worker.

A worker runs cr's job function and nothing else: tasks whose function is another one
fail without running, and distributed's handlers that run arbitrary code on a worker
(run, run_coroutine, plugin-add) are removed. Deserialising a task is still pickle, so
what really keeps strangers out is TLS with certificates (docs/campaigns.md).

Dask is imported only inside these functions.
"""
from __future__ import annotations

import hashlib
import os
import socket
import threading
from pathlib import Path

from ..errors import CRError

LABEL = 1000  # quantity of a capability resource: a label, never what limits concurrency
TOPIC = "cr-campaign"
ALLOWED_FAILURES = 1000
REMOVED_HANDLERS = ("run", "run_coroutine", "plugin-add")


def security(ca: str | None, cert: str | None, key: str | None):
    """distributed.Security for mutual TLS from three files, or None when none is given."""
    given = [x for x in (ca, cert, key) if x]
    if not given:
        return None
    if len(given) != 3:
        raise CRError("TLS needs all three of --tls-ca-file, --tls-cert and --tls-key",
                      hint="give the CA certificate, this side's certificate and its private key (docs/campaigns.md)")
    for option, path in (("--tls-ca-file", ca), ("--tls-cert", cert), ("--tls-key", key)):
        if not Path(path).is_file():
            raise CRError(f"{option} {path}: no such file", hint="give the PEM file's path")
    from distributed import Security

    return Security(tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, tls_scheduler_cert=cert,
                    tls_scheduler_key=key, tls_worker_cert=cert, tls_worker_key=key, require_encryption=True)


def address(text: str, sec) -> str:
    """tcp://HOST:PORT (tls:// with TLS) from HOST:PORT or a full address."""
    if "://" not in text:
        text = ("tls://" if sec is not None else "tcp://") + text
    scheme = text.split("://", 1)[0]
    if sec is not None and scheme != "tls":
        raise CRError(f"scheduler address {text} is not a tls:// address, but TLS options were given",
                      hint="write tls://HOST:PORT (or leave out the --tls-* options)")
    if scheme not in ("tcp", "tls"):
        raise CRError(f"scheduler address {text}: unknown protocol {scheme!r}", hint="write tcp://HOST:PORT or tls://HOST:PORT")
    return text


def _quiet_logs() -> None:
    import logging

    for name in ("distributed", "tornado"):
        logging.getLogger(name).setLevel(logging.ERROR)


def serve_scheduler(host: str = "127.0.0.1", port: int = 8786, sec=None, on_ready=None) -> None:
    """Run a scheduler until interrupted; on_ready(address) once it listens."""
    import asyncio

    import dask
    from distributed import Scheduler

    _quiet_logs()
    # no HTTP routes: distributed's status server would listen (beside the scheduler, on the
    # same host) but answers nothing; nothing but the scheduler's own port is of use here
    dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                     "distributed.scheduler.worker-ttl": "30s", "distributed.scheduler.http.routes": []})

    async def main():
        protocol = "tls" if sec is not None else "tcp"
        try:
            scheduler = Scheduler(host=host, port=port, security=sec, dashboard=False, protocol=protocol,
                                  dashboard_address=f"{host}:0")
            await scheduler
        except (OSError, RuntimeError) as exc:
            cause = exc if isinstance(exc, OSError) else exc.__cause__
            if not isinstance(cause, OSError):
                raise
            raise CRError(f"the scheduler cannot listen on {host}:{port}: {cause.strerror or cause}",
                          hint="choose another --port (0: any free one), or stop what uses it") from None
        try:
            if on_ready:
                on_ready(scheduler.address)
            await scheduler.finished()
        finally:
            await scheduler.close()

    asyncio.run(main())


def worker_info(name: str, platform, gpus: int) -> dict:
    from .jobs import describe

    return {"name": name, "host": socket.gethostname(), "platform": platform.to_dict(), "markers": platform.markers(),
            "description": describe(platform), "gpus": gpus}


def resources(platform) -> dict[str, float]:
    gpus = len([a for a in platform.accelerators if a.vendor in ("nvidia", "amd", "intel")])
    res = {"benchmark": 1.0}
    if gpus:
        res["gpu"] = float(gpus)
    for cap in sorted(platform.capabilities()):
        if cap not in res:
            res[cap] = float(LABEL)
    return res


def serve_worker(scheduler: str, name: str, platform, sec=None, on_ready=None, trust: bool = False) -> None:
    """Run a worker until interrupted (or until the scheduler goes away)."""
    import asyncio

    from distributed import Worker

    import dask

    _quiet_logs()
    dask.config.set({"distributed.worker.http.routes": []})
    res = resources(platform)
    gpus = int(res.get("gpu", 0))
    info = worker_info(name, platform, gpus)
    allowed = job_entry

    class CampaignWorker(Worker):
        """A worker that executes cr's job function only."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            for handler in REMOVED_HANDLERS:
                self.handlers.pop(handler, None)
            self.cr_info = info
            self.cr_trust = trust
            self.cr_gpus = list(range(gpus))
            self.cr_gpu_lock = threading.Lock()

        async def execute(self, key, *, stimulus_id):
            ts = self.state.tasks.get(key)
            func = getattr(getattr(ts, "run_spec", None), "func", None)
            if ts is not None and func is not allowed:
                from dask._task_spec import Task

                ts.run_spec = Task(key, _refuse, f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', func)!s}")
            return await super().execute(key, stimulus_id=stimulus_id)

    async def main():
        try:
            worker = CampaignWorker(scheduler, name=name, nthreads=1 + gpus, resources=res, security=sec,
                                    startup_information={"cr": lambda w: info}, dashboard=False,
                                    memory_limit=0, death_timeout=30)
            await worker
        except (OSError, asyncio.TimeoutError) as exc:
            raise CRError(f"the scheduler at {scheduler} does not answer: {exc}",
                          hint="start it first (cr scheduler) and check the address and the --tls-* options") from None
        if on_ready:
            on_ready(worker.address, res)
        await worker.finished()

    asyncio.run(main())


def _refuse(what: str):
    raise CRError(f"this cr worker runs campaign jobs only; it refused to run {what}")


# -- the job function: what a worker runs for each job --------------------------------------

_archives: dict[str, str] = {}  # archive sha256 -> the solution ref it holds (unpacked and set up here)
_archive_lock = threading.Lock()


def _failed(message: str, hint: str | None = None) -> dict:
    from ..results.record import now

    return {"status": "failed", "records": [], "error": {"message": message, "hint": hint}, "started": now(), "ended": now()}


def job_entry(payload: dict) -> dict:
    """Run one job on this worker: verify the archive, set the solution up, run its actions.

    payload: {"job": Job.to_dict(), "archive": bytes, "sha256": hex, "kind": "job" | "noop"}.
    Returns an outcome (cr.campaign.jobs.run_here) with "worker" (name, host, platform, gpu).
    """
    from distributed import get_worker

    worker = get_worker()
    info = dict(getattr(worker, "cr_info", None) or {"name": worker.name})
    job = payload["job"]
    worker.log_event(TOPIC, {"job": job["id"], "event": "started", "cr_worker": info["name"]})
    if payload.get("kind") == "noop":  # dispatch measurement: the round trip only
        return {"status": "ok", "records": [], "error": None, "worker": {"name": info["name"]}}
    outcome = _run_job(worker, info, payload)
    outcome["worker"] = {**{k: info.get(k) for k in ("name", "host", "platform")}, **outcome.get("worker", {})}
    return outcome


def _run_job(worker, info: dict, payload: dict) -> dict:
    from .spec import Job

    data = payload.get("archive") or b""
    got = hashlib.sha256(data).hexdigest()
    if got != payload.get("sha256"):
        return _failed(f"archive verification failed on worker {info['name']}: sha256 {got[:16]}..., expected "
                       f"{str(payload.get('sha256'))[:16]}...", "the archive was damaged on the way; the coordinator packs it again on the next run")
    try:
        ref = _set_up(data, got, getattr(worker, "cr_trust", False))
    except CRError as exc:
        return _failed(f"setting up the solution on worker {info['name']} failed: {exc.message}", exc.hint)
    job = Job.from_dict(payload["job"])
    if job.uses_gpu and getattr(worker, "cr_gpus", None) is not None:
        return _on_gpu(worker, job, ref)
    from .jobs import run_here

    return run_here(job, ref, init=False)


def _set_up(data: bytes, sha: str, trust: bool) -> str:
    """Unpack the archive into this worker's CR_HOME and init the solution, once per archive."""
    from ..fsutil import atomic_write_bytes
    from ..paths import ensure_home
    from ..run import solution

    with _archive_lock:
        if sha in _archives:
            return _archives[sha]
        folder = ensure_home() / "campaign-archives"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{sha[:16]}.cr.zip"
        if not path.is_file():
            atomic_write_bytes(path, data, durable=False)
        report = solution.init(str(path), trust=trust)
        _archives[sha] = report["solution"]
        return report["solution"]


def _on_gpu(worker, job, ref: str) -> dict:
    """A GPU job in a child cr process that sees one GPU (CUDA_VISIBLE_DEVICES), so that jobs
    on different GPUs of one machine run side by side without sharing an environment."""
    import json
    import subprocess
    import sys

    with worker.cr_gpu_lock:
        index = worker.cr_gpus.pop(0) if worker.cr_gpus else 0
    try:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(index)}
        done = subprocess.run([sys.executable, "-m", "cr.campaign.execute"], input=json.dumps({"job": job.to_dict(), "ref": ref}),
                              capture_output=True, text=True, env=env)
        try:
            outcome = json.loads(done.stdout)
        except ValueError:
            outcome = _failed(f"the job's process on GPU {index} ended with exit code {done.returncode}: {done.stderr[-500:]}")
        outcome["worker"] = {"gpu": index}
        return outcome
    finally:
        with worker.cr_gpu_lock:
            worker.cr_gpus.append(index)
