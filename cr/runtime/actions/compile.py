"""The compile action's entry (actions/compile/meta.json: entry): one model file -> another.

job (built by cr.run.compile):
    {"model": {"ref", "meta" (the source variant's effective meta), "dir"},
     "dataset": {"ref", "meta", "dir", "split", "limit"} | None   (calibration samples),
     "params": {"to", "precision", "quantization", "calibration_samples", "options", "seed",
                "counterpart": {"variant", "file", "sha256"} | absent   (the model's own variant made by
                the same conversion of the same source: the output is compared with it),
                "hop": {"index", "count", "input"} | absent   (one hop of a chain, run in its own
                environment: main's docstring)},
     "out_dir": a directory the host made, "out_file": the output's file name in it}
->  {"output": {"file", "format", "precision", "inputs", "outputs", "bytes", "sha256"},
     "conversion", "steps", "options" (as applied, defaults included), "checks", "tools"}

Conversions (``plan`` says which one a source format, target and precision make):
    torchscript, torch-exported, torch-state-dict -> onnx   torch.onnx.export, batch axis dynamic
    tf-frozen-graph -> onnx   tf2onnx.convert.from_graph_def of the meta's inputs -> outputs cut
    onnx -> onnx        fp32: onnxruntime graph optimisation; int8: onnxruntime.quantization
    keras, savedmodel -> tflite   TFLiteConverter, fp32 or int8 (float input and output)
    tf-frozen-graph -> tflite     the meta's inputs -> outputs cut of the GraphDef (a backbone),
                                  at the meta's fixed input shape (batch 1 when it gives none)
    onnx -> trt-plan    cr.runtime.backends.tensorrt.build_plan (an NVIDIA GPU and TensorRT)
Every conversion is checked against its source: the output runs on sample batches
(dataset samples when the job has them, else seeded synthetic inputs) next to the source.
An fp32 output must agree within ``atol`` (option, default 1e-3); an int8 output's top-1
must agree with the source's on at least ``min_top1_agreement`` of the check samples
(option, default 0.95) when its first output is [N, classes] scores. A check below its
threshold is not an exception here: it is listed in the result's ``failed_checks`` (each
{check, metric, value, threshold, option, samples, message, hint}) and the host decides
(cr.run.compile: the compile fails unless degraded outputs are allowed). What cannot be
converted at all (no quantised operator, a fixed exported batch) raises CRError.

Dims that are dynamic: an ONNX dim with a dim_param, with no value, or with a value <= 0
(Paddle writes a dynamic batch as -1), and a TFLite shape_signature dim < 0 (-1) or 0,
are read as None.

The planning half (READS, SUPPORTED, plan) is standard library only: the host imports it
to settle the conversion before any child starts. Frameworks are imported by the step
that uses them.
"""
from __future__ import annotations

import os
import sys
import time

from ...errors import CRError
from .. import progress
from . import convgraph

TORCH = ("torchscript", "torch-exported", "torch-state-dict")
READS = {"onnx": ("onnx", *TORCH, "tf-frozen-graph"), "tflite": ("keras", "savedmodel", "tf-frozen-graph"), "trt-plan": ("onnx",)}
# Software the conversions (or a backend's fallback) import besides the backends' own frameworks:
# a compiled model does not inherit these deps from its source.
TOOLS = ("onnx", "onnxscript", "tensorflow", "keras", "tflite-runtime", "tf2onnx")
EXTENSIONS = {"onnx": "onnx", "tflite": "tflite", "trt-plan": "plan", "savedmodel": "savedmodel"}
SUPPORTED = ("torchscript, torch-exported, torch-state-dict, tf-frozen-graph -> onnx; onnx -> onnx (optimised, or int8 dynamic/static), "
             "trt-plan; keras, savedmodel, tf-frozen-graph -> tflite (fp32, or int8 static/dynamic); and any chain of the "
             "hops in docs/conversions.md (tflite -> onnx, onnx -> tflite, onnx -> savedmodel, ...)")

# -O options of each step: name -> (default, description). COMMON ones apply to every conversion,
# INT8 ones to every int8 output (onnx quantisation, tflite int8).
COMMON = {
    "atol": (1e-3, "largest max-abs difference an fp32 output may have from its source on the check batch"),
    "expected_margin": (None, "added to the abs tolerance of the source's expected fraction metrics (top1, top5, recall, "
                              "precision, mean_iou) the output inherits (default: 0.02 for int8 outputs, 0 otherwise)"),
}
INT8 = {
    "min_top1_agreement": (0.95, "least share of check samples whose top-1 must agree with the source's "
                                 "(classifier-like [N, classes] outputs)"),
}
INT8_EXPECTED_MARGIN = 0.02
# an int8 output's top-1 agreement is measured on up to this many dataset samples (else this many synthetic ones)
INT8_CHECK_SAMPLES, SYNTHETIC_CHECK_SAMPLES = 100, 32
OPTIONS = {
    "export": {
        "opset": (18, "ONNX opset of the exported graph"),
        "dynamo": (None, "true: the torch.export-based exporter (default for torch-exported), false: the TorchScript one (default otherwise)"),
    },
    "tf2onnx": {"opset": (17, "ONNX opset tf2onnx writes")},
    "optimize": {"level": ("extended", "onnxruntime graph optimisation level: basic, extended or all (all adds layout changes tied to this CPU)")},
    "quantize": {
        "per_channel": (None, "quantise weights per output channel (default: true for static, false for dynamic)"),
        "weight_type": ("int8", "int8 or uint8 weights"),
        "calibrate_method": ("minmax", "static: minmax, entropy or percentile"),
        "preprocess": (True, "run onnxruntime's quant_pre_process (shape inference, graph clean-up) first"),
        "reduce_range": (False, "7-bit weights (for CPUs without VNNI)"),
    },
    "tflite": {"float_fallback": (False, "int8 static: let ops without an int8 kernel stay float instead of failing")},
    "tflite2onnx": {"opset": (17, "ONNX opset tf2onnx writes")},
    "onnx2tf_tflite": {"slim": (False, "fold shape arithmetic with onnxslim before onnx2tf (off by default: it changed "
                                       "efficientnet-lite0's numbers; the check catches that)")},
    "onnx2tf_savedmodel": {"slim": (False, "fold shape arithmetic with onnxslim before onnx2tf (see onnx2tf_tflite)")},
    "trt": {},  # passed to build_plan as given
}
_LEVELS = ("basic", "extended", "all")


def plan(source_format: str | None, to: str, precision: str | None = None, quantization: str | None = None,
         options: dict | None = None, source: str = "the model") -> dict:
    """The conversion from source_format to ``to``: {"conversion", "steps", "label", "precision",
    "quantization", "options" (defaults filled in), "needs_dataset"}; CRError when unsupported."""
    if precision not in (None, "fp32", "int8"):
        raise CRError(f"unknown precision {precision!r}", hint="use fp32 or int8")
    if quantization not in (None, "dynamic", "static"):
        raise CRError(f"unknown quantization {quantization!r}", hint="use dynamic or static")
    if quantization and precision == "fp32":
        raise CRError(f"--quantization {quantization} makes an int8 model, but --precision fp32 was given",
                      hint="leave out --precision, or give --precision int8")
    precision = "int8" if quantization else (precision or "fp32")
    options = dict(options or {})
    if to not in READS or source_format not in READS[to]:  # no single conversion: a chain of hops (convgraph)
        return _chained(source_format, to, precision, quantization, options, source)
    if to == "trt-plan":
        if precision != "fp32":
            raise CRError("cr compile builds fp32 (or fp16) TensorRT plans only, not int8",
                          hint="give -O fp16=true for an fp16 plan, or quantise the ONNX model first (--to onnx --precision int8)")
        steps, label = ["trt"], ["trt"]
        out_precision = "fp16" if options.get("fp16") else "fp32"
        if out_precision == "fp16":
            label.append("fp16")
        return _planned("onnx-to-trt-plan", steps, label, out_precision, None, options, False)
    if to == "tflite":
        mode = quantization or "static"
        label = ["tflite"]
        if precision == "int8":  # static, the usual full-integer model, is not named
            label += ["int8"] + (["dynamic"] if mode == "dynamic" else [])
        conversion = f"{source_format}-to-tflite" + (f"-int8-{mode}" if precision == "int8" else "")
        return _planned(conversion, ["tflite"], label, precision, mode if precision == "int8" else None, options,
                        precision == "int8" and mode == "static")
    mode = quantization or "dynamic"
    steps = ["export"] if source_format in TORCH else ["tf2onnx"] if source_format == "tf-frozen-graph" else []
    dynamo = options.get("dynamo")
    if source_format == "torchscript" and dynamo:
        raise CRError("the torch.export-based exporter (-O dynamo=true) does not take TorchScript modules",
                      hint="leave out -O dynamo: TorchScript goes through the TorchScript exporter")
    if source_format == "torch-exported" and dynamo is not None and not dynamo:
        raise CRError("a torch-exported program goes to ONNX through the torch.export-based exporter only",
                      hint="leave out -O dynamo=false")
    if precision == "int8":
        steps.append("quantize")
        label = ["onnx", "int8", mode]
    elif steps:  # torch -> onnx
        label = ["onnx"]
    else:  # onnx -> onnx fp32: the level is named unless it is the default
        steps, level = ["optimize"], options.get("level", "extended")
        label = ["onnx", "opt"] + ([level] if level != "extended" else [])
    names = {"export": "torch-export", "tf2onnx": "tf2onnx", "optimize": "onnx-optimize", "quantize": f"onnx-quantize-{mode}"}
    conversion = "-".join(names[s] for s in steps)
    return _planned(conversion, steps, label, precision, mode if precision == "int8" else None, options,
                    precision == "int8" and mode == "static")


