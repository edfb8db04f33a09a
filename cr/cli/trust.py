"""How the CLI words a run's phases, its fidelity check and the significance of a comparison
(cr benchmark, cr results show, cr results compare)."""
from __future__ import annotations

from . import output


def _seconds(s) -> str:
    if not isinstance(s, (int, float)):
        return "?"
    if s < 1e-3:
        return f"{s * 1e6:.1f} us"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def phase_rows(metrics: dict) -> list[list]:
    """[[field, value], ...] of metrics["phases"] and metrics["fidelity"] (nothing when absent)."""
    rows = []
    phases = metrics.get("phases") if isinstance(metrics.get("phases"), dict) else {}
    if phases.get("load_s") is not None:
        rows.append(["load", _seconds(phases["load_s"]) + "  (framework import + model load)"])
    if phases.get("first_inference_s") is not None:
        where = "" if phases.get("first_inference_in") != "steady" else "  (the first timed query: no warm-up)"
        rows.append(["first inference", _seconds(phases["first_inference_s"]) + where])
    warm = phases.get("warmup") if isinstance(phases.get("warmup"), dict) else None
    if warm:
        rows.append(["warm-up", warmup_text(warm)])
    fid = metrics.get("fidelity") if isinstance(metrics.get("fidelity"), dict) else None
    if fid:
        rows.append(["fidelity", fidelity_text(fid)])
    found = metrics.get("modes") if isinstance(metrics.get("modes"), dict) else {}
    if found.get("bimodal"):
        rows.append(["modes", modes_text(found)])
    return rows


def modes_text(found: dict) -> str:
    """'TWO MODES: 40% of the queries near 28.0 ms, the rest near 22.0 ms (+27.2%)'."""
    return (f"TWO MODES: {100 * found.get('high_share', 0):.0f}% of the queries near {found['high_p50_ns'] / 1e6:.4g} ms, "
            f"the rest near {found['low_p50_ns'] / 1e6:.4g} ms ({100 * found.get('gap', 0):+.1f}%): the p50 depends on "
            f"which mode a run lands in")


def warmup_text(warm: dict) -> str:
    """'120 queries in 0.312 s, stable after 120 (window 10, within 5%)' and the like."""
    n = warm.get("queries") or 0
    if warm.get("stopped_by") == "disabled" or not n:
        return "none"
    head = f"{n} queries in {_seconds(warm.get('seconds'))}"
    if warm.get("stopped_by") == "sizing query":
        return f"none (1 query to size LoadGen's plan, {_seconds(warm.get('seconds'))})"
    if not warm.get("until_stable"):
        return head + " (fixed count)"
    threshold = warm.get("threshold")
    rule = f"window {warm.get('window')}, within {100 * threshold:g}%" if isinstance(threshold, (int, float)) else ""
    if warm.get("converged"):
        return head + f", stable after {warm.get('converged_at')} ({rule})"
    bound = {"max_queries": f"{warm.get('max_queries')} queries", "max_s": f"{warm.get('max_s')} s"}.get(warm.get("stopped_by"), "its bound")
    return head + f", NOT stable: stopped at {bound} ({rule})"


def warn_unstable(metrics) -> None:
    """A warning when the warm-up ended at its bound without becoming stable."""
    phases = metrics.get("phases") if isinstance(metrics, dict) and isinstance(metrics.get("phases"), dict) else {}
    warm = phases.get("warmup") if isinstance(phases.get("warmup"), dict) else {}
    if warm.get("converged") is False:
        output.warn(f"the warm-up was not stable after {warm.get('queries')} queries ({warm.get('stopped_by')}): the steady-state "
                    f"figures may still include the cold phase; raise --warmup-max-queries (or warmup_max_s)")


def fidelity_text(fid: dict) -> str:
    ratio = fid.get("ratio")
    bare = fid.get("bare_p50_ns")
    if not isinstance(ratio, (int, float)):
        return "not measured"
    loop = {"framework": "the framework's own loop", "backend.run": "a loop around backend.run"}.get(fid.get("bare"), "bare loop")
    delta = fid.get("delta_ns")
    extra = f", {delta / 1e3:+.2f} us a query" if isinstance(delta, (int, float)) else ""
    return (f"cr p50 / bare loop p50 = {ratio:.3f}{extra} (bare: {loop}, p50 {bare / 1e6:.4f} ms over "
            f"{fid.get('queries')} queries)")


def _pct(x) -> str:
    return "?" if x is None else f"{100 * (x - 1):+.1f}%"


def pair_lines(pair: dict, conf: float = 0.95) -> list[str]:
    """One comparison (cr.results.significance.compare_pair + likely_causes + notes): the
    verdict per metric with its ratio and interval, then the likely causes when a difference
    is beyond noise, or why no interval could be computed."""
    lines = []
    if pair.get("missing"):
        lines.append(f"  no confidence interval: {pair['missing']}")
    for m in pair.get("metrics") or []:
        if m.get("verdict") is None:
            lines.append(f"  {m['label']:<12} not judged: {m.get('why')}")
            continue
        ci = m.get("ci") or [None, None]
        lines.append(f"  {m['label']:<12} {m['verdict'].upper():<12} ratio {m['ratio']:.3f} ({_pct(m['ratio'])}), "
                     f"{100 * conf:g}% interval {ci[0]:.3f} .. {ci[1]:.3f}")
    causes = pair.get("likely_causes") or []
    if causes:
        lines.append("  likely causes (most likely first):")
        lines += [f"    {i}. {c['cause']}: {c['detail']}" for i, c in enumerate(causes, 1)]
    elif pair.get("beyond_noise"):
        checked = "configuration, software and platform" + ("" if pair.get("notes") else " and machine state")
        lines.append(f"  likely causes: none found in the two records (same {checked})")
    lines += [f"  note: {n}" for n in pair.get("notes") or []]
    return [output.clean(line) for line in lines]

