"""Sustained runs: the latency curve over time, throttling onset, drift, and whether a
campaign's ranking at the start is its ranking later (docs/sustained.md).

    block = analyse(latencies, edges, states, start_ns, 300.0, 1.0)   # metrics["sustained"]
    block["verdict"]   # 'sustained: no throttling, no drift (first minute p50 1.23 ms, ...)'
    ranking = compare_rankings(entries)                    # cold vs sustained ranks, swaps beyond noise

A sustained benchmark (``cr benchmark ... --sustained 5m``) issues queries back to back for
the whole duration; the harness (cr.runtime.scenarios.sustained) closes a *window* at the
first query completing at or after each window edge and records where (the clock, the
queries so far). cr reads the machine's state meanwhile, outside the measured process
(cr.run.monitor's timeline, sampled every 0.1 s on the same monotonic clock) and gives
each window its samples: the mean CPU clock, the hottest thermal zone, the 1-minute load
average and the share of the CPU used by other processes. This module turns that into
the record's ``metrics.sustained`` (cr.run.launch calls analyse() when the child ends):

  windows      per window: start_s, end_s, queries, p50_ns, p99_ns and the state
  reference    the first minute (REFERENCE_S), or the first quarter of a run shorter than
               two minutes (at least one window): what "the start" means below
  throttling   the first window from which latency *stays* above the reference p50 by more
               than SLOWDOWN (10 %), or the CPU clock stays below the reference clock by
               more than FREQ_DROP (5 %); "stays": that window is past the threshold and so
               are at least PERSIST (90 %) of the windows from it to the end
  drift        the rest of the run against the reference: the ratio of p50s with a 95 %
               moving-block bootstrap interval and the verdict of cr.results.significance
               (the same resampling and the same 3 % minimum effect as cr results compare)

Standard library only: `cr results show` imports it at the CLI.
"""
from __future__ import annotations

import math

from ..durations import format_duration
from .significance import quantile


REFERENCE_S = 60.0  # "the first minute"
SHORT_RUN_S = 120.0  # below this, the reference is the first quarter of the run
SLOWDOWN = 0.10  # a window is slow when its p50 is above the reference p50 by more than this
FREQ_DROP = 0.05  # a window is clocked down when its CPU clock is below the reference's by more than this
PERSIST = 0.90  # "stays": this share of the windows from the onset to the end are past the threshold


def _ms(ns) -> str:
    from .summary import duration_text

    return duration_text(ns)


def _median(values):
    values = sorted(v for v in values if v is not None)
    return quantile(values, 0.5) if values else None


# -- the curve ---------------------------------------------------------------------------------

def windows_from(latencies, edges: list, states: list, start_ns: int) -> list[dict]:
    """The windows of a sustained run. edges: [(end_ns, queries so far)] as the harness closed
    each window; states: the machine's state read there (one dict per edge, may be {})."""
    out = []
    first, t_prev = 0, start_ns
    for i, (end_ns, upto) in enumerate(edges):
        chunk = sorted(latencies[first:upto])
        row = {"start_s": round((t_prev - start_ns) / 1e9, 4), "end_s": round((end_ns - start_ns) / 1e9, 4),
               "queries": len(chunk), "p50_ns": quantile(chunk, 0.5) if chunk else None,
               "p99_ns": quantile(chunk, 0.99) if chunk else None}
        row.update(states[i] if i < len(states) and isinstance(states[i], dict) else {})
        out.append(row)
        first, t_prev = upto, end_ns
    return out


def reference_count(windows: list[dict]) -> tuple[int, float]:
    """(how many windows make the reference, its nominal length in s): the windows ending by
    REFERENCE_S, or by a quarter of a run shorter than SHORT_RUN_S; at least one, and at least
    one window is left after it when the run has two."""
    if not windows:
        return 0, 0.0
    total = windows[-1]["end_s"]
    span = REFERENCE_S if total >= SHORT_RUN_S else total / 4
    n = sum(1 for w in windows if w["end_s"] <= span + 1e-9)
    n = max(1, min(n, len(windows) - 1 if len(windows) > 1 else 1))
    return n, span


