"""cr profile: do the figures add up, what does the profiler cost, is the layer ranking stable?

    .venv/bin/python benchmarks/bench_profile.py                 # lenet-digits (4 backends) + efficientnet-lite0
    .venv/bin/python benchmarks/bench_profile.py --quick         # lenet-digits only
    .venv/bin/python benchmarks/bench_profile.py --repeats 5 --json out.json

For each (model, backend, batch) the model is profiled --repeats times (each a fresh
process, --samples queries, one thread by default) and the benchmark prints:

- coverage: the sum of the layer medians over the model median, both per query over the
  same profiled queries (what the table's shares add up to; target 0.8-1.1 where per-op
  timing exists), the median over the repeats, and its range; beside it the per-query
  coverage (the median of each query's own layer time / query time). The two differ by
  the scatter: on a loaded machine each query is slowed in different layers, which the
  per-query sums hold and no layer's median does (the load average is printed);
- overhead: the profiler's cost the profile measures itself (profiled p50 over the p50 of
  plain queries of the same model and threads run around the profiled ones: the same
  session, or a second plain session for ONNX Runtime), and as a cross-check the profiled
  p50 over the p50 of a `cr benchmark` of the same configuration in the same run;
- ranking stability: how the layer ranking moves between repeats. Kendall's tau-b of the
  layers' order by median between consecutive repeats (the minimum over pairs; 1 is the
  same order), whether the slowest layer is the same in every repeat, and the largest
  max/min ratio of one of the top 5 layers' time across repeats; each beside the same
  figures computed from the per-query means the table used to show, on the same runs.

Then efficientnet-lite0 on onnxruntime vs torch (when both ran): the top 10 matched layers
by median difference. Everything runs in a temporary CR_HOME (efficientnet-lite0 is
compiled to ONNX there first; a small Keras LeNet is written there for tensorflow).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=50, help="profiled queries per repeat (efficientnet: a third)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="lenet-digits only")
    ap.add_argument("--no-tensorflow", action="store_true", help="skip the Keras LeNet on tensorflow")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", dest="json_out")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="cr-bench-profile-"))
    os.environ["CR_HOME"] = str(home)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        return _run(args, home)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _keras_lenet(home: Path) -> str | None:
    """model:klenet, a LeNet-digits-shaped Keras model (random weights) in a repo under home."""
    try:
        import keras
    except ImportError:
        return None
    from cr import api

    repo = home / "kzoo"
    folder = repo / "model/klenet/1.0.0"
    folder.mkdir(parents=True)
    (repo / "cr-repo.json").write_text(json.dumps({"name": "kzoo", "uid": secrets.token_hex(8), "version": "1.0.0"}))
    keras.utils.set_random_seed(0)
    x = keras.Input(shape=(8, 8, 1), name="input")
    h = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="conv1")(x)
    h = keras.layers.Conv2D(16, 3, padding="same", activation="relu", name="conv2")(h)
    h = keras.layers.MaxPooling2D(2, name="pool")(h)
    h = keras.layers.Dense(64, activation="relu", name="fc1")(keras.layers.Flatten(name="flatten")(h))
    keras.Model(x, keras.layers.Dense(10, name="fc2")(h)).save(folder / "klenet.keras")
    sha = hashlib.sha256((folder / "klenet.keras").read_bytes()).hexdigest()
    meta = {"uid": secrets.token_hex(8), "kind": "model", "name": "klenet", "version": "1.0.0", "tags": [],
            "format": "keras", "file": "klenet.keras", "files": {"klenet.keras": sha}, "task": "classification",
            "license": "MIT", "description": "LeNet-digits in Keras (random weights)",
            "inputs": [{"name": "input", "shape": [None, 8, 8, 1], "dtype": "float32", "layout": "NHWC"}],
            "outputs": [{"name": "fc2", "shape": [None, 10], "dtype": "float32", "layout": "NC"}]}
    (folder / "meta.json").write_text(json.dumps(meta))
    api.repo_add(repo)
    return "model:klenet"


def tau_b(a: list, b: list) -> float | None:
    """Kendall's tau-b of two score lists over the same items (ties counted as ties)."""
    n = len(a)
    conc = disc = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    denom = ((conc + disc + ties_a) * (conc + disc + ties_b)) ** 0.5
    return round((conc - disc) / denom, 3) if denom else None


def stability(runs: list[list[dict]], field: str) -> dict:
    """How the layer order by `field` moves between repeats."""
    keyed = [{(l["name"], l["op"]): l.get(field) or 0 for l in layers} for layers in runs]
    common = sorted(set.intersection(*[set(k) for k in keyed])) if keyed else []
    taus = [tau_b([x[k] for k in common], [y[k] for k in common]) for x, y in zip(keyed, keyed[1:])]
    taus = [t for t in taus if t is not None]
    tops = {max(common, key=lambda k: x[k]) for x in keyed} if common else set()
    top5 = sorted(common, key=lambda k: -statistics.median(x[k] for x in keyed))[:5]
    spread = max((max(x[k] for x in keyed) / min(x[k] for x in keyed) for k in top5 if min(x[k] for x in keyed) > 0),
                 default=None)
    return {"tau_min": min(taus) if taus else None, "same_top": len(tops) == 1,
            "top5_max_over_min": round(spread, 2) if spread else None, "layers": len(common)}


