"""One trial of a tune: a configuration -> a benchmark run (and its stack's validation, once).

    runner = Runner(space, objectives, study_tag, install=False, min_duration_s=1.0)
    outcome = runner.run(config, trial_number)   # Outcome(status, values, error, device_s, ...)

Every run goes through the one host path, cr.run.actions.run_action, with the trial's
backend and variant: run_action resolves the lock of what that backend needs (a stack's
own environment, as parity does), so stacks never share one environment. The lock is
settled (and, with install, installed) once per stack before its first trial, outside
the trial's time limit: the child's timeout (timeout_s) covers the run only, never the
set-up nor a compile.

Accuracy does not depend on threads or batch size: a stack is validated once, the first
time a trial of it needs an accuracy figure, and the result is kept in the study (its
user attributes), so a resumed study does not validate again.

Every record is an ordinary stored result carrying record["study"] = {"name", "uid",
"trial"} (trial: the trial that ran it; None for the reference validation run before the
first trial). A run that fails (framework crash, unsupported op, a backend that cannot
load the variant, software missing without --install) is an Outcome with status "failed"
and the reason; it never raises.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..errors import CRError
from ..results import pareto
from .space import Config, Space, Stack

def is_accuracy(obj) -> bool:
    """Measured by the stack's validation (once), not by each benchmark."""
    return obj.name in pareto.ACCURACY


@dataclass
class Outcome:
    status: str  # "ok" | "failed"
    values: dict = field(default_factory=dict)  # objective/constraint metric -> {"value", "lo", "hi"}
    error: str | None = None
    device_s: float = 0.0  # wall time of the runs this trial made (benchmark + a validation)
    setup_s: float = 0.0  # lock resolution / installation for the stack, outside the time limit
    record: str | None = None  # the benchmark record's uid
    validation: str | None = None  # the validate record's uid
    stack_failed: bool = False  # the stack cannot run here at all (set-up or validation failed): no config of it will
    unchecked: bool = False  # accuracy not validated: a feasible point already dominates it on performance

    def to_dict(self) -> dict:
        return {"status": self.status, "values": self.values, "error": self.error, "device_s": round(self.device_s, 3),
                "setup_s": round(self.setup_s, 3), "record": self.record, "validation": self.validation,
                "stack_failed": self.stack_failed, "unchecked": self.unchecked}