def _onset(flags: list[bool], start: int) -> int | None:
    """The first index k >= start with flags[k] and at least PERSIST of flags[k:] set."""
    n = len(flags)
    after = [0] * (n + 1)  # after[k]: how many flags are set in flags[k:]
    for k in range(n - 1, -1, -1):
        after[k] = after[k + 1] + (1 if flags[k] else 0)
    for k in range(start, n):
        if flags[k] and after[k] >= PERSIST * (n - k):
            return k
    return None


def throttling_rule() -> str:
    return (f"onset: the first window after the reference from which the p50 stays above the reference p50 by more "
            f"than {SLOWDOWN:.0%}, or the mean CPU clock stays below the reference clock by more than {FREQ_DROP:.0%} "
            f"(stays: that window and at least {PERSIST:.0%} of the windows from it to the end)")


def detect_throttling(windows: list[dict], ref_n: int, ref_p50: float | None = None) -> dict:
    """{"rule", "throttled", "onset_s", "latency": {...} | None, "frequency": {...} | None}
    of the windows after the first ref_n (the reference); ref_p50 defaults to the median of
    the reference windows' p50s (the harness passes the p50 of all the reference's queries)."""
    out = {"rule": throttling_rule(), "slowdown": SLOWDOWN, "freq_drop": FREQ_DROP, "persist": PERSIST,
           "throttled": False, "onset_s": None, "onset_window": None, "latency": None, "frequency": None}
    ref = windows[:ref_n]
    if ref_p50 is None:
        ref_p50 = _median(w.get("p50_ns") for w in ref)
    out["reference_p50_ns"] = ref_p50
    if ref_p50:
        # a window with no query completed in it (a query longer than the window) counts as slow
        slow = [w.get("p50_ns") is None or w["p50_ns"] > ref_p50 * (1 + SLOWDOWN) for w in windows]
        k = _onset(slow, ref_n)
        if k is not None:
            later = _median(w.get("p50_ns") for w in windows[k:])
            out["latency"] = {"window": k, "at_s": windows[k]["start_s"], "p50_ns": later,
                              "p50_change": later / ref_p50 - 1 if later else None}
    ref_freq = _median(w.get("freq_mhz") for w in ref)
    out["reference_freq_mhz"] = ref_freq
    if ref_freq:
        low = [w.get("freq_mhz") is not None and w["freq_mhz"] < ref_freq * (1 - FREQ_DROP) for w in windows]
        k = _onset(low, ref_n)
        if k is not None:
            later = _median(w.get("freq_mhz") for w in windows[k:])
            out["frequency"] = {"window": k, "at_s": windows[k]["start_s"], "freq_mhz": later,
                                "freq_change": later / ref_freq - 1 if later else None}
    found = [x for x in (out["latency"], out["frequency"]) if x]
    if found:
        first = min(found, key=lambda x: x["window"])
        out.update(throttled=True, onset_window=first["window"], onset_s=first["at_s"])
    return out


# -- drift: the reference against the rest, by cr.results.significance's bootstrap ---------------

