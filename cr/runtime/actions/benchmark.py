"""The benchmark action's entry (actions/benchmark/meta.json: entry).

job: {"model": {"ref", "meta", "dir"}, "backend": {"name", "entry", "origin", "options"},
      "params": {...}}  ->  {"metrics", "backend_info", "model_file", "profile",
      "_latencies": array('q')}   (the child writes the latencies to a binary file)
"""
from __future__ import annotations

from .. import model as model_files
from ..backends.base import check_format, check_inputs, check_options
from ..harness import Settings, benchmark
from ..inputs import SyntheticInputs, batch_size_for
from ..registry import BackendEntry, load_class


def main(job: dict) -> dict:
    spec = job["model"]
    ref, meta, params = spec.get("ref", "the model"), spec["meta"], dict(job.get("params") or {})
    settings = Settings.from_params(params)
    settings.check()
    located = model_files.locate(meta, spec.get("dir"), ref)
    b = job["backend"]
    cls = load_class(BackendEntry(b["name"], b["entry"], b.get("origin", "the job")))
    backend = cls()
    options = dict(b.get("options") or {})
    if params.get("threads") is not None:
        options.setdefault("threads", params["threads"])
    check_format(backend, meta, ref)
    check_options(backend, options)
    backend.load(located["path"], meta, options)
    try:
        declared = meta.get("inputs") or backend.inputs()
        batch_size = batch_size_for(declared, params.get("batch_size"), ref)
        batches = SyntheticInputs(declared, batch_size, seed=settings.seed, count=int(params.get("input_pool", 16))).batches()
        specs = backend.inputs()
        for batch in batches:  # every batch, before timing: a mismatch is named, never timed
            check_inputs(specs, batch)
        outcome = benchmark(backend, batches, batch_size, settings)
        profile = backend.profile() if callable(getattr(backend, "profile", None)) else None
        info = backend.info() if callable(getattr(backend, "info", None)) else {}
    finally:
        backend.close()
    located["sha256"] = model_files.sha256(located["path"])
    return {
        "metrics": outcome.metrics,
        "backend_info": info,
        "model_file": located,
        "profile": profile,
        "inputs": {"provider": "synthetic", "seed": settings.seed, "batches": len(batches), "batch_size": batch_size},
        "_latencies": outcome.latencies_ns,
    }
