"""Where the work ran: the placement a framework reports, and the ``--require-placement`` rule.

A backend may offer two methods (cr.runtime.backends.base):

    placement() -> {"unit", "requested", "by_provider": {name: count} | None, "nodes": N | None,
                    "how", ...}            what the framework says it assigned, after load()
    placement_available(options) -> [names] | None   (classmethod) what this machine offers,
                                           asked before the model loads

record(backend, name, requirements) turns the first into the record's "placement" block
(adding "backend", "share" and, when a requirement was given, "required" and "verdict");
check_available() refuses, before loading, a requirement naming a provider this machine
does not have; unmet() is the verdict's rule: every requirement NAME:SHARE needs the
units (ONNX Runtime nodes, TFLite ops, ...) placed on providers matching NAME to be at
least SHARE of all units. docs/placement.md describes what each backend reports.

Requirement syntax (``--require-placement``, parameter ``require_placement``):

    NAME[:SHARE][,NAME[:SHARE]...]     SHARE: 0.95, 95% or 1 (default 1: everything)

NAME is matched without case against the providers the backend reports: the exact name
(CUDAExecutionProvider, XNNPACK, cuda:0), the name plus "ExecutionProvider" (cuda,
tensorrt, openvino), a device type for indexed devices (cuda matches cuda:0 and cuda:1;
gpu matches GPU:0), ``delegate`` for every TFLite delegate and ``gpu`` for any GPU
provider or device.

Standard library only: the host imports it to parse a requirement before anything runs.
"""
from __future__ import annotations

import re

from ..errors import CRError

SYNTAX = "NAME[:SHARE][,NAME[:SHARE]...]"
EXAMPLES = "e.g. CUDAExecutionProvider:0.95, cuda:95%, xnnpack:1.0 or cpu"
_NAME = re.compile(r"^[A-Za-z][\w.+/-]*(?::\d+)?$")
_CPU = {"cpu", "cpuexecutionprovider"}
_GPU = ("cuda", "gpu", "tensorrt", "rocm", "migraphx", "dml", "webgpu")


class PlacementUnmet(CRError):
    """The framework placed less of the model on the required provider than required."""

    def __init__(self, message: str, hint: str | None, placement: dict):
        super().__init__(message, hint)
        self.placement = placement


def parse(text) -> list[dict]:
    """[{"name", "min_share", "text"}] of a requirement string; CRError naming the bad part."""
    if text is None or text == "":
        return []
    if isinstance(text, list):  # a solution may declare them as a list
        text = ",".join(str(t) for t in text)
    out = []
    for part in str(text).split(","):
        part = part.strip()
        name, share = _split(part)
        if not name or not _NAME.match(name):
            raise CRError(f"--require-placement {text!r}: {part!r} is not {SYNTAX}",
                          hint=f"name a provider or delegate and the share of the model it must run, {EXAMPLES}")
        value = _share(share, part, text)
        out.append({"name": name, "min_share": value, "text": part})
    names = [r["name"].lower() for r in out]
    if len(set(names)) != len(names):
        raise CRError(f"--require-placement {text!r} names a provider twice", hint="give each provider once")
    return out


def _split(part: str) -> tuple[str, str | None]:
    """NAME and SHARE of NAME[:SHARE]: what follows the last colon is the share when it is a
    number (so cuda:1 is "all on CUDA"; a device index needs its share too: cuda:1:1.0)."""
    name, sep, last = part.rpartition(":")
    if sep and re.match(r"^(\d+\.?\d*|\.\d+)%?$", last):
        return name, last
    return part, None


def _share(share: str | None, part: str, text) -> float:
    if share is None:
        return 1.0
    try:
        value = float(share[:-1]) / 100 if share.endswith("%") else float(share)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise CRError(f"--require-placement {text!r}: the share in {part!r} is not in (0, 1]",
                      hint=f"give the share as a fraction or a percentage ({EXAMPLES}); no share means 1 (all of it); "
                               "a device index needs a share after it (cuda:0:1.0)")
    return value


def matches(name: str, key: str) -> bool:
    """Whether a requirement's NAME means the provider (or device, delegate) the backend calls key."""
    n, k = _norm(name), _norm(key)
    if n == k or k == n + "executionprovider" or k.startswith(n + ":"):
        return True
    if n in ("delegate", "delegated"):
        return k not in _CPU and not k.startswith("cpu")
    if n == "gpu":
        return any(k.startswith(g) for g in _GPU)
    return False


