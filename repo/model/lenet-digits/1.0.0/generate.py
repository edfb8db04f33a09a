"""Regenerate model:lenet-digits@1.0.0: train the CNN of net.py on scikit-learn's digits, export it
to every format meta.json lists, check that the exports agree, measure them, rewrite meta.json.

    python repo/model/lenet-digits/1.0.0/generate.py

Seeded and single-threaded, so a rerun reproduces the weights and the metrics; it prints the
metrics, the parity of each export against torch and the sha256 of every file. Needs torch,
onnx, onnxruntime, tensorflow (+ keras 3), ai-edge-litert and scikit-learn.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")     # TF's start-up chatter hides the report
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")    # oneDNN may reorder float sums between runs
sys.dont_write_bytecode = True  # net.py's __pycache__ would become an unlisted file of the component

import numpy as np

HERE = Path(__file__).resolve().parent
UID = "c355a40e4d75023b"
SEED = 1797
EPOCHS = 15
BATCH = 32
LR = 2e-3
CALIBRATION = 200          # TRAIN samples that calibrate the int8 quantisation
PARITY_ATOL = 1e-4         # fp32 exports vs torch, max abs diff of logits
ONNX_OPSET = 17

ONNX = "lenet-digits.onnx"
TORCHSCRIPT = "lenet-digits.torchscript.pt"
STATE_DICT = "lenet-digits.state_dict.pt"
TFLITE = "lenet-digits.tflite"
TFLITE_INT8 = "lenet-digits.int8.tflite"

# The declarative steps the runtime applies to one (8,8) sample (pixels 0..16); preprocess() is
# the same thing vectorised, so the metrics measured here are the ones the runtime should get.
PREPROCESS = [{"op": "scale", "factor": 0.0625}, {"op": "cast", "dtype": "float32"}, {"op": "reshape", "shape": [1, 8, 8]}]


def preprocess(images: np.ndarray) -> np.ndarray:
    return (images * 0.0625).astype(np.float32).reshape(-1, 1, 8, 8)


def load_split():
    """Digits split without randomness: sample i is TEST when i % 5 == 0 (360), else TRAIN (1437)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = preprocess(digits.images), digits.target.astype(np.int64)
    test = np.arange(len(y)) % 5 == 0
    return (x[~test], y[~test]), (x[test], y[test])


def load_net_module():
    """net.py imported from its file, as the torch backend does for the state-dict variant."""
    spec = importlib.util.spec_from_file_location("lenet_digits_net", HERE / "net.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def train(x, y):
    import torch

    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # a fixed summation order: bit-identical weights on every run
    model = load_net_module().build()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    order = torch.Generator().manual_seed(SEED)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    model.train()
    for _ in range(EPOCHS):
        perm = torch.randperm(len(ys), generator=order)
        for start in range(0, len(ys), BATCH):
            idx = perm[start:start + BATCH]
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xs[idx]), ys[idx])
            loss.backward()
            optimizer.step()
    return model.eval()


def export_torch(model, example):
    import torch

    torch.onnx.export(  # the legacy (TorchScript-based) exporter: one deterministic graph, no onnxscript
        model, (torch.from_numpy(example),), str(HERE / ONNX), dynamo=False, opset_version=ONNX_OPSET,
        input_names=["input"], output_names=["logits"], dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}},
    )
    with torch.no_grad():
        torch.jit.trace(model, torch.from_numpy(example)).save(str(HERE / TORCHSCRIPT))
    torch.save(model.state_dict(), HERE / STATE_DICT)


def keras_copy(model):
    """The same network in Keras with torch's weights and torch's NCHW [N,1,8,8] input.

    Convolutions run NHWC in TFLite, so the input is permuted to NHWC first, and permuted back to
    channels-first before Flatten so that Dense sees the features in torch's flatten order.
    """
    import keras

    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    inputs = keras.Input(shape=(1, 8, 8), name="input")
    h = keras.layers.Permute((2, 3, 1))(inputs)
    conv1 = keras.layers.Conv2D(8, 3, padding="same", activation="relu")
    conv2 = keras.layers.Conv2D(16, 3, padding="same", activation="relu")
    h = keras.layers.MaxPooling2D(2)(conv2(conv1(h)))
    h = keras.layers.Flatten()(keras.layers.Permute((3, 1, 2))(h))
    fc1 = keras.layers.Dense(64, activation="relu")
    fc2 = keras.layers.Dense(10)
    # a dict output names the TFLite signature's output "logits" (a bare tensor would be "output_0")
    net = keras.Model(inputs, {"logits": fc2(fc1(h))}, name="lenet_digits")
    # torch conv (O,I,kh,kw) -> keras (kh,kw,I,O); torch linear (out,in) -> keras (in,out)
    conv1.set_weights([sd["features.0.weight"].transpose(2, 3, 1, 0), sd["features.0.bias"]])
    conv2.set_weights([sd["features.2.weight"].transpose(2, 3, 1, 0), sd["features.2.bias"]])
    fc1.set_weights([sd["classifier.1.weight"].T, sd["classifier.1.bias"]])
    fc2.set_weights([sd["classifier.3.weight"].T, sd["classifier.3.bias"]])
    return net


