"""Host hooks: what differs between actions on the host side, around the one pipeline of run_action.

    class MyHost(ActionHost):                      # my_actions/host.py, named by the action meta:
        def after_child(self, run, record, result):    #   "host": "my_actions.host:MyHost"
            record["my_note"] = "checked on the host"

cr.run.actions.run_action is the only path from a request to a stored record. Its steps,
each a method of the action's host (this base class does the common thing, an action
overrides only what it needs):

    settle(run)                  the target (model or solution, variant, backend, dataset) and
                                 the merged, schema-checked params -> run.target, run.params
    check(run)                   refuse what cannot work before anything starts (settings)
    requirements(run)            software the action needs besides the backend's (LoadGen)
    where(run)                   (lock, env, interpreter) the child runs with
    config(run)                  the record's "config"
    before_launch(run, job, record)   adjust the job (log or output folders) and the record
    launch(run, job, python, env)     run the child(ren): (result, latencies) (compile: one child per hop of a chain)
    after_child(run, record, result)  what the child's result means on the host (store a trace,
                                 register a compiled model); the record is then written/stored
    cleanup(run, record)         always, after the child (remove work folders)

needs_backend = False: the action runs on a model without a backend (compile).

An action meta names its host as ``"host": "module:Class"`` (a subclass of ActionHost);
without one it gets ActionHost. load_host() checks it when it is loaded, as backends are
(cr.runtime.registry): the class, and the signature of every hook it overrides; a problem
is a HostHookError naming the action's meta file. The module is imported with the action
component's directory on sys.path for an action from a repository (a user action keeps
its host beside its entry).
"""
from __future__ import annotations

import inspect
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CRError

_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class HostHookError(CRError):
    """An action's host hook that cannot be used: named by its meta file."""


@dataclass
class ActionRun:
    """One request to run an action, and what the pipeline settles on the way."""
    action: str
    ref: str
    info: dict  # the action component (cr.store.catalog.show)
    started: str
    given: dict = field(default_factory=dict)  # the caller's params
    backend: str | None = None
    backend_options: dict | None = None
    variant: str | None = None
    dataset: str | None = None
    split: str | None = None
    lock: str | Path | None = None
    output: str | Path | None = None
    install: bool = False
    store: bool = True
    layered: bool = True
    model_ref: str | None = None
    entry_point: str | None = None
    extra: dict = field(default_factory=dict)  # what this action's host takes beyond these (profile: trace)
    target: object = None  # cr.run.target.Target, once settled
    params: dict | None = None
    state: dict = field(default_factory=dict)  # the host's own notes between its steps
    on_phase: object = None  # on_phase(name, info) for the child's phase marks (cr.run.launch.run_job)

    @property
    def action_ref(self) -> str:
        return f"action:{self.action}"


class ActionHost:
    """The host side of one action; every method has the common behaviour (see the module docstring)."""

    needs_backend = True

    def settle(self, run: ActionRun) -> None:
        from .target import merged_params, model_target, prepare, settle_threads

        if run.target is None:
            if self.needs_backend or run.backend is not None:
                run.target = prepare(run.ref, run.action, run.backend, run.variant, run.dataset, run.split,
                                     run.backend_options, run.layered, run.model_ref)
            else:
                run.target = model_target(run.ref, run.action, run.variant, run.dataset, run.split)
        run.params = merged_params(run.action_ref, run.info["meta"], *run.target.layers, run.given)
        settle_threads(run.target, run.params, run.backend_options, run.given)  # one knob: threads vs the backend's own

    def check(self, run: ActionRun) -> None:
        pass

    def requirements(self, run: ActionRun) -> tuple[str, ...]:
        return ()

    def where(self, run: ActionRun) -> tuple[dict | None, dict | None, str]:
        from .target import where

        return where(run.target, run.lock, run.action, run.install, self.requirements(run))

    def config(self, run: ActionRun) -> dict:
        t = run.target
        backend = {"backend": t.entry.name, "backend_options": t.options} if t.entry is not None else {}
        from .target import config_notes

        return {**run.params, **backend, "variant": t.meta.get("variant"),
                "dataset": t.dataset["ref"] if t.dataset else None, "split": t.split, **config_notes(t)}

    def before_launch(self, run: ActionRun, job, record: dict) -> None:
        pass

    def launch(self, run: ActionRun, job, python: str, env: dict | None):
        """(result, latencies) of the child run for job (cr.run.launch.run_job)."""
        from . import launch

        return launch.run_job(job, python=python, env=env, timeout=run.params.get("timeout_s"), on_phase=run.on_phase)

    def after_child(self, run: ActionRun, record: dict, result: dict) -> None:
        pass

    def cleanup(self, run: ActionRun, record: dict) -> None:
        pass


