"""What every action entry does first: open the backend on the model, find the inputs.

job (built by cr.run.actions):
    {"model": {"ref", "meta" (the effective variant meta), "dir"},
     "dataset": {"ref", "meta", "dir", "split"} | None,
     "backend": {"name", "entry", "origin", "options"}, "params": {...}}
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import CRError
from .. import model as model_files
from .. import placement as placements
from ..backends.base import check_format, check_options
from ..pipeline import Pipeline, describe
from ..registry import BackendEntry, load_class


@dataclass
class Opened:
    backend: object
    meta: dict
    ref: str
    located: dict
    placement: dict | None = field(default=None)  # where the framework put the model (cr.runtime.placement)

    def info(self) -> dict:
        return self.backend.info() if callable(getattr(self.backend, "info", None)) else {}

    def input_specs(self) -> list[dict]:
        return self.meta.get("inputs") or self.backend.inputs()

    def input_name(self) -> str:
        specs = self.input_specs()
        if len(specs) != 1:
            raise CRError(f"{self.ref} has {len(specs)} inputs; dataset samples feed models with one input",
                          hint="benchmark it with synthetic inputs (--inputs synthetic)")
        return specs[0]["name"]

    def model_file(self) -> dict:
        if self.located.get("sha256"):  # hashed (through the cache) when its pin was checked
            return dict(self.located)
        return {**self.located, "sha256": model_files.sha256(self.located["path"])}

    def pipeline(self) -> dict:
        return {**describe(self.meta), "variant": self.meta.get("variant"), "precision": self.meta.get("precision")}


def open_backend(job: dict) -> Opened:
    """Load the job's model into its backend (checks format and options first)."""
    spec = job["model"]
    ref, meta = spec.get("ref", "the model"), dict(spec["meta"])
    meta.setdefault("_dir", spec.get("dir"))
    params = job.get("params") or {}
    located = model_files.locate(meta, spec.get("dir"), ref)
    b = job["backend"]
    backend = load_class(BackendEntry(b["name"], b["entry"], b.get("origin", "the job")))()
    options = dict(b.get("options") or {})
    if params.get("threads") is not None:
        options.setdefault("threads", params["threads"])
    check_format(backend, meta, ref)
    check_options(backend, options)
    required = placements.parse(params.get("require_placement"))
    available = getattr(backend, "placement_available", None)
    if required and callable(available):  # a provider this machine lacks: refused before the model loads
        placements.check_available(b["name"], required, available(options))
    backend.load(located["path"], meta, options)
    opened = Opened(backend, meta, ref, located, placements.record(backend, b["name"], required))
    failure = placements.unmet(opened.placement)
    if failure is not None:  # asked for a provider and did not get it: no numbers from elsewhere
        backend.close()
        raise failure
    return opened


def as_list(outputs) -> list:
    """A backend's outputs as a list of arrays (dicts keep their order)."""
    if isinstance(outputs, dict):
        return list(outputs.values())
    if isinstance(outputs, (list, tuple)):
        return list(outputs)
    return [outputs]


def load_dataset(job: dict, limit: int | None = None, need: str | None = None):
    """The job's dataset samples; need "labels", "boxes", "masks", "points" or "values"
    refuses a dataset without them."""
    from ..datasets import load

    spec = job.get("dataset")
    if not spec:
        raise CRError(f"no dataset for {job['model'].get('ref', 'the model')}",
                      hint="give --dataset REF, or add \"dataset\": {\"ref\": ...} to the model meta")
    ds = load(spec["meta"], spec.get("dir"), spec.get("split"), limit, spec.get("ref"))
    if need == "labels" and not ds.has_labels:
        raise CRError(f"{spec.get('ref')} has no labels, so accuracy cannot be measured on it",
                      hint="validate on a dataset whose samples carry labels (cr show DATASET), or use cr run to see predictions")
    if need == "boxes" and not ds.has_boxes:
        raise CRError(f"{spec.get('ref')} has no boxes, so detections cannot be validated on it",
                      hint="validate a detector on a dataset whose items carry boxes")
    if need in ("masks", "points", "values") and not ds.has_targets(need):
        task = {"masks": "segmentation", "points": "landmarks", "values": "regression"}[need]
        declared = f"its targets are {ds.target_kind}" if ds.target_kind else "its meta declares no targets"
        raise CRError(f"{spec.get('ref')} has no {need} ({declared}), so a {task} model cannot be validated on it",
                      hint=f'validate on a dataset whose meta declares "targets": {{"kind": "{need}"}} (docs/datasets.md)')
    return ds


def preprocess(meta: dict) -> Pipeline:
    return Pipeline(meta.get("preprocess"), "preprocess")


def postprocess(meta: dict) -> Pipeline:
    return Pipeline(meta.get("postprocess"), "postprocess")


def fixed_batch(specs: list[dict]) -> int | None:
    """The model's fixed leading dim, or None when it is dynamic."""
    dims = {s["shape"][0] for s in specs if s.get("shape") and isinstance(s["shape"][0], int)}
    return dims.pop() if len(dims) == 1 else None
