"""What the run action's host hook and the stream reader in the lock cost `cr run`.

The run action now has a host hook (cr/run/run_host.py) that adds a --stream source's
reader to the run's requirements. Two figures, medians of --runs, each a child process with
bytecode cached:
- `cr run model lenet-digits --backend onnxruntime --limit 1` (no stream: the hook adds
  nothing, but is loaded), warm (its lock reused). With --baseline SRC (a checkout of the
  code before, e.g. `git archive main | tar -x -C SRC`) the same command from SRC runs
  interleaved with this checkout's, run for run, each in its own CR_HOME, and the table
  gives the ratio this checkout / SRC of the same run.
- the same model on a 4-frame --stream video (this checkout only): the first run in a fresh
  CR_HOME, which resolves a lock holding the reader (two more detections), against the
  warm runs that reuse it. Needs imageio and imageio-ffmpeg (the test extra).

    .venv/bin/python benchmarks/bench_hints.py --baseline /tmp/cr-main --runs 7
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ["run", "model", "lenet-digits", "--backend", "onnxruntime", "--limit", "1", "--no-store"]


def _cr(src: Path, home: str, args: list[str], ok: bool = True) -> float:
    env = {**os.environ, "CR_HOME": home, "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # start-up as users see it: bytecode cached
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cr", *args], cwd=home, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if ok and done.returncode != 0:
        raise SystemExit(f"cr {' '.join(args)} from {src} failed:\n{done.stdout}{done.stderr}")
    return took


def _clip(folder: str) -> str:
    import imageio.v2 as imageio
    import numpy as np

    path = os.path.join(folder, "clip.mp4")
    writer = imageio.get_writer(path, fps=5, codec="libx264", quality=8)
    rng = np.random.default_rng(0)
    for _ in range(4):
        writer.append_data((rng.random((16, 16, 3)) * 255).astype(np.uint8))
    writer.close()
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--baseline", type=Path, help="a checkout of the code to compare with (run interleaved)")
    ap.add_argument("--json", dest="json_out", help="also write the raw samples here ('-': stdout)")
    args = ap.parse_args(argv)
    sides = {"this checkout": ROOT}
    if args.baseline is not None:
        sides = {"baseline": args.baseline.resolve(), **sides}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="bench-hints-") as tmp:
        homes = {}
        for name, src in sides.items():
            homes[name] = os.path.join(tmp, name.replace(" ", "-"))
            os.makedirs(homes[name])
            _cr(src, homes[name], RUN)  # untimed: resolves the lock, writes the bytecode
        for _ in range(args.runs):
            for name, src in sides.items():
                samples[name].append(_cr(src, homes[name], RUN))
        # The stream: lenet-digits reads every frame (the reader works), then its reshape refuses
        # an RGB frame; the run exits 1 after the frames were read, which is what is timed here.
        clip = _clip(tmp)
        stream = [*RUN[:5], "--stream", clip, "--no-store"]
        cold, warm = [], []
        for i in range(args.runs):
            home = os.path.join(tmp, f"stream-{i}")
            os.makedirs(home)
            cold.append(_cr(ROOT, home, stream, ok=False))
            warm.append(_cr(ROOT, home, stream, ok=False))
    base = statistics.median(samples["baseline"]) if "baseline" in samples else None
    print(f"{'what':<58} {'median':>9} {'ratio':>7}")
    for name, values in samples.items():
        ratios = ([a / b for a, b in zip(values, samples["baseline"])] if base is not None else [])
        ratio = f"{statistics.median(ratios):.2f}x" if ratios else "-"
        print(f"{'cr run lenet-digits --limit 1, warm, ' + name:<58} {statistics.median(values) * 1e3:>7.0f} ms {ratio:>7}")
    print(f"{'cr run --stream (4 frames), first run: lock with reader':<58} {statistics.median(cold) * 1e3:>7.0f} ms {'-':>7}")
    print(f"{'cr run --stream (4 frames), lock reused':<58} {statistics.median(warm) * 1e3:>7.0f} ms {'-':>7}")
    if args.json_out:
        raw = json.dumps({"run": samples, "stream_cold": cold, "stream_warm": warm}, indent=1)
        if args.json_out == "-":
            print(raw)
        else:
            Path(args.json_out).write_text(raw + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
