"""The benchmark harness: Settings -> warm-up, one scenario, statistics, validity.

    from cr.runtime.harness import Settings, benchmark
    result = benchmark(backend, batches, batch_size, Settings(scenario="server", target_qps=200))
    result.metrics["latency_ns"]["p99"], result.latencies_ns

It works in any process: the child process of ``cr benchmark`` (cr.runtime.actions),
or the caller's own (tests, benchmarks/bench_harness.py). Inputs arrive pre-built.
"""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import asdict, dataclass
from itertools import cycle

from ..errors import CRError
from . import modes, progress, scenarios, stats, warmup


@dataclass
class Settings:
    """A run's parameters; names match actions/benchmark/meta.json's parameters."""

    scenario: str = "single-stream"
    min_duration_s: float = 10.0
    min_queries: int = 1024
    max_duration_s: float | None = 25.0  # a slow model stops here, with >= scenarios.MIN_QUERIES_AT_MAX queries
    warmup_queries: int = 100  # at least this many warm-up queries (0: no warm-up at all)
    warmup_max_s: float = 5.0  # warm-up ends after this long, stable or not
    warmup_until_stable: bool = True  # then on until consecutive window medians agree (cr.runtime.warmup)
    warmup_window: int = 10  # queries per window
    warmup_threshold: float = 0.05  # stable: the medians of consecutive windows differ by less than this share
    warmup_max_queries: int = 1000  # warm-up ends after this many queries, stable or not
    fidelity: bool = False  # after the scenario, a bare timing loop over the same inputs (cr.runtime.warmup)
    samples_per_query: int = 8  # multi-stream
    target_qps: float | None = None  # server
    latency_bound_ms: float | None = None  # server (default 100 ms)
    seed: int = 0
    sustained_s: float | None = None  # queries back to back this long, windowed (cr.results.sustained)
    sustained_window_s: float | None = None  # the window (default 1 s; duration/600 above 10 minutes)

    def check(self) -> None:
        if self.scenario not in scenarios.SCENARIOS:
            raise CRError(f"unknown scenario {self.scenario!r}", hint=f"scenarios: {', '.join(scenarios.SCENARIOS)}")
        if self.min_queries < 1 or self.min_duration_s < 0 or self.warmup_queries < 0:
            raise CRError("min_queries must be >= 1, min_duration_s and warmup_queries >= 0")
        if self.scenario == "server" and not self.target_qps:
            raise CRError("the server scenario needs a target rate", hint="give --target-qps X (queries per second)")
        if self.scenario == "multi-stream" and self.samples_per_query < 1:
            raise CRError("samples_per_query must be >= 1")
        warmup.check(self)
        if self.sustained_s is not None:
            from ..durations import parse_duration
            from .sustained import window_for

            parse_duration(self.sustained_s, "sustained_s")
            window_for(self.sustained_s, self.sustained_window_s, "sustained_window_s")
            if self.scenario == "server":
                raise CRError("a sustained run issues queries back to back: the server scenario cannot be sustained",
                              hint="use --scenario single-stream, multi-stream or offline with --sustained")

    @classmethod
    def from_params(cls, params: dict) -> "Settings":
        known = set(cls.__dataclass_fields__)
        if params.get("sustained_s") is not None and params.get("engine") == "loadgen":
            raise CRError("a sustained run needs cr's harness: MLPerf LoadGen has no windows",
                          hint="drop --engine loadgen, or drop --sustained")
        return cls(**{k: v for k, v in params.items() if k in known and v is not None})


@dataclass
class Outcome:
    metrics: dict
    latencies_ns: object  # array('q')


def benchmark(backend, batches: list, batch_size: int, settings: Settings) -> Outcome:
    """Run settings.scenario on backend over the pre-built batches; metrics + raw latencies."""
    settings.check()
    if not batches:
        raise CRError("no input batches to run")
    with timed(backend, batches) as (run, ready):
        return _benchmark(run, ready, backend, batches, batch_size, settings)


def timed(backend, batches: list):
    """The backend's timed window over batches, yielding (run, items): Backend.timed (its
    contexts entered once, items[i] = batches[i] made ready for the framework once), or
    (backend.run, batches) for a backend without one."""
    hook = getattr(backend, "timed", None)
    return hook(batches) if callable(hook) else nullcontext((backend.run, batches))


