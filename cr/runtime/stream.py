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
import warnings
from pathlib import Path
from typing import Callable, Iterator

from ..errors import CRError, NotFound

CAMERA_FRAMES = 100  # a camera never ends: this many frames unless max_frames says otherwise
# A frame's pixels are checked before it is decoded: a few KB of PNG can say 12,000 x 12,000,
# which decodes to 432 MB of RGB (and more on the way). 8192 x 8192 covers 8K video with room.
MAX_FRAME_PIXELS = 8192 * 8192


class BadFrame(CRError):
    """One frame that cannot be used (too large, unreadable, a link out of the folder): skipped
    with a warning, or the end of the stream with strict."""


# What reading a source needs, as software requirements: the run's lock includes them
# (cr.run.run_host), so `--install` installs them and the runtime child can import them.
# A folder's frames and annotated frames go through Pillow; a video file or a camera
# through imageio and its ffmpeg plugin; an animated image through imageio's Pillow plugin.
FOLDER_REQUIRES = ("software:pillow",)
VIDEO_REQUIRES = ("software:imageio", "software:imageio-ffmpeg", "software:pillow")
ANIMATED_REQUIRES = ("software:imageio", "software:pillow")
ANNOTATE_REQUIRES = ("software:pillow",)
# Where the reader is missing anyway (a given --lock, a solution's lock), what the error says.
_READER_HINT = ("a stream's reader belongs in the run's lock: run the model itself (cr run model NAME --backend B "
                "--stream SRC --install) so cr resolves and installs it, or add software:imageio and "
                "software:imageio-ffmpeg to the solution's deps and cr init solution NAME again")


def requirements(source: str, annotate: bool = False) -> tuple[str, ...]:
    """The software requirement strings reading source (a --stream value) needs, plus Pillow
    for annotate; decided from the source's name alone (nothing is opened or imported)."""
    from .datasets import IMAGE_SUFFIXES

    text = str(source)
    if text.isdigit():
        needs = VIDEO_REQUIRES
    elif os.path.isdir(text):
        needs = FOLDER_REQUIRES
    elif Path(text).suffix.lower() in IMAGE_SUFFIXES:  # an animated GIF/WebP/TIFF: imageio through Pillow
        needs = ANIMATED_REQUIRES
    else:
        needs = VIDEO_REQUIRES
    return tuple(dict.fromkeys((*needs, *(ANNOTATE_REQUIRES if annotate else ()))))


def _imageio(what: str):
    try:
        import imageio.v2 as imageio
    except ImportError as exc:
        raise CRError(f"reading {what} needs imageio, which this environment cannot import ({exc})",
                      hint=_READER_HINT) from None
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

    root = folder.resolve()
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and (p.is_file() or p.is_symlink()))
    if not files:
        raise CRError(f"the stream folder {folder} holds no image files",
                      hint=f"put frames there ({', '.join(IMAGE_SUFFIXES)}), or give a video file or a camera index")
    for path in files:
        real = path.resolve()
        if real.parent != root and root not in real.parents:
            yield path.name, BadFrame(f"frame {path.name} is a link out of the stream folder (to {real})",
                                      hint="copy the frame into the folder; links out of it are not followed")
            continue
        if not real.is_file():
            yield path.name, BadFrame(f"frame {path.name} is not a regular file", hint="remove it from the folder")
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the size is judged below
                image = Image.open(real)
            with image:
                w, h = image.size
                if w * h > MAX_FRAME_PIXELS:
                    yield path.name, BadFrame(f"frame {path.name} is {w} x {h} pixels, more than {MAX_FRAME_PIXELS:,} "
                                              "(it is not decoded)", hint="scale the frames down first")
                    continue
                frame = _rgb(image.convert("RGB"))
        except (OSError, ValueError, Image.DecompressionBombError, SyntaxError) as exc:
            yield path.name, BadFrame(f"frame {path.name} cannot be read as an image: {type(exc).__name__}: "
                                      f"{str(exc).splitlines()[0] if str(exc) else ''}", hint="replace or remove it")
            continue
        yield path.name, frame


def _reader_frames(reader, prefix: str) -> Iterator[tuple[str, object]]:
    try:
        size = (reader.get_meta_data() or {}).get("size") if hasattr(reader, "get_meta_data") else None
        if isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(v, int) for v in size) \
                and size[0] * size[1] > MAX_FRAME_PIXELS:
            raise CRError(f"the video's frames are {size[0]} x {size[1]} pixels, more than {MAX_FRAME_PIXELS:,}",
                          hint="scale the video down first (e.g. ffmpeg -vf scale=1920:-2)")
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
                          hint="a camera needs imageio's ffmpeg plugin (software:imageio-ffmpeg in the run's lock: "
                               "cr run model NAME --backend B --stream 0 --install) and access to the device") from None
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
                      hint=_video_hint(exc)) from None
    return _reader_frames(reader, "frame ")


def _video_hint(exc: Exception) -> str:
    """What to do when imageio cannot open a file: its ffmpeg plugin is missing (the reader is not
    in the run's lock), or the file is not a video ffmpeg reads."""
    try:
        import imageio_ffmpeg  # noqa: F401
    except ImportError:
        return _READER_HINT
    return "check that the file is a video ffmpeg can read (a folder of frames works too)"


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
               on_frame: Callable | None = None, strict: bool = False) -> tuple[list[dict], dict]:
    """(per-frame entries, summary {source, frames, seconds, fps, model_ms_mean, annotated, skipped}).

    A frame that cannot be used (BadFrame: more than MAX_FRAME_PIXELS, unreadable, a link out
    of the folder) is skipped and listed in summary["skipped"] ({id, why}); strict=True ends
    the stream with its error instead."""
    stream = frames(source)
    limit = max_frames if max_frames is not None else (CAMERA_FRAMES if str(source).isdigit() else None)
    out_dir = None
    if annotate_dir:
        out_dir = Path(annotate_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
    entries, model_seconds, skipped = [], 0.0, []
    started = time.perf_counter()
    for frame_id, image in stream:
        if isinstance(image, BadFrame):
            if strict:
                raise image
            skipped.append({"id": frame_id, "why": image.message})
            continue
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
        if skipped:
            raise CRError(f"stream source {source} gave no usable frame: {skipped[0]['why']}"
                          + (f" (and {len(skipped) - 1} more skipped)" if len(skipped) > 1 else ""),
                          hint="fix or remove the frames named")
        raise CRError(f"stream source {source} gave no frames", hint="check that the video is not empty and that imageio can read it")
    summary = {"source": str(source), "frames": len(entries), "seconds": elapsed,
               "fps": len(entries) / elapsed if elapsed > 0 else None,
               "model_ms_mean": model_seconds / len(entries) * 1e3,
               "annotated": str(out_dir) if out_dir is not None else None, "skipped": skipped}
    return entries, summary
