"""Dataset input providers: a dataset component -> its samples (data, label, boxes).

    ds = load(meta, component_dir, split="test", limit=100)
    ds.samples[0].data, ds.samples[0].label
    batches = DatasetInputs(ds.samples, Pipeline(model_meta["preprocess"]), input_name, batch_size).batches()

Formats (dataset meta ``format``):
    loader   source.loader "module:function" returning a scikit-learn style bunch (``images``
             if present, else ``data``; ``target`` as labels) or an (X, y) pair
    csv      source {package, path} or file: rows of numbers, the label in column
             ``label_column`` (default -1, the last); gzip when the name ends in .gz
    npz      source {package, path} or file with arrays ``x`` (or ``data``) and ``y`` (or ``labels``)
    images   ``items`` [{id, path, label?, boxes?}]: files inside source.package (or the
             component), handed to the pipeline as paths (its decode step reads them)
Each sample is reshaped to ``sample.shape`` when the meta gives one. Splits: ``split_by``
{"modulo": m, "test_remainder": r} puts sample i in "test" when i % m == r, else in
"train" (no randomness, so every machine gets the same split); "all" (or None) is every
sample. Nothing here imports the package that ships the data (only finds its files),
except a loader, which is called.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CRError, NotFound
from .inputs import InputProvider
from .model import _package_dirs


@dataclass
class Sample:
    id: str
    data: object
    label: int | None = None
    boxes: list | None = None


@dataclass
class Dataset:
    ref: str
    split: str
    samples: list = field(default_factory=list)
    label_names: dict = field(default_factory=dict)

    @property
    def has_labels(self) -> bool:
        return any(s.label is not None for s in self.samples)

    @property
    def has_boxes(self) -> bool:
        return any(s.boxes is not None for s in self.samples)


def _file(meta: dict, component_dir: str | None, ref: str) -> Path:
    source = meta.get("source") or {}
    if source.get("file") or meta.get("file"):
        path = Path(component_dir or ".") / (source.get("file") or meta["file"])
        if not path.is_file():
            raise NotFound(f"{ref}: its file {path} does not exist", hint="restore it, or fix 'file' in the meta")
        return path
    package, inner = source.get("package"), source.get("path")
    if not (package and inner):
        raise CRError(f"{ref} names neither a file nor source {{package, path}}", hint="add one to its meta")
    return _in_package(package, inner, ref)


def _in_package(package: str, inner: str, ref: str) -> Path:
    dirs = _package_dirs(package)
    if not dirs:
        raise NotFound(f"{ref} comes from the package {package}, which is not installed in this environment",
                       hint=f"install it (pip install {package}, or cr install software:{package})")
    for d in dirs:
        if (d / inner).is_file():
            return d / inner
    raise NotFound(f"{ref}: the package {package} has no file {inner}", hint="the installed version may not ship it")


def _rows(meta: dict, component_dir: str | None, ref: str):
    import numpy as np

    fmt = meta.get("format")
    source = meta.get("source") or {}
    if fmt == "loader":
        module, _, attr = (source.get("loader") or "").partition(":")
        if not module or not attr:
            raise CRError(f"{ref}: format loader needs source.loader as module:function")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise NotFound(f"{ref}: cannot import its loader {source['loader']} ({exc})",
                           hint=f"install {source.get('package') or module.split('.')[0]} in this environment") from None
        bunch = fn()
        if isinstance(bunch, tuple):
            x, y = bunch
        else:
            x = bunch["images"] if "images" in bunch else bunch["data"]
            y = bunch.get("target")
        return np.asarray(x), (None if y is None else np.asarray(y))
    if fmt == "csv":
        path = _file(meta, component_dir, ref)
        table = np.loadtxt(path, delimiter=",", dtype=np.float64)
        col = int(meta.get("label_column", -1))
        if col is None:
            return table, None
        y = table[:, col].astype(np.int64)
        return np.delete(table, col % table.shape[1], axis=1), y
    if fmt == "npz":
        path = _file(meta, component_dir, ref)
        with np.load(path, allow_pickle=False) as z:
            xk = next((k for k in ("x", "data") if k in z), None)
            if xk is None:
                raise CRError(f"{ref}: {path.name} has no array x or data (it has {', '.join(z.files)})")
            yk = next((k for k in ("y", "labels") if k in z), None)
            return z[xk], (z[yk] if yk else None)
    raise CRError(f"{ref}: cannot read dataset format {fmt!r}", hint="formats: loader, csv, npz, images")


def _in_split(index: int, split: str | None, rule: dict | None, ref: str) -> bool:
    if split in (None, "all"):
        return True
    if not rule:
        raise CRError(f"{ref} defines no splits, so split {split!r} does not exist", hint="use split all (or leave it out)")
    if split not in ("test", "train"):
        raise CRError(f"{ref} has no split {split!r}", hint="splits: train, test, all")
    is_test = index % int(rule["modulo"]) == int(rule.get("test_remainder", 0))
    return is_test == (split == "test")


def load(meta: dict, component_dir: str | None = None, split: str | None = None, limit: int | None = None,
         ref: str | None = None) -> Dataset:
    """The samples of one split of a dataset component (at most ``limit``)."""
    ref = ref or f"dataset:{meta.get('name', '?')}"
    names = meta.get("labels") if isinstance(meta.get("labels"), list) else None
    label_names = {str(i): n for i, n in enumerate(names or [])} | dict(meta.get("label_names") or {})
    out = Dataset(ref, split or "all", label_names=label_names)
    rule = meta.get("split_by")
    _in_split(0, split, rule, ref)  # an unknown split fails before any data is read
    if meta.get("format") == "images":
        source = meta.get("source") or {}
        for i, item in enumerate(meta.get("items") or []):
            if not _in_split(i, split, rule, ref):
                continue
            if source.get("package"):
                path = _in_package(source["package"], item["path"], ref)
            else:
                path = Path(component_dir or ".") / item["path"]
                if not path.is_file():
                    raise NotFound(f"{ref}: item {item['id']}: {path} does not exist")
            out.samples.append(Sample(item["id"], str(path), item.get("label"), item.get("boxes")))
            if limit is not None and len(out.samples) >= limit:
                break
        return out
    x, y = _rows(meta, component_dir, ref)
    shape = (meta.get("sample") or {}).get("shape")
    dtype = (meta.get("sample") or {}).get("dtype")
    for i in range(len(x)):
        if not _in_split(i, split, rule, ref):
            continue
        data = x[i]
        if shape:
            data = data.reshape([d if d is not None else -1 for d in shape])
        if dtype:
            data = data.astype(dtype)
        out.samples.append(Sample(str(i), data, None if y is None else int(y[i])))
        if limit is not None and len(out.samples) >= limit:
            break
    if not out.samples:
        raise CRError(f"{ref}: split {split or 'all'} has no samples", hint="check split_by in the dataset meta")
    return out


class DatasetInputs(InputProvider):
    """Batches of pre-processed dataset samples for one model input (the last batch may be short)."""

    def __init__(self, samples: list, pipeline, input_name: str, batch_size: int = 1, pad_last: bool = False):
        self.samples, self.pipeline, self.input_name = samples, pipeline, input_name
        self.batch_size, self.pad_last = int(batch_size), pad_last

    def groups(self) -> list[list]:
        """The samples of each batch, unpadded."""
        n = self.batch_size
        return [self.samples[i:i + n] for i in range(0, len(self.samples), n)]

    def batches(self) -> list[dict]:
        out = []
        for group in self.groups():
            if self.pad_last and len(group) < self.batch_size:  # a fixed-batch model: repeat to fill
                group = (group * self.batch_size)[:self.batch_size]
            out.append({self.input_name: self.pipeline.batch([s.data for s in group])})
        return out
