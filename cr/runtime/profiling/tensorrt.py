"""TensorRT: an IProfiler on the execution context (per-layer times of the built engine).

TensorRT calls report_layer_time(layer name, ms) for every layer of every enqueue, with
the names trtexec's --dumpProfile prints (fused layers read "conv1 + relu1"; the
builder's tactic is not reported per call). It gives no timestamps: the layers of one
run are laid out back to back from the run's start on the harness clock (args
``synthetic_ts``), in the order TensorRT reported them, so the trace shows their
order and length, not their exact start.
"""
from __future__ import annotations

import time

from . import Collected, LayerEvent, Profiler


class TensorrtProfiler(Profiler):
    source = "TensorRT IProfiler (per-layer times of the engine)"

    def start(self) -> None:
        import tensorrt as trt

        records = self._records = []

        class _Layers(trt.IProfiler):
            def __init__(self):
                trt.IProfiler.__init__(self)

            def report_layer_time(self, layer_name, ms):
                records.append((layer_name, float(ms)))

        self._profiler = _Layers()
        self._runs: list[tuple[int, int]] = []  # (start ns, index of its first record)
        self.backend.context.profiler = self._profiler

    def run(self, batch):
        self._runs.append((time.perf_counter_ns(), len(self._records)))
        return self.backend.run(batch)

    def stop(self) -> Collected:
        try:
            self.backend.context.profiler = None
        except (AttributeError, TypeError):  # an older binding that takes no None: the context is closed next anyway
            pass
        return lay_out(self._runs, self._records)


def lay_out(runs: list[tuple[int, int]], records: list[tuple[str, float]]) -> Collected:
    """Collected from per-run (start, first record) and the (layer, ms) records, laid back to back."""
    out = Collected()
    bounds = [r[1] for r in runs[1:]] + [len(records)]
    for (start, first), end in zip(runs, bounds):
        t = start
        for name, ms in records[first:end]:
            dur = int(ms * 1e6)
            op = "fused" if " + " in name else ("reformat" if "Reformat" in name else "layer")
            out.events.append(LayerEvent(name=name, op=op, start_ns=t, dur_ns=dur, provider="tensorrt",
                                         args={"synthetic_ts": True}))
            t += dur
    return out
