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
    own_options: dict = field(default_factory=dict)  # the solution's own backend_options (a default, below the caller's)
    pipeline: dict = field(default_factory=dict)  # step overrides laid over the model's pipeline ({"resize.interpolation": ...})
    notes: dict = field(default_factory=dict)  # what the record's config states besides the params (settle_threads)

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
            layered: bool = True, model_ref: str | None = None, pipeline: dict | None = None) -> Target:
    """Settle model, variant, backend, dataset and per-action solution params for ref.

    layered=False leaves out the solution's own params for the action (the caller runs one
    declared action and passes its params); model_ref replaces the solution's model (the
    version its declared compile produced); pipeline: step overrides ({"resize.interpolation":
    "nearest"}) laid over a copy of the variant's steps (cr.runtime.pipeline.with_overrides:
    a key naming no step of this pipeline is a CRError naming the steps it has).
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
        declared = (sol.get("pipeline") or {}).get("variant")
        if variant is None and declared and backend and backend != sol.get("backend") and model_ref is None:
            variant = _declared_if_loadable(model, declared, registry.find(backend))  # another backend: its own variant
        elif variant is None and model_ref is None:
            variant = declared
        backend = backend or sol.get("backend")
        options.update(sol.get("backend_options") or {})
        own_options = dict(options)
        if backend != sol.get("backend"):  # another backend's options are not this one's: only its thread count carries
            options, own_options = {}, carried_options(sol, registry.find(backend))
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
    if pipeline:
        from ..runtime.pipeline import PipelineError, with_overrides

        try:
            meta = with_overrides(meta, pipeline)
        except PipelineError as exc:
            raise CRError(f"{exc.message} ({model['ref']} variant {meta.get('variant')})", hint=exc.hint) from None
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
    out = Target(target, model, meta, entry, options, ds, split, layers, pipeline=dict(pipeline or {}))
    if target["kind"] == "solution":
        out.own_options = own_options
    return out


def carried_options(sol: dict, entry: registry.BackendEntry) -> dict:
    """The solution's backend_options a job on another backend (entry) keeps: its thread
    count, as `threads` (every backend takes it); the rest belongs to the solution's backend."""
    own = sol.get("backend_options") or {}
    try:
        alias = threads_option(registry.find(sol["backend"])) if sol.get("backend") else None
    except CRError:
        alias = None
    value = next((own[k] for k in (alias, "threads") if k and own.get(k) is not None), None)
    return {"threads": value} if value is not None else {}


def _declared_if_loadable(model: dict, name: str, entry: registry.BackendEntry) -> str | None:
    """A solution's declared variant when the other backend a job asks for loads it, else
    None (the backend's own choice: cr.runtime.variants.choose prefers fp32)."""
    formats = _formats(entry)
    try:
        meta = variants.effective(model["meta"], name)
    except CRError:
        return None
    return name if formats is None or meta.get("format") in formats else None


def threads_option(entry: registry.BackendEntry | None) -> str | None:
    """The backend's own option for what `threads` sets (onnxruntime: intra_op_threads), if it has one."""
    if entry is None:
        return None
    try:
        return getattr(registry.load_class(entry), "THREADS_OPTION", None)
    except registry.BackendError:
        return None


def _thread_value(options: dict, alias: str | None, who: str) -> tuple[object, str | None]:
    """(the thread count options set, the option's name) ; CRError when they set two different ones."""
    found = {k: options[k] for k in ("threads", alias) if k and options.get(k) is not None}
    if len(set(map(str, found.values()))) > 1:
        raise CRError(f"{who} set {' and '.join(f'{k}={v}' for k, v in found.items())}: one setting, two values",
                      hint=f"give one of them ({alias} is the backend's name for threads)")
    return next(iter(found.items()), (None, None))[::-1]


def settle_threads(target: Target, params: dict, given_options: dict | None, given_params: dict | None) -> None:
    """One knob for the backend's compute threads: `threads` (a parameter of the action) and
    the backend's own option for it (THREADS_OPTION: onnxruntime's intra_op_threads) are one
    setting. Precedence, most explicit first: the caller's backend options (-O, a campaign's
    backend_options), the threads parameter (--threads, a campaign's threads, the solution's
    action params), the solution's own backend_options. The caller giving both with different
    values is refused (CRError naming both). The effective value is written into params
    ("threads") and into the options the backend gets, and target.notes["threads_overrode"]
    records each value it replaced ({"backend_options.intra_op_threads": 1}), so a record's
    config states the count the backend ran with. Changes params and target.options in place."""
    alias = threads_option(target.entry)
    if target.entry is None:
        return
    caller, caller_key = _thread_value(given_options or {}, alias, "the backend options given")
    given = (given_params or {}).get("threads")
    if caller is not None and given is not None and str(caller) != str(given):
        raise CRError(f"threads={given} and backend option {caller_key}={caller} were both given: one setting, two values",
                      hint=f"give one of them (--threads, or -O {caller_key}=N); they set the same thing")
    own, own_key = _thread_value(target.own_options, alias, f"{target.target['ref']}'s backend_options")
    own_key = own_key if own_key in target.options else f"{own_key} (carried from the solution's backend)"
    param = params.get("threads")
    effective = next((v for v in (caller, param, own) if v is not None), None)
    if effective is None:
        return
    overrode = {}
    if param is not None and str(param) != str(effective):
        overrode["threads"] = param
    if own is not None and str(own) != str(effective) and caller is None:
        overrode[f"backend_options.{own_key}"] = own
    params["threads"] = effective
    for key in ("threads", alias):
        if key and key in target.options:
            target.options[key] = effective
    if overrode:
        target.notes["threads_overrode"] = overrode


def config_notes(target: Target) -> dict:
    """What a record's config states about the target besides the params: the pipeline
    overrides that ran, the thread settings the effective one replaced."""
    out = dict(target.notes)
    if target.pipeline:
        out["pipeline_overrides"] = dict(target.pipeline)
    return out


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
