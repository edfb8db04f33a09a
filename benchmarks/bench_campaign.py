"""Campaign overheads, as ratios against a baseline measured in the same run.

    python benchmarks/bench_campaign.py [--jobs 8] [--tiny 1000] [--real 1000] [--rounds 3] [--rows ROWS] [--ceiling 4]

1. local: a campaign of N null-backend jobs vs the same N `cr benchmark solution` calls in
   a shell loop (target <= 1.05x wall);
2. dispatch: per-job overhead of a null-backend job through scheduler + 1 worker vs the
   local executor (ms/job); tiny: TINY no-op jobs through the same dispatch path: jobs/s
   and the coordinator's peak RSS (targets >= 20 jobs/s, < 300 MB);
3. real: `cr campaign run` over REAL null-backend jobs, each storing a result with 1,000
   raw latencies, on 2 workers: the coordinator's peak RSS and its RSS through the run
   (target < 300 MB for 1,000 jobs), every result stored once;
4. scaling: N validate-only jobs (lenet-digits on ONNX Runtime) on 1 vs 2 workers,
   interleaved, medians (target >= 1.7x), beside the machine's own 2-process ceiling;
   scaling-null: the same with the short null-backend benchmark jobs (diagnosis).
Everything runs on 127.0.0.1 in a temporary CR_HOME.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = {"inputs": "synthetic", "min_duration_s": 0, "min_queries": 10, "warmup_queries": 0}
REAL_QUERIES = 1000


def _meta(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _setup(base: Path, jobs: int, real: int = 1) -> dict:
    env = {**os.environ, "CR_HOME": str(base / "home"), "PYTHONPATH": str(ROOT)}
    repo = base / "repo"
    _meta(repo / "cr-repo.json", {"name": "bench", "uid": "b" * 16, "version": "1.0.0"})
    _meta(repo / "solution/null-digits/1.0.0/meta.json", {
        "uid": "c" * 16, "kind": "solution", "name": "null-digits", "version": "1.0.0", "model": "model:lenet-digits@1.0.0",
        "backend": "null", "actions": [{"action": "benchmark", "params": FAST}], "deps": ["software:python@>=3.9"]})
    _meta(repo / "campaign/bench/1.0.0/meta.json", {
        "uid": "d" * 16, "kind": "campaign", "name": "bench", "version": "1.0.0", "solutions": ["solution:null-digits"],
        "repeat": jobs})
    # "real" jobs: each stores one benchmark result with REAL_QUERIES raw latencies
    _meta(repo / "solution/null-real/1.0.0/meta.json", {
        "uid": "e" * 16, "kind": "solution", "name": "null-real", "version": "1.0.0", "model": "model:lenet-digits@1.0.0",
        "backend": "null", "actions": [{"action": "benchmark", "params": {**FAST, "min_queries": REAL_QUERIES}}],
        "deps": ["software:python@>=3.9"]})
    _meta(repo / "campaign/real/1.0.0/meta.json", {
        "uid": "f" * 16, "kind": "campaign", "name": "real", "version": "1.0.0", "solutions": ["solution:null-real"],
        "repeat": real})
    # validate-only jobs on ONNX Runtime: real work that does not benchmark
    _meta(repo / "solution/lenet-validate/1.0.0/meta.json", {
        "uid": "a" * 16, "kind": "solution", "name": "lenet-validate", "version": "1.0.0", "model": "model:lenet-digits@1.0.0",
        "dataset": "dataset:digits@1.0.0", "backend": "onnxruntime", "backend_options": {"intra_op_threads": 1},
        "pipeline": {"variant": "onnx"}, "actions": [{"action": "validate", "params": {}}],
        "deps": ["software:numpy@>=1.23", "software:python@>=3.9", "software:onnxruntime@>=1.17"]})
    _meta(repo / "campaign/validate/1.0.0/meta.json", {
        "uid": "9" * 16, "kind": "campaign", "name": "validate", "version": "1.0.0", "solutions": ["solution:lenet-validate"],
        "repeat": jobs})
    _cr(env, "repo", "add", str(repo))
    for name in ("null-digits", "null-real", "lenet-validate"):
        _cr(env, "init", "solution", name)
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


def real_jobs(addr: str, env: dict, trace: bool = False) -> dict:
    """`cr campaign run real --scheduler ADDR` (each job stores a result with REAL_QUERIES
    latencies), in-process in a coordinator child as the CLI runs it (progress, summary table):
    jobs/s, its peak RSS (MB), its RSS (MB) at each tenth of the run's time (sampled), and
    how many results are stored (each job's exactly once).
    trace: the top allocation sites held at the end (tracemalloc; slower, more memory)."""
    code = f"""
import contextlib, io, json, resource, sys, threading, time, tracemalloc
from cr.cli.main import cli
from cr.campaign import spec
from cr.campaign.coordinator import result_uids
from cr.results.store import default_store
trace = {trace!r}
if trace:
    tracemalloc.start(8)
page = resource.getpagesize()
def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page / 2**20
samples, stop = [], threading.Event()
def sample():
    while not stop.wait(0.2):
        samples.append(rss_mb())
threading.Thread(target=sample, daemon=True).start()
out = io.StringIO()
t0 = time.perf_counter()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
    try:
        cli.main(["campaign", "run", "real", "--rerun", "--scheduler", {addr!r}], prog_name="cr", standalone_mode=False)
    except SystemExit:
        pass
dt = time.perf_counter() - t0
stop.set()
top = []
if trace:
    snap = tracemalloc.take_snapshot()
    top = [f"{{s.size / 2**20:.1f}} MB {{s.count}} blocks: {{s.traceback.format()[-1].strip()}}" for s in snap.statistics("lineno")[:12]]
c = spec.load("real")
uids = result_uids(c)
store = default_store()
stored = sum(1 for u in uids if store.get(u).get("campaign", {{}}).get("uid") == c.uid)
tenths = [round(samples[min(len(samples) - 1, len(samples) * k // 10)]) for k in range(1, 11)] if samples else []
print(json.dumps({{"jobs": len(spec.expand(c)), "jobs_s": len(spec.expand(c)) / dt, "seconds": dt,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "samples": tenths,
                  "results": len(uids), "stored": stored, "top": top}}))
"""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def per_job(env: dict, addr: str | None, name: str = "bench") -> tuple[float, float]:
    """(wall s, s outside the jobs' own runs) of campaign name in-process: local, or on addr."""
    code = f"""
import json, time
from datetime import datetime
import cr
from cr.results.store import default_store
t0 = time.perf_counter()
run = cr.run_campaign({name!r}, scheduler={addr!r}, rerun=True)
wall = time.perf_counter() - t0
store = default_store()
inside = 0.0
for o in run.outcomes.values():
    for uid in o.get("results") or []:
        r = store.get(uid)
        inside += (datetime.fromisoformat(r["ended"]) - datetime.fromisoformat(r["started"])).total_seconds()
print(json.dumps([wall, wall - inside]))
"""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return tuple(json.loads(done.stdout.strip().splitlines()[-1]))


def _median(values: list[float]) -> float:
    return statistics.median(values)


SCALING = {"scaling": ("validate", ["validate", "solution", "lenet-validate"], "validate-only"),
           "scaling-null": ("bench", ["benchmark", "solution", "null-digits"], "short null-backend benchmark")}


def scaling(base: Path, env: dict, jobs: int, rounds: int, row: str = "scaling", ceiling: int = 4) -> None:
    """The row's jobs on a 1-worker and a 2-worker cluster, runs interleaved (medians),
    beside the machine's own ceiling: the same jobs' work as 2 processes at once vs 1."""
    name, command, words = SCALING[row]
    clusters = []
    try:
        for n in (1, 2):
            (base / f"{row}{n}").mkdir()
            clusters.append(_cluster(base / f"{row}{n}", env, n))
        for addr, _ in clusters:  # each worker unpacks and sets the solution up on its first job
            _cr(env, "campaign", "run", name, "--rerun", "--scheduler", addr, "--wait-for-workers", "1")
        walls = {1: [], 2: []}
        outside = {1: [], 2: []}
        for _ in range(rounds):
            for n, (addr, _) in zip((1, 2), clusters):
                wall, out = per_job(env, addr, name)
                walls[n].append(wall)
                outside[n].append(out)
    finally:
        for _, procs in clusters:
            _stop(procs)
    seq = _timed(lambda: [_cr(env, *command, check=False) for _ in range(ceiling)])
    par = _timed(lambda: [p.wait() for p in [subprocess.Popen(
        ["/bin/sh", "-c", " && ".join([f"{sys.executable} -m cr {' '.join(command)} >/dev/null 2>&1 || true"] * (ceiling // 2))],
        env=env) for _ in range(2)]])
    one, two = _median(walls[1]), _median(walls[2])
    # the share of the workers' time not spent in a job's own run: dispatch, set-up, waiting
    idle = {n: _median([1 - (w - o) / (n * w) for w, o in zip(walls[n], outside[n])]) for n in (1, 2)}
    # a job's own run (its records' started..ended): longer on 2 workers when the jobs compete for cores
    own = {n: _median([(w - o) / jobs for w, o in zip(walls[n], outside[n])]) for n in (1, 2)}
    load = os.getloadavg()[0]
    print(f"{row} ({words} jobs): {jobs} jobs on 1 worker {one:.2f} s, on 2 workers {two:.2f} s: {one / two:.2f}x "
          f"(target >= 1.7x; medians of {rounds} interleaved runs); the machine's own ceiling: {ceiling} `cr {command[0]}` as 2 "
          f"processes at once vs one after another: {seq / par:.2f}x; workers' time outside the jobs' runs: "
          f"{idle[1]:.0%} on 1 worker, {idle[2]:.0%} on 2; a job's own run {own[1]:.2f} s on 1 worker, {own[2]:.2f} s on 2; load average {load:.1f} on {os.cpu_count()} cores")


ROWS = ("local", "dispatch", "tiny", "real", "scaling", "scaling-null")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--tiny", type=int, default=1000)
    ap.add_argument("--real", type=int, default=1000, help="jobs of the real row (each stores 1,000 latencies)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved runs of the scaling row")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"which rows, of {', '.join(ROWS)}")
    ap.add_argument("--trace", action="store_true", help="real row: the top allocation sites held at the end")
    ap.add_argument("--ceiling", type=int, default=4, help="scaling rows: commands (even) of the machine's 2-process ceiling")
    args = ap.parse_args()
    rows = set(args.rows.split(","))
    with tempfile.TemporaryDirectory(prefix="bench-campaign-") as tmp:
        base = Path(tmp)
        env = _setup(base, args.jobs, args.real)
        local = None
        if rows & {"local", "dispatch"}:
            loop = _timed(lambda: [_cr(env, "benchmark", "solution", "null-digits") for _ in range(args.jobs)])
            local = _timed(lambda: _cr(env, "campaign", "run", "bench", "--rerun"))
            print(f"local executor: {args.jobs} jobs {local:.2f} s vs shell loop {loop:.2f} s: {local / loop:.3f}x (target <= 1.05x)")
        if rows & {"dispatch", "tiny"}:
            (base / "c1").mkdir()
            addr, procs = _cluster(base / "c1", env, 1)
            dask_run = lambda *extra: _timed(lambda: _cr(env, "campaign", "run", "bench", "--rerun", "--scheduler", addr, *extra))  # noqa: E731
            try:
                if "dispatch" in rows:
                    cold = dask_run()  # the worker unpacks and sets the solution up on its first job
                    warm = dask_run()
                    print(f"dask dispatch: {args.jobs} jobs {warm:.2f} s (first run, with the worker's set-up: {cold:.2f} s) "
                          f"vs local {local:.2f} s: {(warm - local) / args.jobs * 1000:+.0f} ms/job, CLI runs")
                    lw, lo = per_job(env, None)
                    dw, do = per_job(env, addr)
                    print(f"dask dispatch, in-process: time outside the jobs' runs {do / args.jobs * 1000:.0f} ms/job on dask vs "
                          f"{lo / args.jobs * 1000:.0f} ms/job local: {(do - lo) / args.jobs * 1000:+.0f} ms/job "
                          f"(walls {dw:.2f} s vs {lw:.2f} s; includes packing the archive and connecting, once per run)")
                if "tiny" in rows:
                    rate, rss = tiny_jobs(addr, env, args.tiny)
                    print(f"dask dispatch: {args.tiny} no-op jobs: {rate:.1f} jobs/s (target >= 20), coordinator peak RSS "
                          f"{rss:.0f} MB (target < 300)")
            finally:
                _stop(procs)
        if "real" in rows:
            (base / "c2").mkdir()
            addr, procs = _cluster(base / "c2", env, 2)
            try:
                got = real_jobs(addr, env, args.trace)
            finally:
                _stop(procs)
            print(f"real jobs: {got['jobs']} jobs, each storing a result with {REAL_QUERIES} latencies, on 2 workers: "
                  f"{got['jobs_s']:.1f} jobs/s, {got['stored']} of {got['results']} results stored; "
                  f"`cr campaign run` peak RSS {got['rss_mb']:.0f} MB (target < 300); RSS at each tenth of the run: {got['samples']}")
            for line in got["top"]:
                print("  held:", line)
        for row in SCALING:
            if row in rows:
                scaling(base, env, args.jobs, args.rounds, row, max(2, args.ceiling // 2 * 2))


if __name__ == "__main__":
    main()
