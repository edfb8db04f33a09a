"""Parity of detectors: the same boxes from two backends (or variants) on the same samples.

Raw outputs cannot be compared when one backend runs a whole graph (its own NMS) and the
other a backbone whose post-processing is the pipeline's; their detections can. Per
sample, each detection of either side scoring >= ``min_score`` is paired greedily (best
score first) with the other side's unpaired detection of the highest IoU; a pair agrees
when IoU >= ``min_iou`` and the scores differ by at most ``score_atol``. A detection left
without a partner fails the pair, unless it scores within ``score_atol`` of the partner
list's cut-off (the other side may have dropped it at the post-processing's threshold).
"""
from __future__ import annotations

DEFAULTS = {"min_score": 0.1, "min_iou": 0.99, "score_atol": 1e-3}


def _pairs(a: list[dict], b: list[dict], min_score: float, score_atol: float, cutoff_b: float):
    from .detection import iou

    used, matched, unmatched = set(), [], []
    for d in sorted((d for d in a if d["score"] >= min_score), key=lambda d: -d["score"]):
        best, best_j = -1.0, None
        for j, e in enumerate(b):
            if j not in used:
                v = float(iou(d["box"], e["box"]))
                if v > best:
                    best, best_j = v, j
        if best_j is None or best <= 0:
            if d["score"] > cutoff_b + score_atol:
                unmatched.append(d)
            continue
        used.add(best_j)
        matched.append((best, abs(d["score"] - b[best_j]["score"])))
    return matched, unmatched


def compare(base: str, other: str, ids: list, dets_a: list, dets_b: list, options: dict | None = None) -> dict:
    """One parity pair for detection runs (dets_*: per sample a list of {box, score})."""
    o = {**DEFAULTS, **{k: v for k, v in (options or {}).items() if v is not None}}
    worst_iou, worst_score, failing, unmatched = 1.0, 0.0, [], 0
    for sample_id, a, b in zip(ids, dets_a, dets_b):
        cut_a = min((d["score"] for d in a), default=1.0)
        cut_b = min((d["score"] for d in b), default=1.0)
        m1, u1 = _pairs(a, b, o["min_score"], o["score_atol"], cut_b)
        m2, u2 = _pairs(b, a, o["min_score"], o["score_atol"], cut_a)
        matched = m1 + m2
        ious = [v for v, _ in matched]
        diffs = [s for _, s in matched]
        worst_iou = min([worst_iou, *ious])
        worst_score = max([worst_score, *diffs])
        unmatched += len(u1) + len(u2)
        if u1 or u2 or any(v < o["min_iou"] for v in ious) or any(s > o["score_atol"] for s in diffs):
            failing.append(sample_id)
    n = len(ids)
    return {
        "backends": [base, other], "samples": n, "kind": "detections",
        "min_iou": worst_iou, "max_score_diff": worst_score, "unmatched": unmatched,
        "max_abs_diff": worst_score, "mean_max_abs_diff": None, "worst_sample": failing[0] if failing else None,
        "shape_mismatch": [], "top1_agreement": (n - len(failing)) / n if n else 1.0,
        "disagreements": failing[:20], "thresholds": o,
        "ok": not failing,
    }
