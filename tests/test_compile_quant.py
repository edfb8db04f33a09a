"""int8 compiles say what quantisation did: `cr compile ... --precision int8` on real models.

- the report: the int8 file's size against its fp32 reference (the bytes on disk), a quick
  latency ratio on the same backend, both in --json, the table and the output's provenance;
- a Warning: line when int8 is larger (a tiny user net: quantisation nodes outweigh the
  bytes saved) and when a pre-pass was skipped (sympy hidden from the child);
- calibration honesty: --calibration SPLIT|DATASET_REF, the overlap with what cr validate
  judges counted by content (a dataset without splits overlaps fully; a copy of the
  evaluation data under another name is caught), bad values give Error + Hint, exit 1.

Real onnxruntime on lenet-digits and on onnx.helper-built nets; real TFLite on a small
Keras net.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from conftest import make_component, make_repo

np = pytest.importorskip("numpy")

IO = {
    "inputs": [{"name": "x", "shape": [None, 4], "dtype": "float32", "layout": "NC"}],
    "outputs": [{"name": "logits", "shape": [None, 2], "dtype": "float32", "layout": "NC"}],
    "preprocess": [{"op": "cast", "dtype": "float32"}],
    "dataset": {"ref": "dataset:pairs@1.0.0"},
    "task": "classification",
}
SIGNS = np.array([1.0, 1.0, -1.0, -1.0], np.float32)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _pairs(seed: int, n: int = 100):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    x = (np.where(y[:, None] == 0, 1.5, -1.5) * SIGNS + rng.normal(0, 0.3, (n, 4))).astype(np.float32)
    return x, y


def _dataset(repo: Path, name: str, x, y, splits: bool = False) -> None:
    folder = repo / "dataset" / name / "1.0.0"
    folder.mkdir(parents=True)
    np.savez(folder / "d.npz", x=x, y=y)
    extra = {"split_by": {"modulo": 5, "test_remainder": 0}} if splits else {}
    make_component(repo, "dataset", name, format="npz", source={"file": "d.npz"}, samples=len(y),
                   sample={"shape": [4], "dtype": "float32"}, labels=["plus", "minus"], files={"d.npz": _sha(folder / "d.npz")},
                   **extra)


def _tiny_net(path: Path) -> None:
    """x [N, 4] -> x @ W [4, 2] + b: 40 bytes of weights, fewer than quantisation's own nodes add."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = np.stack([SIGNS, -SIGNS], axis=1).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["z"]), helper.make_node("Add", ["z", "b"], ["logits"])], "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.zeros(2, np.float32), "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


@pytest.fixture
def tiny_repo(tmp_path):
    """Repo 'mine': model:tiny (onnx) naming dataset:pairs (no splits), dataset:pairs-copy (the
    same samples under another name) and dataset:pairs-fresh (other samples of the same kind)."""
    from cr import api

    repo = make_repo(tmp_path / "mine", "mine")
    x, y = _pairs(11)
    _dataset(repo, "pairs", x, y)
    _dataset(repo, "pairs-copy", x, y)
    _dataset(repo, "pairs-fresh", *_pairs(12))
    folder = repo / "model/tiny/1.0.0"
    folder.mkdir(parents=True)
    _tiny_net(folder / "net.onnx")
    make_component(repo, "model", "tiny", format="onnx", file="net.onnx", files={"net.onnx": _sha(folder / "net.onnx")}, **IO)
    api.repo_add(repo)
    return repo


def _record(done) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _warnings(done) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Warning: ")]


def _meta(record: dict) -> dict:
    return json.loads((Path(record["output"]["path"]) / "meta.json").read_text())


# ------------------------------------------------------------------------------ onnx, lenet-digits

