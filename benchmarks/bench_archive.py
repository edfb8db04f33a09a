"""cr pack / cr unpack of a ~200 MB solution against `zip -r` / `unzip` of the same files.

    .venv/bin/python benchmarks/bench_archive.py                 # ~200 MB, 3 runs (a few minutes)
    .venv/bin/python benchmarks/bench_archive.py --size-mb 50 --runs 1   # quick look
    .venv/bin/python benchmarks/bench_archive.py --json figures.json

Generates, in a temporary directory, a repository with a model of seeded random files
(incompressible, like float weights), 4-bit "quantised" files (about half compressible)
and a sparse file (zero blocks between random ones), a small dataset and a solution; packs
the solution with cr.archive.pack and unpacks it with cr.archive.unpack (every file hashed
and compared: the meta's sha256 when packing, the manifest's when unpacking), and times
Info-ZIP's `zip -q -r -X` (same deflate level 6) and `unzip -q` on the same files. Where
the zip/unzip binaries are missing, the baseline is Python's zipfile writing and reading
the same files with no verification at all (and the report says so).

Throughput is payload MB (1e6 bytes) per second; the ratio is ours / baseline (target
>= 0.8 for both). Medians of --runs runs, ours and the baseline alternating.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

MB = 1_000_000
MiB = 1 << 20


def _random(rng: random.Random, n: int) -> bytes:
    return rng.randbytes(n)


_NIBBLES = bytes(i & 0x0F for i in range(256))


def _quantised(rng: random.Random, n: int) -> bytes:
    return rng.randbytes(n).translate(_NIBBLES)  # 4 bits of entropy per byte


def _sparse(rng: random.Random, n: int) -> bytes:
    block = 64 * 1024
    parts = [rng.randbytes(block) if (i // block) % 2 else bytes(block) for i in range(0, n, block)]
    return b"".join(parts)[:n]


def write_component(repo: Path, kind: str, name: str, files: dict[str, bytes], **fields) -> None:
    comp = repo / kind / name / "1.0.0"
    comp.mkdir(parents=True, exist_ok=True)
    sums = {}
    for rel, data in files.items():
        (comp / rel).parent.mkdir(parents=True, exist_ok=True)
        (comp / rel).write_bytes(data)
        sums[rel] = hashlib.sha256(data).hexdigest()
    meta = {"uid": hashlib.sha256(name.encode()).hexdigest()[:16], "kind": kind, "name": name, "version": "1.0.0",
            "tags": ["bench"], "description": "bench_archive.py", **fields, "files": sums}
    (comp / "meta.json").write_text(json.dumps(meta, indent=2) + "\n")


def generate(repo: Path, size_mb: int, seed: int) -> int:
    """The repository; returns the payload size in bytes."""
    rng = random.Random(seed)
    repo.mkdir(parents=True)
    (repo / "cr-repo.json").write_text(json.dumps({"name": "bench", "uid": "0123456789abcdef", "version": "1.0.0"}))
    total = size_mb * MB
    shares = {"random": 0.5, "quantised": 0.4, "sparse": 0.1}
    files: dict[str, bytes] = {}
    for kind, share in shares.items():
        size = int(total * share)
        count = max(1, size // (50 * MB))
        for i in range(count):
            make = {"random": _random, "quantised": _quantised, "sparse": _sparse}[kind]
            files[f"weights/{kind}-{i}.bin"] = make(rng, size // count)
    files["net.py"] = b"def build():\n    return None\n"
    write_component(repo, "model", "bench-model", files, format="onnx", file="weights/random-0.bin", task="classification")
    del files
    write_component(repo, "dataset", "bench-data", {"data.csv": b"".join(b"%d,%d\n" % (i, i % 10) for i in range(10_000))}, format="csv")
    write_component(repo, "solution", "bench-sol", {}, model="model:bench-model@1.0.0", dataset="dataset:bench-data@1.0.0")
    return sum(p.stat().st_size for p in repo.rglob("*") if p.is_file())


def _time(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _python_zip(src: Path, out: Path) -> None:
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for path in sorted(src.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(src).as_posix())


def _python_unzip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(dest)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=200, help="payload size (default 200 MB)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON ('-': stdout)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="cr-bench-archive-"))
    os.environ["CR_HOME"] = str(work / "home")
    have_zip = bool(shutil.which("zip") and shutil.which("unzip"))
    try:
        from cr import api
        from cr.archive import pack, unpack
        from cr.store import registry

        repo = work / "repo"
        payload = generate(repo, args.size_mb, args.seed)
        api.repo_add(repo)
        for path in repo.rglob("*"):  # warm the page cache for both sides alike
            if path.is_file():
                path.read_bytes()
        samples: dict[str, list[float]] = {"pack": [], "zip": [], "unpack": [], "unzip": []}
        ours = work / "bench-sol-1.0.0.cr.zip"
        base = work / "baseline.zip"
        for run in range(args.runs):
            for target in (ours, base):
                target.unlink(missing_ok=True)
            pack_first = run % 2 == 0
            steps = [
                ("pack", lambda: pack("solution:bench-sol", output=ours)),
                ("zip", (lambda: subprocess.run(["zip", "-q", "-r", "-X", "-6", str(base), "."], cwd=repo, check=True))
                 if have_zip else (lambda: _python_zip(repo, base))),
            ]
            for name, fn in (steps if pack_first else steps[::-1]):
                samples[name].append(_time(fn))
            out_ours, out_base = work / f"unpacked-{run}", work / f"unzipped-{run}"
            steps = [
                ("unpack", lambda: unpack(ours, target_repo_dir=out_ours)),
                ("unzip", (lambda: subprocess.run(["unzip", "-q", str(base), "-d", str(out_base)], check=True))
                 if have_zip else (lambda: _python_unzip(base, out_base))),
            ]
            for name, fn in (steps if pack_first else steps[::-1]):
                samples[name].append(_time(fn))
            registry.unregister("bench-sol-1.0.0")
            shutil.rmtree(out_ours)
            shutil.rmtree(out_base)
            print(f"run {run + 1}/{args.runs}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in samples.items()), file=sys.stderr)

        med = {k: statistics.median(v) for k, v in samples.items()}
        rate = {k: payload / MB / v for k, v in med.items()}
        baseline = "Info-ZIP zip -r -X -6 / unzip" if have_zip else "Python zipfile, no verification (zip/unzip not installed)"
        figures = {
            "payload_bytes": payload, "runs": args.runs, "baseline": baseline,
            "archive_bytes": ours.stat().st_size, "baseline_archive_bytes": base.stat().st_size,
            "median_s": med, "mb_per_s": rate,
            "ratio": {"pack": rate["pack"] / rate["zip"], "unpack": rate["unpack"] / rate["unzip"]},
            "samples_s": samples,
        }
        print(f"payload {payload / MB:.0f} MB; archive {figures['archive_bytes'] / MB:.1f} MB "
              f"(baseline {figures['baseline_archive_bytes'] / MB:.1f} MB); baseline: {baseline}; median of {args.runs}")
        print(f"{'':8}{'cr':>14}{'baseline':>14}{'ratio':>8}   (target ratio >= 0.8)")
        for ours_key, base_key in (("pack", "zip"), ("unpack", "unzip")):
            print(f"{ours_key:8}{rate[ours_key]:>9.1f} MB/s{rate[base_key]:>9.1f} MB/s{rate[ours_key] / rate[base_key]:>7.2f}x")
        if args.json:
            text = json.dumps(figures, indent=2)
            if args.json == "-":
                print(text)
            else:
                Path(args.json).write_text(text + "\n")
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