def _chained(source_format, to, precision, quantization, options, source) -> dict:
    """The plan of the shortest chain of hops from source_format to ``to`` (cr.runtime.actions.convgraph):
    every hop but the last writes fp32; "path" lists the hops. CRError naming the formats the source
    reaches when there is no chain."""
    chain = convgraph.route(source_format, to, precision)
    if chain is None:
        reach = convgraph.reachable(source_format)
        raise CRError(
            f"no conversion path from {source_format or 'an undeclared format'} to {to}"
            + (f" {precision}" if precision != "fp32" else "") + f" for {source}; from {source_format or 'it'} cr compile "
            f"reaches: {', '.join(reach) or 'nothing'}",
            hint="choose one of those with --to, or --variant naming a variant in another format (docs/conversions.md)",
        )
    last = chain[-1]
    mode = None
    if precision == "int8":
        mode = quantization or ("static" if last.step == "tflite" else "dynamic")
    steps = [hop.step for hop in chain]
    if source_format == "torch-state-dict" and "export" in steps and any(s.startswith("onnx2tf") for s in steps):
        # the torch.export-based exporter writes static pads where the TorchScript one computes them from
        # Shape ops at run time, which onnx2tf turns into Flex ops that LiteRT cannot run
        options.setdefault("dynamo", True)
    if to == "trt-plan":
        label = ["trt"] + (["fp16"] if options.get("fp16") else [])
    else:
        label = [to] + (["int8"] + ([mode] if to == "onnx" or mode == "dynamic" else []) if precision == "int8" else [])
    names = [hop.name for hop in chain]
    if mode:
        names[-1] += f"-int8-{mode}" if last.step == "tflite" else f"-{mode}"
    planned = _planned("-".join(names), steps, label, precision, mode, options, precision == "int8" and mode == "static")
    formats = [source_format] + [hop.writes for hop in chain]
    planned["path"] = [{"hop": hop.name, "from": formats[i], "to": hop.writes, "step": hop.step, "tool": hop.tool,
                        "software": list(hop.software)} for i, hop in enumerate(chain)]
    planned["software"] = list(convgraph.software(chain))
    return planned


def _planned(conversion, steps, label, precision, quantization, options, needs_dataset) -> dict:
    known = dict(COMMON)
    if precision == "int8":
        known.update(INT8)
    for step in steps:
        known.update(OPTIONS[step])
    if "trt" not in steps:
        unknown = sorted(set(options) - set(known))
        if unknown:
            listing = "; ".join(f"{k} ({v[1]})" for k, v in sorted(known.items()))
            raise CRError(f"{conversion} has no option {', '.join(unknown)}", hint=f"its options: {listing}")
    applied = {k: v[0] for k, v in known.items()}
    applied.update(options)
    if applied["expected_margin"] is None:
        applied["expected_margin"] = INT8_EXPECTED_MARGIN if precision == "int8" else 0.0
    for key, low, high in (("atol", 0.0, None), ("expected_margin", 0.0, None), ("min_top1_agreement", 0.0, 1.0)):
        if key in applied:
            value = applied[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or (high is not None and value > high):
                raise CRError(f"option {key} is {value!r}",
                              hint=f"give a number from {low:g}" + (f" to {high:g}" if high is not None else " up"))
    if "optimize" in steps and applied["level"] not in _LEVELS:
        raise CRError(f"option level is {applied['level']!r}", hint=f"use one of {', '.join(_LEVELS)}")
    if "quantize" in steps:
        if applied["per_channel"] is None:
            applied["per_channel"] = quantization == "static"
        if applied["weight_type"] not in ("int8", "uint8"):
            raise CRError(f"option weight_type is {applied['weight_type']!r}", hint="use int8 or uint8")
        if applied["calibrate_method"] not in ("minmax", "entropy", "percentile"):
            raise CRError(f"option calibrate_method is {applied['calibrate_method']!r}", hint="use minmax, entropy or percentile")
    return {"conversion": conversion, "steps": steps, "label": label, "precision": precision,
            "quantization": quantization, "options": applied, "needs_dataset": needs_dataset}


# ---------------------------------------------------------------------------- the child

def main(job: dict) -> dict:
    """Run the conversion; with params["hop"] = {"index", "count", "input"} only that hop of a chain
    (cr.run.compile runs each hop in its own environment): a hop before the last returns
    "intermediate" (its output's name in out_dir, the next hop's input) and leaves it there."""
    spec, params = job["model"], dict(job.get("params") or {})
    ref, meta = spec.get("ref", "the model"), dict(spec["meta"])
    the_plan = plan(meta.get("format"), params["to"], params.get("precision"), params.get("quantization"),
                    params.get("options"), ref)
    from .. import model as model_files

    located = model_files.locate(meta, spec.get("dir"), ref)
    work = _Work(job, meta, ref, located["path"], the_plan)
    hops = the_plan.get("path") or [{} for _ in the_plan["steps"]]
    one = params.get("hop")  # one hop of a chain, in its own environment
    indices = range(len(hops)) if one is None else [int(one["index"])]
    first, last = indices[0] == 0, indices[-1] == len(hops) - 1
    current = located["path"]
    if first:
        work.check_declared(located["path"])
    else:
        current, work.fmt = os.path.join(job["out_dir"], one["input"]), hops[indices[0]]["from"]
    if one is not None and first and len(hops) > 1:  # the source's outputs, for the last hop's end-to-end check
        work.save_reference(located["path"])
    path = []
    for index in indices:
        step, hop = the_plan["steps"][index], hops[index]
        clock, before = time.monotonic(), work.fmt
        progress.mark(step_phase(index, len(hops), step, before, hop))  # i/n of the whole path, also in a hop's own child
        try:
            current = getattr(work, "step_" + step)(current)
        except CRError:
            raise
        except Exception as exc:
            if not hop:  # a single conversion: the framework's failure is the record's error, with its traceback
                raise
            # a hop of a chain: name the hop (and the op, where the converter says)
            raise work.hop_failure(hop["hop"], exc) from exc
        work.fmt = convgraph.STEP_WRITES.get(step, work.fmt)
        path.append(work.hop_record(step, {"from": before, **hop}, round(time.monotonic() - clock, 3)))
    if not last:  # the next hop's child reads it from out_dir
        return {"path": path, "intermediate": os.path.relpath(current, job["out_dir"]), "options": work.options,
                "checks": work.checks, "failed_checks": work.failures, "tools": work.tools}
    final = os.path.join(job["out_dir"], job["out_file"])
    if os.path.abspath(current) != os.path.abspath(final):
        os.replace(current, final)
    quantization = _quantization(work, final) if the_plan["precision"] == "int8" else None
    reference = work.load_reference() if one is not None and len(hops) > 1 else None
    for leftover in os.listdir(job["out_dir"]):  # intermediates (pre-processed, exported, earlier hops') go
        if leftover != job["out_file"]:
            _remove(os.path.join(job["out_dir"], leftover))
    if len(hops) > 1:  # a chain: its output against the source itself, not only each hop against its input
        progress.mark("parity check")
        work.end_to_end(located["path"], final, reference)
    io = work.io(final)
    if params.get("counterpart"):
        progress.mark("counterpart check")
        work.compare_counterpart(final, params["counterpart"])
    if os.path.isdir(final):  # a SavedModel: the component's file is the saved_model.pb inside it
        file_in = os.path.join(job["out_file"], "saved_model.pb")
        produced = {"file": file_in, "dir": job["out_file"],
                    "bytes": sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(final) for f in fs),
                    "sha256": model_files.sha256(os.path.join(job["out_dir"], file_in))}
    else:
        produced = {"file": job["out_file"], "bytes": os.path.getsize(final), "sha256": model_files.sha256(final)}
    return {
        "output": {"format": params["to"], "precision": the_plan["precision"], **io, **produced},
        "path": path,
        "conversion": the_plan["conversion"],
        "steps": the_plan["steps"],
        "options": work.options,
        "checks": work.checks,
        "failed_checks": work.failures,
        "tools": work.tools,
        **({"quantization": quantization} if quantization is not None else {}),
    }


