"""What checking a pinned payload costs when a model loads (cr.runtime.pins).

Times, in-process and in a temporary CR_HOME, finding a package-sourced model's file in
its installed package (locate without the check: the baseline, what loading cost before
pins), the first verify (the sha256 computed and cached), a cached verify (size, mtime,
inode and device match: no read), and cr check's audit (always re-hashed). Each row is
the median of --runs, and its ratio to the baseline measured in the same run.

    .venv/bin/python benchmarks/bench_payloads.py                  # model:efficientnet-lite0 (about 20 MB)
    .venv/bin/python benchmarks/bench_payloads.py --model model:face-detection --runs 21
    .venv/bin/python benchmarks/bench_payloads.py --json -         # also the raw samples
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def _median_ms(fn, runs: int) -> tuple[float, list[float]]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples), samples


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="model:efficientnet-lite0")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--json", dest="json_out", help="also write the raw samples here ('-': stdout)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-payloads-") as home:
        os.environ["CR_HOME"] = home
        from cr import api
        from cr.runtime import pins
        from cr.runtime.model import locate, pin_status

        info = api.show(args.model, verify=False)
        meta, where, ref = info["meta"], str(info["path"]), info["ref"]
        if pins.pin_of(meta) is None:
            print(f"{ref} does not come from a registry package: nothing to pin", file=sys.stderr)
            return 2
        located = locate(meta, where, ref, verify=False)  # the package must be installed here
        size = Path(located["path"]).stat().st_size
        cache = Path(home) / "cache" / pins.CACHE_NAME

        def first():
            cache.unlink(missing_ok=True)
            locate(meta, where, ref)

        rows = {
            "locate, no verify (baseline)": _median_ms(lambda: locate(meta, where, ref, verify=False), args.runs),
            "first verify (hash + cache write)": _median_ms(first, args.runs),
            "cached verify": _median_ms(lambda: locate(meta, where, ref), args.runs),
            "cr check's audit (re-hash, no cache)": _median_ms(
                lambda: pin_status(meta, where, ref, cached=False), args.runs),
        }
    base = rows["locate, no verify (baseline)"][0]
    print(f"{ref}: {located['path']} ({size / 1e6:.1f} MB, package {located['package']} {located['package_version']}), "
          f"median of {args.runs} runs")
    print(f"{'':40} {'ms':>9} {'x baseline':>11}")
    for name, (median, _) in rows.items():
        print(f"{name:40} {median:9.3f} {median / base:10.1f}x")
    if args.json_out:
        data = {"model": ref, "bytes": size, "runs": args.runs,
                "rows": {name: {"median_ms": m, "samples_ms": s} for name, (m, s) in rows.items()}}
        text = json.dumps(data, indent=2)
        if args.json_out == "-":
            print(text)
        else:
            Path(args.json_out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
