"""The search space of a tune: stacks (backend x variant, each variant with its precision) x threads x batch.

    space = build("model:lenet-digits", threads=[1, 2], batch_sizes=[1, 8, 32])
    space.stacks      # [Stack("onnxruntime", "onnx", "fp32"), Stack("tflite", "tflite-int8", "int8"), ...]
    space.configs()   # every Config of the full grid, in a stable order

A stack is what a backend loads of the model: one of the model's variants whose format is
among the backend's FORMATS (cr.runtime.registry), so the space holds only pairs that can
load at all. Backends that take any format (the null backend) measure nothing real and are
left out unless named. ``precisions`` keeps the variants of those precisions; a precision
the model has no variant of is made on demand when cr.run.precision (variant_for) is
present, else it is an error naming the precisions there are.

Standard library only: numpy and the frameworks run in the trials' children.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from ..errors import CRError
from ..runtime import registry, variants


@dataclass(frozen=True)
class Stack:
    backend: str
    variant: str
    precision: str
    model: str | None = None  # the model version holding the variant when not the space's (a compiled precision)

    @property
    def key(self) -> str:
        own = f"@{self.model.rsplit('@', 1)[-1]}" if self.model else ""
        return f"{self.backend}/{self.variant}{own}"


@dataclass(frozen=True)
class Config:
    stack: Stack
    threads: int
    batch_size: int

    @property
    def key(self) -> str:
        """The configuration's id in a study: the same configuration is measured once."""
        return f"{self.stack.key}/t{self.threads}/b{self.batch_size}"

    def to_dict(self) -> dict:
        return {"backend": self.stack.backend, "variant": self.stack.variant, "precision": self.stack.precision,
                "model": self.stack.model, "threads": self.threads, "batch_size": self.batch_size}


@dataclass
class Space:
    model: str  # the model ref every trial runs (a solution's model)
    dataset: str | None
    split: str | None
    stacks: list[Stack]
    threads: list[int]
    batch_sizes: list[int]
    excluded: list[str] = field(default_factory=list)
    # precisions asked for that no variant or conversion gives a backend here: [{"backend",
    # "precision", "reason"}] (reported, never part of the study's identity: a retry may succeed)
    unavailable: list[dict] = field(default_factory=list)

    def configs(self) -> list[Config]:
        return [Config(s, t, b) for s in self.stacks for t in self.threads for b in self.batch_sizes
                if not _excluded(self.excluded, s, t, b)]

    def stack(self, key: str) -> Stack:
        return next(s for s in self.stacks if s.key == key)

    def to_dict(self) -> dict:
        return {"model": self.model, "dataset": self.dataset, "split": self.split,
                "stacks": [asdict(s) for s in self.stacks], "threads": self.threads,
                "batch_sizes": self.batch_sizes, "exclude": self.excluded}

    @property
    def digest(self) -> str:
        """A short hash of what the grid holds (the --verify grid study of the same space is shared)."""
        text = json.dumps([c.key for c in self.configs()] + [self.model, self.dataset, self.split])
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def _excluded(excludes: list[str], stack: Stack, threads: int, batch: int) -> bool:
    values = {"backend": stack.backend, "variant": stack.variant, "precision": stack.precision,
              "threads": str(threads), "batch": str(batch), "batch_size": str(batch)}
    for rule in excludes:
        parts = [p.split("=", 1) for p in rule.split(",")]
        if all(values.get(k.strip()) == v.strip() for k, v in parts):
            return True
    return False


def check_excludes(excludes: list[str]) -> None:
    keys = ("backend", "variant", "precision", "threads", "batch", "batch_size")
    for rule in excludes:
        for part in rule.split(","):
            key = part.split("=", 1)[0].strip()
            if "=" not in part or key not in keys:
                raise CRError(f"--exclude {rule!r}: expected KEY=VALUE[,KEY=VALUE], KEY one of {', '.join(keys)}",
                              hint="e.g. --exclude backend=torch or --exclude precision=int8,batch=32")


def target_of(ref: str) -> tuple[dict, str | None, str | None]:
    """(model component, dataset ref, split) of a model or a solution ref. A solution's trials
    run its model on its dataset, each backend in its own lock (the solution's lock holds one
    backend: a cross-stack search cannot run inside it)."""
    from ..store.catalog import show

    info = show(ref, verify=False)
    if info["kind"] == "model":
        ds = (info["meta"].get("dataset") or {})
        return info, ds.get("ref"), ds.get("split")
    if info["kind"] == "solution":
        sol = info["meta"]
        if not sol.get("model"):
            raise CRError(f"{info['ref']} names no model", hint="add \"model\": \"model:NAME@VERSION\" to its meta")
        model = show(sol["model"], verify=False, prefer_repo=info["repo"])
        ds = sol.get("dataset") or (model["meta"].get("dataset") or {}).get("ref")
        split = None if sol.get("dataset") else (model["meta"].get("dataset") or {}).get("split")
        return model, ds, split
    raise CRError(f"cannot tune a {info['kind']} ({info['ref']})", hint="tune a model or a solution: cr tune model:NAME")


