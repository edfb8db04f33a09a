#!/usr/bin/env python
"""Do the phase marks of `cr profile` and `cr compile` move what they measure? Before
(--before's cr, default main, exported with git archive: no marks in their children) and
after (this tree: marks on a pipe, relayed by cr, one line each on a piped stderr), in one
run, interleaved, the order swapped every round.

    profile   `cr profile model lenet-digits --backend onnxruntime --threads 1 --samples N`:
              the profiled p50 and the plain p50 (profile.overhead), the times the marks sit
              between
    compile   `cr compile model lenet-digits --to onnx --variant torchscript --quantization
              dynamic` (two steps, one child per hop): the record's duration_s

Medians per arm, their ratio to before's and the median of the per-round ratios (a
neighbour's load on a shared machine falls on both arms of a round alike) are printed.

    .venv/bin/python benchmarks/bench_progress_children.py [--rounds 5] [--samples 200] [--before main]
                                                           [--profile-only] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PROFILE = ["profile", "model", "lenet-digits", "--backend", "onnxruntime", "--threads", "1", "--no-store", "--json"]
COMPILE = ["compile", "model", "lenet-digits", "--to", "onnx", "--variant", "torchscript", "--quantization", "dynamic",
           "--force", "--json"]


def _cr(path: str, args: list[str], home: str) -> dict:
    env = {**os.environ, "PYTHONPATH": path, "CR_HOME": home}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run([sys.executable, "-m", "cr", *args], capture_output=True, text=True, env=env, cwd=path)
    if done.returncode != 0:
        raise SystemExit(f"cr {' '.join(args)} failed in {path}: {done.stderr[-500:]}")
    return json.loads(done.stdout)


def _figures(path: str, samples: int, home: str, compile_too: bool) -> dict:
    prof = _cr(path, [*PROFILE, "--samples", str(samples)], home)["profile"]["overhead"]
    comp = _cr(path, COMPILE, home) if compile_too else {"duration_s": None}  # None: not measured (JSON has no NaN)
    return {"profiled_p50_us": prof["profiled_p50_ns"] / 1e3, "plain_p50_us": prof["plain_p50_ns"] / 1e3,
            "compile_s": comp["duration_s"]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--before", default="main")
    ap.add_argument("--profile-only", action="store_true", help="leave out the compiles (more rounds in the same time)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    before_dir = tempfile.mkdtemp(prefix="cr-bench-before-")
    home = tempfile.mkdtemp(prefix="cr-bench-children-")
    try:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.before, "cr", "actions", "repo", "recipes",
                                  "pyproject.toml"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", before_dir], input=archive.stdout, check=True)
        arms = [("before", before_dir), ("after", str(REPO))]
        _figures(str(REPO), 20, home, not args.profile_only)  # settles the locks and the caches once, for both arms
        runs: dict[str, list[dict]] = {name: [] for name, _ in arms}
        for r in range(args.rounds):
            for name, path in (arms if r % 2 == 0 else arms[::-1]):
                runs[name].append(_figures(path, args.samples, home, not args.profile_only))
                f = runs[name][-1]
                print(f"round {r + 1} {name:<6} profiled p50 {f['profiled_p50_us']:7.2f} us  plain p50 "
                      f"{f['plain_p50_us']:7.2f} us" + ("" if f["compile_s"] is None else f"  compile {f['compile_s']:6.2f} s"), flush=True)
    finally:
        shutil.rmtree(before_dir, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    summary = {}
    for key in ("profiled_p50_us", "plain_p50_us") + (() if args.profile_only else ("compile_s",)):
        before, after = [f[key] for f in runs["before"]], [f[key] for f in runs["after"]]
        summary[key] = {"before": statistics.median(before), "after": statistics.median(after),
                        "ratio": statistics.median(after) / statistics.median(before),
                        "paired": statistics.median(a / b for a, b in zip(after, before))}
    print(f"\nlenet-digits, {args.rounds} rounds (profile: onnxruntime, 1 thread, {args.samples} samples), medians:")
    for key, s in summary.items():
        print(f"  {key:<16} before {s['before']:8.3f}  after {s['after']:8.3f}  after/before {s['ratio']:.3f}"
              f"  median of per-round ratios {s['paired']:.3f}")
    if args.json:
        print(json.dumps({"runs": runs, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
