"""Post-processing for SSD-style single-class detectors such as MediaPipe's BlazeFace, in numpy.

It mirrors the MediaPipe calculators the face detector ships with, so that the same raw
tensors give the same faces here as in MediaPipe:

- ``ssd_anchors``: SsdAnchorsCalculator (consecutive layers with equal stride share a grid;
  each layer adds one anchor per aspect ratio plus one interpolated-scale anchor).
- ``decode_boxes``: TensorsToDetectionsCalculator with reverse_output_order (raw x, y, w, h,
  then keypoints as x, y pairs, all in input pixels, offsets from the anchor centre).
- ``weighted_nms``: NonMaxSuppressionCalculator's WEIGHTED algorithm (overlapping
  detections are averaged, weighted by score, instead of being dropped).

Boxes are normalised [ymin, xmin, ymax, xmax] (fractions of the model input), the layout of
dataset annotations (``items[].boxes``).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def _scale(min_scale: float, max_scale: float, index: int, count: int) -> float:
    if count == 1:
        return (min_scale + max_scale) / 2
    return min_scale + (max_scale - min_scale) * index / (count - 1)


def ssd_anchors(
    input_size: int | Sequence[int] = 128,
    strides: Sequence[int] = (8, 16, 16, 16),
    min_scale: float = 0.1484375,
    max_scale: float = 0.75,
    anchor_offset: float = 0.5,
    aspect_ratios: Sequence[float] = (1.0,),
    interpolated_scale_aspect_ratio: float = 1.0,
    fixed_anchor_size: bool = True,
) -> np.ndarray:
    """(N, 4) float32 anchors [y_center, x_center, h, w], normalised, in the model's output order.

    The defaults are BlazeFace short range's: 16x16x2 + 8x8x6 = 896 anchors.
    """
    height, width = (input_size, input_size) if isinstance(input_size, int) else input_size
    anchors = []
    layer = 0
    while layer < len(strides):
        sizes = []  # (h, w) of each anchor at one grid location
        last = layer
        while last < len(strides) and strides[last] == strides[layer]:
            scale = _scale(min_scale, max_scale, last, len(strides))
            for ratio in aspect_ratios:
                sizes.append((scale / math.sqrt(ratio), scale * math.sqrt(ratio)))
            if interpolated_scale_aspect_ratio > 0:
                following = 1.0 if last == len(strides) - 1 else _scale(min_scale, max_scale, last + 1, len(strides))
                mid, ratio = math.sqrt(scale * following), interpolated_scale_aspect_ratio
                sizes.append((mid / math.sqrt(ratio), mid * math.sqrt(ratio)))
            last += 1
        rows, cols = math.ceil(height / strides[layer]), math.ceil(width / strides[layer])
        for y in range(rows):
            for x in range(cols):
                for h, w in sizes:
                    if fixed_anchor_size:
                        h = w = 1.0
                    anchors.append(((y + anchor_offset) / rows, (x + anchor_offset) / cols, h, w))
        layer = last
    return np.asarray(anchors, dtype=np.float32)


def decode_boxes(raw_boxes: np.ndarray, anchors: np.ndarray, scales: Sequence[float] = (128.0, 128.0, 128.0, 128.0),
                 num_keypoints: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """Raw regressors (N, 4 + 2K) -> boxes (N, 4) [ymin, xmin, ymax, xmax] and keypoints (N, K, 2) [x, y].

    ``scales`` are (x_scale, y_scale, w_scale, h_scale): the raw values are in input pixels.
    """
    raw = np.asarray(raw_boxes, dtype=np.float32)
    x_scale, y_scale, w_scale, h_scale = scales
    ay, ax, ah, aw = (anchors[:, i] for i in range(4))
    x_center = raw[:, 0] / x_scale * aw + ax
    y_center = raw[:, 1] / y_scale * ah + ay
    w = raw[:, 2] / w_scale * aw
    h = raw[:, 3] / h_scale * ah
    boxes = np.stack([y_center - h / 2, x_center - w / 2, y_center + h / 2, x_center + w / 2], axis=-1)
    points = raw[:, 4:4 + 2 * num_keypoints].reshape(-1, num_keypoints, 2)
    keypoints = np.stack([points[..., 0] / x_scale * aw[:, None] + ax[:, None],
                          points[..., 1] / y_scale * ah[:, None] + ay[:, None]], axis=-1)
    return boxes, keypoints


def scores_from_logits(raw_scores: np.ndarray, clip: float = 100.0) -> np.ndarray:
    """sigmoid(clip(raw, -clip, clip)); the clip keeps exp() finite on extreme logits."""
    raw = np.clip(np.asarray(raw_scores, dtype=np.float64), -clip, clip)  # float64: exp(100) overflows float32
    return (1.0 / (1.0 + np.exp(-raw))).astype(np.float32)


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of boxes [ymin, xmin, ymax, xmax]; broadcasts over leading axes."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    top = np.maximum(a[..., 0], b[..., 0])
    left = np.maximum(a[..., 1], b[..., 1])
    bottom = np.minimum(a[..., 2], b[..., 2])
    right = np.minimum(a[..., 3], b[..., 3])
    inter = np.clip(bottom - top, 0, None) * np.clip(right - left, 0, None)
    area_a = np.clip(a[..., 2] - a[..., 0], 0, None) * np.clip(a[..., 3] - a[..., 1], 0, None)
    area_b = np.clip(b[..., 2] - b[..., 0], 0, None) * np.clip(b[..., 3] - b[..., 1], 0, None)
    union = area_a + area_b - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def weighted_nms(boxes: np.ndarray, scores: np.ndarray, threshold: float = 0.3,
                 extra: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Group each best remaining detection with the rest overlapping it by IoU > threshold,
    and replace the group by its score-weighted mean box (and ``extra`` rows, e.g. keypoints);
    the group keeps its best score. Returns (boxes, scores, extra) sorted by score."""
    order = np.argsort(-scores, kind="stable")
    remaining = list(order)
    out_boxes, out_scores, out_extra = [], [], []
    while remaining:
        best = remaining[0]
        overlaps = iou(boxes[best], boxes[remaining])
        group = [i for i, o in zip(remaining, overlaps) if o > threshold or i == best]
        remaining = [i for i, o in zip(remaining, overlaps) if not (o > threshold or i == best)]
        weights = scores[group][:, None]
        out_boxes.append((boxes[group] * weights).sum(0) / weights.sum())
        out_scores.append(scores[best])
        if extra is not None:
            flat = extra[group].reshape(len(group), -1)
            out_extra.append(((flat * weights).sum(0) / weights.sum()).reshape(extra.shape[1:]))

    def stack(rows, like):
        return np.asarray(rows, dtype=np.float32).reshape((len(rows),) + like.shape[1:])

    return (stack(out_boxes, boxes), np.asarray(out_scores, dtype=np.float32),
            stack(out_extra, extra) if extra is not None else None)


