"""MLPerf LoadGen as the measurement engine (``cr benchmark --engine loadgen``).

    from cr.runtime import loadgen
    outcome = loadgen.run(backend, batches, batch_size, Settings(scenario="server", target_qps=200), "run.loadgen")
    outcome.metrics["validity"], outcome.metrics["loadgen"]["summary"]["Result is"]

The same job as cr.runtime.harness.benchmark (same backend, pre-built batches, Settings),
but LoadGen schedules the queries, judges the run and writes its logs into log_dir
(mlperf_log_summary.txt, mlperf_log_detail.txt, mlperf_log_accuracy.json and, when traced,
mlperf_log_trace.json). The metrics have harness.metrics()'s keys plus "engine",
"latency_source" and "loadgen"; validity and its reasons are LoadGen's own.

How the job maps onto LoadGen:
  - One LoadGen sample = one pre-built batch (sample index i -> batches[i % len(batches)]);
    the QSL's load/unload are no-ops: the batches are in memory already.
  - single-stream / server: one query = one batch. multi-stream: one query =
    ceil(samples_per_query / batch_size) batches (LoadGen's multi_stream_samples_per_query).
    offline: LoadGen issues one query of many batches; as in cr's harness, each batch
    counts as a query in "queries" (LoadGen's own count, 1, is in loadgen.detail).
  - The SUT runs the batches synchronously inside issue_query and then completes them.
    For server this means one query in service at a time, and LoadGen's issuing thread
    waits while it runs: a query arriving meanwhile is issued late, and LoadGen measures
    its latency from its scheduled arrival, so the queueing counts, exactly like the
    single worker of cr's own server loop. It cannot show what a concurrent server would do.
  - Warm-up queries run before LoadGen starts (at least one, except for server: it sizes
    LoadGen's expected latency / QPS, which decides how many queries LoadGen generates).

Latencies (Outcome.latencies_ns and metrics["latency_ns"]): LoadGen writes no per-query
latencies to its detail log, but its trace records each sample's completion time from the
query's scheduled start (the latency LoadGen itself uses), so when the trace is on they
come from there ("latency_source": "loadgen"; a multi-stream query's latency is its
slowest sample's, as in LoadGen). The trace costs ~650 bytes a sample, so by default it is
on only for runs expected below TRACE_MAX_SAMPLES samples; otherwise, and for offline
(where LoadGen has one query, not a latency per batch), the SUT's own perf_counter_ns
timings are used ("latency_source": "sut": from issue_query's entry to the last batch's
return, per query; per batch for offline; for server this leaves out the wait before
LoadGen issued a late query). duration_s is the SUT's first issue to last completion, except
for offline: LoadGen's (its start to the last completion), so samples_per_s is LoadGen's figure.
"""
from __future__ import annotations

import json
import math
import os
import re
import time
from array import array
from dataclasses import asdict, dataclass, field
from itertools import cycle

from ..errors import CRError
from . import modes, stats, warmup
from .harness import Outcome, Settings, timed

LOADGEN_SCENARIOS = {"single-stream": "SingleStream", "multi-stream": "MultiStream", "offline": "Offline", "server": "Server"}
LOG_FILES = ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "mlperf_log_accuracy.json", "mlperf_log_trace.json")
# LoadGen pre-generates 2x min_duration / expected latency queries, at ~300 bytes each. The
# expected latency is kept at or above the floor that caps that at MAX_GENERATED queries
# (~600 MB): 1 us for short runs, 10 us for a 10 s run. A model faster than that (with
# LoadGen's own ~4-14 us per query through a Python SUT) can run out of generated queries
# before min_duration: LoadGen then reports the run INVALID (min duration not met) itself.
LATENCY_FLOOR_NS = 1_000
MAX_GENERATED = 2_000_000
QUERY_COST_NS = 10_000  # LoadGen + the Python SUT per query, typically (for sizing the trace)
# What the offline SUT adds to each batch (its loop and QuerySamplesComplete: 5-6 us here,
# ~11 us traced), for offline_expected_qps. Offline cannot stop early: planned too few batches
# end before min_duration (INVALID), so this is set well below the real cost.
OFFLINE_SAMPLE_COST_NS = 2_000
TRACE_MAX_SAMPLES = 100_000  # ~65 MB of trace
DEFAULT_LATENCY_BOUND_MS = 100.0
_TRACE_SAMPLE = re.compile(r'"ts":([0-9.]+).*?"query_seq":(\d+).*?"complete_ns":(-?\d+)')


