"""run_action(): a model (or a solution) + a backend + an action -> a job in the runtime child -> a result record.

    from cr.run.actions import run_action
    record = run_action("validate", "model:lenet-digits", backend="tflite", variant="tflite-int8")
    record["validation"]["top1"], record["status"]

What it settles before anything runs (each problem is a CRError naming it):
  - the target: a model, or a solution naming its model, dataset, backend, options and
    per-action params;
  - the variant the backend runs (cr.runtime.variants.choose with the backend's FORMATS:
    the backend class is imported, never its framework);
  - the dataset (--dataset, else the solution's, else the model meta's "dataset") and split;
  - the parameters: action meta defaults < solution params < the caller's, validated
    against the action's schema;
  - where it runs: a solution inside its lock, ``lock`` inside that lock, else this
    interpreter.
A run that starts and fails returns (and writes, with output) a record with status
"failed"; a framework crash or hang is such a failure, never an exception here.

run_action is the one path from a request to a stored record for every action (shipped
or a user's); what differs between actions is their host hook (cr.run.hooks.ActionHost,
named by the action meta's "host": benchmark, profile and compile have one), which
run_action calls at each step. An action from a repository runs only once the trust
check allows it (before its host is imported), and its child finds the entry module in
the action component's folder (first on PYTHONPATH).

A record the results store cannot take (a full disk, a read-only or broken store) is not
dropped: it is written beside (the -o file when given, else CR_HOME/tmp/cr-result-UID.json,
else ./cr-result-UID.json) and run_action raises NotStored, which carries the record(s)
and the file, after the run has finished: the caller shows the result, then fails.
"""
from __future__ import annotations

import re
import sqlite3
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CRError, StoreError
from ..runtime import registry, variants
from ..runtime.job import Job
from ..results import record as records
from . import launch


_ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


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


def job_for(target: Target, action: str, entry_point: str, params: dict) -> Job:
    """The job for one action on a settled target (the parent <-> child contract, cr.runtime.job)."""
    dataset = Job.component(target.dataset, split=target.split) if target.dataset is not None else None
    backend = {**target.entry.to_dict(), "options": target.options} if target.entry is not None else None
    return Job(entry=entry_point, action=action, params=params, model=Job.component(target.model, meta=target.meta),
               dataset=dataset, backend=backend)


def check_entry(action_info: dict) -> str:
    """The action's entry (module:function); CRError naming the action meta when it is malformed."""
    entry = (action_info.get("meta") or {}).get("entry")
    if not isinstance(entry, str) or not _ENTRY.match(entry):
        raise CRError(f"{action_info.get('meta_path') or action_info['ref']}: /entry: expected module:function, found {entry!r}",
                      hint="an action's entry names the function the runtime calls, e.g. my_actions.fit:main")
    return entry


class NotStored(StoreError):
    """The run finished but the results store did not take its record(s).

    records: every record of the run (a solution's declared actions: all of them, stored
    or not); kept: {uid: the file holding the record that was not stored, or None when it
    could not be written anywhere}. The message names the file, the hint how to add it.
    """

    def __init__(self, message: str, hint: str | None, records: list[dict], kept: dict[str, str | None]):
        super().__init__(message, hint)
        self.records = records
        self.kept = kept

    @classmethod
    def combine(cls, failures: list["NotStored"], records: list[dict]) -> "NotStored":
        """One NotStored for several runs: the first one's words (naming the others' files), every record."""
        kept: dict[str, str | None] = {}
        for f in failures:
            kept.update(f.kept)
        message = failures[0].message
        if len(failures) > 1:
            others = [p for uid, p in kept.items() if uid not in failures[0].kept]
            message += f" (and {len(failures) - 1} more not stored: {', '.join(p or 'not kept' for p in others)})"
        return cls(message, failures[0].hint, records, kept)


def keep_beside(record: dict, output: str | Path | None = None) -> tuple[Path, str] | None:
    """(file, which place) holding a record the store did not take: the -o file if it was
    written there, else CR_HOME/tmp/cr-result-UID.json, else ./cr-result-UID.json; None
    when none of them can be written."""
    if output is not None and Path(output).is_file():
        return Path(output).absolute(), "the -o file"
    name = f"cr-result-{record.get('uid') or 'unknown'}.json"
    places = []
    try:
        from ..paths import cr_home

        places.append((cr_home() / "tmp", "in CR_HOME/tmp"))
    except Exception:  # noqa: BLE001 - no usable CR_HOME at all: the current directory only
        pass
    places.append((Path.cwd(), "in the current directory (CR_HOME/tmp could not be written)"))
    for folder, where in places:
        try:
            return records.write(record, folder / name).absolute(), where
        except (CRError, OSError):
            continue
    return None