def p50_ratio(base, other, seed: int | None = None) -> dict:
    """p50(other) / p50(base) with its interval and verdict, by cr.results.significance's
    rule, as compare_pair applies it: the point from all the queries, the moving-block
    bootstrap on both sides thinned to significance.SAMPLES_MAX (seeded mulberry32), the
    interval re-centred on the point and widened to hold it, so that ratio and verdict never
    disagree. {"ratio", "ci", "verdict" (faster / slower / inconclusive: other against
    base), "base_p50_ns", "p50_ns", "samples": [n base, n other] (after thinning), "why"
    (no interval)}."""
    from . import significance as sig

    out = {"ratio": None, "ci": None, "verdict": None, "base_p50_ns": None, "p50_ns": None,
           "samples": [len(base) if base is not None else 0, len(other) if other is not None else 0], "why": None}
    if base is None or other is None or min(out["samples"]) < sig.MIN_SAMPLES:
        out["why"] = f"fewer than {sig.MIN_SAMPLES} latencies on a side ({out['samples'][0]} and {out['samples'][1]})"
        return out
    pa, pb = quantile(sorted(base), 0.5), quantile(sorted(other), 0.5)
    out.update(base_p50_ns=pa, p50_ns=pb)
    a, b = sig.thin(base), sig.thin(other)
    out["samples"] = [len(a), len(b)]
    ta, tb = quantile(sorted(a), 0.5), quantile(sorted(b), 0.5)
    if min(pa, pb, ta, tb) <= 0:
        out["why"] = "a latency of zero has no ratio"
        return out
    draw = sig.mulberry32(sig.SEED if seed is None else seed)
    sa, sb = sig.resample_stats(a, draw), sig.resample_stats(b, draw)
    point, shift = pb / pa, (pb / pa) / (tb / ta)
    ratios = sorted(rb[0] / ra[0] * shift for ra, rb in zip(sa, sb) if ra[0] > 0)
    lo_q = (1 - sig.CONFIDENCE) / 2
    lo, hi = quantile(ratios, lo_q), quantile(ratios, 1 - lo_q)
    lo, hi = min(lo, point), max(hi, point)
    out.update(ratio=point, ci=[lo, hi], verdict=sig.verdict(lo, hi, "lower"))
    return out


def drift_rule() -> str:
    from . import significance as sig

    return (f"the rest of the run against the reference: ratio of p50s with a {sig.CONFIDENCE:.0%} {sig.METHOD} "
            f"({sig.RESAMPLES} resamples); drift when "
            f"the whole interval is beyond {sig.MIN_EFFECT:.0%} either way")


def drift(ref_latencies, rest_latencies) -> dict:
    """The drift block: p50_ratio of the rest against the reference, its rule and a word."""
    out = {"rule": drift_rule(), **p50_ratio(ref_latencies, rest_latencies)}
    out["drift"] = {"slower": "slower", "faster": "faster", "inconclusive": "none"}.get(out["verdict"])
    return out


# -- the whole block -------------------------------------------------------------------------

def analyse(latencies, edges: list, states: list, start_ns: int, duration_s: float, window_s: float,
            state_note: str | None = None) -> dict:
    """metrics["sustained"] of a sustained run (see the module docstring)."""
    windows = windows_from(latencies, edges, states, start_ns)
    ref_n, span = reference_count(windows)
    cut = edges[ref_n - 1][1] if ref_n and edges else 0
    ref_lat = latencies[:cut]
    ref_p50 = quantile(sorted(ref_lat), 0.5) if len(ref_lat) else None
    seconds = windows[ref_n - 1]["end_s"] if ref_n else 0.0
    block = {
        "duration_s": duration_s,
        "window_s": window_s,
        "ran_s": windows[-1]["end_s"] if windows else 0.0,
        "reference": {"windows": ref_n, "span_s": span, "seconds": seconds,
                      "queries": cut, "label": reference_label(seconds, window_s),
                      "rule": f"the windows ending in the first {format_duration(REFERENCE_S)} (the first quarter of a "
                              f"run shorter than {format_duration(SHORT_RUN_S)}), at least one"},
        "windows": windows,
        "state_sampled": state_note or "by cr every 0.1 s outside the measured process, the samples within each window",
        "throttling": detect_throttling(windows, ref_n, ref_p50),
        "drift": drift(ref_lat, latencies[cut:]),
    }
    block["verdict"] = verdict_line(block)
    return block


