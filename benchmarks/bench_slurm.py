"""The Slurm executor's overhead: a campaign on the one-node Slurm vs the same campaign on the
local cr cluster, as the time spent outside the jobs themselves.

    python benchmarks/bench_slurm.py [--jobs 6] [--workers 2] [--rounds 3] [--json FILE]

Each round, interleaved, runs the same campaign of --jobs null-backend benchmark jobs (lenet-digits)
three times, each from nothing to every result stored:
  local        `cr scheduler` + --workers `cr worker` processes started here, each in a fresh
               CR_HOME (as a Slurm worker job is), then `cr campaign run --scheduler ADDR
               --wait-for-workers N`, then the processes stopped;
  local-warm   the same, the workers' CR_HOMEs kept from round to round (each solution is set up
               once: what workers started by hand on machines of one's own get);
  slurm        `cr campaign run --executor slurm -E workers=N` (its own scheduler, the workers as Slurm
               batch jobs on the one-node Slurm of scripts/slurm-up.sh, scancelled at the end: start it first).
Time outside the jobs = the wall time minus the time during which at least one job ran (the union
of the stored records' started..ended). Medians over the rounds, and slurm / local. Without a
Slurm that answers, the slurm side says why and is not measured.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAST = {"inputs": "synthetic", "min_duration_s": 0, "min_queries": 10, "warmup_queries": 0}


def _meta(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _cr(env, *args, check=True):
    done = subprocess.run([sys.executable, "-m", "cr", *map(str, args)], env=env, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"cr {' '.join(map(str, args))} failed: {done.stderr}")
    return done


def _setup(base: Path, jobs: int) -> dict:
    env = {**os.environ, "CR_HOME": str(base / "home"), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONWARNINGS", None)
    repo = base / "repo"
    _meta(repo / "cr-repo.json", {"name": "bench", "uid": "b" * 16, "version": "1.0.0"})
    _meta(repo / "solution/null-digits/1.0.0/meta.json", {
        "uid": "c" * 16, "kind": "solution", "name": "null-digits", "version": "1.0.0", "model": "model:lenet-digits@1.0.0",
        "backend": "null", "actions": [{"action": "benchmark", "params": FAST}], "deps": ["software:python@>=3.9"]})
    _meta(repo / "campaign/bench/1.0.0/meta.json", {
        "uid": "d" * 16, "kind": "campaign", "name": "bench", "version": "1.0.0", "solutions": ["solution:null-digits"],
        "repeat": jobs})
    _cr(env, "repo", "add", repo)
    _cr(env, "init", "solution", "null-digits")
    return env


def _start(env, args, log):
    return subprocess.Popen([sys.executable, "-m", "cr", *map(str, args)], env=env, stdout=open(log, "w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _line(log: Path, word: str, proc) -> str:
    for _ in range(600):
        for line in log.read_text().splitlines():
            if line.startswith(word):
                return line
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"{log}: {log.read_text()}")


def _in_jobs(env, jobs: int) -> float:
    """Seconds during which at least one of the campaign's last `jobs` jobs ran (records' times)."""
    rows = json.loads(_cr(env, "results", "list", "--campaign", "bench", "--json").stdout)
    spans = sorted((datetime.fromisoformat(r["started"]).timestamp(), datetime.fromisoformat(r["ended"]).timestamp())
                   for r in rows)[-jobs:]
    total, end = 0.0, float("-inf")
    for a, b in spans:
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def local(env, base: Path, jobs: int, workers: int, warm: bool) -> tuple[float, float]:
    homes = [base / (f"warm{i}" if warm else f"fresh{i}") for i in range(workers)]
    for h in homes if not warm else ():
        shutil.rmtree(h, ignore_errors=True)
    t0 = time.perf_counter()
    procs = [_start(env, ["scheduler", "--port", "0"], base / "sched.log")]
    try:
        addr = _line(base / "sched.log", "scheduler at", procs[0]).split()[-1]
        for i in range(workers):
            log = base / f"w{i}.log"
            procs.append(_start(env, ["worker", "--scheduler", addr, "--name", f"w{i}", "--cr-home", homes[i]], log))
        _cr(env, "campaign", "run", "bench", "--rerun", "--scheduler", addr, "--wait-for-workers", workers)
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=30)
    wall = time.perf_counter() - t0
    return wall, _in_jobs(env, jobs)


def on_slurm(env, jobs: int, workers: int) -> tuple[float, float]:
    t0 = time.perf_counter()
    _cr(env, "campaign", "run", "bench", "--rerun", "--executor", "slurm", "-E", f"workers={workers}",
        "-E", f"command={sys.executable} -m cr")
    wall = time.perf_counter() - t0
    return wall, _in_jobs(env, jobs)


def slurm_missing() -> str | None:
    """Why the slurm side cannot run here (None: a Slurm answers); starts nothing."""
    sys.path.insert(0, str(ROOT))
    from cr.campaign.slurm import partitions
    from cr.errors import CRError

    try:
        partitions()
    except CRError as exc:
        return f"{exc.message} (scripts/slurm-up.sh starts a one-node Slurm as root)"
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    why = slurm_missing()
    rows: dict[str, list[tuple[float, float]]] = {"local": [], "local-warm": [], "slurm": []}
    with tempfile.TemporaryDirectory(prefix="cr-bench-slurm-") as tmp:
        base = Path(tmp)
        env = _setup(base, args.jobs)
        for _ in range(args.rounds):
            rows["local"].append(local(env, base, args.jobs, args.workers, warm=False))
            rows["local-warm"].append(local(env, base, args.jobs, args.workers, warm=True))
            if why is None:
                rows["slurm"].append(on_slurm(env, args.jobs, args.workers))
    out = {"jobs": args.jobs, "workers": args.workers, "rounds": args.rounds, "slurm_not_measured": why}
    print(f"{args.jobs} null-backend jobs on {args.workers} workers, {args.rounds} round(s), interleaved; medians")
    print(f"{'':10} {'wall s':>8} {'in jobs s':>10} {'outside s':>10}")
    for name, got in rows.items():
        if not got:
            print(f"{name:10} not measured: {why}")
            continue
        wall = statistics.median(w for w, _ in got)
        inside = statistics.median(i for _, i in got)
        outside = statistics.median(w - i for w, i in got)
        out[name] = {"wall_s": round(wall, 2), "in_jobs_s": round(inside, 2), "outside_s": round(outside, 2),
                     "rounds": [[round(w, 2), round(i, 2)] for w, i in got]}
        print(f"{name:10} {wall:8.2f} {inside:10.2f} {outside:10.2f}")
    if rows["slurm"]:
        for base_name in ("local", "local-warm"):
            ratio = out["slurm"]["outside_s"] / out[base_name]["outside_s"]
            out[f"outside_ratio_vs_{base_name}"] = round(ratio, 2)
            print(f"time outside the jobs, slurm / {base_name}: {ratio:.2f}x "
                  f"({out['slurm']['outside_s'] - out[base_name]['outside_s']:+.2f} s)")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