def plain_nms(boxes: np.ndarray, scores: np.ndarray, threshold: float = 0.3) -> np.ndarray:
    """Indices kept by greedy NMS (a detection is dropped when IoU > threshold with a better one)."""
    keep = []
    for i in np.argsort(-scores, kind="stable"):
        if all(iou(boxes[i], boxes[k]) <= threshold for k in keep):
            keep.append(int(i))
    return np.asarray(keep, dtype=np.int64)


def blazeface_decode(
    outputs: list[np.ndarray],
    input_size: int | Sequence[int] = 128,
    strides: Sequence[int] = (8, 16, 16, 16),
    min_scale: float = 0.1484375,
    max_scale: float = 0.75,
    anchor_offset: float = 0.5,
    aspect_ratios: Sequence[float] = (1.0,),
    interpolated_scale_aspect_ratio: float = 1.0,
    fixed_anchor_size: bool = True,
    scales: Sequence[float] = (128.0, 128.0, 128.0, 128.0),
    num_keypoints: int = 6,
    score_clipping_thresh: float = 100.0,
    min_score_thresh: float = 0.5,
    min_suppression_threshold: float = 0.3,
    nms: str = "weighted",
) -> list[np.ndarray]:
    """Raw model outputs [regressors (B, N, 4+2K), classificators (B, N, 1)] (in either order:
    the regressors are the tensor with more values per anchor) -> per batch item an array
    (D, 5) of [ymin, xmin, ymax, xmax, score], normalised, best first."""
    if len(outputs) != 2:
        raise ValueError(f"blazeface_decode expects 2 outputs (regressors, classificators), got {len(outputs)}")
    raw_boxes, raw_scores = sorted((np.asarray(o) for o in outputs), key=lambda o: o.shape[-1], reverse=True)
    if raw_boxes.ndim == 2:
        raw_boxes, raw_scores = raw_boxes[None], raw_scores.reshape(1, -1, 1)
    anchors = ssd_anchors(input_size, strides, min_scale, max_scale, anchor_offset, aspect_ratios,
                          interpolated_scale_aspect_ratio, fixed_anchor_size)
    if raw_boxes.shape[1] != len(anchors):
        raise ValueError(f"the model gives {raw_boxes.shape[1]} boxes but the anchor options make {len(anchors)}")
    results = []
    for item_boxes, item_scores in zip(raw_boxes, raw_scores):
        boxes, keypoints = decode_boxes(item_boxes, anchors, scales, num_keypoints)
        scores = scores_from_logits(item_scores.reshape(len(anchors), -1).max(-1), score_clipping_thresh)
        keep = scores >= min_score_thresh
        boxes, keypoints, scores = boxes[keep], keypoints[keep], scores[keep]
        if nms == "weighted":
            boxes, scores, _ = weighted_nms(boxes, scores, min_suppression_threshold, keypoints)
        elif nms == "plain":
            kept = plain_nms(boxes, scores, min_suppression_threshold)
            boxes, scores = boxes[kept], scores[kept]
        elif nms == "none":
            order = np.argsort(-scores, kind="stable")
            boxes, scores = boxes[order], scores[order]
        else:
            raise ValueError(f"nms must be 'weighted', 'plain' or 'none', not {nms!r}")
        results.append(np.concatenate([boxes, scores[:, None]], axis=1).astype(np.float32))
    return results