def export_tflite(model, calibration):
    import tensorflow as tf

    tf.random.set_seed(SEED)
    net = keras_copy(model)

    def convert(converter):
        with contextlib.redirect_stdout(io.StringIO()):  # keras prints the whole serving signature
            return converter.convert()

    (HERE / TFLITE).write_bytes(convert(tf.lite.TFLiteConverter.from_keras_model(net)))

    def representative():
        for sample in calibration:
            yield [sample[None]]

    int8 = tf.lite.TFLiteConverter.from_keras_model(net)
    int8.optimizations = [tf.lite.Optimize.DEFAULT]
    int8.representative_dataset = representative
    int8.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    # input and output stay float32 (quantise/dequantise inside) so every variant has one interface
    (HERE / TFLITE_INT8).write_bytes(convert(int8))


# --- running each file the way a backend would ---------------------------------------------

def run_onnx(x):
    import onnxruntime as ort

    session = ort.InferenceSession(str(HERE / ONNX), providers=["CPUExecutionProvider"])
    return session.run(["logits"], {"input": x})[0]


def run_torchscript(x):
    import torch

    with torch.no_grad():
        return torch.jit.load(str(HERE / TORCHSCRIPT)).eval()(torch.from_numpy(x)).numpy()


def run_state_dict(x):
    import torch

    model = load_net_module().build()
    model.load_state_dict(torch.load(HERE / STATE_DICT, weights_only=True))
    with torch.no_grad():
        return model.eval()(torch.from_numpy(x)).numpy()


def tflite_io(name):
    from ai_edge_litert.interpreter import Interpreter

    interpreter = Interpreter(model_path=str(HERE / name))
    return interpreter, interpreter.get_input_details(), interpreter.get_output_details()


def tflite_tensors(name, interface):
    """meta inputs/outputs of a TFLite file: the shapes and dtypes of interface, its tensors' own names.

    The converter names tensors after the TF graph ("serving_default_input:0"); recorded as they
    are, a backend matching names finds them, and one matching positions is not misled.
    """
    _, inputs, outputs = tflite_io(name)
    assert len(inputs) == len(interface["inputs"]) and len(outputs) == len(interface["outputs"]), name
    return {key: [{**declared, "name": d["name"]} for declared, d in zip(interface[key], details)]
            for key, details in (("inputs", inputs), ("outputs", outputs))}


def run_tflite(name, x):
    interpreter, inputs, outputs = tflite_io(name)
    interpreter.resize_tensor_input(inputs[0]["index"], list(x.shape))  # batch is dynamic
    interpreter.allocate_tensors()
    interpreter.set_tensor(inputs[0]["index"], x)
    interpreter.invoke()
    return interpreter.get_tensor(outputs[0]["index"]).copy()


def topk(logits, y, k):
    best = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return round(float((best == y[:, None]).any(axis=1).mean()), 4)


