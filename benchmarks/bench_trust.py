#!/usr/bin/env python
"""Phases and fidelity on the real shipped models, through `cr benchmark --fidelity`.

For lenet-digits and efficientnet-lite0 on every CPU backend that has a variant of the
model (onnxruntime, torch, tflite, tensorflow), single-stream batch 1, one thread:

    warm-up    queries until the warm-up was stable (consecutive window medians within
               5%, windows of 10; --warmup 1 so it stops there), whether it converged,
               and its seconds; the first inference and the load time beside it
    fidelity   cr's p50 / the p50 of the framework's own loop (Backend.bare; a loop around
               backend.run() for a backend without one), interleaved with cr's path in the
               same child after the scenario, over the same batches (1.0: the harness and
               the backend wrapper cost nothing measurable)

Each configuration runs --rounds times; the medians are printed (and every round with
--json). efficientnet-lite0 ships as a PyTorch state dict: its ONNX and TFLite variants
are made with `cr compile` into the temporary CR_HOME first (a conversion that cannot run
here is reported, not fatal).

    .venv/bin/python benchmarks/bench_trust.py [--rounds 3] [--seconds 2] [--json]

--floor: cr's timed path against a bare framework loop, before and after. For lenet-digits
and efficientnet-lite0 on onnxruntime, torch and tflite (batch 1, one thread, 16 seeded
synthetic batches), each child process loads the model through cr's backend and times, in
alternating blocks, (a) what cr's harness calls per query -- Backend.timed()'s callable on
its prepared items where the checkout has it, else backend.run() on the batches -- and (b) a framework loop written here,
independent of cr (session.run on the feed; set_tensor/invoke/get_tensor; module(tensor)
under one torch.inference_mode per block), over the same batches. cr p50 / bare p50 comes
from one process, so a neighbour's load falls on both. The "after" child also points cr's
own --fidelity check (Backend.bare's loop) at backend.run(), main's per-call path: the
ratio it reads shows whether the check would have seen main's wrapper. "before" runs the same child with
--before's cr (default main, exported with git archive) first on PYTHONPATH; the two
alternate --rounds times; medians are printed.

    .venv/bin/python benchmarks/bench_trust.py --floor [--rounds 3] [--before main] [--home DIR]

--import-order: efficientnet-lite0 on torch (one thread, batch 1) in fresh processes that
import numpy only, PIL and scipy before torch, or torch before them; 30 warm-up and 100 timed
calls of the module under inference_mode each; orders alternate --rounds times; p50s printed.

    .venv/bin/python benchmarks/bench_trust.py --import-order [--rounds 4]

--home reuses a CR_HOME where efficientnet-lite0's ONNX and TFLite variants were compiled
(the TFLite conversion takes minutes here).
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
        if args.models and model not in args.models:
            continue
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


# -- --floor ---------------------------------------------------------------------------------

FLOOR = (
    ("lenet-digits", "onnxruntime", "onnx"),
    ("lenet-digits", "torch", "torchscript"),
    ("lenet-digits", "tflite", "tflite"),
    ("efficientnet-lite0", "onnxruntime", "onnx"),
    ("efficientnet-lite0", "torch", "torch-state-dict"),
    ("efficientnet-lite0", "tflite", "tflite"),
)
REPO = Path(__file__).resolve().parent.parent


def model_file(model: str, fmt: str, home: str) -> tuple[str, dict] | None:
    """(file, meta with _dir) of the model in that format: shipped, a shipped variant, or compiled into home."""
    base = next((REPO / "repo" / "model" / model).glob("*/meta.json"))
    meta = json.loads(base.read_text())
    if meta["format"] == fmt:
        from cr.runtime.model import locate

        return str(locate(meta, str(base.parent))["path"]), {**meta, "_dir": str(base.parent)}
    for v in meta.get("variants") or []:
        if v["format"] == fmt and v.get("precision", "fp32") == "fp32":
            return str(base.parent / v["file"]), {**meta, **{k: v[k] for k in ("format", "inputs", "outputs") if k in v},
                                                  "_dir": str(base.parent)}
    for compiled in Path(home).glob(f"local/model/{model}/*+{'onnx' if fmt == 'onnx' else fmt}/meta.json"):
        cmeta = json.loads(compiled.read_text())
        return str(compiled.parent / cmeta["file"]), {**cmeta, "_dir": str(compiled.parent)}
    return None


def child(spec: dict) -> dict:
    """In a fresh process whose `cr` is the checkout under test: cr's per-query call vs a bare
    framework loop, alternating blocks of spec["block"] queries, spec["blocks"] each."""
    import time
    from contextlib import nullcontext

    import numpy as np

    from cr.runtime import harness, registry

    backend = registry.load_backend(spec["backend"])
    backend.load(spec["file"], spec["meta"], {"threads": 1})
    declared = backend.inputs()[0]
    shape = [1 if not isinstance(d, int) else d for d in declared["shape"]]
    rng = np.random.default_rng(0)
    batches = [{declared["name"]: rng.standard_normal(shape).astype(declared["dtype"])} for _ in range(16)]
    backend.prepare(batches[0])
    hook = getattr(harness, "timed", None)
    window = hook(backend, batches) if hook else nullcontext((backend.run, batches))
    name, grad = spec["backend"], nullcontext
    if name == "onnxruntime":
        sess, outs = backend.session, backend._outputs  # noqa: SLF001

        def call(feed):
            return sess.run(outs, feed)

        items = batches
    elif name == "tflite":
        interp = backend._interp  # noqa: SLF001
        index, out = interp.get_input_details()[0]["index"], interp.get_output_details()[0]["index"]
        set_tensor, invoke, get_tensor = interp.set_tensor, interp.invoke, interp.get_tensor

        def call(x):
            set_tensor(index, x)
            invoke()
            return get_tensor(out)

        items = [b[declared["name"]] for b in batches]
    else:
        import torch

        call, grad = backend.model, torch.inference_mode
        items = [torch.from_numpy(b[declared["name"]]) for b in batches]
    perf = time.perf_counter_ns

    def loop(f, xs, n, lat):
        for i in range(n):
            x = xs[i % len(xs)]
            t0 = perf()
            f(x)
            lat.append(perf() - t0)

    ours, bare = [], []
    with window as (run, ready):
        loop(run, ready, spec["block"], [])  # warm-up, both paths
        with grad():
            loop(call, items, spec["block"], [])
        for _ in range(spec["blocks"]):
            loop(run, ready, spec["block"], ours)
            with grad():
                loop(call, items, spec["block"], bare)
        # cr's own --fidelity check (where the checkout has the framework loop) pointed at
        # backend.run(), the per-call wrapper main timed: would it have seen that wrapper?
        from cr.runtime import warmup

        seen = None
        if hasattr(warmup, "framework_loop"):
            fid = warmup.fidelity(backend.run, batches, {"queries": spec["block"] * spec["blocks"], "latency_ns": {}},
                                  bare=warmup.framework_loop(backend, batches, batches))
            seen = {"ratio": fid["ratio"], "delta_ns": fid["delta_ns"], "bare": fid["bare"]}
    backend.close()
    med = lambda xs: statistics.median(xs)  # noqa: E731
    return {"path": "Backend.timed" if hook else "backend.run", "cr_p50_ns": med(ours), "bare_p50_ns": med(bare),
            "ratio": med(ours) / med(bare), "delta_ns": med(ours) - med(bare), "queries": len(ours),
            "fidelity_on_backend_run": seen}


def floor(args, home: str) -> list[dict]:
    before_dir = tempfile.mkdtemp(prefix="cr-bench-before-")
    archive = subprocess.run(["git", "-C", str(REPO), "archive", args.before, "cr"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", before_dir], input=archive.stdout, check=True)
    rows = []
    for model, backend, fmt in FLOOR:
        if args.models and model not in args.models:
            continue
        found = model_file(model, fmt, home)
        row = {"model": model, "backend": backend, "format": fmt, "before": [], "after": []}
        if found is None:
            print(f"{model:<19} {backend:<12} not run: no {fmt} file (cr compile model {model} --to {fmt})", flush=True)
            continue
        small = model == "lenet-digits"
        spec = {"backend": backend, "file": found[0], "meta": found[1], "block": 2000 if small else 10,
                "blocks": 10}
        for _ in range(args.rounds):
            for which, path in (("before", before_dir), ("after", str(REPO))):
                env = {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "2"}
                done = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                                      text=True, env=env)
                if done.returncode != 0:
                    print(f"{model} {backend} {which}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
                    continue
                row[which].append(json.loads(done.stdout.strip().splitlines()[-1]))
        for which in ("before", "after"):
            got = row[which]
            if got:
                row[which + "_ratio"] = statistics.median(x["ratio"] for x in got)
                row[which + "_delta_us"] = statistics.median(x["delta_ns"] for x in got) / 1e3
                row[which + "_bare_us"] = statistics.median(x["bare_p50_ns"] for x in got) / 1e3
        seen = [x["fidelity_on_backend_run"]["ratio"] for x in row["after"] if x.get("fidelity_on_backend_run")]
        row["fidelity_on_backend_run"] = statistics.median(seen) if seen else None
        rows.append(row)
        if row.get("before_ratio") and row.get("after_ratio"):
            print(f"{model:<19} {backend:<12} bare p50 {row['after_bare_us']:10.1f} us   cr/bare before "
                  f"{row['before_ratio']:.3f} ({row['before_delta_us']:+.2f} us)   after {row['after_ratio']:.3f} "
                  f"({row['after_delta_us']:+.2f} us)   [{args.rounds} rounds, {row['before'][0]['path']} -> "
                  f"{row['after'][0]['path']}]   --fidelity on backend.run {row['fidelity_on_backend_run'] or 0:.3f}",
                  flush=True)
    subprocess.run(["rm", "-rf", before_dir], check=False)
    return rows


ORDERS = ("numpy-only", "pil-scipy-first", "torch-first")


def order_child(order: str) -> float:
    """efficientnet-lite0's torch p50 (ms) in this process, the libraries imported in that order."""
    import time

    import numpy as np

    if order == "pil-scipy-first":
        import PIL.Image  # noqa: F401
        import scipy.ndimage  # noqa: F401
    import torch

    if order == "torch-first":
        import PIL.Image  # noqa: F401,F811
        import scipy.ndimage  # noqa: F401,F811
    from cr.runtime import registry

    file, meta = model_file("efficientnet-lite0", "torch-state-dict", "")
    backend = registry.load_backend("torch")
    backend.load(file, meta, {"threads": 1})
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32))
    lat = []
    with torch.inference_mode():
        for i in range(130):
            t0 = time.perf_counter_ns()
            backend.model(x)
            if i >= 30:
                lat.append(time.perf_counter_ns() - t0)
    return statistics.median(lat) / 1e6


