"""validate() and parity(): accuracy against expectations, and agreement across backends.

    record = validate("model:lenet-digits", backend="onnxruntime")      # top-1/top-5 vs expected
    record = parity("model:lenet-digits", ["onnxruntime", "torch", "tflite"])

parity() runs the validate action once per backend on the same samples (each in its own
child, keeping raw outputs), then compares them in one more child (numpy is never
imported in `cr`): max abs difference of the first output and top-1 agreement, per pair
against the first backend. It fails (outcome FAIL) when any pair differs by more than
``parity_atol`` (default 1e-4) or disagrees on a top-1.
"""
from __future__ import annotations

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
    targets = {b: prepare(ref, "validate", b, variant, dataset, split, backend_options) for b in backends}
    runs, members, components, first_lock = {}, [], {}, None
    for b, target in targets.items():
        rec = run_action("validate", ref, backend=b, params=params, lock=lock, target=target, store=False, install=install)
        first_lock = first_lock or rec.get("lock")
        for c in rec["components"]:
            components.setdefault(c["ref"], c)
        members.append({"backend": b, "variant": target.meta.get("variant"), "status": rec["status"],
                        "uid": rec["uid"], "validation": _summary(rec.get("validation")), "backend_info": rec["backend"].get("info"),
                        "error": rec.get("error")})
        if rec["status"] != "ok":
            return _finish(records.new("validate", list(components.values()), {"name": ",".join(backends)},
                                       {"parity": backends, **params}, None, started),
                           {"status": "failed", "error": {**(rec.get("error") or {}), "message": f"{b}: {(rec.get('error') or {}).get('message')}"}},
                           members, output)
        runs[b] = rec.pop("outputs")
    first = next(iter(targets.values()))
    python, env = (first_lock["interpreter"], compose(first_lock)) if first_lock else (None, None)
    result, _ = launch.run_job(Job(entry=COMPARE_ENTRY, action="validate", runs=runs,
                                   params={"parity_atol": params.get("parity_atol", 1e-4)}), python=python, env=env, timeout=600)
    rec = records.new("validate", list(components.values()), {"name": ",".join(backends), "info": None},
                      {"parity": backends, **{k: v for k, v in params.items() if k != "keep_outputs"},
                       "dataset": first.dataset["ref"] if first.dataset else None, "split": first.split}, None, started)
    return _finish(rec, result, members, output)


def _summary(validation: dict | None) -> dict | None:
    if not validation:
        return None
    return {k: validation.get(k) for k in ("outcome", "top1", "top5", "recall", "mean_iou", "samples") if k in validation}


def _finish(rec: dict, result: dict, members: list, output) -> dict:
    records.complete(rec, result, None)
    if rec.get("parity") is not None:
        rec["parity"]["runs"] = members
    else:
        rec["parity"] = {"outcome": "FAIL", "runs": members}
    if output is not None:
        records.write(rec, output)
    return rec
