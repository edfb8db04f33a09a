"""The declarative pre/post-processing pipeline of a model meta.

    pre = Pipeline(meta.get("preprocess"))            # per sample, then stacked
    batch = pre.batch([sample.data for sample in samples])
    outputs = backend.run({name: batch})
    post = Pipeline(meta.get("postprocess"), stage="postprocess")
    scores = post.apply_outputs(outputs)               # per batch

Every backend gets exactly what this module produces from the same samples, so a
pre-processing mistake shows in every backend alike, and ``digest(meta)`` (sha256 of the
canonical JSON of both step lists) goes into every result: two results with different
digests were not fed the same way.

Pre-processing steps (one sample in, one sample out; numpy, plus Pillow for decode/resize:
STEP_REQUIRES names the software each step imports beyond numpy, and ``requirements(meta)``
what a model's steps need, so the environment a model runs in can include it):
    decode       {"mode": "RGB" | "L"}            file path or bytes -> HxWxC uint8
    resize       {"size": [H, W]} | {"shorter": N}, "interpolation": nearest | bilinear |
                 bicubic | lanczos | area | box (uint8 images, through Pillow)
    center_crop  {"size": [H, W]} | {"ratio": r}  (the central r of each side)
    color_order  {"order": "RGB" | "BGR"}         (samples arrive RGB)
    cast         {"dtype": "float32"}             (any numpy dtype name)
    scale        {"factor": f, "offset": o}       x * f + o
    normalize    {"mean": [..], "std": [..]}      (x - mean) / std over the last axis
    clip         {"min": a, "max": b}
    reshape      {"shape": [..]}
    layout       {"from": "HWC", "to": "CHW"}     (any permutation of the same letters)
    quantize     {"scale": s, "zero_point": z, "dtype": "int8" | "uint8"}
Post-processing steps (the list of model outputs in, the list out; applied per batch):
    select       {"output": i}                    keep output i only
    dequantize   {"scale": s, "zero_point": z}
    softmax      {"axis": -1}
    sigmoid      {}
    argmax       {"axis": -1}
    topk         {"k": 5}                          -> [indices, values]
    blazeface_decode {...}                         -> per item (K, 5) boxes + score
                                                      (cr.runtime.detection)
    ssd_decode   {"anchors": {...}, "scale_factors": [10, 10, 5, 5], "iou_threshold", ...}
                 TF OD API SSD backbone outputs -> per item (K, 6) box + score + class
    tf_od_detections {"min_score": s}              a TF OD API graph's own detection outputs
                                                      -> per item (K, 6) (cr.runtime.detection)
"""
from __future__ import annotations

import hashlib
import json

from ..errors import CRError

_INTERPOLATION = ("nearest", "bilinear", "bicubic", "lanczos", "area", "box")

# The software a step imports beyond numpy (requirement strings, as in a meta's deps).
# Only steps that import something are listed; requirements() reads this table.
STEP_REQUIRES: dict[str, tuple[str, ...]] = {
    "decode": ("software:pillow",),
    "resize": ("software:pillow",),
}
# The import name -> the software that provides it, for the error of a failed import.
_PROVIDES = {"PIL": "pillow"}


class PipelineError(CRError):
    """A step that is unknown, badly parameterised, or does not fit the data it gets."""


