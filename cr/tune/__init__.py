"""cr tune: a budgeted multi-objective search over runtime x precision x threads x batch, here.

    from cr.tune import tune
    result = tune("model:lenet-digits", objectives=["p50", "throughput"], constraints=["top1>=ref-0.01"],
                  threads=[1, 2], batch_sizes=[1, 8, 32], budget=8, verify=True)
    result["recommendation"], result["front"], result["verify"]["hypervolume"]["ratio"]

Modules (one concern each):
    space.py   the stacks a backend can load (backend x variant, each with its precision) x threads x batch
    trial.py   one trial: run_action("benchmark") in the stack's own lock, the stack validated once
    study.py   Optuna's sampler + sqlite storage (CR_HOME/tune/NAME.db): ask/tell, resume, de-duplication
    report.py  points, the Pareto set (cr.results.pareto: ties within noise), the pick, the gap to the grid

Local only: trials run one at a time on this machine (a campaign's platforms are not used).
"""
from __future__ import annotations

import hashlib
import json
import math

from ..errors import CRError
from ..results import pareto

DEFAULT_OBJECTIVES = ("p50", "throughput")


def tune(ref: str, objectives: list[str] | None = None, constraints: list[str] | None = None,
         backends: list[str] | None = None, precisions: list[str] | None = None, threads: list[int] | None = None,
         batch_sizes: list[int] | None = None, exclude: list[str] | None = None, budget: int | None = None,
         name: str | None = None, seed: int = 0, sampler: str = "tpe", min_duration_s: float = 1.0,
         trial_timeout_s: float = 300.0, install: bool = False, verify: bool = False,
         save_solution: str | None = None, screen_stacks: bool = True, refine: bool = True) -> dict:
    """Search, report, and optionally verify against the full grid and save the pick as a solution.

    Every bad input is a CRError raised before anything is measured (an objective nothing
    measures here, a constraint on a metric the dataset cannot give, an empty space, a
    budget too small for one trial, a study file of another model)."""
    from . import report as reports
    from .space import build
    from .study import Study, parse_constraint, run_grid, screen, search
    from .trial import Runner, is_accuracy

    objs = [pareto.objective(o) for o in (objectives or DEFAULT_OBJECTIVES)]
    if len({o.name for o in objs}) != len(objs):
        raise CRError(f"--objective names one objective twice: {', '.join(o.name for o in objs)}", hint="name each once")
    cons = [parse_constraint(c) for c in constraints or []]
    if budget is not None and budget < 1:
        raise CRError(f"--budget {budget} is too small for one trial", hint="a budget is the number of configurations measured: 1 or more")
    _check_energy(objs, cons)
    space = build(ref, backends, precisions, threads, batch_sizes, exclude, install)
    grid_size = len(space.configs())
    budget = budget if budget is not None else max(3, math.ceil(0.25 * grid_size))
    name = name or space.model.split(":", 1)[1].split("@", 1)[0]
    metrics = objs + [pareto.objective(c.metric) for c in cons if c.metric not in {o.name for o in objs}]
    _can_give(space, metrics)
    study = Study.open(name, space, objs, cons, seed=seed, sampler=sampler)
    runner = Runner(space, metrics, study.tag, study, install, min_duration_s, trial_timeout_s)
    recovered = study.recover()
    _check_accuracy(study, runner, metrics)
    if screen_stacks:
        screen(study)
    defer = not any(is_accuracy(o) for o in objs)  # accuracy only constrained: validate a stack when it could matter
    progress = search(study, runner, budget, seed, defer=defer, refine=refine)
    result = reports.report(study)
    result.update(budget=budget, seed=seed, sampler=sampler, recovered=recovered, ran_now=progress["ran_now"],
                  min_duration_s=min_duration_s, local_only=True)
    if verify:
        # shared by every tune of this space, objectives, constraints and run length in this CR_HOME
        what = hashlib.sha256(json.dumps([space.digest, [o.name for o in objs], [c.text for c in cons],
                                          min_duration_s]).encode()).hexdigest()[:12]
        gname = f"grid-{space.model.split(':', 1)[1].split('@', 1)[0]}-{what}"
        grid = Study.open(gname, space, objs, cons, seed=0, sampler="random")
        grunner = Runner(space, metrics, grid.tag, grid, install, min_duration_s, trial_timeout_s)
        grid.recover()
        _check_accuracy(grid, grunner, metrics)
        run_grid(grid, grunner)
        result["verify"] = reports.verify(result, reports.report(grid), grid)
    if save_solution:
        result["solution"] = _save(save_solution, space, result)
    return result