def store_record(record: dict, output: str | Path | None = None) -> None:
    """Keep the record in the results store. If the store refuses it (full disk, read-only
    or broken store), the record is kept beside (keep_beside) and NotStored is raised."""
    from ..results.store import default_store

    try:
        default_store().add(record)
        return
    except (CRError, OSError, sqlite3.Error) as exc:
        reason = exc.message if isinstance(exc, CRError) else (getattr(exc, "strerror", None) or str(exc))
        fix = getattr(exc, "hint", None) or "free space, or make CR_HOME/results a writable directory"
    uid = record.get("uid")
    what = f"the {record.get('action')} result {uid} was not stored: {reason}"
    kept = keep_beside(record, output)
    if kept is None:
        raise NotStored(what + "; it could not be written anywhere else either (only the output above holds it)",
                        f"{fix}; or keep the record with -o FILE on another disk", [record], {uid: None})
    path, where = kept
    raise NotStored(f"{what}; the record is kept at {path}",
                    f"kept {where}; once the store works again ({fix}), add it with: cr results add {path}",
                    [record], {uid: str(path)})


def run_action(
    action: str,
    ref: str,
    backend: str | None = None,
    params: dict | None = None,
    backend_options: dict | None = None,
    variant: str | None = None,
    dataset: str | None = None,
    split: str | None = None,
    lock: str | Path | None = None,
    output: str | Path | None = None,
    entry_point: str | None = None,
    target: Target | None = None,
    layered: bool = True,
    model_ref: str | None = None,
    store: bool = True,
    install: bool = False,
    extra: dict | None = None,
) -> dict:
    """Run one action in the runtime child; the result record (raw latencies as an int64 array).

    The one path from a request to a stored record, for every action: what differs between
    actions is their host hook (cr.run.hooks: the action meta's "host"), called at each
    step; extra: what that hook takes beyond these arguments (profile: trace; compile:
    version, force, python, env, prefer_repo). The record is written to output (when
    given) and kept in the results store (unless store=False). NotStored (carrying the
    finished record) when the store does not take it.
    """
    from ..store.catalog import show
    from .hooks import ActionRun, load_host

    started = records.now()
    action_info = show(f"action:{action}", verify=False)
    shipped = _shipped(action_info)
    if not shipped:  # a shipped action's entry and host are reefkit's own
        from ..store import trust
        from ..store.catalog import open_index

        trust.check_components([action_info], f"running action:{action}", open_index)
    host = load_host(action_info, None if shipped else action_info["path"])
    run = ActionRun(action, ref, action_info, started, given=dict(params or {}), backend=backend,
                    backend_options=backend_options, variant=variant, dataset=dataset, split=split, lock=lock,
                    output=output, install=install, store=store, layered=layered, model_ref=model_ref,
                    entry_point=entry_point, extra=dict(extra or {}), target=target)
    host.settle(run)
    host.check(run)
    the_lock, env, python = host.where(run)
    if not shipped:  # the child imports a user action's entry from its component's directory
        env = with_action_path(env, action_info["path"])
    job = job_for(run.target, action, entry_point or check_entry(action_info), run.params)
    entry = run.target.entry
    record = records.new(
        action,
        [records.component_entry(c) for c in [*run.target.components, action_info]],
        {**entry.to_dict(), "options": run.target.options, "info": None} if entry is not None else None,
        host.config(run),
        the_lock,
        started,
    )
    try:
        host.before_launch(run, job, record)
        result, latencies = launch.run_job(job, python=python, env=env, timeout=run.params.get("timeout_s"))
        records.complete(record, result, latencies)
        host.after_child(run, record, result)
    finally:
        host.cleanup(run, record)
    if output is not None:
        records.write(record, output)
    if store:
        store_record(record, output)
    return record


def _shipped(action_info: dict) -> bool:
    """Whether the action is one reefkit ships (its actions/ folder, repo builtin-actions)."""
    from ..paths import data_dir

    return action_info.get("repo") == "builtin-actions" and Path(action_info["path"]).resolve().parent == data_dir("actions").resolve()


def with_action_path(env: dict | None, folder: str) -> dict:
    """The child's environment with the action component's folder first on PYTHONPATH, so
    that an entry such as my_metric:main finds my_metric.py beside the action's meta.json."""
    import os

    env = dict(os.environ if env is None else env)
    rest = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(folder) + (os.pathsep + rest if rest else "")
    return env


def benchmark(
    ref: str,
    backend: str | None = None,
    params: dict | None = None,
    backend_options: dict | None = None,
    lock: str | Path | None = None,
    output: str | Path | None = None,
    variant: str | None = None,
    dataset: str | None = None,
    split: str | None = None,
    store: bool = True,
    install: bool = False,
) -> dict:
    """Run the benchmark action; returns the result record (raw latencies as an int64 array).

    A model runs in the lock of what it needs here (install=True installs what is missing)."""
    return run_action("benchmark", ref, backend=backend, params=params, backend_options=backend_options,
                      variant=variant, dataset=dataset, split=split, lock=lock, output=output, store=store,
                      install=install)


def predict(ref: str, backend: str | None = None, inputs: list[str] | None = None, params: dict | None = None, **kw) -> dict:
    """Run the run action (`cr run`): decoded predictions for dataset samples or for files
    (images or .npy); the record's "predictions" lists them."""
    params = dict(params or {})
    if inputs:
        params["inputs"] = [str(p) for p in inputs]
    return run_action("run", ref, backend=backend, params=params, **kw)
