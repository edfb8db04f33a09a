"""Start the runtime child, wait for it, and turn whatever happens into a result.

A framework that segfaults or calls abort(), a child that exits without a result, and a
child that runs past its timeout all come back as a failed result
{"status": "failed", "error": {"kind": "crashed" | "timeout" | "error", ...,
"stderr_tail"}}: never an exception in `cr`. The child runs in its own session, so a
timeout stops it and anything it started (SIGTERM, then SIGKILL after a grace period).

The child never outlives cr: on Linux it gets SIGKILL when cr dies, even by `kill -9`
(PR_SET_PDEATHSIG, cr.procs), and its work folder (job, result, log) is a scratch
directory, CR_HOME/tmp/job-<pid>-*, that the next cr sweeps once cr's pid is gone.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from array import array
from pathlib import Path

from .. import scratch
from . import monitor
from ..procs import die_with_parent, stop_group
from ..results.latencies import read_child
from ..runtime.child import BOOTSTRAP
from ..runtime.job import Job
from ..runtime.progress import ENV as PROGRESS_ENV

CR_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])
TAIL_LINES = 30
TAIL_CHARS = 4000
GRACE_S = 2.0


def _tail(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 4 * TAIL_CHARS))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = text.splitlines()[-TAIL_LINES:]
    return "\n".join(lines)[-TAIL_CHARS:]


def work_dir(kind: str) -> Path:
    """A scratch directory CR_HOME/tmp/<kind>-<pid>-* (cr.scratch: swept once this process is
    gone); where CR_HOME cannot be written, a temp dir cr-<kind>-* (the caller deletes it)."""
    from ..errors import StoreError

    try:
        return scratch.make(kind)
    except (StoreError, OSError):
        import tempfile

        return Path(tempfile.mkdtemp(prefix=f"cr-{kind}-"))


def _failed(kind: str, message: str, hint: str, **fields) -> dict:
    return {"status": "failed", "error": {"kind": kind, "message": message, "hint": hint, **fields}}


def run_job(job: Job | dict, python: str | None = None, env: dict | None = None, timeout: float | None = None,
            on_phase=None) -> tuple[dict, array | None]:
    """Run job in a child (python: the interpreter, env: its environment); (result, latencies).

    on_phase(name, info): called (from a reader thread) with each phase the child marks at a
    phase boundary (cr.runtime.progress: warm-up, steady with its expected duration, ...).

    A dict is read as Job fields (Job.from_dict) and checked here, before any child starts.
    A benchmark's child is watched by cr.run.monitor: its result gains "machine" and
    metrics "energy" and "memory", also when it failed.
    """
    watch: list = []
    try:
        result, latencies = _run_child(job, python, env, timeout, watch, on_phase)
    except BaseException:
        monitor.abandon(watch)
        raise
    return monitor.finish(watch[0] if watch else None, result, latencies), latencies


def _run_child(job, python, env, timeout, watch: list, on_phase=None) -> tuple[dict, array | None]:
    if not isinstance(job, Job):
        job = Job.from_dict(job)
    work = work_dir("job")
    try:
        job_file, result_file, log_file = work / "job.json", work / "result.json", work / "child.log"
        job_file.write_text(json.dumps(job.to_dict()), encoding="utf-8")
        interpreter = python or sys.executable
        cmd = [interpreter, "-c", BOOTSTRAP, CR_PACKAGE_DIR, str(job_file), str(result_file)]
        relay = _PhaseRelay(on_phase) if on_phase is not None else None
        if relay is not None:
            env = {**(os.environ if env is None else env), PROGRESS_ENV: str(relay.write_fd)}
        with open(log_file, "wb") as log:
            try:
                # own session: a timeout stops its whole group; death signal: it dies with cr
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                        start_new_session=True, preexec_fn=die_with_parent(signal.SIGKILL),
                                        pass_fds=(relay.write_fd,) if relay is not None else ())
            except OSError as exc:
                if relay is not None:
                    relay.close()
                return _failed("error", f"cannot start the runtime interpreter {interpreter}: {exc.strerror or exc}",
                               "check the interpreter the lock names (cr resolve --json)"), None
            if relay is not None:
                relay.started()
            watch.append(monitor.start_for(job.action, proc.pid, timeline=bool((job.params or {}).get("sustained_s"))))
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop_group(proc, GRACE_S, reap=None)
                return _failed(
                    "timeout", f"the runtime did not finish within {timeout:g} s and was stopped",
                    "raise --timeout if the run needs longer; otherwise the backend hangs (see stderr_tail in the result)",
                    timeout_s=timeout, exit_status=proc.returncode, stderr_tail=_tail(log_file),
                ), None
            except BaseException:  # Ctrl-C in cr: do not leave the child running
                stop_group(proc, GRACE_S, reap=None)
                raise
            finally:
                if relay is not None:
                    relay.close()
        tail = _tail(log_file)
        last = tail.strip().splitlines()[-1] if tail.strip() else "no output"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return _failed(
                "crashed", f"the runtime crashed: killed by {name}",
                f"the framework crashed inside the measured process; its last output: {last!r} "
                "(the result record, --output, holds the stderr tail)",
                signal=-code, signal_name=name, exit_status=code, stderr_tail=tail,
            ), None
        if code != 0 or not result_file.is_file():
            return _failed(
                "crashed", f"the runtime exited with status {code} without a result ({last})",
                "stderr_tail in the result record shows the child's last output",
                exit_status=code, stderr_tail=tail,
            ), None
        result = json.loads(result_file.read_text(encoding="utf-8"))
        if result.get("status") == "failed" and result.get("error"):
            result["error"].setdefault("stderr_tail", tail)
        latencies = read_child(work, result.get("raw") or {})
        return result, latencies
    finally:
        shutil.rmtree(work, ignore_errors=True)


class _PhaseRelay:
    """The pipe the child marks its phases on (cr.runtime.progress) and the thread that reads
    it: it blocks on the pipe, so it costs nothing while the child measures."""

    def __init__(self, on_phase):
        import threading

        self.on_phase = on_phase
        self.read_fd, self.write_fd = os.pipe()
        self._thread = threading.Thread(target=self._read, daemon=True, name="cr-phase-relay")

    def started(self) -> None:
        os.close(self.write_fd)  # the child holds the write end now: its exit ends the reader
        self.write_fd = -1
        self._thread.start()

    def _read(self) -> None:
        with os.fdopen(self.read_fd, "rb") as pipe:
            for line in pipe:
                try:
                    mark = json.loads(line)
                    name = mark.pop("phase")
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue  # not a mark: ignored, the run goes on
                try:
                    self.on_phase(str(name), mark)
                except Exception:  # noqa: BLE001 - showing progress must never fail a run
                    pass

    def close(self) -> None:
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)  # a grandchild holding the pipe open must not hold cr
        elif not self._thread.ident:
            os.close(self.read_fd)