def _import():
    try:
        import mlperf_loadgen
    except ImportError as exc:
        raise CRError(f"the loadgen engine needs MLPerf LoadGen (module mlperf_loadgen): {exc}",
                      hint="pip install mlcommons-loadgen (or the reefkit[loadgen] extra), or use --engine cr") from None
    return mlperf_loadgen


@dataclass
class _Record:
    """What the SUT measured; error is the first exception backend.run raised."""

    latencies: array = field(default_factory=lambda: array("q"))
    first: int | None = None
    last: int = 0
    error: BaseException | None = None


def run(backend, batches: list, batch_size: int, settings: Settings, log_dir: str, *, trace: bool | None = None) -> Outcome:
    """Run settings.scenario through LoadGen; metrics as harness.metrics() plus engine/latency_source/loadgen.

    Batches are opaque: each goes to backend.run as it is. trace: None decides by the run's
    expected size (see TRACE_MAX_SAMPLES), True/False forces LoadGen's trace on/off.
    An exception from backend.run stops the measuring and is raised once LoadGen has
    finished: LoadGen has no abort, so the rest of its queries complete at once, without
    running, until its minimums are met (a failure costs up to min_duration_s).
    """
    settings.check()
    if not batches:
        raise CRError("no input batches to run")
    lg = _import()
    # LoadGen issues single-stream/multi-stream/server/offline queries from the thread that
    # called StartTest (this one), so a thread-local context entered here holds for them
    with timed(backend, batches) as (run_, ready):
        return _run(lg, run_, ready, backend, batches, batch_size, settings, log_dir, trace)