def reference_label(seconds: float, window_s: float) -> str:
    """'first minute' for a reference that ends within a window of one minute, else 'first 15s'
    (what it actually covers: a run of 2 s with 1 s windows has a reference of 1 s, not 0.5 s)."""
    return "first minute" if abs(seconds - REFERENCE_S) <= window_s else f"first {format_duration(seconds)}"


def _pct(x) -> str:
    return f"{100 * x:+.0f}%" if x is not None else "?"


def verdict_line(block: dict) -> str:
    """'sustained: no throttling, no drift (first minute p50 1.23 ms, rest 1.24 ms, ratio 1.01,
    95% interval 0.99..1.03)' or 'sustained: throttling from 2m10s: p50 +18%; drift: rest slower (...)'."""
    label = (block.get("reference") or {}).get("label") or "first minute"
    t, d = block.get("throttling") or {}, block.get("drift") or {}
    parts = []
    if t.get("throttled"):
        bits = []
        if t.get("latency"):
            bits.append(f"p50 {_pct(t['latency'].get('p50_change'))}")
        if t.get("frequency"):
            f = t["frequency"]
            bits.append(f"CPU clock {_pct(f.get('freq_change'))}"
                        + (f" from {format_duration(f['at_s'])}" if f["window"] != t["onset_window"] else ""))
        parts.append(f"throttling from {format_duration(t['onset_s'])}: " + ", ".join(bits))
    else:
        parts.append("no throttling")
    if d.get("ratio") is None:
        figures = f"not judged: {d.get('why')}"
        parts.append(f"drift {figures}")
    else:
        figures = (f"{label} p50 {_ms(d['base_p50_ns'])}, rest {_ms(d['p50_ns'])}, ratio {d['ratio']:.2f}, "
                   f"95% interval {d['ci'][0]:.2f}..{d['ci'][1]:.2f}")
        parts.append({"slower": f"drift: rest slower ({figures})", "faster": f"drift: rest faster ({figures})"}
                     .get(d.get("verdict"), f"no drift ({figures})"))
    return "sustained: " + ("; " if t.get("throttled") or d.get("verdict") in ("slower", "faster") else ", ").join(parts)


def rows(metrics: dict, max_rows: int = 10) -> list[list]:
    """[[field, value]] for a result table (cr benchmark, cr results show): the verdict, the
    rules, and the curve in at most max_rows even spans of windows (nothing without a block)."""
    block = metrics.get("sustained") if isinstance(metrics, dict) else None
    if not isinstance(block, dict):
        return []
    windows = [w for w in block.get("windows") or [] if isinstance(w, dict)]
    out = [["sustained", f"{format_duration(block.get('ran_s') or 0)} in {len(windows)} windows of "
                         f"{format_duration(block.get('window_s') or 0)} (asked {format_duration(block.get('duration_s') or 0)})"],
           ["", str(block.get("verdict") or "")]]
    t, d = block.get("throttling") or {}, block.get("drift") or {}
    if t.get("rule"):
        out.append(["throttling rule", t["rule"]])
    if d.get("rule"):
        out.append(["drift rule", d["rule"]])
    if windows:
        step = max(1, math.ceil(len(windows) / max_rows))
        for i in range(0, len(windows), step):
            group = windows[i:i + step]
            out.append(["" if i else "curve", _span_text(group)])
    return out


def _span_text(group: list[dict]) -> str:
    queries = sum(w.get("queries") or 0 for w in group)
    p50 = _median(w.get("p50_ns") for w in group)
    p99 = max((w["p99_ns"] for w in group if w.get("p99_ns") is not None), default=None)
    text = (f"{format_duration(group[0]['start_s'])}-{format_duration(group[-1]['end_s'])}: p50 {_ms(p50) or '-'}, "
            f"p99 {_ms(p99) or '-'}, {queries} queries")
    freq = _median(w.get("freq_mhz") for w in group)
    temp = max((w["temp_c"] for w in group if isinstance(w.get("temp_c"), (int, float))), default=None)
    load = max((w["load_1m"] for w in group if isinstance(w.get("load_1m"), (int, float))), default=None)
    other = max((w["cpu_other_share"] for w in group if isinstance(w.get("cpu_other_share"), (int, float))), default=None)
    extra = [f"{freq:.0f} MHz" if freq else "", f"{temp:.0f} °C" if temp is not None else "",
             f"load {load:.2f}" if load is not None else "", f"others {other:.0%} CPU" if other is not None else ""]
    return text + "".join(f", {x}" for x in extra if x)


