"""Per-job environments: what a cross-stack campaign costs outside its jobs, as a ratio against a
single-stack campaign of the same size measured in the same run.

    python benchmarks/bench_jobenv.py [--rounds 3] [--json FILE]

Two campaigns of 10 jobs over solution:lenet-digits-onnxruntime (its two declared benchmarks,
shortened: min_duration_s 0.05, 10 queries, no warm-up), run in-process by the local executor:

  cross   backend onnxruntime / torch / tflite x threads 1, 2, plus 4 batch-4 jobs (10 jobs,
          3 stacks: each non-onnxruntime job runs in the lock of its own backend)
  single  onnxruntime only: threads 1, 2 x batch 1, 2, 4, 8, 16 (10 jobs, the solution's lock)

From a warm cache (each campaign runs twice first, untimed: locks resolved, software
detected, the index built), each round runs both with rerun=True, in alternating order. A
job's own time is what its action children take (cr.run.launch.run_job: the framework's
import, load and measurement); the time outside the jobs is the campaign's wall time minus
that: expansion, settling each job's target, finding its lock, journaling, storing. Reported:
the median over rounds of each, and cross / single (target <= 1.2x). Also the resolutions
the timed rounds made (cr.resolve.resolver.resolve calls; target 0 from a warm cache).
Everything lives in a temporary CR_HOME.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICK = {"min_duration_s": 0.05, "min_queries": 10, "warmup_queries": 0, "max_duration_s": 1, "warmup_until_stable": False}


def _meta(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def _campaign(repo: Path, name: str, **fields) -> None:
    _meta(repo / "campaign" / name / "1.0.0" / "meta.json", {
        "uid": secrets.token_hex(8), "kind": "campaign", "name": name, "version": "1.0.0", "tags": [],
        "solutions": ["solution:lenet-digits-onnxruntime"], "actions": ["benchmark"], "params": {"benchmark": QUICK},
        **fields})


def setup(base: Path, tiny: bool = False) -> None:
    os.environ["CR_HOME"] = str(base / "home")
    repo = base / "repo"
    _meta(repo / "cr-repo.json", {"name": "bench", "uid": secrets.token_hex(8), "version": "1.0.0"})
    if tiny:  # two jobs each: the script's own smoke test, not a figure
        _campaign(repo, "cross", matrix={"backend": ["onnxruntime", "tflite"], "threads": [1]})
        _campaign(repo, "single", matrix={"threads": [1], "batch_size": [1, 2]})
    else:
        _campaign(repo, "cross", matrix={"backend": ["onnxruntime", "torch", "tflite"], "threads": [1, 2]},
                  include=[{"backend": b, "batch_size": 4} for b in ("onnxruntime", "torch", "tflite")]
                  + [{"backend": "onnxruntime", "threads": 2, "batch_size": 4}])
        _campaign(repo, "single", matrix={"threads": [1, 2], "batch_size": [1, 2, 4, 8, 16]})
    from cr.api import repo_add

    repo_add(str(repo))


class Clock:
    """Sums the time spent in the jobs' action children (cr.run.launch.run_job) and counts resolutions."""

    def __init__(self):
        from cr.resolve import resolver
        from cr.run import launch

        self.child = 0.0
        self.resolutions = 0
        real_run, real_resolve = launch.run_job, resolver.resolve

        def run_job(*a, **kw):
            t0 = time.perf_counter()
            try:
                return real_run(*a, **kw)
            finally:
                self.child += time.perf_counter() - t0

        def resolve(*a, **kw):
            self.resolutions += 1
            return real_resolve(*a, **kw)

        launch.run_job, resolver.resolve = run_job, resolve


def run_once(name: str, clock: Clock) -> dict:
    from cr.campaign.runner import run_campaign

    clock.child, clock.resolutions = 0.0, 0
    t0 = time.perf_counter()
    run = run_campaign(name, rerun=True)
    wall = time.perf_counter() - t0
    failed = [o.get("error") for o in run.outcomes.values() if o.get("state") != "done"]
    if failed:
        raise SystemExit(f"campaign {name}: {len(failed)} job(s) failed: {failed[0]}")
    return {"wall_s": wall, "jobs_s": clock.child, "outside_s": wall - clock.child, "jobs": len(run.jobs),
            "resolutions": clock.resolutions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="also write the raw figures here ('-': stdout)")
    parser.add_argument("--tiny", action="store_true",
                        help="2 jobs per campaign, 1 warm-up run: checks that the script runs (tests/test_benchmarks.py), no figure")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="cr-bench-jobenv-") as tmp:
        setup(Path(tmp), args.tiny)
        clock = Clock()
        for _ in range(1 if args.tiny else 2):  # warm: locks resolved (and re-keyed once every stack's software is registered)
            for name in ("cross", "single"):
                run_once(name, clock)
        rounds = {"cross": [], "single": []}
        for i in range(args.rounds):
            for name in (("cross", "single") if i % 2 == 0 else ("single", "cross")):
                rounds[name].append(run_once(name, clock))
    med = {name: {k: statistics.median(r[k] for r in rs) for k in ("wall_s", "jobs_s", "outside_s")}
           for name, rs in rounds.items()}
    ratio = med["cross"]["outside_s"] / med["single"]["outside_s"]
    print(f"{'campaign':8}  {'jobs':>4}  {'wall':>8}  {'in jobs':>8}  {'outside':>8}  {'outside/job':>11}  resolutions")
    for name, rs in rounds.items():
        m = med[name]
        print(f"{name:8}  {rs[0]['jobs']:>4}  {m['wall_s']:7.2f}s  {m['jobs_s']:7.2f}s  {m['outside_s']:7.2f}s  "
              f"{1000 * m['outside_s'] / rs[0]['jobs']:9.0f}ms  {sum(r['resolutions'] for r in rs)}")
    print(f"outside the jobs, cross-stack / single-stack: {ratio:.2f}x (target <= 1.2x), median of {args.rounds} rounds")
    if args.json:
        text = json.dumps({"rounds": rounds, "median": med, "ratio": ratio}, indent=2)
        if args.json == "-":
            print(text)
        else:
            Path(args.json).write_text(text)


if __name__ == "__main__":
    main()
