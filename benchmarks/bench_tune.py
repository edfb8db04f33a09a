#!/usr/bin/env python
"""Search quality of `cr tune`: the gap to the exhaustive grid, over several seeds.

Runs `cr tune MODEL --verify --json` once per seed in one temporary CR_HOME (the grid
study of the same space is shared: measured by the first seed, reused by the others),
and prints per seed the hypervolume ratio (found / exhaustive), the frontier recall (grid
front points found or tied) and the device-time ratio (tune / exhaustive), then their
medians and worst cases against the targets: hypervolume >= 0.95, recall 1.0 (every
exhaustive front point found or tied), device time <= 30% of the grid's.

    .venv/bin/python benchmarks/bench_tune.py                          # lenet-digits, 3 seeds, a few minutes
    .venv/bin/python benchmarks/bench_tune.py --seeds 0 1 2 --budget 7 --json out.json
    .venv/bin/python benchmarks/bench_tune.py --model model:efficientnet-lite0 --batch 1,8 --threads 1,2 --min-duration 1

Before the seeds, every stack of the space is validated once (not counted): the first
seed's trials would otherwise pay for the frameworks' first import from a cold disk cache
and the dataset's pre-processed cache, which the grid (run after it) then gets for free
(measured here: 0.60 of the grid's time cold against 0.25-0.27 warm, same trials).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CR = str(Path(sys.executable).with_name("cr"))


def run(args: list[str]) -> dict:
    done = subprocess.run([CR, *args], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cr {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout) if "--json" in args else {}


def warm_up(a) -> None:
    """One validation per stack of the space (failures ignored: a stack that cannot run here fails fast)."""
    from cr.tune.space import build

    extra = a.extra.split()
    backends = extra[extra.index("--backends") + 1].split(",") if "--backends" in extra else None
    for stack in build(a.model, backends=backends).stacks:
        subprocess.run([CR, "validate", a.model, "--backend", stack.backend, "--variant", stack.variant],
                       capture_output=True, text=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="model:lenet-digits")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batch", default="1,8,32")
    ap.add_argument("--objective", default="p50,throughput")
    ap.add_argument("--constraint", default="top1>=ref-0.01")
    ap.add_argument("--budget", type=int, help="trials per search (default: cr tune's)")
    ap.add_argument("--min-duration", default="0.3")
    ap.add_argument("--extra", default="", help="more cr tune options, space-separated (e.g. '--backends onnxruntime,tflite')")
    ap.add_argument("--json", help="write every report here")
    a = ap.parse_args()
    os.environ.setdefault("CR_HOME", tempfile.mkdtemp(prefix="cr-bench-tune-"))
    warm_up(a)
    rows, reports = [], []
    for seed in a.seeds:
        args = ["tune", a.model, "--threads", a.threads, "--batch", a.batch, "--objective", a.objective,
                "--min-duration", a.min_duration, "--verify", "--json", "--seed", str(seed), "--name", f"bench-s{seed}"]
        if a.constraint:
            args += ["--constraint", a.constraint]
        if a.budget:
            args += ["--budget", str(a.budget)]
        args += a.extra.split()
        got = run(args)
        reports.append(got)
        v = got["verify"]
        row = {"seed": seed, "hv": v["hypervolume"]["ratio"], "recall": v["recall"]["recall"],
               "matched": f"{v['recall']['matched']}/{v['recall']['of']}", "missed": v["recall"]["missed"],
               "time": v["device_s"]["ratio"], "tune_s": v["device_s"]["tune"], "grid_s": v["device_s"]["exhaustive"],
               "trials": got["trials"]["measured"], "configs": got["configurations"],
               "pick": got["recommendation"]["id"] if got.get("recommendation") else None}
        rows.append(row)
        print(f"seed {seed}: hypervolume ratio {row['hv']:.3f}, recall {row['recall']:.2f} ({row['matched']}"
              f"{'; missed ' + ', '.join(row['missed']) if row['missed'] else ''}), device time {row['tune_s']:.1f} s / "
              f"{row['grid_s']:.1f} s = {row['time']:.2f}, {row['trials']} of {row['configs']} configurations, "
              f"pick {row['pick']}", flush=True)
    hv = [r["hv"] for r in rows]
    rc = [r["recall"] for r in rows]
    tm = [r["time"] for r in rows]
    print(f"\n{a.model}, {len(rows)} seeds: hypervolume ratio median {statistics.median(hv):.3f} (min {min(hv):.3f}; "
          f"target >= 0.95), recall median {statistics.median(rc):.2f} (min {min(rc):.2f}; target 1.0), "
          f"device-time ratio median {statistics.median(tm):.2f} (max {max(tm):.2f}; target <= 0.30)")
    if a.json:
        Path(a.json).write_text(json.dumps({"rows": rows, "reports": reports}, indent=2, default=str))


if __name__ == "__main__":
    main()
