"""The framework backends: torch, tflite, tensorflow, tensorrt.

Each test model is built here, seeded and tiny (a conv + linear net on 8x8 images), once
per module. A backend must give what the framework's own direct call gives, report the
inputs it expects, refuse what it cannot do with a message naming the option, input or
format, and work in the real child process. TensorRT needs an NVIDIA GPU: here only its
refusals are tested; its execution test runs where tensorrt and a GPU are present.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import types
import warnings
from enum import Enum

import numpy as np
import pytest

from cr.errors import CRError
from cr.runtime import registry
from cr.runtime.backends.base import InputMismatch, check_format, check_options
from cr.run.launch import run_job

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

FRAMEWORK_BACKENDS = ("torch", "tflite", "tensorflow", "tensorrt")
X_NCHW = {"name": "x", "shape": [None, 1, 8, 8], "dtype": "float32"}
X_NHWC = {"name": "x", "shape": [None, 8, 8, 1], "dtype": "float32"}
Y = {"name": "y", "shape": [None, 3], "dtype": "float32"}

ARCHITECTURE = '''
import torch


class Tiny(torch.nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, channels, 3)
        self.fc = torch.nn.Linear(channels * 6 * 6, 3)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def build(channels: int = 4):
    return Tiny(channels)
'''


def _images(n: int, layout: str = "nchw", seed: int = 1) -> np.ndarray:
    shape = (n, 1, 8, 8) if layout == "nchw" else (n, 8, 8, 1)
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _backend(name: str, path, meta: dict, options: dict | None = None):
    backend = registry.load_backend(name)
    check_format(backend, meta)
    check_options(backend, options or {})
    backend.load(str(path) if path else None, meta, options or {})
    return backend


def _child(meta: dict, folder, backend: str, options: dict | None = None, batch_size: int = 2) -> dict:
    """Benchmark the model through the real child process, as `cr benchmark` does."""
    job = {
        "entry": "cr.runtime.actions.benchmark:main",
        "params": {"scenario": "single-stream", "min_duration_s": 0, "min_queries": 5, "warmup_queries": 2,
                   "threads": 1, "batch_size": batch_size},
        "model": {"ref": f"model:{meta['name']}", "meta": meta, "dir": str(folder)},
        "backend": {**registry.find(backend).to_dict(), "options": options or {}},
    }
    result, latencies = run_job(job, timeout=120)
    assert result["status"] == "ok", json.dumps(result.get("error"), indent=1)
    assert len(latencies) == result["metrics"]["queries"] >= 5
    return result


# -- without frameworks ------------------------------------------------------------------

def test_backend_modules_import_no_framework():
    code = ("import sys\nfrom cr.runtime.backends import torch, tflite, tensorflow, tensorrt\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'tensorflow', 'keras', 'tensorrt', 'ai_edge_litert', 'tflite_runtime', 'numpy', 'cuda')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", FRAMEWORK_BACKENDS)
def test_framework_backends_are_registered_and_valid(name):
    cls = registry.load_class(registry.find(name))
    assert cls.name == name and cls.FORMATS and "threads" not in cls.OPTIONS


@pytest.mark.parametrize("name, fmt", [("tflite", "onnx"), ("torch", "tflite"), ("tensorflow", "torchscript"), ("tensorrt", "keras")])
def test_a_format_the_backend_cannot_load_is_refused(name, fmt):
    backend = registry.load_backend(name)
    with pytest.raises(CRError) as info:
        check_format(backend, {"format": fmt}, "model:tiny")
    assert f"backend {name!r} cannot load model:tiny: its format is {fmt}" in info.value.message
    assert all(f in info.value.message for f in backend.FORMATS)


@pytest.mark.parametrize("name, known", [("torch", "interop_threads"), ("tflite", "delegates"),
                                         ("tensorflow", "jit_compile"), ("tensorrt", "max_batch")])
def test_an_unknown_option_is_refused_naming_the_options(name, known):
    backend = registry.load_backend(name)
    check_options(backend, {"threads": 2, known: 1})
    with pytest.raises(CRError) as info:
        check_options(backend, {"threads": 2, "bogus": 1})
    assert info.value.message == f"backend {name!r} has no option bogus"
    assert known in info.value.hint


@pytest.mark.skipif(importlib.util.find_spec("tensorrt") is not None, reason="tensorrt is installed here")
def test_tensorrt_without_tensorrt_says_what_is_missing(tmp_path):
    backend = registry.load_backend("tensorrt")
    with pytest.raises(CRError) as info:
        backend.load(str(tmp_path / "m.onnx"), {"format": "onnx"}, {})
    assert info.value.message.startswith("tensorrt backend needs an NVIDIA GPU and the tensorrt package")
    assert "the tensorrt package is not importable here" in info.value.message
    assert "pip install tensorrt cuda-python" in info.value.hint


class _CudaError(Enum):
    cudaSuccess = 0
    cudaErrorNoDevice = 100


def test_tensorrt_without_a_gpu_says_so(monkeypatch, tmp_path):
    """tensorrt and cuda-python importable, but no device: the fakes stand for what this host lacks."""
    monkeypatch.setitem(sys.modules, "tensorrt", types.SimpleNamespace(__version__="10.3.0"))
    runtime = types.SimpleNamespace(cudaError_t=_CudaError, cudaGetDeviceCount=lambda: (_CudaError.cudaErrorNoDevice, 0))
    monkeypatch.setitem(sys.modules, "cuda", types.SimpleNamespace(__path__=[]))
    monkeypatch.setitem(sys.modules, "cuda.bindings", types.SimpleNamespace(runtime=runtime, __path__=[]))
    monkeypatch.setitem(sys.modules, "cuda.bindings.runtime", runtime)
    with pytest.raises(CRError, match=r"needs an NVIDIA GPU .*; no NVIDIA GPU is visible \(cudaErrorNoDevice\)"):
        registry.load_backend("tensorrt").load(str(tmp_path / "m.onnx"), {"format": "onnx"}, {})
    monkeypatch.setitem(sys.modules, "tensorrt", types.SimpleNamespace(__version__="8.6.1"))
    with pytest.raises(CRError, match=r"found tensorrt 8\.6\.1"):
        registry.load_backend("tensorrt").load(str(tmp_path / "m.onnx"), {"format": "onnx"}, {})


# -- torch -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def torch_models(tmp_path_factory):
    torch = pytest.importorskip("torch")
    folder = tmp_path_factory.mktemp("torch")
    (folder / "arch.py").write_text(ARCHITECTURE)
    spec = importlib.util.spec_from_file_location("tiny_arch_for_tests", folder / "arch.py")
    arch = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(arch)
    torch.manual_seed(0)
    model = arch.build(channels=4).eval()
    example = torch.from_numpy(_images(2))
    batch = torch.export.Dim("batch", min=1, max=64)
    torch.export.save(torch.export.export(model, (example,), dynamic_shapes={"x": {0: batch}}), str(folder / "tiny.pt2"))
    torch.save(model.state_dict(), folder / "tiny.pt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchScript and its ONNX exporter are deprecated (and fast)
        torch.jit.script(model).save(str(folder / "tiny.ts"))
        torch.onnx.export(model, (example,), str(folder / "tiny.onnx"), input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "n"}, "y": {0: "n"}}, dynamo=False)
    base = {"kind": "model", "name": "tiny-torch", "inputs": [X_NCHW], "outputs": [Y]}
    metas = {
        "torchscript": {**base, "format": "torchscript", "file": "tiny.ts"},
        "torch-exported": {**base, "format": "torch-exported", "file": "tiny.pt2"},
        "torch-state-dict": {**base, "format": "torch-state-dict", "file": "tiny.pt",
                             "architecture": {"file": "arch.py", "factory": "build", "kwargs": {"channels": 4}}},
        "onnx": {**base, "format": "onnx", "file": "tiny.onnx"},
    }
    return types.SimpleNamespace(folder=folder, model=model, metas=metas, torch=torch)


def _torch_reference(models, x: np.ndarray) -> np.ndarray:
    with models.torch.inference_mode():
        return models.model(models.torch.from_numpy(x)).numpy()


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["torchscript", "torch-exported", "torch-state-dict"])
def test_torch_formats_match_the_direct_call(torch_models, fmt):
    meta = torch_models.metas[fmt]
    backend = _backend("torch", torch_models.folder / meta["file"], meta, {"threads": 1})
    try:
        assert backend.inputs() == [X_NCHW]
        for n in (1, 3):
            x = _images(n, seed=n)
            (y,) = backend.run({"x": x})
            assert isinstance(y, np.ndarray) and y.shape == (n, 3)
            np.testing.assert_allclose(y, _torch_reference(torch_models, x), rtol=0, atol=1e-6)
        info = backend.info()
        assert info["framework"] == "torch" and info["device"] == "cpu" and info["format"] == fmt
    finally:
        backend.close()


@pytest.mark.slow
def test_torch_matches_onnxruntime_on_the_exported_onnx(torch_models):
    pytest.importorskip("onnxruntime")
    x = _images(4)
    torch_backend = _backend("torch", torch_models.folder / "tiny.ts", torch_models.metas["torchscript"])
    ort_backend = _backend("onnxruntime", torch_models.folder / "tiny.onnx", torch_models.metas["onnx"], {"threads": 1})
    (a,), (b,) = torch_backend.run({"x": x}), ort_backend.run({"x": x})
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


@pytest.mark.slow
def test_torch_options_take_effect(torch_models):
    torch = torch_models.torch
    before = torch.get_num_threads()
    meta = torch_models.metas["torchscript"]
    try:
        backend = _backend("torch", torch_models.folder / "tiny.ts", meta,
                           {"threads": 1, "channels_last": True, "inference_mode": False})
        assert torch.get_num_threads() == 1 and backend.info()["threads"] == 1
        assert backend.info()["mode"] == "no_grad" and backend.info()["channels_last"] is True
        x = _images(2)
        np.testing.assert_allclose(backend.run({"x": x})[0], _torch_reference(torch_models, x), rtol=0, atol=1e-5)
    finally:
        torch.set_num_threads(before)
    with pytest.raises(CRError, match="torch option device is 'tpu'"):
        _backend("torch", torch_models.folder / "tiny.ts", meta, {"device": "tpu"})
    if not torch.cuda.is_available():
        with pytest.raises(CRError, match="device=cuda, but this torch .* sees no CUDA device"):
            _backend("torch", torch_models.folder / "tiny.ts", meta, {"device": "cuda"})


@pytest.mark.slow
@pytest.mark.parametrize("given, expected", [
    (np.zeros((2, 1, 8, 8), np.float64), "input 'x': expected float32 [?, 1, 8, 8], given float64 [2, 1, 8, 8]"),
    (np.zeros((2, 3, 8, 8), np.float32), "input 'x': expected float32 [?, 1, 8, 8], given float32 [2, 3, 8, 8]"),
])
def test_torch_input_mismatch_names_the_input(torch_models, given, expected):
    backend = _backend("torch", torch_models.folder / "tiny.ts", torch_models.metas["torchscript"])
    with pytest.raises(InputMismatch) as info:
        backend.run({"x": given})
    assert info.value.message == expected
    with pytest.raises(InputMismatch, match="missing x; unexpected image"):
        backend.run({"image": _images(1)})


@pytest.mark.slow
def test_torch_refusals_are_clear(torch_models):
    folder, metas = torch_models.folder, torch_models.metas
    with pytest.raises(CRError, match="torch model tiny-torch declares no inputs") as info:
        _backend("torch", folder / "tiny.ts", {**metas["torchscript"], "inputs": []})
    assert "forward()'s argument order" in info.value.hint
    wrong = {**metas["torch-state-dict"], "architecture": {"file": "arch.py", "factory": "build", "kwargs": {"channels": 8}}}
    with pytest.raises(CRError, match=r"the state dict .*tiny.pt does not fit build\(\) of arch.py"):
        _backend("torch", folder / "tiny.pt", wrong)
    with pytest.raises(CRError, match="needs its architecture"):
        _backend("torch", folder / "tiny.pt", {**metas["torch-state-dict"], "architecture": None})
    with pytest.raises(CRError, match="has no function 'make'"):
        _backend("torch", folder / "tiny.pt", {**metas["torch-state-dict"], "architecture": {"file": "arch.py", "factory": "make"}})
    with pytest.raises(CRError, match="torch cannot load .*tiny.onnx as torchscript"):
        _backend("torch", folder / "tiny.onnx", metas["torchscript"])


@pytest.mark.slow
def test_torch_state_dict_in_the_child_process(torch_models, tmp_path):
    # the architecture file is found in the component directory, as a real component has it
    result = _child(torch_models.metas["torch-state-dict"], torch_models.folder, "torch")
    info = result["backend_info"]
    assert info["framework"] == "torch" and info["threads"] == 1 and info["format"] == "torch-state-dict"
    assert result["runtime"]["pid"] != os.getpid() and result["inputs"]["batch_size"] == 2


# -- TensorFlow, Keras and TFLite ------------------------------------------------------------

@pytest.fixture(scope="module")
def tf_models(tmp_path_factory):
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    folder = tmp_path_factory.mktemp("tf")
    keras.utils.set_random_seed(0)
    conv, pool, dense = keras.layers.Conv2D(4, 3, activation="relu"), keras.layers.GlobalAveragePooling2D(), keras.layers.Dense(3)
    x = keras.Input(shape=(8, 8, 1), name="x")
    model = keras.Model(x, dense(pool(conv(x))))
    model.save(folder / "tiny.keras")
    model.export(str(folder / "sm"), verbose=False)
    # TFLite with a fixed batch of 1 (same layers, so same weights), float and int8
    x1 = keras.Input(shape=(8, 8, 1), batch_size=1, name="x")
    fixed = keras.Model(x1, dense(pool(conv(x1))))
    (folder / "tiny.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(fixed).convert())

    def representative():
        for i in range(8):
            yield [_images(1, "nhwc", seed=100 + i)]

    converter = tf.lite.TFLiteConverter.from_keras_model(fixed)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    converter.representative_dataset = representative
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = converter.inference_output_type = tf.int8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (folder / "tiny-int8.tflite").write_bytes(converter.convert())
    # a batch-1 model whose Flatten hard-codes the batch: it cannot be resized
    flat_in = keras.Input(shape=(8, 8, 1), batch_size=1, name="x")
    flat = keras.Model(flat_in, keras.layers.Dense(3)(keras.layers.Flatten()(flat_in)))
    (folder / "flat.tflite").write_bytes(tf.lite.TFLiteConverter.from_keras_model(flat).convert())
    base = {"kind": "model", "name": "tiny-tf", "inputs": [X_NHWC], "outputs": [Y]}
    metas = {
        "keras": {**base, "format": "keras", "file": "tiny.keras"},
        "savedmodel": {**base, "format": "savedmodel", "file": "sm/saved_model.pb"},
        "tflite": {**base, "format": "tflite", "file": "tiny.tflite"},
        "tflite-int8": {**base, "format": "tflite", "file": "tiny-int8.tflite", "precision": "int8",
                        "inputs": [{**X_NHWC, "dtype": "int8"}], "outputs": [{**Y, "dtype": "int8"}]},
    }
    return types.SimpleNamespace(folder=folder, model=model, metas=metas, tf=tf)


def _keras_reference(models, x: np.ndarray) -> np.ndarray:
    return models.model(models.tf.constant(x), training=False).numpy()


@pytest.mark.slow
def test_tflite_matches_keras_and_resizes_the_batch(tf_models):
    meta = tf_models.metas["tflite"]
    backend = _backend("tflite", tf_models.folder / "tiny.tflite", meta, {"threads": 1})
    try:
        # the converter's name serving_default_x:0 answers to the meta's "x"; the batch is free
        assert backend.inputs() == [X_NHWC]
        assert backend.outputs() == [Y]
        for n in (1, 4, 4, 1):  # batch 4 through a batch-1 model, and back
            x = _images(n, "nhwc", seed=n)
            (y,) = backend.run({"x": x})
            assert y.shape == (n, 3)
            np.testing.assert_allclose(y, _keras_reference(tf_models, x), rtol=0, atol=1e-5)
        backend.prepare({"x": _images(2, "nhwc")})
        assert backend.run({"x": _images(2, "nhwc")})[0].shape == (2, 3)
        info = backend.info()
        assert info["framework"] == "tflite" and info["runtime"] in ("ai-edge-litert", "tflite-runtime", "tensorflow.lite")
        assert info["threads"] == 1 and info["version"]
    finally:
        backend.close()


@pytest.mark.slow
def test_tflite_without_meta_inputs_uses_the_model_names(tf_models):
    meta = {**tf_models.metas["tflite"], "inputs": [], "outputs": []}
    backend = _backend("tflite", tf_models.folder / "tiny.tflite", meta, {"xnnpack": False})
    assert backend.inputs() == [{"name": "serving_default_x:0", "shape": [1, 8, 8, 1], "dtype": "float32"}]
    assert backend.outputs()[0]["name"] == "output_0"  # the signature's name for it
    x = _images(1, "nhwc")
    np.testing.assert_allclose(backend.run({"serving_default_x:0": x})[0], _keras_reference(tf_models, x), rtol=0, atol=1e-5)
    assert backend.info()["xnnpack"] is False


@pytest.mark.slow
def test_tflite_int8_exposes_quantization(tf_models):
    meta = tf_models.metas["tflite-int8"]
    backend = _backend("tflite", tf_models.folder / "tiny-int8.tflite", meta)
    (spec,) = backend.inputs()
    assert spec["dtype"] == "int8" and spec["shape"] == [None, 8, 8, 1]
    q = spec["quantization"]
    assert q["scale"] > 0 and -128 <= q["zero_point"] <= 127
    x = _images(3, "nhwc", seed=7)
    quantized = np.clip(np.round(x / q["scale"]) + q["zero_point"], -128, 127).astype(np.int8)
    (y,) = backend.run({"x": quantized})
    out_q = backend.outputs()[0]["quantization"]
    assert y.dtype == np.int8 and y.shape == (3, 3)
    dequantized = (y.astype(np.float32) - out_q["zero_point"]) * out_q["scale"]
    assert np.abs(dequantized - _keras_reference(tf_models, x)).max() < 0.1  # int8 is close, not equal


@pytest.mark.slow
def test_tflite_refusals_name_the_input(tf_models):
    backend = _backend("tflite", tf_models.folder / "tiny.tflite", tf_models.metas["tflite"])
    with pytest.raises(InputMismatch) as info:
        backend.run({"x": np.zeros((1, 8, 8, 1), np.float64)})
    assert info.value.message == "input 'x': expected float32 [?, 8, 8, 1], given float64 [1, 8, 8, 1]"
    with pytest.raises(InputMismatch, match=r"input 'x': expected float32 \[\?, 8, 8, 1\], given float32 \[2, 8, 8, 3\]"):
        backend.run({"x": np.zeros((2, 8, 8, 3), np.float32)})
    fixed = {**tf_models.metas["tflite"], "file": "flat.tflite"}
    flat = _backend("tflite", tf_models.folder / "flat.tflite", fixed)
    with pytest.raises(CRError, match=r"the tflite model cannot take inputs of shape x \[4, 8, 8, 1\]") as info:
        flat.run({"x": _images(4, "nhwc")})
    assert "--batch-size 1" in info.value.hint
    assert flat.run({"x": _images(1, "nhwc")})[0].shape == (1, 3)  # the refusal left it usable
    with pytest.raises(CRError, match="cannot open .*tiny.keras"):
        _backend("tflite", tf_models.folder / "tiny.keras", tf_models.metas["tflite"])


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["savedmodel", "keras"])
def test_tensorflow_formats_match_the_direct_call(tf_models, fmt):
    meta = tf_models.metas[fmt]
    backend = _backend("tensorflow", tf_models.folder / meta["file"], meta)
    try:
        spec = backend.inputs()
        assert spec == [X_NHWC]
        if fmt == "savedmodel":
            serving = tf_models.tf.saved_model.load(str(tf_models.folder / "sm")).signatures["serving_default"]
        for n in (1, 3):
            x = _images(n, "nhwc", seed=n)
            outputs = backend.run({"x": x})
            assert len(outputs) == 1 and isinstance(outputs[0], np.ndarray)
            direct = serving(x=x)["output_0"].numpy() if fmt == "savedmodel" else _keras_reference(tf_models, x)
            np.testing.assert_allclose(outputs[0], direct, rtol=0, atol=1e-6)
        info = backend.info()
        assert info["framework"] == "tensorflow" and info["format"] == fmt and info["version"] == tf_models.tf.__version__
        with pytest.raises(InputMismatch, match=r"input 'x': expected float32 \[\?, 8, 8, 1\], given float64 \[2, 8, 8, 1\]"):
            backend.run({"x": np.zeros((2, 8, 8, 1), np.float64)})
        with pytest.raises(InputMismatch, match=r"input 'x': expected float32 \[\?, 8, 8, 1\], given float32 \[2, 8, 8\]"):
            backend.run({"x": np.zeros((2, 8, 8), np.float32)})
    finally:
        backend.close()


@pytest.mark.slow
def test_tensorflow_options(tf_models):
    folder, metas = tf_models.folder, tf_models.metas
    jit = _backend("tensorflow", folder / "tiny.keras", metas["keras"], {"jit_compile": True})
    x = _images(2, "nhwc")
    np.testing.assert_allclose(jit.run({"x": x})[0], _keras_reference(tf_models, x), rtol=0, atol=1e-5)
    assert jit.info()["jit_compile"] is True
    jit_sm = _backend("tensorflow", folder / "sm" / "saved_model.pb", metas["savedmodel"], {"jit_compile": True})
    np.testing.assert_allclose(jit_sm.run({"x": x})[0], _keras_reference(tf_models, x), rtol=0, atol=1e-5)
    with pytest.raises(CRError, match="has no signature 'predict'") as info:
        _backend("tensorflow", folder / "sm" / "saved_model.pb", metas["savedmodel"], {"signature": "predict"})
    assert "serving_default" in info.value.hint
    # TensorFlow already runs in this process (the fixture built the models): threads cannot change
    threads = tf_models.tf.config.threading.get_intra_op_parallelism_threads() + 1
    with pytest.raises(CRError, match=f"tensorflow option threads={threads} cannot apply: TensorFlow already runs"):
        _backend("tensorflow", folder / "tiny.keras", metas["keras"], {"threads": threads})
    renamed = {**metas["savedmodel"], "inputs": [{**X_NHWC, "name": "image"}]}
    by_position = _backend("tensorflow", folder / "sm" / "saved_model.pb", renamed)
    assert by_position.inputs()[0]["name"] == "image"
    np.testing.assert_allclose(by_position.run({"image": x})[0], _keras_reference(tf_models, x), rtol=0, atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("fmt, backend", [("savedmodel", "tensorflow"), ("tflite", "tflite")])
def test_tf_backends_in_the_child_process(tf_models, fmt, backend):
    result = _child(tf_models.metas[fmt], tf_models.folder, backend, batch_size=4)
    info = result["backend_info"]
    assert info["threads"] == 1  # a fresh process: the option applies
    assert result["inputs"]["batch_size"] == 4 and result["metrics"]["queries"] >= 5


# -- TensorRT on a GPU --------------------------------------------------------------------------

def _has_tensorrt_gpu() -> bool:
    if importlib.util.find_spec("tensorrt") is None:
        return False
    try:
        from cr.runtime.backends.tensorrt import _modules

        _modules()
        return True
    except CRError:
        return False


@pytest.mark.slow
@pytest.mark.skipif(not _has_tensorrt_gpu(), reason="needs the tensorrt package (>= 10), cuda-python and an NVIDIA GPU")
def test_tensorrt_matches_onnxruntime(torch_models, tmp_path):  # pragma: no cover - GPU hosts only
    from cr.runtime.backends.tensorrt import build_plan

    meta = torch_models.metas["onnx"]
    onnx_path = torch_models.folder / "tiny.onnx"
    backend = _backend("tensorrt", onnx_path, meta, {"max_batch": 8, "opt_batch": 4})
    reference = _backend("onnxruntime", onnx_path, meta)
    try:
        assert backend.inputs() == [X_NCHW]
        for n in (1, 4, 8):
            x = _images(n, seed=n)
            np.testing.assert_allclose(backend.run({"x": x})[0], reference.run({"x": x})[0], rtol=0, atol=1e-3)
        with pytest.raises(InputMismatch, match="input 'x'"):
            backend.run({"x": np.zeros((2, 1, 8, 8), np.float64)})
        with pytest.raises(CRError, match="exceeds the engine's largest"):
            backend.run({"x": _images(9)})
        assert backend.info()["engine"]["from"] == "onnx"
    finally:
        backend.close()
    built = build_plan(str(onnx_path), str(tmp_path / "tiny.plan"), {"max_batch": 4})
    plan_meta = {**meta, "format": "trt-plan", "file": "tiny.plan"}
    from_plan = _backend("tensorrt", built["plan"], plan_meta)
    x = _images(3)
    np.testing.assert_allclose(from_plan.run({"x": x})[0], reference.run({"x": x})[0], rtol=0, atol=1e-3)
    from_plan.close()
    result = _child({**plan_meta, "name": "tiny-trt"}, tmp_path, "tensorrt")
    assert result["backend_info"]["framework"] == "tensorrt"



@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["keras", "savedmodel"])
def test_tensorflow_timed_window_gives_run_s_numbers(tf_models, fmt):
    from cr.runtime.harness import timed

    meta = tf_models.metas[fmt]
    backend = _backend("tensorflow", tf_models.folder / meta["file"], meta)  # threads: fixed once TF runs
    try:
        batches = [{"x": _images(2, "nhwc", seed=s)} for s in (1, 2)]
        before = [backend.run(b) for b in batches]
        with timed(backend, batches) as (run, items):
            during = [run(item) for item in items * 2]  # the window's outputs are TensorFlow's tensors
        for expected, got in zip(before * 2, during):
            got = [got[k] for k in backend._keys] if isinstance(got, dict) else got  # noqa: SLF001
            got = got if isinstance(got, (list, tuple)) else [got]
            assert [np.asarray(g).tolist() for g in got] == [e.tolist() for e in expected]
    finally:
        backend.close()