def step_phase(index: int, count: int, step: str, reads: str | None, hop: dict) -> str:
    """The progress phase of one step of the path: "step 2/3 onnx -> tflite (onnx2tf-tflite, onnx2tf)"
    (the hop and its tool; the step's check against its input is part of it)."""
    declared = next((h for h in convgraph.HOPS if h.step == step), None)
    name = hop.get("hop") or (declared.name if declared else step)
    tool = hop.get("tool") or (declared.tool if declared else "")
    writes = hop.get("to") or convgraph.STEP_WRITES.get(step, reads)
    return f"step {index + 1}/{count} {reads or '?'} -> {writes} ({name}" + (f", {tool})" if tool else ")")


def _quantization(work: _Work, path: str) -> dict:
    """The int8 output's cost against its float reference and its calibration's overlap with the
    samples validation judges (cr.runtime.quantcost; the host reports it: cr.run.quantreport)."""
    from .. import quantcost

    to = work.job["params"]["to"]
    specs = (work.onnx_specs(path) if to == "onnx" else work.tflite_specs(path))[0]
    batch = work.check_batch(specs, work._fixed_batch(specs) or 1)
    if work.quant_reference:
        report = quantcost.measure(to, work.quant_reference, path, batch)
        report["against"] = "its fp32 onnx" if to == "onnx" else "its fp32 tflite (same source, same converter)"
    else:
        report = {"against": None}
    report["source_bytes"] = os.path.getsize(work.source_path) if os.path.isfile(work.source_path) else None
    report["prepasses"] = work.prepasses
    ds, evaluation = work.job.get("dataset"), (work.job.get("params") or {}).get("evaluation")
    calibration = None
    if work.plan["quantization"] == "static" and work.calibration_raw:
        chosen = (work.job.get("params") or {}).get("calibration")
        calibration = {"dataset": ds.get("ref"), "split": ds.get("split") or "all", "samples": len(work.calibration_raw),
                       "chosen": f"--calibration {chosen}" if chosen else "default"}
        if evaluation:
            from ..datasets import load

            calibration["evaluation"] = {"dataset": evaluation.get("ref"), "split": evaluation.get("split") or "all"}
            try:
                judged = load(evaluation["meta"], evaluation.get("dir"), evaluation.get("split"), None, evaluation.get("ref"))
                calibration["evaluation"]["samples"] = len(judged.samples)
                calibration["overlap"] = quantcost.overlap(work.calibration_raw, judged.samples)["overlap"]
            except CRError as exc:
                calibration["evaluation"]["unavailable"] = exc.message
            except Exception as exc:  # a sample the content key cannot read: the report says so, the compile stands
                calibration["evaluation"]["unavailable"] = f"{type(exc).__name__}: {_first_line(exc)}"
    report["calibration"] = calibration
    return report


def _remove(path: str) -> None:
    import shutil

    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        os.unlink(path)


def _version(module: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(module)
    except metadata.PackageNotFoundError:
        mod = sys.modules.get(module)
        return getattr(mod, "__version__", None)


def _max_diff(a: list, b: list) -> float:
    import numpy as np

    if len(a) != len(b):
        raise CRError(f"the output has {len(b)} outputs where its source has {len(a)}")
    worst = 0.0
    for x, y in zip(a, b):
        if not (hasattr(x, "dtype") and hasattr(y, "dtype")) or x.dtype.kind not in "fiub":
            continue  # a non-tensor output (an ONNX ZipMap's list of dicts) is not compared
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            raise CRError(f"an output has shape {list(y.shape)} where its source's has {list(x.shape)}")
        if x.size:
            worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))))
    return worst


def _agreement(a: list, b: list) -> float | None:
    """Share of samples whose arg-max over the last axis of the first output agrees (classifier-like outputs)."""
    import numpy as np

    if not a or not b or not hasattr(a[0], "dtype") or not hasattr(b[0], "dtype"):
        return None
    x, y = np.asarray(a[0]), np.asarray(b[0])
    if x.ndim != 2 or x.shape != y.shape or x.shape[1] < 2:
        return None
    return float(np.mean(x.argmax(-1) == y.argmax(-1)))


def _concat(runs: list[list]) -> list:
    """The outputs of several batches, joined along the batch axis (a non-tensor output: the first batch's)."""
    import numpy as np

    if len(runs) == 1:
        return runs[0]
    out = []
    for parts in zip(*runs):
        if all(hasattr(p, "dtype") and getattr(p, "ndim", 0) >= 1 for p in parts):
            out.append(np.concatenate([np.asarray(p) for p in parts]))
        else:
            out.append(parts[0])
    return out


