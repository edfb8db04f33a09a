"""Dataset input providers: a dataset component -> its samples (data, label, boxes).

    ds = load(meta, component_dir, split="test", limit=100)
    ds.samples[0].data, ds.samples[0].label
    batches = DatasetInputs(ds.samples, Pipeline(model_meta["preprocess"]), input_name, batch_size).batches()
    names = load_labels(model_meta, model_dir)      # a meta's labels: a list, or a file's lines

Formats (dataset meta ``format``; docs/datasets.md has an example of each):
    loader   source.loader "module:function" returning a scikit-learn style bunch (``images``
             if present, else ``data``; ``target`` as labels) or an (X, y) pair
    csv      source {package, path} or file: rows of numbers, the label in column
             ``label_column`` (default -1, the last); gzip when the name ends in .gz
    npz      source {package, path} or file with arrays ``x`` (or ``data``) and ``y`` (or ``labels``)
    images   ``items`` [{id, path, label?, boxes?}]: files inside source.package (or the
             component), handed to the pipeline as paths (its decode step reads them)
    image-folder  one folder per class under ``root`` (default the component directory; with
             source {package, path}: that folder of the package); class folders sorted by
             name are labels 0, 1, ... unless ``labels`` lists the names; every image file
             inside a class folder (recursively, sorted by path) is a sample
    coco     source.file (or {package, path}): a COCO instances JSON, or ``coco``: the same
             object inline in the meta; its images (under ``root``, default the JSON's
             folder; an inline image may name the registry ``package`` its file_name is in),
             in image id order, with the normalised [ymin, xmin, ymax, xmax] boxes of their
             annotations (crowd ones left out; only those of ``categories`` when given) and
             their pixel size; no class labels
Targets other than class labels (``targets`` {"kind": masks | points | values, "array":
NAME}; cr.runtime.tasks): the npz array NAME (default: masks, points or targets), a
loader's ``target``, a csv's label column, kept as arrays in ``sample.target`` instead of
integer labels; segmentation, landmarks and regression validate against them.
Each sample is reshaped to ``sample.shape`` when the meta gives one (array formats). Splits:
``split_by`` {"modulo": m, "test_remainder": r} puts sample i (in the order above) in
"test" when i % m == r, else in "train" (no randomness, so every machine gets the same
split); "all" (or None) is every sample. ``labels`` (dataset and model metas) is a list
of names or a file in the component, one name per line (load_labels). Nothing here
imports the package that ships the data (only finds its files), except a loader, which
is called.
"""
from __future__ import annotations

import importlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CRError, NotFound
from .inputs import InputProvider
from .model import package_dirs


# The npz array holding each kind of target, unless targets.array names another.
_TARGET_ARRAYS = {"masks": "masks", "points": "points", "values": "targets"}
TARGET_KINDS = tuple(_TARGET_ARRAYS)
FORMATS = ("loader", "csv", "npz", "images", "image-folder", "coco")
# What image-folder takes as an image (case-insensitive); other files are ignored.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm", ".pbm")
_LABELS_MAX_BYTES = 16 << 20


@dataclass
class Sample:
    id: str
    data: object
    label: int | None = None
    boxes: list | None = None
    size: tuple | None = None  # (width, height) in pixels, where the dataset says (coco)
    target: object = None  # a mask, points or values (the dataset's ``targets``)


@dataclass
class Dataset:
    ref: str
    split: str
    samples: list = field(default_factory=list)
    label_names: dict = field(default_factory=dict)
    target_kind: str | None = None  # masks, points or values: what sample.target holds

    def has_targets(self, kind: str) -> bool:
        return self.target_kind == kind and any(s.target is not None for s in self.samples)

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
            field = "/source/file" if source.get("file") else "/file"
            raise NotFound(f"{ref}: its file {path} does not exist",
                           hint=f"restore it, or fix {field} in the dataset's meta.json (cr show {ref} shows its folder and meta)")
        return path
    package, inner = source.get("package"), source.get("path")
    if not (package and inner):
        raise CRError(f"{ref} names neither a file nor source {{package, path}}", hint="add one to its meta")
    return _in_package(package, inner, ref)


