"""A pipeline-sensitivity study: what one pre-processing variant costs, as a ratio against one
`cr validate` of the same solution measured in the same run.

    python benchmarks/bench_study.py [--rounds 3] [--model efficientnet-lite0|lenet-digits] [--json FILE]

The study is a campaign over the model's torch solution that validates five pipelines, one
step changed at a time, with no hand-copied pipeline (docs/studies.md):

  efficientnet-lite0  resize bilinear (the baseline) / nearest / bicubic, colour order BGR
                      (pipeline.decode.mode), ImageNet mean and std instead of 127 / 128
  lenet-digits        scale factor 1/16 (the baseline) / 1/32 / 1/255 / 1 / 0

From a warm cache (both commands run once first, untimed: the lock resolved, the weights
read once), each round runs `cr validate solution S` and `cr campaign run STUDY --rerun` as a
user would (a subprocess each), in alternating order. Reported: the median over rounds of
each wall time, the time per variant (the campaign's wall / its jobs), and per variant /
one validate (what a study adds over validating by hand: expansion, the per-job target and
the paired tests of the summary; the jobs share one process, so it can be below 1). Also the
study's own figures: each variant's top-1 and its verdict against the baseline. Everything
lives in a temporary CR_HOME.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STUDIES = {
    "efficientnet-lite0": ("solution:efficientnet-lite0-torch", {
        "matrix": {"pipeline.resize.interpolation": ["bilinear", "nearest", "bicubic"]},
        "include": [{"pipeline.resize.interpolation": "bilinear", "pipeline.decode.mode": "BGR"},
                    {"pipeline.resize.interpolation": "bilinear", "pipeline.normalize.mean": [123.675, 116.28, 103.53],
                     "pipeline.normalize.std": [58.395, 57.12, 57.375]}]}),
    "lenet-digits": ("solution:lenet-digits-torch", {
        "matrix": {"pipeline.scale.factor": [0.0625, 0.03125, 0.00392156862745098, 1.0, 0.0]}}),
}


def _cr(*args: str, check: bool = True) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "cr", *args], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if check and done.returncode not in (0, 1):  # 1: a variant's validation failed its expectations (a finding, not an error)
        raise SystemExit(f"cr {' '.join(args)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return seconds, done


def setup(base: Path, model: str) -> tuple[str, str]:
    os.environ["CR_HOME"] = str(base / "home")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    solution, fields = STUDIES[model]
    repo = base / "repo"
    meta = repo / "campaign" / "study" / "1.0.0" / "meta.json"
    meta.parent.mkdir(parents=True)
    (repo / "cr-repo.json").write_text(json.dumps({"name": "bench", "uid": secrets.token_hex(8), "version": "1.0.0"}))
    meta.write_text(json.dumps({"uid": secrets.token_hex(8), "kind": "campaign", "name": "study", "version": "1.0.0",
                                "tags": [], "solutions": [solution], "actions": ["validate"], **fields}))
    _cr("repo", "add", str(repo))
    _cr("init", "solution", solution)
    return solution, "study"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--model", choices=sorted(STUDIES), default="efficientnet-lite0")
    ap.add_argument("--json", dest="json_out")
    ap.add_argument("--tiny", action="store_true",
                    help="no untimed warm-up runs: checks that the script runs (tests/test_benchmarks.py), no figure")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="cr-bench-study-") as tmp:
        solution, study = setup(Path(tmp), args.model)
        if not args.tiny:
            _cr("validate", "solution", solution)
            _cr("campaign", "run", study)
        validate, campaign = [], []
        for i in range(args.rounds):
            order = ("v", "c") if i % 2 == 0 else ("c", "v")
            for which in order:
                if which == "v":
                    validate.append(_cr("validate", "solution", solution)[0])
                else:
                    campaign.append(_cr("campaign", "run", study, "--rerun")[0])
        _, done = _cr("campaign", "run", study, "--json", check=False)
        rows = json.loads(done.stdout)
    jobs = len(rows)
    v, c = statistics.median(validate), statistics.median(campaign)
    report = {"model": args.model, "rounds": args.rounds, "jobs": jobs, "validate_s": round(v, 3), "study_s": round(c, 3),
              "per_variant_s": round(c / jobs, 3), "per_variant_vs_validate": round(c / jobs / v, 3),
              "variants": [{"setting": r.get("varied"), "top1": r.get("top1"), "validation": r.get("validation"),
                            "significance": {k: (r.get("significance") or {}).get(k) for k in ("verdict", "delta", "mcnemar_p")}}
                           for r in rows]}
    print(f"pipeline study of {args.model}: {jobs} variants, median of {args.rounds} rounds")
    print(f"  one cr validate           {v:7.2f} s")
    print(f"  the study (cr campaign)   {c:7.2f} s  = {c / jobs:.2f} s per variant")
    print(f"  per variant / validate    {c / jobs / v:7.2f}x")
    for r in report["variants"]:
        s = r["significance"]
        shown = " ".join(f"{k}={json.dumps(val)}" for k, val in (r["setting"] or {}).items())
        verdict = s["verdict"] if s["delta"] is None else f"{s['delta']:+.4f} {s['verdict']} (p {s['mcnemar_p']:.3g})"
        top1 = "-" if r["top1"] is None else f"{r['top1']:.4f}"
        print(f"  {shown:<60} top1 {top1:<7} {verdict}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
