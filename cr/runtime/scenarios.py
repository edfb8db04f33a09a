"""The timed loops, one per scenario (MLPerf LoadGen's four).

Every loop calls ``run`` (the backend's bound run method) on pre-built batches, timestamps
with time.perf_counter_ns, appends each query's latency to an int64 array, and stops at
the first query that completes when BOTH the minimum duration has passed AND the minimum
query count is reached. The loops keep their bodies minimal: the per-query cost of the
harness is what benchmarks/bench_harness.py measures against a bare loop and LoadGen.

    single-stream  one query = one batch; the next is issued when the previous completes
    multi-stream   one query = samples_per_query samples (ceil(N / batch) calls back to back)
    offline        batches issued back to back, no waiting: the figure is samples/s
    server         queries arrive as a Poisson process at target_qps (seeded); one worker
                   serves them in order; latency = completion - scheduled arrival, so
                   queueing behind a slow query counts, as it does for a real server
"""
from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from itertools import cycle

SCENARIOS = ("single-stream", "multi-stream", "offline", "server")


@dataclass
class Measurement:
    latencies_ns: array  # int64, one per query, in issue order
    samples_per_query: int
    start_ns: int
    end_ns: int
    extra: dict = field(default_factory=dict)

    @property
    def queries(self) -> int:
        return len(self.latencies_ns)

    @property
    def duration_ns(self) -> int:
        return self.end_ns - self.start_ns


# A run that reaches its max_duration stops once it has at least this many queries (enough
# for a p99 that is not the largest sample), even short of min_queries.
MIN_QUERIES_AT_MAX = 100
_NEVER = 1 << 62


def _hard(start: int, max_duration_ns: int | None) -> int:
    return start + max_duration_ns if max_duration_ns else _NEVER


def back_to_back(run, batches: list, min_queries: int, min_duration_ns: int,
                 max_duration_ns: int | None = None) -> tuple[array, int, int]:
    """Issue one batch per query, each as soon as the previous returns: (latencies, start, end).

    The run lasts until min_duration AND min_queries are both met, or, past max_duration,
    once it has MIN_QUERIES_AT_MAX queries (a slow model); the extra test runs only after
    the minimum duration, so the timed loop pays nothing for it before then.
    """
    perf = time.perf_counter_ns
    lat = array("q")
    append = lat.append
    start = t1 = perf()
    deadline, hard = start + min_duration_ns, _hard(start, max_duration_ns)
    for x in cycle(batches):
        t0 = perf()
        run(x)
        t1 = perf()
        append(t1 - t0)
        if t1 >= deadline and (len(lat) >= min_queries or (t1 >= hard and len(lat) >= MIN_QUERIES_AT_MAX)):
            break
    return lat, start, t1


def grouped(run, queries: list, min_queries: int, min_duration_ns: int,
            max_duration_ns: int | None = None) -> tuple[array, int, int]:
    """Like back_to_back, but a query is a tuple of batches run one after the other.

    Kept as a separate loop on purpose: folding single-stream into this one would add an
    inner loop to every query of the hottest path the harness has (its overhead is a
    measured target against LoadGen).
    """
    perf = time.perf_counter_ns
    lat = array("q")
    append = lat.append
    start = t1 = perf()
    deadline, hard = start + min_duration_ns, _hard(start, max_duration_ns)
    for query in cycle(queries):
        t0 = perf()
        for x in query:
            run(x)
        t1 = perf()
        append(t1 - t0)
        if t1 >= deadline and (len(lat) >= min_queries or (t1 >= hard and len(lat) >= MIN_QUERIES_AT_MAX)):
            break
    return lat, start, t1


def poisson_arrivals(rate_qps: float, seed: int, chunk: int = 4096):
    """Arrival offsets in ns from the start of a seeded Poisson process (an endless iterator)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    offset = 0.0
    while True:
        gaps = rng.exponential(1e9 / rate_qps, chunk)
        times = offset + np.cumsum(gaps)
        offset = float(times[-1])
        yield from times.astype(np.int64).tolist()


def _wait_until(t_ns: int, perf=time.perf_counter_ns, sleep=time.sleep) -> None:
    # Sleep while far ahead (sleep overshoots by ~50-100 us), spin for the last stretch.
    while True:
        left = t_ns - perf()
        if left <= 0:
            return
        if left > 300_000:
            sleep((left - 200_000) / 1e9)


def server(run, batches: list, min_queries: int, min_duration_ns: int, rate_qps: float, seed: int,
           max_duration_ns: int | None = None) -> tuple[array, int, int, dict]:
    """Serve Poisson arrivals with one worker: (latencies, start, end, {issue delay stats})."""
    perf = time.perf_counter_ns
    lat = array("q")
    append = lat.append
    arrivals = poisson_arrivals(rate_qps, seed)
    start = perf() + 1_000_000  # first arrival measured from 1 ms ahead: no set-up in it
    deadline, hard = start + min_duration_ns, _hard(start, max_duration_ns)
    t1 = start
    late = 0  # queries that started after their arrival time (the worker was busy)
    for x, offset in zip(cycle(batches), arrivals):
        arrival = start + offset
        if perf() < arrival:
            _wait_until(arrival)
        else:
            late += 1
        run(x)
        t1 = perf()
        append(t1 - arrival)
        if t1 >= deadline and (len(lat) >= min_queries or (t1 >= hard and len(lat) >= MIN_QUERIES_AT_MAX)):
            break
    return lat, start, t1, {"queued_queries": late}


def sustained(run, items: list, duration_ns: int, window_ns: int, grouped: bool = False
              ) -> tuple[array, int, int, list]:
    """Queries back to back (one batch, or with grouped a tuple of batches, each) for
    duration_ns: (latencies, start, end, edges [(edge_ns, queries so far)]).

    A window closes at the first query completing at or after its edge (time.perf_counter_ns:
    CLOCK_MONOTONIC, the clock of cr.run.monitor's timeline) and the run ends at the first
    edge at or after duration_ns. A separate loop, so that the other
    scenarios' loops pay nothing for the window test (cr.results.sustained reads the rest).
    """
    perf = time.perf_counter_ns
    lat = array("q")
    append = lat.append
    edges: list = []
    start = t1 = perf()
    edge, stop = start + window_ns, start + duration_ns
    for x in cycle(items):
        t0 = perf()
        if grouped:
            for b in x:
                run(b)
        else:
            run(x)
        t1 = perf()
        append(t1 - t0)
        if t1 >= edge:
            edges.append((t1, len(lat)))
            if t1 >= stop:
                break
            while edge <= t1:  # a query longer than a window: the next edge after it
                edge += window_ns
    return lat, start, t1, edges
