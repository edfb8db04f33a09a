"""Layer-level profiles: a framework's own profiler, normalised to one table and one trace.

A backend that can be profiled names its profiler class in the class attribute
``PROFILER`` ("module:Class"), which the host reads without importing any framework
(cr.runtime.registry.load_class imports only the backend's module). The profiler:

    cls.load_options(workdir) -> dict   backend options to add before load() (e.g.
                                        onnxruntime's profile=true), default none
    p = cls(backend, workdir)           built on the loaded backend
    p.start(); p.run(batch) ...; p.stop() -> Collected

``run`` is the backend's run() with a marker around it where the framework's clock is
not ours (torch.profiler.record_function, a tf.profiler TraceMe); ``Collected.markers``
are those runs' starts on the framework's clock, which align() uses to move every layer
event onto this process's time.perf_counter_ns: one clock for the model, layer and
system tracks. ``level`` is "layer", or "model" when the framework exposes no per-layer
timing (then ``note`` says so in one line and the table lists ops untimed, if known).

Every figure of the table is one statistic: per query, the median over the profiled
queries (aggregate()). A layer's time is summed within each query, then its median (and
p10..p90) taken over the queries; the model time is the median of the same queries'
spans (the time the harness measured around run()); a layer's ``share`` is its median
over the model median. ``coverage`` is the sum of the layer medians over the model
median and ``unattributed`` the remainder (model median less that sum): positive, time
no layer accounts for (framework overhead between ops, the profiler's own bookkeeping,
Python); negative, ops overlapping on several threads. Outliers (one query the OS
stalled) move none of these, which is why no mean is shown.
"""
from __future__ import annotations

import importlib
import statistics
from dataclasses import dataclass, field

from ...errors import CRError


class ProfileUnreadable(CRError):
    """The framework's profile file could not be parsed; the file is kept and named."""


def unreadable(framework: str, path: str, reason: str) -> ProfileUnreadable:
    return ProfileUnreadable(f"cannot read {framework}'s profile {path}: {reason}",
                             hint="the file is kept as it was written; check the framework's version "
                                  "(its profile format may have changed), or profile on another backend")


@dataclass
class LayerEvent:
    name: str            # layer or node name as the framework calls it ("/features/features.0/Conv")
    op: str              # op type ("Conv", "aten::conv2d", "Conv2D")
    start_ns: int        # on the framework's clock until align(), then on perf_counter_ns
    dur_ns: int
    provider: str | None = None   # execution provider, kernel, delegate, tactic
    thread: object = 0
    args: dict | None = None
    query: int | None = None      # set by align()


@dataclass
class Collected:
    events: list = field(default_factory=list)    # LayerEvent
    markers: list = field(default_factory=list)   # start of each run, framework clock (ns)
    files: list = field(default_factory=list)     # the framework's own profile files, kept
    untimed: list = field(default_factory=list)   # [{"name", "op"}] ops known but not timed
    note: str | None = None


class Profiler:
    level = "layer"
    source = ""
    #: False when the framework profiles from load on (ONNX Runtime): the plain queries the
    #: overhead is measured against run on a second session opened without profiling
    UNPROFILED_BASELINE = True

    def __init__(self, backend, workdir: str):
        self.backend, self.workdir = backend, workdir

    @classmethod
    def load_options(cls, workdir: str) -> dict:
        return {}

    def start(self) -> None:
        pass

    def run(self, batch):
        return self.backend.run(batch)

    def stop(self) -> Collected:
        return Collected()


class ModelOnly(Profiler):
    """Model-level spans only (the null backend, a framework without per-layer timing)."""

    level = "model"
    source = "model-level spans (the harness's own timer)"
    NOTE = "this backend records no per-layer timing: model-level spans only"

    def stop(self) -> Collected:
        return Collected(note=self.NOTE)


def profiler_class(backend_cls) -> type | None:
    """The profiler class a backend class names in PROFILER, None when it names none."""
    spec = getattr(backend_cls, "PROFILER", None)
    if not spec:
        return None
    module, _, attr = str(spec).partition(":")
    if not module.startswith("."):
        return getattr(importlib.import_module(module), attr)
    return getattr(importlib.import_module(module, __name__), attr)


def align(collected: Collected, spans: list[tuple[int, int]]) -> tuple[list, dict]:
    """Move the layer events onto the spans' clock and keep those inside a profiled query.

    The last len(spans) markers pair with the spans (earlier ones are warm-up runs the
    framework also recorded); the offset is their median difference. Without markers the
    events are taken to be on the spans' clock already. Returns (events, how) with each
    event's ``query`` set; events outside every query are dropped (counted in how)."""
    markers = sorted(collected.markers)[-len(spans):] if spans else []
    if markers and len(markers) == len(spans):
        offset = int(statistics.median(s[0] - m for s, m in zip(spans, markers)))
        how = {"clock": "aligned by per-run markers", "offset_ns": offset}
    elif markers:
        offset = int(statistics.median(s[0] - m for s, m in zip(spans, markers)))
        how = {"clock": f"aligned by {len(markers)} markers for {len(spans)} queries", "offset_ns": offset}
    else:
        offset = 0
        how = {"clock": "framework events already on the harness clock", "offset_ns": 0}
    kept, dropped = [], 0
    ends = [(s, e) for s, e in spans]
    slack = 50_000  # 50 us: a marker starts a little after the harness's timer
    q = 0
    for ev in sorted(collected.events, key=lambda e: e.start_ns):
        ev.start_ns += offset
        mid = ev.start_ns + ev.dur_ns // 2
        while q < len(ends) and mid > ends[q][1] + slack:
            q += 1
        if q < len(ends) and ends[q][0] - slack <= mid <= ends[q][1] + slack:
            ev.query = q
            kept.append(ev)
        else:
            dropped += 1
    how["outside_queries"] = dropped
    return kept, how


