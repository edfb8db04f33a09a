"""Model formats are open names: a new backend brings a new format without touching reefkit.

The first test follows docs/howto-add-a-backend.md step by step: a backend class with a
format no shipped backend knows, registered through the `cr.backends` entry-point group by
an installed distribution (a dist-info folder on PYTHONPATH, as pip would leave it), and a
model of that format in the user's repository, benchmarked with the real CLI and a real
child process. The others check what happens when nothing registered handles a format.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import make_component, make_repo

from cr.errors import CRError
from cr.runtime import registry, variants

QUICK = ["--min-duration", "0.1", "--min-queries", "50", "--warmup", "5"]

BACKEND = '''\
from cr.runtime.backends.base import Backend, check_inputs


class MatrixBackend(Backend):
    """Runs a model that is one weight matrix saved with numpy.save: y = x @ W."""

    name = "matrix"                   # the entry-point name
    FORMATS = ("npy-matrix",)         # a format no shipped backend loads
    REQUIRES = ()                     # numpy only, which the runtime has anyway

    def load(self, model_path, meta, options):
        import numpy as np            # the "framework": imported here, never at the top

        self._w = np.load(model_path)
        self._specs = [{"name": t["name"], "shape": t.get("shape"), "dtype": t["dtype"]} for t in meta["inputs"]]

    def inputs(self):
        return self._specs

    def run(self, batch):
        try:
            return [batch[self._specs[0]["name"]] @ self._w]
        except Exception:
            check_inputs(self._specs, batch)
            raise

    def close(self):
        self._w = None

    def info(self):
        return {"framework": "matrix", "version": "0.1"}
'''


def _distribution(site: Path) -> dict:
    """'mybackend 0.1' installed in site: its dist-info registers the backend; the env to use it."""
    info = site / "mybackend-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mybackend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[cr.backends]\nmatrix = mybackend_mod:MatrixBackend\n")
    (site / "mybackend_mod.py").write_text(BACKEND)
    return {"PYTHONPATH": str(site)}


def _matrix_model(tmp_path: Path) -> Path:
    """A user repository with model:tiny-matrix (format npy-matrix: a 4x3 float32 matrix)."""
    repo = make_repo(tmp_path / "myrepo", "myrepo")
    folder = repo / "model" / "tiny-matrix" / "1.0.0"
    folder.mkdir(parents=True)
    np.save(folder / "w.npy", np.arange(12, dtype=np.float32).reshape(4, 3))
    make_component(repo, "model", "tiny-matrix", format="npy-matrix", file="w.npy", task="regression",
                   inputs=[{"name": "x", "shape": [None, 4], "dtype": "float32"}],
                   outputs=[{"name": "y", "shape": [None, 3], "dtype": "float32"}],
                   files={"w.npy": hashlib.sha256((folder / "w.npy").read_bytes()).hexdigest()})
    return repo


def test_a_new_backend_brings_a_new_format_end_to_end(run_cr, tmp_path):
    env = _distribution(tmp_path / "site")
    repo = _matrix_model(tmp_path)
    assert run_cr("repo", "add", repo).returncode == 0

    done = run_cr("check", "model:tiny-matrix", env=env)
    assert done.returncode == 0 and "Warning" not in done.stderr, done.stderr
    assert "matrix" in run_cr("benchmark", "--help", env=env).stdout

    out = tmp_path / "r.json"
    done = run_cr("benchmark", "model", "tiny-matrix", "--backend", "matrix", *QUICK, "-o", out, env=env)
    assert done.returncode == 0, done.stderr
    r = json.loads(out.read_text())
    assert r["status"] == "ok" and r["config"]["backend"] == "matrix"
    assert r["backend"]["info"] == {"framework": "matrix", "version": "0.1"}
    assert r["backend"]["entry"] == "mybackend_mod:MatrixBackend" and r["backend"]["origin"] == "distribution mybackend 0.1"
    assert r["config"]["variant"] == "npy-matrix" and r["model_file"]["path"].endswith("w.npy")
    assert r["metrics"]["validity"] == "VALID" and r["metrics"]["queries"] >= 50


def test_a_format_nothing_registered_loads(run_cr, tmp_path):
    """Without the distribution: the meta is still valid, `cr check` warns, and running it
    says which format is missing and which backends exist, not just 'cannot load'."""
    repo = _matrix_model(tmp_path)
    assert run_cr("repo", "add", repo).returncode == 0

    done = run_cr("check", "model:tiny-matrix")
    assert done.returncode == 0, done.stderr
    assert "Warning: " in done.stderr and "/format: no registered backend loads the format 'npy-matrix'" in done.stderr
    assert "onnxruntime (onnx)" in done.stderr and "1 warning(s)" in done.stderr
    report = json.loads(run_cr("check", "model:tiny-matrix", "--json").stdout)
    assert report["ok"] and report["problems"] == []
    assert [w["pointer"] for w in report["warnings"]] == ["/format"]

    done = run_cr("benchmark", "model", "tiny-matrix", "--backend", "onnxruntime")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert ("Error: model:tiny-matrix@1.0.0 is in format 'npy-matrix', which no registered backend loads; "
            "backends: null (any format), onnxruntime (onnx)") in done.stderr
    assert "tflite (tflite)" in done.stderr and "Hint: " in done.stderr and "howto-add-a-backend" in done.stderr


@pytest.mark.parametrize("fmt", ["Onnx", "onnx ", "-onnx", "onnx--v2", "on/nx", "onnx\n", "x" * 65])
def test_a_malformed_format_name_is_a_schema_error(run_cr, tmp_path, fmt):
    repo = make_repo(tmp_path / "bad", "bad")
    meta = make_component(repo, "model", "odd", format=fmt)
    done = run_cr("check", meta)
    assert done.returncode == 1 and "/format" in done.stdout


def test_choosing_a_variant_names_the_unknown_format():
    meta = {"kind": "model", "name": "m", "format": "onnx", "variants": [{"name": "mine", "format": "my-format"}]}
    with pytest.raises(CRError) as info:
        variants.choose(meta, ("onnx",), "mine", backend="backend 'onnxruntime'", ref="model:m@1.0.0")
    assert "variant 'mine' of model:m@1.0.0 is in format 'my-format', which no registered backend loads" in info.value.message
    # a variant in a format some backend loads keeps the plain answer: use that backend
    with pytest.raises(CRError, match="which backend 'tflite' does not load"):
        variants.choose(meta, ("tflite",), "onnx", backend="backend 'tflite'", ref="model:m@1.0.0")
    assert variants.choose(meta, ("onnx",))["variant"] == "onnx"


def test_every_converter_format_is_loaded_by_a_registered_backend():
    """What cr compile reads or writes is a format some shipped backend runs."""
    loads = registry.formats()
    for to, reads in registry.converters().items():
        for fmt in (to, *reads):
            assert any(fmt in (declared or ()) for declared in loads.values()), fmt
    assert registry.format_problem("onnx") is None
    assert "'no-such-format'" in registry.format_problem("no-such-format")

