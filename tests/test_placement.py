"""Where the work ran: every record states the placement its framework reports, and
--require-placement fails a run that did not get the provider it asked for (docs/placement.md)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cr.errors import CRError
from cr.runtime import placement as P

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import browser, page  # noqa: E402,F401  (fixtures)

ROOT = Path(__file__).resolve().parents[1]
LENET = ROOT / "repo" / "model" / "lenet-digits" / "1.0.0"
QUICK = ["--min-duration", "0.05", "--min-queries", "20", "--max-duration", "1", "--warmup", "2", "--no-store"]


def _bench(run_cr, tmp_path, *args, name="r.json"):
    out = tmp_path / name
    done = run_cr("benchmark", "model:lenet-digits", *QUICK, "-o", out, *args)
    record = json.loads(out.read_text()) if out.is_file() else None
    return done, record


def _one_error(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("INFO:")]
    errors = [line for line in lines if line.startswith("Error:")]
    assert len(errors) == 1 and any(line.startswith("Hint:") for line in lines), stderr
    assert "Traceback" not in stderr, stderr
    return errors[0]


# -- onnxruntime -------------------------------------------------------------------------------

def test_onnxruntime_on_cpu_records_every_node_on_the_cpu_provider(run_cr, tmp_path):
    onnx = pytest.importorskip("onnx")
    done, record = _bench(run_cr, tmp_path, "--backend", "onnxruntime")
    assert done.returncode == 0, done.stderr
    p = record["placement"]
    graph_nodes = len(onnx.load(str(LENET / "lenet-digits.onnx")).graph.node)
    assert p["backend"] == "onnxruntime" and p["unit"] == "nodes"
    assert p["by_provider"] == {"CPUExecutionProvider": graph_nodes} and p["nodes"] == graph_nodes
    assert p["share"] == {"CPUExecutionProvider": 1.0}
    assert "get_provider_graph_assignment_info" in p["how"]
    assert "CPUExecutionProvider 9 of 9 nodes (100%)" in done.stdout  # the benchmark table says it too


def test_requiring_a_provider_this_machine_lacks_is_one_error_naming_what_exists(run_cr, tmp_path):
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("this machine has CUDA: the refusal needs a machine without it")
    done, record = _bench(run_cr, tmp_path, "--backend", "onnxruntime", "--require-placement", "CUDAExecutionProvider:0.95")
    assert done.returncode == 1
    error = _one_error(done.stderr)
    assert "CUDAExecutionProvider" in error and "available: " in error and "CPUExecutionProvider" in error
    assert record["status"] == "failed" and record["metrics"] is None  # no CPU numbers reported instead


def test_a_malformed_requirement_is_refused_before_anything_runs(run_cr, tmp_path):
    done, record = _bench(run_cr, tmp_path, "--backend", "onnxruntime", "--require-placement", "cuda:1.5")
    assert done.returncode == 1 and record is None
    assert "cuda:1.5" in _one_error(done.stderr)


def test_a_provider_that_takes_no_node_fails_the_run_with_the_placement_found(run_cr, tmp_path):
    """A real silent fallback: ONNX Runtime's Azure provider starts, but claims none of a plain
    CNN's nodes, so every node runs on the CPU (onnxruntime #23372 asks for exactly this error)."""
    import onnxruntime

    if "AzureExecutionProvider" not in onnxruntime.get_available_providers():
        pytest.skip("this onnxruntime build has no AzureExecutionProvider")
    done, record = _bench(run_cr, tmp_path, "--backend", "onnxruntime", "-O", 'providers=["azure", "cpu"]',
                          "--require-placement", "azure:50%")
    assert done.returncode == 1
    error = _one_error(done.stderr)
    assert "placement requirement not met" in error and "azure ran 0.0% of the nodes, at least 50% required" in error
    assert "CPUExecutionProvider 9 of 9 nodes (100%)" in error
    assert record["status"] == "failed" and record["metrics"] is None and record.get("raw") is None
    assert record["placement"]["by_provider"] == {"CPUExecutionProvider": 9}  # the failed record says where it ran
    assert record["placement"]["verdict"] == "not met"
    # without the requirement the same run succeeds, and its record says where the nodes went
    done, record = _bench(run_cr, tmp_path, "--backend", "onnxruntime", "-O", 'providers=["azure", "cpu"]', name="ok.json")
    assert done.returncode == 0, done.stderr
    assert record["placement"]["requested"] == ["AzureExecutionProvider", "CPUExecutionProvider"]
    assert record["placement"]["by_provider"] == {"CPUExecutionProvider": 9}


