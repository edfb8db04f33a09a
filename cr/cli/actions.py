"""cr benchmark, cr run, cr validate: the unified actions on a model or a solution."""
from __future__ import annotations

import click

from . import output
from .actionopts import (conclude, finish, kept, one, require_placement_option, show, status, sustained_options,
                         sustained_params, target_options)
from .options import backend_options


def _diff(pair: dict) -> str:
    """A parity pair's max abs difference, or why there is none."""
    if pair.get("kind") == "detections":  # cr.runtime.detection_parity
        return f"scores {pair['max_score_diff']:.3g}, IoU >= {pair['min_iou']:.4f}, {pair['unmatched']} unmatched"
    if pair.get("max_abs_diff") is None:
        return f"output shapes differ (samples {', '.join(map(str, pair.get('shape_mismatch') or []))})"
    return f"{pair['max_abs_diff']:.3g}"


def _rel(value) -> str:
    return "" if value is None else f"{value:.3g}"


def _agreement(pair: dict) -> str:
    """The task's agreement figure of a parity pair: top-1 (classification), pixels of the
    same class (segmentation), max error in model units (landmarks, regression)."""
    a = pair.get("agreement")
    if pair.get("kind") == "detections":  # the share of samples whose boxes agree (cr.runtime.detection_parity)
        return f"samples {pair['top1_agreement']:.4f}"
    if a is None:
        return f"top-1 {pair['top1_agreement']:.4f}" if pair.get("top1_agreement") is not None else ""
    if a["metric"] == "max_error":
        return f"max error {a['value']:.3g}"
    return f"{'top-1' if a['metric'] == 'top1_agreement' else 'pixels'} {a['value']:.4f}"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.4f} ms"


