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