def _norm(text: str) -> str:
    return str(text).lower().replace("_", "").replace("-", "").replace("/device:", "")


def check_available(backend_name: str, requirements: list[dict], available: list[str] | None) -> None:
    """CRError naming a required provider this machine does not have (before anything loads)."""
    if not requirements or available is None:
        return
    for r in requirements:
        if not any(matches(r["name"], a) for a in available):
            raise CRError(
                f"--require-placement {r['text']}: {backend_name} has no {r['name']} on this machine "
                f"(available: {', '.join(available) or 'none'})",
                hint=f"require one of those, run where {r['name']} exists (its build of {backend_name} and its device), "
                     "or drop --require-placement",
            )


def record(backend, backend_name: str, requirements: list[dict] | None = None) -> dict:
    """The record's "placement" block for a loaded backend (never raises: a framework that
    cannot say is recorded as such)."""
    get = getattr(backend, "placement", None)
    if not callable(get):
        raw = {"unit": None, "by_provider": None, "nodes": None, "how": f"the {backend_name} backend reports no placement"}
    else:
        try:
            raw = dict(get() or {})
        except Exception as exc:  # noqa: BLE001 - the run goes on; the record says why there is none
            raw = {"unit": None, "by_provider": None, "nodes": None,
                   "how": f"{backend_name} could not report its placement: {type(exc).__name__}: {exc}"}
    out = {"backend": backend_name, **raw}
    by, nodes = out.get("by_provider"), out.get("nodes")
    out["share"] = ({k: round(v / nodes, 4) for k, v in by.items()} if by and nodes else None)
    if requirements:
        out["required"] = judge(out, requirements)
        out["verdict"] = "met" if all(r["ok"] for r in out["required"]) else "not met"
        out["rule"] = "each NAME:SHARE needs the share of units placed on providers matching NAME >= SHARE"
    return out


def judge(placement: dict, requirements: list[dict]) -> list[dict]:
    """Per requirement: the providers it matched, the share they got, and whether it is enough."""
    by, nodes = placement.get("by_provider"), placement.get("nodes")
    out = []
    for r in requirements:
        if by is None:
            keys, got, share = [], None, None
        elif not nodes and placement.get("device"):  # nothing to count (a torch model without weights): its device
            keys = [placement["device"]] if matches(r["name"], placement["device"]) else []
            got, share = None, 1.0 if keys else 0.0
        else:
            keys = [k for k in by if matches(r["name"], k)]
            got = sum(by[k] for k in keys)
            share = got / nodes if nodes else None
        out.append({"name": r["name"], "min_share": r["min_share"], "providers": keys, "units": got,
                    "share": None if share is None else round(share, 4),
                    "ok": share is not None and share + 1e-9 >= r["min_share"]})
    return out


def unmet(placement: dict) -> PlacementUnmet | None:
    """The error for a placement whose requirement is not met (None when met or none was given)."""
    failed = [r for r in placement.get("required") or [] if not r["ok"]]
    if not failed:
        return None
    unit = placement.get("unit") or "units"
    words = []
    for r in failed:
        if r["share"] is None:
            words.append(f"{r['name']} at least {r['min_share']:.0%} required, but {placement['backend']} does not say "
                         f"how much of the model each provider got ({placement.get('how')})")
        else:
            where = f" ({', '.join(r['providers'])})" if r["providers"] and r["providers"] != [r["name"]] else ""
            words.append(f"{r['name']}{where} ran {r['share']:.1%} of the {unit}, at least {r['min_share']:.0%} required")
    from ..results.placement import describe  # the one wording, also the result tables'

    found = describe(placement)
    fallback = placement.get("fallback_ops")
    detail = f"; fell back: {', '.join(f'{op} x{n}' for op, n in list(fallback.items())[:8])}" if fallback else ""
    requested = placement.get("requested")
    missing = [r["name"] for r in failed if requested and not any(matches(r["name"], q) for q in requested)]
    if missing:
        hint = (f"{', '.join(missing)} was not requested (the backend asked for {', '.join(requested)}): "
                "name it in the backend's options (onnxruntime: -O providers=[...])")
    else:
        hint = ("the provider or delegate did not take those ops (unsupported ops, types or shapes); no latency was "
                "measured. Run a model or build the provider supports, or lower the share")
    return PlacementUnmet(f"placement requirement not met: {'; '.join(words)}. Placement found: {found}{detail}",
                          hint, placement)