def _dim(value) -> int | None:
    """A dim as cr writes it: a positive int, or None when dynamic (None, a str, -1, 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _onnx_dim(d) -> int | None:
    """An ONNX TensorShapeProto dim: its dim_value when positive; a dim_param, no value or one <= 0 is dynamic."""
    return _dim(int(d.dim_value)) if d.HasField("dim_value") else None


_ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 5: "int16", 6: "int32", 7: "int64", 9: "bool", 10: "float16",
                11: "float64", 16: "bfloat16"}


class _Work:
    """The steps of one conversion, sharing the check batch, the options and what was recorded."""

    def __init__(self, job: dict, meta: dict, ref: str, source_path: str, the_plan: dict):
        self.job, self.meta, self.ref, self.source_path, self.plan = job, meta, ref, source_path, the_plan
        self.options = dict(the_plan["options"])
        self.atol = float(self.options["atol"])
        self.failures: list[dict] = []  # the checks below their thresholds (the host decides what that means)
        self.seed = int((job.get("params") or {}).get("seed", 0))
        self.out_dir = job["out_dir"]
        self.checks: dict = {}
        self.tools: dict = {"python": sys.version.split()[0]}
        self._samples = None
        self.fmt = meta.get("format")  # the format of the current hop's input
        self.calibration_raw: list = []  # the dataset's samples as loaded (their overlap with evaluation is measured)
        self.quant_reference: str | None = None  # the float model an int8 output is measured against
        self.prepasses: list[dict] = []  # {"step", "status": ran|skipped|off, "reason"} of each pre-pass

    # -- the chain of hops ---------------------------------------------------------------

    def hop_record(self, step: str, hop: dict, seconds: float) -> dict:
        """The path entry of one hop: what ran, with which tool and version, its check and its time."""
        from .convgraph import HOPS

        declared = next((h for h in HOPS if h.step == step), None)  # a single conversion's step: its hop
        name = hop.get("hop") or (declared.name if declared else step)
        tool = hop.get("tool") or (declared.tool if declared else "")
        check = self.checks.get(step) or {}
        entry = {"hop": name, "from": hop.get("from"), "to": self.fmt, "tool": tool, "version": self.tools.get(tool),
                 "seconds": seconds}
        for key in ("max_abs_diff", "top1_agreement", "samples", "passed"):
            if key in check:
                entry[key] = check[key]
        return entry

    def outputs(self, fmt: str, path: str, batch: dict) -> list:
        """The outputs of the model file at path (format fmt) on a batch (inputs in the meta's order)."""
        arrays = list(batch.values())
        if fmt == "onnx":
            session = self._ort(path)
            return session.run(None, {i.name: a for i, a in zip(session.get_inputs(), arrays)})
        if fmt == "tflite":
            return self._run_tflite(path, arrays)
        if fmt == "savedmodel":
            import tensorflow as tf

            folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
            fn = tf.saved_model.load(folder).signatures["serving_default"]
            names = sorted(fn.structured_input_signature[1])
            out = fn(**{n: tf.constant(a) for n, a in zip(names, arrays)})
            return [out[k].numpy() for k in sorted(out)]
        if fmt in TORCH:
            from ..backends.torch import TorchBackend

            backend = TorchBackend()
            backend.load(path, {**self.meta, "_dir": self.job["model"].get("dir")}, {})
            try:
                return backend.run({s["name"]: a for s, a in zip(backend.inputs(), arrays)})
            finally:
                backend.close()
        raise CRError(f"cr compile does not run {fmt} models to check them")

    # the end-to-end check of a chain whose hops run in separate children: the first saves the check
    # inputs and the source's outputs on them here, the last compares the final output with them
    REFERENCE = "end-to-end-reference.npz"

    def _e2e_batches(self, specs: list[dict]) -> list[dict]:
        fixed = self._fixed_batch(specs)
        return self.check_batches(specs, fixed) if self.plan["precision"] == "int8" else [self.check_batch(specs, fixed or 3)]

    def save_reference(self, source: str) -> None:
        """Save the end-to-end check's batches and the source's outputs on them (REFERENCE in out_dir)."""
        import numpy as np

        specs = [dict(s) for s in self.meta.get("inputs") or []]
        if not specs or self.job["params"]["to"] not in ("onnx", "tflite", "savedmodel"):
            return  # end_to_end says why it is not judged
        batches = self._e2e_batches(specs)
        want = _concat([self.outputs(self.fmt, source, b) for b in batches])
        arrays = {f"in.{b}.{n}": np.asarray(a) for b, batch in enumerate(batches) for n, a in enumerate(batch.values())}
        for k, out in enumerate(want):  # a non-tensor output (a ZipMap) is kept as an empty void array: not compared
            tensor = hasattr(out, "dtype") and out.dtype.kind in "fiub"
            arrays[f"out.{k}"] = np.asarray(out) if tensor else np.zeros(0, dtype="V1")
        np.savez(os.path.join(self.out_dir, self.REFERENCE), **arrays)

    def load_reference(self) -> tuple[list[dict], list] | None:
        """(batches, the source's outputs) saved by the first hop's child; None when it saved none."""
        import numpy as np

        file = os.path.join(self.out_dir, self.REFERENCE)
        if not os.path.isfile(file):
            return None
        names = [s["name"] for s in self.meta.get("inputs") or []]
        with np.load(file) as saved:
            keys = list(saved.keys())
            count = 1 + max(int(k.split(".")[1]) for k in keys if k.startswith("in."))
            batches = [{name: saved[f"in.{b}.{n}"] for n, name in enumerate(names)} for b in range(count)]
            want = [saved[f"out.{k}"] for k in range(sum(k.startswith("out.") for k in keys))]
        return batches, want

    def end_to_end(self, source: str, final: str, reference: tuple[list[dict], list] | None = None) -> None:
        """checks["end_to_end"]: a chain's output against its source on the same inputs, judged as a
        single conversion's output is (fp32: max |diff| within atol; int8: top-1 agreement).
        reference: the batches and the source's outputs saved by the first hop's child (the source's
        framework need not be here); else the source runs here."""
        fmt, to = self.meta.get("format"), self.job["params"]["to"]
        specs = [dict(s) for s in self.meta.get("inputs") or []]
        check = {"against": fmt}
        self.checks["end_to_end"] = check
        if not specs or to not in ("onnx", "tflite", "savedmodel"):
            check.update(passed=None, not_judged="the source declares no inputs" if not specs else f"{to} files are not run here")
            return
        if reference is not None:
            batches, want = reference
            check["reference"] = "saved by the first hop"
        else:
            batches = self._e2e_batches(specs)
            want = _concat([self.outputs(fmt, source, b) for b in batches])
        got = _concat([self.outputs(to, final, b) for b in batches])
        check.update(max_abs_diff=_max_diff(want, got), top1_agreement=_agreement(want, got),
                     samples=sum(len(next(iter(b.values()))) for b in batches))
        if self.plan["precision"] == "int8":
            self.judge_int8("end_to_end", check, "see each hop's check in the path; calibrate on more samples")
        else:
            self.judge_atol("end_to_end", check, "the chain's output", "see each hop's check in the path; raise -O atol "
                                                                       "if the difference is expected")

    def hop_failure(self, hop: str, exc: BaseException) -> CRError:
        """The CRError for a converter that raised: the hop, the tool's words, and the op it names."""
        import re

        text = f"{type(exc).__name__}: {_first_line(exc)}"
        found = re.search(r"onnx_op_type:\s*(\w+)|[Uu]nsupported ops?:?\s*Counter\(\{'(\w+)'|(Flex\w+)", str(exc) + " "
                          + getattr(self, "_converter_log", ""))
        op = next((g for g in (found.groups() if found else ()) if g), None)
        return CRError(f"hop {hop} failed converting {self.ref}" + (f" at op {op}" if op else "") + f": {text}",
                       hint="see docs/conversions.md (known failures) for this hop; try its options (-O), or convert "
                            "from another variant (--variant)")

    def check_declared(self, path: str) -> None:
        """CRError when the meta's declared input or output shapes contradict the source file (ONNX, TFLite)."""
        try:
            if self.fmt == "onnx":
                found = self.onnx_specs(path)
            elif self.fmt == "tflite":
                found = self.tflite_specs(path)
            else:
                return
        except Exception:  # an unreadable file: the hop that reads it fails, naming itself
            return
        for kind, specs, declared in (("input", found[0], self.meta.get("inputs")), ("output", found[1], self.meta.get("outputs"))):
            if not declared or len(declared) != len(specs):
                continue
            for f, d in zip(specs, declared):
                _carried_shape(f.get("shape"), d.get("shape"), f"{self.ref}: {kind} {d.get('name')!r}")

    # -- thresholds --------------------------------------------------------------------

    def judge_atol(self, step: str, check: dict, what: str, hint: str) -> None:
        """check["passed"]: max_abs_diff within atol; a failure is recorded, not raised."""
        worst = check["max_abs_diff"]
        check["atol"] = self.atol
        check["passed"] = worst <= self.atol
        if not check["passed"]:
            self.failures.append({
                "check": step, "metric": "max_abs_diff", "value": worst, "threshold": self.atol, "option": "atol",
                "samples": check.get("samples"),
                "message": f"{what} differs from its source by up to {worst:.3g} on the check inputs, above atol {self.atol:g}",
                "hint": hint,
            })

    def judge_int8(self, step: str, check: dict, hint: str) -> None:
        """check["passed"]: top-1 agreement at least min_top1_agreement (None: outputs that are
        not [N, classes] scores cannot be judged so); a failure is recorded, not raised."""
        least = float(self.options["min_top1_agreement"])
        agreement = check.get("top1_agreement")
        check["min_top1_agreement"] = least
        if agreement is None:
            check["passed"] = None
            check["not_judged"] = "the first output is not [N, classes] scores, so top-1 agreement is not measured"
            return
        check["passed"] = agreement >= least - 1e-12
        if not check["passed"]:
            samples = check.get("samples")
            self.failures.append({
                "check": step, "metric": "top1_agreement", "value": agreement, "threshold": least,
                "option": "min_top1_agreement", "samples": samples,
                "message": f"the int8 model's top-1 agrees with its source's on {agreement:.3f} of {samples} check samples, "
                           f"below min_top1_agreement {least:g}",
                "hint": hint,
            })

    # -- inputs ------------------------------------------------------------------------

    def samples(self) -> list | None:
        """The dataset's calibration samples, pre-processed one by one (None without a dataset)."""
        if self._samples is None and self.job.get("dataset"):
            from ..datasets import load
            from ..pipeline import Pipeline

            ds_spec = self.job["dataset"]
            try:
                ds = load(ds_spec["meta"], ds_spec.get("dir"), ds_spec.get("split"), ds_spec.get("limit"), ds_spec.get("ref"))
                pipeline = Pipeline(self.meta.get("preprocess"), "preprocess")
                self._samples = [pipeline.sample(s.data) for s in ds.samples]
                self.calibration_raw = list(ds.samples)
            except CRError as exc:
                if not ds_spec.get("optional"):
                    raise
                # only the checks wanted it: they fall back to synthetic inputs
                self.checks["dataset"] = {"ref": ds_spec.get("ref"), "unavailable": exc.message}
                self._samples = []
                return None
            self.checks["dataset"] = {"ref": ds_spec.get("ref"), "split": ds.split, "samples": len(self._samples)}
        return self._samples or None

    def misfit(self, spec: dict, strict: bool = True) -> str | None:
        """Why the pre-processed samples cannot feed input ``spec`` (None: they can); strict raises instead."""
        samples = self.samples() or []
        shape = spec.get("shape")
        if not samples or shape is None:
            return None
        got = list(samples[0].shape)
        want = shape[1:]
        if len(got) == len(want) and all(_dim(w) is None or w == g for w, g in zip(want, got)):
            return None
        why = f"the dataset's samples, pre-processed, have shape {got}; input {spec['name']!r} takes {['N', *want]}"
        if strict:
            raise CRError(why, hint="check the model meta's preprocess (it must produce one sample of the input's shape)")
        self.checks["inputs_note"] = why + " (so the checks use synthetic inputs)"
        return why

    def _dataset_fits(self, specs: list[dict]) -> bool:
        return bool(self.samples()) and len(specs) == 1 and not self.misfit(specs[0], strict=False)

    def check_batches(self, specs: list[dict], fixed: int | None = None) -> list[dict]:
        """The batches an int8 output is judged on: up to INT8_CHECK_SAMPLES dataset samples (all
        the job has), else SYNTHETIC_CHECK_SAMPLES synthetic ones, in batches of the model's fixed
        batch size (whole batches, at least one) or of 16."""
        want = min(len(self.samples()), INT8_CHECK_SAMPLES) if self._dataset_fits(specs) else SYNTHETIC_CHECK_SAMPLES
        size = fixed or 16
        count = max(1, -(-want // size)) if not fixed else max(1, want // size)
        total = want if not fixed else count * size
        return [self.check_batch(specs, min(size, total - i * size), start=i * size) for i in range(count)]

    def check_batch(self, specs: list[dict], size: int, start: int = 0) -> dict:
        """A batch of ``size`` samples for every input: dataset samples when there are some, else synthetic
        (start: the batch's first sample, so that batches of one check differ)."""
        import numpy as np

        if size < 1:
            raise CRError(f"a check batch of {size} samples was asked for {self.ref}", hint="this is a bug in cr compile; please report it")
        self.tools["numpy"] = np.__version__
        samples = self.samples()
        if self._dataset_fits(specs):
            items = [samples[(start + i) % len(samples)] for i in range(size)]
            self.checks.setdefault("inputs", "dataset")
            return {specs[0]["name"]: np.ascontiguousarray(np.stack(items)).astype(specs[0].get("dtype") or "float32", copy=False)}
        self.checks.setdefault("inputs", f"synthetic (seed {self.seed})")
        rng = np.random.default_rng(self.seed if not start else [self.seed, start])
        batch = {}
        for spec in specs:
            shape = spec.get("shape")
            if shape is None:
                raise CRError(f"{self.ref} declares no shape for input {spec['name']!r}, so no check batch can be made",
                              hint="add its shape to the model meta's inputs ([null, ...] for a dynamic batch)")
            dims = [size] + [_dim(d) or 16 for d in shape[1:]]  # 16: a dynamic dim
            dtype = np.dtype(spec.get("dtype") or "float32")
            if dtype.kind == "f":
                batch[spec["name"]] = rng.standard_normal(dims).astype(dtype)
            elif dtype.kind == "b":
                batch[spec["name"]] = rng.integers(0, 2, dims).astype(dtype)
            else:
                batch[spec["name"]] = rng.integers(0, 10, dims).astype(dtype)
        return batch

    # -- onnx helpers ------------------------------------------------------------------

    def _ort(self, path: str):
        import onnxruntime as ort

        self.tools["onnxruntime"] = ort.__version__
        so = ort.SessionOptions()
        so.log_severity_level = 3
        return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])

    def onnx_specs(self, path: str) -> tuple[list[dict], list[dict]]:
        import onnx

        self.tools["onnx"] = onnx.__version__
        graph = onnx.load(path, load_external_data=False).graph
        initializers = {i.name for i in graph.initializer}

        def spec(value):
            if not value.type.HasField("tensor_type"):  # a sequence or map (ZipMap): no tensor spec to give
                return {"name": value.name, "shape": None, "dtype": None}
            t = value.type.tensor_type
            dims = [_onnx_dim(d) for d in t.shape.dim] if t.HasField("shape") else None
            return {"name": value.name, "shape": dims, "dtype": _ONNX_DTYPES.get(t.elem_type, "float32")}

        return [spec(v) for v in graph.input if v.name not in initializers], [spec(v) for v in graph.output]

    def run_onnx(self, path: str, batch: dict | list) -> list:
        """The outputs of the model at path on a batch (a list of batches: their outputs joined)."""
        session = self._ort(path)
        batches = batch if isinstance(batch, list) else [batch]
        return _concat([session.run(None, {i.name: b[i.name] for i in session.get_inputs()}) for b in batches])

    # -- torch -> onnx -----------------------------------------------------------------

    def step_export(self, source: str) -> str:
        import torch

        from ..backends.torch import TorchBackend

        self.tools["torch"] = torch.__version__
        torch.manual_seed(self.seed)
        fmt = self.meta.get("format")
        backend = TorchBackend()
        backend.load(source, {**self.meta, "_dir": self.job["model"].get("dir")}, {})
        specs = backend.inputs()
        traced_batch, check_sizes = 2, (1, 3)
        example = self.check_batch(specs, traced_batch)
        reference = backend.run(example)
        input_names = [s["name"] for s in specs]
        declared = [t["name"] for t in self.meta.get("outputs") or []]
        output_names = declared if len(declared) == len(reference) else (
            ["output"] if len(reference) == 1 else [f"output_{i}" for i in range(len(reference))])
        args = tuple(torch.from_numpy(example[n]) for n in input_names)
        dynamo = self.options["dynamo"]
        dynamo = fmt == "torch-exported" if dynamo is None else bool(dynamo)
        self.options["dynamo"] = dynamo
        opset = int(self.options["opset"])
        out = os.path.join(self.out_dir, "exported.onnx")
        axes = {n: {0: "N"} for n in input_names + output_names}
        if fmt == "torch-exported":
            program = torch.export.load(source)
            self.tools["onnxscript"] = _version("onnxscript")
            torch.onnx.export(program, args, out, dynamo=True, opset_version=opset,
                              input_names=input_names, output_names=output_names, external_data=False)
        elif dynamo:
            self.tools["onnxscript"] = _version("onnxscript")
            batch = torch.export.Dim("N")
            torch.onnx.export(backend.model, args, out, dynamo=True, opset_version=opset, input_names=input_names,
                              output_names=output_names, dynamic_shapes=tuple({0: batch} for _ in args), external_data=False)
        else:
            import warnings

            with warnings.catch_warnings():  # the TorchScript exporter's deprecation notice is not the user's problem
                warnings.simplefilter("ignore")
                torch.onnx.export(backend.model, args, out, dynamo=False, opset_version=opset, input_names=input_names,
                                  output_names=output_names, dynamic_axes=axes)
        inputs, outputs = self.onnx_specs(out)
        fixed = [t["name"] for t in inputs + outputs if not t["shape"] or t["shape"][0] is not None]
        if fixed:
            raise CRError(
                f"the exported ONNX graph of {self.ref} has a fixed batch on {', '.join(fixed)}",
                hint=("export the program with dynamic_shapes={0: torch.export.Dim('N')} on its inputs" if fmt == "torch-exported"
                      else "the model's forward() fixes the batch (e.g. x.view(2, -1)): use x.flatten(1), or try -O dynamo=true"),
            )
        diffs = {}
        for size in check_sizes:
            batch = self.check_batch(specs, size)
            want = backend.run(batch)
            try:
                got = self.run_onnx(out, batch)
            except Exception as exc:
                raise CRError(f"the exported ONNX graph of {self.ref} fails on a batch of {size}: {_first_line(exc)}",
                              hint="the model's forward() probably depends on the batch size it was traced with; try -O dynamo=true") from exc
            diffs[str(size)] = _max_diff(want, got)
        backend.close()
        worst = max(diffs.values())
        check = {"against": "torch", "max_abs_diff": worst, "per_batch_size": diffs, "samples": sum(check_sizes),
                 "opset": opset, "exporter": "dynamo" if dynamo else "torchscript"}
        self.checks["export"] = check
        self.judge_atol("export", check, "the exported ONNX model",
                        "some operator is exported inexactly; try -O dynamo=true or another -O opset, or raise -O atol")
        return out

    # -- tf-frozen-graph -> onnx -----------------------------------------------------------

    def step_tf2onnx(self, source: str) -> str:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf

        tf2onnx = _tf2onnx("converting a frozen TensorFlow graph to ONNX")
        from ..backends.tf_graph import load_frozen_graph, read_graph_def, tensor_name

        self.tools.update(tensorflow=tf.__version__, tf2onnx=tf2onnx.__version__)
        call, specs, _outs, _feed = load_frozen_graph(tf, source, self.meta)
        inputs = [tensor_name(t["name"]) for t in self.meta.get("inputs") or []]
        outputs = [tensor_name(t["name"]) for t in self.meta.get("outputs") or []]
        out = os.path.join(self.out_dir, "exported.onnx")
        opset = int(self.options["opset"])
        try:
            tf2onnx.convert.from_graph_def(read_graph_def(tf, source), input_names=inputs, output_names=outputs,
                                           opset=opset, output_path=out)
        except Exception as exc:
            raise CRError(f"tf2onnx cannot convert {self.ref}: {type(exc).__name__}: {_first_line(exc)}",
                          hint="try another -O opset, or cut the graph at other tensors (a backbone variant)") from None
        declared = self.meta.get("inputs") or []
        fixed = _dim((declared[0].get("shape") or [None])[0]) if declared else None
        check_specs = [{**s, "shape": d.get("shape") or s.get("shape")} for s, d in zip(specs, declared)]
        batch = self.check_batch(check_specs, fixed or 2)
        want = [o.numpy() for o in call(batch)]
        got = self.run_onnx(out, {tensor_name(n): batch[n] for n in batch})
        check = {"against": "tf-frozen-graph", "max_abs_diff": _max_diff(want, got), "samples": fixed or 2, "opset": opset}
        self.checks["tf2onnx"] = check
        self.judge_atol("tf2onnx", check, "the converted ONNX model", "try another -O opset, or raise -O atol")
        return out

    # -- onnx -> onnx --------------------------------------------------------------------

    def step_optimize(self, source: str) -> str:
        import onnxruntime as ort

        out = os.path.join(self.out_dir, "optimized.onnx")
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = {
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }[self.options["level"]]
        so.optimized_model_filepath = out
        ort.InferenceSession(source, sess_options=so, providers=["CPUExecutionProvider"])
        self.tools["onnxruntime"] = ort.__version__
        inputs, _ = self.onnx_specs(source)
        size = self._check_size(inputs)
        batch = self.check_batch(inputs, size)
        worst = _max_diff(self.run_onnx(source, batch), self.run_onnx(out, batch))
        check = {"against": "the source onnx", "max_abs_diff": worst, "samples": size, "level": self.options["level"]}
        self.checks["optimize"] = check
        self.judge_atol("optimize", check, "the optimised model", "try a lower -O level (basic), or raise -O atol")
        return out

    @staticmethod
    def _fixed_batch(specs: list[dict]) -> int | None:
        """The batch size every input fixes (None: dynamic, or inputs that disagree)."""
        fixed = {_dim(s["shape"][0]) for s in specs if s.get("shape")}
        fixed.discard(None)
        return fixed.pop() if len(fixed) == 1 else None

    def _check_size(self, specs: list[dict]) -> int:
        return self._fixed_batch(specs) or 4

    def step_quantize(self, source: str) -> str:
        import numpy as np
        from onnxruntime import quantization as q

        o, mode = self.options, self.plan["quantization"]
        inputs, _ = self.onnx_specs(source)
        if o["preprocess"]:
            pre = os.path.join(self.out_dir, "preprocessed.onnx")
            try:
                from onnxruntime.quantization.shape_inference import quant_pre_process

                quant_pre_process(source, pre, skip_symbolic_shape=False)
                self.checks["preprocess"] = "quant_pre_process"
                self.prepasses.append({"step": "quant_pre_process", "status": "ran"})
                self.tools["sympy"] = _version("sympy")
                to_quantize = pre
            except Exception as exc:  # e.g. symbolic shape inference cannot follow an op: quantise as it is
                from ..quantcost import skip_reason

                self.checks["preprocess"] = f"skipped: {type(exc).__name__}: {_first_line(exc)}"
                self.prepasses.append({"step": "quant_pre_process", "status": "skipped", "reason": skip_reason(exc)})
                to_quantize = source
        else:
            self.checks["preprocess"] = "skipped (option preprocess=false)"
            self.prepasses.append({"step": "quant_pre_process", "status": "off", "reason": "-O preprocess=false"})
            to_quantize = source
        self.quant_reference = source
        out = os.path.join(self.out_dir, "quantized.onnx")
        weight = q.QuantType.QInt8 if o["weight_type"] == "int8" else q.QuantType.QUInt8
        if mode == "dynamic":
            q.quantize_dynamic(to_quantize, out, weight_type=weight, per_channel=bool(o["per_channel"]),
                               reduce_range=bool(o["reduce_range"]))
        else:
            samples = self.samples()
            if not samples:
                raise CRError("static int8 quantisation needs calibration samples", hint="give --dataset REF")
            if len(inputs) != 1:
                raise CRError(f"{self.ref} has {len(inputs)} inputs; static quantisation calibrates models with one input "
                              "from dataset samples", hint="use --quantization dynamic")
            self.misfit(inputs[0])
            name, dtype = inputs[0]["name"], inputs[0]["dtype"]
            size = self._check_size(inputs) if self._fixed_batch(inputs) else 1
            if len(samples) < size:
                raise CRError(f"{self.ref} takes a fixed batch of {size}; {len(samples)} calibration samples do not fill one",
                              hint=f"give --calibration-samples {size} or more")
            groups = [np.stack(samples[i:i + size]).astype(dtype, copy=False) for i in range(0, len(samples) - size + 1, size)]

            class Reader(q.CalibrationDataReader):
                def __init__(self):
                    self._items = iter([{name: group} for group in groups])

                def get_next(self):
                    return next(self._items, None)

            method = {"minmax": q.CalibrationMethod.MinMax, "entropy": q.CalibrationMethod.Entropy,
                      "percentile": q.CalibrationMethod.Percentile}[o["calibrate_method"]]
            q.quantize_static(to_quantize, out, Reader(), quant_format=q.QuantFormat.QDQ, per_channel=bool(o["per_channel"]),
                              activation_type=q.QuantType.QInt8, weight_type=weight, calibrate_method=method,
                              reduce_range=bool(o["reduce_range"]))
            self.checks["calibration"] = {"samples": len(samples), "method": o["calibrate_method"]}
        import onnx

        ops = sorted({n.op_type for n in onnx.load(out, load_external_data=False).graph.node})
        quantized_ops = [op for op in ops if op in ("QuantizeLinear", "DynamicQuantizeLinear", "ConvInteger", "MatMulInteger",
                                                    "QLinearConv", "QLinearMatMul")]
        if not quantized_ops:
            raise CRError(f"onnxruntime quantised nothing in {self.ref} (its ops: {', '.join(ops)})",
                          hint="dynamic quantisation covers MatMul/Gemm/Conv/LSTM/Attention; try --quantization static")
        batches = self.check_batches(inputs, self._fixed_batch(inputs))
        want, got = self.run_onnx(source, batches), self.run_onnx(out, batches)
        check = {"against": "the fp32 onnx", "max_abs_diff": _max_diff(want, got), "top1_agreement": _agreement(want, got),
                 "samples": sum(len(next(iter(b.values()))) for b in batches), "quantized_ops": quantized_ops,
                 "source_bytes": os.path.getsize(source), "bytes": os.path.getsize(out)}
        self.checks["quantize"] = check
        self.judge_int8("quantize", check,
                        "calibrate on more or more typical samples (--calibration-samples, --dataset), try -O per_channel="
                        f"{'false' if o['per_channel'] else 'true'} or -O calibrate_method=entropy"
                        + (" or --quantization dynamic" if mode == "static" else " or --quantization static"))
        return out

    # -- keras / savedmodel -> tflite -----------------------------------------------------

    def step_tflite(self, source: str) -> str:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        import tensorflow as tf

        self.tools["tensorflow"] = tf.__version__
        fmt = self.fmt
        fixed = None  # a frozen graph converts at a fixed batch
        if fmt == "keras":
            import keras

            self.tools["keras"] = keras.__version__
            model = keras.models.load_model(source, compile=False)
            converter = tf.lite.TFLiteConverter.from_keras_model(model)
            in_specs = [{"name": t.name, "shape": [None, *[_dim(d) for d in t.shape[1:]]], "dtype": str(t.dtype).replace("tf.", "")}
                        for t in model.inputs]

            def reference(batch):
                out = model([batch[s["name"]] for s in in_specs] if len(in_specs) > 1 else batch[in_specs[0]["name"]], training=False)
                return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else out.values() if isinstance(out, dict) else [out])]
        elif fmt == "tf-frozen-graph":
            converter, in_specs, reference, fixed = self._frozen_graph_converter(tf, source)
        else:
            folder = source if os.path.isdir(source) else os.path.dirname(os.path.abspath(source))
            converter = tf.lite.TFLiteConverter.from_saved_model(folder)
            fn = tf.saved_model.load(folder).signatures["serving_default"]
            kwargs = fn.structured_input_signature[1]
            in_specs = [{"name": n, "shape": [None, *[_dim(d) for d in kwargs[n].shape.as_list()[1:]]], "dtype": kwargs[n].dtype.name}
                        for n in sorted(kwargs)]

            def reference(batch):
                out = fn(**{s["name"]: tf.constant(batch[s["name"]]) for s in in_specs})
                return [out[k].numpy() for k in sorted(out)]
        precision, mode = self.plan["precision"], self.plan["quantization"]
        if precision == "int8":  # its fp32 conversion is what the int8 output's size and speed are measured against
            self.quant_reference = os.path.join(self.out_dir, "reference.tflite")
            with open(self.quant_reference, "wb") as f:
                f.write(converter.convert())
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            if mode == "static":
                samples = self.samples()
                if not samples:
                    raise CRError("static int8 quantisation needs calibration samples", hint="give --dataset REF")
                if len(in_specs) != 1:
                    raise CRError(f"{self.ref} has {len(in_specs)} inputs; static quantisation calibrates models with one input",
                                  hint="use --quantization dynamic")
                self.misfit(in_specs[0])
                dtype = in_specs[0]["dtype"]

                def representative():
                    for s in samples:
                        yield [s[None].astype(dtype, copy=False)]

                converter.representative_dataset = representative
                ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
                if self.options["float_fallback"]:
                    ops.append(tf.lite.OpsSet.TFLITE_BUILTINS)
                converter.target_spec.supported_ops = ops
                self.checks["calibration"] = {"samples": len(samples)}
            # input and output stay float32: quantise/dequantise happen inside the model
        out = os.path.join(self.out_dir, "converted.tflite")
        with open(out, "wb") as f:
            f.write(converter.convert())
        batches = self.check_batches(in_specs, fixed) if precision == "int8" else [self.check_batch(in_specs, fixed or 3)]
        want = _concat([reference(b) for b in batches])
        got = _concat([self._run_tflite(out, [b[s["name"]] for s in in_specs]) for b in batches])
        worst = _max_diff(want, got)
        check = {"against": fmt, "max_abs_diff": worst, "samples": sum(len(next(iter(b.values()))) for b in batches)}
        self.checks["tflite"] = check
        if precision == "int8":
            tensor_types = self._tflite_tensor_types(out)
            check.update(top1_agreement=_agreement(want, got), tensor_dtypes=tensor_types)
            if "int8" not in tensor_types:
                raise CRError(f"the int8 conversion of {self.ref} produced no int8 tensors",
                              hint="dynamic-range quantisation leaves weights under 1024 elements float; try --quantization static"
                              if mode == "dynamic" else "the converter kept the model float; try -O float_fallback=true")
            self.judge_int8("tflite", check,
                            "calibrate on more or more typical samples (--calibration-samples, --dataset)"
                            + (", or try --quantization dynamic" if mode == "static" else ", or try --quantization static"))
        else:
            self.judge_atol("tflite", check, "the tflite model", "raise -O atol")
        return out

    def _frozen_graph_converter(self, tf, source: str):
        """(converter, input specs, reference(batch) -> outputs, fixed batch) for the meta's cut of
        a frozen GraphDef. The v1 converter reads the GraphDef itself (no session is made); the
        reference runs the same cut through cr.runtime.backends.tf_graph."""
        from ..backends.tf_graph import load_frozen_graph, tensor_name

        call, specs, _outs, _feed = load_frozen_graph(tf, source, self.meta)
        declared = self.meta.get("inputs") or []
        shapes = {}
        for spec, meta_spec in zip(specs, declared):
            shape = meta_spec.get("shape") or spec.get("shape")
            if not shape or any(_dim(d) is None for d in shape[1:]):
                raise CRError(f"{self.ref}: input {spec['name']!r} needs a fixed shape for the TFLite converter (found {shape})",
                              hint="give the input's full shape in the model meta, e.g. [1, 300, 300, 3]")
            shapes[tensor_name(spec["name"]).split(":")[0]] = [_dim(shape[0]) or 1, *shape[1:]]
        fixed = next(iter(shapes.values()))[0]
        outputs = [tensor_name(o["name"]).split(":")[0] for o in self.meta.get("outputs") or []]
        converter = tf.compat.v1.lite.TFLiteConverter.from_frozen_graph(source, list(shapes), outputs, shapes)
        in_specs = [{"name": s["name"], "shape": [None, *shapes[n][1:]], "dtype": s["dtype"]} for s, n in zip(specs, shapes)]

        def reference(batch):
            return [o.numpy() for o in call(batch)]

        return converter, in_specs, reference, fixed

    def _interpreter(self, path: str):
        try:
            import ai_edge_litert
            from ai_edge_litert.interpreter import Interpreter

            self.tools["ai-edge-litert"] = getattr(ai_edge_litert, "__version__", None) or _version("ai-edge-litert")
        except ImportError:
            import tensorflow as tf

            Interpreter = tf.lite.Interpreter
        return Interpreter(model_path=path)

    def _run_tflite(self, path: str, arrays: list) -> list:
        interp = self._interpreter(path)
        details = interp.get_input_details()
        for d, x in zip(details, arrays):
            interp.resize_tensor_input(d["index"], list(x.shape))
        interp.allocate_tensors()
        for d, x in zip(details, arrays):
            interp.set_tensor(d["index"], x)
        interp.invoke()
        return [interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()]

    def _tflite_tensor_types(self, path: str) -> list[str]:
        import numpy as np

        return sorted({np.dtype(d["dtype"]).name for d in self._interpreter(path).get_tensor_details()})

    def tflite_specs(self, path: str) -> tuple[list[dict], list[dict]]:
        import numpy as np

        interp = self._interpreter(path)

        def spec(d):  # shape_signature writes a dynamic dim as -1
            sig = d.get("shape_signature")
            shape = [int(x) for x in (sig if sig is not None and len(sig) else d["shape"])]
            return {"name": d["name"], "shape": [_dim(x) for x in shape], "dtype": np.dtype(d["dtype"]).name}

        return [spec(d) for d in interp.get_input_details()], [spec(d) for d in interp.get_output_details()]

    # -- tflite -> onnx (tf2onnx) ------------------------------------------------------------

    def step_tflite2onnx(self, source: str) -> str:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        tf2onnx = _tf2onnx("converting TFLite to ONNX")
        self.tools["tf2onnx"] = tf2onnx.__version__
        out = os.path.join(self.out_dir, "from-tflite.onnx")
        opset = int(self.options["opset"])
        try:
            tf2onnx.convert.from_tflite(source, opset=opset, output_path=out)
        except Exception as exc:
            raise self.hop_failure("tflite-to-onnx", exc) from None
        specs, _ = self.tflite_specs(source)
        declared = self.meta.get("inputs") or []
        specs = [{**s, "shape": _carried_shape(s.get("shape"), d.get("shape"), self.ref)} for s, d in zip(specs, declared)] \
            if len(declared) == len(specs) else specs
        batch = self.check_batch(specs, self._fixed_batch(specs) or 3)
        want = self._run_tflite(source, [batch[s["name"]] for s in specs])
        onnx_in, _ = self.onnx_specs(out)
        got = self.run_onnx(out, {o["name"]: batch[s["name"]] for o, s in zip(onnx_in, specs)})
        check = {"against": "tflite", "max_abs_diff": _max_diff(want, got), "samples": len(next(iter(batch.values()))),
                 "opset": opset}
        self.checks["tflite2onnx"] = check
        self.judge_atol("tflite2onnx", check, "the converted ONNX model", "try another -O opset, or raise -O atol")
        return out

    # -- onnx -> tflite / savedmodel (onnx2tf) -------------------------------------------------

    def step_onnx2tf_tflite(self, source: str) -> str:
        folder = self._onnx2tf(source, "onnx2tf_tflite")
        found = [f for f in os.listdir(folder) if f.endswith("_float32.tflite")]
        if not found:
            raise CRError(f"onnx2tf wrote no float32 TFLite file for {self.ref} (it wrote {', '.join(sorted(os.listdir(folder)))})",
                          hint="see docs/conversions.md (known failures)")
        out = os.path.join(self.out_dir, "onnx2tf.tflite")
        os.replace(os.path.join(folder, found[0]), out)
        specs, _ = self.onnx_specs(source)
        batch = self.check_batch(specs, self._fixed_batch(specs) or 3)
        want = self.run_onnx(source, batch)
        try:
            got = self._run_tflite(out, [batch[s["name"]] for s in specs])
        except Exception as exc:  # e.g. a Select TF (Flex) op that LiteRT's builtin interpreter lacks
            raise self.hop_failure("onnx2tf-tflite", exc) from None
        self._judge_hop("onnx2tf_tflite", want, got, len(next(iter(batch.values()))), "the TFLite model")
        return out

    def step_onnx2tf_savedmodel(self, source: str) -> str:
        folder = self._onnx2tf(source, "onnx2tf_savedmodel")
        import tensorflow as tf

        fn = tf.saved_model.load(folder).signatures["serving_default"]
        kwargs = fn.structured_input_signature[1]
        specs, _ = self.onnx_specs(source)
        batch = self.check_batch(specs, self._fixed_batch(specs) or 3)
        want = self.run_onnx(source, batch)
        names = sorted(kwargs)
        out = fn(**{n: tf.constant(batch[s["name"]]) for n, s in zip(names, specs)})
        got = [out[k].numpy() for k in sorted(out)]
        self._judge_hop("onnx2tf_savedmodel", want, got, len(next(iter(batch.values()))), "the SavedModel")
        for name in os.listdir(folder):  # onnx2tf writes its TFLite files beside the SavedModel: not part of it
            if name.endswith(".tflite"):
                os.unlink(os.path.join(folder, name))
        return folder

    def _judge_hop(self, step: str, want: list, got: list, samples: int, what: str) -> None:
        check = {"against": self.fmt, "max_abs_diff": _max_diff(want, got), "samples": samples, "top1_agreement": _agreement(want, got)}
        self.checks[step] = check
        self.judge_atol(step, check, what, "raise -O atol if the difference is expected, or try -O slim=false")

    def _onnx2tf(self, source: str, step: str) -> str:
        """onnx2tf's output folder (SavedModel + float32 TFLite) for an ONNX file: onnxslim first folds
        the shape arithmetic (a Pad computed from Shape ops otherwise becomes a Flex op), the input
        layout stays the source's (NCHW stays NCHW, so the meta's preprocess still fits)."""
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import contextlib
        import io

        try:
            import onnx2tf
        except ImportError as exc:
            raise CRError(f"converting ONNX to TensorFlow needs onnx2tf, which cannot be imported here ({exc})",
                          hint="cr install software onnx2tf (see recipes/onnx2tf)") from None
        import onnx

        self.tools.update(onnx2tf=_version("onnx2tf"), onnx=onnx.__version__)
        if self.options.get("slim"):
            import onnxslim

            self.tools["onnxslim"] = _version("onnxslim")
            slim = os.path.join(self.out_dir, "slim.onnx")
            onnx.save(onnxslim.slim(source), slim)
            source_for_tf = slim
        else:  # onnx2tf writes back into the file it is given: it gets a copy, never the source
            import shutil

            source_for_tf = os.path.join(self.out_dir, "for-onnx2tf.onnx")
            shutil.copyfile(source, source_for_tf)
        inputs, _ = self.onnx_specs(source_for_tf)
        folder = os.path.join(self.out_dir, "onnx2tf")
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                onnx2tf.convert(input_onnx_file_path=source_for_tf, output_folder_path=folder, non_verbose=True,
                                output_signaturedefs=True,
                                keep_ncw_or_nchw_or_ncdhw_input_names=[s["name"] for s in inputs if len(s.get("shape") or []) in (3, 4, 5)])
        except BaseException as exc:  # onnx2tf exits (SystemExit) on some failures
            self._converter_log = log.getvalue()[-4000:]
            raise self.hop_failure("onnx2tf-tflite" if step == "onnx2tf_tflite" else "onnx2tf-savedmodel",
                                   exc if isinstance(exc, Exception) else RuntimeError(f"onnx2tf exited ({exc})")) from None
        return folder

    # -- onnx -> TensorRT plan ---------------------------------------------------------------

    def step_trt(self, source: str) -> str:
        if not _has_nvidia_gpu():
            raise CRError("compiling to trt-plan needs an NVIDIA GPU and tensorrt; this machine has no NVIDIA GPU",
                          hint="run cr compile --to trt-plan on the machine (GPU, TensorRT version) that will run the plan")
        try:
            from ..backends.tensorrt import build_plan
        except ImportError as exc:
            raise CRError(f"compiling to trt-plan needs an NVIDIA GPU and tensorrt; tensorrt cannot be imported here ({exc})",
                          hint="install TensorRT (cr install software tensorrt, or pip install tensorrt) on this GPU host") from None
        out = os.path.join(self.out_dir, "model.plan")
        options = {k: v for k, v in self.options.items() if k not in COMMON}
        info = build_plan(source, out, options)
        self.tools["tensorrt"] = _version("tensorrt")
        self.checks["trt"] = info if isinstance(info, dict) else {}
        return out

    # -- the model's own variant made by the same conversion ---------------------------------------

    def compare_counterpart(self, path: str, other: dict) -> None:
        """checks["counterpart"]: the output against the variant the model already has from the same
        conversion of the same source (what a user reproducing it compares with). A converter's
        bytes differ from CPU to CPU (its kernels pick instructions by what the CPU has), so equal
        bytes are reported, not required: the two are judged by their outputs on the check inputs,
        as the conversion is judged against its source (fp: max abs diff within -O atol; int8:
        top-1 agreement, where the outputs are scores). Recorded, never failing the compile."""
        from .. import model as model_files

        to, precision = self.job["params"]["to"], self.plan["precision"]
        check = {"variant": other["variant"], "sha256": other["sha256"],
                 "identical_bytes": model_files.sha256(path) == other["sha256"]}
        self.checks["counterpart"] = check
        if to == "onnx":
            specs, _ = self.onnx_specs(path)

            def outputs(file, batch):
                return self.run_onnx(file, batch)
        elif to == "tflite":
            specs, _ = self.tflite_specs(path)

            def outputs(file, batch):
                return self._run_tflite(file, [batch[s["name"]] for s in specs])
        else:
            check.update(passed=True if check["identical_bytes"] else None,
                         not_judged=None if check["identical_bytes"] else f"{to} files are not run by the conversion")
            return
        first = (specs[0].get("shape") or [None])[0] if specs else None
        fixed = first if isinstance(first, int) and first > 0 else None
        batches = self.check_batches(specs, fixed) if precision == "int8" else [self.check_batch(specs, fixed or 3)]
        want = _concat([outputs(other["file"], b) for b in batches])
        got = _concat([outputs(path, b) for b in batches])
        check.update(max_abs_diff=_max_diff(want, got), samples=sum(len(next(iter(b.values()))) for b in batches))
        if precision == "int8":
            least = float(self.options.get("min_top1_agreement", 0.95))
            agreement = _agreement(want, got)
            check.update(top1_agreement=agreement, min_top1_agreement=least,
                         passed=None if agreement is None else agreement >= least - 1e-12)
            if agreement is None:
                check["not_judged"] = "the first output is not [N, classes] scores, so top-1 agreement is not measured"
        else:
            check.update(atol=self.atol, passed=check["max_abs_diff"] <= self.atol)

    # -- what the output takes and gives --------------------------------------------------------

    def io(self, path: str) -> dict:
        """{"inputs", "outputs"} of the output file, named and laid out as the source meta says where it says."""
        to = self.job["params"]["to"]
        if to == "onnx":
            inputs, outputs = self.onnx_specs(path)
            declared = [t["name"] for t in self.meta.get("outputs") or []]
            by_name = {t["name"]: t for t in outputs}
            if declared and all(n in by_name for n in declared):  # backends run what the meta declares
                outputs = [by_name[n] for n in declared]
        elif to == "tflite":
            inputs, outputs = self.tflite_specs(path)
            # TFLite names tensors after the converter (serving_default_x:0); the tflite backend matches
            # the meta's names in order, so the meta keeps the source's names where the counts agree
            inputs = _renamed(inputs, self.meta.get("inputs"))
            outputs = _renamed(outputs, self.meta.get("outputs"))
        elif to == "savedmodel":
            inputs, outputs = self.savedmodel_specs(path)
            inputs = _renamed(inputs, self.meta.get("inputs"))
            outputs = _renamed(outputs, self.meta.get("outputs"))
        else:
            found = self.checks.get("trt") or {}
            inputs, outputs = found.get("inputs") or self.meta.get("inputs"), found.get("outputs") or self.meta.get("outputs")
        inputs, outputs = self.carried(inputs, self.meta.get("inputs")), self.carried(outputs, self.meta.get("outputs"))
        return {"inputs": _with_layout(inputs, self.meta.get("inputs")), "outputs": _with_layout(outputs, self.meta.get("outputs"))}

    def carried(self, found: list[dict] | None, declared: list[dict] | None) -> list[dict] | None:
        """The output file's specs with the source meta's declared dims where the file left them dynamic
        (a converter that loses a fixed dim does not make it dynamic); CRError where they contradict."""
        if not found or not declared or len(found) != len(declared):
            return found
        return [{**f, "shape": _carried_shape(f.get("shape"), d.get("shape"), f"{self.ref}: {f.get('name')!r}")}
                if f.get("shape") is not None else f for f, d in zip(found, declared)]

    def savedmodel_specs(self, path: str) -> tuple[list[dict], list[dict]]:
        import tensorflow as tf

        fn = tf.saved_model.load(path).signatures["serving_default"]
        kwargs = fn.structured_input_signature[1]

        def spec(name, t):
            return {"name": name, "shape": [_dim(d) for d in t.shape.as_list()], "dtype": t.dtype.name}

        return ([spec(n, kwargs[n]) for n in sorted(kwargs)],
                [spec(n, t) for n, t in sorted(fn.structured_outputs.items())])


