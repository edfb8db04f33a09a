"""The scheduler and worker processes of a Dask cluster for campaigns, and what they share.

    serve_scheduler(host="127.0.0.1", port=8786, security=None)      # `cr scheduler`
    serve_worker("tcp://127.0.0.1:8786", name="pi", platform_root=DIR) # `cr worker`

The scheduler is distributed's own Scheduler inside cr's process (not `dask scheduler`):
so it binds to 127.0.0.1 unless told otherwise, takes the same --tls-* options as the
worker and `cr campaign run`, has no web dashboard to expose, and lets the coordinator
count attempts itself (distributed's allowed-failures is raised so that it never gives up
before --retries does).

A worker advertises its platform as worker resources (cr.campaign.placement.resources):
``benchmark`` = 1 (one benchmark at a time on a machine), ``gpu`` = the number of GPUs (a
GPU job takes one and gets its index in CUDA_VISIBLE_DEVICES), and one label resource per
capability (``aarch64``, ``raspberry-pi-4``, ``nvidia-gpu``, ...). Its platform
(markers and capabilities) goes to the scheduler with its registration, where the
coordinator reads it to place jobs and to explain why a job fits no worker.

What a worker does with a job (the archive check and cache, the GPU slot, running it) is
executor-neutral, in cr.campaign.worker; job_entry here is its Dask face. A worker runs
that job function and nothing else: tasks whose function is another one
fail without running, and distributed's handlers that run arbitrary code on a worker
(run, run_coroutine, plugin-add) are removed. Deserialising a task is still pickle, so
what really keeps strangers out is TLS with certificates (docs/campaigns.md).

Dask is imported only inside these functions.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import CRError

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


def serve_worker(scheduler: str, name: str, platform, sec=None, on_ready=None, trust: bool = False) -> None:
    """Run a worker until interrupted (or until the scheduler goes away)."""
    import asyncio

    from distributed import Worker

    import dask

    from .placement import resources
    from .worker import GpuSlots, worker_info

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
            self.cr_gpus = GpuSlots(gpus)

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


# -- the job function: what a Dask worker runs for each job ------------------------------------

def job_entry(payload: dict) -> dict:
    """Run one job on this Dask worker (cr.campaign.worker.run_payload), announcing its start
    to the coordinator on TOPIC (which counts attempts from these events).

    payload: cr.campaign.wire.job_payload(); returns the outcome in wire form, with "worker".
    """
    from distributed import get_worker

    from .worker import run_payload

    worker = get_worker()
    info = dict(getattr(worker, "cr_info", None) or {"name": worker.name})
    job = payload.get("job") if isinstance(payload.get("job"), dict) else {}
    worker.log_event(TOPIC, {"job": job.get("id"), "event": "started", "cr_worker": info["name"]})
    return run_payload(payload, info, trust=getattr(worker, "cr_trust", False), gpus=getattr(worker, "cr_gpus", None))
