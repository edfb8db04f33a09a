"""Solutions: create one, make it ready on this machine, run what it declares, reproduce it.

    create("my-digits", model="model:lenet-digits@1.0.0", backend="tflite")   # local repo
    report = init("solution:lenet-digits-onnxruntime")   # verify, resolve, install, compile, lock
    records = run_declared("solution:lenet-digits-onnxruntime")   # benchmark + validate, stored
    report = reproduce("lenet-digits-onnxruntime-1.0.0.cr.zip")   # init + run + compare

A solution meta (DESIGN.md "Solution", a contract) composes ``model``, ``dataset``,
``backend`` and ``backend_options``, ``pipeline`` ({"variant": NAME} to run one variant of
the model, {"compile": {"to": "onnx", ...}} for a conversion init performs), ``actions``
([{"action": NAME, "params": {...}}]: benchmark, validate, run, or any action whose meta
applies to solutions, see runnable()), ``platform``
({"marker": PEP 508, "requires": [capabilities]}), ``expected`` (metrics with
tolerances, over the model's) and ``deps`` (software requirements).

Nothing here imports numpy or a framework: actions run in the runtime child, inside the
solution's lock.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ..errors import CRError, NotFound
from ..events import Reporter, reporter
from ..resolve import plan
from ..store import catalog
from .actions import NotStored, run_action
from .target import merged_params
from .hooks import actions_for


def runnable() -> tuple[str, ...]:
    """The actions a solution may declare and run: those whose meta applies to solutions
    (benchmark, validate, run, profile, and user actions that say so)."""
    return actions_for("solution")


# ------------------------------------------------------------------------------- create

def create(name: str, model: str, backend: str, dataset: str | None = None, variant: str | None = None,
           backend_options: dict | None = None, version: str = "1.0.0", repo: str | None = None,
           description: str = "", scenario: str | list[str] | tuple[str, ...] = "single-stream",
           tags: list[str] | None = None, params: dict | None = None) -> dict:
    """A new solution component in the local repo (or repo): model + dataset + backend + actions.

    scenario: one benchmark scenario or several, each a declared benchmark action. A
    validate action is declared only when the dataset (dataset, else the model's) carries
    labels or boxes to judge predictions by; without one the solution only benchmarks.
    backend_options are checked against the backend's OPTIONS when its class loads here.
    The whole meta is built and validated before anything is written: a bad argument
    leaves no component behind. params (threads, batch_size, ...) go to every declared
    benchmark action (cr tune --save-solution). Its software deps are what the backend declares
    (cr.runtime.registry: the runtime's numpy, then the backend's REQUIRES), then the model's own.
    """
    from ..runtime import pipeline, registry
    from ..runtime.backends.base import check_options
    from ..store import authoring

    target = catalog.show(model, verify=False)
    if target["kind"] != "model":
        raise CRError(f"--model {model} is a {target['kind']}", hint="give a model ref, e.g. model:lenet-digits@1.0.0")
    entry = registry.find(backend)  # unknown backend: fails here, naming the available ones
    if backend_options and isinstance(backend_options, dict):  # not an object: the schema says so below
        try:
            cls = registry.load_class(entry)
        except registry.BackendError:
            cls = None  # a backend that imports only in a lock's interpreter: its run checks the options
        if cls is not None:
            check_options(cls, backend_options)
    meta_model = target["meta"]
    ds = dataset or (meta_model.get("dataset") or {}).get("ref")
    labelled = False
    if ds:
        info = catalog.show(ds, verify=False)
        if info["kind"] != "dataset":
            raise CRError(f"--dataset {ds} is a {info['kind']}", hint="give a dataset ref")
        ds = info["ref"]
        from ..runtime.datasets import has_annotations  # data only: reads the meta, imports no numpy

        labelled = has_annotations(info["meta"])
    scenarios = [scenario] if isinstance(scenario, str) else list(dict.fromkeys(scenario or ()))
    if not scenarios:
        raise CRError("a new solution needs at least one benchmark scenario", hint="e.g. --scenario single-stream")
    actions = [{"action": "benchmark", "params": {"scenario": s, **(params or {})}} for s in scenarios]
    if labelled:
        actions.append({"action": "validate", "params": {}})
    fields = {
        "model": target["ref"],
        **({"dataset": ds} if ds else {}),
        "backend": backend,
        **({"backend_options": backend_options} if backend_options else {}),
        **({"pipeline": {"variant": variant}} if variant else {}),
        "actions": actions,
        "deps": list(dict.fromkeys([*registry.RUNTIME_REQUIRES, *registry.requirements(entry),
                                    *pipeline.requirements(meta_model), *(meta_model.get("deps") or [])])),
    }
    for act in fields["actions"]:  # a parameter its action refuses (a misspelt scenario) fails here, not at run time
        action = catalog.show(f"action:{act['action']}", verify=False)
        merged_params(action["ref"], action["meta"], act["params"])
    authoring.new("solution", name, version=version, tags=tags or [backend, meta_model.get("task") or "model"],
                  repo=repo, description=description or f"{target['ref']} on {backend}", fields=fields)
    return catalog.show(f"solution:{name}@{version}", verify=False)


def new_solution(name: str, model: str, backend: str, **options) -> dict:
    """create(name, model, backend, **options) as `cr init solution NAME --model M --backend B
    --json` prints it: {"created": its ref, "path": its meta.json, "meta"} (create() returns the
    catalog's fuller view, whose keys callers already rely on)."""
    created = create(name, model, backend, **options)
    return {"created": created["ref"], "path": created["meta_path"], "meta": created["meta"]}


# --------------------------------------------------------------------------------- init

def locate(source: str) -> tuple[str, dict | None]:
    """(solution ref, archive info or None) for a name, a ref, an archive file or a git URL."""
    path = Path(source)
    if source.endswith(".zip") or path.is_file():
        if not path.is_file():
            raise NotFound(f"archive {source} does not exist", hint="give the path of a .cr.zip made by cr pack")
        from ..archive import unpack

        info = unpack(path)
        refuse_namesake(info)
        return info["solution"], info
    if "://" in source or source.startswith("git@") or source.endswith(".git"):
        repo = catalog.repo_pull(source)
        sols = [c for c in catalog.find("solution") if c.repo == repo.name]
        if len(sols) != 1:
            names = ", ".join(c.ref for c in sols) or "none"
            raise CRError(f"the repository {source} holds {len(sols)} solutions ({names})",
                          hint="it is registered now: cr init solution NAME picks one")
        return sols[0].ref, None
    return (source if ":" in source else f"solution:{source}"), None


def refuse_namesake(info: dict) -> None:
    """The archive's own solution is what init and reproduce set up: CRError, naming both, when
    its ref means another repository's solution here (a shipped or trusted one of the same name
    and version, which precedence puts first) and the two differ in content. An identical copy
    is the same solution, so setting up either is setting up the archive's."""
    from ..store.content import component_sha256, is_copy_of

    here = catalog.show(info["solution"], verify=False)
    if here["repo"] == info["repo"]:
        return
    own = catalog.show(info["solution"], verify=False, prefer_repo=info["repo"])
    if own["repo"] != info["repo"]:
        return  # the archive does not hold it under that ref: unpack's own checks speak
    if component_sha256(own["meta"]) == component_sha256(here["meta"]) \
            and is_copy_of(own["meta_path"], here["meta_path"]):
        _refuse_changed_parts(info, here)
        return
    raise CRError(
        f"the archive's {info['solution']} (repo {info['repo']!r}) differs from the {here['ref']} in repo "
        f"{here['repo']!r}, which {here['ref']} means on this machine: setting it up would run the other one",
        hint=f"give the archive's solution a version of its own (edit its meta, cr pack again), or remove repo "
             f"{info['repo']!r} (cr repo rm {info['repo']}) and inspect it with cr unpack first")


def _refuse_changed_parts(info: dict, here: dict) -> None:
    """The archive's solution is an identical copy of the one here (a shipped solution, which
    comes before unpacked archives), so setting it up takes its model, dataset and actions
    from here: CRError, naming it, when the archive carries a different one under the same
    ref (the reference results were measured with the archive's, which would not run)."""
    from ..store.content import component_sha256

    index = catalog.open_index()
    try:
        for ref in info.get("components") or []:
            kind, _, rest = ref.partition(":")
            name, _, version = rest.partition("@")
            if kind not in ("model", "dataset", "action") or ref == info["solution"]:
                continue
            # read from the index, not through show(): no shadowing warning before the answer
            copies = [c for c in index.components(kind=kind, name=name) if c.version == version]
            theirs = next((c for c in copies if c.repo == info["repo"]), None)
            others = sorted((c for c in copies if c.repo != info["repo"]), key=lambda c: c.repo != here["repo"])
            if theirs is None or not others:
                continue
            if component_sha256(index.meta_of(others[0])) != component_sha256(index.meta_of(theirs)):
                raise CRError(
                    f"the archive's {info['solution']} is the {here['ref']} of repo {here['repo']!r}, but its {ref} "
                    f"differs from the one in repo {others[0].repo!r}, which {here['ref']} uses here: setting it up "
                    "would not run the archive's model and data",
                    hint=f"give the archive's solution a version of its own (edit its meta, cr pack again); compare "
                         f"the two with cr show {ref} --repo {info['repo']}")
    finally:
        index.close()


def check_platform(meta: dict, ref: str) -> None:
    """CRError when the solution's platform constraints do not hold on this machine."""
    from ..platform import current
    from ..software.recipe import marker_holds

    constraint = meta.get("platform") or {}
    if not constraint:
        return
    here = current()
    if not marker_holds(constraint.get("marker"), here.markers()):
        raise CRError(f"{ref} does not run on this machine: its platform marker {constraint['marker']!r} is false here",
                      hint=f"this machine: {here.markers().get('platform_machine')} {here.markers().get('sys_platform')}; "
                           "cr platform shows what it has")
    have = here.capabilities()
    lacking = [c for c in constraint.get("requires") or [] if c not in have]
    if lacking:
        raise CRError(f"{ref} needs {', '.join(lacking)}, which this machine does not have",
                      hint=f"this machine has: {', '.join(sorted(have)) or 'no accelerator capabilities'}; cr platform shows them")


def _verify(ref: str) -> list[dict]:
    """Every component the solution uses (catalog.show's dicts), with its files' sha256 verified."""
    sol = catalog.show(ref, verify=True)
    checked = [sol]
    for key in ("model", "dataset"):
        if sol["meta"].get(key):
            try:
                checked.append(catalog.show(sol["meta"][key], verify=True, prefer_repo=sol["repo"]))
            except NotFound as exc:
                raise NotFound(f"{sol['ref']} uses {sol['meta'][key]}, which is not here: {exc.message}", hint=exc.hint) from None
    for info in checked:
        bad = [f for f in info.get("files") or [] if f["status"] != "ok"]
        if bad:
            raise CRError(f"{info['ref']}: file {bad[0]['path']} is {bad[0]['status']} (sha256 does not match its meta)",
                          hint="the component was changed or damaged; restore it (cr repo update, or unpack the archive again)")
    return checked


def _code_items(sol: dict) -> list:
    """What setting up and running the solution would import or call from untrusted
    repositories: the model's architecture file when the variant its backend runs (or its
    declared compile reads) is a state dict, the dataset's loader, the actions' entries."""
    from ..runtime import registry, variants
    from ..store import trust

    meta, own = sol["meta"], sol["repo"]
    infos = []
    if meta.get("model"):
        model = catalog.show(meta["model"], verify=False, prefer_repo=own)
        used = []
        spec = (meta.get("pipeline") or {}).get("compile")
        if spec:
            from .compile import source_variant

            used.append(source_variant(model, spec["to"], spec.get("variant")))
        elif meta.get("backend"):
            try:
                formats = getattr(registry.load_class(registry.find(meta["backend"])), "FORMATS", None)
                used.append(variants.choose(model["meta"], formats, (meta.get("pipeline") or {}).get("variant"),
                                            backend=f"backend {meta['backend']!r}", ref=model["ref"]))
            except CRError:
                pass  # a backend or variant that does not fit fails when the solution runs, with its own error
        if any(trust.runs_code(model, effective) for effective in used):
            infos.append(model)
    dataset = meta.get("dataset") or ((infos[0]["meta"] if infos else {}).get("dataset") or {}).get("ref")
    if dataset:
        ds = catalog.show(dataset, verify=False, prefer_repo=own)
        if trust.runs_code(ds):
            infos.append(ds)
    for act in meta.get("actions") or []:
        if isinstance(act, dict) and isinstance(act.get("action"), str):
            try:
                info = catalog.show(f"action:{act['action']}", verify=False, prefer_repo=own)
            except CRError:
                continue
            if info["repo"] != "builtin":
                infos.append(info)
    items = trust.items_of(infos, catalog.open_index)
    if meta.get("backend") and meta.get("backend_options"):
        from .target import code_option_items

        try:
            items += code_option_items(sol, registry.find(meta["backend"]), meta["backend_options"])
        except CRError:
            pass  # an unknown backend fails when the solution runs, with its own error
    return items


def compiled_ref(meta: dict, own: str | None = None) -> str | None:
    """The model ref the solution's declared compile produces (None when it declares none);
    own: the solution's repository, whose copy of the model comes first."""
    spec = (meta.get("pipeline") or {}).get("compile")
    if not spec:
        return None
    from ..runtime.actions.compile import plan
    from .compile import source_variant, output_version

    model = catalog.show(meta["model"], verify=False, prefer_repo=own)
    source = source_variant(model, spec["to"], spec.get("variant"))
    the_plan = plan(source.get("format"), spec["to"], spec.get("precision"), spec.get("quantization"), spec.get("options"), model["ref"])
    return f"model:{model['name']}@{spec.get('version') or output_version(model['version'], the_plan['label'])}"


def init(source: str, offline: bool = False, trust: bool = False) -> dict:
    """Make a solution ready here: verify, check the platform, resolve, install, compile, lock.

    Idempotent: when everything is present it only reads (the cached lock, the index).
    A run that finds nothing to do and reports nothing leaves a ready stamp
    (cr.resolve.initstamp) from which the next `cr init solution SOURCE` answers without
    this path while nothing it read has changed.
    """
    started = time.perf_counter()
    from ..events import set_reporter

    said = _Told(reporter())
    previous = set_reporter(said)
    try:
        report, the_lock, verified = _init(source, offline, trust)
    finally:
        set_reporter(previous)
    report["seconds"] = round(time.perf_counter() - started, 3)
    _stamp_if_idle(source, report, the_lock, verified, said.told)
    return report


class _Told(Reporter):
    """Passes events on to another reporter, and remembers whether any was told."""

    def __init__(self, inner) -> None:
        self.inner, self.told = inner, False

    def warning(self, message: str) -> None:
        self.told = True
        self.inner.warning(message)

    def info(self, message: str) -> None:
        self.told = True
        self.inner.info(message)

    def progress(self, task: str, done: int, total: int | None, unit: str = "B") -> None:
        self.told = True
        self.inner.progress(task, done, total, unit)

    def phase(self, task, name, detail="", expect_s=None, max_s=None) -> None:
        self.inner.phase(task, name, detail, expect_s, max_s)  # a step, not something said to the user


def _stamp_if_idle(source: str, report: dict, the_lock: dict, verified: list[dict], told: bool) -> None:
    """The ready stamp of a run that did nothing (nothing unpacked, pulled, installed,
    compiled or trusted, no payload pin to check, nothing reported); any other run removes
    the stamp, so only the full path answers until it again finds nothing to do."""
    from ..paths import cr_home
    from ..resolve import initstamp

    home = str(cr_home())
    idle = (not told and report["archive"] is None and not report["installed"] and report["payload"] is None
            and (report["compiled"] is None or not report["compiled"]["created"]) and the_lock.get("path")
            and not the_lock.get("missing") and locate_kind(source) == "name")
    if not idle:
        initstamp.forget(home, source)
        return
    extra = [report["compiled"]["ref"]] if report["compiled"] else []
    initstamp.write(home, source, report, the_lock, verified, extra)


def locate_kind(source: str) -> str:
    """How locate() reads source: 'archive', 'git' or 'name' (a name or a ref)."""
    if source.endswith(".zip") or Path(source).is_file():
        return "archive"
    if "://" in source or source.startswith("git@") or source.endswith(".git"):
        return "git"
    return "name"


def _init(source: str, offline: bool, trust: bool) -> tuple[dict, dict, list[dict]]:
    ref, archive = locate(source)
    sol = catalog.show(ref, verify=False)
    if sol["kind"] != "solution":
        raise CRError(f"{sol['ref']} is a {sol['kind']}, not a solution", hint="cr find solution lists them")
    ref = sol["ref"]
    check_platform(sol["meta"], ref)
    verified = _verify(ref)
    verified_refs = [c["ref"] for c in verified]
    # Before anything is detected, installed or compiled: what would run from untrusted
    # repositories (an archive's own recipes, a net.py) needs the user's consent.
    plan.consent(ref, trust, f"setting up {ref}", _code_items(sol))
    result = plan.install_missing(ref, offline=offline)
    the_lock = result["lock"]
    payload = check_payload(sol, the_lock)
    compiled = None
    target = compiled_ref(sol["meta"], sol["repo"])
    if target is not None:
        try:
            catalog.show(target, verify=False)
            compiled = {"ref": target, "created": False}
        except NotFound:
            compiled = {"ref": target, "created": True, "record": _compile(sol["meta"], the_lock, sol["repo"])}
    report = {
        "solution": ref,
        "archive": archive,
        "verified": verified_refs,
        "software": [{"name": s["name"], "version": s["version"], "origin": s["origin"],
                      "installed_now": s["name"] in {e["name"] for e in result["installed"]}} for s in the_lock["software"]],
        "installed": [e["name"] for e in result["installed"]],
        "payload": payload,
        "compiled": compiled,
        "lock": the_lock.get("path"),
    }
    return report, the_lock, verified


def check_payload(sol: dict, the_lock: dict) -> dict | None:
    """The pin state of the solution's model file when it comes from a registry package,
    looked for where the lock puts it (its PYTHONPATH first): a file that is not the pinned
    one is PinMismatch before anything runs (an archive's reproduction never measures
    another graph); a package this interpreter cannot see is reported, and loading checks
    it again in the child."""
    from ..runtime import pins
    from ..runtime.model import pin_status

    model_ref = sol["meta"].get("model")
    if not model_ref:
        return None
    model = catalog.show(model_ref, verify=False, prefer_repo=sol["repo"])
    if pins.pin_of(model["meta"]) is None:
        return None
    paths = []
    for sw in the_lock.get("software") or ():  # where the lock's prefixes put python packages
        value = ((sw.get("exports") or {}) if isinstance(sw, dict) else {}).get("PYTHONPATH")
        paths += [str(p) for p in value] if isinstance(value, list) else str(value or "").split(os.pathsep)
    paths = [p for p in paths if p]
    state = pin_status(model["meta"], model["path"], model["ref"], paths=paths or None)
    if state["state"] == pins.MISMATCH:
        raise pins.PinMismatch(state["message"], hint=pins.mismatch_hint(state, model["ref"]))
    if state["state"] == pins.UNPINNED:
        reporter().warning(state["message"])
    return state


def _compile(meta: dict, the_lock: dict, own: str | None = None) -> dict:
    from ..resolve.compose import compose
    from .compile import compile_model

    spec = dict(meta["pipeline"]["compile"])
    reporter().info(f"compiling {meta['model']} to {spec['to']} (declared by the solution)")
    record = compile_model(meta["model"], spec.pop("to"), variant=spec.pop("variant", None), version=spec.pop("version", None),
                           params=spec, python=the_lock["interpreter"], env=compose(the_lock), prefer_repo=own)
    if record["status"] != "ok":
        error = record.get("error") or {}
        raise CRError(f"the compile the solution declares failed: {error.get('message')}", hint=error.get("hint"))
    return {"uid": record["uid"], "output": record["output"]}


# ------------------------------------------------------------------------ run declared

def declared(meta: dict, only: str | None = None) -> list[dict]:
    """The solution's actions to run (only: one action name); validate/run default to one plain run."""
    names = runnable()
    acts = [a for a in meta.get("actions") or [] if a.get("action") in names and (only is None or a["action"] == only)]
    if not acts and only in ("validate", "run"):
        acts = [{"action": only, "params": {}}]
    if not acts:
        raise CRError(f"the solution declares no {only or 'runnable'} action", hint='add {"action": "benchmark"} to its "actions"')
    return acts


def run_declared(ref: str, only: str | None = None, overrides: dict | None = None, store: bool = True,
                 output_dir: str | Path | None = None, lock: str | Path | None = None, install: bool = False,
                 precision: str | None = None, pipeline: dict | None = None, **kw) -> list[dict]:
    """Run the solution's declared actions (or only one kind) inside its lock; store each result.

    overrides: {action name: params} laid over that action's declared params (the command
    line's options); lock: a lock file of this solution to run in instead of the one
    resolved here (CRError when it is not a reefkit lock, or a lock of another component);
    kw: run_action's backend/variant/dataset/split/backend_options; precision: fp32, int8,
    int8-dynamic, ... (cr.run.precision.variant_for: an existing variant, else one cr
    compile makes once); pipeline: step overrides ({"resize.interpolation": "nearest"})
    laid over a copy of the model's pipeline.

    A run whose backend, variant, precision or dataset differs from what the solution
    declares runs in the environment of its own target, as `cr validate --parity` does:
    the lock of what running the model on that backend needs here (cr.run.target.model_lock,
    cached per distinct set of software: a second job on the same stack resolves nothing).
    Missing software is installed with install=True, else one CRError names it and the
    command that installs it. When the store does not take a result, every action still
    runs, then NotStored carries all the records.
    """
    from .target import prepare

    sol = catalog.show(ref, verify=False)
    if sol["kind"] != "solution":
        raise CRError(f"{sol['ref']} is a {sol['kind']}, not a solution")
    check_platform(sol["meta"], sol["ref"])
    kw = {k: v for k, v in kw.items() if v is not None}
    model_ref = compiled_ref(sol["meta"], sol["repo"])
    if precision is not None:
        from .precision import variant_for

        backend = kw.get("backend") or sol["meta"].get("backend")
        chosen = variant_for(model_ref or sol["meta"]["model"], backend, precision, install=install)
        if kw.get("variant") not in (None, str(chosen)):
            raise CRError(f"variant {kw['variant']!r} and precision {precision} were both asked for; the {precision} "
                          f"variant for {backend} is {chosen!r} ({chosen.model_ref})",
                          hint="vary one of them: precision chooses the variant")
        model_ref, kw["variant"] = chosen.model_ref, str(chosen)
    base = prepare(sol["ref"], only or "benchmark", layered=False, model_ref=model_ref, pipeline=pipeline, **kw)
    if lock is not None:
        _the_lock, lock_file = given_lock(Path(lock), sol)
    elif own_stack(sol, base, kw):
        lock_file = job_lock(sol, base, install)
    else:
        the_lock = plan.lock(sol["ref"])
        lock_file = the_lock["path"]
        if the_lock.get("missing"):
            raise CRError(f"{sol['ref']} needs software that is not installed here: {', '.join(the_lock['missing'])}",
                          hint=f"install it first: cr init solution {sol['name']} (or cr install software {the_lock['missing'][0]})")
    records, unstored = [], []
    acts = declared(sol["meta"], only)
    task = f"solution {sol['ref']}"
    try:
        _run_each(sol, acts, task, base, lock_file, kw, overrides, output_dir, store, install, records, unstored)
    finally:
        reporter().phase(task, None, f"{len(records)} action(s) run")
    if unstored:
        raise NotStored.combine(unstored, records)
    return records


def _run_each(sol, acts, task, base, lock_file, kw, overrides, output_dir, store, install, records, unstored) -> None:
    from dataclasses import replace

    for i, act in enumerate(acts):
        reporter().phase(task, f"action {i + 1}/{len(acts)} {act['action']}")
        out = Path(output_dir) / f"{act['action']}-{i}.json" if output_dir else None
        given = (overrides or {}).get(act["action"]) or {}
        # the target settled above, with this action's declared params as its layer (below the
        # caller's), in the lock resolved (or given) above: nothing is settled or resolved again
        target = replace(base, layers=[act.get("params") or {}], options=dict(base.options), notes={})
        try:
            record = run_action(act["action"], sol["ref"], params=given, target=target, lock=lock_file, output=out,
                                store=store, backend_options=kw.get("backend_options"), install=install)
        except NotStored as exc:
            unstored.append(exc)
            record = exc.records[0]
        records.append(record)


def own_stack(sol: dict, target, kw: dict) -> bool:
    """Whether a run of the solution with kw runs another stack than the one it declares (its
    backend, variant, model version or dataset differs), so its lock is not the solution's."""
    meta = sol["meta"]
    declared_variant = (meta.get("pipeline") or {}).get("variant")
    declared_model = compiled_ref(meta, sol["repo"]) or catalog.show(meta["model"], verify=False, prefer_repo=sol["repo"])["ref"]
    declared_dataset = catalog.show(meta["dataset"], verify=False, prefer_repo=sol["repo"])["ref"] if meta.get("dataset") else None
    return (target.entry is not None and target.entry.name != meta.get("backend")) \
        or (declared_variant is not None and target.meta.get("variant") != declared_variant) \
        or target.model["ref"] != declared_model \
        or (kw.get("dataset") is not None and (target.dataset or {}).get("ref") != declared_dataset)


def job_lock(sol: dict, target, install: bool = False) -> str | None:
    """The lock file of what running target (another stack than the solution's) needs here:
    the model's deps, the runtime, the backend's and the pipeline steps' software, and the
    dataset's own software deps (cr.run.target.model_lock: resolved once per distinct set,
    then reused). None falls back to the solution's lock (no recipe offers the backend here:
    the run then fails in the backend's own words)."""
    from .target import model_lock, run_requirements

    extra = tuple(d for d in ((target.dataset or {}).get("meta") or {}).get("deps") or []
                  if isinstance(d, str) and d.startswith("software:"))
    backend = target.entry.name if target.entry is not None else "no backend"
    the_lock = model_lock(target.model["ref"], run_requirements(target, extra),
                          f"{sol['ref']} on backend {backend} (variant {target.meta.get('variant')})", install)
    return the_lock["path"] if the_lock is not None else plan.lock(sol["ref"])["path"]


def given_lock(path: Path, sol: dict) -> tuple[dict, Path]:
    """(lock, its file) of a --lock FILE for solution sol: a reefkit lock whose root is sol."""
    from ..resolve.lock import load_lock

    the_lock = load_lock(path)  # InvalidMeta naming the file for anything but a lock
    root = the_lock.get("root")
    if root != sol["ref"]:
        raise CRError(f"{path} is a lock of {root or 'nothing'}, not of {sol['ref']}",
                      hint=f"write this solution's lock with: cr resolve {sol['ref']} -o FILE (or leave out --lock)")
    return the_lock, path


def stored_references(ref: str) -> tuple[list[str], dict | None]:
    """(result files, lock) to pack as a solution's reference: the newest successful result
    of each distinct configuration (cr.results.summary.config_key: scenario, threads, batch
    size, engine, backend options, variant, ...) of each declared action on this machine,
    newest first, and the lock the newest of them ran in."""
    from ..platform import current
    from ..results.store import default_store
    from ..results.summary import config_key

    sol = catalog.show(ref, verify=False)
    wanted = {a.get("action") for a in sol["meta"].get("actions") or [] if isinstance(a, dict)}
    rows = default_store().list(solution=sol["ref"], status="ok", platform=current().fingerprint)
    chosen, locks, seen = [], [], set()
    for row in rows:  # newest first
        if row.get("action") not in wanted:
            continue
        record = _read_reference(row["file"])
        if record is None:
            continue
        key = config_key(record)
        if key not in seen:
            seen.add(key)
            chosen.append(row["file"])
            locks.append((record.get("uid"), record.get("lock") if isinstance(record.get("lock"), dict) else None))
    the_lock = next((lock for _uid, lock in locks if lock), None)
    if the_lock is not None:
        mine = _software_versions(the_lock)
        others = sorted({uid for uid, lock in locks if lock and _software_versions(lock) != mine})
        if others:
            reporter().warning(f"the reference results {', '.join(others)} ran with other software than the newest "
                               f"reference's lock, which the archive carries (each record keeps its own lock)")
    return chosen, the_lock


def _read_reference(path: str) -> dict | None:
    """A stored record (None, with a warning, when it cannot be read)."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        reporter().warning(f"skipped result {path}: {exc}")
        return None
    return record if isinstance(record, dict) else None


def _software_versions(the_lock: dict) -> dict:
    return {s.get("name"): s.get("version") for s in the_lock.get("software") or [] if isinstance(s, dict)}
