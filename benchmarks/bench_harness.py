#!/usr/bin/env python
"""Harness overhead per query: cr's harness vs a bare timing loop vs MLPerf LoadGen.

All three drive the same null backend (cr.runtime.backends.null, loaded in this process
with iris-logreg's declared input, returning pre-built zeros), single-stream, one query
in flight, for --queries queries after --warmup untimed ones, in this one process:

  pure      for x in cycle(batches): run(x)             the backend's own cost (no timing)
  bare      perf_counter_ns(); run(x); perf_counter_ns(); append   the least a timing harness does
  cr        cr.runtime.harness.benchmark(..., Settings(scenario="single-stream"))
            ns/query = the run's duration (first issue to last completion) / queries
  loadgen   mlperf_loadgen SingleStream, PerformanceOnly; the SUT runs the same backend
            and completes the query at once (QuerySamplesComplete in issue_queries).
            ns/query = (last completion - first issue) / queries, measured inside the
            SUT callback; StartTest's whole wall time (set-up, tear-down, log writing)
            is printed separately.

Overhead = ns/query - pure ns/query: what the harness adds per query. Each figure is the
median of --runs runs. Target: cr's overhead <= 0.5x LoadGen's.

    .venv/bin/python benchmarks/bench_harness.py [--queries 200000] [--runs 5]

LoadGen is optional (pip install mlcommons-loadgen, or the reefkit[loadgen] extra);
without it its rows are skipped.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from array import array
from itertools import cycle, islice
from pathlib import Path

from cr.runtime.harness import Settings, benchmark
from cr.runtime.inputs import SyntheticInputs
from cr.runtime.registry import load_backend

META = json.loads((Path(__file__).resolve().parent.parent / "repo/model/iris-logreg/1.0.0/meta.json").read_text())


def setup():
    backend = load_backend("null")
    backend.load(None, META, {})
    batches = SyntheticInputs(META["inputs"], 3, seed=0, count=16).batches()
    return backend, batches


def pure(run, batches, n: int) -> float:
    t0 = time.perf_counter_ns()
    for x in islice(cycle(batches), n):
        run(x)
    return (time.perf_counter_ns() - t0) / n


def bare(run, batches, n: int) -> float:
    perf = time.perf_counter_ns
    lat = array("q")
    append = lat.append
    start = perf()
    for x in islice(cycle(batches), n):
        t0 = perf()
        run(x)
        t1 = perf()
        append(t1 - t0)
    return (t1 - start) / n


def cr_harness(backend, batches, n: int, warmup: int) -> float:
    out = benchmark(backend, batches, 3, Settings(scenario="single-stream", min_duration_s=0, min_queries=n, warmup_queries=warmup))
    return out.metrics["duration_s"] * 1e9 / out.metrics["queries"]


def loadgen(run, batches, n: int, warmup: int):
    try:
        import mlperf_loadgen as lg
    except ImportError:
        return None
    stamps = {"first": None, "last": None, "count": 0}
    perf = time.perf_counter_ns
    pool = len(batches)

    def issue(query_samples):
        now = perf()
        if stamps["first"] is None:
            stamps["first"] = now
        for q in query_samples:
            run(batches[q.index % pool])
        lg.QuerySamplesComplete([lg.QuerySampleResponse(q.id, 0, 0) for q in query_samples])
        stamps["last"] = perf()
        stamps["count"] += len(query_samples)

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(1024, 1024, lambda s: None, lambda s: None)
    settings = lg.TestSettings()
    settings.scenario = lg.TestScenario.SingleStream
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_query_count = n
    settings.max_query_count = n
    settings.min_duration_ms = 0
    settings.single_stream_expected_latency_ns = 1000
    with tempfile.TemporaryDirectory() as logs:
        out = lg.LogOutputSettings()
        out.outdir = logs
        out.copy_summary_to_stdout = False
        log = lg.LogSettings()
        log.log_output = out
        log.enable_trace = False
        t0 = perf()
        lg.StartTestWithLogSettings(sut, qsl, settings, log)
        wall = perf() - t0
    lg.DestroyQSL(qsl)
    lg.DestroySUT(sut)
    count = stamps["count"]
    return (stamps["last"] - stamps["first"]) / max(1, count - 1), wall / 1e9, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200_000)
    parser.add_argument("--warmup", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    backend, batches = setup()
    run = backend.run
    pure(run, batches, args.warmup)
    rows: dict[str, list[float]] = {"pure": [], "bare": [], "cr": [], "loadgen": []}
    walls, counts = [], []
    for _ in range(args.runs):
        rows["pure"].append(pure(run, batches, args.queries))
        rows["bare"].append(bare(run, batches, args.queries))
        rows["cr"].append(cr_harness(backend, batches, args.queries, args.warmup))
        lg = loadgen(run, batches, args.queries, args.warmup)
        if lg is not None:
            rows["loadgen"].append(lg[0])
            walls.append(lg[1])
            counts.append(lg[2])
    med = {k: statistics.median(v) for k, v in rows.items() if v}
    base = med["pure"]
    print(f"null backend, single-stream, {args.queries} queries, median of {args.runs} runs (this process)")
    print(f"{'harness':10} {'ns/query':>10} {'overhead ns':>12} {'overhead vs bare':>17}")
    for name in ("pure", "bare", "cr", "loadgen"):
        if name not in med:
            print(f"{name:10} {'skipped: mlperf_loadgen is not installed':>40}")
            continue
        over = med[name] - base
        ratio = f"{over / (med['bare'] - base):16.2f}x" if name != "pure" and med["bare"] > base else f"{'-':>17}"
        print(f"{name:10} {med[name]:10.1f} {over:12.1f} {ratio}")
    if "loadgen" in med:
        cr_over, lg_over = med["cr"] - base, med["loadgen"] - base
        print(f"loadgen StartTest wall time: {statistics.median(walls):.3f} s for {counts[0]} queries (set-up, run, tear-down)")
        verdict = "meets" if cr_over <= 0.5 * lg_over else "misses"
        print(f"cr overhead / loadgen overhead = {cr_over / lg_over:.3f}  ({verdict} the target <= 0.5)")
        print(f"cr ns/query / loadgen ns/query = {med['cr'] / med['loadgen']:.3f}")


if __name__ == "__main__":
    main()