def _run(args, home: Path) -> int:
    from cr.run import benchmark
    from cr.run.compile import compile_model
    from cr.run.layermatch import compare_profiles
    from cr.run.profile import profile

    cases = [("model:lenet-digits", "onnxruntime", None, 64), ("model:lenet-digits", "torch", "state-dict", 64),
             ("model:lenet-digits", "torch", "torchscript", 64), ("model:lenet-digits", "tflite", None, 64),
             ("model:lenet-digits", "onnxruntime", None, 1), ("model:lenet-digits", "torch", "state-dict", 1)]
    if not args.no_tensorflow:
        klenet = _keras_lenet(home)
        if klenet:
            cases.append((klenet, "tensorflow", None, 512))
    if not args.quick:
        compile_model("model:efficientnet-lite0", "onnx")
        cases += [("model:efficientnet-lite0@1.0.0+onnx", "onnxruntime", None, 1), ("model:efficientnet-lite0@1.0.0", "torch", None, 1)]
    figures, profiles = [], {}
    print(f"{args.repeats} repeats per case, {args.threads} thread(s); coverage = sum of layer medians / model median "
          "(median over repeats, min..max); overhead = profiled p50 / plain p50")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    head = (f"{'model':22} {'backend':24} {'batch':>5} {'coverage':>16} {'per-query':>9} {'overhead':>9} {'vs bench':>9} "
            f"{'tau med':>7} {'tau mean':>8} {'top1 med/mean':>13} {'top5 max/min med|mean':>21}")
    print(head)
    for ref, backend, variant, batch in cases:
        samples = args.samples if "efficientnet" not in ref else max(5, args.samples // 3)
        params = {"samples": samples, "warmup": 5, "batch_size": batch, "threads": args.threads}
        recs = []
        for _ in range(args.repeats):
            rec = profile(ref, backend=backend, variant=variant, params=params, store=False)
            if rec["status"] != "ok":
                print(f"{ref:22} {backend:24} failed: {(rec.get('error') or {}).get('message')}")
                break
            recs.append(rec)
        if len(recs) != args.repeats:
            continue
        bench = benchmark(ref, backend=backend, variant=variant, store=False,
                          params={"min_duration_s": 0, "min_queries": samples * 3, "warmup_queries": 5, "batch_size": batch,
                                  "threads": args.threads, "inputs": "synthetic"})
        off = bench["metrics"]["latency_ns"]["p50"] if bench["status"] == "ok" else None
        covs = [r["profile"]["summary"]["coverage"] for r in recs]
        per_query = [r["profile"]["summary"].get("coverage_per_query") for r in recs]
        overheads = [r["profile"]["overhead"]["ratio"] for r in recs]
        on = statistics.median(r["profile"]["summary"]["model_ns"]["p50"] for r in recs)
        runs = [r["profile"]["layers"] for r in recs]
        timed = bool(runs[0])
        st_med = stability(runs, "median_ns") if timed else {}
        st_mean = stability(runs, "mean_per_query_ns") if timed else {}
        label = backend + (f" ({variant})" if variant else "")
        row = {"model": ref, "backend": label, "batch": batch, "repeats": args.repeats, "samples": samples,
               "coverage": statistics.median(covs) if timed else None, "coverage_range": [min(covs), max(covs)] if timed else None,
               "coverage_per_query": statistics.median(per_query) if timed else None,
               "overhead": statistics.median(overheads), "overhead_range": [min(overheads), max(overheads)],
               "p50_profiled_ns": on, "p50_benchmark_ns": off, "overhead_vs_benchmark": round(on / off, 3) if off else None,
               "stability_median": st_med, "stability_mean": st_mean, "layers": recs[0]["profile"]["summary"]["layers"]}
        figures.append(row)
        cov = "untimed" if not timed else f"{row['coverage']:.3f} ({min(covs):.2f}..{max(covs):.2f})"

        def f(x, spec):
            return "-" if x is None else format(x, spec)
        print(f"{ref.split(':')[1][:22]:22} {label:24} {batch:5d} {cov:>16} {f(row['coverage_per_query'], '.3f'):>9} "
              f"{f(row['overhead'], '.2f'):>8}x "
              f"{f(row['overhead_vs_benchmark'], '.2f'):>8}x {f(st_med.get('tau_min'), '.3f'):>7} {f(st_mean.get('tau_min'), '.3f'):>8} "
              f"{('yes' if st_med.get('same_top') else 'no') + '/' + ('yes' if st_mean.get('same_top') else 'no') if timed else '-':>13} "
              f"{f(st_med.get('top5_max_over_min'), '.2f') + ' | ' + f(st_mean.get('top5_max_over_min'), '.2f') if timed else '-':>21}")
        if "efficientnet" in ref:
            profiles[backend] = recs[0]["profile"]
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
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"figures": figures, "comparison": table}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