def metrics(logits, y, tol):
    return {"top1": {"value": topk(logits, y, 1), "abs": tol}, "top5": {"value": topk(logits, y, 5), "abs": tol}}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_meta(expected, expected_int8, provenance):
    files = ["generate.py", "net.py", ONNX, TORCHSCRIPT, STATE_DICT, TFLITE, TFLITE_INT8]
    interface = {
        "inputs": [{"name": "input", "shape": [None, 1, 8, 8], "dtype": "float32", "layout": "NCHW"}],
        "outputs": [{"name": "logits", "shape": [None, 10], "dtype": "float32", "layout": "NC"}],
    }
    meta = {
        "uid": UID, "kind": "model", "name": "lenet-digits", "version": "1.0.0",
        "tags": ["onnx", "tflite", "torchscript", "pytorch", "int8", "classification", "images", "digits", "cnn"],
        "description": "LeNet-style CNN for the 8x8 scikit-learn digits (input float32 [N,1,8,8] NCHW, pixels/16; "
                       "logits [N,10]), trained here by generate.py; ONNX, TorchScript, state dict, TFLite fp32 and int8",
        "license": "Apache-2.0",
        "task": "classification",
        "format": "onnx", "file": ONNX, "precision": "fp32",
        **interface,
        "labels": [str(d) for d in range(10)],
        "dataset": {"ref": "dataset:digits@1.0.0", "split": "test"},
        "preprocess": PREPROCESS,
        "postprocess": [{"op": "softmax", "axis": -1}],
        "architecture": {"file": "net.py", "factory": "build"},
        "variants": [
            {"name": "torchscript", "format": "torchscript", "file": TORCHSCRIPT, "precision": "fp32"},
            {"name": "state-dict", "format": "torch-state-dict", "file": STATE_DICT, "precision": "fp32",
             "description": "weights only; the module comes from architecture (net.py:build)"},
            {"name": "tflite", "format": "tflite", "file": TFLITE, "precision": "fp32",
             "description": "converted through Keras from the same weights; NCHW input like the others",
             **tflite_tensors(TFLITE, interface)},
            {"name": "tflite-int8", "format": "tflite", "file": TFLITE_INT8, "precision": "int8",
             "description": f"post-training int8 quantisation calibrated on {CALIBRATION} TRAIN samples; float32 input and output",
             **tflite_tensors(TFLITE_INT8, interface), "expected": expected_int8},
        ],
        "expected": expected,
        "provenance": provenance,
        "deps": ["software:onnxruntime@>=1.17"],
        "files": {rel: sha256(HERE / rel) for rel in files},
    }
    (HERE / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def main() -> None:
    started = time.perf_counter()
    import onnxruntime
    import sklearn
    import tensorflow as tf
    import torch

    (x_train, y_train), (x_test, y_test) = load_split()
    imported = time.perf_counter()
    model = train(x_train, y_train)
    trained = time.perf_counter()
    with torch.no_grad():
        reference = model(torch.from_numpy(x_test)).numpy()
    export_torch(model, x_test[:2])
    export_tflite(model, x_train[:CALIBRATION])

    runs = {
        "torch": reference, "onnx": run_onnx(x_test), "torchscript": run_torchscript(x_test),
        "state-dict": run_state_dict(x_test), "tflite": run_tflite(TFLITE, x_test),
        "tflite-int8": run_tflite(TFLITE_INT8, x_test),
    }
    parity = {name: float(np.abs(logits - reference).max()) for name, logits in runs.items()}
    agree = {name: float((logits.argmax(1) == reference.argmax(1)).mean()) for name, logits in runs.items()}
    # every fp32 export must compute what torch computes, or the meta would describe another model
    for name in ("onnx", "torchscript", "state-dict", "tflite"):
        assert runs[name].shape == reference.shape, f"{name}: shape {runs[name].shape}, torch {reference.shape}"
        assert parity[name] <= PARITY_ATOL, f"{name}: max abs diff {parity[name]:.3g} > {PARITY_ATOL}"
        assert agree[name] == 1.0, f"{name}: top-1 differs from torch on some samples"

    expected = metrics(reference, y_test, 0.005)
    expected_int8 = metrics(runs["tflite-int8"], y_test, 0.01)
    provenance = {
        "script": "generate.py", "seed": SEED, "epochs": EPOCHS, "batch": BATCH, "optimizer": f"Adam lr={LR}",
        "loss": "cross-entropy", "deterministic": "torch.use_deterministic_algorithms(True), 1 thread",
        "data": "sklearn.datasets.load_digits",
        "split": "sample i is test when i % 5 == 0 (360 samples), else train (1437)",
        "calibration": f"first {CALIBRATION} train samples",
        "onnx": f"torch.onnx.export dynamo=False, opset {ONNX_OPSET}",
        "tflite": "keras 3 copy of the torch weights -> tf.lite.TFLiteConverter.from_keras_model; "
                  "int8: Optimize.DEFAULT, TFLITE_BUILTINS_INT8, float32 input/output",
        "versions": {
            "python": sys.version.split()[0], "torch": torch.__version__.split("+")[0], "tensorflow": tf.__version__,
            "onnxruntime": onnxruntime.__version__, "scikit-learn": sklearn.__version__, "numpy": np.__version__,
        },
    }
    meta = write_meta(expected, expected_int8, provenance)

    print(f"imports {imported - started:.1f}s, training {trained - imported:.1f}s, total {time.perf_counter() - started:.1f}s")
    for name, logits in runs.items():
        print(f"{name:12} top1 {topk(logits, y_test, 1):.4f}  top5 {topk(logits, y_test, 5):.4f}  "
              f"vs torch: max|diff| {parity[name]:.2e}, same top-1 {agree[name]:.4f}")
    for rel, digest in meta["files"].items():
        print(f"{digest}  {rel}  ({(HERE / rel).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
