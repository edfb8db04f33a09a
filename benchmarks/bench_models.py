#!/usr/bin/env python
"""Fidelity of cr's numbers, and the cross-framework table, on the real shipped models.

fidelity   lenet-digits and efficientnet-lite0 on onnxruntime: cr's reported p50 (the
           full `cr benchmark` path: child process, pre-built dataset batches, harness)
           vs a bare `session.run` timing loop in this process, on the same model file,
           the same pre-processed input and the same session options (1 intra-op thread,
           sequential, all graph optimisations). Rounds alternate bare, cr, bare, cr...;
           the ratio of the medians of the per-round p50s is reported. Target: within 3%.
           efficientnet-lite0 runs from its ONNX export, made with `cr compile` into a
           temporary CR_HOME (the weights come from the installed registry package).
frameworks lenet-digits, single-stream batch 1, through `cr benchmark` and `cr validate`:
           p50, p99, throughput and top-1 for onnxruntime, torch (TorchScript), tflite fp32
           and tflite int8, plus each p50 as a ratio to onnxruntime's in the same run.

    .venv/bin/python benchmarks/bench_models.py [--rounds 5] [--seconds 2] [--only fidelity|frameworks]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cr(*args, home: str) -> dict:
    out = Path(home) / "r.json"
    done = subprocess.run([sys.executable, "-m", "cr", *map(str, args), "-o", out], capture_output=True, text=True,
                          env={**os.environ, "CR_HOME": home})
    if done.returncode != 0:
        raise SystemExit(f"cr {' '.join(map(str, args))} failed:\n{done.stderr}")
    return json.loads(out.read_text())


def bare_p50(path: str, batch, seconds: float) -> float:
    """p50 (ns) of session.run on batch, timed with perf_counter_ns, for `seconds` after a warm-up."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    feed = {name: batch}
    for _ in range(100):
        session.run(None, feed)
    lat, clock = [], time.perf_counter_ns
    end = clock() + int(seconds * 1e9)
    while True:
        t0 = clock()
        session.run(None, feed)
        t1 = clock()
        lat.append(t1 - t0)
        if t1 >= end and len(lat) >= 200:
            return statistics.median(lat)


def first_batch(model_meta: dict, dataset_ref: str, split: str | None):
    from cr.api import show
    from cr.runtime.datasets import load
    from cr.runtime.pipeline import Pipeline

    ds = show(dataset_ref, verify=False)
    samples = load(ds["meta"], ds["path"], split, limit=1).samples
    return Pipeline(model_meta.get("preprocess")).batch([samples[0].data])


def fidelity(args, home: str) -> list[dict]:
    from cr.api import show
    from cr.runtime import variants

    rows = []
    subprocess.run([sys.executable, "-m", "cr", "compile", "model", "efficientnet-lite0", "--to", "onnx"],
                   check=True, capture_output=True, env={**os.environ, "CR_HOME": home})
    os.environ["CR_HOME"] = home
    for name in ("lenet-digits", "efficientnet-lite0"):
        model = show(f"model:{name}", verify=False)  # the newest version: efficientnet's ONNX export
        meta = variants.choose(model["meta"], ("onnx",))
        path = str(Path(model["path"]) / meta["file"])
        ds = model["meta"]["dataset"]
        batch = first_batch(meta, ds["ref"], ds.get("split"))
        bare, ours = [], []
        for _ in range(args.rounds):
            bare.append(bare_p50(path, batch, args.seconds))
            r = cr("benchmark", model["ref"], "--backend", "onnxruntime", "--threads", "1", "--batch-size", "1",
                   "--min-duration", args.seconds, "--min-queries", 200, "--warmup", 100, home=home)
            ours.append(r["metrics"]["latency_ns"]["p50"])
        b, c = statistics.median(bare), statistics.median(ours)
        rows.append({"model": model["ref"], "bare_p50_us": b / 1e3, "cr_p50_us": c / 1e3, "ratio": c / b,
                     "bare_rounds_us": [x / 1e3 for x in bare], "cr_rounds_us": [x / 1e3 for x in ours]})
        print(f"{model['ref']:<40} bare session.run p50 {b / 1e3:9.1f} us   cr p50 {c / 1e3:9.1f} us   ratio {c / b:.3f}", flush=True)
    return rows


def frameworks(args, home: str) -> list[dict]:
    rows = []
    for backend, variant in (("onnxruntime", None), ("torch", None), ("tflite", None), ("tflite", "tflite-int8")):
        extra = ["--variant", variant] if variant else []
        p50s, last = [], None
        for _ in range(args.rounds):
            last = cr("benchmark", "model", "lenet-digits", "--backend", backend, *extra, "--threads", "1", "--batch-size", "1",
                      "--min-duration", args.seconds, "--min-queries", 200, home=home)
            p50s.append(last["metrics"]["latency_ns"]["p50"])
        v = cr("validate", "model", "lenet-digits", "--backend", backend, *extra, home=home)
        m = last["metrics"]
        rows.append({"backend": backend, "variant": last["pipeline"]["variant"], "precision": last["pipeline"]["precision"],
                     "p50_us": statistics.median(p50s) / 1e3, "p99_us": m["latency_ns"]["p99"] / 1e3,
                     "throughput_qps": m["throughput"]["queries_per_s"], "top1": v["validation"]["top1"],
                     "framework": f"{last['backend']['info'].get('framework')} {last['backend']['info'].get('version')}"})
    base = rows[0]["p50_us"]
    print(f"\n{'backend':<12} {'variant':<12} {'p50 us':>8} {'x ort':>6} {'p99 us':>8} {'queries/s':>10} {'top-1':>7}  framework")
    for r in rows:
        r["p50_ratio_to_onnxruntime"] = r["p50_us"] / base
        print(f"{r['backend']:<12} {r['variant']:<12} {r['p50_us']:8.1f} {r['p50_ratio_to_onnxruntime']:6.2f} {r['p99_us']:8.1f} "
              f"{r['throughput_qps']:10.0f} {r['top1']:7.4f}  {r['framework']}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--only", choices=["fidelity", "frameworks"])
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    out = {}
    with tempfile.TemporaryDirectory(prefix="cr-bench-models-") as home:
        if args.only in (None, "fidelity"):
            out["fidelity"] = fidelity(args, home)
        if args.only in (None, "frameworks"):
            out["frameworks"] = frameworks(args, home)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
