"""Segmentation, landmarks and regression models through cr run, cr validate and
cr validate --parity on real backends (onnxruntime, torch), with tiny real models and
reproducible datasets (tests/helpers/tasks.py); metrics are checked against
scikit-learn's or a direct computation, never against cr's own."""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import make_repo
from helpers import tasks

pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

BACKENDS = ["onnxruntime", "torch"]


def _repo(tmp_path, run_cr, build, *args, **kw):
    repo = make_repo(tmp_path / "mine", "mine")
    made = build(repo, *args, **kw)
    done = run_cr("repo", "add", repo)
    assert done.returncode == 0, done.stderr
    return made


def _json(done) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _one_error(done, *words):
    """Exit 1 with exactly an Error line and a Hint line, naming each of words (after the
    progress lines of a run that got as far as running: docs/actions.md)."""
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    lines = lines[errors[0]:]
    assert len(lines) == 2 and lines[1].startswith("Hint: "), done.stderr
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in done.stderr


# -- segmentation -------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_segmentation_metrics_match_scikit_learn(tmp_path, run_cr, backend):
    made = _repo(tmp_path, run_cr, tasks.segmentation)
    v = _json(run_cr("validate", "model", "seg-threshold", "--backend", backend, "--json"))["validation"]
    truth, predicted = made["masks"].ravel(), made["predicted"].ravel()
    assert v["task"] == "segmentation" and v["samples"] == 16 and v["pixels"] == truth.size
    assert v["miou"] == pytest.approx(sklearn_metrics.jaccard_score(truth, predicted, average="macro"), abs=1e-12)
    assert v["pixel_accuracy"] == pytest.approx(sklearn_metrics.accuracy_score(truth, predicted), abs=1e-12)
    assert 0.5 < v["miou"] < 1.0  # the model's threshold and Otsu's differ: not a trivial 1.0
    assert "top1" not in v


def test_segmentation_expected_miou_is_checked(tmp_path, run_cr):
    _repo(tmp_path, run_cr, tasks.segmentation, expected={"miou": {"value": 0.99, "abs": 0.01}})
    done = run_cr("validate", "model", "seg-threshold", "--backend", "onnxruntime")
    _one_error(done, "accuracy outside tolerance: miou", "expected 0.9900")
    assert "miou" in done.stdout and "OUT OF TOLERANCE" in done.stdout


def test_segmentation_run_shows_the_class_histogram_and_saves_every_output(tmp_path, run_cr):
    made = _repo(tmp_path, run_cr, tasks.segmentation)
    out = tmp_path / "outputs"
    done = run_cr("run", "model", "seg-threshold", "--backend", "onnxruntime", "--limit", "3", "--save-outputs", out)
    assert done.returncode == 0, done.stderr
    assert "mask 16x16: " in done.stdout and "(bright)" in done.stdout
    index = json.loads((out / "index.json").read_text())
    assert index["outputs"] == ["logits"] and [s["id"] for s in index["samples"]] == ["0", "1", "2"]
    for i, sample in enumerate(index["samples"]):
        entry = sample["outputs"]["logits"]
        saved = np.load(out / entry["file"])
        assert entry["shape"] == [2, 16, 16] == list(saved.shape) and entry["dtype"] == "float32" == str(saved.dtype)
        x = made["x"][i, 0]
        np.testing.assert_allclose(saved, np.stack([tasks.THRESHOLD - x, x - tasks.THRESHOLD]), atol=1e-6)
    again = tmp_path / "again"
    record = _json(run_cr("run", "model", "seg-threshold", "--backend", "torch", "--limit", "2", "--json", "--save-outputs", again))
    assert record["saved_outputs"] == {"dir": str(again.resolve()), "index": "index.json", "samples": 2, "files": 2}
    assert sorted(f.name for f in again.iterdir()) == ["000000_logits.npy", "000001_logits.npy", "index.json"]
    for i, p in enumerate(record["predictions"]):
        assert "top" not in p
        shares = {c["class"]: c["share"] for c in p["mask"]["classes"]}
        assert shares.get(1, 0.0) == pytest.approx(made["predicted"][i].mean())
        assert sum(shares.values()) == pytest.approx(1.0)


def test_segmentation_meta_without_a_class_axis_is_refused(tmp_path, run_cr):
    repo = make_repo(tmp_path / "mine", "mine")
    tasks.segmentation(repo)
    meta_path = repo / "model/seg-threshold/1.0.0/meta.json"
    meta = json.loads(meta_path.read_text())
    meta["decode"] = {}
    meta["outputs"][0]["layout"] = "other"
    meta_path.write_text(json.dumps(meta))
    assert run_cr("repo", "add", repo).returncode == 0
    _one_error(run_cr("validate", "model", "seg-threshold", "--backend", "onnxruntime"), "decode.layout", "NCHW or NHWC")


