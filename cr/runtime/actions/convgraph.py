"""The conversion graph of cr compile: converters as declared hops between model formats.

Each hop declares the formats it reads, the format it writes, the precisions it can write,
the software it needs (software:NAME requirements, recipes under recipes/), the ``_Work``
step that runs it (cr.runtime.actions.compile: ``step_<step>``) and a one-line description.
``route`` finds the shortest chain of hops (breadth-first over formats) from a source format
to a target format and precision: every hop but the last writes fp32, the last one writes the
precision asked for.

Standard library only: the host imports it to plan a conversion before any child starts.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

TORCH = ("torchscript", "torch-exported", "torch-state-dict")


@dataclass(frozen=True)
class Hop:
    """One converter: ``reads`` -> ``writes``, run by ``_Work.step_<step>``."""

    name: str
    reads: tuple[str, ...]
    writes: str
    step: str
    software: tuple[str, ...]
    precisions: tuple[str, ...] = ("fp32",)
    tool: str = ""
    description: str = ""

    def to_dict(self) -> dict:
        return {"hop": self.name, "reads": list(self.reads), "writes": self.writes, "step": self.step,
                "software": list(self.software), "precisions": list(self.precisions), "tool": self.tool,
                "description": self.description}


# Order matters where two chains are equally short: the first hop listed wins (the existing,
# better-tested converters come first).
HOPS: tuple[Hop, ...] = (
    Hop("torch-export", TORCH, "onnx", "export", ("software:torch", "software:onnx", "software:onnxscript"),
        tool="torch", description="torch.onnx.export, batch axis dynamic"),
    Hop("tf2onnx", ("tf-frozen-graph",), "onnx", "tf2onnx", ("software:tensorflow-cpu", "software:tf2onnx", "software:onnx"),
        tool="tf2onnx", description="tf2onnx.convert.from_graph_def of the meta's inputs -> outputs cut"),
    Hop("tflite-to-onnx", ("tflite",), "onnx", "tflite2onnx", ("software:tf2onnx", "software:onnx", "software:ai-edge-litert"),
        tool="tf2onnx", description="tf2onnx.convert.from_tflite"),
    Hop("tf-to-tflite", ("keras", "savedmodel", "tf-frozen-graph"), "tflite", "tflite", ("software:tensorflow-cpu",),
        precisions=("fp32", "int8"), tool="tensorflow", description="tf.lite.TFLiteConverter (int8: static or dynamic)"),
    Hop("onnx2tf-tflite", ("onnx",), "tflite", "onnx2tf_tflite", ("software:onnx2tf", "software:tensorflow-cpu", "software:onnx"),
        tool="onnx2tf", description="onnxslim, then onnx2tf's float32 TFLite (input layout kept)"),
    Hop("onnx2tf-savedmodel", ("onnx",), "savedmodel", "onnx2tf_savedmodel", ("software:onnx2tf", "software:tensorflow-cpu", "software:onnx"),
        tool="onnx2tf", description="onnxslim, then onnx2tf's SavedModel (input layout kept)"),
    Hop("onnx-quantize", ("onnx",), "onnx", "quantize", ("software:onnxruntime", "software:onnx"), precisions=("int8",),
        tool="onnxruntime", description="onnxruntime.quantization (dynamic, or static calibrated on dataset samples)"),
    Hop("onnx-optimize", ("onnx",), "onnx", "optimize", ("software:onnxruntime",), tool="onnxruntime",
        description="onnxruntime graph optimisation (a single conversion: onnx -> onnx fp32)"),
    Hop("onnx-to-trt-plan", ("onnx",), "trt-plan", "trt", ("software:tensorrt",), tool="tensorrt",
        description="TensorRT build_plan (an NVIDIA GPU)"),
)


def formats() -> list[str]:
    """Every format some hop reads or writes."""
    seen = []
    for hop in HOPS:
        for fmt in (*hop.reads, hop.writes):
            if fmt not in seen:
                seen.append(fmt)
    return seen


def reachable(source: str | None) -> list[str]:
    """The formats some chain of hops reaches from source (sorted; the source itself not listed)."""
    found, queue = set(), deque([source])
    while queue:
        fmt = queue.popleft()
        for hop in HOPS:
            if fmt in hop.reads and hop.writes not in found and hop.writes != source:
                found.add(hop.writes)
                queue.append(hop.writes)
    return sorted(found)


def reads(target: str, precision: str = "fp32") -> tuple[str, ...]:
    """The formats from which some chain reaches target at precision."""
    return tuple(f for f in formats() if f != target and route(f, target, precision) is not None)


def route(source: str | None, target: str, precision: str = "fp32") -> list[Hop] | None:
    """The shortest chain of hops from source to target whose last hop writes precision (None: none)."""
    if source is None or source == target:
        return None
    # breadth-first over formats; a chain ends with a hop that writes target at precision
    previous: dict[str, tuple[str, Hop] | None] = {source: None}
    queue = deque([source])
    while queue:
        fmt = queue.popleft()
        for hop in HOPS:
            if fmt not in hop.reads:
                continue
            if hop.writes == target and precision in hop.precisions:
                chain = [hop]
                while previous[fmt] is not None:
                    fmt, before = previous[fmt]
                    chain.insert(0, before)
                return chain
            # the target reached at fp32 is enqueued too: a hop from it to itself (quantisation) may finish the chain
            if hop.writes not in previous and "fp32" in hop.precisions:
                previous[hop.writes] = (fmt, hop)
                queue.append(hop.writes)
    return None


# the format each step writes (the steps of single conversions planned by compile.plan too)
STEP_WRITES = {"export": "onnx", "tf2onnx": "onnx", "tflite2onnx": "onnx", "optimize": "onnx", "quantize": "onnx",
               "tflite": "tflite", "onnx2tf_tflite": "tflite", "onnx2tf_savedmodel": "savedmodel", "trt": "trt-plan"}


def software(chain: list[Hop]) -> tuple[str, ...]:
    """The software every hop of a chain needs, in order, without repeats."""
    return tuple(dict.fromkeys(r for hop in chain for r in hop.software))
