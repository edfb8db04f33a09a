#!/usr/bin/env python
"""What sampling the machine costs the measured latency: p50 with the monitor on vs off.

cr.run.monitor samples /proc, /sys and the child's smaps_rollup from a thread in cr every
100 ms while a benchmark's child runs (outside the child, but on the same cores). This
runs the same real benchmark (lenet-digits on onnxruntime, single-stream, --seconds each)
alternately with CR_MONITOR=1 and CR_MONITOR=0, --pairs times, in one temporary CR_HOME,
and prints the median p50 of each mode and their ratio (on / off). Target: <= 1.01.

    .venv/bin/python benchmarks/bench_monitor.py [--model model:lenet-digits] [--backend onnxruntime]
                                                 [--pairs 6] [--seconds 3] [--json out.json]

Each pair's order alternates (on-off, off-on, ...) so that a drift of the shared machine
does not fall on one mode. The ratio of the per-pair p50s is printed too: its median is
the figure least sensitive to that drift.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile


def run_once(model: str, backend: str, seconds: float, monitor: bool) -> dict:
    from cr.run.actions import benchmark

    os.environ["CR_MONITOR"] = "1" if monitor else "0"
    record = benchmark(model, backend=backend, store=False,
                       params={"min_duration_s": seconds, "min_queries": 100, "max_duration_s": seconds * 3})
    if record["status"] != "ok":
        sys.exit(f"benchmark failed: {record['error']}")
    m = record["metrics"]
    return {"p50_ns": m["latency_ns"]["p50"], "queries": m["queries"],
            "samples": (record.get("machine") or {}).get("during", {}).get("samples")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="model:lenet-digits")
    ap.add_argument("--backend", default="onnxruntime")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    os.environ.setdefault("CR_HOME", tempfile.mkdtemp(prefix="cr-bench-monitor-"))
    os.environ.pop("CR_ENERGY_COMMAND", None)

    run_once(args.model, args.backend, 1.0, True)  # warm caches (imports, model file, index)
    on, off, ratios = [], [], []
    for i in range(args.pairs):
        order = (True, False) if i % 2 == 0 else (False, True)
        got = {mode: run_once(args.model, args.backend, args.seconds, mode) for mode in order}
        on.append(got[True])
        off.append(got[False])
        ratios.append(got[True]["p50_ns"] / got[False]["p50_ns"])
        print(f"pair {i + 1}: p50 on {got[True]['p50_ns'] / 1e3:.2f} us ({got[True]['samples']} samples), "
              f"off {got[False]['p50_ns'] / 1e3:.2f} us, ratio {ratios[-1]:.4f}", flush=True)
    p50_on = statistics.median(r["p50_ns"] for r in on)
    p50_off = statistics.median(r["p50_ns"] for r in off)
    print(f"\n{args.model} on {args.backend}, {args.pairs} pairs of {args.seconds:g} s runs")
    print(f"  median p50, monitor on : {p50_on / 1e3:.2f} us")
    print(f"  median p50, monitor off: {p50_off / 1e3:.2f} us")
    print(f"  ratio of medians (on/off): {p50_on / p50_off:.4f}   (target <= 1.01)")
    print(f"  median of per-pair ratios: {statistics.median(ratios):.4f}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"on": on, "off": off, "ratios": ratios}, f, indent=2)


if __name__ == "__main__":
    main()
