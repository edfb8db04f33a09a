"""The runtime: backend registry and contract checks, the child process and its failures,
the onnxruntime backend, model files and result records."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from array import array
from pathlib import Path

import numpy as np
import pytest

from cr.errors import CRError
from cr.runtime import registry
from cr.runtime.backends.base import InputMismatch, check_inputs
from cr.run import benchmark
from cr.results import record as records
from cr.runtime.model import locate

# Test-only backends, registered through CR_BACKENDS (never in the shipped entry points).
TEST_BACKENDS = '''
import os, sys, time
from cr.runtime.backends.null import NullBackend

class Abort(NullBackend):
    name = "abort"
    def load(self, model_path, meta, options):
        print("about to abort in the framework", file=sys.stderr, flush=True)
        os.abort()

class Hang(NullBackend):
    name = "hang"
    def load(self, model_path, meta, options):
        with open(os.environ["CR_TEST_PIDFILE"], "w") as f:
            f.write(str(os.getpid()))
        time.sleep(600)

class Exit3(NullBackend):
    name = "exit3"
    def load(self, model_path, meta, options):
        print("giving up", file=sys.stderr, flush=True)
        os._exit(3)

class Raises(NullBackend):
    name = "raises"
    def run(self, batch):
        raise RuntimeError("framework exploded")

class Spy(NullBackend):
    name = "spy"
    def info(self):
        return {"modules": sorted(sys.modules)}
'''

FAST = {"min_duration_s": 0, "min_queries": 20, "warmup_queries": 0}


@pytest.fixture
def test_backends(tmp_path, monkeypatch):
    root = tmp_path / "plugins"
    root.mkdir()
    (root / "crtest_backends.py").write_text(TEST_BACKENDS)
    names = ("abort", "hang", "exit3", "raises", "spy")
    monkeypatch.setenv(registry.ENV_VAR, ",".join(f"{n}=crtest_backends:{n.title()}" for n in names))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("CR_TEST_PIDFILE", str(tmp_path / "child.pid"))
    return tmp_path


# -- registry --------------------------------------------------------------------------

def test_shipped_backends_are_registered():
    chosen, conflicts = registry.entries()
    assert {"null", "onnxruntime"} <= set(chosen) and not conflicts
    assert chosen["null"].origin.startswith("distribution reefkit")


def test_listing_backends_imports_no_backend_module():
    code = "import sys; from cr.runtime import registry; registry.available(); registry.find('onnxruntime');" \
           "print(sorted(m for m in sys.modules if m.startswith(('onnxruntime', 'numpy', 'cr.runtime.backends'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_backend_lists_available():
    with pytest.raises(registry.BackendError) as info:
        registry.find("tensorflowz")
    assert "unknown backend 'tensorflowz'" in info.value.message
    assert "null" in info.value.hint and "onnxruntime" in info.value.hint


@pytest.fixture
def fake_dist(tmp_path, monkeypatch):
    """A distribution 'fakeplug 1.0' on sys.path registering broken backends."""
    site = tmp_path / "site"
    info = site / "fakeplug-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplug\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(textwrap.dedent("""\
        [cr.backends]
        null = fakeplug_mod:Whatever
        notaclass = fakeplug_mod:instance
        halfdone = fakeplug_mod:Half
        misnamed = fakeplug_mod:Named
        broken = fakeplug_broken:Anything
        missing = fakeplug_mod:Nope
        fine = fakeplug_mod:Fine
    """))
    (site / "fakeplug_mod.py").write_text(textwrap.dedent("""\
        class Fine:
            def load(self, model_path, meta, options): pass
            def inputs(self): return []
            def run(self, batch): return {}
            def close(self): pass
        class Half:
            def load(self, model_path, meta, options): pass
            def inputs(self): return []
        class Named(Fine):
            name = "other"
        instance = Fine()
    """))
    (site / "fakeplug_broken.py").write_text("import no_such_framework_here\n")
    monkeypatch.syspath_prepend(str(site))
    return site


def test_duplicate_backend_names_both_distributions(fake_dist):
    with pytest.raises(registry.BackendError) as info:
        registry.find("null")
    msg = info.value.message
    assert "registered more than once" in msg and "fakeplug 1.0" in msg and "reefkit" in msg
    assert registry.find("onnxruntime").origin.startswith("distribution reefkit")  # others still usable


@pytest.mark.parametrize("name, expected", [
    ("notaclass", r"entry point notaclass = 'fakeplug_mod:instance' of distribution fakeplug 1.0 is a Fine, not a class"),
    ("halfdone", r"class Half lacks the method\(s\) run, close"),
    ("misnamed", r"declares name 'other', registered as 'misnamed'"),
    ("broken", r"cannot be imported .*fakeplug 1.0.*ModuleNotFoundError"),
    ("missing", r"has no attribute 'Nope'"),
])
def test_contract_violations_name_the_entry_point(fake_dist, name, expected):
    with pytest.raises(registry.BackendError, match=expected) as info:
        registry.load_backend(name)
    assert "fakeplug" in info.value.message


def test_a_valid_plugin_loads(fake_dist):
    backend = registry.load_backend("fine")
    assert type(backend).__name__ == "Fine"


def test_malformed_env_var(monkeypatch):
    monkeypatch.setenv(registry.ENV_VAR, "oops-no-equals")
    with pytest.raises(registry.BackendError, match="CR_BACKENDS has a malformed entry"):
        registry.available()


# -- the onnxruntime backend -----------------------------------------------------------

IRIS_META = json.loads((Path(__file__).resolve().parent.parent / "repo/model/iris-logreg/1.0.0/meta.json").read_text())


@pytest.fixture
def iris():
    path = locate(IRIS_META, None, "model:iris-logreg")["path"]
    backend = registry.load_backend("onnxruntime")
    backend.load(path, IRIS_META, {"threads": 1, "graph_optimization_level": "basic"})
    yield backend
    backend.close()


def test_onnxruntime_runs_iris(iris):
    assert iris.inputs() == [{"name": "float_input", "shape": [3, 2], "dtype": "float32"}]
    x = np.array([[5.1, 3.5], [6.2, 2.9], [7.7, 3.0]], dtype=np.float32)  # first two iris features
    (labels,) = iris.run({"float_input": x})
    assert labels.shape == (3,) and set(labels.tolist()) <= {0, 1, 2}
    assert labels[0] == 0  # a short, wide sepal: setosa
    info = iris.info()
    assert info["framework"] == "onnxruntime" and "CPUExecutionProvider" in info["providers"]


@pytest.mark.parametrize("given, expected", [
    (np.zeros((3, 2), np.float64), "input 'float_input': expected float32 [3, 2], given float64 [3, 2]"),
    (np.zeros((4, 2), np.float32), "input 'float_input': expected float32 [3, 2], given float32 [4, 2]"),
    (np.zeros((3, 2, 1), np.float32), "input 'float_input': expected float32 [3, 2], given float32 [3, 2, 1]"),
])
def test_input_mismatch_names_the_input(iris, given, expected):
    with pytest.raises(InputMismatch) as info:
        iris.run({"float_input": given})  # the framework's own error is replaced by ours
    assert info.value.message == expected


def test_input_names_mismatch():
    with pytest.raises(InputMismatch, match="missing x; unexpected y"):
        check_inputs([{"name": "x", "shape": [1], "dtype": "float32"}], {"y": np.zeros(1, np.float32)})


def test_onnxruntime_options_are_checked():
    path = locate(IRIS_META, None)["path"]
    for options, expected in (
        ({"graph_optimization_level": "max"}, "graph_optimization_level"),
        ({"providers": ["tensorrt"]}, "no execution provider 'tensorrt'"),
    ):
        backend = registry.load_backend("onnxruntime")
        with pytest.raises(CRError, match=expected):
            backend.load(path, IRIS_META, options)


@pytest.mark.skipif("CUDAExecutionProvider" not in __import__("onnxruntime").get_available_providers(),
                    reason="no CUDA execution provider in this onnxruntime build (needs onnxruntime-gpu and an NVIDIA GPU)")
def test_onnxruntime_cuda_provider(iris):  # pragma: no cover - GPU hosts only
    backend = registry.load_backend("onnxruntime")
    backend.load(locate(IRIS_META, None)["path"], IRIS_META, {"providers": ["cuda", "cpu"]})
    assert backend.info()["providers"][0] == "CUDAExecutionProvider"


def test_model_file_from_an_installed_package():
    found = locate(IRIS_META, None)
    assert found["path"].endswith(os.path.join("onnxruntime", "datasets", "logreg_iris.onnx"))
    assert found["package"] == "onnxruntime" and found["package_version"]
    with pytest.raises(CRError, match="not installed"):
        locate({"source": {"package": "no-such-package-xyz", "path": "m.onnx"}}, None)
    with pytest.raises(CRError, match="has no file"):
        locate({"source": {"package": "onnxruntime", "path": "nope.onnx"}}, None)


# -- the child process -----------------------------------------------------------------

def test_child_runs_a_job_and_holds_only_the_runtime(test_backends):
    r = benchmark("model:iris-logreg", backend="spy", params=FAST)
    assert r["status"] == "ok", r["error"]
    modules = set(r["backend"]["info"]["modules"])
    assert "cr.runtime.harness" in modules and "numpy" in modules
    assert not modules & {"cr.store", "cr.api", "cr.store.index", "click", "jsonschema", "sqlite3", "cr.cli"}
    assert r["runtime"]["pid"] != os.getpid()
    assert r["metrics"]["queries"] == 20 == len(r["raw"]["latencies_ns"])


def test_abort_becomes_a_failed_result(test_backends):
    r = benchmark("model:iris-logreg", backend="abort", params=FAST)
    assert r["status"] == "failed" and r["metrics"] is None
    e = r["error"]
    assert e["kind"] == "crashed" and e["signal"] == 6 and e["signal_name"] == "SIGABRT"
    assert "about to abort in the framework" in e["stderr_tail"]
    assert e["message"] == "the runtime crashed: killed by SIGABRT"


def test_hang_becomes_a_timeout(test_backends):
    t0 = time.monotonic()
    r = benchmark("model:iris-logreg", backend="hang", params={**FAST, "timeout_s": 1.5})
    assert time.monotonic() - t0 < 10
    e = r["error"]
    assert r["status"] == "failed" and e["kind"] == "timeout" and e["timeout_s"] == 1.5
    pid = int((test_backends / "child.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped and reaped


def test_nonzero_exit_without_result(test_backends):
    r = benchmark("model:iris-logreg", backend="exit3", params=FAST)
    e = r["error"]
    assert e["kind"] == "crashed" and e["exit_status"] == 3 and "giving up" in e["message"]


def test_a_framework_exception_is_a_failed_result(test_backends):
    r = benchmark("model:iris-logreg", backend="raises", params=FAST)
    e = r["error"]
    assert e["kind"] == "error" and e["message"] == "RuntimeError: framework exploded"
    assert "Traceback" in e["traceback"]


def test_child_module_entry_point_works_directly(tmp_path):
    """python -m cr.runtime.child JOB RESULT, for debugging a job by hand."""
    entry = registry.find("null")
    job = {"entry": "cr.runtime.actions.benchmark:main", "params": {**FAST, "scenario": "offline"},
           "model": {"ref": "model:x", "meta": {"inputs": [{"name": "x", "shape": [None, 2], "dtype": "float32"}]}, "dir": None},
           "backend": {**entry.to_dict(), "options": {}}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    subprocess.run([sys.executable, "-m", "cr.runtime.child", "job.json", "result.json"], cwd=tmp_path, check=True)
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["status"] == "ok" and result["metrics"]["scenario"] == "offline"
    assert (tmp_path / "latencies.i64").stat().st_size == 8 * result["raw"]["count"]


def test_the_parent_imports_no_framework(tmp_path):
    code = ("import sys; from cr.run import benchmark;"
            "r = benchmark('model:iris-logreg', backend='onnxruntime', params=dict(min_duration_s=0, min_queries=5, warmup_queries=0));"
            "assert r['status'] == 'ok', r['error'];"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'onnxruntime')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# -- result records --------------------------------------------------------------------

def test_many_latencies_go_beside_the_record(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "INLINE_MAX", 10)
    record = {"uid": "x", "raw": {"latencies_ns": array("q", range(100, 125))}}
    path = records.write(record, tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert data["raw"]["latencies_ns_file"] == "r.latencies.i64" and data["raw"]["count"] == 25
    values = np.fromfile(tmp_path / "r.latencies.i64", dtype="<i8")
    assert values.tolist() == list(range(100, 125))
    small = records.write({"raw": {"latencies_ns": array("q", [1, 2])}}, tmp_path / "s.json")
    assert json.loads(small.read_text())["raw"] == {"latencies_ns": [1, 2]}
