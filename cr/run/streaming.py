"""`cr run MODEL --stream SRC` as a call: the frames of a video file, a folder of images or a
camera through the model, as an iterator of per-frame results.

    frames = cr.stream("model:ssdlite-mobilenet-v2-person", "clip.mp4", backend="tflite", max_frames=50)
    for frame in frames:                  # {"frame": 0, "id": "clip.mp4#0", "detections": [...]}
        ...
    frames.record["stream"]["fps"]        # the whole record: what `cr run --stream --json` prints

The model runs in the runtime's child process (as every action does), which hands back one
record when the stream ends: the iteration starts once the run is over, not as frames arrive.
"""
from __future__ import annotations

import os

from ..errors import CRError

_STREAM_ONLY = ("annotate", "max_frames", "score_threshold", "strict")


def stream_params(params: dict, has_inputs: bool) -> dict:
    """params with the stream options checked: the source and annotate folder made absolute
    (the runtime child may run elsewhere), options without a stream source refused."""
    out = {k: v for k, v in params.items() if not (k in (*_STREAM_ONLY, "stream") and v in (None, False))}
    if not out.get("stream"):
        given = [k for k in _STREAM_ONLY if k in out]
        if given:
            raise CRError(f"--{given[0].replace('_', '-')} applies to --stream only",
                          hint="add --stream VIDEO|FOLDER|CAMERA_INDEX")
        return out
    if has_inputs:
        raise CRError("--stream and --input are two different sources", hint="give one of them")
    source = str(out["stream"])
    if not source.isdigit():
        if not os.path.exists(source):
            raise CRError(f"stream source {source} does not exist",
                          hint="give a video file, a folder of frames, or a camera index (0 for the first)")
        out["stream"] = os.path.abspath(source)
    if out.get("annotate"):
        out["annotate"] = os.path.abspath(str(out["annotate"]))
    return out


class Stream:
    """The per-frame results of a stream run, in frame order; ``record`` is the run's record
    as `cr run --stream --json` prints it ("predictions": every frame, "stream": frames, fps,
    model_ms_mean, source, annotated, skipped). The run starts on first use of either."""

    def __init__(self, run):
        self._run = run
        self._record = None

    @property
    def record(self) -> dict:
        if self._record is None:
            self._record = self._run()
        return self._record

    def __iter__(self):
        return iter(self.record.get("predictions") or [])


def stream(ref: str, source, backend: str | None = None, *, annotate=None, max_frames: int | None = None,
           strict: bool | None = None, score_threshold: float | None = None, variant: str | None = None,
           options: dict | None = None, threads: int | None = None, batch_size: int | None = None,
           top_k: int | None = None, timeout_s: float | None = None, lock=None, output=None, store: bool = True,
           install: bool = False) -> Stream:
    """Run every frame of source (a video file, a folder of images, or a camera index: 0 is
    the first) through ref's pipeline (`cr run REF --stream SRC`); a Stream: iterate it for
    each frame's result, its ``record`` is the command's --json.

    annotate: a folder for the frames with their detections drawn; max_frames: stop after
    this many (a camera: 100 unless given); strict: stop at a frame that cannot be used
    instead of skipping it; score_threshold: detections shown from this score (0.5).
    The options are checked now (CRError: a source that does not exist, ...); the run, on
    first use: RunFailed (a CRError, the record on ``.result``) when it fails, NotStored when
    the results store does not take the record."""
    from .actions import NotStored, run_action
    from .outcome import failure, finished
    from ..results.record import to_json

    given = {"stream": None if source is None else str(source), "annotate": annotate, "max_frames": max_frames,
             "strict": strict, "score_threshold": score_threshold, "threads": threads, "batch_size": batch_size,
             "top_k": top_k, "timeout_s": timeout_s}
    params = stream_params({k: v for k, v in given.items() if v is not None}, has_inputs=False)
    if not params.get("stream"):
        raise CRError("stream needs a source", hint="give a video file, a folder of frames, or a camera index (0 for the first)")

    def run() -> dict:
        try:
            record, not_stored = run_action("run", ref, backend=backend, params=params, backend_options=options or {},
                                            variant=variant, lock=lock, output=output, store=store, install=install), None
        except NotStored as exc:
            record, not_stored = exc.records, exc
        record = to_json(record[0] if isinstance(record, list) else record)
        return finished(record, failure(record), not_stored)

    return Stream(run)
