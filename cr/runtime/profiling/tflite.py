"""TFLite / LiteRT: no per-op timing reachable from Python; model-level spans and the op list.

LiteRT's Python bindings (ai_edge_litert.interpreter.Interpreter and CompiledModel, and
tf.lite.Interpreter) expose no profiler: TFLite's op profiler and its profiling protos
serve the native benchmark_model tool only. So the profile's layer track stays empty,
the note says so in one line, and the table lists the interpreter's ops untimed (op
type and the name of each op's first output tensor, which carries the source layer
name after conversion).
"""
from __future__ import annotations

from . import Collected, Profiler


class TfliteProfiler(Profiler):
    level = "model"
    source = "model-level spans (LiteRT has no Python per-op profiler)"

    def stop(self) -> Collected:
        runtime = getattr(self.backend, "_runtime", None)
        what = f"{runtime.name} {runtime.version}" if runtime is not None and getattr(runtime, "name", None) else "LiteRT"
        note = (f"{what} exposes no per-op timing to Python (its Interpreter and CompiledModel bindings have no "
                "profiler): model-level spans only; the ops are listed untimed")
        return Collected(untimed=ops(self.backend), note=note)


def ops(backend) -> list[dict]:
    """[{"name", "op"}] of the interpreter's ops in execution order ([] when it cannot tell)."""
    interp = getattr(backend, "_interp", None)
    try:
        details = interp._get_ops_details()  # noqa: SLF001 - the interpreter's only op listing
        tensors = {t["index"]: t["name"] for t in interp.get_tensor_details()}
    except Exception:  # noqa: BLE001 - an interpreter without the listing: no op list
        return []
    out = []
    for d in details:
        outs = [tensors.get(int(i), "") for i in d.get("outputs", []) if int(i) >= 0]
        out.append({"name": (outs[0] if outs else "") or f"op{d.get('index')}", "op": d.get("op_name", "?")})
    return out
