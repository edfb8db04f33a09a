"""`cr check` opens every model file it can (cr.store.modelfiles) and flags what is not the
format its meta says: random bytes, a truncated download, the wrong kind of torch file.
Everything runs through the real CLI on real files: the shipped models, cut, or replaced by
random bytes, in a registered repository.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HEAVY, IMPORT_PROBE, ROOT, make_component, make_repo

from cr.store import modelfiles

LENET = ROOT / "repo" / "model" / "lenet-digits" / "1.0.0"


def _garbage(seed: int, size: int = 4096) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(size))


def _model(repo: Path, name: str, fmt: str, filename: str, data: bytes) -> Path:
    """A model component in repo whose file holds data, with a correct sha256: only the
    structural check can tell what is wrong with it."""
    comp = repo / "model" / name / "1.0.0"
    comp.mkdir(parents=True, exist_ok=True)
    (comp / filename).write_bytes(data)
    return make_component(repo, "model", name, format=fmt, file=filename, task="classification",
                          files={filename: hashlib.sha256(data).hexdigest()})


def _check(run_cr, *args):
    done = run_cr("check", *args)
    return done, json.loads(run_cr("check", *args, "--json").stdout)


@pytest.mark.parametrize("fmt, filename, expected", [
    ("onnx", "net.onnx", "not an ONNX model: the file is not a protobuf ModelProto"),
    ("tflite", "net.tflite", "not a TFLite model: no TFL3 file identifier at bytes 4..8"),
    ("torchscript", "net.pt", "not a TorchScript archive: the file is not a zip archive"),
    ("torch-state-dict", "net.pth", "not a torch file: the file is not a zip archive"),
    ("tf-frozen-graph", "net.pb", "not a TensorFlow frozen graph: the file is not a protobuf GraphDef"),
])
def test_random_bytes_are_flagged_naming_the_component_and_the_file(fmt, filename, expected, run_cr, tmp_path):
    repo = make_repo(tmp_path / "team", "team")
    meta = _model(repo, "noise", fmt, filename, _garbage(7))
    done, report = _check(run_cr, repo)
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = [l for l in done.stdout.splitlines() if expected in l]
    assert line.startswith(f"{meta}: /file: model:noise@1.0.0: {filename}: {expected}")
    assert "Traceback" not in done.stderr and "1 problem(s)" in done.stderr
    (entry,) = report["models"]
    assert entry["ref"] == "model:noise@1.0.0" and entry["path"] == filename and entry["ok"] is False
    assert entry["problem"].startswith(expected) and not report["ok"]


def test_a_truncated_onnx_file_is_flagged(run_cr, tmp_path):
    repo = make_repo(tmp_path / "team", "team")
    whole = (LENET / "lenet-digits.onnx").read_bytes()
    _model(repo, "cut", "onnx", "cut.onnx", whole[: len(whole) // 2])
    _model(repo, "whole", "onnx", "whole.onnx", whole)
    done, report = _check(run_cr, repo)
    assert done.returncode == 1
    by_ref = {m["ref"]: m for m in report["models"]}
    assert by_ref["model:whole@1.0.0"]["ok"] is True
    assert "runs past the end of the file" in by_ref["model:cut@1.0.0"]["problem"]
    assert "cut.onnx: not an ONNX model" in done.stdout and "whole.onnx" not in done.stdout


def test_a_torch_save_file_declared_torchscript_is_flagged(run_cr, tmp_path):
    """A state dict is a zip archive too, but without TorchScript's code/ and constants.pkl."""
    repo = make_repo(tmp_path / "team", "team")
    _model(repo, "sd", "torchscript", "sd.pt", (LENET / "lenet-digits.state_dict.pt").read_bytes())
    done, report = _check(run_cr, repo)
    assert done.returncode == 1
    assert "not a TorchScript archive: the archive has no" in report["models"][0]["problem"]


