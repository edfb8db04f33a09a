"""The target of an action, settled before anything runs: the model (or the solution naming
one), the variant its backend loads, the dataset and split, the backend options, the
parameters (action meta defaults < solution params < the caller's) and where the child runs
(a solution's lock, a given lock, else the lock of what running it needs here).

    from cr.run.target import prepare, where
    target = prepare("model:lenet-digits", "validate", backend="tflite")
    the_lock, env, python = where(target, None, "validate")

cr.run.actions.run_action and the action host hooks (cr.run.hooks) both use it, so it
lives apart from either (the pipeline imports the hooks; the hooks' default steps settle
targets here). Each problem is a CRError naming it.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CRError
from ..runtime import registry, variants


@dataclass
class Target:
    target: dict
    model: dict
    meta: dict  # the variant's effective meta
    entry: registry.BackendEntry | None  # None: an action without a backend (compile)
    options: dict
    dataset: dict | None
    split: str | None
    layers: list = field(default_factory=list)

    @property
    def components(self) -> list[dict]:
        out = [self.target] if self.target is not self.model else []
        out.append(self.model)
        if self.dataset is not None:
            out.append(self.dataset)
        return out


def merged_params(action_ref: str, action_meta: dict, *layers: dict) -> dict:
    """The action meta's defaults with each layer laid over them (None values skipped),
    checked against its parameters schema; CRError naming the parameter when one is refused."""
    params = dict(action_meta.get("defaults") or {})
    for layer in layers:
        params.update({k: v for k, v in (layer or {}).items() if v is not None})
    schema = action_meta.get("parameters")
    if schema:
        import jsonschema

        errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(params), key=lambda e: list(e.path))
        if errors:
            e = errors[0]
            where = "/".join(map(str, e.path)) or "parameters"
            raise CRError(f"{action_ref.split(':')[1]} parameter {where}: {e.message}", hint=f"see the parameters of {action_ref} (cr show {action_ref})")
    return params


def _formats(entry: registry.BackendEntry):
    """The formats the backend loads, None when unknown here.

    A backend installed only in a lock's interpreter cannot be imported by `cr`: the main
    file is then chosen, and the child checks the format when it loads the backend.
    """
    try:
        return getattr(registry.load_class(entry), "FORMATS", None)
    except registry.BackendError:
        return None


def prepare(ref: str, action: str, backend: str | None = None, variant: str | None = None,
            dataset: str | None = None, split: str | None = None, backend_options: dict | None = None,
            layered: bool = True, model_ref: str | None = None) -> Target:
    """Settle model, variant, backend, dataset and per-action solution params for ref.

    layered=False leaves out the solution's own params for the action (the caller runs one
    declared action and passes its params); model_ref replaces the solution's model (the
    version its declared compile produced).
    """
    from ..store.catalog import show

    target = show(ref, verify=False)
    options: dict = {}
    layers: list[dict] = []
    if target["kind"] == "solution":
        sol = target["meta"]
        if not sol.get("model"):
            raise CRError(f"{target['ref']} names no model", hint="add \"model\": \"model:NAME@VERSION\" to its meta")
        model = show(model_ref or sol["model"], verify=False, prefer_repo=target["repo"])  # its own copies first
        backend = backend or sol.get("backend")
        options.update(sol.get("backend_options") or {})
        variant = variant or (sol.get("pipeline") or {}).get("variant")
        dataset = dataset or sol.get("dataset")
        if layered:
            layers = [a.get("params") or {} for a in sol.get("actions") or [] if a.get("action") == action]
    elif target["kind"] == "model":
        model = target
    else:
        raise CRError(f"cannot {action} a {target['kind']} ({target['ref']})", hint=f"{action} a model or a solution")
    if not backend:
        raise CRError("no backend given", hint=f"give --backend NAME; available: {', '.join(registry.available())}")
    entry = registry.find(backend)
    options.update(backend_options or {})
    formats = _formats(entry)
    if target["kind"] == "model" and variant is None and formats is not None:
        model = target = _loadable_version(ref, model, formats)
    meta = variants.choose(model["meta"], formats, variant, backend=f"backend {backend!r}", ref=model["ref"])
    if target["kind"] == "solution" and target["meta"].get("expected"):  # the solution's expectations win
        meta["expected"] = {**(meta.get("expected") or {}), **target["meta"]["expected"]}
    model_dataset = model["meta"].get("dataset") or {}
    dataset_ref = dataset or model_dataset.get("ref")
    ds = show(dataset_ref, verify=False, prefer_repo=target["repo"] if target["kind"] == "solution" else None) if dataset_ref else None
    if ds is not None and ds["kind"] != "dataset":
        raise CRError(f"{ds['ref']} is a {ds['kind']}, not a dataset", hint="give --dataset dataset:NAME")
    if split is None and ds is not None:
        split = model_dataset.get("split") if (not dataset or dataset == model_dataset.get("ref")) else None
        if split is None and (ds["meta"].get("split_by")):
            split = "test"
    _check_trust(model, meta, ds, f"running {model['ref']}")
    if target["kind"] == "solution":
        from ..store import trust

        trust.require(code_option_items(target, entry, target["meta"].get("backend_options") or {}), f"running {target['ref']}")
    return Target(target, model, meta, entry, options, ds, split, layers)


def code_option_items(info: dict, entry: registry.BackendEntry, options: dict) -> list:
    """What the backend options a component (a solution, a campaign) sets would load as native
    code (the backend's CODE_OPTIONS: a TFLite delegate library, ...), as trust Items, when
    that component is not trusted; [] otherwise. Options the user gives (-O) are theirs."""
    import json

    from ..store import trust

    try:
        names = getattr(registry.load_class(entry), "CODE_OPTIONS", ()) or ()
    except registry.BackendError:
        return []
    found = [(n, options[n]) for n in names if options.get(n)]
    if not found:
        return []
    from ..store.catalog import open_index

    if not trust.untrusted(info, open_index):
        return []
    return [trust.Item(info.get("repo") or "?", info["ref"], f"native code ({entry.name} option {name})",
                       json.dumps(value, sort_keys=True)) for name, value in found]


def _check_trust(model: dict, meta: dict, ds: dict | None, what: str) -> None:
    """Untrusted when the run would import or call Python from an untrusted repository: the
    model's architecture file (a torch state dict), the dataset's loader (cr.store.trust)."""
    from ..store import trust

    check = [info for info, effective in ((model, meta), (ds, None)) if info and trust.runs_code(info, effective)]
    if check:
        from ..store.catalog import open_index

        trust.check_components(check, what, open_index)


def model_target(ref: str, action: str, variant: str | None = None, dataset: str | None = None,
                 split: str | None = None) -> Target:
    """The target of an action that runs on a model without a backend (its host's
    needs_backend is False): the model, the variant asked for (else its main file), and
    the dataset asked for, else the model meta's."""
    from ..store.catalog import show

    model = show(ref, verify=False)
    if model["kind"] != "model":
        raise CRError(f"cannot {action} a {model['kind']} ({model['ref']})", hint=f"{action} a model")
    meta = variants.effective(model["meta"], variant) if variant else model["meta"]
    model_dataset = model["meta"].get("dataset") or {}
    dataset_ref = dataset or model_dataset.get("ref")
    ds = show(dataset_ref, verify=False) if dataset_ref else None
    if ds is not None and ds["kind"] != "dataset":
        raise CRError(f"{ds['ref']} is a {ds['kind']}, not a dataset", hint="give --dataset dataset:NAME")
    if split is None and ds is not None:
        split = model_dataset.get("split") if not dataset else None
        if split is None and ds["meta"].get("split_by"):
            split = "test"
    _check_trust(model, meta, ds, f"running {model['ref']}")
    return Target(model, model, meta, None, {}, ds, split)


def _loadable_version(ref: str, model: dict, formats) -> dict:
    """The best version of ref with a variant the backend loads (e.g. the original torch
    weights when a newer ``+onnx`` compile exists and the backend is torch); model if none."""
    from ..store.catalog import matching, show

    if any(variants.effective(model["meta"], n).get("format") in formats for n in variants.names(model["meta"])):
        return model
    for comp in matching(ref):
        info = show(comp.ref, verify=False)
        if any(variants.effective(info["meta"], n).get("format") in formats for n in variants.names(info["meta"])):
            return info
    return model


def where(target: Target, lock, action: str, install: bool = False, extra: tuple[str, ...] = ()) -> tuple[dict | None, dict | None, str]:
    """(lock, env, interpreter) the job runs with: a solution's lock, the given lock, or for
    a model the lock of what running it needs here (run_requirements), made on the way."""
    from ..resolve.compose import compose

    if lock is None and target.target["kind"] == "solution":
        from ..resolve.plan import lock as resolve_lock

        the_lock = resolve_lock(target.target["ref"])
        return the_lock, compose(the_lock), the_lock["interpreter"]  # compose refuses missing software
    if lock is not None:
        from ..resolve.plan import env_for

        the_lock, env = env_for(Path(lock))
        return the_lock, env, the_lock["interpreter"]
    if target.meta.get("file"):
        from ..runtime.model import locate

        locate(target.meta, target.model["path"], target.model["ref"])  # fail before starting a child
    the_lock = model_lock(target.model["ref"], run_requirements(target, extra), f"{action} on backend {target.entry.name}",
                          install)
    if the_lock is None:
        return None, None, sys.executable
    return the_lock, compose(the_lock), the_lock["interpreter"]


def run_requirements(target: Target, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The software running an action on target needs besides the model's and dataset's own
    deps: the runtime's (numpy), the backend's REQUIRES, the pipeline steps' (pillow for
    image steps), and extra (an action's tools)."""
    from ..runtime import pipeline

    steps = getattr(pipeline, "requirements", None)  # the software each pre/post-processing step imports
    needs = [*registry.RUNTIME_REQUIRES, *registry.requirements(target.entry), *(steps(target.meta) if steps else ()), *extra]
    return tuple(dict.fromkeys(needs))


def model_lock(ref: str, requires: tuple[str, ...], why: str, install: bool = False) -> dict | None:
    """The lock of what running ref needs (requires: run_requirements), resolved on this
    machine (reused while nothing changed). Missing software is installed with install=True;
    otherwise one CRError names exactly the command that installs it.

    None when no recipe offers what is needed on this platform at all (TensorRT without an
    NVIDIA GPU, say): the run then happens in cr's own interpreter, where the backend or
    the conversion says in its own words what this machine lacks.
    """
    from ..events import quiet_info
    from ..resolve import plan
    from ..resolve.resolver import ResolutionConflict

    try:
        with quiet_info():  # resolving (or reusing) a model's lock is routine: said only when it needs installing
            the_lock = plan.lock(ref, requires=requires, requested_by=why)
    except ResolutionConflict:
        return None
    if not the_lock.get("missing"):
        return the_lock
    if install:
        return plan.install_missing(the_lock)["lock"]
    wanted = [f"{s['name']} {s['version']}" for s in the_lock["software"] if s["name"] in the_lock["missing"]]
    raise CRError(f"{why} of {ref} needs software that is not installed here: {', '.join(wanted)}",
                  hint=f"install exactly that (into reefkit's own prefixes): cr install --lock {the_lock['path']}  "
                       "(or run the same command again with --install)")
