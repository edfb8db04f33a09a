"""The phases of a benchmark around its timed scenario: warm-up until stable, and the harness
self-check (a bare timing loop after the scenario).

Warm-up (settings: warmup_queries, warmup_until_stable, warmup_window, warmup_threshold,
warmup_max_queries, warmup_max_s): every warm-up query is timed (not recorded as a result
latency). The queries are cut into windows of warmup_window; after each window its median
is compared with the previous window's. The warm-up has *converged* at the end of the
first window whose median differs from the previous one by less than warmup_threshold
(a share: 0.05 = 5%). It then ends as soon as it has also run warmup_queries queries; it
ends anyway, converged or not, after warmup_max_queries queries or warmup_max_s seconds.
warmup_queries 0 means no warm-up at all; warmup_until_stable false gives the fixed warm-up
of warmup_queries queries (bounded by warmup_max_s).

The first query the harness runs after the model loaded (the first warm-up query, else the
first timed one) is the *first inference*, recorded on its own: the cold start users see.

Fidelity: the same inputs, cycled in the same order, through a loop with nothing but two
clock reads and an append around the framework's own minimal call -- what a user would
write to time the model by hand with the framework alone (Backend.bare: session.run on
prebuilt feeds, set_tensor/invoke/get_tensor, module(*tensors) under the grad mode held once).
cr's p50 / that loop's p50 is what cr's harness *and* its backend wrapper cost (1.0: nothing).
A backend without bare() is timed through backend.run() instead, which sees the harness only;
the record says which loop it was ("bare": "framework" or "backend.run").
"""
from __future__ import annotations

import time
from array import array
from itertools import cycle
from statistics import median

from ..errors import CRError

MAX_MEDIANS = 64  # window medians kept in the record (the convergence curve), the first ones
FIDELITY_MAX_S = 10.0  # the bare loop runs as many queries as the scenario, at most this long


def check(settings) -> None:
    """CRError naming the warm-up or fidelity setting that cannot work."""
    if settings.warmup_window < 2:
        raise CRError(f"warmup_window must be at least 2 queries, found {settings.warmup_window}",
                      hint="a window's median needs a few queries: use 10 (the default) or more")
    if not 0 < settings.warmup_threshold < 1:
        raise CRError(f"warmup_threshold must be a share between 0 and 1, found {settings.warmup_threshold}",
                      hint="0.05 means: consecutive window medians within 5% of each other")
    if settings.warmup_max_queries < settings.warmup_queries:
        raise CRError(f"warmup_max_queries ({settings.warmup_max_queries}) is below warmup_queries ({settings.warmup_queries})",
                      hint="raise warmup_max_queries, or lower --warmup")
    if settings.fidelity and settings.scenario == "server":
        raise CRError("--fidelity compares cr's latencies with a bare back-to-back loop; the server scenario's "
                      "latencies include queueing behind earlier queries, so the ratio would not mean anything",
                      hint="use --fidelity with single-stream, multi-stream or offline")


def warm_up(run, items: list, settings, grouped: bool = False) -> dict:
    """Run the warm-up (see the module's doc) over items cycled; what it did:

    {"queries", "seconds", "converged" (bool; None without warm-up), "converged_at" (queries
    when it converged, else None), "stopped_by" ("converged" | "warmup_queries" |
    "max_queries" | "max_s" | "disabled"), "until_stable", "window", "threshold",
    "min_queries", "max_queries", "max_s", "window_medians_ns" (the first MAX_MEDIANS),
    "first_ns" (the first query's latency), "fastest_ns"}.
    grouped: an item is a tuple of batches run one after the other (multi-stream).
    """
    perf = time.perf_counter_ns
    stable = settings.warmup_until_stable
    least = settings.warmup_queries
    most = max(settings.warmup_max_queries, least) if stable else least
    window = settings.warmup_window
    out = {"until_stable": stable, "window": window, "threshold": settings.warmup_threshold, "min_queries": least,
           "max_queries": most, "max_s": settings.warmup_max_s}
    if least <= 0 or most <= 0:
        return {**out, "queries": 0, "seconds": 0.0, "converged": None, "converged_at": None, "stopped_by": "disabled",
                "window_medians_ns": [], "first_ns": None, "fastest_ns": 0}
    lat, medians = [], []
    previous, converged_at, stopped_by = None, None, None
    start = perf()
    stop = start + int(settings.warmup_max_s * 1e9)
    for item in cycle(items):
        t0 = perf()
        if grouped:
            for x in item:
                run(x)
        else:
            run(item)
        t1 = perf()
        lat.append(t1 - t0)
        n = len(lat)
        if stable and converged_at is None and n % window == 0:
            m = median(lat[-window:])
            if len(medians) < MAX_MEDIANS:
                medians.append(m)
            if previous is not None and abs(m - previous) < settings.warmup_threshold * previous:
                converged_at = n
            previous = m
        if n >= least and (converged_at is not None or not stable):
            stopped_by = "converged" if converged_at is not None and converged_at >= least else "warmup_queries"
            break
        if n >= most:
            stopped_by = "max_queries"
            break
        if t1 > stop:
            stopped_by = "max_s"
            break
    return {**out, "queries": len(lat), "seconds": (perf() - start) / 1e9,
            "converged": (converged_at is not None) if stable else None, "converged_at": converged_at,
            "stopped_by": stopped_by, "window_medians_ns": medians, "first_ns": lat[0], "fastest_ns": min(lat)}


