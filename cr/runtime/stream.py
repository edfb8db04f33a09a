"""Streams for `cr run --stream SRC`: frames from a video file, a folder of images or a camera,
through the model's pipeline one by one, with the frame rate achieved.

    for frame_id, image in frames("clip.mp4"): ...      # HxWx3 uint8 RGB arrays
    summary = run_stream(source, predict, annotate_dir=None, max_frames=None)

Sources:
    a folder        its image files (cr.runtime.datasets.IMAGE_SUFFIXES), sorted by name
    a file          a video (or animated image) read by imageio; video files need its ffmpeg
                    plugin (the imageio-ffmpeg package bundles an ffmpeg binary)
    an integer      a camera (0 is the first), through imageio's ffmpeg plugin (<video0>);
                    where there is none the error says so

``predict(image) -> (entry, seconds in the model)``: entry is what the frame shows ({"detections":
[...]} or {"top": [...]}). Annotated frames (``annotate_dir``) are the input frames as PNG with
the detections drawn (Pillow), named frame_000000.png, ...; classifiers get their top class
written in the corner. FPS is frames / wall time of the whole loop (read, pre-process, model,
post-process, annotate), the rate a viewer would see; the model's own time is reported beside it.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CRError, NotFound

CAMERA_FRAMES = 100  # a camera never ends: this many frames unless max_frames says otherwise


def _imageio(what: str):
    try:
        import imageio.v2 as imageio
    except ImportError as exc:
        raise CRError(f"reading {what} needs imageio, which this environment cannot import ({exc})",
                      hint="install it where the model runs: cr install software imageio (and imageio-ffmpeg for video)") from None
    return imageio


def _rgb(frame):
    import numpy as np

    frame = np.asarray(frame)
    if frame.ndim == 2:
        frame = np.stack([frame] * 3, axis=-1)
    if frame.shape[-1] == 4:
        frame = frame[..., :3]
    if frame.dtype != np.uint8:
        frame = np.clip(frame, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(frame)


def _folder_frames(folder: Path) -> Iterator[tuple[str, object]]:
    from PIL import Image

    from .datasets import IMAGE_SUFFIXES

    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not files:
        raise CRError(f"the stream folder {folder} holds no image files",
                      hint=f"put frames there ({', '.join(IMAGE_SUFFIXES)}), or give a video file or a camera index")
    for path in files:
        with Image.open(path) as image:
            yield path.name, _rgb(image.convert("RGB"))


def _reader_frames(reader, prefix: str) -> Iterator[tuple[str, object]]:
    try:
        for i, frame in enumerate(reader):
            yield f"{prefix}{i}", _rgb(frame)
    finally:
        reader.close()


def frames(source: str) -> Iterator[tuple[str, object]]:
    """(frame id, HxWx3 uint8 RGB array) of each frame of source, in order."""
    text = str(source)
    if text.isdigit():
        index = int(text)
        imageio = _imageio(f"camera {index}")
        if os.name == "posix" and os.path.isdir("/dev") and not os.path.exists(f"/dev/video{index}"):
            raise NotFound(f"there is no camera {index} on this machine (/dev/video{index} does not exist)",
                           hint="plug one in, or give a video file or a folder of frames to --stream")
        try:
            reader = imageio.get_reader(f"<video{index}>")
        except Exception as exc:  # imageio raises plain exceptions for a missing device or backend
            raise CRError(f"cannot open camera {index}: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                          hint="a camera needs imageio's ffmpeg plugin (pip install imageio-ffmpeg) and access to the device") from None
        return _reader_frames(reader, "camera")
    path = Path(text)
    if path.is_dir():
        return _folder_frames(path)
    if not path.is_file():
        raise NotFound(f"stream source {text} does not exist",
                       hint="give a video file, a folder of frames, or a camera index (0 for the first)")
    imageio = _imageio(f"the video {path.name}")
    try:
        reader = imageio.get_reader(str(path))
    except Exception as exc:
        raise CRError(f"cannot read {path} as a video: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}",
                      hint="video files need imageio's ffmpeg plugin: pip install imageio-ffmpeg (cr install software imageio-ffmpeg)") from None
    return _reader_frames(reader, "frame ")


def annotate(image, entry: dict, path: Path) -> None:
    """Write image with entry's detections (normalised boxes) or top class drawn on it."""
    from PIL import Image, ImageDraw

    canvas = Image.fromarray(image)
    draw = ImageDraw.Draw(canvas)
    w, h = canvas.size
    for d in entry.get("detections") or []:
        ymin, xmin, ymax, xmax = d["box"]
        box = [xmin * w, ymin * h, xmax * w, ymax * h]
        draw.rectangle(box, outline=(255, 40, 40), width=max(2, w // 200))
        label = f"{d.get('label') or d.get('class', '')} {d['score']:.2f}".strip()
        draw.text((box[0] + 3, max(0, box[1] - 12)), label, fill=(255, 40, 40))
    top = (entry.get("top") or [None])[0]
    if top is not None:
        draw.text((4, 4), f"{top.get('label') or top['class']} {top['score']:.2f}", fill=(255, 255, 0))
    canvas.save(path)


def run_stream(source: str, predict: Callable, annotate_dir: str | None = None, max_frames: int | None = None,
               on_frame: Callable | None = None) -> tuple[list[dict], dict]:
    """(per-frame entries, summary {source, frames, seconds, fps, model_ms_mean, annotated})."""
    stream = frames(source)
    limit = max_frames if max_frames is not None else (CAMERA_FRAMES if str(source).isdigit() else None)
    out_dir = None
    if annotate_dir:
        out_dir = Path(annotate_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    entries, model_seconds = [], 0.0
    started = time.perf_counter()
    for frame_id, image in stream:
        entry, seconds = predict(image)
        model_seconds += seconds
        entry = {"id": frame_id, "frame": len(entries), "size": [int(image.shape[1]), int(image.shape[0])], **entry}
        if out_dir is not None:
            annotate(image, entry, out_dir / f"frame_{len(entries):06d}.png")
        entries.append(entry)
        if on_frame is not None:
            on_frame(entry)
        if limit is not None and len(entries) >= limit:
            break
    elapsed = time.perf_counter() - started
    if not entries:
        raise CRError(f"stream source {source} gave no frames", hint="check that the video is not empty and that imageio can read it")
    summary = {"source": str(source), "frames": len(entries), "seconds": elapsed,
               "fps": len(entries) / elapsed if elapsed > 0 else None,
               "model_ms_mean": model_seconds / len(entries) * 1e3,
               "annotated": str(out_dir) if out_dir is not None else None}
    return entries, summary
