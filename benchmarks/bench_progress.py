#!/usr/bin/env python
"""Does showing progress perturb what a benchmark measures? p50 of lenet-digits on
onnxruntime, before (--before's cr, default main, exported with git archive: no phase marks,
no ticker) and after (this tree), in one run, interleaved.

Each round runs, in this order (rotated every round so no arm always follows another):

    before     main's `cr benchmark model lenet-digits --backend onnxruntime`, stderr a pty
    after      this tree's, stderr a pty: the child marks its phases on a pipe, cr's reader
               thread relays them and the live line is redrawn twice a second (the most
               progress ever costs)
    after -q   this tree's with -q: the child still marks its phases, nothing is drawn

single-stream, batch 1, one thread, --min-duration S --min-queries 1000, all in one
CR_HOME; the p50 comes from the --json record. Medians per arm, their ratio to before's,
and the median of the per-round ratios (robust to a neighbour's load on a shared machine)
are printed (every run with --json).

    .venv/bin/python benchmarks/bench_progress.py [--rounds 5] [--seconds 3] [--before main] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import pty
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(path: str, quiet: bool, seconds: float, home: str) -> float:
    """The p50 (ns) of one `cr benchmark` run from the tree at path, its stderr a pty."""
    args = [sys.executable, "-m", "cr", *(["-q"] if quiet else []), "benchmark", "model", "lenet-digits",
            "--backend", "onnxruntime", "--threads", "1", "--min-duration", str(seconds), "--min-queries", "1000",
            "--no-store", "--json"]
    env = {**os.environ, "PYTHONPATH": path, "CR_HOME": home}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=env, cwd=path)
        os.close(slave)
        out = b""
        chunks = []
        import threading

        def drain():  # the terminal's side: read what cr draws, as a terminal would
            while True:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    return
                if not data:
                    return
                chunks.append(data)

        t = threading.Thread(target=drain, daemon=True)
        t.start()
        out = proc.stdout.read()
        proc.wait()
    finally:
        os.close(master)
    if proc.returncode != 0:
        raise SystemExit(f"cr benchmark failed in {path}: {b''.join(chunks)[-500:]!r}")
    record = json.loads(out)
    return record["metrics"]["latency_ns"]["p50"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--before", default="main")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    before_dir = tempfile.mkdtemp(prefix="cr-bench-before-")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", args.before, "cr", "actions", "repo", "recipes",
                              "pyproject.toml"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", before_dir], input=archive.stdout, check=True)
    home = tempfile.mkdtemp(prefix="cr-bench-progress-")
    arms = [("before", before_dir, False), ("after", str(REPO), False), ("after -q", str(REPO), True)]
    _run(str(REPO), True, 0.5, home)  # settles the lock and the caches once, for every arm
    runs: dict[str, list[float]] = {name: [] for name, _, _ in arms}
    for r in range(args.rounds):
        order = arms[r % len(arms):] + arms[:r % len(arms)]
        for name, path, quiet in order:
            runs[name].append(_run(path, quiet, args.seconds, home))
            print(f"round {r + 1} {name:<9} p50 {runs[name][-1] / 1e3:8.2f} us", flush=True)
    base = statistics.median(runs["before"])
    # the ratio within each round (a neighbour's load falls on the arms of one round alike), then its median
    summary = {name: {"p50_us": statistics.median(v) / 1e3, "ratio": statistics.median(v) / base,
                      "paired": statistics.median(a / b for a, b in zip(v, runs["before"]))} for name, v in runs.items()}
    print(f"\nlenet-digits onnxruntime single-stream, {args.rounds} rounds x {args.seconds:g} s, medians:")
    for name, s in summary.items():
        print(f"  {name:<9} p50 {s['p50_us']:8.2f} us   / before {s['ratio']:.3f}   median of per-round ratios {s['paired']:.3f}")
    if args.json:
        print(json.dumps({"runs": runs, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
