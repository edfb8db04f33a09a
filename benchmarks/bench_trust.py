#!/usr/bin/env python
"""Phases and fidelity on the real shipped models, through `cr benchmark --fidelity`.

For lenet-digits and efficientnet-lite0 on every CPU backend that has a variant of the
model (onnxruntime, torch, tflite, tensorflow), single-stream batch 1, one thread:

    warm-up    queries until the warm-up was stable (consecutive window medians within
               5%, windows of 10; --warmup 1 so it stops there), whether it converged,
               and its seconds; the first inference and the load time beside it
    fidelity   cr's p50 / the p50 of a bare loop around backend.run() in the same child,
               right after the scenario, over the same batches (1.0: the harness costs
               nothing measurable)

Each configuration runs --rounds times; the medians are printed (and every round with
--json). efficientnet-lite0 ships as a PyTorch state dict: its ONNX and TFLite variants
are made with `cr compile` into the temporary CR_HOME first (a conversion that cannot run
here is reported, not fatal).

    .venv/bin/python benchmarks/bench_trust.py [--rounds 3] [--seconds 2] [--json]
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

MATRIX = (
    ("lenet-digits", "onnxruntime", None),
    ("lenet-digits", "torch", "torchscript"),
    ("lenet-digits", "tflite", "tflite"),
    ("lenet-digits", "tensorflow", None),
    ("efficientnet-lite0", "onnxruntime", None),
    ("efficientnet-lite0", "torch", None),
    ("efficientnet-lite0", "tflite", None),
    ("efficientnet-lite0", "tensorflow", None),
)


def cr(*args, home: str) -> tuple[dict | None, str]:
    out = Path(home) / "r.json"
    if out.exists():
        out.unlink()
    done = subprocess.run([sys.executable, "-m", "cr", *map(str, args), "-o", out], capture_output=True, text=True,
                          env={**os.environ, "CR_HOME": home})
    if done.returncode != 0 or not out.exists():
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        return None, next((x for x in lines if x.startswith("Error:")), lines[-1] if lines else "failed")
    return json.loads(out.read_text()), ""


def compile_variants(home: str) -> dict:
    """Make efficientnet-lite0's ONNX and TFLite variants; {target: problem or ''}."""
    problems = {}
    for target in ("onnx", "tflite"):
        done = subprocess.run([sys.executable, "-m", "cr", "compile", "model", "efficientnet-lite0", "--to", target],
                              capture_output=True, text=True, env={**os.environ, "CR_HOME": home})
        err = [x for x in done.stderr.splitlines() if x.startswith("Error:")]
        problems[target] = "" if done.returncode == 0 else (err[0] if err else "compile failed")
        print(f"cr compile efficientnet-lite0 --to {target}: {'ok' if done.returncode == 0 else problems[target]}", flush=True)
    return problems


def measure(args, home: str) -> list[dict]:
    rows = []
    for model, backend, variant in MATRIX:
        extra = ["--variant", variant] if variant else []
        rounds, problem = [], ""
        for _ in range(args.rounds):
            r, problem = cr("benchmark", "model", model, "--backend", backend, *extra, "--threads", "1", "--batch-size", "1",
                            "--min-duration", args.seconds, "--min-queries", 200, "--warmup", 1, "--fidelity", home=home)
            if r is None:
                break
            m = r["metrics"]
            warm = m["phases"]["warmup"]
            rounds.append({"converged": warm["converged"], "converged_at": warm["converged_at"], "warmup_queries": warm["queries"],
                           "warmup_s": warm["seconds"], "first_inference_s": m["phases"]["first_inference_s"],
                           "load_s": m["phases"]["load_s"], "p50_us": m["latency_ns"]["p50"] / 1e3,
                           "bare_p50_us": m["fidelity"]["bare_p50_ns"] / 1e3, "fidelity": m["fidelity"]["ratio"],
                           "variant": r["pipeline"].get("variant")})
        row = {"model": model, "backend": backend, "rounds": rounds, "problem": problem if not rounds else ""}
        if rounds:
            at = [x["converged_at"] for x in rounds if x["converged_at"] is not None]
            row.update(variant=rounds[0]["variant"], converged=f"{len(at)}/{len(rounds)}",
                       converged_at=statistics.median(at) if at else None,
                       warmup_s=statistics.median(x["warmup_s"] for x in rounds),
                       first_inference_ms=statistics.median(x["first_inference_s"] for x in rounds) * 1e3,
                       load_s=statistics.median(x["load_s"] for x in rounds),
                       p50_us=statistics.median(x["p50_us"] for x in rounds),
                       fidelity=statistics.median(x["fidelity"] for x in rounds))
        rows.append(row)
        _print(row)
    return rows


def _print(row: dict) -> None:
    head = f"{row['model']:<19} {row['backend']:<12}"
    if not row["rounds"]:
        print(f"{head} not run: {row['problem']}", flush=True)
        return
    at = "-" if row["converged_at"] is None else f"{row['converged_at']:.0f}"
    print(f"{head} {row['variant'] or '':<12} stable after {at:>5} queries (converged {row['converged']}, "
          f"{row['warmup_s'] * 1e3:7.1f} ms)  first {row['first_inference_ms']:8.2f} ms  load {row['load_s']:6.2f} s  "
          f"p50 {row['p50_us']:9.1f} us  fidelity {row['fidelity']:.3f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--json", action="store_true", help="Print every round as JSON at the end.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cr-bench-trust-") as home:
        compile_variants(home)
        rows = measure(args, home)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