# -- landmarks ----------------------------------------------------------------------------

def _nme(pred, truth, normalize):
    errors = np.linalg.norm(pred - truth, axis=-1).mean(axis=-1)
    if normalize is None:
        return errors.mean()
    if normalize["by"] == "points":
        i, j = normalize["indices"]
        return (errors / np.linalg.norm(truth[:, i] - truth[:, j], axis=-1)).mean()
    return (errors / np.linalg.norm(truth.max(1) - truth.min(1), axis=-1)).mean()


@pytest.mark.parametrize("normalize", [{"by": "points", "indices": [0, 1]}, {"by": "bbox_diagonal"}, None])
def test_landmarks_error_normalised_as_declared(tmp_path, run_cr, normalize):
    made = _repo(tmp_path, run_cr, tasks.landmarks, normalize)
    v = _json(run_cr("validate", "model", "blob-points", "--backend", "onnxruntime", "--json"))["validation"]
    metric = "mean_error" if normalize is None else "nme"
    assert v["task"] == "landmarks" and v["samples"] == 12
    assert v[metric] == pytest.approx(_nme(made["predicted"], made["points"], normalize), rel=1e-5)
    assert v["max_error"] == pytest.approx(np.linalg.norm(made["predicted"] - made["points"], axis=-1).max(), rel=1e-5)


def test_landmarks_run_prints_the_points(tmp_path, run_cr):
    made = _repo(tmp_path, run_cr, tasks.landmarks)
    record = _json(run_cr("run", "model", "blob-points", "--backend", "torch", "--limit", "2", "--json"))
    for i, p in enumerate(record["predictions"]):
        np.testing.assert_allclose(p["points"], made["predicted"][i], atol=1e-4)
    done = run_cr("run", "model", "blob-points", "--backend", "onnxruntime", "--limit", "1")
    x, y = made["predicted"][0][0]
    assert f"({x:.2f}, {y:.2f})" in done.stdout


# -- regression ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_regression_mae_rmse_match_scikit_learn(tmp_path, run_cr, backend):
    made = _repo(tmp_path, run_cr, tasks.regression)
    v = _json(run_cr("validate", "model", "diabetes-ols", "--backend", backend, "--json"))["validation"]
    assert v["task"] == "regression" and v["samples"] == 442
    assert v["mae"] == pytest.approx(sklearn_metrics.mean_absolute_error(made["y"], made["predicted"]), rel=1e-5)
    assert v["rmse"] == pytest.approx(np.sqrt(sklearn_metrics.mean_squared_error(made["y"], made["predicted"])), rel=1e-5)
    done = run_cr("run", "model", "diabetes-ols", "--backend", backend, "--limit", "2")
    assert f"{made['predicted'][1]:.4g}" in done.stdout


# -- parity -------------------------------------------------------------------------------

def test_parity_of_a_segmentation_model_compares_pixels(tmp_path, run_cr):
    _repo(tmp_path, run_cr, tasks.segmentation)
    p = _json(run_cr("validate", "model", "seg-threshold", "--parity", "onnxruntime,torch", "--json"))["parity"]
    pair = p["pairs"][0]
    assert p["outcome"] == "PASS" and pair["agreement"] == {"metric": "pixel_agreement", "value": 1.0}
    assert pair["top1_agreement"] is None and [o["name"] for o in pair["outputs"]] == ["logits"]
    assert pair["outputs"][0]["allclose"] and pair["outputs"][0]["max_rel_diff"] is not None
    assert p["inputs"]["provider"] == "dataset"


def test_parity_tolerances_follow_numpy_allclose(tmp_path, run_cr):
    _repo(tmp_path, run_cr, tasks.regression)
    exact = run_cr("validate", "model", "diabetes-ols", "--parity", "onnxruntime,torch", "--parity-atol", "0")
    _one_error(exact, "backends diverge", "output progression not within atol 0 rtol 0", "max error")
    p = _json(run_cr("validate", "model", "diabetes-ols", "--parity", "onnxruntime,torch", "--parity-atol", "0",
                     "--parity-rtol", "1e-5", "--json"))["parity"]
    pair = p["pairs"][0]
    # float32 rounding of values near 100-300: relative differences far below 1e-5, absolute ones not 0
    assert p["outcome"] == "PASS" and p["rtol"] == 1e-5 and 0 < pair["max_abs_diff"] and pair["max_rel_diff"] < 1e-5
    assert pair["agreement"]["metric"] == "max_error" and pair["agreement"]["value"] == pytest.approx(pair["max_abs_diff"])