# -- tflite ------------------------------------------------------------------------------------

def test_tflite_records_delegated_and_cpu_ops_and_a_partial_delegation_fails_a_full_requirement(run_cr, tmp_path):
    done, record = _bench(run_cr, tmp_path, "--backend", "tflite")
    assert done.returncode == 0, done.stderr
    p = record["placement"]
    assert p["unit"] == "ops" and set(p["by_provider"]) == {"XNNPACK", "CPU"}
    assert p["by_provider"]["XNNPACK"] + p["by_provider"]["CPU"] == p["nodes"]
    # XNNPACK takes the convolutions and dense layers; the dynamic reshape's shape arithmetic stays on the CPU
    assert p["by_provider"]["XNNPACK"] >= 5 and "SHAPE" in p["fallback_ops"] and "CONV_2D" not in p["fallback_ops"]
    assert p["delegate_kernels"] >= 1
    share = p["by_provider"]["XNNPACK"] / p["nodes"]

    # the same model asked to run wholly on XNNPACK: it does not, so the run fails, saying how much it got
    done, failed = _bench(run_cr, tmp_path, "--backend", "tflite", "--require-placement", "xnnpack", name="f.json")
    assert done.returncode == 1 and failed["status"] == "failed" and failed["metrics"] is None
    error = _one_error(done.stderr)
    assert f"ran {share:.1%} of the ops, at least 100% required" in error and "SHAPE x1" in error

    # a share it does reach passes, and the record keeps the verdict and its rule
    done, met = _bench(run_cr, tmp_path, "--backend", "tflite", "--require-placement", f"xnnpack:{share - 0.01:.2f}", name="m.json")
    assert done.returncode == 0, done.stderr
    assert met["placement"]["verdict"] == "met" and "SHARE" in met["placement"]["rule"]


def test_tflite_without_xnnpack_runs_every_op_on_its_cpu_kernels():
    from cr.runtime.backends.tflite import TfliteBackend

    backend = TfliteBackend()
    backend.load(str(LENET / "lenet-digits.tflite"), {}, {"xnnpack": False})
    try:
        p = P.record(backend, "tflite", P.parse("cpu"))
    finally:
        backend.close()
    assert p["by_provider"] == {"CPU": p["nodes"]} and p["delegate_kernels"] == 0 and p["verdict"] == "met"
    assert P.unmet(P.record(_Fixed(p), "tflite", P.parse("xnnpack:0.1"))) is not None


def test_delegated_ops_follows_a_delegate_kernel_back_to_its_inputs():
    from cr.runtime.backends.tflite import delegated_ops

    # op 0 (CPU) -> t1; ops 1, 2 replaced by the DELEGATE kernel t1 -> t3; op 3 (CPU) reads t3
    details = [
        {"index": 0, "op_name": "SHAPE", "inputs": [0], "outputs": [1]},
        {"index": 1, "op_name": "CONV_2D", "inputs": [1, 10, 11], "outputs": [2]},
        {"index": 2, "op_name": "RELU", "inputs": [2], "outputs": [3]},
        {"index": 3, "op_name": "RESHAPE", "inputs": [3, 1], "outputs": [4]},
        {"index": 4, "op_name": "DELEGATE", "inputs": [1, 10, 11], "outputs": [3]},
    ]
    assert delegated_ops(details) == ({1, 2}, 1)


# -- torch, the requirement's rule -------------------------------------------------------------

def test_torch_records_the_device_of_every_weight():
    from cr.runtime.backends.torch import TorchBackend

    meta = json.loads((LENET / "meta.json").read_text())
    backend = TorchBackend()
    backend.load(str(LENET / "lenet-digits.torchscript.pt"), {**meta, "format": "torchscript"}, {})
    try:
        p = P.record(backend, "torch", P.parse("cpu"))
        weights = len(list(backend.model.parameters())) + len(list(backend.model.buffers()))
    finally:
        backend.close()
    assert p["by_provider"] == {"cpu": weights} and p["nodes"] == weights > 0 and p["verdict"] == "met"


class _Fixed:
    """A backend whose placement() returns a captured one."""

    def __init__(self, placement: dict):
        self._p = {k: v for k, v in placement.items() if k not in ("backend", "share", "required", "verdict", "rule")}

    def placement(self):
        return dict(self._p)


# Captured from this machine: onnxruntime 1.32 on lenet-digits with providers [azure, cpu]
# (placement() as the record keeps it).
ORT_FALLBACK = {"unit": "nodes", "requested": ["AzureExecutionProvider", "CPUExecutionProvider"],
                "by_provider": {"CPUExecutionProvider": 9}, "nodes": 9,
                "fallback_ops": {"Relu": 3, "Conv": 2, "Gemm": 2, "MaxPool": 1, "Flatten": 1}}


