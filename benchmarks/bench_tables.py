"""What drawing a table costs: `cr results list`'s table of N rows (default 500, one page of
the listing) into a pipe (the plain format) and onto terminals of 80, 120 and 200 columns
(fitted: docs/output.md), in-process, as medians of --runs runs.

Each figure is also given as a ratio to the baseline measured in the same run, interleaved:
the same rows as the JSON `--json` prints (output.json_text), which no table change touches. The rows are
synthetic but shaped like the listing's (a uid, a date, a solution ref, a backend and
variant, a configuration, a platform, figures, a status), seeded.

    .venv/bin/python benchmarks/bench_tables.py                 # 500 rows, 15 runs
    .venv/bin/python benchmarks/bench_tables.py --rows 50 --runs 3 --json out.json

It runs against whatever `cr` is importable: with PYTHONPATH set to an export of another
commit, the same script measures that commit (before/after on one machine). A table whose
columns that commit cannot take as declared columns is drawn from their names.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import statistics
import sys
import time


def rows_like_the_listing(n: int, seed: int = 7) -> list[list[str]]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        bench = rnd.random() < 0.7
        p50 = rnd.uniform(5e3, 5e6)
        out.append([
            f"{rnd.getrandbits(64):016x}", f"2026-12-0{1 + i % 3} 1{i % 10}:{i % 60:02d}",
            "benchmark" if bench else "validate", f"solution:{rnd.choice(['lenet-digits', 'efficientnet-lite0', 'ssdlite-person'])}-"
            f"{rnd.choice(['onnxruntime', 'torch', 'tflite-int8'])}@1.0.{i % 4}",
            f"{rnd.choice(['onnxruntime', 'torch', 'tflite'])}/{rnd.choice(['onnx', 'torchscript', 'tflite-int8'])} (fp32)",
            f"threads={rnd.choice([1, 2, 4])} batch={rnd.choice([1, 8, 32])} pipeline=7a8e7919 test",
            "" if rnd.random() < 0.8 else f"campaign sweep job {rnd.getrandbits(32):08x}",
            rnd.choice(["AMD EPYC (linux/x86_64, 2 cores)", "Raspberry Pi 4 Model B (linux/aarch64, 4 cores)"]),
            f"{p50 / 1e6:.4f}" if bench else "", f"{2 * p50 / 1e6:.4f}" if bench else "",
            f"{rnd.uniform(100, 200000):.1f}" if bench else "", "" if bench else f"{rnd.uniform(0.9, 1):.4f}",
            "ok" if bench else "ok PASS",
        ])
    return out


class Terminal(io.StringIO):
    def isatty(self):
        return True


def timed(fn, runs: int) -> list[float]:
    fn()  # once first: imports and caches
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--json", metavar="FILE", help="Also write the samples here ('-': stdout).")
    args = ap.parse_args()

    from cr.cli import output
    from cr.cli import results as results_cli

    columns = getattr(results_cli, "LIST_COLUMNS", None) or [
        "UID", "WHEN", "ACTION", "TARGET", "BACKEND/VARIANT", "CONFIG", "FROM", "PLATFORM", "P50", "P99",
        "THROUGHPUT", "ACCURACY", "STATUS"]
    rows = rows_like_the_listing(args.rows)
    real_stdout = sys.stdout

    def into(stream, width=None):
        def draw():
            if width:
                os.environ["COLUMNS"] = str(width)
            sys.stdout = stream
            stream.seek(0)
            stream.truncate()
            try:
                output.table(columns, rows)
            finally:
                sys.stdout = real_stdout
        return draw

    def as_json():
        output.json_text(rows)

    cases = {"baseline: --json text": as_json, "pipe (plain format)": into(io.StringIO())}
    for width in (80, 120, 200):
        cases[f"terminal {width} columns"] = into(Terminal(), width)
    order = list(cases)
    samples: dict[str, list[float]] = {k: [] for k in order}
    for _ in range(args.runs):  # interleaved: a noisy moment hits every case alike
        for name in order:
            samples[name] += timed(cases[name], 1)
    base = statistics.median(samples["baseline: --json text"])
    print(f"{args.rows} rows x {len(columns)} columns, median of {args.runs} runs")
    print(f"{'case':<24} {'median':>10} {'x baseline':>11}")
    for name in order:
        med = statistics.median(samples[name])
        print(f"{name:<24} {med * 1e3:>8.2f} ms {med / base:>10.1f}x")
    if args.json:
        data = json.dumps({"rows": args.rows, "runs": args.runs, "samples_s": samples}, indent=1)
        if args.json == "-":
            print(data)
        else:
            with open(args.json, "w", encoding="utf-8") as f:
                f.write(data + "\n")


if __name__ == "__main__":
    main()
