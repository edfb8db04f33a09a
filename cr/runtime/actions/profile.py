"""The profile action's entry (actions/profile/meta.json: entry).

job: see cr.runtime.actions.common; job["log_dir"]: the work directory the framework's
profile files go to and the trace is written to (``trace.json``); params: samples,
warmup, baseline, batch_size, seed, threads, system_interval_ms, top.
  ->  {"profile": {"level", "source", "note", "overhead", "summary", "layers", "untimed",
                   "files", "clock", "system"}, "backend_info", "model_file", "pipeline",
       "inputs", "trace_file"}

The profiler's overhead is measured on every backend: ``baseline`` plain queries (default
min(samples, 20)) of the same model, threads and inputs, run just before the profiled ones,
in the same session once warm, or (ONNX Runtime, which profiles a session from its
creation) in a second session opened without profiling; profile.overhead holds both
medians and their ratio.

The queries run after the warm-up, outside any benchmark: profiling slows a model, so a
profile's times are never a benchmark's latencies. Inputs are seeded synthetic arrays of
the declared inputs (a profile measures where time goes, not accuracy).
"""
from __future__ import annotations

import json
import os
import statistics
import time

from ...errors import CRError
from ...fsutil import atomic_write_bytes
from .. import progress
from ..backends.base import check_inputs
from ..inputs import SyntheticInputs, batch_size_for
from ..profiling import aggregate, align, chrome, profiler_class
from ..profiling.sysmon import SystemSampler
from ..registry import BackendEntry, load_class
from .common import open_backend

TRACE_NAME = "trace.json"