@pytest.mark.slow
def test_the_report_figures_match_the_files_and_land_in_provenance(run_cr):
    pytest.importorskip("onnxruntime.quantization")
    from cr.store.catalog import show

    done = run_cr("compile", "model", "lenet-digits", "--to", "onnx", "--quantization", "static", timeout=300)
    assert done.returncode == 0, done.stderr
    table = done.stdout
    for field in ("int8 size", "int8 latency", "pre-pass", "calibration"):
        assert f"\n{field} " in table, table
    assert "quant_pre_process: ran" in table
    # the default calibration split is the one validate does not judge: train, no overlap with test
    assert ("100 samples of dataset:digits@1.0.0, split train; overlap with the 360 samples validation judges "
            "(dataset:digits@1.0.0, split test): 0 of 100") in table

    done = run_cr("compile", "model", "lenet-digits", "--to", "onnx", "--quantization", "static", "--force", "--json",
                  timeout=300)
    record = _record(done)
    report = record["quantization"]
    out = Path(record["output"]["path"]) / record["output"]["file"]
    source = show("model:lenet-digits", verify=False)
    assert report["bytes"] == out.stat().st_size
    assert report["reference_bytes"] == (Path(source["path"]) / "lenet-digits.onnx").stat().st_size == report["source_bytes"]
    assert report["size_ratio"] == pytest.approx(report["bytes"] / report["reference_bytes"], abs=1e-4)
    assert report["size_ratio"] < 0.5  # lenet's conv and dense weights dominate its file: int8 shrinks it
    latency = report["latency"]
    assert latency["runs"] == 20 and latency["warmup"] == 3 and latency["batch"] == 1 and latency["backend"] == "onnxruntime CPU"
    assert latency["reference_ms"] > 0 and latency["int8_ms"] > 0
    assert latency["ratio"] == pytest.approx(latency["int8_ms"] / latency["reference_ms"], rel=0.01)
    assert report["prepasses"] == [{"step": "quant_pre_process", "status": "ran"}]
    assert report["calibration"] == {"dataset": "dataset:digits@1.0.0", "split": "train", "samples": 100, "chosen": "default",
                                     "evaluation": {"dataset": "dataset:digits@1.0.0", "split": "test", "samples": 360},
                                     "overlap": 0}
    # a warning exactly when the measured figures say so (the latency of a tiny model varies)
    slower = latency["ratio"] > 1.10
    assert any("is slower than its fp32 onnx" in w for w in report["warnings"]) == slower
    assert [w.removeprefix("Warning: ") for w in _warnings(done)] == report["warnings"]
    provenance = _meta(record)["provenance"]
    assert provenance["quantization"] == report
    assert provenance["calibration_dataset"]["split"] == "train" and provenance["calibration_dataset"]["overlap"] == 0
    assert provenance["tools"]["sympy"]  # the compile lock brought what quant_pre_process needs


@pytest.mark.slow
def test_calibration_on_the_judged_split_says_so_with_counts(run_cr):
    pytest.importorskip("onnxruntime.quantization")
    done = run_cr("compile", "model", "lenet-digits", "--to", "onnx", "--quantization", "static", "--calibration", "test",
                  "--calibration-samples", "50", "--json", timeout=300)
    calibration = _record(done)["quantization"]["calibration"]
    assert calibration["split"] == "test" and calibration["chosen"] == "--calibration test"
    assert calibration["samples"] == 50 and calibration["overlap"] == 50 and calibration["evaluation"]["samples"] == 360
    assert ("Warning: calibration overlaps validation: 50 of 50 calibration samples (dataset:digits@1.0.0, split test) are "
            "among the 360 samples cr validate judges (dataset:digits@1.0.0, split test)") in done.stderr

    # all: every fifth sample is a test sample (split_by modulo 5), so 10 of the first 50
    done = run_cr("compile", "model", "lenet-digits", "--to", "onnx", "--quantization", "static", "--calibration", "all",
                  "--calibration-samples", "50", "--force", "--json", timeout=300)
    calibration = _record(done)["quantization"]["calibration"]
    assert calibration["split"] == "all" and calibration["overlap"] == 10
    assert "10 of 50 calibration samples" in done.stderr


@pytest.mark.slow
def test_a_skipped_pre_pass_is_a_warning_on_the_terminal(run_cr, tmp_path):
    """sympy hidden from the conversion's process: onnxruntime's quant_pre_process cannot run."""
    pytest.importorskip("onnxruntime.quantization")
    hidden = tmp_path / "hide" / "sympy"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text('raise ModuleNotFoundError("No module named \'sympy\'", name="sympy")\n')
    done = run_cr("compile", "model", "lenet-digits", "--to", "onnx", "--quantization", "dynamic", "--json",
                  env={"PYTHONPATH": str(tmp_path / "hide")}, timeout=300)
    record = _record(done)
    assert record["quantization"]["prepasses"] == [{"step": "quant_pre_process", "status": "skipped", "reason": "sympy not installed"}]
    lines = [w for w in _warnings(done) if "quant_pre_process" in w]
    assert lines == ["Warning: quant_pre_process skipped: sympy not installed (the model was quantised without it; "
                     "cr install software sympy brings it)"]
    assert record["quantization"]["calibration"] is None  # dynamic: nothing calibrates
    assert _meta(record)["provenance"]["quantization"]["prepasses"][0]["status"] == "skipped"


