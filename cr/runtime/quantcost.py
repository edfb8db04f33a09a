"""What an int8 conversion cost and bought, measured in the compile child (device side).

    cost = measure("onnx", "lenet.onnx", "lenet.int8.onnx", batch)
    cost["size_ratio"], cost["latency"]["ratio"]       # int8 / reference: < 1 is a gain

The reference is the float model the quantisation started from, in the output's own
format, so that both run on the same backend with the same inputs: for ONNX the fp32 graph
the quantize step read (the source, or the graph exported from a torch source); for TFLite
the fp32 TFLite the converter makes from the same source (a Keras file cannot run on the
TFLite interpreter). Sizes are file sizes in bytes.

Latency: one session per model is made and warmed up (WARMUP runs each), then RUNS timed
runs of each on the same batch, interleaved (reference, int8, reference, ...) so that a
change in the machine's load falls on both alike; each figure is the median of its runs
(time.perf_counter_ns around one run call). A large model stops early: after MIN_RUNS
pairs, no pair starts once BUDGET_S seconds of timing have passed ("runs" says how many
ran). A few dozen runs of a small model cost well under a second; it is a quick comparison
on this machine, not a benchmark (cr benchmark measures properly).

Also here: why a pre-pass was skipped, in words a user acts on (``skip_reason``), and
which calibration samples are also samples validation judges (``overlap``), matched by
content so that a copy of the evaluation data under another name is caught too.
Standard library at import; numpy and the frameworks are imported by what uses them.
"""
from __future__ import annotations

import hashlib
import os
import re
import statistics
import time

WARMUP, RUNS = 3, 20
# a large model stops early: at least MIN_RUNS pairs, then none begun after BUDGET_S seconds of timing
MIN_RUNS, BUDGET_S = 5, 2.0


def measure(fmt: str, reference: str, output: str, batch: dict, runs: int = RUNS, warmup: int = WARMUP) -> dict:
    """{"against", "reference_bytes", "bytes", "size_ratio", "latency": {...}} of output vs reference.
    latency is {"error": ...} when either model cannot be timed (the sizes still stand)."""
    ref_bytes, out_bytes = os.path.getsize(reference), os.path.getsize(output)
    report = {"reference_bytes": ref_bytes, "bytes": out_bytes, "size_ratio": round(out_bytes / ref_bytes, 4) if ref_bytes else None}
    try:
        make = _onnx_runner if fmt == "onnx" else _tflite_runner
        run_ref, run_out = make(reference, batch), make(output, batch)
        report["latency"] = _time(run_ref, run_out, runs, warmup)
    except Exception as exc:  # a model that runs in its checks but not here is said, not fatal
        report["latency"] = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}
        return report
    report["latency"].update(backend="onnxruntime CPU" if fmt == "onnx" else "tflite interpreter",
                             batch=len(next(iter(batch.values()))))
    return report


def _time(run_ref, run_out, runs: int, warmup: int) -> dict:
    for _ in range(warmup):
        run_ref()
        run_out()
    ref_ns, out_ns = [], []
    deadline = time.monotonic() + BUDGET_S
    while len(ref_ns) < runs and (len(ref_ns) < MIN_RUNS or time.monotonic() < deadline):
        for fn, into in ((run_ref, ref_ns), (run_out, out_ns)):
            start = time.perf_counter_ns()
            fn()
            into.append(time.perf_counter_ns() - start)
    runs = len(ref_ns)
    ref_med, out_med = statistics.median(ref_ns), statistics.median(out_ns)
    return {"reference_ms": round(ref_med / 1e6, 4), "int8_ms": round(out_med / 1e6, 4),
            "ratio": round(out_med / ref_med, 3) if ref_med else None, "runs": runs, "warmup": warmup,
            "method": f"median of {runs} interleaved runs each after {warmup} warm-up runs, same inputs"}


def _onnx_runner(path: str, batch: dict):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    session = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
    feed = {i.name: batch[i.name] for i in session.get_inputs()}
    return lambda: session.run(None, feed)


def _tflite_runner(path: str, batch: dict):
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        import tensorflow as tf

        Interpreter = tf.lite.Interpreter
    interp = Interpreter(model_path=path)
    details = interp.get_input_details()
    arrays = list(batch.values())
    for d, x in zip(details, arrays):
        interp.resize_tensor_input(d["index"], list(x.shape))
    interp.allocate_tensors()

    def run():
        for d, x in zip(details, arrays):
            interp.set_tensor(d["index"], x)
        interp.invoke()

    return run


def skip_reason(exc: BaseException) -> str:
    """Why a pre-pass could not run, in words a user acts on: "sympy not installed" for a
    missing module, else the exception's type and first line."""
    seen = exc
    while seen is not None:  # onnxruntime re-raises a missing sympy as its own ImportError
        if isinstance(seen, ImportError) and getattr(seen, "name", None):
            return f"{seen.name.split('.')[0]} not installed"
        seen = seen.__cause__ or seen.__context__
    text = str(exc).strip()
    missing = re.match(r"([A-Za-z_][\w.-]*) is required", text) if isinstance(exc, ImportError) else None
    if missing:
        return f"{missing.group(1)} not installed"
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _key(data) -> str:
    """A sample's content: an array's dtype, shape and bytes; a file path's bytes (image datasets)."""
    digest = hashlib.sha256()
    if isinstance(data, str) and os.path.isfile(data):
        with open(data, "rb") as f:
            digest.update(f.read())
        return digest.hexdigest()
    import numpy as np

    array = np.ascontiguousarray(np.asarray(data))
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())
    return digest.hexdigest()


def overlap(calibration: list, evaluation: list) -> dict:
    """{"calibration_samples", "evaluation_samples", "overlap"}: how many calibration samples
    (raw, before any pre-processing) are, by content, among the evaluation samples."""
    judged = {_key(s.data) for s in evaluation}
    shared = sum(1 for s in calibration if _key(s.data) in judged)
    return {"calibration_samples": len(calibration), "evaluation_samples": len(evaluation), "overlap": shared}
