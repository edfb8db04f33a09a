"""Frozen TensorFlow GraphDefs (format ``tf-frozen-graph``) without TF1 sessions.

The GraphDef is imported inside ``tf.compat.v1.wrap_function`` and pruned from the meta's
input tensors to its output tensors: the result is a concrete function TensorFlow 2 runs
eagerly. Tensor names come from the meta (``inputs[].name``, ``outputs[].name``: graph
tensor names, ":0" implied); feeding an inner tensor (a backbone's first op) cuts the
graph there, so the ops before it are never run.
"""
from __future__ import annotations

from ...errors import CRError
from .base import first_line


def tensor_name(name: str) -> str:
    """A graph tensor name: "op" becomes "op:0"."""
    return name if ":" in name else f"{name}:0"


def read_graph_def(tf, path: str):
    graph_def = tf.compat.v1.GraphDef()
    try:
        with open(path, "rb") as f:
            graph_def.ParseFromString(f.read())
    except Exception as exc:  # protobuf's DecodeError, or an OSError
        raise CRError(f"{path} is not a TensorFlow GraphDef: {type(exc).__name__}: {first_line(exc)}",
                      hint="a tf-frozen-graph model is the binary .pb a freeze (or the TF OD API export) writes") from None
    return graph_def


def load_frozen_graph(tf, path: str, meta: dict):
    """(call(batch) -> [tensors], input specs, output specs, [(meta name, tensor name)]).

    The meta must name its inputs and outputs (there is no signature to read them from)."""
    inputs, outputs = meta.get("inputs") or [], meta.get("outputs") or []
    if not inputs or not outputs:
        raise CRError(f"the tf-frozen-graph model {path} needs its input and output tensor names in the meta",
                      hint='declare inputs [{"name": "image_tensor:0", ...}] and outputs [{"name": "detection_boxes:0"}, ...]')
    graph_def = read_graph_def(tf, path)
    try:
        wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
    except Exception as exc:
        raise CRError(f"tensorflow cannot import the GraphDef {path}: {type(exc).__name__}: {first_line(exc)}",
                      hint="it may need ops of another TensorFlow version") from None
    graph = wrapped.graph

    def lookup(spec: dict, side: str):
        name = tensor_name(spec["name"])
        try:
            return graph.get_tensor_by_name(name)
        except (KeyError, ValueError):
            ops = [op.name for op in graph.get_operations() if op.type == "Placeholder"]
            raise CRError(f"the graph {path} has no tensor {name!r} (the meta's {side} {spec['name']!r})",
                          hint=f"name a tensor of the graph (op:index); its placeholders: {', '.join(ops[:10]) or 'none'}") from None

    feeds = [lookup(s, "input") for s in inputs]
    fetches = [lookup(s, "output") for s in outputs]
    try:
        fn = wrapped.prune(feeds, fetches)
    except Exception as exc:  # an output that does not depend on the inputs alone
        raise CRError(f"the graph {path} cannot be cut from {', '.join(t.name for t in feeds)} to "
                      f"{', '.join(t.name for t in fetches)}: {type(exc).__name__}: {first_line(exc)}",
                      hint="choose inputs that every output depends on (and nothing else unfed)") from None

    def spec(meta_name: str, tensor) -> dict:
        shape = tensor.shape
        return {"name": meta_name, "shape": shape.as_list() if shape.rank is not None else None, "dtype": tensor.dtype.name}

    in_specs = [spec(s["name"], t) for s, t in zip(inputs, feeds)]
    out_specs = [spec(s["name"], t) for s, t in zip(outputs, fetches)]
    names = [s["name"] for s in inputs]

    def call(batch):
        # convert_to_tensor: an array becomes a tensor; a tensor made beforehand (the backend's
        # timed window) passes as it is
        return list(fn(*[tf.convert_to_tensor(batch[n]) for n in names]))

    return call, in_specs, out_specs, [(n, tensor_name(n)) for n in names]