def phases(warm: dict, metrics: dict, latencies_ns=None) -> dict:
    """The record's metrics["phases"] from warm_up()'s account, the scenario's metrics and its
    latencies (the first is the first inference when there was no warm-up):
    {"first_inference_s", "first_inference_in" ("warmup" | "steady"), "warmup": {...},
    "steady": {"queries", "seconds", "p50_ns", "latencies": "latency_ns"}} (the runtime
    action adds "load_s" and "inputs_s")."""
    lat = metrics.get("latency_ns") or {}
    first = warm.get("first_ns")
    where = "warmup"
    if first is None:
        first, where = (latencies_ns[0] if latencies_ns else None), "steady"
    detail = {k: v for k, v in warm.items() if k not in ("first_ns", "fastest_ns")}
    return {
        "first_inference_s": first / 1e9 if first is not None else None,
        "first_inference_in": where if first is not None else None,
        "warmup": detail,
        "steady": {"queries": metrics.get("queries"), "seconds": metrics.get("duration_s"), "p50_ns": lat.get("p50"),
                   "latencies": "latency_ns"},
    }


def bare_loop(run, items: list, count: int, max_s: float, grouped: bool = False) -> array:
    """count queries over items cycled (fewer when max_s passes), each timed by two clock reads."""
    perf = time.perf_counter_ns
    lat = array("q")
    append = lat.append
    stop = perf() + int(max_s * 1e9)
    feed = cycle(items)
    if grouped:
        for _ in range(count):
            query = next(feed)
            t0 = perf()
            for x in query:
                run(x)
            t1 = perf()
            append(t1 - t0)
            if t1 > stop:
                break
    else:
        for _ in range(count):
            x = next(feed)
            t0 = perf()
            run(x)
            t1 = perf()
            append(t1 - t0)
            if t1 > stop:
                break
    return lat


def framework_loop(backend, batches: list, items: list):
    """(call, {id(items[i]): the args call takes for batches[i]}) from backend.bare(batches),
    or None when the backend has no framework loop of its own. items: what the timed loops
    ran for each batch (Backend.timed's)."""
    hook = getattr(backend, "bare", None)
    made = hook(batches) if callable(hook) else None
    if made is None:
        return None
    call, args = made
    return call, {id(item): a for item, a in zip(items, args)}


def framework_bare_loop(call, items: list, count: int, max_s: float, grouped: bool = False) -> array:
    """bare_loop over the framework's own call: call(*args) on args made beforehand. Written
    out rather than bare_loop(lambda x: call(*x)): a wrapper call per query is exactly the
    cost this loop exists to leave out."""
    perf = time.perf_counter_ns
    lat = array("q")
    append = lat.append
    stop = perf() + int(max_s * 1e9)
    feed = cycle(items)
    if grouped:
        for _ in range(count):
            query = next(feed)
            t0 = perf()
            for x in query:
                call(*x)
            t1 = perf()
            append(t1 - t0)
            if t1 > stop:
                break
    else:
        for _ in range(count):
            x = next(feed)
            t0 = perf()
            call(*x)
            t1 = perf()
            append(t1 - t0)
            if t1 > stop:
                break
    return lat


FIDELITY_BLOCKS = 20  # the interleaved comparison: this many blocks, alternately cr's and the framework's


def fidelity(run, items: list, metrics: dict, grouped: bool = False, max_s: float = FIDELITY_MAX_S,
             bare=None) -> dict:
    """The record's metrics["fidelity"] right after the scenario, over the same items:

    {"bare" ("framework" | "backend.run": the bare loop's body), "bare_p50_ns", "p50_ns"
    (cr's), "ratio" (cr / bare), "delta_ns" (cr's p50 - the bare p50, a query),
    "scenario_p50_ns", "queries" (of the bare loop), "seconds", "interleaved"}.

    bare: framework_loop()'s (call, args by batch id). With it, cr's callable and the
    framework's call are timed in alternating blocks by the same two-clock-read loop (as
    many queries as the scenario ran, at most max_s), so a neighbour's load on a shared
    machine falls on both: p50_ns is cr's p50 in those blocks. Without it, the bare loop
    runs run() itself and is compared with the scenario's p50 (the harness's cost alone).
    """
    from . import stats

    queries = max(1, int(metrics.get("queries") or 1))
    scenario = (metrics.get("latency_ns") or {}).get("p50")
    t0 = time.perf_counter()
    if bare is not None:
        call, by_id = bare
        args = [tuple(by_id[id(b)] for b in q) for q in items] if grouped else [by_id[id(b)] for b in items]
        block = max(1, -(-queries // FIDELITY_BLOCKS))
        ours, floor_lat = array("q"), array("q")
        stop = time.perf_counter() + max_s
        while len(floor_lat) < queries and time.perf_counter() < stop:
            ours.extend(bare_loop(run, items, block, max_s / 2, grouped))
            floor_lat.extend(framework_bare_loop(call, args, block, max_s / 2, grouped))
        lat, p50 = floor_lat, stats.summarize(ours)["p50"]
    else:
        lat = bare_loop(run, items, queries, max_s, grouped)
        p50 = scenario
    seconds = time.perf_counter() - t0
    floor = stats.summarize(lat)["p50"]
    return {"bare": "framework" if bare is not None else "backend.run", "bare_p50_ns": floor, "p50_ns": p50,
            "ratio": (p50 / floor) if p50 and floor else None,
            "delta_ns": (p50 - floor) if p50 is not None and floor is not None else None,
            "scenario_p50_ns": scenario, "queries": len(lat), "seconds": seconds, "interleaved": bare is not None}