def test_every_shipped_model_file_passes_without_importing_a_framework(run_cr, tmp_path, cr_home):
    done, report = _check(run_cr, ROOT / "repo")
    assert done.returncode == 0, done.stdout + done.stderr
    opened = {(m["ref"], m["path"]): m for m in report["models"]}
    assert all(m["ok"] for m in opened.values()), [m for m in opened.values() if not m["ok"]]
    lenet = {path for ref, path in opened if ref == "model:lenet-digits@1.0.0"}
    assert lenet == {"lenet-digits.onnx", "lenet-digits.torchscript.pt", "lenet-digits.state_dict.pt",
                     "lenet-digits.tflite", "lenet-digits.int8.tflite"}
    assert ("model:ssdlite-mobilenet-v2-person@1.0.0", "ssdlite-mobilenet-v2-person.onnx") in opened
    assert f"and {len(report['models'])} model file(s): all valid" in done.stderr
    # the whole check (every repository) reads them with no framework imported, onnx included
    decoys = tmp_path / "decoys"
    for name in HEAVY + ("onnx",):
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text("")
    out = tmp_path / "modules.json"
    probe = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(out), json.dumps(["check"])],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "CR_HOME": str(cr_home), "PYTHONPATH": str(decoys)})
    result = json.loads(out.read_text())
    assert result["code"] in (0, None), probe.stderr
    top = {m.split(".")[0] for m in result["modules"]}
    assert not top & set(HEAVY + ("onnx",)), sorted(top & set(HEAVY + ("onnx",)))


def test_structure_checks_on_real_containers(tmp_path):
    """The parsers themselves: a SavedModel directory, legacy torch files, formats not judged."""
    saved = tmp_path / "sm"
    saved.mkdir()
    assert modelfiles.problem("savedmodel", saved) == "not a SavedModel: the directory holds no saved_model.pb"
    (saved / "saved_model.pb").write_bytes(_garbage(3))
    assert modelfiles.problem("savedmodel", saved).startswith("not a SavedModel: saved_model.pb is not a protobuf SavedModel")
    # a SavedModel proto: schema version 1, one (empty) meta graph
    (saved / "saved_model.pb").write_bytes(b"\x08\x01\x12\x00")
    assert modelfiles.problem("savedmodel", saved) is None
    legacy = tmp_path / "old.pth"  # torch.save before 1.6 starts with its magic number, pickled
    legacy.write_bytes(b"\x80\x02\x8a\nl\xfc\x9cF\xf9 j\xa8P\x19." + _garbage(1, 64))
    assert modelfiles.problem("torch-state-dict", legacy) is None
    assert modelfiles.problem("torchscript", legacy).startswith("not a TorchScript archive")
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert modelfiles.problem("onnx", empty).endswith("(the file is empty)")
    assert modelfiles.problem("tflite", empty).startswith("not a TFLite model: no TFL3 file identifier")
    plan = tmp_path / "engine.plan"
    plan.write_bytes(_garbage(2))
    assert modelfiles.checked_format("trt-plan", plan) is None and modelfiles.problem("trt-plan", plan) is None
    # an unknown format name is judged by the file's suffix
    odd = tmp_path / "x.onnx"
    odd.write_bytes(_garbage(4))
    assert modelfiles.problem("my-onnx-flavour", odd).startswith("not an ONNX model")


def test_deep_runs_the_onnx_checker_on_what_the_structure_passes(run_cr, tmp_path):
    """A well-formed ModelProto whose node is no ONNX operator: the structure passes, and
    --deep's onnx.checker names what is wrong."""
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    node = helper.make_node("NoSuchOp", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    repo = make_repo(tmp_path / "team", "team")
    _model(repo, "odd", "onnx", "odd.onnx", model.SerializeToString())
    _model(repo, "lenet", "onnx", "lenet.onnx", (LENET / "lenet-digits.onnx").read_bytes())
    done, report = _check(run_cr, repo)
    assert done.returncode == 0 and all(m["ok"] for m in report["models"]), done.stdout + done.stderr
    done, report = _check(run_cr, repo, "--deep")
    assert done.returncode == 1
    by_ref = {m["ref"]: m for m in report["models"]}
    assert by_ref["model:lenet@1.0.0"]["ok"] is True
    assert by_ref["model:odd@1.0.0"]["problem"].startswith("not a valid ONNX model: onnx.checker: ")
    assert "NoSuchOp" in by_ref["model:odd@1.0.0"]["problem"]
    (line,) = [l for l in done.stdout.splitlines() if "odd.onnx" in l]
    assert "model:odd@1.0.0: odd.onnx: not a valid ONNX model: onnx.checker:" in line
