"""Solutions end to end through the real CLI: create, init, benchmark, pack, unpack, reproduce."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import make_component, make_repo

from cr.results.latencies import inline_raw, read_side

QUICK = {"min_duration_s": 0.2, "min_queries": 100, "warmup_queries": 10, "batch_size": 1, "threads": 1, "seed": 0}


def _quick_solution(tmp_path: Path, run_cr, name: str = "quick", **changes) -> Path:
    """solution:NAME in a registered repo: lenet-digits (ONNX) on onnxruntime, short runs."""
    repo = make_repo(tmp_path / "sols", "sols")
    fields = dict(
        model="model:lenet-digits@1.0.0", dataset="dataset:digits@1.0.0", backend="onnxruntime",
        backend_options={"intra_op_threads": 1}, license="Apache-2.0",
        deps=["software:python@>=3.9", "software:numpy@>=1.23", "software:onnxruntime@>=1.17"],
        actions=[{"action": "benchmark", "params": {"scenario": "single-stream", **QUICK}},
                 {"action": "validate", "params": {}}],
    )
    fields.update(changes)
    path = make_component(repo, "solution", name, **fields)
    assert run_cr("repo", "add", repo).returncode == 0
    return path


def test_init_benchmark_pack_unpack_reproduce_pass_then_fail_on_a_changed_step(run_cr, tmp_path):
    _quick_solution(tmp_path, run_cr)
    done = run_cr("init", "solution", "quick")
    assert done.returncode == 0, done.stderr
    assert "solution:quick@1.0.0 is ready" in done.stdout and "onnxruntime" in done.stdout
    again = run_cr("init", "solution", "quick", "--json")
    assert json.loads(again.stdout)["installed"] == []  # a second init changes nothing
    done = run_cr("benchmark", "solution", "quick")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(l.startswith("benchmark") and "VALID" in l for l in lines) and any(l.startswith("validate") and "PASS" in l for l in lines)
    listed = json.loads(run_cr("results", "list", "--solution", "quick", "--json").stdout)
    assert sorted(r["action"] for r in listed) == ["benchmark", "validate"]
    done = run_cr("pack", "solution", "quick", "-o", tmp_path / "out", "--json")
    assert done.returncode == 0, done.stderr
    packed = json.loads(done.stdout)
    assert len(packed["results"]) == 2 and packed["lock"]
    archive = packed["archive"]

    # another machine: a fresh CR_HOME that has never seen the solution
    other = {"CR_HOME": str(tmp_path / "other-home")}
    done = run_cr("reproduce", archive, env=other, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "outcome: PASS" in done.stdout and "top1" in done.stdout and "reference machine:" in done.stdout
    assert "shadows" not in done.stderr  # the archive's identical copies of shipped components are no news
    report = json.loads(run_cr("reproduce", archive, "--json", env=other, timeout=300).stdout)
    assert report["outcome"] == "PASS" and {c["metric"] for c in report["checks"]} == {"top1", "top5"}
    assert report["performance"][0]["p50_ns"]["reference"] and report["performance"][0]["p50_ns"]["here"]
    # verdicts against the reference, from its raw samples (the archive carries them beside its record)
    sig = report["performance"][0]["significance"]
    assert sig["missing"] is None and [m["metric"] for m in sig["metrics"]] == ["p50_ns", "p90_ns", "p99_ns", "mean_ns", "throughput_qps"]
    assert "intervals: 95% of the ratio here / reference" in done.stdout and "95% interval" in done.stdout
    # one line for the benchmark, carrying the validate's accuracy (same stack); performance not judged
    (line,) = report["lines"]
    assert line["verdict"] == "PASS" and line["accuracy_from"] and [c["metric"] for c in line["accuracy"]] == ["top1", "top5"]
    assert line["rule"].startswith("the run here succeeded; accuracy within its tolerance (top1, top5); performance not judged")
    assert line["performance"][0]["ci"] == sig["metrics"][0]["ci"]  # the one statistic

    # a declared tolerance (p50 at most 1.5 x the reference's), judged on the interval of here / reference
    target = Path(report["init"]["archive"]["target"])
    solution_meta = next(target.glob("solution/quick/*/meta.json"))
    meta = json.loads(solution_meta.read_text())
    meta["expected"] = {"p50_ns": {"rel": 0.5}}
    solution_meta.write_text(json.dumps(meta, indent=2))
    bench = next(p for p in (target / "results").glob("*.json") if json.loads(p.read_text())["action"] == "benchmark")
    original = json.loads(bench.read_text())
    side = read_side(bench.parent / original["raw"]["latencies_ns_file"], original["raw"], "reference")

    def reference_scaled(factor: float) -> None:
        record = json.loads(json.dumps(original))
        record["raw"] = inline_raw([int(factor * x) for x in side])
        record["metrics"]["latency_ns"] = {k: v * factor for k, v in record["metrics"]["latency_ns"].items()
                                           if isinstance(v, (int, float))}
        bench.write_text(json.dumps(record, indent=2))

    reference_scaled(3.0)  # the reference 3x slower: the whole interval is far within the limit
    done = run_cr("reproduce", archive, env=other, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^PASS +benchmark single-stream threads=1 batch=1 ", done.stdout, re.M)
    assert "the whole interval lies within the limit, ratio at most 1.500 (declared rel 0.5)" in done.stdout
    reference_scaled(1 / 5)  # the reference 5x faster: the whole interval beyond the limit, whatever the load
    done = run_cr("reproduce", archive, env=other, timeout=300)
    assert done.returncode == 1 and "outcome: FAIL" in done.stdout, done.stdout + done.stderr
    assert re.search(r"^FAIL +benchmark single-stream threads=1 batch=1 ", done.stdout, re.M)
    assert "the whole interval lies beyond the limit" in done.stderr
    # after the progress of the runs it made (docs/actions.md), one Error: line
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and errors[0].startswith("Error: reproduction of solution:quick@1.0.0: FAIL (1 of 1 configurations)")
    # figures in the table's units, never raw nanosecond floats
    assert re.search(r"p50 latency +here [\d.]+ (us|ms), reference [\d.]+ (us|ms) +ratio", done.stdout), done.stdout
    assert "e+0" not in done.stdout + done.stderr
    bench.write_text(json.dumps(original, indent=2))
    del meta["expected"]
    solution_meta.write_text(json.dumps(meta, indent=2))

    # the reproducer's copy of the model gets a different pre-processing step: FAIL, naming it
    unpacked = Path(report["init"]["archive"]["target"]) / "model/lenet-digits/1.0.0/meta.json"
    meta = json.loads(unpacked.read_text())
    meta["preprocess"][0]["factor"] = 1 / 255
    unpacked.write_text(json.dumps(meta, indent=2))
    done = run_cr("reproduce", archive, env=other, timeout=300)
    assert done.returncode == 1
    assert "outcome: FAIL" in done.stdout
    assert "likely cause: preprocess step 0 (scale) differs: reference" in done.stderr


def test_create_a_solution_with_init(run_cr):
    done = run_cr("init", "solution", "my-digits", "--model", "model:lenet-digits@1.0.0", "--backend", "tflite",
                  "--variant", "tflite-int8", "--json")
    assert done.returncode == 0, done.stderr
    meta = json.loads(done.stdout)["meta"]
    assert meta["model"] == "model:lenet-digits@1.0.0" and meta["dataset"] == "dataset:digits@1.0.0"
    assert meta["backend"] == "tflite" and meta["pipeline"] == {"variant": "tflite-int8"}
    assert "software:ai-edge-litert" in meta["deps"] and [a["action"] for a in meta["actions"]] == ["benchmark", "validate"]
    shown = run_cr("show", "solution:my-digits", "--json")
    assert json.loads(shown.stdout)["repo"] == "local"
    bad = run_cr("init", "solution", "other", "--model", "model:lenet-digits@1.0.0", "--backend", "tensorflw")
    assert bad.returncode == 1 and "unknown backend 'tensorflw'" in bad.stderr


def test_missing_component_is_named_with_the_repos_searched(run_cr, tmp_path):
    _quick_solution(tmp_path, run_cr, model="model:no-such-net@1.0.0")
    done = run_cr("init", "solution", "quick")
    assert done.returncode == 1
    first = done.stderr.splitlines()[0]
    assert first.startswith("Error: ") and "model:no-such-net" in first
    assert "searched repositories:" in done.stderr and "sols" in done.stderr
    assert "Traceback" not in done.stderr


def test_platform_constraints_are_checked(run_cr, tmp_path):
    _quick_solution(tmp_path, run_cr, platform={"requires": ["nvidia-gpu"]})
    done = run_cr("init", "solution", "quick")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: solution:quick@1.0.0 needs nvidia-gpu, which this machine does not have")


def test_tolerance_violation_fails_validate_solution(run_cr, tmp_path):
    _quick_solution(tmp_path, run_cr, expected={"top1": {"value": 0.5, "abs": 0.01}})
    assert run_cr("init", "solution", "quick").returncode == 0
    done = run_cr("validate", "solution", "quick")
    assert done.returncode == 1
    assert "accuracy outside tolerance: top1 0.9806, expected 0.5000 +- 0.0100" in done.stderr
    listed = json.loads(run_cr("results", "list", "--solution", "quick", "--json").stdout)
    assert [r["action"] for r in listed] == ["validate"]  # the failed check is a stored result too


def test_init_from_a_git_url(run_cr, tmp_path):
    src = tmp_path / "gitsrc"
    _quick_solution(tmp_path, run_cr, name="from-git")  # registered too; the git copy is a second repo
    shutil.copytree(tmp_path / "sols", src)
    (src / "cr-repo.json").write_text(json.dumps({"name": "gitsols", "uid": "0123456789abcdef", "version": "1.0.0"}))
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "solution"]):
        subprocess.run(["git", *cmd], cwd=src, check=True, capture_output=True)
    run_cr("repo", "rm", "sols")
    done = run_cr("init", "solution", f"file://{src}")
    assert done.returncode == 0, done.stderr
    assert "solution:from-git@1.0.0 is ready" in done.stdout


def test_kill_9_in_the_middle_of_a_benchmark_leaves_the_store_consistent(run_cr, cr_home, tmp_path):
    _quick_solution(tmp_path, run_cr, actions=[{"action": "benchmark", "params": {**QUICK, "min_duration_s": 30}}])
    assert run_cr("init", "solution", "quick").returncode == 0
    env = {**os.environ, "CR_HOME": str(cr_home)}
    proc = subprocess.Popen([sys.executable, "-m", "cr", "benchmark", "solution", "quick"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(4)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    listed = run_cr("results", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    done = run_cr("benchmark", "solution", "quick", "--min-duration", "0.2")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(run_cr("results", "list", "--json").stdout)) == 1


def test_eight_concurrent_benchmarks_lose_no_result(cr_home):
    env = {**os.environ, "CR_HOME": str(cr_home)}
    cmd = [sys.executable, "-m", "cr", "benchmark", "model", "lenet-digits", "--backend", "null", "--inputs", "synthetic",
           "--min-duration", "0.1", "--min-queries", "50", "--warmup", "5"]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(8)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    listed = subprocess.run([sys.executable, "-m", "cr", "results", "list", "--json"], env=env, capture_output=True, text=True)
    rows = json.loads(listed.stdout)
    assert len(rows) == 8 and len({r["uid"] for r in rows}) == 8