def spread(values: list) -> dict:
    """{"p50", "p10", "p90"} of values (ns, ints); the 10th and 90th percentiles by linear
    interpolation between order statistics (statistics.quantiles, "inclusive")."""
    v = sorted(values)
    if not v:
        return {"p50": None, "p10": None, "p90": None}
    if len(v) == 1:
        return {"p50": int(v[0]), "p10": int(v[0]), "p90": int(v[0])}
    cuts = statistics.quantiles(v, n=10, method="inclusive")
    return {"p50": int(statistics.median(v)), "p10": int(round(cuts[0])), "p90": int(round(cuts[-1]))}


def aggregate(events: list, spans: list[tuple[int, int]], untimed: list | None = None) -> dict:
    """The per-layer table and the summary (what a profile record holds).

    Every figure is per query and a median over the profiled queries: a layer's events are
    summed within each query (a layer that did not run in a query counts 0 there), then
    ``median_ns`` (with ``p10_ns``/``p90_ns``) is taken over the queries; the model time is
    the median of the same queries' spans. A layer's ``share`` is its median over the model
    median, and ``unattributed`` is the model median less the sum of the layer medians
    (negative when ops overlapped on several threads). Means are kept for reference only
    (``mean_per_query_ns``): one query the OS stalled moves a mean, not a median."""
    n_q = len(spans)
    model_total = sum(e - s for s, e in spans)
    groups: dict = {}
    for order, ev in enumerate(events):
        key = (ev.name, ev.op, ev.provider)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"name": ev.name, "op": ev.op, "provider": ev.provider, "calls": 0, "total_ns": 0,
                               "order": order, "_per_query": [0] * n_q}
            if ev.args and ev.args.get("shapes"):
                g["shapes"] = ev.args["shapes"]
        g["calls"] += 1
        g["total_ns"] += ev.dur_ns
        if ev.query is not None and 0 <= ev.query < n_q:
            g["_per_query"][ev.query] += ev.dur_ns
    durations = [e - s for s, e in spans]
    model = spread(durations)
    p50 = model["p50"]
    for g in groups.values():
        per_query = g.pop("_per_query")
        st = spread(per_query)
        g["median_ns"], g["p10_ns"], g["p90_ns"] = st["p50"], st["p10"], st["p90"]
        g["per_query_ns"] = g["median_ns"]  # the statistic every consumer compares (layermatch, dashboard)
        g["mean_per_query_ns"] = g["total_ns"] // max(1, n_q)
        g["calls_per_query"] = round(g["calls"] / max(1, n_q), 3)
        g["share"] = round(g["median_ns"] / p50, 5) if p50 and g["median_ns"] is not None else None
    layers = sorted(groups.values(), key=lambda g: (-(g["median_ns"] or 0), -g["total_ns"], g["order"]))
    first = sorted(layers, key=lambda g: g["order"])
    for position, g in enumerate(first):
        g["order"] = position  # execution order (first call), what fusion detection walks
    layer_total = sum(g["total_ns"] for g in layers)
    median_sum = sum(g["median_ns"] or 0 for g in layers)
    per_query = [0] * n_q
    for ev in events:
        if ev.query is not None and 0 <= ev.query < n_q:
            per_query[ev.query] += ev.dur_ns
    ratios = [t / d for t, d in zip(per_query, durations) if d > 0]
    unattributed = None
    if layers and p50:
        rest = p50 - median_sum
        # medians do not add: the remainder splits into the time between ops in a typical query
        # (model median less the median of each query's summed layer time) and the scatter (that
        # median less the sum of the layer medians: each query slowed in different layers, by
        # preemption or load, which no layer's median shows)
        typical = int(statistics.median(per_query)) if per_query else 0
        unattributed = {"ns": rest, "share": round(rest / p50, 5),
                        "between_ops_ns": p50 - typical, "scatter_ns": typical - median_sum,
                        "meaning": ("time inside a query no layer's median accounts for (the framework's per-run cost "
                                    "between ops, the profiler's bookkeeping, Python; and the scatter of per-query "
                                    "stalls over different layers)") if rest >= 0 else
                                   ("negative: the layer medians add up to more than the model median, so ops "
                                    "overlapped (ran in parallel on several threads)")}
    summary = {
        "queries": n_q,
        "statistic": "median per query over the profiled queries (spread: p10..p90)",
        "model_ns": {"total": model_total, "p50": p50, "p10": model["p10"], "p90": model["p90"],
                     "mean": model_total // n_q if spans else None,
                     "min": min(durations) if durations else None, "max": max(durations) if durations else None},
        "layer_ns_total": layer_total,
        "layer_median_sum_ns": median_sum if layers else None,
        "layer_ns_per_query": spread(per_query) if layers else None,
        # the sum of the layer medians over the model median: what the table's shares add up to
        "coverage": round(median_sum / p50, 4) if p50 and layers else None,
        # the median of each query's own (layer time / query time): a check on the one above
        "coverage_per_query": round(statistics.median(ratios), 4) if ratios and layers else None,
        "coverage_of_total": round(layer_total / model_total, 4) if model_total and layers else None,
        "unattributed": unattributed,
        "layers": len(layers),
        "events": len(events),
    }
    if untimed:
        summary["untimed_ops"] = len(untimed)
    return {"summary": summary, "layers": layers}