# ------------------------------------------------ TensorFlow Object Detection API SSD models
#
# SSD-MobileNet (and SSDLite) graphs exported by the TF Object Detection API end in a
# backbone with two outputs: box encodings [B, N, 1, 4] (or [B, N, 4]) and class logits
# [B, N, 1 + C] (background first). Their post-processing is rebuilt here from the graph's
# own parameters: MultipleGridAnchorGenerator's anchors, FasterRcnnBoxCoder's decoding and
# BatchMultiClassNonMaxSuppression (per class, boxes clipped to the image afterwards).

def multiple_grid_anchors(
    feature_maps: Sequence[int | Sequence[int]] = (19, 10, 5, 3, 2, 1),
    min_scale: float = 0.2,
    max_scale: float = 0.95,
    aspect_ratios: Sequence[float] = (1.0, 2.0, 0.5, 3.0, 1.0 / 3.0),
    interpolated_scale_aspect_ratio: float = 1.0,
    reduce_boxes_in_lowest_layer: bool = True,
    base_anchor_size: Sequence[float] = (1.0, 1.0),
) -> np.ndarray:
    """(N, 4) float32 anchors [ymin, xmin, ymax, xmax], normalised, in the order the TF OD
    API's ssd_anchor_generator (MultipleGridAnchorGenerator) emits them: layer by layer, then
    grid row, grid column, box spec. Defaults: SSD(Lite)-MobileNet at 300x300, 1917 anchors."""
    count = len(feature_maps)
    scales = [min_scale + (max_scale - min_scale) * i / (count - 1) for i in range(count)] + [1.0] if count > 1 \
        else [min_scale, 1.0]
    out = []
    for layer, grid in enumerate(feature_maps):
        rows, cols = (grid, grid) if isinstance(grid, int) else (int(grid[0]), int(grid[1]))
        scale, following = scales[layer], scales[layer + 1]
        if layer == 0 and reduce_boxes_in_lowest_layer:
            specs = [(0.1, 1.0), (scale, 2.0), (scale, 0.5)]
        else:
            specs = [(scale, float(r)) for r in aspect_ratios]
            if interpolated_scale_aspect_ratio > 0:
                specs.append((math.sqrt(scale * following), interpolated_scale_aspect_ratio))
        heights = np.asarray([s / math.sqrt(r) * base_anchor_size[0] for s, r in specs], dtype=np.float32)
        widths = np.asarray([s * math.sqrt(r) * base_anchor_size[1] for s, r in specs], dtype=np.float32)
        y = (np.arange(rows, dtype=np.float32) + 0.5) / np.float32(rows)
        x = (np.arange(cols, dtype=np.float32) + 0.5) / np.float32(cols)
        yc = np.broadcast_to(y[:, None, None], (rows, cols, len(specs)))
        xc = np.broadcast_to(x[None, :, None], (rows, cols, len(specs)))
        h = np.broadcast_to(heights[None, None, :], (rows, cols, len(specs)))
        w = np.broadcast_to(widths[None, None, :], (rows, cols, len(specs)))
        out.append(np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1).reshape(-1, 4))
    return np.concatenate(out).astype(np.float32)