def test_the_rule_judges_shares_against_the_providers_a_name_matches():
    partly = {"unit": "nodes", "requested": ["CUDAExecutionProvider", "CPUExecutionProvider"],
              "by_provider": {"CUDAExecutionProvider": 90, "CPUExecutionProvider": 10}, "nodes": 100,
              "fallback_ops": {"NonMaxSuppression": 1, "TopK": 9}}
    judged = P.record(_Fixed(partly), "onnxruntime", P.parse("cuda:0.95"))
    assert judged["required"][0]["share"] == 0.9 and judged["verdict"] == "not met"
    error = P.unmet(judged)
    assert "cuda (CUDAExecutionProvider) ran 90.0% of the nodes, at least 95% required" in error.message
    assert "TopK x9" in error.message and error.placement is judged
    assert P.unmet(P.record(_Fixed(partly), "onnxruntime", P.parse("CUDAExecutionProvider:90%"))) is None
    assert P.unmet(P.record(_Fixed(partly), "onnxruntime", P.parse("gpu:0.9"))) is None

    # a provider the session was never asked for: the hint says how to ask for it
    error = P.unmet(P.record(_Fixed(ORT_FALLBACK), "onnxruntime", P.parse("tensorrt")))
    assert "tensorrt ran 0.0% of the nodes" in error.message and "was not requested" in error.hint
    # a framework that cannot say how much each provider got never passes a requirement
    unknown = P.record(_Fixed({"unit": "nodes", "by_provider": None, "nodes": None, "how": "old build"}), "onnxruntime",
                       P.parse("cpu"))
    assert "does not say" in P.unmet(unknown).message


@pytest.mark.parametrize("text, parsed", [
    ("CUDAExecutionProvider:0.95", [("CUDAExecutionProvider", 0.95)]),
    ("cuda:95%", [("cuda", 0.95)]),
    ("xnnpack", [("xnnpack", 1.0)]),
    ("cuda:1:1.0", [("cuda:1", 1.0)]),
    ("cuda:0.5, cpu:0.5", [("cuda", 0.5), ("cpu", 0.5)]),
])
def test_requirement_syntax(text, parsed):
    assert [(r["name"], r["min_share"]) for r in P.parse(text)] == parsed


@pytest.mark.parametrize("text", ["cuda:0", "cuda:1.5", "cuda:150%", ":0.5", "cuda,cuda", "cu da"])
def test_malformed_requirements_name_the_bad_part(text):
    with pytest.raises(CRError) as info:
        P.parse(text)
    assert repr(text) in info.value.message and info.value.hint


def test_availability_is_checked_against_what_the_framework_lists():
    P.check_available("onnxruntime", P.parse("cpu"), ["CPUExecutionProvider"])
    with pytest.raises(CRError, match=r"no CUDAExecutionProvider on this machine \(available: CPUExecutionProvider\)"):
        P.check_available("onnxruntime", P.parse("CUDAExecutionProvider"), ["CPUExecutionProvider"])


# -- TensorRT (no GPU here: the inspector's output is a captured one) ---------------------------

# An excerpt (three layers, trimmed to the fields read) of a real TensorRT engine inspector
# output, IEngineInspector.get_engine_information(LayerInformationFormat.JSON) at DETAILED
# verbosity, as NVIDIA's trt-engine-explorer keeps it in its test inputs
# (tests/inputs/mobilenet.qat.onnx.engine.graph.json).
TRT_INSPECTOR = json.dumps({"Layers": [
    {"Name": "QuantizeLinear_2", "LayerType": "Reformat", "Inputs": [{"Name": "input1", "Location": "Device"}],
     "Outputs": [{"Name": "317", "Location": "Device"}], "ParameterType": "Reformat", "Origin": "QDQ"},
    {"Name": "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)", "LayerType": "CaskConvolution",
     "Inputs": [{"Name": "317", "Location": "Device"}], "Outputs": [{"Name": "334", "Location": "Device"}],
     "ParameterType": "Convolution"},
    {"Name": "features.1.conv.0.0.weight + QuantizeLinear_25 + Conv_29 + PWN(Clip_33)", "LayerType": "CudaDepthwiseConvolution",
     "Inputs": [{"Name": "334", "Location": "Device"}], "Outputs": [{"Name": "351", "Location": "Device"}],
     "ParameterType": "Convolution"},
], "Bindings": ["input1", "output1"]})