def _carried_shape(found: list | None, declared: list | None, what: str) -> list | None:
    """found with declared's fixed dims where found is dynamic; CRError when a fixed dim of each disagrees
    (or the ranks differ)."""
    if found is None or declared is None:
        return found if found is not None else declared
    import json

    why = CRError(f"{what} is declared with shape {json.dumps(declared)} in the model meta, but the file has "
                  f"{json.dumps([_dim(f) for f in found])}",
                  hint="fix the shape in the model meta (null for a dynamic dim), or give the file the declared shape")
    if len(found) != len(declared):
        raise why
    out = []
    for f, d in zip(found, declared):
        f, d = _dim(f), _dim(d)
        if f is not None and d is not None and f != d:
            raise why
        out.append(f if f is not None else d)
    return out


def _renamed(found: list[dict], declared: list[dict] | None) -> list[dict]:
    if declared and len(declared) == len(found):
        return [{**f, "name": d["name"]} for f, d in zip(found, declared)]
    return [{**f, "name": f["name"].removeprefix("serving_default_").split(":")[0]} for f in found]


def _with_layout(found: list[dict] | None, declared: list[dict] | None) -> list[dict] | None:
    if found is None:
        return None
    declared = declared or []
    by_name = {d["name"]: d for d in declared}
    out = []
    for i, f in enumerate(found):
        if f.get("dtype") is None:
            continue  # not a tensor (a ZipMap's sequence of maps): a meta's tensors cannot describe it
        d = by_name.get(f["name"]) or (declared[i] if len(declared) == len(found) else {})
        spec = {"name": f["name"], "shape": f.get("shape"), "dtype": f.get("dtype")}
        if d.get("layout") and (not f.get("shape") or len(f["shape"]) == len(d.get("shape") or f["shape"])):
            spec["layout"] = d["layout"]
        out.append({k: v for k, v in spec.items() if v is not None})
    return out


def _tf2onnx(what: str):
    """The tf2onnx module, or the CRError saying what needs it and how to get it."""
    try:
        import tf2onnx
    except ImportError as exc:
        raise CRError(f"{what} needs tf2onnx, which cannot be imported here ({exc})",
                      hint="cr install software tf2onnx (or pip install tf2onnx)") from None
    return tf2onnx


def _has_nvidia_gpu() -> bool:
    """An NVIDIA driver with at least one GPU (Linux: /proc/driver/nvidia/gpus; elsewhere nvidia-smi)."""
    gpus = "/proc/driver/nvidia/gpus"
    if os.path.isdir(gpus):
        return bool(os.listdir(gpus))
    if sys.platform.startswith("linux"):
        return False
    import shutil
    import subprocess

    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
