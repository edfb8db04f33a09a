"""Conversions to every stack: per hop, its time and max |diff| against its input, for
lenet-digits and efficientnet-lite0 through `cr compile` (the conversion graph).

    .venv/bin/python benchmarks/bench_conversions.py                    # both models, every target
    .venv/bin/python benchmarks/bench_conversions.py --models lenet-digits --json figures.json

Each compile runs in a fresh temporary CR_HOME (removed at exit unless --keep) as the
venv's `cr` console script, and then `cr validate` runs the output on the backend of its
format (onnxruntime, tflite, tensorflow), so the table says whether the output also
reaches that backend. Times are single runs of a one-off conversion (what a user waits
for), not medians: a conversion is not repeated in practice, and the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = [  # (--to arguments, backend that runs the output)
    (["--to", "onnx"], "onnxruntime"),
    (["--to", "tflite"], "tflite"),
    (["--to", "tflite", "--precision", "int8"], "tflite"),
    (["--to", "savedmodel"], "tensorflow"),
]
SOURCES = {"lenet-digits": [], "efficientnet-lite0": []}  # extra compile arguments per model
LENET_FROM_TFLITE = (["--variant", "tflite", "--to", "onnx", "--version", "1.0.0+onnx.from-tflite"], "onnxruntime")


def _cr() -> str:
    return str(Path(sys.executable).with_name("cr"))


def run(model: str, args: list[str], backend: str, home: str) -> dict:
    env = {**os.environ, "CR_HOME": home}
    clock = time.monotonic()
    done = subprocess.run([_cr(), "compile", "model", model, *args, "--json"], capture_output=True, text=True, env=env)
    wall = time.monotonic() - clock
    try:
        record = json.loads(done.stdout)
    except json.JSONDecodeError:
        return {"model": model, "args": args, "status": "crashed", "error": done.stderr.strip().splitlines()[-2:], "wall_s": wall}
    row = {"model": model, "args": args, "status": record["status"], "wall_s": round(wall, 2), "path": record.get("path") or [],
           "error": (record.get("error") or {}).get("message")}
    if record["status"] == "ok":
        ref = record["output"]["ref"]
        check = subprocess.run([_cr(), "validate", ref.replace("model:", "model:", 1), "--backend", backend, "--json"],
                               capture_output=True, text=True, env=env)
        try:
            validated = json.loads(check.stdout)
            row["validate"] = (validated.get("validation") or {}).get("outcome") or validated.get("status")
        except json.JSONDecodeError:
            row["validate"] = "error: " + (check.stderr.strip().splitlines() or ["?"])[-1]
        row["output"] = ref
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(SOURCES), help="comma-separated models (default: both)")
    parser.add_argument("--json", help="write the rows here ('-': stdout)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary CR_HOME")
    parser.add_argument("--to", dest="formats", help="comma-separated target formats only (onnx, tflite, savedmodel; default: all)")
    opts = parser.parse_args()
    home = tempfile.mkdtemp(prefix="bench-conversions-")
    rows = []
    try:
        for model in opts.models.split(","):
            jobs = [(SOURCES.get(model, []) + a, b) for a, b in TARGETS]
            if model == "lenet-digits":
                jobs.append(LENET_FROM_TFLITE)
            if opts.formats:
                wanted = opts.formats.split(",")
                jobs = [(a, b) for a, b in jobs if a[a.index("--to") + 1] in wanted]
            for args, backend in jobs:
                row = run(model, args, backend, home)
                rows.append(row)
                print(f"{model} {' '.join(args)}: {row['status']} in {row['wall_s']:.1f} s", file=sys.stderr)
    finally:
        if opts.keep:
            print(f"kept {home}", file=sys.stderr)
        else:
            shutil.rmtree(home, ignore_errors=True)
    print(f"| model | cr compile | hop | tool | hop time | max abs diff | top-1 agreement | whole compile | cr validate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        target = " ".join(row["args"])
        if row["status"] != "ok":
            print(f"| {row['model']} | {target} | FAILED: {row.get('error')} | | | | | {row['wall_s']:.1f} s | |")
            continue
        for i, hop in enumerate(row["path"]):
            diff = hop.get("max_abs_diff")
            agree = hop.get("top1_agreement")
            print(f"| {row['model'] if i == 0 else ''} | {target if i == 0 else ''} | {hop['hop']} | {hop.get('tool')} "
                  f"{hop.get('version') or ''} | {hop.get('seconds', 0):.1f} s | {'' if diff is None else f'{diff:.2g}'} | "
                  f"{'' if agree is None else f'{agree:.3f}'} | {row['wall_s']:.1f} s | {row.get('validate') or ''} |")
    if opts.json:
        text = json.dumps(rows, indent=1)
        if opts.json == "-":
            print(text)
        else:
            Path(opts.json).write_text(text)
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
