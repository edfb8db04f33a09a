"""Tiny real models and datasets for the segmentation, landmarks and regression tasks.

Each builder writes, into a registered repository, a model component (ONNX, plus a
TorchScript variant for the torch backend) exported from a small torch module with fixed
weights, and a dataset carrying the task's targets, generated reproducibly:

    segmentation  a 1x1 convolution that thresholds grey levels at 0.5 (class 1 above), on
                  16x16 tiles of scikit-image's camera photograph whose masks come from
                  Otsu's threshold of the whole photograph (so the two disagree a little)
    landmarks     a spatial soft-argmax over 3 heatmap channels -> 3 (x, y) points, on
                  images of Gaussian blobs at seeded sub-pixel positions
    regression    ordinary least squares on scikit-learn's diabetes data (10 features ->
                  disease progression), fitted with numpy and loaded into nn.Linear
"""
from __future__ import annotations

import json
import secrets
import warnings
from pathlib import Path

import numpy as np

THRESHOLD = 0.5
TILE = 16
POINTS = 3
SIZE = 16


def _meta(folder: Path, data: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"uid": secrets.token_hex(8), "version": "1.0.0", "tags": [], **data}
    (folder / "meta.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return folder


def _export(module, example, folder: Path, stem: str, output: str, dynamic_out: dict | None = None) -> None:
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TorchScript and its ONNX exporter are deprecated (and fast)
        torch.jit.trace(module, (example,)).save(str(folder / f"{stem}.ts"))
        torch.onnx.export(module, (example,), str(folder / f"{stem}.onnx"), input_names=["x"], output_names=[output],
                          dynamic_axes={"x": {0: "n"}, output: {0: "n"}}, dynamo=False)


def _model(repo: Path, name: str, task: str, inputs: list, outputs: list, decode: dict | None, dataset: str | None,
           **extra) -> Path:
    folder = repo / "model" / name / "1.0.0"
    return _meta(folder, {
        "kind": "model", "name": name, "task": task, "format": "onnx", "file": f"{name}.onnx", "precision": "fp32",
        "inputs": inputs, "outputs": outputs, **({"decode": decode} if decode is not None else {}),
        **({"dataset": {"ref": dataset, "split": "all"}} if dataset else {}),
        "variants": [{"name": "torchscript", "format": "torchscript", "file": f"{name}.ts", "precision": "fp32"}],
        **extra})


# -- segmentation -------------------------------------------------------------------------

def camera_tiles() -> tuple[np.ndarray, np.ndarray]:
    """(16 tiles 1x16x16 float32 in [0, 1], their 16x16 masks by Otsu's threshold)."""
    from skimage import data
    from skimage.filters import threshold_otsu

    image = data.camera()[::8, ::8].astype(np.float32) / np.float32(255)  # 64x64
    cut = threshold_otsu(image)
    tiles = image.reshape(4, TILE, 4, TILE).transpose(0, 2, 1, 3).reshape(16, 1, TILE, TILE)
    return np.ascontiguousarray(tiles), (tiles[:, 0] > cut).astype(np.int64)


def segmentation(repo: Path, with_dataset: bool = True, **meta) -> dict:
    import torch

    folder = repo / "model" / "seg-threshold" / "1.0.0"
    folder.mkdir(parents=True, exist_ok=True)
    conv = torch.nn.Conv2d(1, 2, 1)
    with torch.no_grad():  # class 0 scores THRESHOLD - x, class 1 scores x - THRESHOLD
        conv.weight.copy_(torch.tensor([[[[-1.0]]], [[[1.0]]]]))
        conv.bias.copy_(torch.tensor([THRESHOLD, -THRESHOLD]))
    x, masks = camera_tiles()
    _export(conv.eval(), torch.from_numpy(x[:2]), folder, "seg-threshold", "logits")
    if with_dataset:
        np.savez(repo / "seg.npz", x=x, masks=masks)
        ds = _meta(repo / "dataset" / "camera-tiles" / "1.0.0", {
            "kind": "dataset", "name": "camera-tiles", "format": "npz", "source": {"file": "tiles.npz"},
            "targets": {"kind": "masks"}, "labels": ["dark", "bright"]})
        (repo / "seg.npz").rename(ds / "tiles.npz")
    _model(repo, "seg-threshold", "segmentation",
           [{"name": "x", "shape": [None, 1, TILE, TILE], "dtype": "float32", "layout": "NCHW", "range": [0, 1]}],
           [{"name": "logits", "shape": [None, 2, TILE, TILE], "dtype": "float32", "layout": "NCHW"}],
           {"layout": "NCHW"}, "dataset:camera-tiles" if with_dataset else None, **{"labels": ["dark", "bright"], **meta})
    return {"x": x, "masks": masks, "predicted": (x[:, 0] > THRESHOLD).astype(np.int64)}


# -- landmarks ----------------------------------------------------------------------------

class SoftArgmax:
    """Built lazily (torch is imported inside): points = sum(softmax(beta * heatmap) * grid)."""

    @staticmethod
    def build(beta: float = 8.0):
        import torch

        class Module(torch.nn.Module):
            def __init__(self):
                super().__init__()
                ys, xs = torch.meshgrid(torch.arange(SIZE, dtype=torch.float32), torch.arange(SIZE, dtype=torch.float32),
                                        indexing="ij")
                self.register_buffer("grid", torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1))

            def forward(self, x):
                weights = torch.softmax(beta * x.flatten(2), dim=-1)  # N, K, H*W
                return torch.matmul(weights, self.grid).flatten(1)  # N, K*2 as x0, y0, x1, y1, ...

        return Module().eval()


