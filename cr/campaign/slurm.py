"""Slurm itself, as the Slurm executor uses it: its commands (sinfo, sbatch, squeue, scancel),
a `cr worker` job script, Slurm's time limits, and a campaign's measured job times.

    partitions()                       # {"debug": True (the default), ...}; CRError when sinfo fails
    submit(worker_script(...))         # the Slurm job id (sbatch --parsable, the script on stdin)
    states(["12", "13"])               # {"12": "RUNNING"}: the jobs Slurm still has
    ended("12")                        # "Slurm ended worker job 12 at its time limit (TIMEOUT)", or None
    cancel(["12", "13"])               # scancel
    seconds("1-02:03:04")              # 93784.0 (None: no limit)
    longest_job(journal_events)        # (seconds, job id) of the longest finished attempt, or None

Written here rather than taken from dask-jobqueue: its job classes build a `python -m MODULE
SCHEDULER --name --nthreads --memory-limit` command line that `cr worker` does not take, and
submit through Dask's asyncio ProcessInterface and SpecCluster, which need a Dask scheduler
that the cr cluster no longer is (docs/clusters.md). What is left to do is four commands.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import time

from ..errors import CRError

COMMAND_TIMEOUT_S = 30.0
_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_UNLIMITED = ("infinite", "unlimited")
HINT_SLURM = ("check that slurmctld runs and that this machine is a Slurm submit host (sinfo answers); "
              "for a one-node Slurm on this machine: scripts/slurm-up.sh")


def _slurm(args: list[str], stdin: str | None = None, what: str | None = None) -> str:
    """stdout of a Slurm command; CRError naming it when it is missing, hangs or fails."""
    try:
        done = subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    except FileNotFoundError:
        raise CRError(f"Slurm is not reachable: {args[0]} is not installed here",
                      hint="run cr campaign run on a Slurm submit host (apt-get install slurm-client, or slurm-wlm "
                           "for a one-node Slurm: scripts/slurm-up.sh)") from None
    except subprocess.TimeoutExpired:
        raise CRError(f"Slurm is not reachable: {args[0]} did not answer within {COMMAND_TIMEOUT_S:g} s",
                      hint=HINT_SLURM) from None
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1][:300]
        raise CRError(f"Slurm is not reachable: {what or args[0]} failed (exit {done.returncode}): {said}", hint=HINT_SLURM)
    return done.stdout


def partitions() -> dict[str, bool]:
    """name -> whether it is the default partition, as sinfo lists them."""
    out = _slurm(["sinfo", "--noheader", "--format=%P"], what="sinfo")
    found: dict[str, bool] = {}
    for line in out.split():
        found[line.rstrip("*")] = found.get(line.rstrip("*"), False) or line.endswith("*")
    return found


def seconds(text: str) -> float | None:
    """Slurm's --time (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) in seconds;
    None for unlimited; CRError for anything else."""
    t = str(text).strip()
    if t.lower() in _UNLIMITED:
        return None
    m = _TIME.match(t)
    if not m:
        raise CRError(f"executor 'slurm': option time is {text!r}, not a Slurm time limit",
                      hint="give --time as MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS (e.g. --time 10:00)")
    days, a, b, c = (int(g) if g is not None else None for g in m.groups())
    if days is not None:  # D-HH[:MM[:SS]]
        return float(days * 86400 + a * 3600 + (b or 0) * 60 + (c or 0))
    if c is not None:
        return float(a * 3600 + b * 60 + c)
    if b is not None:
        return float(a * 60 + b)
    return float(a * 60)


def longest_job(events) -> tuple[float, str] | None:
    """(seconds, job id) of the longest attempt that ended with an outcome (done or failed) in a
    campaign's journal events; None when nothing was measured yet."""
    begun: dict[tuple, float] = {}
    best = None
    for e in events:
        key = (e.get("job"), e.get("attempt"))
        if e.get("event") == "started" and isinstance(e.get("time"), (int, float)):
            begun[key] = e["time"]
        elif e.get("event") in ("done", "failed") and key in begun and isinstance(e.get("time"), (int, float)):
            took = e["time"] - begun[key]
            if best is None or took > best[0]:
                best = (took, e["job"])
    return best