def digest(meta: dict) -> str:
    """sha256 of the canonical JSON of the model's preprocess and postprocess steps."""
    steps = {"preprocess": meta.get("preprocess") or [], "postprocess": meta.get("postprocess") or []}
    return hashlib.sha256(json.dumps(steps, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def describe(meta: dict) -> dict:
    """What a result records about the pipeline."""
    return {"sha256": digest(meta), "preprocess": meta.get("preprocess") or [], "postprocess": meta.get("postprocess") or []}


def requirements(meta: dict) -> list[str]:
    """The software requirement strings the meta's preprocess and postprocess steps need
    (STEP_REQUIRES of each op, deduplicated, in the order the steps first need them).
    Unknown ops need nothing here: Pipeline() reports them."""
    out: list[str] = []
    for stage in ("preprocess", "postprocess"):
        for step in meta.get(stage) or []:
            for req in STEP_REQUIRES.get(step.get("op") if isinstance(step, dict) else None, ()):
                if req not in out:
                    out.append(req)
    return out


def _missing_software(exc: ImportError) -> str | None:
    """The software whose import failed, or None when it is not one a step is known to import."""
    return _PROVIDES.get((exc.name or "").split(".")[0])


# ---------------------------------------------------------------- pre-processing steps

def _image(x):
    from PIL import Image
    import numpy as np

    if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim not in (2, 3):
        raise PipelineError(
            f"this step works on uint8 images (HxW or HxWxC), got {getattr(x, 'dtype', type(x).__name__)} {getattr(x, 'shape', '')}",
            hint="put resize/center_crop before cast/scale/normalize, and decode files first",
        )
    return Image.fromarray(x)


def _decode(x, mode="RGB"):
    import numpy as np
    from PIL import Image

    if isinstance(x, np.ndarray):
        image = Image.fromarray(x)
    else:
        import io

        try:
            image = Image.open(io.BytesIO(x) if isinstance(x, (bytes, bytearray)) else x)
            image.load()
        except (OSError, ValueError) as exc:
            raise PipelineError(f"cannot decode {x if not isinstance(x, (bytes, bytearray)) else 'the sample bytes'}: {exc}",
                                hint="the sample must be an image file Pillow reads (PNG, JPEG, ...)") from None
    if mode == "BGR":  # what OpenCV's imread gives: RGB's channels reversed (a pipeline study's colour-order choice)
        return np.asarray(image.convert("RGB"))[..., ::-1]
    out = np.asarray(image.convert(mode))
    return out[..., None] if out.ndim == 2 else out


def _resize(x, size=None, shorter=None, interpolation="bilinear"):
    import numpy as np
    from PIL import Image

    if interpolation not in _INTERPOLATION:
        raise PipelineError(f"resize: unknown interpolation {interpolation!r}", hint=f"use one of {', '.join(_INTERPOLATION)}")
    squeeze = x.ndim == 3 and x.shape[2] == 1
    image = _image(x[..., 0] if squeeze else x)
    w, h = image.size
    if size is not None:
        th, tw = int(size[0]), int(size[1])
    elif shorter is not None:
        s = int(shorter)
        th, tw = (s, max(1, round(w * s / h))) if h <= w else (max(1, round(h * s / w)), s)
    else:
        raise PipelineError("resize needs size [H, W] or shorter N")
    resample = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC,
                "lanczos": Image.LANCZOS, "area": Image.BOX, "box": Image.BOX}[interpolation]
    out = np.asarray(image.resize((tw, th), resample=resample))
    return out[..., None] if squeeze else out


def _center_crop(x, size=None, ratio=None):
    h, w = x.shape[0], x.shape[1]
    if size is not None:
        th, tw = int(size[0]), int(size[1])
    elif ratio is not None:
        th, tw = int(round(h * float(ratio))), int(round(w * float(ratio)))
    else:
        raise PipelineError("center_crop needs size [H, W] or ratio r")
    if th > h or tw > w:
        raise PipelineError(f"center_crop to {th}x{tw} is larger than the image ({h}x{w})", hint="resize first")
    top, left = (h - th) // 2, (w - tw) // 2
    return x[top:top + th, left:left + tw]


def _color_order(x, order="RGB"):
    if order == "RGB":
        return x
    if order == "BGR":
        return x[..., ::-1]
    raise PipelineError(f"color_order: unknown order {order!r}", hint="use RGB or BGR")


def _cast(x, dtype="float32"):
    import numpy as np

    try:
        return x.astype(np.dtype(dtype), copy=False)
    except TypeError:
        raise PipelineError(f"cast: unknown dtype {dtype!r}", hint="use a numpy dtype name such as float32") from None


def _scale(x, factor=1.0, offset=0.0):
    import numpy as np

    dtype = x.dtype if x.dtype.kind == "f" else np.float32
    return (x * np.asarray(factor, dtype) + np.asarray(offset, dtype)).astype(dtype, copy=False)


def _normalize(x, mean, std):
    import numpy as np

    dtype = x.dtype if x.dtype.kind == "f" else np.float32
    mean, std = np.asarray(mean, dtype), np.asarray(std, dtype)
    if mean.ndim and mean.shape[0] not in (1, x.shape[-1]):
        raise PipelineError(f"normalize: {mean.shape[0]} means for {x.shape[-1]} channels on the last axis",
                            hint="normalize before layout HWC->CHW, with one mean/std per channel")
    return ((x - mean) / std).astype(dtype, copy=False)


def _clip(x, min=None, max=None):  # noqa: A002 - the step's own parameter names
    import numpy as np

    return np.clip(x, min, max)


def _reshape(x, shape):
    try:
        return x.reshape(shape)
    except ValueError:
        raise PipelineError(f"reshape: a sample of shape {list(x.shape)} cannot become {shape}",
                            hint="check the dataset's sample shape against the model's input") from None


def _layout(x, to, **kw):
    src = kw.get("from")
    if not src or sorted(src) != sorted(to) or len(src) != x.ndim:
        raise PipelineError(f"layout: cannot go from {src!r} to {to!r} on a sample of rank {x.ndim}",
                            hint='give "from" and "to" as the same letters, one per axis, e.g. HWC -> CHW')
    return x.transpose([src.index(c) for c in to])


def _quantize(x, scale, zero_point=0, dtype="int8"):
    import numpy as np

    info = np.iinfo(np.dtype(dtype))
    return np.clip(np.round(x / scale) + zero_point, info.min, info.max).astype(dtype)


PRE = {
    "decode": _decode, "resize": _resize, "center_crop": _center_crop, "color_order": _color_order,
    "cast": _cast, "scale": _scale, "normalize": _normalize, "clip": _clip, "reshape": _reshape,
    "layout": _layout, "quantize": _quantize,
}


# --------------------------------------------------------------- post-processing steps

def _select(outputs, output=0):
    if not 0 <= int(output) < len(outputs):
        raise PipelineError(f"select: output {output} does not exist (the model gave {len(outputs)})")
    return [outputs[int(output)]]


def _first(fn):
    def step(outputs, **kw):
        import numpy as np

        return [fn(np.asarray(outputs[0]), **kw)] + list(outputs[1:])
    return step


def _softmax(x, axis=-1):
    import numpy as np

    x = x.astype(np.float64) if x.dtype.kind != "f" else x
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(x):
    import numpy as np

    return 1.0 / (1.0 + np.exp(-x))


def _dequantize(x, scale, zero_point=0):
    import numpy as np

    return ((x.astype(np.float32) - zero_point) * scale).astype(np.float32)


def _argmax(x, axis=-1):
    return x.argmax(axis=axis)


def _topk(outputs, k=5):
    import numpy as np

    x = np.asarray(outputs[0])
    k = min(int(k), x.shape[-1])
    idx = np.argsort(-x, axis=-1, kind="stable")[..., :k]
    return [idx, np.take_along_axis(x, idx, axis=-1)]


def _blazeface(outputs, **params):
    from .detection import blazeface_decode

    # one output: per batch item, a (K, 5) array of [ymin, xmin, ymax, xmax, score]
    return [blazeface_decode([__import__("numpy").asarray(o) for o in outputs], **params)]


def _detector(name):
    def step(outputs, **params):
        import numpy as np

        from . import detection

        return [getattr(detection, name)([np.asarray(o) for o in outputs], **params)]
    return step


POST = {
    "select": _select, "dequantize": _first(_dequantize), "softmax": _first(_softmax), "sigmoid": _first(_sigmoid),
    "argmax": _first(_argmax), "topk": _topk, "blazeface_decode": _blazeface,
    "ssd_decode": _detector("ssd_decode"), "tf_od_detections": _detector("tf_od_detections"),
}


# ------------------------------------------------------------ overrides of a model's steps

def step_ops(meta: dict) -> list[str]:
    """The ops of the meta's preprocess then postprocess steps, in order (what an override can address)."""
    return [step.get("op") for stage in ("preprocess", "postprocess") for step in meta.get(stage) or []
            if isinstance(step, dict)]


def with_overrides(meta: dict, overrides: dict) -> dict:
    """A copy of meta whose steps carry overrides ({"resize.interpolation": "nearest",
    "normalize.mean": [...]}: STEP.PARAM -> value; the step is the first of that op, in
    preprocess then postprocess). meta itself is left as it was. PipelineError naming the
    key and the steps the pipeline has when no step has that op, or the op has no such
    parameter (the value itself is checked when the step runs, as a declared one is)."""
    import copy
    import inspect

    if not overrides:
        return meta
    out = copy.deepcopy(meta)
    for key, value in overrides.items():
        op, _, param = str(key).partition(".")
        steps = [(stage, step) for stage in ("preprocess", "postprocess") for step in out.get(stage) or []
                 if isinstance(step, dict) and step.get("op") == op]
        have = ", ".join(dict.fromkeys(str(o) for o in step_ops(meta))) or "none"
        if not param or "." in param:
            raise PipelineError(f"pipeline.{key}: expected pipeline.STEP.PARAM (e.g. pipeline.resize.interpolation)",
                                hint=f"this model's pipeline has the steps: {have}")
        if not steps:
            raise PipelineError(f"pipeline.{key}: this model's pipeline has no {op} step",
                                hint=f"its steps: {have} (an override changes a step the model declares; it adds none)")
        stage, step = steps[0]
        fn = (PRE if stage == "preprocess" else POST).get(op)
        if fn is not None and param not in step:
            sig = inspect.signature(fn).parameters
            named = [n for n, p in list(sig.items())[1:] if p.kind is not p.VAR_KEYWORD]
            if not any(p.kind is p.VAR_KEYWORD for p in sig.values()) and param not in named:
                raise PipelineError(f"pipeline.{key}: the {op} step has no parameter {param!r}",
                                    hint=f"{op} takes: {', '.join(named) or 'no parameter'}")
        step[param] = value
    return out


class Pipeline:
    """A validated step list; ``stage`` is "preprocess" or "postprocess"."""

    def __init__(self, steps: list[dict] | None, stage: str = "preprocess"):
        table = PRE if stage == "preprocess" else POST
        self.stage = stage
        self.steps = []
        for i, step in enumerate(steps or []):
            op = step.get("op")
            if op not in table:
                raise PipelineError(f"{stage} step {i}: unknown op {op!r}", hint=f"{stage} ops: {', '.join(sorted(table))}")
            params = {k: v for k, v in step.items() if k != "op"}
            self.steps.append((i, op, table[op], params))

    def __len__(self) -> int:
        return len(self.steps)

    def _run(self, value, i, op, fn, params):
        try:
            return fn(value, **params)
        except PipelineError as exc:
            message = exc.message[len(op) + 2:] if exc.message.startswith(f"{op}: ") else exc.message
            raise PipelineError(f"{self.stage} step {i} ({op}): {message}", hint=exc.hint) from None
        except ImportError as exc:
            software = _missing_software(exc)
            if software is None:
                raise
            module = (exc.name or "").split(".")[0] or software
            raise PipelineError(
                f"{self.stage} step {i} ({op}) needs {software} (module {module}), which this environment cannot import: {exc}",
                hint=f"install it where the model runs: cr install software {software} (or pip install {software})",
            ) from None
        except TypeError as exc:
            raise PipelineError(f"{self.stage} step {i} ({op}): bad parameters {params}: {exc}",
                                hint="see the step list in cr/runtime/pipeline.py (docs/datasets.md)") from None

    def sample(self, data):
        """Pre-process one sample."""
        import numpy as np

        value = data
        for i, op, fn, params in self.steps:
            value = self._run(value, i, op, fn, params)
        return np.asarray(value)

    def batch(self, samples: list):
        """Pre-process each sample and stack them on a new leading (batch) axis."""
        import numpy as np

        items = [self.sample(s) for s in samples]
        shapes = {x.shape for x in items}
        if len(shapes) > 1:
            raise PipelineError(f"pre-processed samples differ in shape ({', '.join(map(str, sorted(shapes)))}), so they cannot be batched",
                                hint="add resize/center_crop to the model's preprocess so every sample has the same shape")
        return np.ascontiguousarray(np.stack(items))

    def apply_outputs(self, outputs: list) -> list:
        """Post-process one batch's outputs (a list, one array per model output)."""
        value = list(outputs)
        for i, op, fn, params in self.steps:
            value = self._run(value, i, op, fn, params)
        return value