def import_order(args) -> dict:
    got: dict = {o: [] for o in ORDERS}
    for _ in range(args.rounds):
        for order in ORDERS:
            done = subprocess.run([sys.executable, __file__, "--order-child", order], capture_output=True, text=True)
            got[order].append(float(done.stdout.strip().splitlines()[-1]))
    for order, p50s in got.items():
        print(f"efficientnet-lite0 torch  {order:<16} p50 median {statistics.median(p50s):7.2f} ms  rounds "
              + ", ".join(f"{x:.1f}" for x in p50s), flush=True)
    return got


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(json.loads(sys.argv[2]))))
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--order-child":
        print(order_child(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--json", action="store_true", help="Print every round as JSON at the end.")
    ap.add_argument("--floor", action="store_true", help="cr's per-query path vs a bare framework loop, before/after.")
    ap.add_argument("--before", default="main", help="The git ref whose cr is 'before' (--floor).")
    ap.add_argument("--models", nargs="*", help="Only these models.")
    ap.add_argument("--import-order", action="store_true", help="efficientnet-lite0 torch p50 by library import order.")
    ap.add_argument("--home", help="A CR_HOME holding efficientnet-lite0's compiled variants (reused, not removed).")
    args = ap.parse_args()
    if args.import_order:
        got = import_order(args)
        if args.json:
            print(json.dumps(got, indent=2))
        return
    with tempfile.TemporaryDirectory(prefix="cr-bench-trust-") as tmp:
        home = args.home or tmp
        if not args.home and (not args.models or "efficientnet-lite0" in args.models):
            compile_variants(home)
        rows = floor(args, home) if args.floor else measure(args, home)
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