def decode_center_size(encodings: np.ndarray, anchors: np.ndarray,
                       scale_factors: Sequence[float] = (10.0, 10.0, 5.0, 5.0)) -> np.ndarray:
    """FasterRcnnBoxCoder.decode: encodings (N, 4) [ty, tx, th, tw] against corner anchors
    (N, 4) -> boxes (N, 4) [ymin, xmin, ymax, xmax]."""
    enc = np.asarray(encodings, dtype=np.float32).reshape(-1, 4)
    ya = (anchors[:, 0] + anchors[:, 2]) / 2
    xa = (anchors[:, 1] + anchors[:, 3]) / 2
    ha = anchors[:, 2] - anchors[:, 0]
    wa = anchors[:, 3] - anchors[:, 1]
    sy, sx, sh, sw = (np.float32(s) for s in scale_factors)
    ty, tx, th, tw = enc[:, 0] / sy, enc[:, 1] / sx, enc[:, 2] / sh, enc[:, 3] / sw
    w, h = np.exp(tw) * wa, np.exp(th) * ha
    yc, xc = ty * ha + ya, tx * wa + xa
    return np.stack([yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2], axis=-1).astype(np.float32)


def greedy_nms(boxes: np.ndarray, scores: np.ndarray, iou_threshold: float, max_out: int) -> np.ndarray:
    """Indices kept by tf.image.non_max_suppression: best first, a box is dropped when its IoU
    with a kept one exceeds iou_threshold; at most max_out."""
    order = np.argsort(-scores, kind="stable")
    boxes = np.asarray(boxes, dtype=np.float32)
    keep: list[int] = []
    alive = np.ones(len(order), dtype=bool)
    for pos, i in enumerate(order):
        if not alive[pos]:
            continue
        keep.append(int(i))
        if len(keep) >= max_out:
            break
        rest = order[pos + 1:]
        overlaps = iou(boxes[i], boxes[rest])
        alive[pos + 1:] &= overlaps <= iou_threshold
    return np.asarray(keep, dtype=np.int64)