class _FakeInspector:
    """FAKE TensorRT engine inspector: returns the captured output above (no GPU here)."""

    def get_engine_information(self, fmt):
        assert fmt == "JSON"
        return TRT_INSPECTOR


def test_tensorrt_placement_reads_the_engine_inspector_fake_fed_a_captured_output():
    from types import SimpleNamespace

    from cr.runtime.backends.tensorrt import TensorrtBackend, inspector_placement

    backend = TensorrtBackend()
    backend._trt = SimpleNamespace(LayerInformationFormat=SimpleNamespace(JSON="JSON"))  # FAKE tensorrt module
    backend.engine = SimpleNamespace(create_engine_inspector=_FakeInspector)  # FAKE engine
    backend._device = 0
    p = P.record(backend, "tensorrt", P.parse("cuda"))
    assert p["unit"] == "layers" and p["by_provider"] == {"cuda:0": 3} and p["nodes"] == 3 and p["verdict"] == "met"
    assert "IEngineInspector" in p["how"]
    # the default verbosity lists layer names only; a layer on Jetson's DLA counts apart
    names = inspector_placement(json.dumps({"Layers": ["a", "b"], "Bindings": []}))
    assert names["by_provider"] == {"cuda:0": 2}
    dla = inspector_placement(json.dumps({"Layers": [{"Name": "x", "LayerType": "DLA"}, {"Name": "y", "LayerType": "Reformat"}]}))
    assert dla["by_provider"] == {"DLA": 1, "cuda:0": 1}
    assert P.unmet(P.record(_Fixed(dla), "tensorrt", P.parse("dla"))).message.startswith("placement requirement not met: dla")


# -- where results show it ---------------------------------------------------------------------

def test_results_show_states_the_placement_and_reads_records_from_elsewhere_defensively(run_cr, tmp_path):
    from cr.results.placement import rows

    out = tmp_path / "r.json"
    done = run_cr("benchmark", "model:lenet-digits", "--backend", "onnxruntime", *QUICK[:-1], "-o", out)
    assert done.returncode == 0, done.stderr
    uid = json.loads(out.read_text())["uid"]
    shown = run_cr("results", "show", uid)
    assert shown.returncode == 0, shown.stderr
    line = next(line for line in shown.stdout.splitlines() if line.startswith("placement"))
    assert "CPUExecutionProvider 9 of 9 nodes (100%)" in line
    for junk in (None, [], "cpu", {"by_provider": "x", "nodes": -1}, {"by_provider": {"a": "b"}, "required": [1, None]}):
        assert isinstance(rows({"placement": junk}), list)


def test_the_dashboard_result_page_shows_the_placement(run_cr, tmp_path, page):
    from cr.dashboard import build
    from cr.events import CollectingReporter, set_reporter
    from helpers.dashboard import _open

    results = tmp_path / "results"
    results.mkdir()
    done = run_cr("benchmark", "model:lenet-digits", "--backend", "tflite", *QUICK, "-o", results / "r.json",
                  "--require-placement", "xnnpack:0.5")
    assert done.returncode == 0, done.stderr
    record = json.loads((results / "r.json").read_text())
    junk = {**record, "uid": "0123456789abcdef", "placement": {  # a record from elsewhere: any type anywhere
        "by_provider": {"a": "x", "b": None, "c": 1e308, "d": [1]}, "nodes": "12", "required": [None, 5, {"min_share": "x"}],
        "fallback_ops": [1], "requested": "cpu", "how": {"a": 1}, "verdict": ["<b>x</b>"], "unit": 3}}
    (results / "junk.json").write_text(json.dumps(junk))
    old = set_reporter(CollectingReporter())
    try:
        info = build(results, tmp_path / "site")
    finally:
        set_reporter(old)
    _open(page, (tmp_path / "site", info, {}), f"#/result/{record['uid']}")
    page.wait_for_selector("#placement table.placement-providers")
    text = page.locator("#placement").inner_text()
    by, nodes = record["placement"]["by_provider"], record["placement"]["nodes"]
    assert "Placement" in text and f"{nodes} ops" in text and "met" in text
    assert f"{by['XNNPACK'] / nodes * 100:.1f} %" in text and f"{by['CPU'] / nodes * 100:.1f} %" in text
    assert "On the CPU: SHAPE x1" in text and "_get_ops_details" in text
    _open(page, (tmp_path / "site", info, {}), "#/result/0123456789abcdef")
    page.wait_for_selector("#placement")
    assert "not reported" in page.locator("#placement").inner_text()
    assert not page.problems
