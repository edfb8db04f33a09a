"""The benchmark action's entry (actions/benchmark/meta.json: entry).

job: see cr.runtime.actions.common; params: the action's parameters.
  ->  {"metrics", "backend_info", "model_file", "pipeline", "inputs", "profile", "placement",
       "_latencies": array('q')}   (the child writes the latencies to a binary file)

Inputs ("inputs" parameter): "dataset" feeds pre-processed samples of the job's dataset
(the model meta's pipeline, built before timing), "synthetic" seeded random arrays of the
declared inputs, "auto" (default) the dataset when the job has one. With
``include_preprocess`` the pipeline runs inside the timed region (each query then
measures pre-processing + inference, as a deployed service would).
"""
from __future__ import annotations

import time

from ...errors import CRError
from ..backends.base import check_inputs
from ..datasets import DatasetInputs
from .. import progress
from ..harness import Settings, benchmark
from ..inputs import SyntheticInputs, batch_size_for
from .common import load_dataset, open_backend, preprocess


class _Preprocessing:
    """A backend whose run() takes raw samples: pre-processing joins the timed region."""

    def __init__(self, backend, pipeline, name):
        self._run, self._batch, self._name = backend.run, pipeline.batch, name

    def run(self, samples):
        return self._run({self._name: self._batch(samples)})


def main(job: dict) -> dict:
    params = dict(job.get("params") or {})
    settings = Settings.from_params(params)
    settings.check()
    clock = time.perf_counter
    t0 = clock()
    opened = open_backend(job)
    load_s = clock() - t0  # the backend's module and framework imported, the model loaded
    backend = opened.backend
    try:
        declared = opened.input_specs()
        batch_size = batch_size_for(declared, params.get("batch_size"), opened.ref)
        progress.mark("inputs")
        pool = int(params.get("input_pool", 16))
        mode = params.get("inputs", "auto")
        if mode == "auto":
            mode = "dataset" if job.get("dataset") else "synthetic"
        if mode == "dataset":
            dataset = load_dataset(job, limit=pool * batch_size)
            provider = DatasetInputs(dataset.samples, preprocess(opened.meta), opened.input_name(), batch_size, pad_last=True)
            inputs = {"provider": "dataset", "dataset": dataset.ref, "split": dataset.split, "samples": len(dataset.samples)}
        elif mode == "synthetic":
            provider = SyntheticInputs(declared, batch_size, seed=settings.seed, count=pool)
            inputs = {"provider": "synthetic", "seed": settings.seed}
        else:
            raise CRError(f"benchmark parameter inputs is {mode!r}", hint="use auto, dataset or synthetic")
        batches = provider.batches()
        specs = backend.inputs()
        for batch in batches:  # every batch, before timing: a mismatch is named, never timed
            check_inputs(specs, batch)
        if callable(getattr(backend, "prepare", None)):
            backend.prepare(batches[0])  # e.g. a TFLite resize to this batch size, outside timing
        inputs.update({"batches": len(batches), "batch_size": batch_size})
        inputs_s = clock() - t0 - load_s
        timed, pool_items = backend, batches
        if params.get("include_preprocess"):
            if mode != "dataset":
                raise CRError("include_preprocess needs dataset inputs", hint="drop --include-preprocess, or use --inputs dataset")
            timed = _Preprocessing(backend, preprocess(opened.meta), opened.input_name())
            pool_items = [[s.data for s in (g * batch_size)[:batch_size]] for g in provider.groups()]
            inputs["preprocess_timed"] = True
        if params.get("engine", "cr") == "loadgen":
            from .. import loadgen

            expect, most = progress.steady_estimate(settings, None)
            progress.mark("loadgen", expect_s=expect, max_s=most)  # LoadGen warms up and measures in one call
            outcome = loadgen.run(timed, pool_items, batch_size, settings, job["log_dir"])
        else:
            outcome = benchmark(timed, pool_items, batch_size, settings)
        # phases: load and input preparation happen here, the rest in the harness
        outcome.metrics["phases"] = {"load_s": load_s, "inputs_s": inputs_s, **(outcome.metrics.get("phases") or {})}
        profile = backend.profile() if callable(getattr(backend, "profile", None)) else None
        if profile is not None:  # a framework profiler was on: these latencies are profiled ones
            profile = {**profile, "profiled": True}
        info = opened.info()
    finally:
        backend.close()
    return {
        "metrics": outcome.metrics,
        "backend_info": info,
        "model_file": opened.model_file(),
        "pipeline": opened.pipeline(),
        "profile": profile,
        "inputs": inputs,
        "placement": opened.placement,
        "_latencies": outcome.latencies_ns,
    }
