"""`cr compile` end to end: tiny seeded models built here, the real CLI, the real frameworks.

Every conversion writes a new component version into the local repo of the test's CR_HOME;
the tests read it back through `cr show`, run it with its framework and compare it with
the source model.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_component, make_repo

np = pytest.importorskip("numpy")

# The command runs through main() with `compile` added, so this file tests it whether or
# not cr/cli/main.py registers it yet (adding it again is a no-op once it does).
NET = '''
from torch import nn


def build(classes=3):
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(8 * 8 * 8, 64), nn.ReLU(), nn.Linear(64, classes),
    )
'''
IO = {
    "inputs": [{"name": "input", "shape": [None, 1, 8, 8], "dtype": "float32", "layout": "NCHW"}],
    "outputs": [{"name": "logits", "shape": [None, 3], "dtype": "float32", "layout": "NC"}],
    "preprocess": [{"op": "cast", "dtype": "float32"}, {"op": "reshape", "shape": [1, 8, 8]}],
    "dataset": {"ref": "dataset:blobs@1.0.0", "split": "test"},
    "task": "classification",
}
EXPECTED = {"top1": {"value": 0.9, "abs": 0.05}}


@pytest.fixture
def compile_cr(run_cr):
    """compile_cr(*args) -> CompletedProcess of `cr compile ARGS` (conversions take a while)."""
    return lambda *args, timeout=300: run_cr("compile", *args, timeout=timeout)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _data(n: int = 60):
    """Three classes of 8x8 'images': a bright band in the top, middle or bottom rows."""
    rng = np.random.default_rng(7)
    y = np.arange(n) % 3
    x = rng.uniform(0, 0.3, (n, 8, 8)).astype(np.float32)
    for i, label in enumerate(y):
        x[i, 3 * label:3 * label + 2] += 0.7
    return x, y


def _repo(tmp_path: Path) -> Path:
    """A registered repo 'zoo' holding dataset:blobs (npz, split by modulo 5)."""
    from cr import api

    repo = make_repo(tmp_path / "zoo", "zoo")
    folder = repo / "dataset/blobs/1.0.0"
    folder.mkdir(parents=True)
    x, y = _data()
    np.savez(folder / "blobs.npz", x=x, y=y)
    make_component(repo, "dataset", "blobs", format="npz", source={"file": "blobs.npz"}, samples=len(y),
                   split_by={"modulo": 5, "test_remainder": 0}, sample={"shape": [8, 8], "dtype": "float32"},
                   labels=["top", "middle", "bottom"], files={"blobs.npz": _sha(folder / "blobs.npz")})
    api.repo_add(repo)
    return repo


def _trained_torch():
    """The net of NET, trained a little (seeded) so that int8 predictions can be compared."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(NET, namespace)
    torch.manual_seed(0)
    model = namespace["build"]()
    x, y = _data()
    xs, ys = torch.from_numpy(x[:, None]), torch.from_numpy(y)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(30):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(xs), ys).backward()
        optimizer.step()
    return model.eval()


