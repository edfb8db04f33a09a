#!/usr/bin/env python
"""`cr init solution` when everything is already present (the idempotent fast path).

In a temporary CR_HOME, the solution is initialised once (detection, lock; untimed), then
`cr init solution NAME` is run --runs times, interleaved with `python -c pass` as the
baseline of this run. Reports the medians and the ratio. Target: <= 0.3 s wall.

    .venv/bin/python benchmarks/bench_init.py [--solution lenet-digits-onnxruntime] [--runs 15]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--solution", default="lenet-digits-onnxruntime")
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    home = tempfile.mkdtemp(prefix="cr-bench-init-")
    try:
        env = {**os.environ, "CR_HOME": home}
        cr = [sys.executable, "-m", "cr", "init", "solution", args.solution]
        first = timed(cr, env)
        base, ours = [], []
        for _ in range(args.runs):
            base.append(timed([sys.executable, "-c", "pass"], env))
            ours.append(timed(cr, env))
        b, o = statistics.median(base), statistics.median(ours)
        print(f"first cr init solution {args.solution} (detect + resolve + lock): {first:.3f} s")
        print(f"python -c pass: median {b * 1e3:.0f} ms")
        print(f"cr init solution {args.solution}, everything present: median {o * 1e3:.0f} ms, min {min(ours) * 1e3:.0f} ms "
              f"({o / b:.1f}x python -c pass; target <= 300 ms)")
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