def _clip_to_unit(boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ClipToWindow over [0, 0, 1, 1]: clipped boxes, and which keep a non-zero area."""
    clipped = np.clip(boxes, 0.0, 1.0)
    area = (clipped[:, 2] - clipped[:, 0]) * (clipped[:, 3] - clipped[:, 1])
    return clipped, area > 0


def ssd_decode(
    outputs: list[np.ndarray],
    anchors: dict | None = None,
    scale_factors: Sequence[float] = (10.0, 10.0, 5.0, 5.0),
    score: str = "sigmoid",
    background: bool = True,
    iou_threshold: float = 0.6,
    score_threshold: float = 1e-8,
    max_per_class: int = 100,
    max_total: int = 100,
    min_score: float = 0.0,
) -> list[np.ndarray]:
    """Raw TF OD API SSD outputs [box encodings (B, N, [1,] 4), class logits (B, N, K)] (the
    encodings are the output whose last axis is 4 and that is not the logits) -> per batch
    item an array (D, 6) of [ymin, xmin, ymax, xmax, score, class], normalised, best first.

    anchors: multiple_grid_anchors() parameters. score: "sigmoid" or "softmax" over the
    logits; background: the first logit is the background class (dropped; classes are then
    numbered from 1, as in the graph's detection_classes). Per class: boxes scoring above
    score_threshold, greedy NMS at iou_threshold (at most max_per_class), then clipped to the
    image (boxes left without area are dropped); all classes merged, best max_total kept,
    and finally those below min_score dropped (a reporting threshold, not the graph's)."""
    if len(outputs) != 2:
        raise ValueError(f"ssd_decode expects 2 outputs (box encodings, class logits), got {len(outputs)}")
    first, second = (np.asarray(o) for o in outputs)
    encodings, logits = (first, second) if first.shape[-1] == 4 and first.ndim >= second.ndim else (second, first)
    if encodings.ndim == 4:
        encodings = encodings.reshape(encodings.shape[0], encodings.shape[1], 4)
    if encodings.ndim == 2:
        encodings, logits = encodings[None], logits[None]
    corner_anchors = multiple_grid_anchors(**(anchors or {}))
    if encodings.shape[1] != len(corner_anchors):
        raise ValueError(f"the model gives {encodings.shape[1]} boxes but the anchor options make {len(corner_anchors)}")
    results = []
    for item_enc, item_logits in zip(encodings, logits):
        boxes = decode_center_size(item_enc, corner_anchors, scale_factors)
        raw = np.asarray(item_logits, dtype=np.float32)
        if score == "sigmoid":
            probs = scores_from_logits(raw, 100.0)
        elif score == "softmax":
            e = np.exp(raw - raw.max(-1, keepdims=True))
            probs = (e / e.sum(-1, keepdims=True)).astype(np.float32)
        else:
            raise ValueError(f"score must be 'sigmoid' or 'softmax', not {score!r}")
        first_class = 1 if background else 0
        rows = []
        for c in range(first_class, probs.shape[-1]):
            s = probs[:, c]
            candidates = np.flatnonzero(s > score_threshold)
            kept = candidates[greedy_nms(boxes[candidates], s[candidates], iou_threshold, int(max_per_class))]
            clipped, alive = _clip_to_unit(boxes[kept])
            for box, value in zip(clipped[alive], s[kept][alive]):
                rows.append([*box, value, c if background else c])
        dets = np.asarray(rows, dtype=np.float32).reshape(-1, 6)
        dets = dets[np.argsort(-dets[:, 4], kind="stable")][:int(max_total)]
        results.append(dets[dets[:, 4] >= min_score])
    return results


def tf_od_detections(outputs: list[np.ndarray], min_score: float = 0.0) -> list[np.ndarray]:
    """A TF OD API graph's own outputs [detection_boxes (B, M, 4), detection_scores (B, M),
    detection_classes (B, M), num_detections (B,)] (in that order) -> per batch item an
    array (D, 6) of [ymin, xmin, ymax, xmax, score, class], best first, scores >= min_score."""
    if len(outputs) != 4:
        raise ValueError(f"tf_od_detections expects 4 outputs (boxes, scores, classes, num_detections), got {len(outputs)}")
    boxes, scores, classes, counts = (np.asarray(o) for o in outputs)
    results = []
    for b, s, c, n in zip(boxes, scores, classes, counts.reshape(-1)):
        n = int(n)
        dets = np.concatenate([b[:n].reshape(-1, 4), s[:n, None], c[:n, None]], axis=1).astype(np.float32)
        results.append(dets[dets[:, 4] >= min_score])
    return results
