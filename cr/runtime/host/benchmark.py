"""benchmark(): a model (or a solution) on a backend, measured in the runtime child.

    from cr.runtime.host import benchmark
    record = benchmark("model:iris-logreg", backend="onnxruntime",
                       params={"min_duration_s": 1, "min_queries": 500}, output="r.json")
    record["status"], record["metrics"]["latency_ns"]["p99"]

Parameters are the action meta's defaults (actions/benchmark/meta.json), overridden by a
solution's benchmark params, overridden by the caller's; they are validated against the
action's ``parameters`` schema before anything runs. Problems found before the run
(unknown backend, bad parameter, missing model file) raise CRError; a run that starts
and fails returns (and writes, with output) a record with status "failed".
"""
from __future__ import annotations

from pathlib import Path

from .actions import run_action


def benchmark(
    ref: str,
    backend: str | None = None,
    params: dict | None = None,
    backend_options: dict | None = None,
    lock: str | Path | None = None,
    output: str | Path | None = None,
    variant: str | None = None,
    dataset: str | None = None,
    split: str | None = None,
) -> dict:
    """Run the benchmark action; returns the result record (raw latencies as an int64 array)."""
    return run_action("benchmark", ref, backend=backend, params=params, backend_options=backend_options,
                      variant=variant, dataset=dataset, split=split, lock=lock, output=output)
