"""The conversion graph of `cr compile` (cr.runtime.actions.convgraph): planning, its errors,
shapes carried through the hops, and real conversions of the shipped lenet-digits along the
new hops (onnx2tf: onnx -> tflite / savedmodel; tf2onnx: tflite -> onnx), each checked
against its source's numbers and run on the backend of its format."""
from __future__ import annotations

import importlib.util
import json
import os
import platform
from pathlib import Path

import pytest
from conftest import make_component, make_repo

np = pytest.importorskip("numpy")

LENET = Path(__file__).resolve().parent.parent / "repo/model/lenet-digits/1.0.0"


@pytest.fixture
def compile_cr(run_cr):
    """compile_cr(*args) -> CompletedProcess of `cr compile ARGS` (conversions take a while)."""
    return lambda *args, timeout=600: run_cr("compile", *args, timeout=timeout)


def _errors(done) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith(("Error: ", "Hint: "))]


def _nothing_added(cr_home: Path, name: str) -> bool:
    folder = cr_home / "local/model" / name
    return not folder.exists() or not [p for p in folder.iterdir() if not p.name.startswith(".")]


# ------------------------------------------------------------------------------- planning

def test_shortest_paths_end_with_the_precision_asked_for():
    from cr.runtime.actions.convgraph import reachable, route

    def names(*args):
        chain = route(*args)
        return [hop.name for hop in chain] if chain is not None else None

    assert names("onnx", "tflite") == ["onnx2tf-tflite"]
    assert names("onnx", "savedmodel") == ["onnx2tf-savedmodel"]
    # onnx2tf writes float TFLite only: int8 goes through a SavedModel and TensorFlow's converter
    assert names("onnx", "tflite", "int8") == ["onnx2tf-savedmodel", "tf-to-tflite"]
    assert names("torch-state-dict", "tflite", "int8") == ["torch-export", "onnx2tf-savedmodel", "tf-to-tflite"]
    assert names("tflite", "onnx") == ["tflite-to-onnx"]
    assert names("tflite", "onnx", "int8") == ["tflite-to-onnx", "onnx-quantize"]
    assert names("tflite", "savedmodel") == ["tflite-to-onnx", "onnx2tf-savedmodel"]
    assert names("tf-frozen-graph", "trt-plan") == ["tf2onnx", "onnx-to-trt-plan"]
    assert names("onnx", "keras") is None and names("coreml", "onnx") is None
    assert reachable("tflite") == ["onnx", "savedmodel", "trt-plan"]
    assert reachable("coreml") == []


def test_chained_plans_name_every_hop_and_the_software_it_needs():
    from cr.runtime.actions.compile import plan

    the_plan = plan("torch-state-dict", "tflite", "int8")
    assert the_plan["steps"] == ["export", "onnx2tf_savedmodel", "tflite"]
    assert the_plan["label"] == ["tflite", "int8"] and the_plan["needs_dataset"]
    assert the_plan["conversion"] == "torch-export-onnx2tf-savedmodel-tf-to-tflite-int8-static"
    assert [(h["from"], h["to"], h["tool"]) for h in the_plan["path"]] == [
        ("torch-state-dict", "onnx", "torch"), ("onnx", "savedmodel", "onnx2tf"), ("savedmodel", "tflite", "tensorflow")]
    assert "software:onnx2tf" in the_plan["software"] and "software:torch" in the_plan["software"]
    # a state dict bound for onnx2tf is exported with static pads (the torch.export-based exporter)
    assert the_plan["options"]["dynamo"] is True and the_plan["options"]["slim"] is False
    assert plan("tflite", "onnx", quantization="static")["label"] == ["onnx", "int8", "static"]
    assert plan("onnx", "savedmodel")["label"] == ["savedmodel"]
    # single conversions keep their plans (and labels) as before
    assert plan("onnx", "onnx")["steps"] == ["optimize"] and "path" not in plan("onnx", "onnx")