# ------------------------------------------------------------------------------ onnx, a user's tiny net

@pytest.mark.slow
def test_int8_larger_than_its_source_and_calibration_without_splits(run_cr, tiny_repo):
    pytest.importorskip("onnxruntime.quantization")
    done = run_cr("compile", "model", "tiny", "--to", "onnx", "--quantization", "static", "--json", timeout=300)
    record = _record(done)
    report = record["quantization"]
    assert report["bytes"] > report["reference_bytes"] and report["size_ratio"] > 1
    assert report["bytes"] == (Path(record["output"]["path"]) / record["output"]["file"]).stat().st_size
    assert (f"Warning: model:tiny@1.0.0+onnx.int8.static is larger than its fp32 onnx: {report['bytes']} vs "
            f"{report['reference_bytes']} bytes (x{report['size_ratio']:.2f})") in done.stderr.splitlines()
    # no splits: calibration takes all of the dataset validation judges, all of it
    calibration = report["calibration"]
    assert calibration["split"] == "all" and calibration["evaluation"] == {"dataset": "dataset:pairs@1.0.0", "split": "all",
                                                                          "samples": 100}
    assert calibration["overlap"] == calibration["samples"] == 100
    assert "Warning: calibration overlaps validation: 100 of 100 calibration samples" in done.stderr

    # another dataset: no overlap, no warning; the provenance names where calibration came from
    done = run_cr("compile", "model", "tiny", "--to", "onnx", "--quantization", "static", "--calibration", "pairs-fresh",
                  "--force", "--json", timeout=300)
    record = _record(done)
    calibration = record["quantization"]["calibration"]
    assert calibration["dataset"] == "dataset:pairs-fresh@1.0.0" and calibration["overlap"] == 0
    assert "calibration overlaps" not in done.stderr
    assert record["config"]["dataset"] == "dataset:pairs-fresh@1.0.0"
    assert _meta(record)["provenance"]["calibration_dataset"]["ref"] == "dataset:pairs-fresh@1.0.0"

    # the same samples under another name: the overlap is counted by content
    done = run_cr("compile", "model", "tiny", "--to", "onnx", "--quantization", "static", "--calibration",
                  "dataset:pairs-copy@1.0.0", "--force", "--json", timeout=300)
    assert _record(done)["quantization"]["calibration"]["overlap"] == 100


BAD = [
    (["--calibration", "nonesuch"], "Error: --calibration nonesuch: not a split (train, test, all) and no component dataset:nonesuch"),
    (["--calibration", "model:tiny"], "Error: --calibration model:tiny: model:tiny@1.0.0 is a model, not a dataset"),
    (["--calibration", "test"], "Error: --calibration test: dataset:pairs@1.0.0 declares no splits (no split_by in its meta)"),
    (["--calibration", "pairs-fresh", "--dataset", "dataset:pairs"],
     "Error: --calibration pairs-fresh and --dataset dataset:pairs name two different datasets"),
    (["--calibration", "dataset:pairs@9"], "Error: --calibration dataset:pairs@9: not a split (train, test, all) and no version"),
]


@pytest.mark.parametrize("args, error", BAD, ids=["unknown", "a-model", "split-without-splits", "two-datasets", "no-version"])
def test_bad_calibration_values_are_one_error_and_a_hint(run_cr, tiny_repo, cr_home, args, error):
    done = run_cr("compile", "model", "tiny", "--to", "onnx", "--quantization", "static", *args)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith(error) and lines[1].startswith("Hint: ") and len(lines) == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert not (cr_home / "local" / "model" / "tiny").exists()  # nothing registered


# ------------------------------------------------------------------------------ tflite

