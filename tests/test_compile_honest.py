"""Compiled models are honest: `cr compile` end to end on a user's own models, built here.

- an ONNX graph that writes its dynamic batch as -1 (as Paddle exports do) is read as
  dynamic, so static and dynamic int8 quantisation get the batches they need;
- a conversion whose check against its source is below its threshold fails (exit 1, one
  Error: line naming the check and the threshold, nothing registered) unless
  --allow-degraded, and the registered output then validates FAIL, never UNCHECKED;
- expected metrics carry over (fp32 as they are, int8 widened), so `cr validate` on a
  compiled version says PASS or FAIL;
- a plain `model:NAME` keeps meaning the source after a compile.

The models are numpy-built ONNX graphs (onnx.helper) and a seeded torch net; the dataset is
an npz component of two well-separated classes in 4 dimensions.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from conftest import make_component, make_repo

np = pytest.importorskip("numpy")

SIGNS = np.array([1.0, 1.0, -1.0, -1.0], np.float32)  # class 0 lies along +SIGNS, class 1 along -SIGNS
IO = {
    "inputs": [{"name": "x", "shape": [None, 4], "dtype": "float32", "layout": "NC"}],
    "outputs": [{"name": "logits", "shape": [None, 2], "dtype": "float32", "layout": "NC"}],
    "preprocess": [{"op": "cast", "dtype": "float32"}],
    "dataset": {"ref": "dataset:pairs@1.0.0", "split": "test"},
    "task": "classification",
}
EXPECTED = {"top1": {"value": 1.0, "abs": 0.01}}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _data(n: int = 100):
    """Two classes, 1.5 * +-SIGNS plus noise 0.3: far from the boundary (every model here gets them all right)."""
    rng = np.random.default_rng(11)
    y = np.arange(n) % 2
    x = (np.where(y[:, None] == 0, 1.5, -1.5) * SIGNS + rng.normal(0, 0.3, (n, 4))).astype(np.float32)
    return x, y


def _repo(tmp_path: Path) -> Path:
    """A registered repo 'mine' holding dataset:pairs (npz, every 5th sample in the test split)."""
    from cr import api

    repo = make_repo(tmp_path / "mine", "mine")
    folder = repo / "dataset/pairs/1.0.0"
    folder.mkdir(parents=True)
    x, y = _data()
    np.savez(folder / "pairs.npz", x=x, y=y)
    make_component(repo, "dataset", "pairs", format="npz", source={"file": "pairs.npz"}, samples=len(y),
                   split_by={"modulo": 5, "test_remainder": 0}, sample={"shape": [4], "dtype": "float32"},
                   labels=["plus", "minus"], files={"pairs.npz": _sha(folder / "pairs.npz")})
    api.repo_add(repo)
    return repo


def _onnx_net(path: Path, near_tie: bool = False, batch=-1) -> None:
    """x [batch, 4] -> relu(x @ [I, -I]) [batch, 8] -> @ W2 + b2 -> logits [batch, 2], batch written as a dim_value.

    W2 scores +SIGNS against -SIGNS. near_tie: both logits also get 10 * sum|x| and the
    separating part shrinks to 0.002 of it, so the logits differ by ~0.1% (fp32 still
    tells them apart; int8, one scale for both, cannot)."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w1 = np.concatenate([np.eye(4), -np.eye(4)], axis=1).astype(np.float32)
    score = np.concatenate([SIGNS, -SIGNS])  # relu(x) . SIGNS - relu(-x) . SIGNS = x . SIGNS
    w2 = np.stack([score, -score], axis=1).astype(np.float32)
    if near_tie:
        w2 = (10.0 + 0.002 * w2).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Relu", ["h0"], ["h"]),
        helper.make_node("MatMul", ["h", "w2"], ["z"]),
        helper.make_node("Add", ["z", "b2"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "user-net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, 2])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(np.zeros(2, np.float32), "b2")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def _onnx_component(repo: Path, name: str, near_tie: bool = False) -> Path:
    folder = repo / "model" / name / "1.0.0"
    folder.mkdir(parents=True)
    _onnx_net(folder / "net.onnx", near_tie)
    return make_component(repo, "model", name, format="onnx", file="net.onnx", files={"net.onnx": _sha(folder / "net.onnx")},
                          expected=EXPECTED, **IO)


def _json(done) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _errors(done) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error: ")]


# ------------------------------------------------------------------------- no frameworks

def test_dynamic_dims_are_none_everywhere_cr_reads_them():
    from cr.runtime.actions.compile import _dim
    from cr.runtime.backends import onnxruntime as ort_backend

    for dynamic in (-1, 0, None, "N", "batch_size", True):
        assert _dim(dynamic) is None and ort_backend._dim(dynamic) is None
    assert _dim(3) == 3 and ort_backend._dim(1) == 1


def test_int8_thresholds_are_options_with_documented_defaults():
    from cr.errors import CRError
    from cr.runtime.actions.compile import plan

    for mode in ("dynamic", "static"):
        applied = plan("onnx", "onnx", quantization=mode)["options"]
        assert applied["min_top1_agreement"] == 0.95 and applied["expected_margin"] == 0.02
    assert plan("keras", "tflite", "int8")["options"]["min_top1_agreement"] == 0.95
    assert plan("onnx", "onnx", quantization="static", options={"min_top1_agreement": 0.5})["options"]["min_top1_agreement"] == 0.5
    fp32 = plan("torchscript", "onnx")["options"]
    assert fp32["atol"] == 1e-3 and fp32["expected_margin"] == 0.0 and "min_top1_agreement" not in fp32
    with pytest.raises(CRError, match="has no option min_top1_agreement"):
        plan("torchscript", "onnx", options={"min_top1_agreement": 0.9})  # fp32 is judged by atol
    with pytest.raises(CRError, match="option min_top1_agreement is 1.5"):
        plan("onnx", "onnx", quantization="dynamic", options={"min_top1_agreement": 1.5})
    with pytest.raises(CRError, match="option atol is 'big'"):
        plan("onnx", "onnx", options={"atol": "big"})


def test_expected_metrics_carry_over_with_a_margin():
    from cr.run.compile import carried_expected

    expected = {"top1": {"value": 0.9, "abs": 0.05}, "top5": {"value": 0.99}, "detections": {"value": 3, "abs": 0}}
    assert carried_expected(expected, 0.0) == expected
    assert carried_expected(expected, 0.02) == {"top1": {"value": 0.9, "abs": 0.07}, "top5": {"value": 0.99, "abs": 0.02},
                                                "detections": {"value": 3, "abs": 0}}  # a count keeps its tolerance


def test_a_plain_ref_means_the_source_not_its_newest_compile(cr_home):
    from cr import api

    for version in ("1.0.0", "1.0.0+onnx", "1.0.0+onnx.int8.static", "2.0.0+onnx"):
        api.new("model", "m", version=version)
    assert api.resolve("model:m").version == "1.0.0"
    assert api.show("model:m")["version"] == "1.0.0"
    assert api.resolve("model:m@1.0.0").version == "1.0.0"
    assert api.resolve("model:m@>=1").version == "1.0.0"
    assert api.resolve("model:m@1.0.0+onnx").version == "1.0.0+onnx"  # a label is chosen explicitly, exactly
    assert api.resolve("model:m@==1.0.0+onnx.int8.static").version == "1.0.0+onnx.int8.static"
    assert api.resolve("model:m@===1.0.0").version == "1.0.0"
    from cr.store.catalog import matching

    # the rest of the list, for callers that look for a loadable format: unlabelled first, then labelled, newest first
    assert [c.version for c in matching("model:m")] == ["1.0.0", "2.0.0+onnx", "1.0.0+onnx.int8.static", "1.0.0+onnx"]
    api.new("model", "only-compiled", version="1.0.0+onnx")
    api.new("model", "only-compiled", version="1.1.0+onnx")
    assert api.resolve("model:only-compiled").version == "1.1.0+onnx"  # nothing unlabelled: the newest
    api.new("model", "m", version="1.1.0")
    assert api.resolve("model:m").version == "1.1.0"  # newest unlabelled


# ------------------------------------------------------------------------------ onnx int8

@pytest.mark.slow
def test_a_minus_one_batch_quantises_static_and_dynamic(run_cr, tmp_path):
    pytest.importorskip("onnxruntime.quantization")
    onnx = pytest.importorskip("onnx")
    from cr.runtime.actions.compile import _onnx_dim
    from cr.runtime.backends.onnxruntime import OnnxruntimeBackend

    repo = _repo(tmp_path)
    _onnx_component(repo, "paddled")
    source = repo / "model/paddled/1.0.0/net.onnx"
    dims = onnx.load(str(source)).graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [-1, 4] and [_onnx_dim(d) for d in dims] == [None, 4]
    backend = OnnxruntimeBackend()
    backend.load(str(source), {"outputs": IO["outputs"]}, {})
    assert backend.inputs() == [{"name": "x", "shape": [None, 4], "dtype": "float32"}]
    assert backend.outputs() == [{"name": "logits", "shape": [None, 2], "dtype": "float32"}]
    backend.close()

    for mode in ("static", "dynamic"):
        done = run_cr("compile", "model", "paddled", "--to", "onnx", "--quantization", mode, "--json", timeout=300)
        record = _json(done)
        assert record["status"] == "ok" and record["failed_checks"] == []
        check = record["checks"]["quantize"]
        assert check["top1_agreement"] == 1.0 and check["min_top1_agreement"] == 0.95 and check["passed"] is True
        assert check["samples"] == 80  # the whole train split (100 - 20), not a batch of -1
        if mode == "static":
            assert record["checks"]["calibration"]["samples"] == 80
        ref = record["output"]["ref"]
        assert ref == f"model:paddled@1.0.0+onnx.int8.{mode}"
        meta = _json(run_cr("show", ref, "--json"))["meta"]
        assert meta["inputs"][0]["shape"] == [None, 4] and meta["outputs"][0]["shape"] == [None, 2]
        # the source's expected metrics, with the int8 margin; the source's own kept in provenance
        assert meta["expected"] == {"top1": {"value": 1.0, "abs": 0.03}}
        assert meta["provenance"]["source_expected"] == EXPECTED and meta["provenance"]["expected_margin"] == 0.02
        assert "degraded" not in meta["tags"] and "degraded" not in meta["provenance"]
        validation = _json(run_cr("validate", "model", ref, "--backend", "onnxruntime", "--json", timeout=300))["validation"]
        assert validation["outcome"] == "PASS" and validation["top1"] == 1.0

    # after compiling, the plain ref shows the source
    shown = _json(run_cr("show", "model:paddled", "--json"))
    assert shown["version"] == "1.0.0" and shown["repo"] == "mine" and "compiled" not in shown["meta"]["tags"]


@pytest.mark.slow
def test_a_degraded_int8_compile_fails_and_registers_nothing(run_cr, cr_home, tmp_path):
    pytest.importorskip("onnxruntime.quantization")
    from cr import api

    repo = _repo(tmp_path)
    _onnx_component(repo, "tie", near_tie=True)
    source_top1 = _json(run_cr("validate", "model", "tie", "--backend", "onnxruntime", "--json"))["validation"]
    assert source_top1["outcome"] == "PASS" and source_top1["top1"] == 1.0  # fp32 tells the classes apart

    out = tmp_path / "failed.json"
    done = run_cr("compile", "model", "tie", "--to", "onnx", "--quantization", "static", "-o", out, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    errors = _errors(done)
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("Error: the int8 model's top-1 agrees with its source's on 0.500 of 80 check samples, "
                                "below min_top1_agreement 0.95 (check quantize.top1_agreement)"), errors[0]
    assert "--allow-degraded" in done.stderr.split("Hint: ", 1)[1]
    record = json.loads(out.read_text())
    assert record["status"] == "failed" and record["output"] is None
    assert record["error"]["kind"] == "check"
    [failed] = record["failed_checks"]
    assert record["error"]["checks"] == record["failed_checks"]
    assert failed["check"] == "quantize" and failed["metric"] == "top1_agreement"
    assert failed["value"] == 0.5 and failed["threshold"] == 0.95 and failed["option"] == "min_top1_agreement"
    assert record["checks"]["quantize"]["passed"] is False and record["checks"]["quantize"]["min_top1_agreement"] == 0.95
    assert [c.version for c in api.find("model", name="tie")] == ["1.0.0"]  # nothing registered
    local = cr_home / "local/model/tie"
    assert not local.exists() or not any(local.iterdir())  # no staging leftovers either

    # the threshold is an option: lowered, the same model compiles
    done = run_cr("compile", "model", "tie", "--to", "onnx", "--quantization", "static", "-O", "min_top1_agreement=0.4",
                  "--version", "1.0.0+lowered", "--json", timeout=300)
    assert _json(done)["status"] == "ok"

    # --allow-degraded registers it, says so, and records the failed check
    done = run_cr("compile", "model", "tie", "--to", "onnx", "--quantization", "static", "--allow-degraded", timeout=300)
    assert done.returncode == 0, done.stderr
    assert "top-1 agreement 0.500 (min 0.95) on 80 samples: FAILED" in done.stdout
    assert "model:tie@1.0.0+onnx.int8.static is registered although it fails its check" in done.stderr
    ref = "model:tie@1.0.0+onnx.int8.static"
    meta = _json(run_cr("show", ref, "--json"))["meta"]
    assert "degraded" in meta["tags"]
    [degraded] = meta["provenance"]["degraded"]
    assert degraded["metric"] == "top1_agreement" and degraded["value"] == 0.5 and degraded["threshold"] == 0.95
    assert meta["expected"] == {"top1": {"value": 1.0, "abs": 0.03}}

    # validating it measures the damage against the carried-over expectation: FAIL, not UNCHECKED
    out = tmp_path / "validate.json"
    done = run_cr("validate", "model", ref, "--backend", "onnxruntime", "-o", out, timeout=300)
    assert done.returncode == 1
    validation = json.loads(out.read_text())["validation"]
    assert validation["outcome"] == "FAIL" and validation["top1"] == 0.5
    assert "Error: accuracy outside tolerance: top1 0.5000, expected 1.0000 +- 0.0300" in done.stderr

    # and the plain ref still means the source
    assert _json(run_cr("show", "model:tie", "--json"))["version"] == "1.0.0"
    assert api.resolve("model:tie").version == "1.0.0"


# ------------------------------------------------------------------------------ torch fp32

@pytest.mark.slow
def test_fp32_onnx_from_torch_keeps_expected_and_validates(run_cr, tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    repo = _repo(tmp_path)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x, y = _data()
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    optimizer = torch.optim.Adam(net.parameters(), lr=0.05)
    for _ in range(40):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(net(xs), ys).backward()
        optimizer.step()
    net.eval()
    with torch.no_grad():
        assert (net(xs).argmax(1) == ys).float().mean().item() == 1.0
    folder = repo / "model/tnet/1.0.0"
    folder.mkdir(parents=True)
    torch.jit.trace(net, torch.zeros(2, 4)).save(str(folder / "net.pt"))
    make_component(repo, "model", "tnet", format="torchscript", file="net.pt", files={"net.pt": _sha(folder / "net.pt")},
                   expected=EXPECTED, deps=["software:torch@>=2"], **IO)

    record = _json(run_cr("compile", "model", "tnet", "--to", "onnx", "--json", timeout=300))
    check = record["checks"]["export"]
    assert record["failed_checks"] == [] and check["passed"] is True and check["atol"] == 1e-3 and check["max_abs_diff"] < 1e-4
    ref = record["output"]["ref"]
    assert ref == "model:tnet@1.0.0+onnx"
    meta = _json(run_cr("show", ref, "--json"))["meta"]
    assert meta["expected"] == EXPECTED and "source_expected" not in meta["provenance"]
    validation = _json(run_cr("validate", "model", ref, "--backend", "onnxruntime", "--json", timeout=300))["validation"]
    assert validation["outcome"] == "PASS" and validation["top1"] == 1.0

    # the plain ref is the torchscript source; onnxruntime, which cannot load it, takes the compile
    shown = _json(run_cr("show", "model:tnet", "--json"))
    assert shown["version"] == "1.0.0" and shown["meta"]["format"] == "torchscript"
    done = run_cr("validate", "model", "tnet", "--backend", "onnxruntime", "--json", timeout=300)
    result = _json(done)
    assert result["components"][0]["ref"] == ref and result["validation"]["outcome"] == "PASS"
