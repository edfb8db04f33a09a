"""validate() and parity(): accuracy against expectations, and agreement across backends.

    record = validate("model:lenet-digits", backend="onnxruntime")      # top-1/top-5 vs expected
    record = parity("model:lenet-digits", ["onnxruntime", "torch", "tflite"])

parity() runs the validate action once per backend on the same samples (each in its own
child, keeping raw outputs), then compares them in one more child (numpy is never
imported in `cr`): every output by name, per pair against the first backend, within
numpy.allclose(other, reference, rtol=``parity_rtol`` (default 0), atol=``parity_atol``
(default 1e-4)), with the max abs and max relative difference of each, and the task's
agreement (top-1 for classification, pixels of the same class for segmentation, the max
error in model units for landmarks and regression: cr.runtime.tasks). A model without a
dataset is fed ``synthetic_samples`` seeded synthetic inputs drawn from its declared input
specs (``seed``, default 0). It fails (outcome FAIL) when any output of any pair is not
close, or classes disagree.
"""
from __future__ import annotations

import math
from pathlib import Path

from ..errors import CRError
from ..resolve.compose import compose
from ..runtime.job import Job
from ..results import record as records
from . import launch
from .actions import run_action
from .target import prepare

COMPARE_ENTRY = "cr.runtime.actions.infer:compare"


def validate(ref: str, backend: str | None = None, **kw) -> dict:
    """Run the validate action (`cr validate REF --backend B`): the record, whose "validation"
    holds the accuracy metrics, each expected metric's check and the outcome (PASS/FAIL).
    kw: run_action's (params, variant, dataset, split, lock, output, store, install, ...)."""
    return run_action("validate", ref, backend=backend, **kw)


def parity(ref: str, backends: list[str], params: dict | None = None, variant: str | None = None,
           dataset: str | None = None, split: str | None = None, lock: str | Path | None = None,
           output: str | Path | None = None, backend_options: dict | None = None, install: bool = False) -> dict:
    """Each backend runs the same samples in its own child, inside the lock of what it needs
    (run_action: backends need not share one environment); the outputs are compared in one
    more child, inside the first backend's lock (which has numpy), never in `cr`."""
    if len(backends) < 2:
        raise CRError("--parity needs two or more backends", hint="e.g. --parity onnxruntime,torch,tflite")
    started = records.now()
    params = {**{k: v for k, v in (params or {}).items() if v is not None}, "keep_outputs": True}
    for name in ("parity_atol", "parity_rtol"):
        if name in params:
            params[name] = check_tolerance(name, params[name])
    targets = {b: prepare(ref, "validate", b, variant, dataset, split, backend_options) for b in backends}
    if next(iter(targets.values())).dataset is None:  # a benchmark-only model: seeded synthetic inputs
        params["synthetic_seed"] = int(params.pop("seed", 0) or 0)
    else:
        params.pop("seed", None)
    runs, members, components, first_lock = {}, [], {}, None
    for b, target in targets.items():
        rec = run_action("validate", ref, backend=b, params=params, lock=lock, target=target, store=False, install=install)
        first_lock = first_lock or rec.get("lock")
        for c in rec["components"]:
            components.setdefault(c["ref"], c)
        members.append({"backend": b, "model": target.model["ref"], "variant": target.meta.get("variant"), "status": rec["status"],
                        "uid": rec["uid"], "validation": _summary(rec.get("validation")), "backend_info": rec["backend"].get("info"),
                        "error": rec.get("error")})
        if rec["status"] != "ok":
            return _finish(records.new("validate", list(components.values()), {"name": ",".join(backends)},
                                       {"parity": backends, **params}, None, started),
                           {"status": "failed", "error": {**(rec.get("error") or {}), "message": f"{b}: {(rec.get('error') or {}).get('message')}"}},
                           members, output)
        runs[b] = rec.pop("outputs")
        runs_inputs = rec.get("inputs")
    first = next(iter(targets.values()))
    python, env = (first_lock["interpreter"], compose(first_lock)) if first_lock else (None, None)
    result, _ = launch.run_job(Job(entry=COMPARE_ENTRY, action="validate", runs=runs,
                                   params={"parity_atol": params.get("parity_atol", 1e-4),
                                           "parity_rtol": params.get("parity_rtol", 0.0)}), python=python, env=env, timeout=600)
    rec = records.new("validate", list(components.values()), {"name": ",".join(backends), "info": None},
                      {"parity": backends, **{k: v for k, v in params.items() if k != "keep_outputs"},
                       "dataset": first.dataset["ref"] if first.dataset else None, "split": first.split}, None, started)
    if result.get("parity") is not None:
        result["parity"]["inputs"] = runs_inputs
    return _finish(rec, result, members, output)


def check_tolerance(name: str, value) -> float:
    """A parity tolerance as a float: CRError naming the option for a negative, NaN or
    infinite one (numpy.allclose would take them, and then pass or fail everything)."""
    option = "--" + name.replace("_", "-")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise CRError(f"{option} {value!r} is not a number", hint=f"give {option} a number >= 0, e.g. 1e-5") from None
    if math.isnan(number) or math.isinf(number) or number < 0:
        raise CRError(f"{option} is {value}, expected a finite number >= 0",
                      hint=f"give {option} a number >= 0, e.g. {option} 1e-5 (numpy.allclose semantics)")
    return number


def _summary(validation: dict | None) -> dict | None:
    if not validation:
        return None
    return {k: validation.get(k) for k in ("outcome", "top1", "top5", "recall", "mean_iou", "miou", "pixel_accuracy",
                                                       "nme", "mean_error", "mae", "rmse", "samples") if k in validation}


def _finish(rec: dict, result: dict, members: list, output) -> dict:
    records.complete(rec, result, None)
    if rec.get("parity") is not None:
        rec["parity"]["runs"] = members
    else:
        rec["parity"] = {"outcome": "FAIL", "runs": members}
    if output is not None:
        records.write(rec, output)
    return rec