def main(job: dict) -> dict:
    params = dict(job.get("params") or {})
    samples, warmup = int(params.get("samples", 50)), int(params.get("warmup", 5))
    workdir = job.get("log_dir")
    if not workdir or not os.path.isdir(workdir):
        raise CRError(f"the profile job has no work directory ({workdir!r})", hint="run profiles with cr profile")
    b = job["backend"]
    cls = load_class(BackendEntry(b["name"], b["entry"], b.get("origin", "the job")))
    profiler_cls = profiler_class(cls)
    if profiler_cls is None:
        raise CRError(f"backend {b['name']!r} has no profiler", hint="profile on a backend that names one (cr profile --help)")
    baseline_n = int(params.get("baseline", min(samples, 20)))
    plain_opened = None
    if not profiler_cls.UNPROFILED_BASELINE and baseline_n > 0:
        # the framework profiles from load on (ONNX Runtime): the plain queries run on a second
        # session of the same model, options and threads, open beside the profiled one
        plain_opened = open_backend(job)
    profiled_job = {**job, "backend": {**b, "options": {**(b.get("options") or {}), **profiler_cls.load_options(workdir)}}}
    try:
        opened = open_backend(profiled_job)
    except BaseException:
        if plain_opened is not None:
            plain_opened.backend.close()
        raise
    backend = opened.backend
    plain_backend = plain_opened.backend if plain_opened is not None else backend
    plain_how = ("a second session of the same model, options and threads without profiling (the framework profiles a "
                 "session from its creation)" if plain_opened is not None else "the same session with the profiler off")
    plain_how += "; half the plain queries just before the profiled ones, half just after"
    try:
        declared = opened.input_specs()
        batch_size = batch_size_for(declared, params.get("batch_size"), opened.ref)
        batches = SyntheticInputs(declared, batch_size, seed=int(params.get("seed", 0)), count=4).batches()
        specs = backend.inputs()
        for batch in batches:
            check_inputs(specs, batch)
        progress.mark("warm-up", samples=warmup)
        for warm in {id(backend): backend, id(plain_backend): plain_backend}.values():
            if callable(getattr(warm, "prepare", None)):
                warm.prepare(batches[0])
            for i in range(warmup):
                warm.run(batches[i % len(batches)])
        clock = time.perf_counter_ns
        # the same queries without the profiler, around the profiled ones: its overhead, measured
        if baseline_n > 0:
            progress.mark("plain queries", samples=(baseline_n + 1) // 2)
        plain = _timed(plain_backend, batches, (baseline_n + 1) // 2)
        # marked before the profiler and the sampler start: nothing is written while they record
        progress.mark("profiled run", samples=samples, **_expected(plain, samples))
        profiler = profiler_cls(backend, workdir)
        sampler = SystemSampler(float(params.get("system_interval_ms", 10)) / 1000.0)
        sampler.start()
        profiler.start()
        spans = []
        try:
            for i in range(samples):
                batch = batches[i % len(batches)]
                t0 = clock()
                profiler.run(batch)
                spans.append((t0, clock()))
        finally:
            collected = profiler.stop()
            sampler.stop()
        if baseline_n > 1:
            progress.mark("plain queries again", samples=baseline_n // 2)
        plain += _timed(plain_backend, batches, baseline_n // 2)
        info = opened.info()
    finally:
        backend.close()
        if plain_opened is not None:
            plain_opened.backend.close()
    progress.mark("layer table")
    events, how = align(collected, spans)
    table = aggregate(events, spans, collected.untimed)
    top = int(params.get("top", 500))
    overhead = _overhead(table["summary"]["model_ns"]["p50"], len(spans), plain, plain_how)
    framework = info.get("framework") or b["name"]
    progress.mark("trace")
    trace = chrome.build(spans, events, sampler.samples, {
        "backend": b["name"], "framework": framework, "version": info.get("version"), "model": opened.ref,
        "source": profiler.source, "clock": "time.perf_counter_ns of the profiled process, first query at 0",
        "alignment": how, "note": collected.note,
    })
    trace_path = os.path.join(workdir, TRACE_NAME)
    atomic_write_bytes(trace_path, json.dumps(trace, separators=(",", ":")).encode("utf-8"))
    return {
        "profile": {
            "level": profiler.level, "source": profiler.source, "note": collected.note, "overhead": overhead,
            "summary": {**table["summary"], "layers_kept": min(top, len(table["layers"])), "batch_size": batch_size,
                        "warmup": warmup},
            "layers": table["layers"][:top], "untimed": collected.untimed,
            "files": [os.path.basename(f) for f in collected.files], "clock": how,
            "system": {"samples": len(sampler.samples), "interval_ms": sampler.interval_s * 1000, "missing": sampler.missing},
        },
        "backend_info": info,
        "model_file": opened.model_file(),
        "pipeline": opened.pipeline(),
        "inputs": {"provider": "synthetic", "seed": int(params.get("seed", 0)), "batch_size": batch_size, "samples": samples},
        "trace_file": trace_path,
        "placement": opened.placement,
    }


def _expected(plain: list, samples: int) -> dict:
    """{"expect_s": ...} of the profiled run: its queries at the plain queries' median, a lower
    bound (the profiler slows them); {} when no plain query ran."""
    if not plain:
        return {}
    return {"expect_s": round(samples * statistics.median(plain) / 1e9, 3)}


def _timed(backend, batches: list, n: int) -> list:
    clock = time.perf_counter_ns
    out = []
    for i in range(n):
        t0 = clock()
        backend.run(batches[i % len(batches)])
        out.append(clock() - t0)
    return out


def _overhead(profiled_p50, profiled_n: int, plain: list, how: str | None) -> dict:
    """The profiler's cost: the profiled queries' p50 over the p50 of the same model run plainly
    (same threads, options and inputs), or why it was not measured."""
    if not plain:
        return {"ratio": None, "plain_p50_ns": None, "profiled_p50_ns": profiled_p50,
                "why": "no plain queries were run (baseline=0)"}
    base = int(statistics.median(plain))
    return {"ratio": round(profiled_p50 / base, 3) if base and profiled_p50 else None, "plain_p50_ns": base,
            "profiled_p50_ns": profiled_p50, "added_ns": profiled_p50 - base if profiled_p50 is not None else None,
            "plain_queries": len(plain), "profiled_queries": profiled_n, "plain_run": how}
