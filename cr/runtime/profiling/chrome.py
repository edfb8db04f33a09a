"""One profile as a Chrome Trace Event file (JSON object format; opens in Perfetto and chrome://tracing).

Three processes (tracks), all timestamps on one clock (time.perf_counter_ns of the
profiled process, shifted so the first query starts at 0; microseconds, as the format
wants):

    pid 1  model     one complete ("X") event per profiled query
    pid 2  layers    the framework's ops/layers, one thread row per framework thread;
                     args: op, provider (execution provider, kernel, delegate), query, shapes
    pid 3  system    counter ("C") events: CPU utilisation per core (%), process RSS (MiB),
                     CPU frequency per core (MHz) where readable

Layer events come from the framework's clock, moved onto this one by the runs' markers
(cr.runtime.profiling.align); ``otherData`` says how.
"""
from __future__ import annotations

MODEL_PID, LAYER_PID, SYSTEM_PID = 1, 2, 3


def _meta(pid: int, name: str, tid: int | None = None, thread: str | None = None) -> dict:
    if tid is None:
        return {"ph": "M", "pid": pid, "tid": 0, "name": "process_name", "args": {"name": name}}
    return {"ph": "M", "pid": pid, "tid": tid, "name": "thread_name", "args": {"name": thread}}


def build(spans: list[tuple[int, int]], events: list, system: list[tuple[int, dict]], other: dict) -> dict:
    """The trace object: spans [(start_ns, end_ns)] per query, events (LayerEvent, aligned),
    system samples [(t_ns, values)] (cr.runtime.profiling.sysmon)."""
    origin = spans[0][0] if spans else 0
    us = lambda ns: round((ns - origin) / 1000.0, 3)  # noqa: E731 - one conversion, used everywhere
    out = [_meta(MODEL_PID, "model"), _meta(MODEL_PID, "", 1, "queries"),
           _meta(LAYER_PID, f"layers ({other.get('framework') or other.get('backend')})"), _meta(SYSTEM_PID, "system")]
    for i, (start, end) in enumerate(spans):
        out.append({"ph": "X", "pid": MODEL_PID, "tid": 1, "name": f"query {i}", "cat": "model",
                    "ts": us(start), "dur": round((end - start) / 1000.0, 3), "args": {"query": i}})
    threads: dict = {}
    for e in events:
        tid = threads.setdefault(e.thread, len(threads) + 1)
        args = {"op": e.op, "query": e.query}
        if e.provider:
            args["provider"] = e.provider
        if e.args:
            args.update(e.args)
        out.append({"ph": "X", "pid": LAYER_PID, "tid": tid, "name": e.name or e.op, "cat": "layer",
                    "ts": us(e.start_ns), "dur": round(e.dur_ns / 1000.0, 3), "args": args})
    for thread, tid in threads.items():
        out.append(_meta(LAYER_PID, "", tid, f"thread {thread}"))
    for t, values in system:
        if t < origin:
            continue
        if "cpu" in values:
            out.append({"ph": "C", "pid": SYSTEM_PID, "tid": 0, "name": "CPU utilisation (%)", "ts": us(t), "args": values["cpu"]})
        if "rss_mib" in values:
            out.append({"ph": "C", "pid": SYSTEM_PID, "tid": 0, "name": "process RSS (MiB)", "ts": us(t),
                        "args": {"rss": values["rss_mib"]}})
        if "mhz" in values:
            out.append({"ph": "C", "pid": SYSTEM_PID, "tid": 0, "name": "CPU frequency (MHz)", "ts": us(t), "args": values["mhz"]})
    return {"traceEvents": out, "displayTimeUnit": "ms", "otherData": {"format": "cr-profile-trace/1", **other}}


def tracks(trace: dict) -> set[str]:
    """Which of the three tracks hold events: {"model", "layers", "system"} (for checks and tests)."""
    names = {MODEL_PID: "model", LAYER_PID: "layers", SYSTEM_PID: "system"}
    return {names[e["pid"]] for e in trace.get("traceEvents", []) if e.get("ph") in ("X", "C") and e.get("pid") in names}