def test_no_path_lists_the_formats_the_source_reaches():
    from cr.errors import CRError
    from cr.runtime.actions.compile import plan

    with pytest.raises(CRError) as caught:
        plan("tflite", "tflite", "int8", source="model:m@1.0.0")
    assert caught.value.message == ("no conversion path from tflite to tflite int8 for model:m@1.0.0; from tflite cr compile "
                                    "reaches: onnx, savedmodel, trt-plan")
    assert "--variant" in caught.value.hint
    with pytest.raises(CRError, match="from coreml cr compile reaches: nothing"):
        plan("coreml", "onnx")
    with pytest.raises(CRError, match="onnx2tf-tflite has no option level"):
        plan("onnx", "tflite", options={"level": "all"})


# ------------------------------------------------------------------------------- errors (CLI)

def _lite_repo(tmp_path: Path, content: bytes) -> None:
    from cr import api

    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/lite/1.0.0"
    folder.mkdir(parents=True)
    (folder / "m.tflite").write_bytes(content)
    import hashlib

    make_component(repo, "model", "lite", format="tflite", file="m.tflite",
                   files={"m.tflite": hashlib.sha256(content).hexdigest()},
                   inputs=[{"name": "x", "shape": [None, 4], "dtype": "float32"}])
    api.repo_add(repo)


def test_no_path_is_one_error_line_naming_the_reachable_formats(compile_cr, cr_home, tmp_path):
    _lite_repo(tmp_path, b"TFL3")
    done = compile_cr("model", "lite", "--to", "tflite", "--precision", "int8", "--variant", "tflite")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert _errors(done) == [
        "Error: no conversion path from tflite to tflite int8 for model:lite@1.0.0; from tflite cr compile reaches: onnx, "
        "savedmodel, trt-plan",
        "Hint: choose one of those with --to, or --variant naming a variant in another format (docs/conversions.md)",
    ]
    done = compile_cr("model", "lite", "--to", "tflite")  # the variant is chosen: none reaches tflite
    assert done.returncode == 1 and _errors(done) == [
        "Error: no conversion path from tflite to tflite for model:lite@1.0.0; from tflite cr compile reaches: onnx, "
        "savedmodel, trt-plan",
        "Hint: choose one of those with --to, or add a variant in another format (docs/conversions.md)",
    ]
    assert _nothing_added(cr_home, "lite")


def test_a_converter_crash_names_the_hop(compile_cr, cr_home, tmp_path):
    pytest.importorskip("tf2onnx")
    _lite_repo(tmp_path, b"TFL3 this is no flatbuffer")
    out = tmp_path / "r.json"
    done = compile_cr("model", "lite", "--to", "onnx", "-o", out)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = _errors(done)
    assert len(errors) == 2 and errors[0].startswith("Error: hop tflite-to-onnx failed converting model:lite@1.0.0: ")
    assert errors[1].startswith("Hint: see docs/conversions.md (known failures) for this hop")
    record = json.loads(out.read_text())
    assert record["status"] == "failed" and record["output"] is None
    assert _nothing_added(cr_home, "lite")


def test_a_hop_failure_names_the_op_the_converter_names():
    from cr.runtime.actions.compile import _Work

    work = _Work.__new__(_Work)
    work.ref = "model:m@1.0.0"
    work._converter_log = "INFO: ...\nERROR: onnx_op_name: /conv/Conv\nERROR: onnx_op_type: ConvTranspose\n"
    error = work.hop_failure("onnx2tf-tflite", ValueError("Dimensions must be equal"))
    assert error.message == "hop onnx2tf-tflite failed converting model:m@1.0.0 at op ConvTranspose: ValueError: Dimensions must be equal"
    work._converter_log = ""
    flex = work.hop_failure("onnx2tf-tflite", RuntimeError("Select TensorFlow op(s) ... Node number 41 (FlexConv2D) failed to prepare."))
    assert " at op FlexConv2D: " in flex.message