def _summary_rows(record: dict) -> list[list]:
    m = record["metrics"]
    lat = m["latency_ns"]
    rows = [
        ["scenario", m["scenario"] + (f" (MLPerf LoadGen {m['loadgen'].get('version')})" if m.get("engine") == "loadgen" else "")],
        ["validity", m["validity"] + ("" if not m["invalid_reasons"] else f" ({'; '.join(m['invalid_reasons'])})")],
        ["queries", m["queries"]],
        ["samples", f"{m['samples']} ({m['samples_per_query']} per query, batch {m['batch_size']})"],
        ["duration", f"{m['duration_s']:.3f} s" + (" (stopped at --max-duration)" if m.get("stopped_by") == "max_duration" else "")],
    ]
    from ..results.summary import config_label

    pipe = record.get("pipeline") or {}
    rows.append(["config", " ".join(x for x in (config_label(record),
                                              f"variant={pipe.get('variant')} ({pipe.get('precision') or 'fp32'})"
                                              if pipe.get("variant") else "") if x)])
    rows += [[k, _ms(lat[k])] for k in ("min", "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "stdev", "iqr")]
    rows += [
        ["throughput", f"{m['throughput']['queries_per_s']:.1f} queries/s, {m['throughput']['samples_per_s']:.1f} samples/s"],
        ["noise (IQR/p50)", f"{m['noise']:.3f}" + ("  NOISY" if m["noisy"] else "")],
    ]
    if m.get("server"):
        s = m["server"]
        rows.append(["server", f"target {s['target_qps']:g} q/s, achieved {s['achieved_qps']:.1f} q/s, p99 {s['p99_ms']:.3f} ms (bound {s['latency_bound_ms']:g} ms)"])
    if m.get("peak_rss_bytes"):
        rows.append(["peak RSS", f"{m['peak_rss_bytes'] / 2**20:.1f} MiB"])
    from .trust import phase_rows

    rows += phase_rows(m)
    from ..results.sustained import rows as sustained_rows

    rows += sustained_rows(m)  # the curve, throttling and drift of a --sustained run
    info = record["backend"].get("info") or {}
    details = [f"{info['framework']} {info['version']}"] if info.get("version") else []
    details += info.get("providers") or []
    rows.append(["backend", record["backend"]["name"] + (f" ({', '.join(details)})" if details else "")])
    from ..results.placement import rows as placement_rows

    rows += placement_rows(record)
    from ..results.machine import rows as machine_rows

    rows += machine_rows(record)  # memory, energy, the machine's state (cr.run.monitor)
    return rows


def _solution(ref: str, only, overrides: dict, out, as_json: bool, store: bool, common: dict, lock=None) -> None:
    """A solution's declared actions (all, or only one kind): one table, every result stored."""
    from ..run import solution
    from ..errors import CRError
    from ..results.record import to_json
    from .solution import SOLUTION_HEADERS, solution_rows

    overrides = {k: {p: v for p, v in params.items() if v is not None} for k, params in overrides.items()}
    records, not_stored = kept(lambda: solution.run_declared(ref, only=only, overrides=overrides, store=store,
                                                              output_dir=out, lock=lock, **common))
    if as_json:
        output.emit_json([to_json(r) for r in records])
    else:
        output.table(SOLUTION_HEADERS, solution_rows(records), title=f"{records[0]['components'][0]['ref']} on {records[0]['backend']['name']}")
        for r in records:  # a --sustained benchmark: its verdict under the table (cr results show UID: the curve)
            if isinstance((r.get("metrics") or {}).get("sustained"), dict):
                click.echo(output.clean(f"{r.get('uid')}: {r['metrics']['sustained'].get('verdict')}"))
    if out:
        click.echo(f"results: {out}/", err=True)

    def runs_ok():
        failed = [r for r in records if r["status"] != "ok"]
        if failed:
            error = failed[0].get("error") or {}
            raise CRError(f"{failed[0]['action']} failed: {error.get('message')}", hint=error.get("hint"))

    conclude(not_stored, runs_ok, *[lambda r=r: _check_tolerance(r.get("validation") or {}, _dataset_of(r)) for r in records])


def _dataset_of(record: dict) -> str | None:
    return (record.get("config") or {}).get("dataset") or (record.get("inputs") or {}).get("dataset")


def _check_tolerance(validation: dict, dataset: str | None = None) -> None:
    """CRError naming every metric of a FAIL validation with its value and allowed range, and
    whether it is better or worse than expected: the two have different likely causes."""
    from ..errors import CRError

    if validation.get("outcome") != "FAIL":
        return
    bad = [c for c in validation.get("checks") or [] if c["ok"] is False]
    worse = [c for c in bad if not _better_than_expected(c)]

    def said(c: dict) -> str:
        way = "better" if _better_than_expected(c) else "worse"
        return f"{c['metric']} {c['value']:.4f}, expected {c['expected']:.4f} +- {c['allowed']:.4f}: {way} than expected"

    message = "accuracy outside tolerance: " + "; ".join(said(c) for c in bad)
    if worse:  # a loss: the classic causes are a pipeline that differs from the model's (MLPerf's PIL resize, "subtract 128")
        raise CRError(message, hint="check the pre-processing (pipeline sha256 in the result), the variant and the software "
                                    "versions against the model's")
    # Every figure is better than the model claims: nothing in the pipeline loses accuracy that way; what inflates
    # a figure is scoring on other samples (a training split, leaked or wrong labels) or a stale expected value.
    raise CRError(message, hint=f"if unexpected, check the dataset's split and labels (cr show {dataset or 'DATASET'}); "
                                "if the figure is right, update the expected value in the model's meta")


# Error-type metrics (landmarks, regression): lower is better; every other checked metric
# (top-1/top-5, AP, recall, mIoU, pixel accuracy) is better higher.
_LOWER_IS_BETTER = frozenset({"nme", "mean_error", "mae", "rmse", "max_error"})


def _better_than_expected(check: dict) -> bool:
    above = check["value"] > check["expected"]
    return not above if check["metric"] in _LOWER_IS_BETTER else above


@click.command()
@click.argument("ref", nargs=-1, required=True)
@target_options
@click.option("--scenario", type=click.Choice(["single-stream", "multi-stream", "offline", "server"]))
@click.option("--min-duration", "min_duration_s", type=float, help="Minimum timed duration in seconds.")
@click.option("--min-queries", type=int, help="Minimum number of timed queries.")
@click.option("--max-duration", "max_duration_s", type=float,
              help="Stop a slow model after this many seconds even short of --min-queries, once 100 queries ran "
                   "(default 25; 0: no maximum).")
@click.option("--warmup", "warmup_queries", type=int,
              help="At least this many warm-up queries (not timed), then on until stable (see action:benchmark); 0: none.")
@click.option("--warmup-max-queries", type=int, help="End the warm-up after this many queries, stable or not (default 1000).")
@click.option("--fidelity", is_flag=True, default=None,
              help="After the scenario, time the same inputs with a bare loop around the backend's run() and record cr p50 / bare p50.")
@click.option("--batch-size", type=int, help="Samples per model call (default: the model's batch, else 1).")
@click.option("--samples-per-query", type=int, help="multi-stream: samples per query.")
@click.option("--threads", type=int, help="The backend's compute threads.")
@click.option("--target-qps", type=float, help="server: Poisson arrival rate (queries/s).")
@click.option("--latency-bound-ms", type=float, help="server: p99 bound in ms (default 100).")
@click.option("--seed", type=int, help="Seed of the synthetic inputs and the arrival process.")
@click.option("--inputs", type=click.Choice(["auto", "dataset", "synthetic"]), help="Pre-processed dataset samples or seeded synthetic arrays (auto: dataset when there is one).")
@click.option("--include-preprocess", is_flag=True, default=None, help="Time pre-processing together with inference.")
@click.option("--engine", type=click.Choice(["cr", "loadgen"]), help="cr's harness (default) or MLPerf LoadGen (logs kept beside the result).")
@click.option("--timeout", "timeout_s", type=float, help="Stop the runtime and fail after this many seconds.")
@require_placement_option
@sustained_options
def benchmark(ref, backend, variant, dataset, split, options, lock_file, out, as_json, store, install, **params):
    """Benchmark a model or solution: cr benchmark model NAME[@SPEC] --backend onnxruntime.

    Runs in a separate process; the run lasts until both --min-duration and --min-queries
    are met. Defaults come from action:benchmark (cr show action:benchmark).
    """
    from ..run import benchmark as run_benchmark
    from ..store.refs import parse_ref_words

    ref = parse_ref_words(ref)
    params = sustained_params(params)
    common = dict(backend=backend, backend_options=backend_options(options), variant=variant, dataset=dataset, split=split)
    if ref.kind == "solution":
        _solution(str(ref), None, {"benchmark": params}, out, as_json, store, common, lock=lock_file)
        return
    record, not_stored = kept(lambda: run_benchmark(str(ref), params=params, lock=lock_file, output=out, store=store,
                                                            install=install, **common))
    record = one(record)
    title = f"{record['components'][0]['ref']} on {record['backend']['name']}"
    show(record, out, as_json, lambda: output.table(["METRIC", "VALUE"], _summary_rows(record), title=title))

    def invalid():
        if record.get("profile"):
            output.warn("profiled: a framework profiler was on during this benchmark (backend option), so its latencies "
                        "are profiled ones; the leaderboard leaves it out (use cr profile for layer timings)")
        if record["metrics"] and record["metrics"]["validity"] != "VALID":
            output.warn("INVALID run: " + "; ".join(record["metrics"]["invalid_reasons"]))

    from .trust import warn_unstable

    conclude(not_stored, lambda: status(record), invalid, lambda: warn_unstable(record["metrics"]))


def _save_dir(ctx, param, value):
    """--save-outputs DIR: a directory or a path that does not exist yet (made absolute: the
    runtime child writes there)."""
    if value is None:
        return None
    from pathlib import Path

    from ..errors import CRError

    path = Path(value)
    if path.exists() and not path.is_dir():
        raise CRError(f"--save-outputs {value} is a file, not a directory",
                      hint="give a directory, or a path that does not exist yet (it is created)")
    return str(path.resolve())


def _task_prediction(p: dict) -> str:
    """cr run's text for a segmentation (mask size and class shares), landmarks (the points)
    or regression (the values)."""
    if "mask" in p:
        m = p["mask"]
        shares = ", ".join(f"{c['class']}{' (' + c['label'] + ')' if c.get('label') else ''} {c['share']:.1%}" for c in m["classes"][:5])
        return f"mask {'x'.join(map(str, m['shape']))}: {shares}"
    if "points" in p:
        return " ".join(f"({', '.join(f'{v:.2f}' for v in pt)})" for pt in p["points"])
    values = p["values"]
    return ", ".join(f"{v:.4g}" for v in values[:8]) + (f" ... ({len(values)} values)" if len(values) > 8 else "")


@click.command("run")
@click.argument("ref", nargs=-1, required=True)
@target_options
@click.option("-i", "--input", "inputs", multiple=True, type=click.Path(exists=True, dir_okay=False), help="A file to run (image or .npy; repeatable). Default: dataset samples.")
@click.option("--limit", type=int, help="Dataset samples to run (default 8).")
@click.option("--top-k", type=int, help="Classes shown per sample (default 5).")
@click.option("--batch-size", type=int, help="Samples per model call.")
@click.option("--threads", type=int, help="The backend's compute threads.")
@click.option("--timeout", "timeout_s", type=float, help="Stop the runtime and fail after this many seconds.")
@click.option("--stream", metavar="SRC", help="Run every frame of a video file, a folder of frames or a camera index (0); shows the FPS.")
@click.option("--annotate", metavar="DIR", type=click.Path(file_okay=False), help="--stream: write each frame with its detections drawn into DIR.")
@click.option("--max-frames", type=click.IntRange(min=1), help="--stream: stop after this many frames (camera default 100).")
@click.option("--strict", is_flag=True, default=None, help="--stream: stop at a frame that cannot be used instead of skipping it.")
@click.option("--score-threshold", type=click.FloatRange(0, 1), help="--stream, detection: show detections scoring at least this (default 0.5).")
@click.option("--save-outputs", metavar="DIR", callback=_save_dir,
              help="Save every raw output of every sample as DIR/NNNNNN_<output>.npy, with DIR/index.json naming shapes and dtypes.")
def run_(ref, backend, variant, dataset, split, options, lock_file, out, as_json, store, install, inputs, **params):
    """Run inference and show decoded predictions: cr run model NAME --backend B [-i FILE].

    Samples go through the model's declared pre-processing, the backend, and its
    post-processing (softmax/top-k, box decoding), exactly as validate and benchmark feed it.
    """
    from ..run.actions import run_action
    from ..store.refs import parse_ref_words

    if inputs:
        params["inputs"] = [str(p) for p in inputs]
    from ..run.streaming import stream_params

    if params.get("save_outputs") and params.get("stream"):
        from ..errors import CRError

        raise CRError("--save-outputs does not apply to --stream", hint="save the outputs of dataset samples or --input files")
    params = stream_params(params, bool(inputs))
    ref = parse_ref_words(ref)
    common = dict(backend=backend, backend_options=backend_options(options), variant=variant, dataset=dataset, split=split)
    if ref.kind == "solution":
        from ..run import solution

        records, not_stored = kept(lambda: solution.run_declared(str(ref), only="run", overrides={"run": params}, store=store,
                                                                  lock=lock_file, **common))
        record = records[0]
        if out:
            from ..results.record import write

            write(record, out)
    else:
        record, not_stored = kept(lambda: run_action("run", str(ref), params=params, lock=lock_file, output=out, store=store,
                                                         install=install, **common))
        record = one(record)

    def table():
        if record.get("stream"):
            from .stream import stream_table

            return stream_table(record)
        rows = []
        for p in record.get("predictions") or []:
            if "detections" in p:
                shown = "; ".join(f"[{', '.join(f'{v:.3f}' for v in d['box'])}] {d['score']:.3f}" for d in p["detections"]) or "none"
            elif "mask" in p or "points" in p or "values" in p:
                shown = _task_prediction(p)
            else:
                shown = ", ".join(f"{t['class']}{' (' + t['label'] + ')' if t.get('label') not in (None, str(t['class'])) else ''} {t['score']:.3f}" for t in p["top"][:3])
            rows.append([p["id"], "" if p.get("label") is None else p["label"], shown])
        output.table(["SAMPLE", "LABEL", "PREDICTION"], rows, title=f"{record['components'][0]['ref']} on {record['backend']['name']}")

    finish(record, out, as_json, table, not_stored)
    saved = record.get("saved_outputs")
    if saved and not as_json:
        click.echo(output.clean(f"outputs: {saved['files']} files of {saved['samples']} samples in {saved['dir']} (index: {saved['index']})"), err=True)


def _tolerance(ctx, param, value):
    """--parity-atol / --parity-rtol: a finite number >= 0, else an Error before anything runs."""
    if value is None:
        return None
    from ..run.parity import check_tolerance

    return check_tolerance(param.name, value)


@click.command()
@click.argument("ref", nargs=-1, required=True)
@target_options
@click.option("--parity", metavar="B1,B2[,...]", help="Compare these backends' outputs on the same samples (max abs diff, top-1 agreement).")
@click.option("--parity-atol", type=float, callback=_tolerance,
              help="--parity: absolute tolerance of every output, numpy.allclose(other, reference, rtol, atol) (default 1e-4).")
@click.option("--parity-rtol", type=float, callback=_tolerance,
              help="--parity: relative tolerance of every output, |other - reference| <= atol + rtol * |reference| (default 0).")
@click.option("--seed", type=int, help="--parity of a model without a dataset: seed of the synthetic inputs (default 0).")
@click.option("--limit", type=int, help="Use at most this many samples.")
@click.option("--batch-size", type=int, help="Samples per model call.")
@click.option("--iou-threshold", type=float, help="Detection: IoU for a match (default 0.5).")
@click.option("--threads", type=int, help="The backend's compute threads.")
@click.option("--timeout", "timeout_s", type=float, help="Stop the runtime and fail after this many seconds.")
@require_placement_option
def validate(ref, backend, variant, dataset, split, options, lock_file, out, as_json, store, install, parity, **params):
    """Check accuracy against the model's expected metrics: cr validate model NAME --backend B.

    Exit 1 when a metric is outside its tolerance. With --parity onnxruntime,torch,tflite
    every backend runs the same samples and their outputs are compared.
    """
    from ..errors import CRError
    from ..run.parity import parity as run_parity, validate as run_validate
    from ..store.refs import parse_ref_words

    parsed = parse_ref_words(ref)
    ref = str(parsed)
    if not parity:
        if params.pop("seed", None) is not None:
            raise CRError("--seed applies to --parity only (the seed of synthetic inputs)",
                          hint="add --parity B1,B2, or leave --seed out")
    if parsed.kind == "solution" and not parity:
        _solution(ref, "validate", {"validate": params}, out, as_json, store,
                  dict(backend=backend, backend_options=backend_options(options), variant=variant, dataset=dataset, split=split),
                  lock=lock_file)
        return
    common = dict(backend_options=backend_options(options), variant=variant, dataset=dataset, split=split,
                  lock=lock_file, output=out)
    if parity:
        backends = [b.strip() for b in parity.split(",") if b.strip()]
        record = run_parity(ref, backends, params=params, install=install, **common)
        p = record.get("parity") or {}

        def table():
            rows = []
            for x in p.get("pairs") or []:
                rows.append([" vs ".join(x["backends"]), x["samples"], _diff(x), _rel(x.get("max_rel_diff")), _agreement(x),
                             "ok" if x["ok"] else "DIVERGES"])
                for o in x.get("outputs") or [] if len(x.get("outputs") or []) > 1 else []:
                    rows.append([f"  {o['name']}", "", _diff(o), _rel(o.get("max_rel_diff")), "",
                                 "ok" if o["allclose"] else "NOT CLOSE"])
            inputs = p.get("inputs") or {}
            fed = (f"synthetic inputs, seed {inputs.get('seed')}" if inputs.get("provider") == "synthetic"
                   else f"{inputs.get('dataset')} ({inputs.get('split')})" if inputs.get("dataset") else "")
            runs = p.get("runs") or []
            ran = list(dict.fromkeys(r.get("model") for r in runs if r.get("model")))
            # each backend runs the version it loads (a compiled one for a format the source lacks)
            what = ran[0] if len(ran) == 1 else ", ".join(
                f"{m} ({', '.join(r['backend'] for r in runs if r.get('model') == m)})" for m in ran) or record['components'][0]['ref']
            output.table(["BACKENDS", "SAMPLES", "MAX ABS DIFF", "MAX REL DIFF", "AGREEMENT", ""], rows,
                         title=f"parity of {what} (atol {p.get('atol', p.get('tolerance', 0)):g}, "
                               f"rtol {p.get('rtol', 0):g}{'; ' + fed if fed else ''})")

        finish(record, out, as_json, table)
        if p.get("outcome") != "PASS":
            bad = [x for x in p.get("pairs") or [] if not x["ok"]]
            detail = "; ".join(f"{' vs '.join(x['backends'])}: max abs diff {_diff(x)}, {_agreement(x) or 'no agreement figure'}"
                               + "".join(f", output {o['name']} not within atol {p.get('atol', 0):g} rtol {p.get('rtol', 0):g}"
                                         for o in x.get("outputs") or [] if not o["allclose"])
                               + (f" (first disagreement: sample {x['disagreements'][0]})" if x["disagreements"] else "") for x in bad)
            raise CRError(f"backends diverge: {detail}", hint="a backend or a model variant differs from the reference; compare each with cr run")
        return
    record, not_stored = kept(lambda: run_validate(ref, backend=backend, params=params, store=store, install=install, **common))
    record = one(record)
    v = record.get("validation") or {}

    def table():
        rows = [[k, f"{v[k]:.4f}" if isinstance(v[k], float) else v[k]] for k in ("samples", "top1", "top5", "objects", "detections", "recall", "precision", "mean_iou",
                                                                                    "ap", "ap50", "ap75", "coco_recall", "miou", "pixel_accuracy",
                                                                                    "nme", "mean_error", "mae", "rmse", "max_error") if k in v]
        for c in v.get("checks") or []:
            if c["expected"] is not None:
                rows.append([f"expected {c['metric']}", f"{c['expected']:.4f} +- {c['allowed']:.4f}: {'ok' if c['ok'] else 'OUT OF TOLERANCE'}"])
        rows.append(["outcome", v.get("outcome")])
        rows.append(["pipeline sha256", (record.get("pipeline") or {}).get("sha256", "")[:16]])
        from ..results.placement import rows as placement_rows

        rows += placement_rows(record)
        output.table(["METRIC", "VALUE"], rows, title=f"{record['components'][0]['ref']} ({(record.get('pipeline') or {}).get('variant')}) on {record['backend']['name']}")

    show(record, out, as_json, table)
    conclude(not_stored, lambda: status(record), lambda: _check_tolerance(v, _dataset_of(record)))
