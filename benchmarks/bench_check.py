"""What opening the model files costs `cr check` (cr.store.modelfiles).

Two figures, each a median of --runs:
- `cr check` on every registered repository (the shipped ones, in a fresh CR_HOME whose
  index is built by a first, untimed run), as a child process, cold start included. With
  --baseline SRC (a checkout of the code before, e.g. `git archive main | tar -x -C SRC`),
  the same command from SRC runs interleaved with this checkout's, run for run, and the
  table gives the ratio this checkout / SRC of the same run.
- the structural checks alone, in-process: every model file of the shipped repository read
  by cr.store.modelfiles (the part of the command that is new), in milliseconds.

    .venv/bin/python benchmarks/bench_check.py --baseline /tmp/cr-main --runs 11
    .venv/bin/python benchmarks/bench_check.py --runs 3 --json -
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


def _cr_check(src: Path, home: str) -> float:
    """Seconds of one `cr check` run with the cr package of src (the child runs outside any
    checkout, so its PYTHONPATH decides which cr is imported)."""
    env = {**os.environ, "CR_HOME": home, "PYTHONPATH": str(src)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # start-up as users see it: bytecode cached
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cr", "check"], cwd=home, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"cr check from {src} failed:\n{done.stdout}{done.stderr}")
    return took


def _structural_ms() -> tuple[float, int]:
    sys.path.insert(0, str(ROOT))
    from cr.store import modelfiles

    files = []
    for meta_path in sorted((ROOT / "repo" / "model").glob("*/*/meta.json")):
        meta = json.loads(meta_path.read_text())
        for holder in [meta] + list(meta.get("variants") or []):
            rel = holder.get("file")
            if isinstance(rel, str):
                files.append((holder.get("format") or meta.get("format"), meta_path.parent / rel))
    start = time.perf_counter()
    for fmt, path in files:
        assert modelfiles.problem(fmt, path) is None, path
    return (time.perf_counter() - start) * 1e3, len(files)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--baseline", type=Path, help="a checkout of the code to compare with (run interleaved)")
    ap.add_argument("--json", dest="json_out", help="also write the raw samples here ('-': stdout)")
    args = ap.parse_args(argv)
    sides = {"this checkout": ROOT}
    if args.baseline is not None:
        sides = {"baseline": args.baseline.resolve(), **sides}
    samples: dict[str, list[float]] = {name: [] for name in sides}
    with tempfile.TemporaryDirectory(prefix="bench-check-") as tmp:
        homes = {}
        for name, src in sides.items():
            homes[name] = os.path.join(tmp, name.replace(" ", "-"))
            os.makedirs(homes[name])
            _cr_check(src, homes[name])  # untimed: builds the index and the bytecode
        for _ in range(args.runs):
            for name, src in sides.items():
                samples[name].append(_cr_check(src, homes[name]))
    parse = [_structural_ms() for _ in range(args.runs)]
    parse_ms, n_files = statistics.median(p[0] for p in parse), parse[0][1]
    base = statistics.median(samples["baseline"]) if "baseline" in samples else None
    print(f"{'what':<44} {'median':>10} {'ratio':>7}")
    for name, values in samples.items():
        med = statistics.median(values)
        ratio = f"{med / base:.2f}x" if base else "-"
        print(f"{'cr check (every repo), ' + name:<44} {med * 1e3:>8.0f} ms {ratio:>7}")
    print(f"{f'structural checks alone ({n_files} model files)':<44} {parse_ms:>8.1f} ms {'-':>7}")
    if args.json_out:
        data = json.dumps({"runs": args.runs, "cr_check_s": samples, "structural_ms": [p[0] for p in parse],
                           "model_files": n_files}, indent=2)
        if args.json_out == "-":
            print(data)
        else:
            Path(args.json_out).write_text(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
