"""Tasks beyond classification and detection: segmentation, landmarks, regression.

A model meta with one of these ``task`` values declares how its output is read in
``decode`` (docs/tasks.md):

    segmentation  {"output": 0, "layout": "NCHW" | "NHWC", "ignore_index": 255}
                  class scores per pixel -> the class map (argmax over the class axis)
    landmarks     {"output": 0, "points": K, "dims": 2,
                   "normalize": {"by": "points", "indices": [i, j]} | {"by": "bbox_diagonal"}}
                  K points (flattened or (K, dims)) -> a (K, dims) array
    regression    {"output": 0}
                  values per sample -> a flat array

``output`` is the index of the post-processed output to read (default 0). A dataset
declares the matching targets (cr.runtime.datasets: ``targets`` {kind: masks | points |
values}). Everything here is numpy: the metrics are a few lines of array arithmetic
(a confusion matrix by bincount, norms), which keeps the runtime free of scikit-learn.
"""
from __future__ import annotations

from ..errors import CRError

TASKS = ("segmentation", "landmarks", "regression")
# The dataset targets each task is validated against (dataset meta targets.kind).
TARGETS = {"segmentation": "masks", "landmarks": "points", "regression": "values"}


def _bad(ref: str, field: str, found, want: str) -> CRError:
    return CRError(f"{ref}: decode.{field} is {found!r}, expected {want}",
                   hint="fix the model meta's decode (docs/tasks.md)")


def params(meta: dict, ref: str = "the model") -> dict:
    """The meta's decode parameters for its task, checked and with defaults filled in."""
    task = meta.get("task")
    d = dict(meta.get("decode") or {})
    if not isinstance(d.get("output", 0), int) or d.get("output", 0) < 0:
        raise _bad(ref, "output", d.get("output"), "the index of a post-processed output (0, 1, ...)")
    d.setdefault("output", 0)
    if task == "segmentation":
        if "layout" not in d:
            outs = meta.get("outputs") or []
            layout = outs[d["output"]].get("layout") if d["output"] < len(outs) else None
            if layout in ("NCHW", "NHWC"):
                d["layout"] = layout
        if d.get("layout") not in ("NCHW", "NHWC"):
            raise _bad(ref, "layout", d.get("layout"), "NCHW or NHWC (where the class axis is)")
    elif task == "landmarks":
        if not isinstance(d.get("points"), int) or d["points"] < 1:
            raise _bad(ref, "points", d.get("points"), "the number of points, an integer >= 1")
        d.setdefault("dims", 2)
        norm = d.get("normalize")
        if norm is not None:
            by = norm.get("by") if isinstance(norm, dict) else None
            if by == "points":
                idx = norm.get("indices")
                if not (isinstance(idx, list) and len(idx) == 2 and all(isinstance(i, int) and 0 <= i < d["points"] for i in idx)):
                    raise _bad(ref, "normalize.indices", idx, f"two point indices below {d['points']}")
            elif by != "bbox_diagonal":
                raise _bad(ref, "normalize", norm, '{"by": "points", "indices": [i, j]} or {"by": "bbox_diagonal"}')
    return d


# -- decoding -----------------------------------------------------------------------------

def decode(task: str, p: dict, post_row: list):
    """One sample's post-processed outputs -> its prediction as an array."""
    import numpy as np

    x = np.asarray(post_row[p["output"]])
    if task == "segmentation":
        if x.ndim == 2:  # already a class map
            return x.astype(np.int64)
        return np.argmax(x, axis=0 if p["layout"] == "NCHW" else -1).astype(np.int64)
    if task == "landmarks":
        return x.reshape(int(p["points"]), int(p["dims"])).astype(np.float64)
    return x.reshape(-1).astype(np.float64)


def shown(task: str, prediction, names: dict) -> dict:
    """What cr run shows for one sample: a segmentation's class histogram, the points, the values."""
    import numpy as np

    if task == "segmentation":
        classes, counts = np.unique(prediction, return_counts=True)
        total = int(prediction.size)
        return {"mask": {"shape": list(prediction.shape), "classes": [
            {"class": int(c), "label": names.get(str(int(c))), "pixels": int(n), "share": n / total}
            for c, n in sorted(zip(classes, counts), key=lambda t: (-t[1], t[0]))]}}
    if task == "landmarks":
        return {"points": [[float(v) for v in pt] for pt in prediction]}
    return {"values": [float(v) for v in prediction]}


# -- metrics ------------------------------------------------------------------------------

