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
stacks     the cross-stack table: lenet-digits and efficientnet-lite0 on every CPU stack
           and both precisions, every version made by `cr compile` alone (a conversion
           graph path, docs/conversions.md) in a temporary CR_HOME: onnxruntime fp32 and
           int8 (static), torch (the source), tflite fp32 and int8, tensorflow (SavedModel).
           Single-stream, batch 1, one thread, through `cr benchmark` (p50: median over
           rounds; p99; throughput) and `cr validate` (top-1 on the model's dataset), each
           p50 also as a ratio to onnxruntime fp32's measured in the same run. A cell that
           cannot be made or run says why instead of a number.

    .venv/bin/python benchmarks/bench_models.py [--rounds 5] [--seconds 2] [--only fidelity|stacks] [--models lenet-digits]
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
    record = json.loads(out.read_text()) if out.exists() else None
    if done.returncode != 0 and not (record and record.get("status") == "ok" and record.get("validation")):
        # (a validation outside its declared tolerance exits 1 with its figures: those are kept)
        raise RuntimeError(f"cr {' '.join(map(str, args))} failed:\n{done.stderr}")
    out.unlink()
    return record


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
    onnx_of = {"lenet-digits": "model:lenet-digits@1.0.0", "efficientnet-lite0": compiled("efficientnet-lite0", home, "--to", "onnx")}
    os.environ["CR_HOME"] = home
    for name in args.models:
        model = show(onnx_of[name], verify=False)  # efficientnet's ONNX export, the version cr compile made
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


_COMPILED: dict = {}


def compiled(model: str, home: str, *args: str) -> str:
    """The ref of the version `cr compile model MODEL ARGS` makes (once per run): the version a
    later command must name, since the newest version of a model need not be the one a backend
    loads."""
    key = (model, args)
    if key not in _COMPILED:
        done = subprocess.run([sys.executable, "-m", "cr", "compile", "model", model, *args, "--json"], capture_output=True,
                              text=True, env={**os.environ, "CR_HOME": home})
        if done.returncode != 0:
            raise RuntimeError(f"cr compile model {model} {' '.join(args)}: " + (done.stderr.strip().splitlines() or ["failed"])[-1])
        _COMPILED[key] = json.loads(done.stdout)["output"]["ref"]
    return _COMPILED[key]


SOURCE = {"lenet-digits": "onnx", "efficientnet-lite0": "torch-state-dict"}  # what repo/ ships (the source of every compile)

# (backend, precision, how to get the version it runs: None = the source as shipped, or cr compile arguments,
#  the --variant to pick inside the version)
STACKS = (
    ("onnxruntime", "fp32", ("--to", "onnx"), None),
    ("onnxruntime", "int8", ("--to", "onnx", "--quantization", "static"), None),
    ("torch", "fp32", None, None),
    ("tflite", "fp32", ("--to", "tflite"), None),
    ("tflite", "int8", ("--to", "tflite", "--precision", "int8"), None),
    ("tensorflow", "fp32", ("--to", "savedmodel"), None),
)


def stacks(args, home: str) -> list[dict]:
    rows = []
    for model in args.models:
        for backend, precision, how, variant in STACKS:
            row = {"model": model, "backend": backend, "precision": precision}
            started = time.perf_counter()
            try:
                source = how is None or (backend == "onnxruntime" and precision == "fp32" and SOURCE[model] == "onnx")
                ref = f"model:{model}@1.0.0" if source else compiled(model, home, *how)
                extra = ["--variant", variant] if variant else []
                p50s, last = [], None
                for _ in range(args.rounds):
                    last = cr("benchmark", ref, "--backend", backend, *extra, "--threads", "1", "--batch-size", "1",
                              "--min-duration", args.seconds, "--min-queries", 200, home=home)
                    p50s.append(last["metrics"]["latency_ns"]["p50"])
                v = cr("validate", ref, "--backend", backend, *extra, home=home)
            except RuntimeError as exc:
                row["error"] = str(exc).strip().splitlines()[-1][:160]
                print(f"{model:<20} {backend:<12} {precision:<5} not measured: {row['error']}", flush=True)
                rows.append(row)
                continue
            m = last["metrics"]
            row.update(ref=ref, variant=last["pipeline"]["variant"], ran_precision=last["pipeline"]["precision"],
                       p50_us=statistics.median(p50s) / 1e3, p99_us=m["latency_ns"]["p99"] / 1e3,
                       throughput_qps=m["throughput"]["queries_per_s"], top1=v["validation"].get("top1"),
                       samples=v["validation"].get("samples"), outcome=v["validation"].get("outcome"),
                       framework=f"{last['backend']['info'].get('framework')} {last['backend']['info'].get('version')}",
                       seconds=time.perf_counter() - started)
            rows.append(row)
            print(f"{model:<20} {backend:<12} {precision:<5} p50 {row['p50_us']:9.1f} us  top-1 {row['top1']}", flush=True)
    print(f"\n{'model':<20} {'backend':<12} {'prec':<5} {'version':<42} {'p50 us':>9} {'x ort':>6} {'p99 us':>9} "
          f"{'queries/s':>10} {'top-1':>7} {'n':>4}  framework")
    for model in args.models:
        base = next((r["p50_us"] for r in rows if r["model"] == model and r["backend"] == "onnxruntime"
                     and r["precision"] == "fp32" and "p50_us" in r), None)
        for r in (r for r in rows if r["model"] == model):
            if "p50_us" not in r:
                print(f"{model:<20} {r['backend']:<12} {r['precision']:<5} {'-':<42} {'not measured: ' + r['error']}")
                continue
            r["p50_ratio_to_onnxruntime_fp32"] = r["p50_us"] / base if base else None
            ratio = f"{r['p50_ratio_to_onnxruntime_fp32']:6.2f}" if base else f"{'-':>6}"
            top1 = f"{r['top1']:7.4f}" if isinstance(r["top1"], float) else f"{'-':>7}"
            print(f"{model:<20} {r['backend']:<12} {r['precision']:<5} {r['ref'].split(':', 1)[1]:<42} {r['p50_us']:9.1f} {ratio} "
                  f"{r['p99_us']:9.1f} {r['throughput_qps']:10.0f} {top1} {r['samples'] or 0:4d}  {r['framework']}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--only", choices=["fidelity", "stacks"])
    ap.add_argument("--models", nargs="+", default=["lenet-digits", "efficientnet-lite0"], choices=["lenet-digits", "efficientnet-lite0"])
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    out = {}
    with tempfile.TemporaryDirectory(prefix="cr-bench-models-") as home:
        if args.only in (None, "fidelity"):
            out["fidelity"] = fidelity(args, home)
        if args.only in (None, "stacks"):
            out["stacks"] = stacks(args, home)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