def worker_script(scheduler: str, command: str = "cr", partition: str | None = None, time: str | None = None,
                  cores: int | None = None, mem: str | None = None, gpus: int = 0, account: str | None = None,
                  output: str = "/dev/null", worker_args: list[str] | None = None, name: str = "cr-worker",
                  worker_name: str | None = None) -> str:
    """The batch script of one `cr worker` job: Slurm's directives, then the worker in a
    CR_HOME of its own on the node's local disk (removed when the job ends): the worker gets
    every archive over the wire, so no shared file system is needed; cr (command) must be
    installed on the node. command is shell text (e.g. "/opt/venv/bin/cr" or "python3 -m cr").
    The worker is named slurm-JOBID, or worker_name (a replacement takes the name of the worker
    it replaces)."""
    directives = [f"--job-name={name}", f"--output={output}", "--chdir=/tmp", "--nodes=1", "--ntasks=1"]
    for flag, value in (("partition", partition), ("time", time), ("cpus-per-task", cores), ("mem", mem),
                        ("account", account)):
        if value not in (None, ""):
            directives.append(f"--{flag}={value}")
    if gpus:
        directives.append(f"--gres=gpu:{int(gpus)}")
    named = f"--name {shlex.quote(worker_name)}" if worker_name else '--name "slurm-$SLURM_JOB_ID"'
    worker = " ".join([command, "worker", "--scheduler", shlex.quote(scheduler), named, '--cr-home "$home"', *map(shlex.quote, worker_args or [])])
    return "\n".join(["#!/bin/sh", *(f"#SBATCH {d}" for d in directives),
                      "# a cr campaign worker (cr/campaign/slurm_executor.py); its CR_HOME goes with the job",
                      'home="${TMPDIR:-/tmp}/cr-slurm-$SLURM_JOB_ID"',
                      "trap 'rm -rf \"$home\"' EXIT",
                      "trap 'exit 143' TERM INT HUP  # scancel, a time limit: the EXIT trap still cleans up",
                      f"{worker}", ""])


def submit(script: str, what: str = "the worker job") -> str:
    """Submit a batch script (on sbatch's stdin); its Slurm job id. CRError naming what when
    sbatch refuses it (a node configuration Slurm does not have: too many cores, memory, GPUs)."""
    try:
        out = _slurm(["sbatch", "--parsable"], stdin=script, what="sbatch")
    except CRError as exc:
        if "Batch job submission failed" not in exc.message:
            raise
        said = exc.message.split("Batch job submission failed: ", 1)[1]
        raise CRError(f"Slurm refused {what}: {said}",
                      hint="ask for what a node of the partition has (sinfo -N -l, scontrol show partition): "
                           "cores, mem, gpus, time") from None
    job = out.strip().split(";")[0]
    if not job.isdigit():
        raise CRError(f"sbatch answered {out.strip()[:100]!r}, not a job id", hint=HINT_SLURM)
    return job


def states(ids: list[str]) -> dict[str, str]:
    """job id -> its state (PENDING, RUNNING, ...) for the jobs of ids Slurm still lists."""
    if not ids:
        return {}
    try:
        out = _slurm(["squeue", "--noheader", "--format=%i %T", "--jobs=" + ",".join(ids)], what="squeue")
    except CRError:
        return {}  # squeue refuses a list whose jobs have all left its memory: none is there
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            found[parts[0]] = parts[1]
    return found


# Slurm's end states (and its TimeLimit reason) as a user reads them
_ENDINGS = {"TIMEOUT": "at its time limit", "PREEMPTED": "by preemption", "CANCELLED": "by scancel",
            "NODE_FAIL": "because its node failed", "BOOT_FAIL": "because its node did not boot",
            "OUT_OF_MEMORY": "out of memory", "DEADLINE": "at its deadline", "FAILED": "with a failure",
            "COMPLETED": "after its batch script ended"}
ENDED_WAIT_S = 2.0  # how long ended() waits for Slurm to say why a job whose worker left is over


def ended(job_id: str, wait: float = ENDED_WAIT_S) -> str | None:
    """Why Slurm ended worker job job_id, as one phrase ("Slurm ended worker job 12 at its
    time limit (TIMEOUT)"), read from squeue while Slurm still lists the ended job (MinJobAge,
    300 s by default); None when it does not say within wait seconds (the job still runs: its
    worker left for a reason of its own) or no longer lists it. Never raises."""
    deadline = time.monotonic() + wait
    while True:
        try:
            done = subprocess.run(["squeue", "--noheader", "--states=all", "--format=%T|%r", f"--jobs={job_id}"],
                                  capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
        # one line "STATE|REASON"; squeue exits 1 for a job it no longer lists
        line = done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else ""
        state, _, reason = line.partition("|")
        if reason == "TimeLimit" and state not in _ENDINGS:
            state = "TIMEOUT"  # COMPLETING (its processes being killed) for the time limit
        if state in _ENDINGS:
            return f"Slurm ended worker job {job_id} {_ENDINGS[state]} ({state})"
        if not state or time.monotonic() >= deadline:
            return None
        time.sleep(0.25)


def cancel(ids: list[str]) -> None:
    """scancel the jobs (those that ended already are no error); never raises."""
    if not ids:
        return
    try:
        subprocess.run(["scancel", *ids], capture_output=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        pass
