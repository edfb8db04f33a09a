"""The worker side of a campaign, whatever the executor: what a machine does with a job's
payload (cr.campaign.wire) it was sent.

    slots = GpuSlots(placement.gpu_count(platform))   # once per worker process
    outcome = run_payload(payload, {"name": "pi", ...}, trust=False, gpus=slots)

run_payload checks the archive's sha256, unpacks it into this machine's CR_HOME and sets
the solution up (once per archive: the archive cache), then runs the job's actions
(cr.campaign.jobs.run_here); a GPU job runs in a child cr process that sees one GPU
(CUDA_VISIBLE_DEVICES), so jobs on different GPUs of one machine run side by side. The
outcome is in wire form (latencies as bytes) and never an exception: a damaged archive, a
bad job or a failed run is a failed outcome naming the worker.

A cluster worker calls it from cr.campaign.cluster (`cr worker`); a Ray task or a batch job
would call it the same way. Nothing here imports a scheduler.
"""
from __future__ import annotations

import hashlib
import os
import socket
import threading
from contextlib import contextmanager

from ..errors import CRError
from ..events import Reporter, for_this_thread, reporter
from . import wire

_archives: dict[str, str] = {}  # archive sha256 -> the solution ref it holds (unpacked and set up here)
_archive_lock = threading.Lock()


class GpuSlots:
    """The GPU indices of this machine not in use; take() lends one for a job."""

    def __init__(self, count: int):
        self._free = list(range(count))
        self._lock = threading.Lock()

    @property
    def count(self) -> int:
        return len(self._free)

    @contextmanager
    def take(self):
        with self._lock:
            index = self._free.pop(0) if self._free else 0
        try:
            yield index
        finally:
            with self._lock:
                self._free.append(index)


def worker_info(name: str, platform, gpus: int) -> dict:
    """What a worker tells the coordinator about itself: name, host, platform, description, GPUs."""
    from .jobs import describe

    return {"name": name, "host": socket.gethostname(), "platform": platform.to_dict(), "markers": platform.markers(),
            "description": describe(platform), "gpus": gpus}


def failed(message: str, hint: str | None = None) -> dict:
    """A failed outcome that ran nothing."""
    from ..results.record import now

    return {"status": "failed", "records": [], "error": {"message": message, "hint": hint}, "started": now(), "ended": now()}


class Forward(Reporter):
    """A job thread's reporter: its phases (installing X, a benchmark's warm-up, steady...) go
    to tell(text), for the coordinator's progress line; warnings and infos to this worker's
    own reporter (its log)."""

    def __init__(self, tell, inner: Reporter) -> None:
        self.tell, self.inner = tell, inner

    def warning(self, message: str) -> None:
        self.inner.warning(message)

    def info(self, message: str) -> None:
        self.inner.info(message)

    def phase(self, task, name, detail="", expect_s=None, max_s=None) -> None:
        if name is None:
            self.tell(f"{task}: {detail or 'done'}")
            return
        about = f", about {expect_s:.0f} s" if expect_s is not None else ""
        self.tell(f"{task}: {name}" + (f" ({detail}{about})" if detail else f" ({about[2:]})" if about else ""))


def run_payload(payload: dict, info: dict, trust: bool = False, gpus: GpuSlots | None = None, tell=None) -> dict:
    """Run one job's payload here; the outcome in wire form, with "worker" ({name, host,
    platform} of info, and "gpu" for a GPU job). info: worker_info() of this worker.
    tell(text): what the job is doing (setting the solution up, installing, running, the
    phases of its actions) as it happens, for the coordinator."""
    if payload.get("kind") == "noop":  # dispatch measurement: the round trip only
        return {"status": "ok", "records": [], "error": None, "worker": {"name": info["name"]}}
    if tell is None:
        outcome = _run(payload, info, trust, gpus, lambda text: None)
    else:
        with for_this_thread(Forward(tell, reporter())):
            outcome = _run(payload, info, trust, gpus, tell)
    outcome["worker"] = {**{k: info.get(k) for k in ("name", "host", "platform")}, **outcome.get("worker", {})}
    return outcome


