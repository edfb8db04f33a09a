"""Campaign overheads, as ratios against a baseline measured in the same run.

    python benchmarks/bench_campaign.py [--jobs 8] [--tiny 1000] [--scaling 8]

1. local executor: a campaign of N null-backend jobs vs the same N `cr benchmark solution`
   calls in a shell loop (target <= 1.05x wall);
2. Dask dispatch: per-job overhead of a null-backend job through scheduler + worker vs
   the local executor (ms/job); TINY no-op jobs through the same dispatch path: jobs/s
   and the coordinator's peak RSS (targets >= 20 jobs/s, < 300 MB);
3. scaling: the same short null-backend jobs on 1 vs 2 workers (target >= 1.7x on 2 cores).
Everything runs on 127.0.0.1 in a temporary CR_HOME.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = {"inputs": "synthetic", "min_duration_s": 0, "min_queries": 10, "warmup_queries": 0}


def _meta(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _setup(base: Path, jobs: int) -> dict:
    env = {**os.environ, "CR_HOME": str(base / "home"), "PYTHONPATH": str(ROOT)}
    repo = base / "repo"
    _meta(repo / "cr-repo.json", {"name": "bench", "uid": "b" * 16, "version": "1.0.0"})
    _meta(repo / "solution/null-digits/1.0.0/meta.json", {
        "uid": "c" * 16, "kind": "solution", "name": "null-digits", "version": "1.0.0", "model": "model:lenet-digits@1.0.0",
        "backend": "null", "actions": [{"action": "benchmark", "params": FAST}], "deps": ["software:python@>=3.9"]})
    _meta(repo / "campaign/bench/1.0.0/meta.json", {
        "uid": "d" * 16, "kind": "campaign", "name": "bench", "version": "1.0.0", "solutions": ["solution:null-digits"],
        "repeat": jobs})
    _cr(env, "repo", "add", str(repo))
    _cr(env, "init", "solution", "null-digits")
    return env


def _cr(env, *args, check=True):
    done = subprocess.run([sys.executable, "-m", "cr", *args], env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"cr {' '.join(args)} failed: {done.stderr}")
    return done


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _start(env, args, log):
    return subprocess.Popen([sys.executable, "-m", "cr", *args], env=env, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _line(log: Path, word: str) -> str:
    for _ in range(600):
        for line in log.read_text().splitlines():
            if line.startswith(word):
                return line
        time.sleep(0.1)
    raise SystemExit(f"{log}: {log.read_text()}")


def _cluster(base: Path, env: dict, n: int):
    procs = [_start(env, ["scheduler", "--port", "0"], base / "sched.log")]
    addr = _line(base / "sched.log", "scheduler at").split()[-1]
    for i in range(n):
        log = base / f"w{i}.log"
        procs.append(_start(env, ["worker", "--scheduler", addr, "--name", f"w{i}", "--cr-home", str(base / f"wh{i}")], log))
        _line(log, f"worker w{i}")
    return addr, procs


def _stop(procs) -> None:
    for p in reversed(procs):
        os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        p.wait(timeout=30)


def tiny_jobs(addr: str, env: dict, n: int) -> tuple[float, float]:
    """(jobs/s, peak RSS MB) of n no-op jobs through the Dask dispatch path, in a coordinator child."""
    code = f"""
import json, resource, time, sys
from cr.campaign import spec
from cr.campaign.coordinator import Run
from cr.campaign.dask_executor import DaskExecutor
from cr.campaign.runner import drive
c = spec.load("bench")
jobs = spec.expand(c)
base = jobs[0]
many = [spec.CampaignJob(f"{{i:016x}}", base.solution, base.solution_uid, base.solution_sha256, {{}}, "any", {{}}, i, None, {{}}) for i in range({n})]
run = Run(c, many, rerun=True)
t0 = time.perf_counter()
drive(DaskExecutor({addr!r}, noop=True), run)
dt = time.perf_counter() - t0
print(json.dumps({{"jobs_s": {n} / dt, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return out["jobs_s"], out["rss_mb"]


def per_job(env: dict, addr: str | None) -> tuple[float, float]:
    """(wall s, s outside the jobs' own runs) of the campaign in-process: local, or on addr."""
    code = f"""
import json, time
from datetime import datetime
import cr
t0 = time.perf_counter()
run = cr.run_campaign("bench", scheduler={addr!r}, rerun=True)
wall = time.perf_counter() - t0
inside = 0.0
for o in run.outcomes.values():
    for r in o.get("records") or []:
        inside += (datetime.fromisoformat(r["ended"]) - datetime.fromisoformat(r["started"])).total_seconds()
print(json.dumps([wall, wall - inside]))
"""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--tiny", type=int, default=1000)
    ap.add_argument("--scaling", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-campaign-") as tmp:
        base = Path(tmp)
        env = _setup(base, args.jobs)
        loop = _timed(lambda: [_cr(env, "benchmark", "solution", "null-digits") for _ in range(args.jobs)])
        local = _timed(lambda: _cr(env, "campaign", "run", "bench", "--rerun"))
        print(f"local executor: {args.jobs} jobs {local:.2f} s vs shell loop {loop:.2f} s: {local / loop:.3f}x (target <= 1.05x)")

        (base / "c1").mkdir()
        addr, procs = _cluster(base / "c1", env, 1)
        dask_run = lambda *extra: _timed(lambda: _cr(env, "campaign", "run", "bench", "--rerun", "--scheduler", addr, *extra))  # noqa: E731
        try:
            cold = dask_run()  # the worker unpacks and sets the solution up on its first job
            warm = dask_run()
            print(f"dask dispatch: {args.jobs} jobs {warm:.2f} s (first run, with the worker's set-up: {cold:.2f} s) "
                  f"vs local {local:.2f} s: {(warm - local) / args.jobs * 1000:+.0f} ms/job, CLI runs")
            lw, lo = per_job(env, None)
            dw, do = per_job(env, addr)
            print(f"dask dispatch, in-process: time outside the jobs' runs {do / args.jobs * 1000:.0f} ms/job on dask vs "
                  f"{lo / args.jobs * 1000:.0f} ms/job local: {(do - lo) / args.jobs * 1000:+.0f} ms/job "
                  f"(walls {dw:.2f} s vs {lw:.2f} s; includes packing the archive and connecting, once per run)")
            rate, rss = tiny_jobs(addr, env, args.tiny)
            print(f"dask dispatch: {args.tiny} no-op jobs: {rate:.1f} jobs/s (target >= 20), coordinator peak RSS {rss:.0f} MB (target < 300)")
            one = dask_run()
        finally:
            _stop(procs)
        (base / "c2").mkdir()
        addr, procs = _cluster(base / "c2", env, 2)
        try:
            dask_run("--wait-for-workers", "2")  # both workers set up
            two = dask_run("--wait-for-workers", "2")
        finally:
            _stop(procs)
        load = os.getloadavg()[0]
        print(f"scaling: {args.jobs} jobs on 1 worker {one:.2f} s, on 2 workers {two:.2f} s: {one / two:.2f}x (target >= 1.7x; "
              f"load average {load:.1f} on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
