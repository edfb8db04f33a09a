"""The Slurm executor: a campaign's jobs on `cr worker`s that run as Slurm jobs.

    cr campaign run NAME --executor slurm --partition debug --time 10:00 -E workers=2
    SlurmExecutor(partition="debug", time="10:00", workers=2).run(run)

It starts a cr scheduler in this process (or uses the one given with --scheduler), submits
-E workers Slurm batch jobs per platform target that has jobs to run
(cr.campaign.slurm.worker_script: partition, time, cores, memory, GPUs, account), each with
its target's settings: a flag given here, else the target's `slurm` mapping in the
campaign's `platforms`, else the default (settings()). A target's jobs run only on its own
worker jobs (a worker of another target may sit on another partition). It waits for the
workers to join, then runs the campaign exactly as the cluster executor does
(cr.campaign.dask_executor's session and loop: placement refuses unplaceable jobs at once,
archives and results cross the wire, so no shared file system is assumed). A worker job
that Slurm ends (time limit, preemption, scancel) is a worker that left: its job runs again
on another while --retries lasts, and when it was its target's last worker job a
replacement is submitted (at most --retries per target: _replace). Every submitted Slurm
job is cancelled (scancel) when the campaign ends, fails or is interrupted (Ctrl-C or SIGTERM).

Before anything is submitted it refuses, with a hint: a Slurm that does not answer (sinfo
fails), a partition sinfo does not list, and a --time shorter than the longest job this
campaign's journal measured (a worker would be killed mid-job, every time).
"""
from __future__ import annotations

import signal
import threading
import time

from ..errors import CRError
from . import slurm
from .coordinator import Run
from .executors import Executor, Option
from .link import INSECURE_FLAG, address as full_address, as_tls, check_plain, split

POLL_S = 2.0  # how often squeue is asked while the workers are awaited