def _run(payload: dict, info: dict, trust: bool, gpus: GpuSlots | None, tell) -> dict:
    from .spec import CampaignJob

    data = payload.get("archive") or b""
    got = hashlib.sha256(data).hexdigest()
    if got != payload.get("sha256"):
        return failed(f"archive verification failed on worker {info['name']}: sha256 {got[:16]}..., expected "
                      f"{str(payload.get('sha256'))[:16]}...", "the archive was damaged on the way; the coordinator packs it again on the next run")
    try:
        job = CampaignJob.from_dict(payload.get("job"))
    except CRError as exc:
        return failed(f"worker {info['name']} was sent a job it cannot read: {exc.message}", exc.hint)
    try:
        if got not in _archives:
            tell(f"setting up {job.solution} (unpack, resolve, install what it needs)")
        ref = set_up(data, got, trust)
    except CRError as exc:
        return failed(f"setting up the solution on worker {info['name']} failed: {exc.message}", exc.hint)
    if job.uses_gpu and gpus is not None:
        return _on_gpu(job, ref, gpus)
    from .jobs import run_here

    tell(f"running {', '.join(job.actions) if job.actions else 'every declared action'} of {job.solution}")
    if not timed(job):
        return wire.to_wire(run_here(job, ref, init=False))
    with machine_slot(info) as waited:
        outcome = wire.to_wire(run_here(job, ref, init=False))
    if waited >= 0.5:
        outcome["worker"] = {**outcome.get("worker", {}), "waited_for_machine_s": round(waited, 1)}
    return outcome


TIMED_ACTIONS = ("benchmark", "profile")


def timed(job) -> bool:
    """Whether a job times anything (so it must not share this machine's cores with another
    timed job): one that names benchmark or profile, or runs every declared action."""
    return job.actions is None or any(a in TIMED_ACTIONS for a in job.actions)


def slot_path() -> str:
    """The host-wide lock file of the machine's benchmark slot (one per user: /tmp is shared)."""
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"reefkit-benchmark-slot-{os.getuid() if hasattr(os, 'getuid') else 0}.lock")


@contextmanager
def machine_slot(info: dict):
    """Hold this machine's one benchmark slot for a timed job, whatever the number of cr workers
    on it (each worker advertises benchmark=1; two on one host would otherwise time two jobs on
    the same cores at once). Yields the seconds it waited. Without fcntl (Windows) it yields 0.0
    and holds nothing."""
    import time

    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock: one worker per machine is the rule (docs/campaigns.md)
        yield 0.0
        return
    fd = os.open(slot_path(), os.O_RDWR | os.O_CREAT, 0o600)
    t0 = time.monotonic()
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"worker {info.get('name')}: waiting for this machine's benchmark slot (another cr worker on "
                  f"{socket.gethostname()} is timing a job)", flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield time.monotonic() - t0
    finally:
        os.close(fd)  # closing releases the lock


def set_up(data: bytes, sha: str, trust: bool) -> str:
    """Unpack the archive into this worker's CR_HOME and init the solution, once per archive
    (by content: its sha256); the solution's ref.

    The archive file is only the way in: it is deleted once unpacked, and a payload that
    cannot be set up leaves nothing behind. A newer archive of the same solution name and
    version (the solution edited without a version bump) replaces the older one, so a
    worker takes every job of an edited campaign, not only those of the first archive it saw."""
    from ..archive import unpack
    from ..fsutil import atomic_write_bytes
    from ..paths import ensure_home
    from ..run import solution

    with _archive_lock:
        if sha in _archives:
            return _archives[sha]
        folder = ensure_home() / "campaign-archives"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{sha[:16]}.cr.zip"
        try:
            atomic_write_bytes(path, data, durable=False)
            info = unpack(path, force=True)
            solution.refuse_namesake(info)
            report = solution.init(info["solution"], trust=trust)
        finally:
            path.unlink(missing_ok=True)
        for old in [k for k, ref in _archives.items() if ref == report["solution"]]:
            del _archives[old]  # replaced by this one
        _archives[sha] = report["solution"]
        return report["solution"]


def _on_gpu(job, ref: str, gpus: GpuSlots) -> dict:
    """A GPU job in a child cr process (cr.campaign.execute) that sees one GPU."""
    import json
    import subprocess
    import sys
    import tempfile

    with gpus.take() as index, tempfile.TemporaryDirectory(prefix="cr-gpu-job-") as out:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(index)}
        request = {"job": job.to_dict(), "ref": ref, "out_dir": out}
        done = subprocess.run([sys.executable, "-m", "cr.campaign.execute"], input=json.dumps(request),
                              capture_output=True, text=True, env=env)
        try:
            outcome = wire.to_wire(wire.from_files(json.loads(done.stdout), out))
        except (ValueError, CRError) as exc:
            outcome = failed(f"the job's process on GPU {index} ended with exit code {done.returncode}: "
                             f"{getattr(exc, 'message', '') or done.stderr[-500:]}")
    outcome["worker"] = {"gpu": index}
    return outcome