def _onnx_model(tmp_path: Path, declared_shape: list, dynamic_hw: bool = False) -> None:
    """model:tiny, an ONNX conv net exported here, its input declared with declared_shape."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    from cr import api

    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/tiny/1.0.0"
    folder.mkdir(parents=True)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                              torch.nn.Flatten(), torch.nn.Linear(4, 3)).eval()
    axes = {0: "N", 2: "H", 3: "W"} if dynamic_hw else {0: "N"}
    torch.onnx.export(net, (torch.zeros(2, 1, 8, 8),), str(folder / "m.onnx"), dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["logits"], dynamic_axes={"input": axes, "logits": {0: "N"}})
    import hashlib

    make_component(repo, "model", "tiny", format="onnx", file="m.onnx",
                   files={"m.onnx": hashlib.sha256((folder / "m.onnx").read_bytes()).hexdigest()},
                   inputs=[{"name": "input", "shape": declared_shape, "dtype": "float32", "layout": "NCHW"}],
                   outputs=[{"name": "logits", "shape": [None, 3], "dtype": "float32", "layout": "NC"}])
    api.repo_add(repo)


def test_a_declared_shape_that_contradicts_the_file(compile_cr, cr_home, tmp_path):
    _onnx_model(tmp_path, [None, 1, 9, 9])
    done = compile_cr("model", "tiny", "--to", "onnx")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert _errors(done) == [
        "Error: model:tiny@1.0.0: input 'input' is declared with shape [null, 1, 9, 9] in the model meta, but the file "
        "has [null, 1, 8, 8]",
        "Hint: fix the shape in the model meta (null for a dynamic dim), or give the file the declared shape",
    ]
    assert _nothing_added(cr_home, "tiny")


def test_declared_dims_are_carried_where_the_file_leaves_them_dynamic(compile_cr, run_cr, tmp_path):
    _onnx_model(tmp_path, [None, 1, 8, 8], dynamic_hw=True)  # the file says [N, 1, H, W]
    done = compile_cr("model", "tiny", "--to", "onnx")
    assert done.returncode == 0, done.stderr
    shown = json.loads(run_cr("show", "model:tiny@1.0.0+onnx.opt", "--json").stdout)
    assert shown["meta"]["inputs"][0]["shape"] == [None, 1, 8, 8]  # only the batch the source left dynamic stays so
    assert shown["meta"]["outputs"][0]["shape"] == [None, 3]
    # a single conversion records its path too: one hop
    [hop] = shown["meta"]["provenance"]["path"]
    assert (hop["hop"], hop["from"], hop["to"], hop["tool"], hop["passed"]) == ("onnx-optimize", "onnx", "onnx", "onnxruntime", True)


# ------------------------------------------------------------------ real conversions of lenet-digits

def _digits():
    from sklearn.datasets import load_digits

    x = load_digits().data[::5][:64].astype("float32") / 16
    return x.reshape(-1, 1, 8, 8)


def _ort(path: Path, x):
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def _tflite(path: Path, x):
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_path=str(path))
    detail = interp.get_input_details()[0]
    interp.resize_tensor_input(detail["index"], list(x.shape))
    interp.allocate_tensors()
    interp.set_tensor(detail["index"], x)
    interp.invoke()
    return interp.get_tensor(interp.get_output_details()[0]["index"])


def _needs_onnx2tf() -> None:
    """Skip without onnx2tf, never importing it here: importing it raises this process's
    recursion limit to 2**31-1 for every later test (its conversions run in cr's children)."""
    if importlib.util.find_spec("onnx2tf") is None:
        pytest.skip("onnx2tf is not installed (README's test command installs it)")


def _compiled(compile_cr, run_cr, *args) -> tuple[dict, dict, Path]:
    done = compile_cr("model", "lenet-digits", *args, "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    shown = json.loads(run_cr("show", record["output"]["ref"], "--json").stdout)
    return record, shown["meta"], Path(record["output"]["path"]) / record["output"]["file"]


@pytest.mark.slow
def test_lenet_onnx_to_tflite_and_savedmodel_through_onnx2tf(compile_cr, run_cr):
    _needs_onnx2tf()
    x = _digits()
    want = _ort(LENET / "lenet-digits.onnx", x)

    record, meta, path = _compiled(compile_cr, run_cr, "--to", "tflite")
    assert [h["hop"] for h in record["path"]] == ["onnx2tf-tflite"]
    hop = record["path"][0]
    assert hop["tool"] == "onnx2tf" and hop["version"] and hop["passed"] is True and hop["max_abs_diff"] < 1e-4
    assert meta["provenance"]["path"] == record["path"]
    assert meta["inputs"] == [{"name": "input", "shape": [None, 1, 8, 8], "dtype": "float32", "layout": "NCHW"}]
    assert meta["outputs"][0]["name"] == "logits" and meta["outputs"][0]["shape"] == [None, 10]
    got = _tflite(path, x)  # NCHW in, as the source: the meta's preprocess still fits
    assert np.abs(got - want).max() < 1e-4 and (got.argmax(1) == want.argmax(1)).all()

    record, meta, path = _compiled(compile_cr, run_cr, "--to", "savedmodel")
    assert meta["format"] == "savedmodel" and meta["file"] == "lenet-digits.savedmodel/saved_model.pb"
    assert "lenet-digits.savedmodel/saved_model.pb" in meta["files"] and any("variables/" in f for f in meta["files"])
    assert meta["inputs"][0]["shape"] == [None, 1, 8, 8] and meta["deps"] == ["software:tensorflow-cpu"]
    done = run_cr("validate", record["output"]["ref"], "--backend", "tensorflow", "--json", timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["validation"]["outcome"] == "PASS"

    # parity across the four CPU stacks in one command: each backend runs the version it
    # loads (tensorflow the compiled SavedModel), and the table says which ran where
    done = run_cr("validate", "model", "lenet-digits", "--parity", "onnxruntime,torch,tflite,tensorflow", timeout=900)
    assert done.returncode == 0, done.stderr
    title = done.stdout.splitlines()[0]
    assert f"{record['output']['ref']} (tensorflow)" in title and "model:lenet-digits@1.0.0 (onnxruntime, torch, tflite)" in title, title
    assert [line.split()[2] for line in done.stdout.splitlines()[2:5]] == ["torch", "tflite", "tensorflow"], done.stdout
    assert all(line.rstrip().endswith("ok") for line in done.stdout.splitlines()[2:5]), done.stdout


@pytest.mark.slow
def test_lenet_int8_tflite_through_a_savedmodel(compile_cr, run_cr):
    _needs_onnx2tf()
    record, meta, path = _compiled(compile_cr, run_cr, "--to", "tflite", "--precision", "int8")
    assert [(h["hop"], h["from"], h["to"]) for h in record["path"]] == [
        ("onnx2tf-savedmodel", "onnx", "savedmodel"), ("tf-to-tflite", "savedmodel", "tflite")]
    assert record["path"][1]["top1_agreement"] >= 0.95 and record["checks"]["calibration"]["samples"] == 100
    end = record["checks"]["end_to_end"]  # the chain's output against the source onnx itself
    assert end["against"] == "onnx" and end["samples"] == 100 and end["passed"] is True and end["top1_agreement"] >= 0.95
    assert end["reference"] == "saved by the first hop"  # the last hop's child never ran the source
    first, second = (_names(h["environment"]["software"]) for h in record["path"])  # one child per hop, each its own lock
    assert {"onnx2tf", "onnx"} <= first and "onnx2tf" not in second and "torch" not in first | second
    assert record["path"][0]["environment"]["lock"] != record["path"][1]["environment"]["lock"]
    assert record["quantization"]["against"] and record["quantization"]["bytes"]  # the int8 report, from the last child
    assert meta["provenance"]["path"] == record["path"]
    assert meta["precision"] == "int8" and "int8" in meta["tags"] and record["output"]["ref"].endswith("+tflite.int8")
    x = _digits()
    want = _ort(LENET / "lenet-digits.onnx", x)
    assert (_tflite(path, x).argmax(1) == want.argmax(1)).mean() >= 0.95


def _names(software: list[str]) -> set[str]:
    return {s.split("==")[0] for s in software}


def test_each_hop_of_a_chain_gets_the_lock_of_what_it_needs(cr_home):
    """torch-state-dict -> onnx -> tflite: the export's lock has torch and no onnx2tf, onnx2tf's has
    onnx2tf and no torch (tools of different hops need not coexist in one environment)."""
    from cr.run.compile import _hop_envs
    from cr.runtime.actions.compile import plan

    the_plan = plan("torch-state-dict", "tflite")
    envs = _hop_envs("model:lenet-digits@1.0.0", the_plan["path"], the_plan["precision"], "tflite", False)
    export, onnx2tf = (e["environment"] for e in envs)
    assert "torch" in _names(export["software"]) and "onnx2tf" not in _names(export["software"])
    assert "onnx2tf" in _names(onnx2tf["software"]) and "torch" not in _names(onnx2tf["software"])
    assert "software:onnxscript" in export["requires"] and "software:onnx2tf" in onnx2tf["requires"]
    assert export["lock"] != onnx2tf["lock"] and all(e["python"] == platform.python_version() for e in (export, onnx2tf))
    assert all(isinstance(e["env"], dict) and os.path.isabs(e["python"]) for e in envs)
    assert not any(os.sep in str(v) for e in (export, onnx2tf) for k, v in e.items() if k != "software")  # no paths


@pytest.mark.slow
def test_lenet_state_dict_to_tflite_one_child_per_hop(compile_cr, run_cr, cr_home):
    """torch export, then onnx2tf, each in its own child and lock; the chain's output is checked
    against the state dict's own outputs, saved by the first child (the last has no torch in its lock)."""
    _needs_onnx2tf()
    pytest.importorskip("torch")
    record, meta, path = _compiled(compile_cr, run_cr, "--variant", "state-dict", "--to", "tflite")
    assert [(h["hop"], h["from"], h["to"]) for h in record["path"]] == [
        ("torch-export", "torch-state-dict", "onnx"), ("onnx2tf-tflite", "onnx", "tflite")]
    export, onnx2tf = (_names(h["environment"]["software"]) for h in record["path"])
    assert "torch" in export and "onnx2tf" not in export and "onnx2tf" in onnx2tf and "torch" not in onnx2tf
    assert all(h["passed"] is True and h["max_abs_diff"] < 1e-4 for h in record["path"])
    end = record["checks"]["end_to_end"]
    assert end["against"] == "torch-state-dict" and end["reference"] == "saved by the first hop"
    assert end["passed"] is True and end["max_abs_diff"] < 1e-4 and end["samples"] == 3
    assert record["tools"]["torch"] and record["tools"]["onnx2tf"]  # every child's tools
    assert meta["provenance"]["path"] == record["path"] and meta["provenance"]["options"]["dynamo"] is True
    assert not list((cr_home / "tmp").glob("compile-*"))  # the intermediate onnx and the saved reference went with the work dir
    x = _digits()
    want = _ort(LENET / "lenet-digits.onnx", x)
    assert np.abs(_tflite(path, x) - want).max() < 1e-4


@pytest.mark.slow
def test_lenet_tflite_to_onnx_through_tf2onnx(compile_cr, run_cr):
    pytest.importorskip("tf2onnx")
    record, meta, path = _compiled(compile_cr, run_cr, "--variant", "tflite", "--to", "onnx")
    assert [h["hop"] for h in record["path"]] == ["tflite-to-onnx"] and record["path"][0]["tool"] == "tf2onnx"
    assert meta["provenance"]["compiled_from"]["format"] == "tflite"
    assert meta["inputs"][0]["shape"] == [None, 1, 8, 8]
    x = _digits()
    want = _tflite(LENET / "lenet-digits.tflite", x)
    assert np.abs(_ort(path, x) - want).max() < 1e-4
    done = run_cr("validate", record["output"]["ref"], "--backend", "onnxruntime", "--json", timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["validation"]["outcome"] == "PASS"


SAME_PADDED = '''
import torch
import torch.nn.functional as F


class Same(torch.nn.Module):
    """TensorFlow-style SAME padding computed from the input size in forward(), as efficientnet-lite0's net.py does."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, stride=2)
        self.dw = torch.nn.Conv2d(4, 4, 3, stride=2, groups=4)
        self.fc = torch.nn.Linear(4, 3)

    @staticmethod
    def pad(x, k, s):
        pads = []
        for size in reversed(x.shape[-2:]):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        return F.pad(x, pads)

    def forward(self, x):
        x = torch.relu(self.conv(self.pad(x, 3, 2)))
        x = torch.relu(self.dw(self.pad(x, 3, 2)))
        return self.fc(x.mean((2, 3)))
'''


@pytest.mark.slow
def test_a_runtime_computed_pad_fails_naming_the_hop_and_the_op(compile_cr, cr_home, tmp_path):
    """The TorchScript exporter writes SAME padding as Shape -> ... -> Pad evaluated at run time;
    onnx2tf turns that into a Flex op LiteRT's builtin interpreter cannot run: the error names the
    hop and the op (the failure docs/conversions.md describes for efficientnet-lite0)."""
    _needs_onnx2tf()
    torch = pytest.importorskip("torch")
    import hashlib

    from cr import api

    namespace: dict = {}
    exec(SAME_PADDED, namespace)
    torch.manual_seed(0)
    net = namespace["Same"]().eval()
    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/same/1.0.0"
    folder.mkdir(parents=True)
    torch.onnx.export(net, (torch.zeros(2, 1, 16, 16),), str(folder / "m.onnx"), dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}})
    make_component(repo, "model", "same", format="onnx", file="m.onnx",
                   files={"m.onnx": hashlib.sha256((folder / "m.onnx").read_bytes()).hexdigest()},
                   inputs=[{"name": "input", "shape": [None, 1, 16, 16], "dtype": "float32", "layout": "NCHW"}],
                   outputs=[{"name": "logits", "shape": [None, 3], "dtype": "float32"}])
    api.repo_add(repo)
    done = compile_cr("model", "same", "--to", "tflite")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = _errors(done)
    assert len(errors) == 2, done.stderr
    assert errors[0].startswith("Error: hop onnx2tf-tflite failed converting model:same@1.0.0 at op Flex"), errors[0]
    assert _nothing_added(cr_home, "same")


@pytest.mark.slow
def test_a_hop_failing_in_its_own_child_names_the_hop_and_the_op(compile_cr, cr_home, tmp_path):
    """The same SAME-padded net as a state dict, exported by the TorchScript exporter (-O dynamo=false):
    the export hop's child succeeds, the onnx2tf hop's child fails at a Flex op; the error names that
    hop, the record keeps the first hop with its environment, and nothing is left behind."""
    _needs_onnx2tf()
    torch = pytest.importorskip("torch")
    import hashlib

    from cr import api

    namespace: dict = {}
    exec(SAME_PADDED, namespace)
    torch.manual_seed(0)
    repo = make_repo(tmp_path / "r", "r")
    folder = repo / "model/same/1.0.0"
    folder.mkdir(parents=True)
    (folder / "net.py").write_text(SAME_PADDED + "\n\ndef build():\n    return Same()\n")
    torch.save(namespace["Same"]().state_dict(), folder / "net.pt")
    make_component(repo, "model", "same", format="torch-state-dict", file="net.pt",
                   files={p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()},
                   architecture={"file": "net.py", "factory": "build"},
                   inputs=[{"name": "input", "shape": [None, 1, 16, 16], "dtype": "float32", "layout": "NCHW"}],
                   outputs=[{"name": "logits", "shape": [None, 3], "dtype": "float32"}])
    api.repo_add(repo)
    out = tmp_path / "r.json"
    done = compile_cr("model", "same", "--to", "tflite", "-O", "dynamo=false", "-o", out)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = _errors(done)
    assert len(errors) == 2, done.stderr
    assert errors[0].startswith("Error: hop onnx2tf-tflite failed converting model:same@1.0.0 at op Flex"), errors[0]
    record = json.loads(out.read_text())
    assert record["status"] == "failed" and record["output"] is None
    assert [h["hop"] for h in record["path"]] == ["torch-export"] and record["path"][0]["passed"] is True
    assert "torch" in _names(record["path"][0]["environment"]["software"])
    assert _nothing_added(cr_home, "same") and not list((cr_home / "tmp").glob("compile-*"))