def _benchmark(run, ready: list, backend, batches: list, batch_size: int, settings: Settings) -> Outcome:
    min_ns = int(settings.min_duration_s * 1e9)
    # the maximum never cuts a run short of its minimum duration
    max_ns = max(int(settings.max_duration_s * 1e9), min_ns) if settings.max_duration_s else None
    extra: dict = {}
    if settings.scenario == "multi-stream":
        calls = -(-settings.samples_per_query // batch_size)
        feed = cycle(ready)
        queries = [tuple(next(feed) for _ in range(calls)) for _ in range(len(ready))]
        progress.mark("warm-up", max_s=settings.warmup_max_s if settings.warmup_queries else 0)
        warm = warmup.warm_up(run, queries, settings, grouped=True)
        _steady(settings, warm)
        per_query, items = calls * batch_size, queries
        if settings.sustained_s:
            lat, start, end, extra = _sustained(run, items, settings, grouped=True)
        else:
            lat, start, end = scenarios.grouped(run, queries, settings.min_queries, min_ns, max_ns)
    else:
        progress.mark("warm-up", max_s=settings.warmup_max_s if settings.warmup_queries else 0)
        warm = warmup.warm_up(run, ready, settings)
        _steady(settings, warm)
        per_query, items = batch_size, ready
        if settings.sustained_s:
            lat, start, end, extra = _sustained(run, items, settings)
        elif settings.scenario == "server":
            lat, start, end, extra = scenarios.server(run, ready, settings.min_queries, min_ns, settings.target_qps,
                                                      settings.seed, max_ns)
        else:
            lat, start, end = scenarios.back_to_back(run, ready, settings.min_queries, min_ns, max_ns)
    progress.mark("statistics")
    sustained = extra.pop("sustained", None)
    out = metrics(scenarios.Measurement(lat, per_query, start, end, extra), batch_size, settings)
    if sustained is not None:
        out["stopped_by"] = "sustained"
        out["sustained"] = sustained
    out["phases"] = warmup.phases(warm, out, lat)
    out["modes"] = modes.account(lat)
    if settings.fidelity:
        progress.mark("fidelity")
        out["fidelity"] = warmup.fidelity(run, items, out, grouped=settings.scenario == "multi-stream",
                                          bare=warmup.framework_loop(backend, batches, ready))
    return Outcome(out, lat)


def _steady(settings: Settings, warm: dict) -> None:
    """Mark the measured phase, with its expected and longest duration, before it starts."""
    medians = warm.get("window_medians_ns") or []
    query_ns = medians[-1] if medians else (warm["seconds"] * 1e9 / warm["queries"] if warm.get("queries") else None)
    expect, most = progress.steady_estimate(settings, query_ns)
    progress.mark("steady", expect_s=expect, max_s=most)


def _sustained(run, items: list, settings: Settings, grouped: bool = False):
    """The sustained loop (cr.runtime.scenarios.sustained); (latencies, start, end,
    {"sustained": the windows' edges}). The host turns the edges, the latencies and the
    machine's state it sampled meanwhile into metrics["sustained"] (cr.results.sustained):
    nothing but the loop runs here."""
    from .sustained import window_for

    window = window_for(settings.sustained_s, settings.sustained_window_s)
    lat, start, end, edges = scenarios.sustained(run, items, int(settings.sustained_s * 1e9), int(window * 1e9),
                                                 grouped)
    return lat, start, end, {"sustained": {"edges": edges, "start_ns": start, "duration_s": settings.sustained_s,
                                           "window_s": window}}


def metrics(m: "scenarios.Measurement", batch_size: int, settings: Settings) -> dict:
    """The metrics block of a result record."""
    summary = stats.summarize(m.latencies_ns)
    noise = stats.noise(summary)
    out = {
        "scenario": settings.scenario,
        "validity": "VALID",
        "invalid_reasons": [],
        "queries": m.queries,
        "samples": m.queries * m.samples_per_query,
        "samples_per_query": m.samples_per_query,
        "batch_size": batch_size,
        "duration_s": m.duration_ns / 1e9,
        "latency_ns": summary,
        "throughput": stats.throughput(m.queries, m.queries * m.samples_per_query, m.duration_ns),
        "noise": noise,
        "noisy": noise > stats.NOISE_THRESHOLD,
        "peak_rss_bytes": stats.peak_rss_bytes(),
        "settings": asdict(settings),
        # what ended the run: both minimums met, or max_duration (a slow model, fewer queries)
        "stopped_by": "max_duration" if m.queries < settings.min_queries else "minimums",
        # the measured window on perf_counter_ns (CLOCK_MONOTONIC on Linux): the host's energy readings are cut to it
        "window_monotonic_ns": [m.start_ns, m.end_ns],
    }
    if settings.scenario == "server":
        bound_ms = settings.latency_bound_ms or 100.0
        p99_ms = summary["p99"] / 1e6
        achieved = out["throughput"]["queries_per_s"]
        out["server"] = {
            "target_qps": settings.target_qps,
            "achieved_qps": achieved,
            "latency_bound_ms": bound_ms,
            "p99_ms": p99_ms,
            **m.extra,
        }
        if p99_ms > bound_ms:
            out["validity"] = "INVALID"
            out["invalid_reasons"].append(
                f"p99 latency {p99_ms:.3f} ms exceeds the bound of {bound_ms:g} ms at {settings.target_qps:g} queries/s "
                f"(achieved {achieved:.1f} queries/s)"
            )
    return out
