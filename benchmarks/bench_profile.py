"""cr profile: coverage per backend, profiler overhead, and the cross-backend layer table.

    .venv/bin/python benchmarks/bench_profile.py                 # lenet-digits + efficientnet-lite0
    .venv/bin/python benchmarks/bench_profile.py --quick         # lenet-digits only
    .venv/bin/python benchmarks/bench_profile.py --json out.json

For each (model, backend): a profile (``--samples`` queries) gives the coverage (sum of
layer times / model time, median over queries) and the profiled p50; a benchmark of the
same configuration in the same run (profiling off) gives the unprofiled p50; the ratio of
the two is the profiler's overhead ("in-profile": the same ratio against unprofiled queries
the profile itself times just before its profiler starts; not for onnxruntime, whose
session profiles from its creation). Then efficientnet-lite0 on onnxruntime vs torch:
the top 10 matched layers by per-query time difference. Everything runs in a temporary
CR_HOME (efficientnet-lite0 is compiled to ONNX there first).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="lenet-digits only")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="cr-bench-profile-"))
    os.environ["CR_HOME"] = str(home)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        return _run(args)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _run(args) -> int:
    from cr.run import benchmark
    from cr.run.compile import compile_model
    from cr.run.layermatch import compare_profiles
    from cr.run.profile import profile

    cases = [("model:lenet-digits", "onnxruntime", None, 1), ("model:lenet-digits", "torch", "state-dict", 1),
             ("model:lenet-digits", "torch", "torchscript", 1), ("model:lenet-digits", "tflite", None, 1),
             ("model:lenet-digits", "onnxruntime", None, 64), ("model:lenet-digits", "torch", "state-dict", 64)]
    if not args.quick:
        compile_model("model:efficientnet-lite0", "onnx")
        cases += [("model:efficientnet-lite0@1.0.0+onnx", "onnxruntime", None, 1), ("model:efficientnet-lite0@1.0.0", "torch", None, 1)]
    figures, profiles = [], {}
    print(f"{'model':38} {'backend':22} {'batch':>5} {'coverage':>8} {'p50 profiled':>13} {'p50 benchmark':>14} {'overhead':>8} {'in-profile':>10}")
    for ref, backend, variant, batch in cases:
        samples = args.samples if "lenet" in ref else max(5, args.samples // 3)
        params = {"samples": samples, "warmup": 5, "batch_size": batch, "threads": args.threads}
        rec = profile(ref, backend=backend, variant=variant, params=params, store=False)
        if rec["status"] != "ok":
            print(f"{ref:38} {backend:22} failed: {(rec.get('error') or {}).get('message')}")
            continue
        s = rec["profile"]["summary"]
        bench = benchmark(ref, backend=backend, variant=variant, store=False,
                          params={"min_duration_s": 0, "min_queries": samples * 3, "warmup_queries": 5, "batch_size": batch,
                                  "threads": args.threads, "inputs": "synthetic"})
        off = bench["metrics"]["latency_ns"]["p50"] if bench["status"] == "ok" else None
        on = s["model_ns"]["p50"]
        label = backend + (f" ({variant})" if variant else "")
        row = {"model": ref, "backend": label, "batch": batch, "coverage": s["coverage"], "p50_profiled_ns": on,
               "p50_benchmark_ns": off, "overhead": round(on / off, 3) if off else None, "layers": s["layers"],
               "overhead_in_profile": (s.get("overhead") or {}).get("ratio")}
        figures.append(row)
        cov = "-" if s["coverage"] is None else f"{s['coverage']:.3f}"
        print(f"{ref:38} {label:22} {batch:5d} {cov:>8} {on / 1e6:10.3f} ms {off / 1e6 if off else float('nan'):11.3f} ms "
              f"{row['overhead'] or float('nan'):7.2f}x {row['overhead_in_profile'] or float('nan'):9.2f}x")
        if "efficientnet" in ref:
            profiles[backend] = rec["profile"]
    table = None
    if len(profiles) == 2:
        table = compare_profiles([("onnxruntime", profiles["onnxruntime"]), ("torch", profiles["torch"])])
        s = table["summary"]
        print(f"\nefficientnet-lite0, onnxruntime vs torch: {s['matched']} layers matched ({s['fused_rows']} with fused nodes), "
              f"unmatched {s['unmatched']}")
        print(f"{'layer':34} {'class':9} {'onnxruntime us':>14} {'torch us':>10} {'ratio':>6}  fused")
        for r in table["rows"][:10]:
            a, b = r["backends"]["onnxruntime"], r["backends"]["torch"]
            print(f"{r['layer'][:34]:34} {r['class']:9} {a['per_query_ns'] / 1e3:14.1f} {b['per_query_ns'] / 1e3:10.1f} "
                  f"{b.get('ratio') or float('nan'):6.2f}  {'; '.join(r.get('fused') or [])[:90]}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"figures": figures, "comparison": table}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
