"""How a result shows where its work ran (the record's "placement", cr.runtime.placement).

    rows(record) -> [["placement", "CPUExecutionProvider 9 of 9 nodes (100%)"], ...]

Read defensively, as every results reader: a record from elsewhere may lack the block or
hold another type there; then there is no row, never an exception. Standard library only:
the device side (cr.runtime.placement) words its refusals with describe().
"""
from __future__ import annotations

from numbers import Real


def clean(placement) -> dict | None:
    """The placement block with only well-typed counts, or None."""
    if not isinstance(placement, dict):
        return None
    by = placement.get("by_provider")
    if not isinstance(by, dict) or not all(isinstance(k, str) and isinstance(v, Real) and not isinstance(v, bool) and v >= 0
                                           for k, v in by.items()):
        by = None
    nodes = placement.get("nodes")
    if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 0:
        nodes = None
    return {**placement, "by_provider": by, "nodes": nodes,
            "unit": placement.get("unit") if isinstance(placement.get("unit"), str) else None,
            "device": placement.get("device") if isinstance(placement.get("device"), str) else None}


def describe(placement: dict | None) -> str:
    """One line: "9 of 9 nodes on CPUExecutionProvider (100%)" ...; "" when nothing is known."""
    if not isinstance(placement, dict):
        return ""
    by, nodes, unit = placement.get("by_provider"), placement.get("nodes"), placement.get("unit") or "units"
    if not by:
        device = placement.get("device")
        return f"on {device}" if device else "not reported"
    if not nodes:
        return ", ".join(str(k) for k in by) + (f" (device {placement['device']})" if placement.get("device") else "")
    ranked = sorted(by.items(), key=lambda kv: -kv[1])
    first, *rest = ranked
    return ", ".join([f"{first[0]} {first[1]} of {nodes} {unit} ({first[1] / nodes:.0%})"]
                     + [f"{k} {v} ({v / nodes:.0%})" for k, v in rest])


def text(placement) -> str:
    """One line: "XNNPACK 7 of 11 ops (64%), CPU 4 (36%)"; "" when the record has none."""
    p = clean(placement)
    return describe(p) if p is not None else ""


def rows(record: dict) -> list[list]:
    """The placement rows of a result table: what ran where, the API that said so, and the
    requirement's verdict with its rule when one was given."""
    p = clean(record.get("placement") if isinstance(record, dict) else None)
    if p is None:
        return []
    out = [["placement", text(p) or "not reported"]]
    if isinstance(p.get("how"), str):
        out.append(["", "from " + p["how"].split(" (")[0].split(": ")[0]])  # the API; docs/placement.md has the rest
    required = p.get("required")
    if isinstance(required, list) and required:
        words = []
        for r in required:
            if isinstance(r, dict) and isinstance(r.get("min_share"), Real):
                got = f"{r['share']:.1%}" if isinstance(r.get("share"), Real) else "unknown"
                words.append(f"{r.get('name')} >= {r['min_share']:.0%}: {got}")
        out.append(["required placement", f"{p.get('verdict')}: " + "; ".join(words)])
    fallback = p.get("fallback_ops")
    if isinstance(fallback, dict) and fallback:
        out.append(["", "on the CPU: " + ", ".join(f"{op} x{n}" for op, n in list(fallback.items())[:10])])
    return out
