"""Image datasets of a user's own: image-folder and COCO layouts, labels given as a file,
the software the pipeline steps import (Pillow) and the pillow recipe.

Every image is made here, reproducibly, with numpy and Pillow; nothing is downloaded.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_component, make_repo

from cr.errors import CRError
from cr.runtime import datasets, pipeline

ROOT = Path(__file__).resolve().parent.parent
CLASSES = ("blue", "green", "red")  # sorted: labels 0, 1, 2
CHANNEL = {"red": 0, "green": 1, "blue": 2}  # where each class is bright in RGB


def _png(path: Path, cls: str, seed: int, shape=(12, 10)) -> Path:
    """An HxW RGB image whose channel for cls is bright, the others dark, with some noise."""
    from PIL import Image

    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 30, (*shape, 3)).astype(np.uint8)
    pixels[..., CHANNEL[cls]] += 180
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)
    return path


def _image_folder(root: Path, per_class: int = 5) -> Path:
    """root/<class>/<i>.png for the three classes, plus a file that is not an image."""
    for c, cls in enumerate(CLASSES):
        for i in range(per_class):
            _png(root / cls / f"{i:02d}.png", cls, seed=10 * c + i)
    (root / "red" / "README.txt").write_text("not an image\n")
    return root


def _tiny_onnx(path: Path) -> Path:
    """A classifier by colour: the mean of each channel of a [N, 3, 8, 8] input is its logit."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("ReduceMean", ["image"], ["logits"], axes=[2, 3], keepdims=0)
    graph = helper.make_graph([node], "colour-mean",
                              [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["N", 3, 8, 8])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


# BGR puts blue first: channel i of the model input is then the class of label i (blue, green, red)
PREPROCESS = [
    {"op": "decode", "mode": "RGB"},
    {"op": "resize", "size": [8, 8], "interpolation": "bilinear"},
    {"op": "color_order", "order": "BGR"},
    {"op": "cast", "dtype": "float32"},
    {"op": "scale", "factor": 1 / 255},
    {"op": "layout", "from": "HWC", "to": "CHW"},
]


def _colour_repo(tmp_path: Path, run_cr, model_fields: dict | None = None) -> Path:
    """A registered repo with dataset:colours (image-folder, 3 x 5 images, every 5th test)
    and model:colour-mean (ONNX) measured on its test split."""
    repo = make_repo(tmp_path / "mine", "mine")
    ds = make_component(repo, "dataset", "colours", format="image-folder", root="images", samples=15,
                        splits={"train": 12, "test": 3}, split_by={"modulo": 5, "test_remainder": 0})
    _image_folder(ds.parent / "images")
    model = make_component(repo, "model", "colour-mean", format="onnx", file="model.onnx", task="classification",
                           inputs=[{"name": "image", "shape": ["N", 3, 8, 8], "dtype": "float32", "layout": "NCHW"}],
                           outputs=[{"name": "logits", "shape": ["N", 3], "dtype": "float32"}],
                           preprocess=PREPROCESS, postprocess=[{"op": "softmax", "axis": -1}],
                           dataset={"ref": "dataset:colours@1.0.0", "split": "test"},
                           expected={"top1": {"value": 1.0, "abs": 0.0}}, **(model_fields or {}))
    _tiny_onnx(model.parent / "model.onnx")
    assert run_cr("repo", "add", repo).returncode == 0
    return repo


# ------------------------------------------------------------------ image-folder datasets

def test_image_folder_loads_labels_from_folders_and_fixed_splits(tmp_path):
    _image_folder(tmp_path / "images")
    meta = {"name": "colours", "format": "image-folder", "root": "images", "split_by": {"modulo": 5, "test_remainder": 0}}
    every = datasets.load(meta, str(tmp_path))
    assert len(every.samples) == 15  # README.txt is not an image
    assert [s.id for s in every.samples[:6]] == ["blue/00.png", "blue/01.png", "blue/02.png", "blue/03.png", "blue/04.png", "green/00.png"]
    assert [s.label for s in every.samples] == [0] * 5 + [1] * 5 + [2] * 5
    assert every.label_names == {"0": "blue", "1": "green", "2": "red"} and every.has_labels
    assert all(Path(s.data).is_file() for s in every.samples)  # paths, decoded by the pipeline
    test = datasets.load(meta, str(tmp_path), split="test")
    assert [s.id for s in test.samples] == ["blue/00.png", "green/00.png", "red/00.png"]  # index % 5 == 0
    train = datasets.load(meta, str(tmp_path), split="train")
    assert len(train.samples) == 12 and not {s.id for s in train.samples} & {s.id for s in test.samples}
    assert [s.id for s in datasets.load(meta, str(tmp_path), split="train", limit=2).samples] == ["blue/01.png", "blue/02.png"]
    # the same folder again gives the same samples: nothing depends on the directory order
    assert [(s.id, s.label) for s in datasets.load(meta, str(tmp_path)).samples] == [(s.id, s.label) for s in every.samples]


def test_image_folder_labels_list_sets_the_class_indices(tmp_path):
    _image_folder(tmp_path / "images")
    meta = {"name": "colours", "format": "image-folder", "root": "images", "labels": ["red", "green", "blue", "unused"]}
    ds = datasets.load(meta, str(tmp_path))
    assert {s.id.split("/")[0]: s.label for s in ds.samples} == {"blue": 2, "green": 1, "red": 0}
    assert ds.label_names == {"0": "red", "1": "green", "2": "blue", "3": "unused"}
    with pytest.raises(CRError, match=r"class folder\(s\) blue, green of .* are not among its 1 labels"):
        datasets.load({**meta, "labels": ["red"]}, str(tmp_path))
    with pytest.raises(CRError, match="holds no images in class folders"):
        datasets.load({"name": "empty", "format": "image-folder"}, str(tmp_path / "images" / "red"))


def test_validate_and_run_a_tiny_onnx_model_on_an_image_folder_dataset(run_cr, tmp_path):
    _colour_repo(tmp_path, run_cr)
    for ref in ("dataset:colours", "model:colour-mean"):  # every image and the model get their sha256
        assert run_cr("hash", ref).returncode == 0
    done = run_cr("check", tmp_path / "mine")
    assert done.returncode == 0, done.stdout + done.stderr
    out = tmp_path / "v.json"
    done = run_cr("validate", "model", "colour-mean", "--backend", "onnxruntime", "-o", out, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    r = json.loads(out.read_text())
    assert r["validation"]["outcome"] == "PASS" and r["validation"]["samples"] == 3 and r["validation"]["top1"] == 1.0
    assert r["inputs"]["dataset"] == "dataset:colours@1.0.0" and r["inputs"]["split"] == "test"
    done = run_cr("run", "model", "colour-mean", "--backend", "onnxruntime", "--limit", "3", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    preds = json.loads(done.stdout)["predictions"]
    assert [(p["id"], p["label"], p["top"][0]["label"]) for p in preds] == [
        ("blue/00.png", 0, "blue"), ("green/00.png", 1, "green"), ("red/00.png", 2, "red")]


# ------------------------------------------------------------------------- COCO datasets

def test_coco_instances_give_normalised_boxes_in_image_id_order(tmp_path):
    for name, seed in (("b.png", 1), ("a.png", 2), ("c.png", 3)):
        _png(tmp_path / "images" / name, "red", seed, shape=(50, 100))
    coco = {
        "images": [{"id": 2, "file_name": "b.png", "width": 100, "height": 50},
                   {"id": 1, "file_name": "a.png", "width": 100, "height": 50},
                   {"id": 3, "file_name": "c.png", "width": 100, "height": 50}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 5, 20, 10], "iscrowd": 0},
                        {"id": 2, "image_id": 1, "category_id": 2, "bbox": [0, 0, 100, 50], "iscrowd": 0},
                        {"id": 3, "image_id": 2, "category_id": 1, "bbox": [50, 25, 50, 25], "iscrowd": 1}],
        "categories": [{"id": 1, "name": "face"}, {"id": 2, "name": "person"}],
    }
    (tmp_path / "annotations").mkdir()
    (tmp_path / "annotations" / "instances.json").write_text(json.dumps(coco))
    meta = {"name": "faces", "format": "coco", "source": {"file": "annotations/instances.json"}, "root": "images"}
    ds = datasets.load(meta, str(tmp_path))
    assert [s.id for s in ds.samples] == ["a.png", "b.png", "c.png"] and ds.has_boxes and not ds.has_labels
    np.testing.assert_allclose(ds.samples[0].boxes, [[0.1, 0.1, 0.3, 0.3], [0.0, 0.0, 1.0, 1.0]])
    assert ds.samples[1].boxes == [] and ds.samples[2].boxes == []  # a crowd box is left out
    faces = datasets.load({**meta, "categories": ["face"], "split_by": {"modulo": 2}}, str(tmp_path), split="test")
    assert [s.id for s in faces.samples] == ["a.png", "c.png"]
    np.testing.assert_allclose(faces.samples[0].boxes, [[0.1, 0.1, 0.3, 0.3]])
    with pytest.raises(CRError, match="has no category cat"):
        datasets.load({**meta, "categories": ["cat"]}, str(tmp_path))


# ---------------------------------------------------------------------- labels as a file

def test_labels_file_for_a_dataset_and_a_model(run_cr, tmp_path):
    (tmp_path / "labels.txt").write_text("zero\none\n\ntwo\n\n", encoding="utf-8")
    np.savez(tmp_path / "x.npz", x=np.zeros((4, 2), np.float32), y=np.array([0, 1, 3, 1]))
    ds = datasets.load({"name": "d", "format": "npz", "source": {"file": "x.npz"}, "labels": "labels.txt"}, str(tmp_path))
    assert ds.label_names == {"0": "zero", "1": "one", "2": "", "3": "two"}  # line i is class i
    model = {"kind": "model", "name": "m", "labels": "labels.txt"}
    assert datasets.load_labels(model, str(tmp_path)) == ["zero", "one", "", "two"]
    assert datasets.load_labels({"labels": ["a", "b"]}, None) == ["a", "b"]
    assert datasets.load_labels({"name": "m"}, str(tmp_path)) is None
    with pytest.raises(CRError, match="labels file .*nothing.txt does not exist"):
        datasets.load_labels({**model, "labels": "nothing.txt"}, str(tmp_path))
    # an image-folder dataset takes its class order from a labels file too
    _image_folder(tmp_path / "images")
    (tmp_path / "classes.txt").write_text("red\ngreen\nblue\n")
    folder = datasets.load({"name": "f", "format": "image-folder", "root": "images", "labels": "classes.txt"}, str(tmp_path))
    assert folder.samples[0].id == "blue/00.png" and folder.samples[0].label == 2 and folder.label_names["0"] == "red"
    # cr check wants the file present and listed with its checksum, for both kinds
    repo = make_repo(tmp_path / "mine", "mine")
    ds_meta = make_component(repo, "dataset", "with-labels", format="npz", source={"file": "x.npz"}, labels="labels.txt")
    m_meta = make_component(repo, "model", "with-labels", format="onnx", file="model.onnx", labels="labels.txt")
    for meta_path in (ds_meta, m_meta):
        (meta_path.parent / "labels.txt").write_text("zero\none\n")
    (ds_meta.parent / "x.npz").write_bytes((tmp_path / "x.npz").read_bytes())
    _tiny_onnx(m_meta.parent / "model.onnx")
    for meta_path in (ds_meta, m_meta):
        assert run_cr("hash", meta_path.parent).returncode == 0
    done = run_cr("check", repo)
    assert done.returncode == 0, done.stdout + done.stderr


def test_model_labels_file_names_the_predictions(run_cr, tmp_path):
    _colour_repo(tmp_path, run_cr, {"labels": "labels.txt"})
    (tmp_path / "mine" / "model" / "colour-mean" / "1.0.0" / "labels.txt").write_text("bleu\nvert\nrouge\n")
    image = _png(tmp_path / "photo.png", "red", seed=99)
    done = run_cr("run", "model", "colour-mean", "--backend", "onnxruntime", "-i", image, "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["predictions"][0]["top"][0]["label"] == "rouge"


# --------------------------------------------------------- what the pipeline steps import

def test_pipeline_requirements_name_pillow_for_image_steps():
    meta = {"preprocess": [{"op": "decode", "mode": "RGB"}, {"op": "resize", "size": [8, 8]}, {"op": "cast", "dtype": "float32"}],
            "postprocess": [{"op": "softmax"}]}
    assert pipeline.requirements(meta) == ["software:pillow"]
    assert pipeline.requirements({"preprocess": [{"op": "scale", "factor": 2}]}) == []
    assert pipeline.requirements({}) == []
    assert set(pipeline.STEP_REQUIRES) <= set(pipeline.PRE) | set(pipeline.POST)


PIL_BLOCKED = r"""
import json, sys
sys.modules["PIL"] = None  # as if Pillow were not installed
import numpy as np
from cr.errors import CRError
from cr.runtime.pipeline import Pipeline
out = []
for steps, data in (([{"op": "decode", "mode": "RGB"}], sys.argv[1]),
                    ([{"op": "cast", "dtype": "uint8"}, {"op": "resize", "size": [2, 2]}], np.zeros((4, 4, 3), np.uint8))):
    try:
        Pipeline(steps).sample(data)
        out.append(None)
    except CRError as exc:
        out.append([type(exc).__name__, exc.message, exc.hint])
print(json.dumps(out))
"""


def test_a_missing_pillow_names_the_step_and_how_to_install_it(tmp_path):
    image = _png(tmp_path / "x.png", "red", seed=0)
    done = subprocess.run([sys.executable, "-c", PIL_BLOCKED, str(image)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    decode, resize = json.loads(done.stdout)
    assert decode[0] == "PipelineError" and decode[1].startswith("preprocess step 0 (decode) needs pillow (module PIL)")
    assert resize[1].startswith("preprocess step 1 (resize) needs pillow (module PIL)")
    assert "cr install software pillow" in decode[2] and "cr install software pillow" in resize[2]


# ----------------------------------------------------------------------- the pillow recipe

def test_pillow_recipe_checks_and_offers_versions_for_each_python(run_cr):
    from cr.software.recipe import Recipe
    from cr.store.meta import load_json

    done = run_cr("check", ROOT / "recipes" / "pillow")
    assert done.returncode == 0 and "all valid" in done.stdout + done.stderr, done.stdout + done.stderr
    path = ROOT / "recipes" / "pillow" / "recipe.json"
    recipe = Recipe.from_meta(load_json(path), str(path))
    assert [p["module"] for p in recipe.detect] == ["PIL"]
    caps = frozenset({"linux", "x86_64"})
    newest = {}
    for python in ("3.9.18", "3.10.14", "3.11.7", "3.12.4", "3.13.1"):
        markers = {"implementation_name": "cpython", "platform_machine": "x86_64", "platform_system": "Linux",
                   "sys_platform": "linux", "os_name": "posix", "python_full_version": python,
                   "python_version": ".".join(python.split(".")[:2]), "platform_python_implementation": "CPython",
                   "implementation_version": python, "platform_release": "6.1.0", "platform_version": "#1"}
        versions = recipe.installable_versions(markers, caps)
        newest[python[:4]] = versions[0]
        assert recipe.method_for(versions[0], markers, caps).packages_for(versions[0]) == [f"pillow=={versions[0]}"]
    # Pillow 12 dropped Python 3.9, Pillow 13 Python 3.10
    assert newest == {"3.9.": "11.3.0", "3.10": "12.3.0", "3.11": "13.0.0", "3.12": "13.0.0", "3.13": "13.0.0"}


def test_has_annotations_judges_a_dataset_meta_without_reading_it():
    assert datasets.has_annotations({"format": "image-folder"}) and datasets.has_annotations({"format": "coco"})
    assert datasets.has_annotations({"format": "images", "items": [{"id": "a", "path": "a.png", "boxes": []}]})
    assert not datasets.has_annotations({"format": "images", "items": [{"id": "a", "path": "a.png"}]})
    assert datasets.has_annotations({"format": "csv"}) and not datasets.has_annotations({"format": "csv", "label_column": None})
    assert datasets.has_annotations({"format": "npz", "labels": "labels.txt"}) and not datasets.has_annotations({"format": "npz"})


def test_csv_with_label_column_null_has_no_labels(tmp_path):
    (tmp_path / "rows.csv").write_text("1,2,3\n4,5,6\n")
    ds = datasets.load({"name": "c", "format": "csv", "source": {"file": "rows.csv"}, "label_column": None}, str(tmp_path))
    assert [s.data.tolist() for s in ds.samples] == [[1, 2, 3], [4, 5, 6]] and not ds.has_labels
    one = datasets.load({"name": "c", "format": "csv", "source": {"file": "rows.csv"}, "label_column": 0}, str(tmp_path), limit=1)
    assert one.samples[0].label == 1 and one.samples[0].data.tolist() == [2, 3]