# -- campaigns: the cold ranking against the sustained one -----------------------------------

def ranking_rule() -> str:
    from . import significance as sig

    return (f"rank by p50, cold (the campaign's benchmark) and sustained; a pair counts as swapped when its order "
            f"differs and, in both phases, the p50 ratio's {sig.CONFIDENCE:.0%} interval lies beyond "
            f"{sig.MIN_EFFECT:.0%} ({sig.METHOD}); a swap within noise in either phase is listed, not counted")


def compare_rankings(entries: list[dict]) -> dict:
    """entries: [{"id", "label", "cold": {"p50_ns", "latencies"}, "sustained": {"p50_ns", "latencies"}}]
    (latencies: raw int ns, or None). -> {"rule", "ranks": [{"id", "label", "cold_rank",
    "sustained_rank", "cold_p50_ns", "sustained_p50_ns"}], "swaps": [{"faster_cold", "faster_sustained",
    "cold": p50_ratio, "sustained": p50_ratio, "counted"}], "differ", "line"}. Entries without
    both p50s are left out (named in "left_out")."""
    usable = [e for e in entries if (e.get("cold") or {}).get("p50_ns") and (e.get("sustained") or {}).get("p50_ns")]
    left_out = [e.get("label") or e.get("id") for e in entries if e not in usable]
    cold = sorted(usable, key=lambda e: e["cold"]["p50_ns"])
    warm = sorted(usable, key=lambda e: e["sustained"]["p50_ns"])
    rank_c = {id(e): i + 1 for i, e in enumerate(cold)}
    rank_s = {id(e): i + 1 for i, e in enumerate(warm)}
    ranks = [{"id": e.get("id"), "label": e.get("label"), "cold_rank": rank_c[id(e)], "sustained_rank": rank_s[id(e)],
              "cold_p50_ns": e["cold"]["p50_ns"], "sustained_p50_ns": e["sustained"]["p50_ns"]} for e in cold]
    swaps = []
    for i, a in enumerate(cold):
        for b in cold[i + 1:]:  # a ranks above b cold; swapped when b ranks above a sustained
            if rank_s[id(b)] < rank_s[id(a)]:
                c = p50_ratio(a["cold"].get("latencies"), b["cold"].get("latencies"))  # b / a, cold: b slower
                s = p50_ratio(b["sustained"].get("latencies"), a["sustained"].get("latencies"))  # a / b sustained: a slower
                swaps.append({"faster_cold": a.get("id"), "faster_sustained": b.get("id"),
                              "labels": [a.get("label"), b.get("label")], "cold": c, "sustained": s,
                              "counted": c.get("verdict") == "slower" and s.get("verdict") == "slower"})
    counted = [s for s in swaps if s["counted"]]
    if len(usable) < 2:
        line = "sustained ranking: fewer than two solutions with both a cold and a sustained benchmark"
    elif counted:
        line = (f"sustained ranking DIFFERS from the cold one: {len(counted)} pair(s) swapped beyond noise: "
                + "; ".join(f"{s['labels'][1]} now ahead of {s['labels'][0]}" for s in counted))
    else:
        line = "sustained ranking: same as cold" + (f" ({len(swaps)} swap(s) within noise)" if swaps else "")
    return {"rule": ranking_rule(), "ranks": ranks, "swaps": swaps, "differ": bool(counted), "line": line,
            "left_out": left_out}