def _in_package(package: str, inner: str, ref: str) -> Path:
    dirs = package_dirs(package)
    if not dirs:
        raise NotFound(f"{ref} comes from the package {package}, which is not installed in this environment",
                       hint=f"install it (pip install {package}, or cr install software:{package})")
    for d in dirs:
        if (d / inner).is_file():
            return d / inner
    raise NotFound(f"{ref}: the package {package} has no file {inner}", hint="the installed version may not ship it")


def load_labels(meta: dict, component_dir: str | None = None, ref: str | None = None) -> list[str] | None:
    """A dataset's or a model's ``labels``: the list itself, or the lines of the file it
    names (relative to component_dir; UTF-8, one label per line, line i is class i, blank
    lines at the end ignored). None when the meta has no labels."""
    labels = meta.get("labels")
    ref = ref or f"{meta.get('kind', 'component')}:{meta.get('name', '?')}"
    if labels is None:
        return None
    if isinstance(labels, list):
        return [str(x) for x in labels]
    if not isinstance(labels, str):
        raise CRError(f"{ref}: labels must be a list of names or a file name, found {type(labels).__name__}")
    if component_dir is None:
        raise CRError(f"{ref} names the labels file {labels!r} but its directory is unknown",
                      hint="load the component through its ref, or give its labels as a list")
    path = Path(component_dir) / labels
    if not path.is_file():
        raise NotFound(f"{ref}: its labels file {path} does not exist",
                       hint="restore it (one label per line), or fix 'labels' in the meta")
    if path.stat().st_size > _LABELS_MAX_BYTES:
        raise CRError(f"{ref}: its labels file {path} is larger than {_LABELS_MAX_BYTES >> 20} MiB",
                      hint="a labels file has one class name per line")
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8-sig").splitlines()]
    except UnicodeDecodeError as exc:
        raise CRError(f"{ref}: its labels file {path} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                      hint="save it as UTF-8, one label per line") from None
    while lines and not lines[-1]:
        lines.pop()
    return lines


def has_annotations(meta: dict) -> bool:
    """Whether a dataset meta's samples carry labels or boxes, judged from the meta alone
    (nothing is read): an image-folder's class folders are labels, a coco file has boxes,
    images items say so, a csv has a label column unless label_column is null; loader and
    npz datasets say so through labels or label_names."""
    fmt = meta.get("format")
    if fmt in ("image-folder", "coco") or meta.get("targets"):
        return True
    if fmt == "images":
        return any(isinstance(i, dict) and ("label" in i or "boxes" in i) for i in meta.get("items") or [])
    if fmt == "csv":
        return meta.get("label_column", -1) is not None
    return bool(meta.get("labels") or meta.get("label_names"))


def _folder(meta: dict, component_dir: str | None, ref: str) -> Path:
    """The folder image-folder reads: root in the component, or source.path in source.package."""
    source = meta.get("source") or {}
    if source.get("package"):
        dirs = package_dirs(source["package"])
        if not dirs:
            raise NotFound(f"{ref} comes from the package {source['package']}, which is not installed in this environment",
                           hint=f"install it (pip install {source['package']}, or cr install software:{source['package']})")
        for d in dirs:
            if (d / (source.get("path") or "")).is_dir():
                return d / (source.get("path") or "")
        raise NotFound(f"{ref}: the package {source['package']} has no folder {source.get('path') or '.'}",
                       hint="the installed version may not ship it")
    root = Path(component_dir or ".") / (meta.get("root") or ".")
    if not root.is_dir():
        raise NotFound(f"{ref}: its image folder {root} does not exist",
                       hint="put one folder per class there, or fix 'root' in the meta")
    return root


def _is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_SUFFIXES


def _image_folder(meta: dict, component_dir: str | None, ref: str) -> tuple[list[dict], list[str]]:
    """([{id, path, label}] in class-folder then path order, the label names)."""
    root = _folder(meta, component_dir, ref)
    classes = sorted(d.name for d in root.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name != "__pycache__")
    names = load_labels(meta, component_dir, ref)
    if names is None:
        names = classes
    index = {}
    for i, n in enumerate(names):
        index.setdefault(n, i)
    unknown = [c for c in classes if c not in index]
    if unknown:
        raise CRError(f"{ref}: the class folder(s) {', '.join(unknown[:5])} of {root} are not among its {len(names)} labels",
                      hint="add them to 'labels', or move them out of the dataset folder")
    items = []
    for cls in classes:
        folder = root / cls
        files = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            files += [Path(dirpath) / f for f in filenames if not f.startswith(".") and _is_image(Path(f))]
        for f in sorted(files, key=lambda f: f.relative_to(folder).as_posix()):
            items.append({"id": f"{cls}/{f.relative_to(folder).as_posix()}", "path": f, "label": index[cls]})
    if not items:
        raise CRError(f"{ref}: {root} holds no images in class folders",
                      hint=f"image-folder reads <root>/<class>/<image> ({', '.join(IMAGE_SUFFIXES)})")
    return items, names


def _coco(meta: dict, component_dir: str | None, ref: str) -> list[dict]:
    """[{id, path, boxes, size}] of a COCO instances file (or the meta's inline ``coco``), in
    image id order (boxes normalised)."""
    inline = meta.get("coco")
    path = Path(component_dir or ".") / "meta.json" if inline is not None else _file(meta, component_dir, ref)
    try:
        if inline is not None:
            data = inline
        else:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        images, annotations = data["images"], data.get("annotations") or []
        categories = {c["name"]: c["id"] for c in data.get("categories") or []}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CRError(f"{ref}: {path} is not a COCO instances file ({type(exc).__name__}: {exc})",
                      hint="it needs images [{id, file_name, width, height}] and annotations [{image_id, bbox}]") from None
    keep = None
    if meta.get("categories"):
        missing = [c for c in meta["categories"] if c not in categories]
        if missing:
            raise CRError(f"{ref}: {path.name} has no categor{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)}",
                          hint=f"its categories: {', '.join(list(categories)[:20])}")
        keep = {categories[c] for c in meta["categories"]}
    source = meta.get("source") or {}
    if inline is not None:
        base = Path(component_dir or ".") / (meta.get("root") or ".")
    elif not meta.get("root"):
        base = path.parent
    elif source.get("package") and not (source.get("file") or meta.get("file")):
        base = path  # root is inside the package folder the annotations were found in
        for _ in Path(source["path"]).parts:
            base = base.parent
        base = base / meta["root"]
    else:
        base = Path(component_dir or ".") / meta["root"]
    boxes: dict = {}
    for a in annotations:
        if a.get("iscrowd") or (keep is not None and a.get("category_id") not in keep):
            continue
        boxes.setdefault(a["image_id"], []).append(a["bbox"])
    items = []
    for image in sorted(images, key=lambda im: im["id"]):
        w, h = image.get("width"), image.get("height")
        if not w or not h:
            raise CRError(f"{ref}: image {image.get('id')} of {path.name} gives no width and height",
                          hint="COCO images need width and height to normalise their boxes")
        package = (image.get("package") or source.get("package")) if inline is not None else None
        where = _in_package(package, image["file_name"], ref) if package else base / image["file_name"]
        items.append({"id": str(image["file_name"]), "path": where, "size": (w, h),
                      "boxes": [[y / h, x / w, (y + bh) / h, (x + bw) / w] for x, y, bw, bh in boxes.get(image["id"], [])]})
    return items


_IMAGE_FORMATS = ("images", "image-folder", "coco")


def _image_items(meta: dict, component_dir: str | None, ref: str) -> tuple[list[dict], list[str] | None]:
    """(items [{id, path, label?, boxes?}], label names) of an image format, in sample order."""
    fmt = meta.get("format")
    if fmt == "image-folder":
        return _image_folder(meta, component_dir, ref)
    names = load_labels(meta, component_dir, ref)
    return (_coco(meta, component_dir, ref) if fmt == "coco" else list(meta.get("items") or [])), names


def _image_path(meta: dict, component_dir: str | None, item: dict, ref: str) -> Path:
    """Where an item's file is (checked): image-folder and coco items hold it already."""
    if isinstance(item["path"], Path):
        path = item["path"]
    elif (meta.get("source") or {}).get("package"):
        return _in_package(meta["source"]["package"], item["path"], ref)
    else:
        path = Path(component_dir or ".") / item["path"]
    if not path.is_file():
        raise NotFound(f"{ref}: item {item['id']}: {path} does not exist", hint="restore the file, or fix the dataset meta")
    return path


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
        table = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
        col = meta.get("label_column", -1)
        if col is None:  # no labels: every column is data
            return table, None
        col = int(col)
        y = table[:, col] if meta.get("targets") else table[:, col].astype(np.int64)
        return np.delete(table, col % table.shape[1], axis=1), y
    if fmt == "npz":
        path = _file(meta, component_dir, ref)
        with np.load(path, allow_pickle=False) as z:
            xk = next((k for k in ("x", "data") if k in z), None)
            if xk is None:
                raise CRError(f"{ref}: {path.name} has no array x or data (it has {', '.join(z.files)})")
            targets = meta.get("targets")
            if targets:
                yk = targets.get("array") or _TARGET_ARRAYS.get(targets.get("kind"))
                if yk not in z:
                    raise CRError(f"{ref}: {path.name} has no array {yk!r} for its targets (it has {', '.join(z.files)})",
                                  hint="name the array in the dataset meta's targets.array")
            else:
                yk = next((k for k in ("y", "labels") if k in z), None)
            return z[xk], (z[yk] if yk else None)
    raise CRError(f"{ref}: cannot read dataset format {fmt!r}", hint=f"formats: {', '.join(FORMATS)} (docs/datasets.md)")


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
    import numpy as np

    ref = ref or f"dataset:{meta.get('name', '?')}"
    rule = meta.get("split_by")
    _in_split(0, split, rule, ref)  # an unknown split fails before any data is read
    if meta.get("format") in _IMAGE_FORMATS:
        items, names = _image_items(meta, component_dir, ref)
    else:
        items, names = None, load_labels(meta, component_dir, ref)
    label_names = {str(i): n for i, n in enumerate(names or [])} | dict(meta.get("label_names") or {})
    out = Dataset(ref, split or "all", label_names=label_names)
    if items is not None:
        for i, item in enumerate(items):
            if not _in_split(i, split, rule, ref):
                continue
            out.samples.append(Sample(item["id"], str(_image_path(meta, component_dir, item, ref)), item.get("label"),
                                      item.get("boxes"), item.get("size")))
            if limit is not None and len(out.samples) >= limit:
                break
        if not out.samples:
            raise CRError(f"{ref}: split {split or 'all'} has no samples", hint="check split_by and the images in the dataset meta")
        return out
    targets = meta.get("targets")
    if targets is not None:
        if not isinstance(targets, dict) or targets.get("kind") not in TARGET_KINDS:
            raise CRError(f"{ref}: targets.kind is {(targets or {}).get('kind') if isinstance(targets, dict) else targets!r}, "
                          f"expected one of {', '.join(TARGET_KINDS)}", hint="fix targets in the dataset meta (docs/datasets.md)")
        out.target_kind = targets["kind"]
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
        if targets is not None:
            out.samples.append(Sample(str(i), data, target=None if y is None else np.asarray(y[i])))
        else:
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