def _segmentation(pairs: list, p: dict) -> dict:
    import numpy as np

    ignore = p.get("ignore_index")
    n_classes = 1 + max(max(int(pred.max()), int(np.asarray(t).max(initial=0))) for _s, pred, t in pairs)
    if ignore is not None and ignore < n_classes:
        n_classes = max(n_classes, ignore + 1)
    confusion = np.zeros((n_classes, n_classes), dtype=np.int64)
    per_sample = []
    for sample, pred, target in pairs:
        target = np.asarray(target).astype(np.int64)
        if target.shape != pred.shape:
            raise CRError(f"sample {sample.id}: its mask is {tuple(target.shape)} but the model predicts {tuple(pred.shape)}",
                          hint="the dataset's masks must have the size of the model's output (height, width)")
        keep = target != ignore if ignore is not None else np.ones(target.shape, bool)
        confusion += np.bincount(target[keep] * n_classes + pred[keep], minlength=n_classes * n_classes).reshape(n_classes, n_classes)
        per_sample.append({"id": sample.id, "pixel_accuracy": float((pred[keep] == target[keep]).mean()) if keep.any() else None})
    if ignore is not None and ignore < n_classes:
        confusion[ignore, :] = confusion[:, ignore] = 0
    tp = np.diag(confusion).astype(np.float64)
    union = confusion.sum(0) + confusion.sum(1) - tp
    present = union > 0
    iou = np.where(present, tp / np.maximum(union, 1), np.nan)
    return {"miou": float(np.nanmean(iou)) if present.any() else 0.0,
            "pixel_accuracy": float(tp.sum() / confusion.sum()) if confusion.sum() else 0.0,
            "pixels": int(confusion.sum()),
            "class_iou": {str(c): float(iou[c]) for c in range(n_classes) if present[c]},
            "per_sample": per_sample[:50]}


def _landmarks(pairs: list, p: dict) -> dict:
    import numpy as np

    norm = p.get("normalize")
    errors, worst = [], 0.0
    for sample, pred, target in pairs:
        target = np.asarray(target, dtype=np.float64).reshape(pred.shape)
        dist = np.linalg.norm(pred - target, axis=-1)
        worst = max(worst, float(dist.max()))
        if norm is None:
            scale = 1.0
        elif norm["by"] == "points":
            i, j = norm["indices"]
            scale = float(np.linalg.norm(target[i] - target[j]))
        else:
            scale = float(np.linalg.norm(target.max(0) - target.min(0)))
        if scale <= 0:
            raise CRError(f"sample {sample.id}: its normalising distance is 0 (decode.normalize {norm})",
                          hint="normalise by points that differ in every sample, or by bbox_diagonal")
        errors.append(float(dist.mean()) / scale)
    out = {"mean_error" if norm is None else "nme": float(np.mean(errors)), "max_error": worst,
           "normalized_by": None if norm is None else norm}
    return out


def _regression(pairs: list, _p: dict) -> dict:
    import numpy as np

    pred = np.concatenate([np.asarray(x, dtype=np.float64).reshape(-1) for _s, x, _t in pairs])
    want = np.concatenate([np.asarray(t, dtype=np.float64).reshape(-1) for _s, _x, t in pairs])
    if pred.shape != want.shape:
        raise CRError(f"the model predicts {pred.size} values for {len(pairs)} samples, the dataset has {want.size} targets",
                      hint="the dataset's targets must have one value per model output value")
    err = pred - want
    return {"mae": float(np.mean(np.abs(err))), "rmse": float(np.sqrt(np.mean(err ** 2))), "max_error": float(np.max(np.abs(err)))}


METRICS = {"segmentation": _segmentation, "landmarks": _landmarks, "regression": _regression}


def metrics(task: str, p: dict, rows: list) -> dict:
    """The task's metrics over rows [(sample, raw, post)] whose samples carry targets."""
    pairs = [(s, decode(task, p, post), s.target) for s, _raw, post in rows if s.target is not None]
    if not pairs:
        raise CRError(f"no sample carries {TARGETS[task]}", hint="validate on a dataset that declares them (docs/datasets.md)")
    return {"task": task, "samples": len(pairs), **METRICS[task](pairs, p)}


# -- agreement across backends (parity) ---------------------------------------------------

def agreement(task: str | None, a: list, b: list) -> dict:
    """What two backends' decoded predictions agree on, per task: classification the share of
    samples with the same top-1; segmentation the share of pixels of the same class;
    landmarks/regression the max difference in model units. ``ok``: False when classes differ."""
    import numpy as np

    if task in ("landmarks", "regression"):
        worst = max((float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b) if np.size(x)), default=0.0)
        return {"metric": "max_error", "value": worst, "ok": True}
    if task == "segmentation":
        same = total = 0
        for x, y in zip(a, b):
            x, y = np.asarray(x), np.asarray(y)
            if x.shape == y.shape:
                same += int((x == y).sum())
            total += int(y.size)
        share = same / total if total else 1.0
        return {"metric": "pixel_agreement", "value": share, "ok": same == total}
    agree = [int(np.argmax(x)) == int(np.argmax(y)) for x, y in zip(a, b)]
    share = sum(agree) / len(agree) if agree else 1.0
    return {"metric": "top1_agreement", "value": share, "ok": all(agree), "disagreements": [i for i, ok in enumerate(agree) if not ok]}


# The metrics each task reports that an ``expected`` entry of the model meta can check.
METRIC_NAMES = {"segmentation": ("miou", "pixel_accuracy"), "landmarks": ("nme", "mean_error", "max_error"),
                "regression": ("mae", "rmse", "max_error")}