def blobs(count: int = 12, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(images N x 3 x 16 x 16 of one Gaussian blob per channel, the blob centres N x 3 x 2 as (x, y))."""
    rng = np.random.default_rng(seed)
    points = rng.uniform(3, SIZE - 4, (count, POINTS, 2))
    ys, xs = np.mgrid[0:SIZE, 0:SIZE]
    images = np.exp(-((xs[None, None] - points[..., 0, None, None]) ** 2 + (ys[None, None] - points[..., 1, None, None]) ** 2) / 2.0)
    return images.astype(np.float32), points


def landmarks(repo: Path, normalize: dict | None = None) -> dict:
    import torch

    folder = repo / "model" / "blob-points" / "1.0.0"
    folder.mkdir(parents=True, exist_ok=True)
    module = SoftArgmax.build()
    x, points = blobs()
    _export(module, torch.from_numpy(x[:2]), folder, "blob-points", "points")
    ds = _meta(repo / "dataset" / "blobs" / "1.0.0", {"kind": "dataset", "name": "blobs", "format": "npz", "source": {"file": "blobs.npz"},
                                                       "targets": {"kind": "points"}})
    np.savez(ds / "blobs.npz", x=x, points=points)
    decode = {"points": POINTS, **({"normalize": normalize} if normalize else {})}
    _model(repo, "blob-points", "landmarks",
           [{"name": "x", "shape": [None, POINTS, SIZE, SIZE], "dtype": "float32", "layout": "NCHW", "range": [0, 1]}],
           [{"name": "points", "shape": [None, POINTS * 2], "dtype": "float32", "layout": "NC"}], decode, "dataset:blobs")
    with torch.no_grad():
        predicted = module(torch.from_numpy(x)).numpy().reshape(-1, POINTS, 2)
    return {"x": x, "points": points, "predicted": predicted}


# -- regression ---------------------------------------------------------------------------

def regression(repo: Path) -> dict:
    import torch
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes()
    x, y = bunch["data"].astype(np.float32), bunch["target"]
    design = np.hstack([x.astype(np.float64), np.ones((len(x), 1))])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    linear = torch.nn.Linear(10, 1)
    with torch.no_grad():
        linear.weight.copy_(torch.tensor(coef[:10], dtype=torch.float32)[None])
        linear.bias.copy_(torch.tensor(coef[10:], dtype=torch.float32))
    folder = repo / "model" / "diabetes-ols" / "1.0.0"
    folder.mkdir(parents=True, exist_ok=True)
    _export(linear.eval(), torch.from_numpy(x[:2]), folder, "diabetes-ols", "progression")
    _meta(repo / "dataset" / "diabetes" / "1.0.0", {
        "kind": "dataset", "name": "diabetes", "format": "loader",
        "source": {"package": "scikit-learn", "loader": "sklearn.datasets:load_diabetes"}, "deps": ["software:scikit-learn@>=1.0"],
        "sample": {"shape": [10], "dtype": "float32"}, "targets": {"kind": "values"}})
    _model(repo, "diabetes-ols", "regression", [{"name": "x", "shape": [None, 10], "dtype": "float32", "layout": "NC"}],
           [{"name": "progression", "shape": [None, 1], "dtype": "float32", "layout": "NC"}], {}, "dataset:diabetes")
    with torch.no_grad():
        predicted = linear(torch.from_numpy(x)).numpy().reshape(-1)
    return {"x": x, "y": y, "predicted": predicted}
