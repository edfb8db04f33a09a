"""COCO-style detection metrics through pycocotools (the field's reference implementation).

    metrics = coco_metrics([(sample, detections), ...])
    metrics["ap"], metrics["ap50"], metrics["ap75"], metrics["coco_recall"]

Each sample brings its ground-truth boxes (normalised [ymin, xmin, ymax, xmax]) and its
pixel size (``sample.size`` (width, height); a sample without one is scored on a
1000 x 1000 canvas, which changes no IoU and only moves the area-range breakdown);
detections are {"box", "score"} dicts in the same frame. Images without boxes are part of
the evaluation, so detections on them are false positives. The evaluation is
class-agnostic (every ground-truth box and every detection is one category): it fits
single-class detectors and datasets filtered to one category (``categories``).

ap        AP averaged over IoU 0.50:0.05:0.95 (COCO's headline number), 100 detections per image
ap50      AP at IoU 0.5 (the PASCAL VOC style number)
ap75      AP at IoU 0.75
coco_recall  AR@100: recall averaged over the same IoU thresholds
pycocotools prints its progress; that goes to a buffer, not to the runtime's stdout.
"""
from __future__ import annotations

import contextlib
import io

from ..errors import CRError

_CANVAS = (1000, 1000)
METRICS = ("ap", "ap50", "ap75", "coco_recall")


def _xywh(box, width: int, height: int) -> list[float]:
    ymin, xmin, ymax, xmax = (float(v) for v in box)
    return [xmin * width, ymin * height, max(0.0, (xmax - xmin) * width), max(0.0, (ymax - ymin) * height)]


def coco_metrics(pairs: list) -> dict:
    """{"ap", "ap50", "ap75", "coco_recall", "evaluator"} for [(sample, [detection dicts])]."""
    try:
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    except ImportError as exc:
        raise CRError(f"COCO metrics need pycocotools, which this environment cannot import ({exc})",
                      hint="install it where the model runs: cr install software pycocotools (or pip install pycocotools)") from None
    from importlib import metadata

    images, annotations, results = [], [], []
    for image_id, (sample, detections) in enumerate(pairs, start=1):
        width, height = sample.size or _CANVAS
        images.append({"id": image_id, "width": int(width), "height": int(height)})
        for box in sample.boxes or []:
            xywh = _xywh(box, width, height)
            annotations.append({"id": len(annotations) + 1, "image_id": image_id, "category_id": 1, "bbox": xywh,
                                "area": xywh[2] * xywh[3], "iscrowd": 0})
        for d in detections:
            results.append({"image_id": image_id, "category_id": 1, "bbox": _xywh(d["box"], width, height),
                            "score": float(d["score"])})
    out = {"evaluator": f"pycocotools {metadata.version('pycocotools')}", "images": len(images), "objects": len(annotations)}
    if not annotations:
        raise CRError("COCO metrics need at least one ground-truth box", hint="validate on a dataset with annotated boxes")
    if not results:
        return {**out, **{m: 0.0 for m in METRICS}}
    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO()
        truth.dataset = {"images": images, "annotations": annotations, "categories": [{"id": 1, "name": "object"}]}
        truth.createIndex()
        found = truth.loadRes(results)
        evaluation = COCOeval(truth, found, iouType="bbox")
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
    stats = [float(v) for v in evaluation.stats]
    # stats: AP, AP50, AP75, AP small/medium/large, AR@1, AR@10, AR@100, AR small/medium/large;
    # -1 means "nothing to measure" (no object in that range), reported as 0
    pick = {"ap": stats[0], "ap50": stats[1], "ap75": stats[2], "coco_recall": stats[8]}
    return {**out, **{k: max(v, 0.0) for k, v in pick.items()}}