def test_parity_without_a_dataset_uses_seeded_synthetic_inputs(tmp_path, run_cr):
    _repo(tmp_path, run_cr, tasks.segmentation, with_dataset=False)
    args = ("validate", "model", "seg-threshold", "--parity", "onnxruntime,torch", "--seed", "5", "--limit", "3")
    p = _json(run_cr(*args, "--json"))["parity"]
    assert p["outcome"] == "PASS" and p["inputs"] == {"provider": "synthetic", "seed": 5, "samples": 3}
    assert p["pairs"][0]["samples"] == 3
    done = run_cr(*args)
    assert done.returncode == 0 and "synthetic inputs, seed 5" in done.stdout


def test_synthetic_inputs_respect_the_declared_range():
    from cr.runtime.inputs import SyntheticInputs

    spec = {"name": "x", "shape": [None, 4, 4], "dtype": "float32", "range": [2, 3]}
    specs = [spec, {"name": "i", "shape": [None, 8], "dtype": "int32", "range": [-1, 1]}]
    batches = SyntheticInputs(specs, 2, seed=1, count=3).batches()
    floats = np.stack([b["x"] for b in batches])
    ints = np.stack([b["i"] for b in batches])
    assert floats.min() >= 2 and floats.max() <= 3 and set(np.unique(ints)) <= {-1, 0, 1}
    again = SyntheticInputs(specs, 2, seed=1, count=3).batches()
    assert all(np.array_equal(a["x"], b["x"]) for a, b in zip(batches, again))


# -- bad input ----------------------------------------------------------------------------

def test_save_outputs_into_a_file_is_refused(tmp_path, run_cr):
    _repo(tmp_path, run_cr, tasks.regression)
    target = tmp_path / "taken"
    target.write_text("keep me")
    _one_error(run_cr("run", "model", "diabetes-ols", "--backend", "onnxruntime", "--save-outputs", target),
               "--save-outputs", str(target), "is a file")
    assert target.read_text() == "keep me"


@pytest.mark.parametrize("option,value", [("--parity-atol", "-0.5"), ("--parity-rtol", "nan"), ("--parity-atol", "inf")])
def test_bad_tolerances_are_refused(run_cr, option, value):
    _one_error(run_cr("validate", "model", "lenet-digits", "--parity", "onnxruntime,torch", option, value), option, value)


def test_a_dataset_without_the_tasks_targets_is_refused(tmp_path, run_cr):
    _repo(tmp_path, run_cr, tasks.landmarks)
    _one_error(run_cr("validate", "model", "blob-points", "--backend", "onnxruntime", "--dataset", "dataset:digits"),
               "dataset:digits", "has no points", "declares no targets")


def test_parity_compares_every_output_by_name_whatever_the_order():
    from cr.runtime.actions.infer import compare

    ref = {"ids": ["a", "b"], "names": ["scores", "boxes"], "task": "classification",
           "raw": [[[0.1, 0.9], [1.0, 2.0]], [[0.8, 0.2], [3.0, 4.0]]]}
    # the other backend lists its outputs the other way round; its boxes of sample b are off by 0.5 (12.5%)
    other = {"ids": ["a", "b"], "names": ["boxes", "scores"], "task": "classification",
             "raw": [[[1.0, 2.0], [0.1, 0.9]], [[3.0, 4.5], [0.8, 0.2]]]}
    job = {"runs": {"onnxruntime": ref, "torch": other}, "params": {"parity_atol": 1e-4, "parity_rtol": 0.0}}
    pair = compare(job)["parity"]["pairs"][0]
    by = {o["name"]: o for o in pair["outputs"]}
    assert pair["matched_by"] == "name" and set(by) == {"scores", "boxes"}
    assert by["scores"]["allclose"] and by["scores"]["max_abs_diff"] == 0.0
    assert not by["boxes"]["allclose"] and by["boxes"]["max_abs_diff"] == 0.5 and by["boxes"]["worst_sample"] == "b"
    assert by["boxes"]["max_rel_diff"] == pytest.approx(0.125)
    assert pair["top1_agreement"] == 1.0 and not pair["ok"]
    job["params"]["parity_rtol"] = 0.2  # |4.5 - 4| <= 0 + 0.2 * 4: close under numpy.allclose
    assert compare(job)["parity"]["outcome"] == "PASS"