class Runner:
    """Runs trials of one study; keeps per-stack set-up and validations (cache: the study's attrs)."""

    def __init__(self, space: Space, metrics: list, study_tag: dict, cache, install: bool = False,
                 min_duration_s: float = 1.0, trial_timeout_s: float = 300.0, scenario: str = "single-stream"):
        self.space = space
        self.metrics = metrics  # pareto Objectives: the objectives and the constrained metrics
        self.tag = study_tag  # {"name", "uid"}
        self.cache = cache  # get(key) / set(key, value): the study's user attributes
        self.install = install
        self.params = {"scenario": scenario, "min_duration_s": min_duration_s, "min_queries": 50, "warmup_queries": 10,
                       "warmup_max_s": min(2.0, max(0.5, min_duration_s)), "max_duration_s": max(5.0, 4 * min_duration_s),
                       "timeout_s": trial_timeout_s}
        self._ready: dict[str, str | None] = {}  # stack key -> None (ready) or why it cannot run

    # -- set-up (not timed against a trial)
    def setup(self, stack: Stack) -> tuple[str | None, float]:
        """(why the stack cannot run here or None, seconds spent): resolve (install) its lock once."""
        if stack.key in self._ready:
            return self._ready[stack.key], 0.0
        from ..run.target import prepare, where

        started = time.perf_counter()
        try:
            target = prepare(stack.model or self.space.model, "benchmark", stack.backend, stack.variant, self.space.dataset,
                             self.space.split)
            where(target, None, "benchmark", install=self.install)
            why = None
        except CRError as exc:
            why = exc.message + (f" ({exc.hint})" if exc.hint else "")
        self._ready[stack.key] = why
        return why, time.perf_counter() - started

    # -- validation, once per stack
    def validation(self, stack: Stack, trial: int | None) -> tuple[dict, float]:
        """The stack's stored validation {"status", "values", "error", "uid"} (run now if the
        study has none) and the device seconds spent now (0 when cached)."""
        key = f"validation:{stack.key}"
        got = self.cache.get(key)
        if got is not None:
            return got, 0.0
        why, _ = self.setup(stack)
        if why is not None:
            got = {"status": "failed", "values": {}, "error": why, "uid": None}
            return got, 0.0
        started = time.perf_counter()
        rec, error = self._run("validate", stack, {"timeout_s": self.params["timeout_s"]}, trial)
        spent = time.perf_counter() - started
        if rec is None or rec.get("status") != "ok":
            got = {"status": "failed", "values": {}, "error": error, "uid": rec and rec.get("uid")}
        else:
            acc = [m for m in self.metrics if is_accuracy(m)]
            got = {"status": "ok", "values": pareto.measure(rec, acc), "error": None, "uid": rec["uid"],
                   "missing": _missing(rec, acc)}
        got["device_s"] = round(spent, 3)
        self.cache.set(key, got)
        return got, spent

    # -- one trial
    def run(self, config: Config, trial: int, matters=None, feasible=None) -> Outcome:
        """Measure config. matters(values) -> bool, when given, defers the stack's validation
        until after the benchmark and skips it when a feasible point already dominates this
        one on performance (its accuracy could change no decision); otherwise the stack is
        validated first (cached), as an objective needs. The benchmark record is stored once
        judged: feasible(values) False (a constraint missed) adds "feasible": false to its
        study tag (the dashboard's study page marks it)."""
        out, rec = self._measure(config, trial, matters)
        if rec is not None:
            if feasible is not None and out.status == "ok" and not out.unchecked and feasible(out.values) is False:
                rec["study"]["feasible"] = False
            from ..run.actions import store_record

            store_record(rec)
        return out

    def _measure(self, config: Config, trial: int, matters) -> tuple[Outcome, dict | None]:
        why, setup_s = self.setup(config.stack)
        if why is not None:
            return Outcome("failed", error=f"{config.stack.key} cannot run here: {why}", setup_s=setup_s, stack_failed=True), None
        out = Outcome("ok", setup_s=setup_s)
        acc = [m for m in self.metrics if is_accuracy(m)]
        if acc and matters is None and not self._validate(config.stack, trial, out):
            return out, None
        started = time.perf_counter()
        params = {**self.params, "threads": config.threads, "batch_size": config.batch_size}
        rec, error = self._run("benchmark", config.stack, params, trial, store=False)
        out.device_s += time.perf_counter() - started
        out.record = rec.get("uid") if rec else None
        if rec is None or rec.get("status") != "ok":
            out.status, out.error = "failed", error
            # refused before the child, or the backend never loaded the variant: no config of the stack will run
            out.stack_failed = rec is None or not (rec.get("backend") or {}).get("info")
            return out, rec
        perf = [m for m in self.metrics if not is_accuracy(m)]
        raw = rec.get("raw") or {}
        measured = pareto.measure(rec, perf, raw.get("latencies_ns") if isinstance(raw, dict) else None)
        lacking = [m.name for m in perf if m.name not in measured]
        if lacking:
            out.status = "failed"
            out.error = f"the benchmark did not measure {', '.join(lacking)}: " + "; ".join(_missing(rec, perf).values())
            return out, rec
        out.values.update(measured)
        if acc and matters is not None:
            if matters(measured):
                self._validate(config.stack, trial, out)
            else:
                out.unchecked = True
        return out, rec

    def _validate(self, stack: Stack, trial: int, out: Outcome) -> bool:
        """Adds the stack's accuracy to out (validating it now if the study has not); False
        (out failed, the stack dead) when its validation failed."""
        v, spent = self.validation(stack, trial)
        out.device_s += spent
        out.validation = v.get("uid")
        if v["status"] != "ok":
            out.status, out.stack_failed = "failed", True
            out.error = f"validation of {stack.key} failed: {v['error']}"
            out.values = {}
            return False
        out.values.update(v["values"])
        return True

    def _run(self, action: str, stack: Stack, params: dict, trial: int | None, store: bool = True) -> tuple[dict | None, str | None]:
        """(record, why it failed) of one run through run_action, tagged with the study (and stored, with store)."""
        from ..run.actions import NotStored, run_action, store_record

        try:
            rec = run_action(action, stack.model or self.space.model, backend=stack.backend, variant=stack.variant, params=params,
                             dataset=self.space.dataset, split=self.space.split, store=False, install=self.install)
        except NotStored:
            raise
        except CRError as exc:  # refused before the child started (a variant the backend cannot load, ...)
            return None, exc.message
        rec["study"] = {**self.tag, "trial": trial}
        if store:
            store_record(rec)
        error = None if rec.get("status") == "ok" else ((rec.get("error") or {}).get("message") or rec.get("status"))
        return rec, error


def _missing(record: dict, objs: list) -> dict:
    """{name: why} for the objectives the record does not measure."""
    return pareto.missing(record, objs)