def stacks(model: dict, backends: list[str] | None = None, precisions: list[str] | None = None,
           install: bool = False, unavailable: list | None = None) -> list[Stack]:
    """Every (backend, variant) pair where the backend loads the variant's format (the
    model's variants, then those of the versions cr compile made from it); a precision asked
    for that a backend cannot get goes into unavailable with the reason."""
    loads = registry.formats()
    chosen = backends or [b for b, fmts in loads.items() if fmts]  # FORMATS None: the null backend
    for b in chosen:
        if b not in loads:
            registry.find(b)  # names the available backends
    out = []
    for version in [model, *compiled_versions(model)]:
        holder = None if version is model else version["ref"]
        for name in variants.names(version["meta"]) or [variants.default_name(version["meta"])]:
            eff = variants.effective(version["meta"], name)
            for b in chosen:
                fmts = loads.get(b)
                if fmts is None or eff.get("format") in fmts:
                    out.append(Stack(b, name, eff.get("precision") or "fp32", holder))
    if precisions:
        out = _with_precisions(model, chosen, out, precisions, install, unavailable if unavailable is not None else [])
    return out


def compiled_versions(model: dict) -> list[dict]:
    """The versions cr compile made from this one (1.0.0+onnx, 1.0.0+onnx.int8.dynamic, ...):
    the same network in other formats and precisions, so their variants are stacks too."""
    from packaging.version import InvalidVersion, Version

    from ..store.catalog import matching, show

    try:
        mine = Version(model["meta"]["version"])
    except (InvalidVersion, KeyError):
        return []
    if mine.local:
        return []
    out = []
    for comp in matching(f"model:{model['meta']['name']}"):
        try:
            v = Version(comp.version)
        except (InvalidVersion, AttributeError):
            continue
        if v.local and v.public == mine.public:
            out.append(show(comp.ref, verify=False))
    return out


def _with_precisions(model: dict, backends: list[str], found: list[Stack], precisions: list[str], install: bool,
                     unavailable: list) -> list[Stack]:
    """The stacks of the precisions asked for: the model's own variants of them, and for a
    (backend, precision) it has none of, the variant cr.run.precision.variant_for finds or
    compiles (cached as a model version); one it cannot make (no conversion, or a conversion
    whose accuracy check failed) goes into unavailable with cr compile's reason."""
    from ..run import precision as made
    from ..store.catalog import show

    def same(stack: Stack, p: str) -> bool:
        meta = model["meta"] if stack.model is None else show(stack.model, verify=False)["meta"]
        return made.matches(variants.effective(meta, stack.variant), p)
    out = [s for s in found if any(same(s, p) for p in precisions)]
    for p in precisions:
        for b in backends:
            if any(s.backend == b and same(s, p) for s in out):
                continue
            try:
                v = made.variant_for(model["ref"], b, p, install=install)
            except CRError as exc:  # this backend has no way to that precision; others may
                unavailable.append({"backend": b, "precision": p, "reason": exc.message})
                continue
            ref = getattr(v, "model_ref", None)
            out.append(Stack(b, str(v), p, None if ref in (None, model["ref"]) else ref))
    return out


def build(ref: str, backends: list[str] | None = None, precisions: list[str] | None = None,
          threads: list[int] | None = None, batch_sizes: list[int] | None = None,
          exclude: list[str] | None = None, install: bool = False) -> Space:
    """The search space for ref; CRError when nothing is left to search."""
    excludes = list(exclude or [])
    check_excludes(excludes)
    model, dataset, split = target_of(ref)
    for name, values in (("--threads", threads), ("--batch", batch_sizes)):
        if values is not None and (not values or any(v < 1 for v in values)):
            raise CRError(f"{name} needs one or more positive integers, found {values}", hint=f"e.g. {name} 1,2")
    unavailable: list[dict] = []
    space = Space(model["ref"], dataset, split, stacks(model, backends, precisions, install, unavailable),
                  sorted(set(threads or [1])), sorted(set(batch_sizes or [1])), excludes, unavailable)
    if not space.configs():
        what = ", ".join(s.key for s in space.stacks) or "none"
        why = "".join(f"; {u['backend']} at {u['precision']}: {u['reason']}" for u in unavailable[:2])
        raise CRError(f"the search space of {model['ref']} is empty (stacks: {what}"
                      + (f"; excluded: {'; '.join(excludes)}" if excludes else "") + why + ")",
                      hint="drop an --exclude, or name backends/precisions the model has a variant for (cr show "
                           f"{model['ref']} lists its variants)")
    return space