def _torch_component(repo: Path, name: str, fmt: str, model) -> Path:
    torch = pytest.importorskip("torch")
    folder = repo / "model" / name / "1.0.0"
    folder.mkdir(parents=True)
    extra = {}
    if fmt == "torch-state-dict":
        (folder / "net.py").write_text(NET)
        torch.save(model.state_dict(), folder / "net.pt")
        extra["architecture"] = {"file": "net.py", "factory": "build", "kwargs": {"classes": 3}}
    elif fmt == "torchscript":
        torch.jit.trace(model, torch.zeros(2, 1, 8, 8)).save(str(folder / "net.pt"))
    elif fmt == "torch-exported":
        program = torch.export.export(model, (torch.zeros(2, 1, 8, 8),), dynamic_shapes=({0: torch.export.Dim("N")},))
        torch.export.save(program, folder / "net.pt2")
    elif fmt == "onnx":
        torch.onnx.export(model, (torch.zeros(2, 1, 8, 8),), str(folder / "net.onnx"), dynamo=False, opset_version=17,
                          input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    file = {"onnx": "net.onnx", "torch-exported": "net.pt2"}.get(fmt, "net.pt")
    files = {p.name: _sha(p) for p in folder.iterdir()}
    return make_component(repo, "model", name, format=fmt, file=file, files=files, expected=EXPECTED, tags=["onnx", "demo"],
                          deps=["software:torch@>=2"], **IO, **extra)


def _show(run_cr, ref: str) -> dict:
    done = run_cr("show", ref, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _ort(path: Path, x):
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _ops(path: Path) -> set:
    onnx = pytest.importorskip("onnx")
    return {n.op_type for n in onnx.load(str(path)).graph.node}


# ---------------------------------------------------------------------------------- torch

@pytest.mark.slow
def test_torch_state_dict_to_onnx(compile_cr, run_cr, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    repo = _repo(tmp_path)
    model = _trained_torch()
    source_meta = json.loads(_torch_component(repo, "tnet", "torch-state-dict", model).read_text())
    out = tmp_path / "compile.json"
    done = compile_cr("model", "tnet", "--to", "onnx", "-o", out)
    assert done.returncode == 0, done.stderr
    assert "model:tnet@1.0.0+onnx" in done.stdout and "max |diff|" in done.stdout

    record = json.loads(out.read_text())
    assert record["action"] == "compile" and record["status"] == "ok" and record["error"] is None
    assert record["output"]["ref"] == "model:tnet@1.0.0+onnx" and record["duration_s"] > 0
    assert [c["ref"] for c in record["components"]] == ["model:tnet@1.0.0", "dataset:blobs@1.0.0", "action:compile@0.1.0"]
    assert all(len(c["sha256"]) == 64 for c in record["components"])
    assert record["config"]["to"] == "onnx" and record["config"]["variant"] == "torch-state-dict"
    assert record["tools"]["torch"].startswith("2.") and record["tools"]["onnxruntime"]

    shown = _show(run_cr, "model:tnet@1.0.0+onnx")
    assert shown["repo"] == "local" and shown["verified"] is True  # cr show re-hashes the file
    meta = shown["meta"]
    assert meta["format"] == "onnx" and meta["precision"] == "fp32" and meta["file"] == "tnet.onnx"
    assert meta["uid"] != source_meta["uid"] and "architecture" not in meta and "source" not in meta
    assert meta["inputs"] == [{"name": "input", "shape": [None, 1, 8, 8], "dtype": "float32", "layout": "NCHW"}]
    assert meta["outputs"] == [{"name": "logits", "shape": [None, 3], "dtype": "float32", "layout": "NC"}]
    assert meta["expected"] == EXPECTED and meta["preprocess"] == IO["preprocess"]
    assert meta["deps"] == ["software:onnxruntime@>=1.17"] and "compiled" in meta["tags"]
    prov = meta["provenance"]
    assert prov["compiled_from"] == {"ref": "model:tnet@1.0.0", "uid": source_meta["uid"], "variant": "torch-state-dict",
                                     "format": "torch-state-dict", "precision": "fp32", "file": "net.pt",
                                     "sha256": source_meta["files"]["net.pt"]}
    assert prov["conversion"] == "torch-export" and prov["options"]["opset"] >= 17
    assert prov["checks"]["export"]["max_abs_diff"] < 1e-4 and prov["checks"]["inputs"] == "dataset"
    assert prov["tools"]["torch"] and prov["cr_version"] and prov["created"]

    onnx_file = Path(shown["path"]) / meta["file"]
    for batch in (1, 5):  # the batch axis is dynamic
        x = np.random.default_rng(batch).standard_normal((batch, 1, 8, 8)).astype(np.float32)
        with torch.no_grad():
            want = model(torch.from_numpy(x)).numpy()
        got = _ort(onnx_file, x)
        assert got.shape == (batch, 3) and np.abs(got - want).max() < 1e-4


@pytest.mark.slow
def test_torchscript_to_onnx_and_an_existing_version(compile_cr, run_cr, tmp_path):
    torch = pytest.importorskip("torch")
    repo = _repo(tmp_path)
    model = _trained_torch()
    _torch_component(repo, "tscript", "torchscript", model)
    done = compile_cr("model:tscript", "--to", "onnx", "--json")
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout)["output"]
    x = np.ones((4, 1, 8, 8), np.float32)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert np.abs(_ort(Path(first["path"]) / first["file"], x) - want).max() < 1e-4

    done = compile_cr("model:tscript@===1.0.0", "--to", "onnx")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0].startswith("Error: model:tscript@1.0.0+onnx already exists in the local repo")
    assert "Hint: give --force to replace it" in done.stderr

    done = compile_cr("model:tscript@===1.0.0", "--to", "onnx", "--force", "--json")
    assert done.returncode == 0, done.stderr
    second = json.loads(done.stdout)["output"]
    assert second["ref"] == first["ref"] and second["uid"] != first["uid"]
    assert _show(run_cr, first["ref"])["meta"]["uid"] == second["uid"]
    assert not [p for p in Path(second["path"]).parent.iterdir() if p.name.startswith(".")]  # no staging leftovers

    done = compile_cr("model:tscript@===1.0.0", "--to", "onnx", "--version", "2.0.0", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"]["ref"] == "model:tscript@2.0.0"


@pytest.mark.slow
def test_torch_exported_program_to_onnx(compile_cr, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    repo = _repo(tmp_path)
    model = _trained_torch()
    _torch_component(repo, "exported", "torch-exported", model)
    done = compile_cr("model", "exported", "--to", "onnx", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["checks"]["export"]["exporter"] == "dynamo" and record["tools"]["onnxscript"]
    out = record["output"]
    x = np.zeros((7, 1, 8, 8), np.float32)
    with torch.no_grad():
        want = model(torch.from_numpy(x)).numpy()
    assert np.abs(_ort(Path(out["path"]) / out["file"], x) - want).max() < 1e-4


# ----------------------------------------------------------------------------------- onnx

@pytest.mark.slow
def test_onnx_optimised_and_int8(compile_cr, run_cr, tmp_path):
    pytest.importorskip("onnxruntime.quantization")
    repo = _repo(tmp_path)
    _torch_component(repo, "onet", "onnx", _trained_torch())
    source = repo / "model/onet/1.0.0/net.onnx"
    x, y = _data()
    reference = _ort(source, x[:, None])
    assert (reference.argmax(1) == y).mean() > 0.9

    done = compile_cr("model:onet@===1.0.0", "--to", "onnx", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["output"]
    assert out["ref"] == "model:onet@1.0.0+onnx.opt"
    meta = _show(run_cr, out["ref"])["meta"]
    assert meta["provenance"]["options"]["level"] == "extended" and meta["expected"] == EXPECTED
    assert np.abs(_ort(Path(out["path"]) / out["file"], x[:, None]) - reference).max() < 1e-4

    for mode, marker in (("dynamic", "DynamicQuantizeLinear"), ("static", "QuantizeLinear")):
        done = compile_cr("model:onet@===1.0.0", "--to", "onnx", "--quantization", mode, "--json")
        assert done.returncode == 0, done.stderr
        record = json.loads(done.stdout)
        out = record["output"]
        assert out["ref"] == f"model:onet@1.0.0+onnx.int8.{mode}" and out["precision"] == "int8"
        shown = _show(run_cr, out["ref"])
        assert shown["verified"]
        meta, path = shown["meta"], Path(out["path"]) / out["file"]
        assert marker in _ops(path)
        assert path.stat().st_size < source.stat().st_size / 2
        assert meta["expected"] == {"top1": {"value": 0.9, "abs": 0.07}} and meta["provenance"]["source_expected"] == EXPECTED
        assert meta["inputs"][0]["dtype"] == "float32" and meta["inputs"][0]["shape"] == [None, 1, 8, 8]
        got = _ort(path, x[:, None])
        assert (got.argmax(1) == reference.argmax(1)).mean() >= 0.9  # predictions mostly agree
        if mode == "static":
            assert meta["provenance"]["calibration_dataset"]["ref"] == "dataset:blobs@1.0.0"
            assert meta["provenance"]["checks"]["calibration"]["samples"] == 48  # the train split (60 - 12)
            assert meta["provenance"]["options"]["per_channel"] is True


def test_static_quantisation_needs_a_dataset(compile_cr, tmp_path):
    pytest.importorskip("onnxruntime")
    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/plain/1.0.0"
    folder.mkdir(parents=True)
    (folder / "m.onnx").write_bytes(b"not really onnx")
    make_component(repo, "model", "plain", format="onnx", file="m.onnx", files={"m.onnx": _sha(folder / "m.onnx")})
    from cr import api

    api.repo_add(repo)
    done = compile_cr("model", "plain", "--to", "onnx", "--quantization", "static")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Error: onnx int8 (static quantisation) needs calibration samples, and the model names no dataset" in done.stderr
    done = compile_cr("model", "plain", "--to", "onnx", "--precision", "fp32", "--quantization", "dynamic")
    assert done.returncode == 1 and "makes an int8 model, but --precision fp32 was given" in done.stderr
    done = compile_cr("model", "plain", "--to", "onnx", "-O", "lvl=all")
    assert done.returncode == 1 and "Error: onnx-optimize has no option lvl" in done.stderr and "level (" in done.stderr


def test_a_framework_failure_is_a_failed_record(compile_cr, cr_home, tmp_path):
    pytest.importorskip("onnxruntime")
    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/corrupt/1.0.0"
    folder.mkdir(parents=True)
    (folder / "m.onnx").write_bytes(b"\x08\x07garbage, not a protobuf")
    make_component(repo, "model", "corrupt", format="onnx", file="m.onnx", files={"m.onnx": _sha(folder / "m.onnx")},
                   inputs=[{"name": "x", "shape": [None, 4], "dtype": "float32"}])
    from cr import api

    api.repo_add(repo)
    out = tmp_path / "failed.json"
    done = compile_cr("model", "corrupt", "--to", "onnx", "-o", out)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert [line for line in done.stderr.splitlines() if line.startswith("Error: ")] == [
        "Error: InvalidProtobuf: [ONNXRuntimeError] : 7 : INVALID_PROTOBUF : Load model from "
        f"{folder / 'm.onnx'} failed:Protobuf parsing failed."]
    record = json.loads(out.read_text())
    assert record["status"] == "failed" and record["output"] is None and record["ended"]
    assert record["error"]["kind"] == "error" and "Traceback" in record["error"]["traceback"]
    assert not (cr_home / "local/model/corrupt").exists() or not any((cr_home / "local/model/corrupt").iterdir())


def test_trt_plan_needs_an_nvidia_gpu(compile_cr, tmp_path):
    if os.path.isdir("/proc/driver/nvidia/gpus") and os.listdir("/proc/driver/nvidia/gpus"):
        pytest.skip("this machine has an NVIDIA GPU")
    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/plain/1.0.0"
    folder.mkdir(parents=True)
    (folder / "m.onnx").write_bytes(b"onnx bytes")
    make_component(repo, "model", "plain", format="onnx", file="m.onnx", files={"m.onnx": _sha(folder / "m.onnx")})
    from cr import api

    api.repo_add(repo)
    out = tmp_path / "r.json"
    done = compile_cr("model", "plain", "--to", "trt-plan", "-o", out)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    # the run got as far as its one step (its progress lines), then failed with one Error and its Hint
    phases = [line for line in done.stderr.splitlines() if line.startswith("compile model:plain: ")]
    assert [line.split(": ", 1)[1].split(" in ")[0] for line in phases] == [
        "resolve", "load", "step 1/1 onnx -> trt-plan (onnx-to-trt-plan, tensorrt)", "failed"], done.stderr
    assert [line for line in done.stderr.splitlines() if line not in phases] == [
        f"result: {out}",
        "Error: compiling to trt-plan needs an NVIDIA GPU and tensorrt; this machine has no NVIDIA GPU",
        "Hint: run cr compile --to trt-plan on the machine (GPU, TensorRT version) that will run the plan",
    ]
    assert json.loads(out.read_text())["status"] == "failed"


def test_unsupported_pair_is_one_clear_line(compile_cr, tmp_path):
    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/lite/1.0.0"
    folder.mkdir(parents=True)
    (folder / "m.tflite").write_bytes(b"TFL3")
    make_component(repo, "model", "lite", format="tflite", file="m.tflite", files={"m.tflite": _sha(folder / "m.tflite")})
    from cr import api

    api.repo_add(repo)
    # tflite -> onnx is a hop of the conversion graph now (tests/test_convgraph.py); tflite -> tflite is none
    done = compile_cr("model", "lite", "--to", "tflite", "--variant", "tflite")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[0] == ("Error: no conversion path from tflite to tflite for model:lite@1.0.0; from tflite "
                                           "cr compile reaches: onnx, savedmodel, trt-plan")
    done = compile_cr("model", "lite", "--to", "coreml")
    assert done.returncode == 2 and "'coreml' is not one of 'onnx', 'tflite', 'savedmodel', 'trt-plan'" in done.stderr


# --------------------------------------------------------------------------------- keras

@pytest.mark.slow
def test_keras_to_tflite_fp32_and_int8(compile_cr, run_cr, tmp_path):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    repo = _repo(tmp_path)
    folder = repo / "model/knet/1.0.0"
    folder.mkdir(parents=True)
    keras.utils.set_random_seed(0)
    inputs = keras.Input(shape=(8, 8, 1), name="image")
    h = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inputs)
    h = keras.layers.Dense(32, activation="relu")(keras.layers.Flatten()(h))
    net = keras.Model(inputs, keras.layers.Dense(3, name="scores")(h))
    net.save(folder / "knet.keras")
    io = {**IO, "inputs": [{"name": "image", "shape": [None, 8, 8, 1], "dtype": "float32", "layout": "NHWC"}],
          "outputs": [{"name": "scores", "shape": [None, 3], "dtype": "float32", "layout": "NC"}],
          "preprocess": [{"op": "cast", "dtype": "float32"}, {"op": "reshape", "shape": [8, 8, 1]}]}
    make_component(repo, "model", "knet", format="keras", file="knet.keras", files={"knet.keras": _sha(folder / "knet.keras")},
                   expected=EXPECTED, **io)
    x = _data()[0][:5, :, :, None]
    want = net(x, training=False).numpy()

    def run(path: Path):
        it = interpreter.Interpreter(model_path=str(path))
        detail = it.get_input_details()[0]
        it.resize_tensor_input(detail["index"], list(x.shape))
        it.allocate_tensors()
        it.set_tensor(detail["index"], x)
        it.invoke()
        out = it.get_output_details()[0]
        return it, detail, out, it.get_tensor(out["index"])

    done = compile_cr("model", "knet", "--to", "tflite", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["output"]
    assert out["ref"] == "model:knet@1.0.0+tflite" and out["file"] == "knet.tflite"
    meta = _show(run_cr, out["ref"])["meta"]
    assert meta["format"] == "tflite" and meta["deps"] == ["software:ai-edge-litert"] and meta["expected"] == EXPECTED
    assert meta["inputs"] == [{"name": "image", "shape": [None, 8, 8, 1], "dtype": "float32", "layout": "NHWC"}]
    _, _, _, got = run(Path(out["path"]) / out["file"])
    assert np.abs(got - want).max() < 1e-5

    done = compile_cr("model:knet@===1.0.0", "--to", "tflite", "--precision", "int8", "--calibration-samples", "20", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    out = record["output"]
    assert out["ref"] == "model:knet@1.0.0+tflite.int8" and out["precision"] == "int8"
    meta = _show(run_cr, out["ref"])["meta"]
    assert meta["provenance"]["checks"]["calibration"] == {"samples": 20}
    assert meta["expected"] == {"top1": {"value": 0.9, "abs": 0.07}} and meta["provenance"]["source_expected"] == EXPECTED
    it, detail, output_detail, got = run(Path(out["path"]) / out["file"])
    assert detail["dtype"] == np.float32 and output_detail["dtype"] == np.float32  # float interface kept
    assert np.int8 in {d["dtype"] for d in it.get_tensor_details()}
    assert (got.argmax(1) == want.argmax(1)).mean() >= 0.8


# ------------------------------------------------------------------------------ no frameworks

def test_labels_and_plans():
    from cr.errors import CRError
    from cr.runtime.actions.compile import plan
    from cr.run.compile import output_version

    assert output_version("1.0.0", ["onnx"]) == "1.0.0+onnx"
    assert output_version("1.0.0+onnx", ["onnx", "int8", "dynamic"]) == "1.0.0+onnx.int8.dynamic"
    assert output_version("2.1+local", ["tflite", "int8"]) == "2.1+local.tflite.int8"
    assert plan("onnx", "onnx")["label"] == ["onnx", "opt"]
    assert plan("onnx", "onnx", options={"level": "all"})["label"] == ["onnx", "opt", "all"]
    assert plan("torchscript", "onnx", "int8")["steps"] == ["export", "quantize"]
    assert plan("keras", "tflite", "int8")["label"] == ["tflite", "int8"] and plan("keras", "tflite", "int8")["needs_dataset"]
    assert plan("savedmodel", "tflite", quantization="dynamic")["label"] == ["tflite", "int8", "dynamic"]
    assert plan("onnx", "trt-plan", options={"fp16": True})["precision"] == "fp16"
    with pytest.raises(CRError, match="int8"):
        plan("onnx", "trt-plan", "int8")
    with pytest.raises(CRError, match="option level is 'fast'"):
        plan("onnx", "onnx", options={"level": "fast"})


def test_action_meta_is_valid_and_help_imports_no_framework():
    from cr import api

    assert api.check(Path(__file__).resolve().parent.parent / "actions/compile").ok
    code = ("import sys\nfrom cr.cli.main import main\ntry:\n    main(['compile', '--help'])\nexcept SystemExit as e:\n    assert e.code == 0\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'onnxruntime', 'torch', 'tensorflow', 'jsonschema'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "--quantization" in done.stdout and "--calibration-samples" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"
