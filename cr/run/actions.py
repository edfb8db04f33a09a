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
from pathlib import Path

from ..errors import CRError, StoreError
from ..events import reporter
from ..runtime.job import Job
from ..results import record as records
from . import launch
from .target import Target


_ENTRY = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


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
    task = f"{action} {ref}"
    run = ActionRun(action, ref, action_info, started, given=dict(params or {}), backend=backend,
                    backend_options=backend_options, variant=variant, dataset=dataset, split=split, lock=lock,
                    output=output, install=install, store=store, layered=layered, model_ref=model_ref,
                    entry_point=entry_point, extra=dict(extra or {}), target=target, on_phase=_relay(task, reporter()))
    said = reporter()
    said.phase(task, "resolve")
    ended = "failed"
    try:
        record = _run(host, run, action, action_info, shipped, entry_point, output, store)
        # "ran", not the record's "ok": a verdict (tolerance, PASS/FAIL) may still follow this line
        status = record.get("status")
        ended = "ran" if status in (None, "ok") else status
    except NotStored:
        ended = "not stored"
        raise
    finally:
        said.phase(task, None, ended)
    return record


def _relay(task: str, said):
    """on_phase for the child's marks (cr.runtime.progress): each one a phase of task, told
    to said (this thread's reporter: the marks arrive on a reader thread of their own)."""
    def on_phase(name: str, info: dict) -> None:
        detail = f"{info['samples']} samples" if isinstance(info.get("samples"), int) else ""
        said.phase(task, name, detail, _seconds(info.get("expect_s")), _seconds(info.get("max_s")))
    return on_phase


def _seconds(value) -> float | None:
    return float(value) if type(value) in (int, float) and value >= 0 else None


def _run(host, run, action: str, action_info: dict, shipped: bool, entry_point, output, store) -> dict:
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
        run.started,
    )
    try:
        host.before_launch(run, job, record)
        reporter().phase(f"{action} {run.ref}", "load")  # the child's start, its framework and the model
        result, latencies = host.launch(run, job, python, env)
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