def _run(lg, run_, ready, backend, batches, batch_size, settings, log_dir, trace) -> Outcome:
    calls = -(-settings.samples_per_query // batch_size) if settings.scenario == "multi-stream" else 1
    warm = _warm_up(run_, ready, calls, settings)
    typical_ns = warm["fastest_ns"]
    test = _test_settings(lg, settings, calls, typical_ns)
    if trace is None:  # offline's latencies come from the SUT anyway (one LoadGen query)
        trace = settings.scenario != "offline" and _expected_samples(settings, calls, typical_ns) <= TRACE_MAX_SAMPLES
    _clear_logs(log_dir)
    record = _Record()
    issue = (_offline_sut if settings.scenario == "offline" else _sut)(lg, run_, ready, record)
    _start(lg, issue, max(len(ready), calls), test, log_dir, trace)
    if record.error is not None:
        raise record.error
    detail = read_detail(os.path.join(log_dir, "mlperf_log_detail.txt"))
    values = detail["values"]
    validity = values.get("result_validity")
    if validity is None or not record.latencies:
        raise CRError(f"LoadGen gave no result (its logs: {log_dir})", hint="read the errors in mlperf_log_detail.txt there")
    latencies, source, queued = _latencies(record, values, settings, log_dir if trace else None)
    duration_ns = record.last - record.first
    if settings.scenario == "offline" and values.get("result_max_latency_ns"):
        duration_ns = values["result_max_latency_ns"]  # LoadGen's: from its start to the last batch's completion
    metrics = _metrics(latencies, duration_ns, batch_size, calls, settings)
    if settings.scenario == "server":
        metrics["server"]["queued_queries"] = queued
    metrics["validity"] = validity
    metrics["invalid_reasons"] = invalid_reasons(values, settings) if validity != "VALID" else []
    metrics["engine"] = "loadgen"
    metrics["window_monotonic_ns"] = [record.first, record.last]  # the SUT's first issue to last completion (perf_counter_ns)
    metrics["phases"] = warmup.phases(warm, metrics, latencies)
    metrics["modes"] = modes.account(latencies)
    if settings.fidelity:
        metrics["fidelity"] = warmup.fidelity(run_, _queries(ready, calls), metrics, grouped=True,
                                              bare=warmup.framework_loop(backend, batches, ready))
    metrics["latency_source"] = source
    version, _, build = str(values.get("loadgen_version", "")).partition(" @ ")
    metrics["loadgen"] = {
        "version": version or None,
        "build": build or None,
        "result_validity": validity,
        "summary": read_summary(os.path.join(log_dir, "mlperf_log_summary.txt")),
        "detail": {k: v for k, v in values.items() if k.startswith(("result_", "early_stopping", "effective_", "generated_"))},
        "errors": detail["errors"],
        "warnings": detail["warnings"],
        "trace": bool(trace),
        "log_dir": os.path.abspath(log_dir),
    }
    return Outcome(metrics, latencies)


def _clear_logs(log_dir: str) -> None:
    """Make log_dir; remove LoadGen files of an earlier run, which must not be read as this run's."""
    os.makedirs(log_dir, exist_ok=True)
    for name in LOG_FILES:
        path = os.path.join(log_dir, name)
        if os.path.exists(path):
            os.remove(path)


def _latencies(record: _Record, values: dict, settings: Settings, trace_dir: str | None) -> tuple[array, str, int | None]:
    """(per-query latencies, "loadgen" | "sut", server's queued query count or None)."""
    if trace_dir is not None and settings.scenario != "offline":
        latency, scheduled = read_trace(os.path.join(trace_dir, "mlperf_log_trace.json"))
        if len(latency) == values.get("result_query_count"):  # else a partial trace: not LoadGen's whole run
            return latency, "loadgen", _queued(latency, scheduled) if settings.scenario == "server" else None
    return record.latencies, "sut", None


def _queries(batches: list, calls: int) -> list[tuple]:
    """The batches as queries of calls batches each, cycled from the first (as LoadGen issues them)."""
    feed = cycle(batches)
    return [tuple(next(feed) for _ in range(calls)) for _ in range(len(batches))]


def _warm_up(run, batches: list, calls: int, settings: Settings) -> dict:
    """The harness's warm-up (cr.runtime.warmup); without one, a single query all the same
    (not for server), whose time sizes LoadGen's plan. Its account, with "fastest_ns"."""
    queries = _queries(batches, calls)
    warm = warmup.warm_up(run, queries, settings, grouped=True)
    if warm["queries"] == 0 and settings.scenario != "server":
        perf = time.perf_counter_ns
        t0 = perf()
        for x in queries[0]:
            run(x)
        took = perf() - t0
        warm.update(queries=1, seconds=took / 1e9, first_ns=took, fastest_ns=took, stopped_by="sizing query")
    return warm


def _test_settings(lg, settings: Settings, calls: int, typical_ns: int):
    test = lg.TestSettings()
    test.scenario = getattr(lg.TestScenario, LOADGEN_SCENARIOS[settings.scenario])
    test.mode = lg.TestMode.PerformanceOnly
    test.min_duration_ms = int(math.ceil(settings.min_duration_s * 1000))
    test.min_query_count = settings.min_queries  # offline: LoadGen's minimum sample (= batch) count
    test.qsl_rng_seed = test.sample_index_rng_seed = test.schedule_rng_seed = test.accuracy_log_rng_seed = settings.seed
    # LoadGen pre-generates 2x the min duration's worth of queries at the expected rate: the
    # fastest warm-up query, not the median, so that a run faster than expected still fills it.
    expected_ns = max(_floor_ns(settings), typical_ns)
    if settings.scenario == "single-stream":
        test.single_stream_expected_latency_ns = expected_ns
    elif settings.scenario == "multi-stream":
        test.multi_stream_samples_per_query = calls
        test.multi_stream_expected_latency_ns = expected_ns
    elif settings.scenario == "offline":
        # twice the estimate: too few planned batches end the run before min_duration (INVALID),
        # too many only make it last longer
        test.offline_expected_qps = 2e9 / (typical_ns + OFFLINE_SAMPLE_COST_NS)
    else:
        test.server_target_qps = float(settings.target_qps)
        test.server_target_latency_ns = int((settings.latency_bound_ms or DEFAULT_LATENCY_BOUND_MS) * 1e6)
    return test


def _floor_ns(settings: Settings) -> int:
    """The least expected latency given to LoadGen (see MAX_GENERATED)."""
    return max(LATENCY_FLOOR_NS, int(2 * settings.min_duration_s * 1e9 / MAX_GENERATED))


def _expected_samples(settings: Settings, calls: int, typical_ns: int) -> float:
    """About how many LoadGen samples (trace events) the run will have."""
    if settings.scenario == "server":
        return max(settings.min_queries, settings.target_qps * settings.min_duration_s)
    if settings.scenario == "offline":
        return max(settings.min_queries, 2.2 * settings.min_duration_s * 1e9 / (typical_ns + OFFLINE_SAMPLE_COST_NS))
    return max(settings.min_queries, settings.min_duration_s * 1e9 / (typical_ns + QUERY_COST_NS)) * calls


def _sut(lg, run, batches: list, record: _Record):
    """issue_query for one query at a time: run its batches, time it, complete it."""
    perf, complete, response = time.perf_counter_ns, lg.QuerySamplesComplete, lg.QuerySampleResponse
    pool, append = len(batches), record.latencies.append

    def issue(samples):
        t0 = perf()
        if record.first is None:
            record.first = t0
        if record.error is None:
            try:
                for s in samples:
                    run(batches[s.index % pool])
            except BaseException as exc:  # noqa: BLE001 - raised by run() after LoadGen ends
                record.error = exc
        t1 = record.last = perf()
        append(t1 - t0)
        complete([response(s.id, 0, 0) for s in samples])  # always: an uncompleted query hangs LoadGen

    return issue


def _offline_sut(lg, run, batches: list, record: _Record):
    """issue_query for offline's one big query: each batch timed and completed as it returns."""
    perf, complete, response = time.perf_counter_ns, lg.QuerySamplesComplete, lg.QuerySampleResponse
    pool, append = len(batches), record.latencies.append

    def issue(samples):
        record.first = perf()
        for s in samples:
            t0 = perf()
            if record.error is None:
                try:
                    run(batches[s.index % pool])
                except BaseException as exc:  # noqa: BLE001
                    record.error = exc
            t1 = record.last = perf()
            append(t1 - t0)
            complete([response(s.id, 0, 0)])

    return issue


def _start(lg, issue, sample_count: int, test, log_dir: str, trace: bool) -> None:
    output = lg.LogOutputSettings()
    output.outdir = str(log_dir)
    output.prefix = "mlperf_log_"
    output.copy_summary_to_stdout = False  # the core never prints
    log = lg.LogSettings()
    log.log_output = output
    log.enable_trace = bool(trace)
    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(sample_count, sample_count, lambda indices: None, lambda indices: None)
    try:
        lg.StartTestWithLogSettings(sut, qsl, test, log)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)


