"""`cr run ... --stream SRC`: option checks and the per-frame table (cr.runtime.stream runs it)."""
from __future__ import annotations

import os

import click

from ..errors import CRError
from . import output

_STREAM_ONLY = ("annotate", "max_frames", "score_threshold", "strict")


def stream_params(params: dict, has_inputs: bool) -> dict:
    """params with the stream options checked: the source and annotate folder made absolute
    (the runtime child may run elsewhere), options without --stream refused."""
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
        out["annotate"] = os.path.abspath(out["annotate"])
    return out


def stream_table(record: dict) -> None:
    rows = []
    for p in record.get("predictions") or []:
        if "detections" in p:
            shown = "; ".join(f"{d.get('label') or 'object'} {d['score']:.3f} [{', '.join(f'{v:.3f}' for v in d['box'])}]"
                              for d in p["detections"]) or "none"
        else:
            shown = ", ".join(f"{t.get('label') or t['class']} {t['score']:.3f}" for t in (p.get("top") or [])[:3])
        rows.append([p["frame"], p["id"], shown])
    s = record["stream"]
    title = (f"{record['components'][0]['ref']} on {record['backend']['name']}: {s['frames']} frames of {s['source']} "
             f"at {s['fps']:.1f} FPS (model {s['model_ms_mean']:.1f} ms/frame)")
    output.table(["FRAME", "ID", "DETECTIONS / TOP CLASSES"], rows, title=title)
    if s.get("annotated"):
        click.echo(output.clean(f"annotated frames: {s['annotated']}"))
    for bad in s.get("skipped") or []:
        output.warn(f"skipped {bad['why']} (--strict stops at such a frame)")
