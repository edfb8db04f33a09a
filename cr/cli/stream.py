"""`cr run ... --stream SRC`: the per-frame table (cr.run.streaming checks the options,
cr.runtime.stream runs it)."""
from __future__ import annotations

import click

from . import output


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