def read_detail(path: str) -> dict:
    """mlperf_log_detail.txt's ":::MLLOG" JSON lines: {"values": {key: last value}, "errors", "warnings"}."""
    values, errors, warnings = {}, [], []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith(":::MLLOG "):
                continue
            try:
                entry = json.loads(line[len(":::MLLOG "):])
            except ValueError:
                continue
            key, value, meta = entry.get("key"), entry.get("value"), entry.get("metadata") or {}
            values[key] = value
            if meta.get("is_error"):
                errors.append(f"{key}: {value}")
            elif meta.get("is_warning"):
                warnings.append(f"{key}: {value}")
    return {"values": values, "errors": errors, "warnings": warnings}


_SUMMARY_LINE = re.compile(r"^\s*([^:*=\s][^:]*?)\s*:\s*(\S.*?)\s*$")


def read_summary(path: str) -> dict:
    """The "key : value" lines of mlperf_log_summary.txt before its test parameters, numbers as numbers."""
    out: dict = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("Test Parameters Used"):
                break
            m = _SUMMARY_LINE.match(line)
            if m:
                out[m.group(1)] = _number(m.group(2))
    return out


def _number(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def read_trace(path: str) -> tuple[array, array]:
    """Per query, in issue order, from mlperf_log_trace.json's "Sample" events:
    (latency ns = its slowest sample's completion after the query's scheduled start,
     scheduled start ns on the trace's clock).

    Read line by line: LoadGen writes one event a line, and some of its other lines are not
    valid JSON (doubled quotes in LogDetail keys), so the file as a whole cannot be parsed.
    """
    latency: dict[int, int] = {}
    scheduled: dict[int, int] = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if not line.startswith('{"name":"Sample"') or '"ph":"b"' not in line:
                continue
            m = _TRACE_SAMPLE.search(line)
            if m is None:
                continue
            query, done = int(m.group(2)), int(m.group(3))
            if done > latency.get(query, -1):
                latency[query] = done
            scheduled[query] = round(float(m.group(1)) * 1000)
    order = sorted(latency)
    return array("q", (latency[q] for q in order)), array("q", (scheduled[q] for q in order))


def _queued(latencies: array, scheduled: array) -> int:
    """Queries that arrived while the previous one was still in service (as cr's server counts them)."""
    return sum(1 for k in range(1, len(latencies)) if scheduled[k] < scheduled[k - 1] + latencies[k - 1])


def _metrics(latencies: array, duration_ns: int, batch_size: int, calls: int, settings: Settings) -> dict:
    """harness.metrics()'s block; validity is set by the caller from LoadGen's verdict."""
    summary = stats.summarize(latencies)
    noise = stats.noise(summary)
    queries, per_query = len(latencies), calls * batch_size
    out = {
        "scenario": settings.scenario,
        "validity": None,
        "invalid_reasons": [],
        "queries": queries,
        "samples": queries * per_query,
        "samples_per_query": per_query,
        "batch_size": batch_size,
        "duration_s": duration_ns / 1e9,
        "latency_ns": summary,
        "throughput": stats.throughput(queries, queries * per_query, duration_ns),
        "noise": noise,
        "noisy": noise > stats.NOISE_THRESHOLD,
        "peak_rss_bytes": stats.peak_rss_bytes(),
        "settings": asdict(settings),
        "stopped_by": "loadgen",  # LoadGen decides when its run ends (its own minimums)
    }
    if settings.scenario == "server":
        out["server"] = {
            "target_qps": settings.target_qps,
            "achieved_qps": out["throughput"]["queries_per_s"],
            "latency_bound_ms": settings.latency_bound_ms or DEFAULT_LATENCY_BOUND_MS,
            "p99_ms": summary["p99"] / 1e6,
        }
    return out


def invalid_reasons(values: dict, settings: Settings) -> list[str]:
    """LoadGen's reasons for an INVALID result, from its detail log's values, in words."""
    reasons = []
    if values.get("result_perf_constraints_met") is False:
        bound = settings.latency_bound_ms or DEFAULT_LATENCY_BOUND_MS
        pct = float(values.get("effective_target_latency_percentile", 0.99)) * 100
        p = values.get(f"result_{pct:.2f}_percentile_latency_ns")
        seen = f" is {p / 1e6:.3f} ms" if isinstance(p, (int, float)) else ""
        rate = values.get("result_completed_samples_per_sec")
        done = f" (completed {rate:.1f} queries/s)" if isinstance(rate, (int, float)) else ""
        reasons.append(f"LoadGen: latency constraint not met: the p{pct:g} latency{seen}, over the bound of {bound:g} ms "
                       f"at {settings.target_qps:g} queries/s{done}")
    if values.get("result_min_duration_met") is False:
        reasons.append(f"LoadGen: min duration not met ({values.get('effective_min_duration_ms')} ms)")
    if values.get("result_min_queries_met") is False:
        reasons.append(f"LoadGen: min query count not met ({values.get('result_query_count')} of "
                       f"{values.get('effective_min_query_count')})")
    if values.get("early_stopping_met") is False:
        said = " ".join(str(values.get("early_stopping_result") or "").replace("*", " ").split())
        reasons.append(f"LoadGen: early stopping not satisfied: {said}" if said else "LoadGen: early stopping not satisfied")
    if values.get("result_invalid_reason"):
        reasons.append(f"LoadGen: {values['result_invalid_reason']}")
    return reasons or ["LoadGen marked the result INVALID (see mlperf_log_summary.txt)"]