def _check_energy(objs: list, cons: list) -> None:
    if "energy" not in {o.name for o in objs} | {c.metric for c in cons}:
        return
    from ..platform import energy
    from ..platform.sources import HostSource

    meters, why = energy.meters(HostSource(timeout=2.0), energy.command_from_env())
    if not meters:
        raise CRError(f"no backend measures energy on this machine: {why}",
                      hint="choose other objectives (p50, p90, p99, throughput, memory), or set CR_ENERGY_COMMAND "
                           "to a command that prints joules (docs/tune.md)")


TASK_METRICS = {"classification": ("top1", "top5"), "detection": ("map",)}


def _can_give(space, metrics: list) -> None:
    """CRError, before anything runs, when an accuracy metric cannot come from the model's task
    and dataset (a validation judges classification by top1/top5, detection by mAP)."""
    from ..runtime.datasets import has_annotations
    from ..store.catalog import show
    from .trial import is_accuracy

    acc = [m.name for m in metrics if is_accuracy(m)]
    if not acc:
        return
    if space.dataset is None:
        raise CRError(f"{space.model} names no dataset, so {', '.join(acc)} cannot be measured",
                      hint="tune a solution naming a labelled dataset, or drop the accuracy objective/constraint")
    ds = show(space.dataset, verify=False)
    if not has_annotations(ds["meta"]):
        raise CRError(f"the dataset {ds['ref']} has no labels, so {', '.join(acc)} cannot be measured",
                      hint="tune with a labelled dataset (a solution naming one), or drop the accuracy objective/constraint")
    task = show(space.model, verify=False)["meta"].get("task") or "unknown"
    gives = TASK_METRICS.get(task, ())
    lacking = [m for m in acc if m not in gives]
    if lacking:
        raise CRError(f"the dataset {ds['ref']} cannot give {', '.join(lacking)} for {space.model} (a {task} model; "
                      f"its validation gives {', '.join(gives) or 'no accuracy metric'})",
                      hint="constrain or optimise a metric its validation gives" + (f": {', '.join(gives)}" if gives else ""))


def _check_accuracy(study, runner, metrics: list) -> None:
    """Validate the reference stack (the model's first fp32 variant) before the search when an
    accuracy figure is an objective or a constraint; CRError when the dataset cannot give it."""
    from .trial import is_accuracy

    acc = [m for m in metrics if is_accuracy(m)]
    if not acc:
        return
    space = study.space
    stack = _reference_stack(space)
    got, spent = runner.validation(stack, None)
    if study.get("reference") is None:
        study.set("reference", stack.key)
        study.set("reference_device_s", round(spent, 3))
    if got["status"] != "ok":
        raise CRError(f"the reference validation ({stack.key}) failed: {got['error']}",
                      hint="fix it (cr validate " + f"{space.model} --backend {stack.backend} --variant {stack.variant}), "
                           "or drop the accuracy objective/constraint")
    lacking = [m.name for m in acc if m.name not in got["values"]]
    if lacking:
        given = ", ".join(k for k in ("top1", "top5", "map") if k in got["values"]) or "none of top1, top5, map"
        raise CRError(f"the dataset {space.dataset} cannot give {', '.join(lacking)} for {space.model} (its validation gives {given})",
                      hint="constrain or optimise a metric its validation gives")


def _reference_stack(space):
    """The model's first fp32 variant, on the first backend of the space that loads it."""
    from .space import stacks, target_of

    model, _, _ = target_of(space.model)
    everything = stacks(model)
    fp32 = [s for s in everything if s.precision == "fp32"] or everything
    in_space = [s for s in space.stacks if s.variant == fp32[0].variant]
    return (in_space or fp32)[0]


def _save(name: str, space, result: dict) -> dict:
    """The pick as a locked solution component: created in the local repo, then initialised."""
    from ..run import solution

    rec = result.get("recommendation")
    if rec is None:
        raise CRError(f"no configuration to save as solution:{name}: no trial succeeded and met the constraints",
                      hint="see the failed trials above; widen the space or relax a constraint")
    c = rec["config"]
    info = solution.create(name, c.get("model") or space.model, c["backend"], dataset=space.dataset, variant=c["variant"],
                           params={"threads": c["threads"], "batch_size": c["batch_size"]},
                           description=f"picked by cr tune {result['study']['name']} ({rec['rule']})")
    ready = solution.init(info["ref"])
    return {"ref": info["ref"], "lock": ready.get("lock"), "config": c}