class SlurmExecutor(Executor):
    """The jobs on cr workers started as Slurm batch jobs."""

    name = "slurm"
    summary = "on cr workers started as Slurm jobs (--partition P --time T, -E workers=N)"
    OPTIONS = (
        Option("partition", str, None, "the Slurm partition (default: the cluster's default one)", flag="--partition"),
        Option("time", str, None, "each worker job's time limit, in Slurm's format (10:00, 1-00:00:00)", flag="--time"),
        Option("workers", int, 1, "the number of cr worker jobs to submit per platform target"),
        Option("cores", int, None, "CPUs per worker job (--cpus-per-task; default 1)"),
        Option("mem", str, None, "memory per worker job (--mem, e.g. 4G)"),
        Option("gpus", int, None, "GPUs per worker job (--gres=gpu:N; default 1 when a platform target needs a GPU)"),
        Option("account", str, None, "the Slurm account to charge (--account)"),
        Option("command", str, "cr", "how the worker job starts cr on the node (cr must be installed there)"),
        Option("output", str, "/dev/null", "where each worker job's output goes on its node (%j: the job id)"),
        Option("trust", bool, False, "the workers run archives' install scripts and probes without asking"),
        Option("scheduler", str, None, "a running cr scheduler to use (default: start one in this process)",
               flag="--scheduler"),
        Option("host", str, "127.0.0.1", "the address the scheduler started here listens on (the nodes must reach it)"),
        Option("port", int, 0, "its port (0: any free one)"),
        Option("retries", int, 2, "runs of a job again after its worker job ended mid-job", flag="--retries"),
        Option("timeout", float, 300.0, "seconds to wait for the worker jobs to start and join", flag="--timeout"),
        Option("connect_timeout", float, 10.0, "seconds to wait for the scheduler to answer", flag="--connect-timeout"),
        Option("tls_ca_file", str, None, "TLS: the CA certificate (PEM); the same path on the nodes", flag="--tls-ca-file"),
        Option("tls_cert", str, None, "TLS: the certificate (PEM); the same path on the nodes", flag="--tls-cert"),
        Option("tls_key", str, None, "TLS: the private key (PEM); the same path on the nodes", flag="--tls-key"),
        Option("insecure_no_tls", bool, False, "a scheduler off loopback without TLS", flag=INSECURE_FLAG),
    )

    def __init__(self, partition=None, time=None, workers=1, cores=None, mem=None, gpus=None, account=None, command="cr",
                 output="/dev/null", trust=False, scheduler=None, host="127.0.0.1", port=0, retries=2, timeout=300.0,
                 connect_timeout=10.0, tls_ca_file=None, tls_cert=None, tls_key=None, insecure_no_tls=False,
                 security=None, noop=False):
        from .link import security as tls

        if workers is None or workers < 1:
            raise CRError(f"executor 'slurm': option workers is {workers}, at least 1 is needed", hint="give -E workers=N, N >= 1")
        if cores is not None and cores < 1:
            raise CRError(f"executor 'slurm': option cores is {cores}, at least 1 is needed", hint="give -E cores=N, N >= 1")
        self.limit = slurm.seconds(time) if time is not None else None  # a malformed --time is refused here
        self.partition, self.time, self.workers, self.cores, self.mem = partition, time, workers, cores, mem
        self.gpus, self.account, self.command, self.output, self.trust = gpus, account, command, output, bool(trust)
        self.tls_files = (tls_ca_file, tls_cert, tls_key)
        self.security = as_tls(security) if security is not None else tls(tls_ca_file, tls_cert, tls_key)
        self.insecure = bool(insecure_no_tls)
        self.scheduler = full_address(scheduler, self.security) if scheduler else None
        self.host, self.port = host, port
        if self.scheduler:
            check_plain(split(self.scheduler)[0], self.security, self.insecure, "the scheduler is at")
        else:
            check_plain(host, self.security, self.insecure, "the scheduler would listen on")
        self.retries, self.timeout, self.connect_timeout, self.noop = retries, timeout, connect_timeout, noop
        self.submitted: list[str] = []  # the Slurm job ids of this run's workers
        self.target_of: dict[str, str] = {}  # Slurm job id -> the platform target it was submitted for
        self.replaced: dict[str, int] = {}  # target -> replacement worker jobs submitted (at most --retries)
        self.replacing: dict[str, dict] = {}  # target -> the replacement awaited: {"id", "name", "deadline", "poll"}
        self.job_of: dict[str, str] = {}  # a replacement's worker name -> its own Slurm job id

    def where(self) -> str:
        return f"Slurm partition {self.partition or '(default)'}, {self.workers} worker job(s) per platform target"

    # -- each target's settings ----------------------------------------------------------------

    def settings(self, run: Run) -> dict[str, dict]:
        """target name -> its worker jobs' {partition, time, cores, mem, gpus, account}, for
        the targets with jobs to run: a flag given here wins, then the target's `slurm`
        mapping in the campaign (validated by its schema), then the default (the cluster's
        default partition and time limit, 1 core, Slurm's default memory, 1 GPU when one of
        the target's jobs uses a GPU, else none, no account)."""
        from .spec import platforms

        declared = platforms(run.campaign)
        flags = {"partition": self.partition, "time": self.time, "cores": self.cores, "mem": self.mem,
                 "gpus": self.gpus, "account": self.account}
        out: dict[str, dict] = {}
        for job in run.todo:
            if job.platform in out:
                continue
            own = (declared.get(job.platform) or {}).get("slurm") or {}
            gpu = int(any(j.uses_gpu for j in run.todo if j.platform == job.platform))
            defaults = {"partition": None, "time": None, "cores": 1, "mem": None, "gpus": gpu, "account": None}
            out[job.platform] = {k: flags[k] if flags[k] is not None else own.get(k, defaults[k]) for k in flags}
        return out

    # -- checks before anything is submitted --------------------------------------------------

    def check(self, run: Run) -> dict[str, dict]:
        """settings(run), each target's partition settled (the cluster's default one when none
        is given); CRError for an unreachable Slurm, an unknown partition or a time limit
        shorter than a job of that target this campaign measured. A value from the campaign's
        file is named by its file and field."""
        from .spec import field_where

        known = slurm.partitions()
        targets = self.settings(run)
        events = run.journal.events()
        for name, got in targets.items():
            field = f"/platforms/{name}/slurm"
            origin = lambda key: (f"--{key}" if getattr(self, key) is not None  # noqa: E731
                                  else f"{field_where(run.campaign, field + '/' + key)}")
            if got["partition"] and got["partition"] not in known:
                raise CRError(f"{origin('partition')}: Slurm has no partition {got['partition']!r} "
                              f"(sinfo lists: {', '.join(sorted(known)) or 'none'})",
                              hint="give --partition one of those (sinfo shows them)" if self.partition is not None
                              else f"give {field}/partition one of those, or --partition (a flag wins over the campaign)")
            got["partition"] = got["partition"] or next((p for p, default in known.items() if default), None)
            limit = slurm.seconds(got["time"]) if got["time"] is not None else None
            if limit is None:
                continue
            mine = {j.id for j in run.jobs if j.platform == name}
            longest = slurm.longest_job(e for e in events if e.get("job") in mine)
            if longest is not None and longest[0] > limit:
                said = f"--time {got['time']}" if self.time is not None else f"{origin('time')}: time {got['time']}"
                raise CRError(f"{said} ({limit:g} s) is shorter than job {longest[1]} of campaign "
                              f"{run.campaign.name} took ({longest[0]:.0f} s, measured by an earlier run): Slurm would "
                              f"end each worker mid-job",
                              hint=f"give {'--time' if self.time is not None else field + '/time'} at least "
                                   f"{_slurm_time(longest[0] * 1.5 + 60)} (the longest job with a margin), or leave it "
                                   f"out for the partition's limit")
        return targets

    # -- the run -------------------------------------------------------------------------------

    def run(self, run: Run) -> None:
        from .dask_executor import Session, run_jobs

        targets = self.check(run)
        started = None
        if self.scheduler is None:
            from .cluster import Scheduler

            started = Scheduler(self.host, self.port, self.security)
            threading.Thread(target=started.serve, daemon=True, name="cr-slurm-scheduler").start()
        addr = self.scheduler or started.address
        restore = _sigterm_as_interrupt()
        session = None
        try:
            session = Session(addr, self.security, self.connect_timeout)
            for name in targets:
                for _ in range(self.workers):
                    self._submit(addr, targets, name)
            self._await_workers(session)
            self._session, self._addr, self._targets, self._run = session, addr, targets, run
            run_jobs(run, session, self.retries, self.noop, place=self._place, on_left=self._replace, hold=self._hold,
                     why_left=self._why_left)
        finally:  # ended, failed or interrupted: no worker job outlives the campaign
            slurm.cancel(self.submitted)
            if session is not None:
                session.close()
            if started is not None:
                started.stop()
            restore()

    def _submit(self, addr: str, targets: dict, name: str, worker_name: str | None = None) -> str:
        """Submit one worker job for target name with its settings; its Slurm job id."""
        got = targets[name]
        script = slurm.worker_script(addr, self.command, got["partition"], got["time"], got["cores"], got["mem"],
                                     got["gpus"], got["account"], self.output, self._worker_args(), worker_name=worker_name)
        job_id = slurm.submit(script, f"the worker job of platform target {name!r} ("
                              + ", ".join(f"{k} {v}" for k, v in got.items() if v not in (None, 0)) + ")")
        self.submitted.append(job_id)
        self.target_of[job_id] = name
        if worker_name:
            self.job_of[worker_name] = job_id
        return job_id

    def _why_left(self, worker: str) -> str | None:
        """What Slurm says ended the worker job of worker (its time limit, preemption, scancel),
        for the failed attempt's reason (campaign status, the retry line); None when it does not."""
        job_id = self.job_of.get(worker) or _slurm_id(worker)
        return slurm.ended(job_id) if job_id in self.target_of else None

    # -- replacing a target's last worker job ----------------------------------------------------

    def _replace(self, left: set[str]) -> None:
        """Workers left: for a target that now has none of its worker jobs connected and jobs
        still to run, submit one replacement worker job (at most --retries per target). It
        takes the name of a worker that left, so the jobs the scheduler holds for that worker
        (its retries) go to the replacement."""
        connected = {self.target_of.get(_slurm_id(n)) for n in self._session.workers}
        for name in sorted(left):
            target = self.target_of.get(_slurm_id(name))
            if target is None or target in connected or target in self.replacing:
                continue
            if self.replaced.get(target, 0) >= self.retries:
                continue
            if all(self._run.is_final(j) for j in self._run.todo if j.platform == target):
                continue
            self.replaced[target] = self.replaced.get(target, 0) + 1
            job_id = self._submit(self._addr, self._targets, target, worker_name=name)
            self.replacing[target] = {"id": job_id, "name": name, "deadline": time.monotonic() + self.timeout,
                                      "poll": 0.0}

    def _hold(self, job) -> bool:
        """Whether job waits for its target's replacement worker job: until it joins, Slurm
        no longer lists it (it ended without joining), or --timeout passed."""
        r = self.replacing.get(job.platform)
        if r is None:
            return False
        now = time.monotonic()
        if r["name"] in self._session.workers or now >= r["deadline"]:
            del self.replacing[job.platform]  # joined (and yet job fits no worker), or too late
            return False
        if now >= r["poll"]:
            r["poll"] = now + POLL_S
            if not slurm.states([r["id"]]):
                del self.replacing[job.platform]
                return False
        return True

    def _place(self, job, workers: dict) -> tuple[list[str], list[str]]:
        """placement(), where this run's worker jobs of another target do not count: a
        target's jobs run on its own worker jobs (its partition, GPUs, time limit)."""
        from .placement import placement

        fit, why = placement(job, workers)
        other = [k for k in fit if self.target_of.get(_slurm_id(workers[k]["name"]), job.platform) != job.platform]
        why += [f"{workers[k]['name']} is a Slurm worker job of platform target "
                f"{self.target_of[_slurm_id(workers[k]['name'])]!r}" for k in other]
        return [k for k in fit if k not in other], why

    def _worker_args(self) -> list[str]:
        args = ["--trust"] if self.trust else []
        for flag, path in zip(("--tls-ca-file", "--tls-cert", "--tls-key"), self.tls_files):
            if path:
                args += [flag, path]
        if self.insecure:
            args.append(INSECURE_FLAG)
        return args

    def _await_workers(self, session) -> None:
        """Until every worker job joined, or --timeout passed with at least one joined; CRError
        when none joined or every worker job ended first."""
        deadline = time.monotonic() + self.timeout
        next_poll = 0.0
        ours = lambda: [n for n in session.workers if n.startswith("slurm-") and n[6:] in self.submitted]  # noqa: E731
        while len(ours()) < len(self.submitted):
            now = time.monotonic()
            if now >= deadline:
                if ours():
                    return
                waiting = slurm.states(self.submitted)
                said = ", ".join(f"{j} {s}" for j, s in sorted(waiting.items())) or "none is queued any more"
                raise CRError(f"no cr worker joined within {self.timeout:g} s of submitting {len(self.submitted)} Slurm "
                              f"job(s) ({said})",
                              hint="check squeue for why they wait; raise --timeout; check that -E command starts reefkit's worker on "
                                   "the nodes (-E output=/tmp/cr-worker-%j.out keeps what the workers print)")
            if now >= next_poll:
                next_poll = now + POLL_S
                if not slurm.states(self.submitted) and not ours():
                    raise CRError(f"the {len(self.submitted)} Slurm worker job(s) ended before their cr worker joined",
                                  hint="check that reefkit is installed on the nodes (-E command=PATH/TO/cr) and that they "
                                       "reach the scheduler; -E output=/tmp/cr-worker-%j.out keeps what they print")
            session.next(min(0.5, max(0.0, deadline - now)))


def _slurm_id(worker: str) -> str | None:
    """The Slurm job id in a worker's name (slurm-1234, as worker_script names it), else None."""
    return worker[6:] if worker.startswith("slurm-") else None


def _slurm_time(secs: float) -> str:
    secs = int(secs + 59) // 60 * 60
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:00"


def _sigterm_as_interrupt():
    """SIGTERM (what a batch system or `kill` sends) ends the run like Ctrl-C, so the worker
    jobs are cancelled and the journal records the jobs cut short. Returns the undo."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    before = signal.signal(signal.SIGTERM, interrupt)
    return lambda: signal.signal(signal.SIGTERM, before)