# hook -> its parameters after self (what run_action passes)
HOOKS = {"settle": ("run",), "check": ("run",), "requirements": ("run",), "where": ("run",), "config": ("run",),
         "before_launch": ("run", "job", "record"), "launch": ("run", "job", "python", "env"), "after_child": ("run", "record", "result"),
         "cleanup": ("run", "record")}


def load_host(info: dict, folder: str | None = None) -> ActionHost:
    """The host hook the action meta names ("host": "module:Class"), checked; ActionHost() without one.

    folder: put first on sys.path to import it (a user action's component folder, where
    its host module lives beside its meta.json); None for reefkit's own actions.

    HostHookError naming the meta file when it cannot be imported, is not an ActionHost
    subclass, or overrides a hook with parameters run_action cannot pass."""
    spec = (info.get("meta") or {}).get("host")
    if spec is None:
        return ActionHost()
    where = f"{info.get('meta_path') or info.get('ref')}: /host"
    if not isinstance(spec, str) or not _SPEC.match(spec):
        raise HostHookError(f"{where}: expected module:Class, found {spec!r}",
                            hint="an action's host names a subclass of cr.run.hooks.ActionHost, e.g. my_actions.host:MyHost")
    from ..plugins import LoadError, load_attr

    if folder and str(folder) not in sys.path:  # a user action keeps its host module beside its meta
        sys.path.insert(0, str(folder))
    try:
        cls = load_attr(spec)
    except LoadError as exc:  # a broken hook is the action author's to fix, reported as such
        if exc.stage != "import":
            cls = None
        else:
            raise HostHookError(f"{where}: {spec} cannot be imported: {exc}",
                                hint="put the module beside the action's meta.json, or install it where cr runs") from exc
    if not (isinstance(cls, type) and issubclass(cls, ActionHost)):
        found = "nothing" if cls is None else (f"class {cls.__name__}" if isinstance(cls, type) else f"a {type(cls).__name__}")
        raise HostHookError(f"{where}: {spec} is {found}, not a subclass of cr.run.hooks.ActionHost",
                            hint="derive the class from cr.run.hooks.ActionHost and override only the hooks you need")
    if not isinstance(cls.needs_backend, bool):
        raise HostHookError(f"{where}: {cls.__name__}.needs_backend is {cls.needs_backend!r}, not True or False")
    for name, params in HOOKS.items():
        func = inspect.getattr_static(cls, name)
        if func is inspect.getattr_static(ActionHost, name):
            continue
        try:
            inspect.signature(getattr(cls, name)).bind(None, *params)
        except TypeError:
            raise HostHookError(f"{where}: {cls.__name__}.{name}{inspect.signature(getattr(cls, name))} cannot be "
                                f"called as {name}(self, {', '.join(params)})",
                                hint=f"a host's {name} takes (self, {', '.join(params)}); see cr/run/hooks.py") from None
        except ValueError:
            continue
    return cls()


def actions_for(kind: str) -> tuple[str, ...]:
    """The names of the actions whose meta's ``applies_to`` names kind, sorted: what a
    solution may declare and a campaign run (kind "solution"), what `cr do` offers."""
    from ..store.catalog import open_index

    index = open_index(kind="action")
    try:
        applies: dict[str, bool] = {}
        for comp in index.components(kind="action"):  # precedence order: the first of a name is the one used
            if comp.name not in applies:
                applies[comp.name] = kind in (index.meta_of(comp).get("applies_to") or [])
    finally:
        index.close()
    return tuple(sorted(name for name, ok in applies.items() if ok))