@pytest.mark.slow
def test_tflite_int8_is_measured_against_the_fp32_tflite_of_its_source(run_cr, tmp_path):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    keras = pytest.importorskip("keras")
    pytest.importorskip("ai_edge_litert.interpreter")
    from cr import api

    repo = make_repo(tmp_path / "mine", "mine")
    x, y = _pairs(11)
    _dataset(repo, "pairs", x.reshape(-1, 4), y, splits=True)
    folder = repo / "model/knet/1.0.0"
    folder.mkdir(parents=True)
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(4,), name="x")
    h = keras.layers.Dense(64, activation="relu")(inputs)
    net = keras.Model(inputs, keras.layers.Dense(2, name="logits")(keras.layers.Dense(64, activation="relu")(h)))
    net.save(folder / "knet.keras")
    make_component(repo, "model", "knet", format="keras", file="knet.keras", files={"knet.keras": _sha(folder / "knet.keras")},
                   **{**IO, "dataset": {"ref": "dataset:pairs@1.0.0", "split": "test"}})
    api.repo_add(repo)

    fp32 = _record(run_cr("compile", "model", "knet", "--to", "tflite", "--json", timeout=300))
    assert fp32["quantization"] is None  # an fp32 compile has no int8 report
    done = run_cr("compile", "model:knet@===1.0.0", "--to", "tflite", "--precision", "int8", "--json", timeout=300)
    record = _record(done)
    report = record["quantization"]
    assert report["against"] == "its fp32 tflite (same source, same converter)"
    assert report["bytes"] == (Path(record["output"]["path"]) / record["output"]["file"]).stat().st_size
    # the reference is the converter's fp32 output of the same source: what `--to tflite` registered
    assert report["reference_bytes"] == (Path(fp32["output"]["path"]) / fp32["output"]["file"]).stat().st_size
    assert report["source_bytes"] == (folder / "knet.keras").stat().st_size
    assert report["size_ratio"] < 0.5  # 4.5k float weights become int8
    assert report["latency"]["backend"] == "tflite interpreter" and report["latency"]["ratio"] > 0
    calibration = report["calibration"]
    assert calibration["split"] == "train" and calibration["samples"] == 80 and calibration["overlap"] == 0
    assert calibration["evaluation"] == {"dataset": "dataset:pairs@1.0.0", "split": "test", "samples": 20}


# ------------------------------------------------------------------------------ no frameworks

def test_warnings_follow_the_figures():
    from cr.run.quantreport import SLOWER_AT, warnings

    base = {"against": "its fp32 onnx", "bytes": 100, "reference_bytes": 100, "size_ratio": 1.0,
            "latency": {"ratio": SLOWER_AT, "int8_ms": 1.1, "reference_ms": 1.0, "method": "m", "backend": "b", "batch": 1},
            "prepasses": [{"step": "quant_pre_process", "status": "off", "reason": "-O preprocess=false"}],
            "calibration": {"overlap": 0}}
    assert warnings(base, "X") == []  # equal size, within the noise allowance, a pre-pass the user turned off, no overlap
    larger = warnings({**base, "bytes": 101, "size_ratio": 1.01}, "X")
    assert larger == ["X is larger than its fp32 onnx: 101 vs 100 bytes (x1.01)"]
    slower = warnings({**base, "latency": {**base["latency"], "ratio": SLOWER_AT + 0.01}}, "X")
    assert len(slower) == 1 and slower[0].startswith("X is slower than its fp32 onnx on this machine: 1.1 vs 1 ms per run")


def test_skip_reasons_name_what_is_missing():
    from cr.runtime.quantcost import skip_reason

    try:
        raise ImportError("sympy is required for symbolic shape inference in quantization preprocessing.")
    except ImportError as exc:  # onnxruntime 1.2x's words
        assert skip_reason(exc) == "sympy not installed"
    assert skip_reason(ModuleNotFoundError("No module named 'sympy.core'", name="sympy.core")) == "sympy not installed"
    assert skip_reason(ValueError("Incomplete symbolic shape inference\nmore")) == "ValueError: Incomplete symbolic shape inference"


def test_the_int8_onnx_compile_lock_brings_sympy():
    from cr.run.compile import compile_requirements

    assert "software:sympy" in compile_requirements("onnx", "onnx", "int8")
    assert "software:sympy" in compile_requirements("torch-state-dict", "onnx", "int8")
    assert "software:sympy" not in compile_requirements("onnx", "onnx", "fp32")
    assert "software:sympy" not in compile_requirements("keras", "tflite", "int8")


def test_a_calibration_dataset_that_runs_code_needs_consent(run_cr, tmp_path, cr_home):
    """A loader dataset calls Python: from a repository not trusted, --calibration asks first."""
    from cr.store import registry

    repo = make_repo(tmp_path / "theirs", "theirs")
    make_component(repo, "dataset", "digits-again", format="loader", samples=1797,
                   source={"package": "scikit-learn", "loader": "sklearn.datasets:load_digits"})
    registry.add_dir(repo, trusted=False)
    done = run_cr("compile", "model", "lenet-digits", "--to", "onnx", "--quantization", "static", "--calibration",
                  "dataset:digits-again")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Error: ") and "dataset:digits-again" in done.stderr and lines[-1].startswith("Hint: "), done.stderr
    assert not (cr_home / "local" / "model" / "lenet-digits").exists()
