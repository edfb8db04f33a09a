"""`cr results pareto`: one point per configuration (a benchmark joined with its stack's validate),
values with 95% intervals, front / tied / dominated by cr.results.pareto's rule, and one clear
line for bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import HEAVY, IMPORT_PROBE
from helpers.results import latencies, make_record, uid_of

QUICK = ["--min-duration", "0.2", "--min-queries", "100", "--warmup", "10"]


@pytest.fixture
def store(cr_home):
    from cr.results.store import default_store

    with default_store() as s:
        yield s


def _bench(store, n, *, backend="onnxruntime", variant="onnx", base_ns=100_000.0, threads=1, study=None, seed=None):
    r = make_record(uid_of(n), backend=backend, variant=variant, started=f"2026-03-01T10:{n:02d}:00.000Z",
                    values=latencies(seed if seed is not None else n, n=400, base_ns=base_ns))
    r["config"]["threads"] = threads
    if study:
        r["study"] = {"name": study, "trial": n}
    store.add(r)
    return r


def _validate(store, n, top1, *, backend="onnxruntime", variant="onnx", study=None):
    r = make_record(uid_of(n), action="validate", backend=backend, variant=variant, top1=top1,
                    started=f"2026-03-01T09:{n:02d}:00.000Z")
    if study:
        r["study"] = {"name": study, "trial": n}
    store.add(r)
    return r


def _pareto(run_cr, *args):
    done = run_cr("results", "pareto", *args, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    return report, {p["label"]: p for p in report["points"]}


@pytest.fixture
def stacks(store):
    """Four configurations: fast+accurate, slow (same accuracy), a noise twin of the first, fast but inaccurate."""
    _bench(store, 1, base_ns=100_000.0, seed=1)
    _validate(store, 11, 0.98)
    _bench(store, 2, base_ns=200_000.0, threads=2)  # same stack as 1: same accuracy, twice as slow
    _bench(store, 3, backend="torch", variant="torchscript", base_ns=100_000.0, seed=1)  # the same latencies as 1
    _validate(store, 13, 0.9806, backend="torch", variant="torchscript")
    _bench(store, 4, backend="tflite", variant="tflite-int8", base_ns=50_000.0)
    _validate(store, 14, 0.80, backend="tflite", variant="tflite-int8")


def test_front_ties_and_domination_with_the_join(run_cr, stacks):
    report, by = _pareto(run_cr, "--objective", "p50", "--objective", "top1")
    assert set(by) == {"onnxruntime/onnx (fp32) threads=1 batch=1", "onnxruntime/onnx (fp32) threads=2 batch=1",
                       "torch/torchscript (fp32) threads=1 batch=1", "tflite/tflite-int8 (fp32) threads=1 batch=1"}
    fast, slow = by["onnxruntime/onnx (fp32) threads=1 batch=1"], by["onnxruntime/onnx (fp32) threads=2 batch=1"]
    twin, small = by["torch/torchscript (fp32) threads=1 batch=1"], by["tflite/tflite-int8 (fp32) threads=1 batch=1"]
    # the join: both onnxruntime benchmarks take the accuracy of the one onnxruntime validate
    assert fast["records"] == {"benchmark": uid_of(1), "validate": uid_of(11)}
    assert slow["records"]["validate"] == uid_of(11) and slow["values"]["top1"] == fast["values"]["top1"]
    assert small["status"] == "front" and slow["status"] == "dominated" and slow["dominated_by"] in (fast["id"], twin["id"])
    # identical latencies and accuracies 0.98 vs 0.9806 of 360: within noise, so one is tied with the other
    assert {fast["status"], twin["status"]} == {"front", "tied"}
    tied = fast if fast["status"] == "tied" else twin
    assert tied["tied_with"] == [(twin if tied is fast else fast)["id"]]
    for p in report["points"]:
        p50, top1 = p["values"]["p50"], p["values"]["top1"]
        assert p50["lo"] <= p50["value"] <= p50["hi"] and p50["lo"] < p50["hi"]
        assert top1["lo"] < top1["value"] < top1["hi"]  # Wilson over 360 samples
    assert "intervals do not overlap" in report["rule"] and "newest validate" in report["join"]
    assert sorted(report["front"]) == sorted(p["id"] for p in report["points"] if p["status"] in ("front", "tied"))

    text = run_cr("results", "pareto", "--objective", "p50", "--objective", "top1")
    assert text.returncode == 0, text.stderr
    line = next(x for x in text.stdout.splitlines() if "threads=2" in x)
    assert line.startswith("dominated") and "dominated by" in line and " ms [" in line and " us" not in line  # ms, as every table
    assert "rule: a point beats another" in text.stdout and "join: a benchmark configuration" in text.stdout


def test_filters_and_accuracy_only_points(run_cr, store, stacks):
    _bench(store, 30, backend="onnxruntime", base_ns=80_000.0, study="pick")
    _validate(store, 31, 0.97, study="pick")
    report, by = _pareto(run_cr, "--objective", "p50", "--study", "pick")
    assert list(by) == ["onnxruntime/onnx (fp32) threads=1 batch=1"] and report["points"][0]["status"] == "front"
    assert report["join"] is None  # no accuracy objective: nothing joined
    report, by = _pareto(run_cr, "--objective", "top1", "--backend", "tflite")
    assert [p["records"] for p in report["points"]] == [{"benchmark": None, "validate": uid_of(14)}]
    _, by = _pareto(run_cr, "--objective", "throughput", "--objective", "top5")
    assert all(p["values"]["throughput"]["lo"] < p["values"]["throughput"]["value"] for p in by.values())


def test_a_benchmark_without_validate_is_unmeasured_with_the_reason(run_cr, store):
    _bench(store, 1)
    _bench(store, 2, backend="torch", variant="torchscript")
    _validate(store, 12, 0.98, backend="torch", variant="torchscript")
    _, by = _pareto(run_cr, "--objective", "p50", "--objective", "top1")
    lonely = by["onnxruntime/onnx (fp32) threads=1 batch=1"]
    assert lonely["status"] == "unmeasured" and "no validate record" in lonely["missing"]["top1"]
    assert by["torch/torchscript (fp32) threads=1 batch=1"]["status"] == "front"


@pytest.mark.parametrize("args,message", [
    (["--objective", "speed"], "Error: objective 'speed': unknown"),
    (["--objective", "energy"], "Error: no matching result measures energy per sample (energy): "),
    (["--objective", "p50", "--objective", "p50"], "Error: objective p50 given twice"),
    (["--objective", "p50", "--model", "resnet50"], "Error: no successful benchmark result matches (filters: model=resnet50"),
    (["--objective", "top1", "--study", "none"], "Error: no successful validate result matches"),
    (["--objective", "map"], "Error: no matching result measures COCO mAP (map): this validation gives no COCO mAP"),
])
def test_bad_input_is_one_clear_line(run_cr, store, args, message):
    _bench(store, 1)
    _validate(store, 11, 0.98)
    done = run_cr("results", "pareto", *args)
    assert done.returncode == 1 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0].startswith(message) and lines[1].startswith("Hint: ") and len(lines) == 2, done.stderr
    if "energy" in args:
        assert "needs a meter" in lines[1]
    assert len(json.loads(run_cr("results", "list", "--json").stdout)) == 2  # nothing lost


def test_pareto_imports_no_framework(store, tmp_path, cr_home):
    _bench(store, 1)
    _validate(store, 11, 0.98)
    decoys = tmp_path / "decoys"
    for name in HEAVY:
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text("")
    out = tmp_path / "modules.json"
    argv = ["results", "pareto", "--objective", "p50", "--objective", "top1"]
    done = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(out), json.dumps(argv)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "CR_HOME": str(cr_home), "PYTHONPATH": str(decoys)})
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0
    top = {m.split(".")[0] for m in result["modules"]}
    assert "cr" in top and not top & set(HEAVY), sorted(top & set(HEAVY))


def test_real_lenet_benchmarks_join_their_validation(run_cr, tmp_path):
    for batch in ("1", "8"):
        done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--threads", "1", "--batch-size", batch,
                      *QUICK)
        assert done.returncode == 0, done.stderr
    out = tmp_path / "v.json"
    assert run_cr("validate", "model", "lenet-digits", "--backend", "onnxruntime", "-o", out).returncode == 0
    validate = json.loads(out.read_text())
    report, by = _pareto(run_cr, "--model", "lenet-digits", "--objective", "p50", "--objective", "throughput",
                         "--objective", "top1")
    assert set(by) == {"onnxruntime/onnx (fp32) threads=1 batch=1", "onnxruntime/onnx (fp32) threads=1 batch=8"}
    for p in by.values():
        assert p["records"]["validate"] == validate["uid"]
        assert p["values"]["top1"]["value"] == validate["validation"]["top1"]
        assert p["config"]["pipeline"] == validate["pipeline"]["sha256"] and p["config"]["split"] == "test"
    one, eight = by["onnxruntime/onnx (fp32) threads=1 batch=1"], by["onnxruntime/onnx (fp32) threads=1 batch=8"]
    assert one["values"]["p50"]["value"] < eight["values"]["p50"]["value"]  # a batch of 8 takes longer a query
    # whichever way throughput fell on this machine, the verdict follows the intervals shown
    for p, other in ((one, eight), (eight, one)):
        assert p["status"] in ("front", "tied", "dominated")
        if p["status"] == "dominated":
            assert p["dominated_by"] == other["id"] and other["status"] == "front"
            better = [other["values"]["p50"]["hi"] < p["values"]["p50"]["lo"],
                      other["values"]["throughput"]["lo"] > p["values"]["throughput"]["hi"]]
            worse = [other["values"]["p50"]["lo"] > p["values"]["p50"]["hi"],
                     other["values"]["throughput"]["hi"] < p["values"]["throughput"]["lo"]]
            assert any(better) and not any(worse)
