"""benchmark(): a model (or a solution) on a backend, measured in the runtime child.

    from cr.runtime.host import benchmark
    record = benchmark("model:iris-logreg", backend="onnxruntime",
                       params={"min_duration_s": 1, "min_queries": 500}, output="r.json")
    record["status"], record["metrics"]["latency_ns"]["p99"]

Parameters are the action meta's defaults (actions/benchmark/meta.json), overridden by a
solution's benchmark params, overridden by the caller's; they are validated against the
action's ``parameters`` schema before anything runs. Problems found before the run
(unknown backend, bad parameter, missing model file) raise CRError; a run that starts
and fails returns (and writes, with output) a record with status "failed".
"""
from __future__ import annotations

import sys
from pathlib import Path

from ...errors import CRError
from .. import registry
from . import launch, record as records

ACTION = "action:benchmark"


def _params(action_meta: dict, *layers: dict) -> dict:
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
            raise CRError(f"benchmark parameter {where}: {e.message}", hint=f"see the parameters of {ACTION} (cr show {ACTION})")
    return params


def benchmark(
    ref: str,
    backend: str | None = None,
    params: dict | None = None,
    backend_options: dict | None = None,
    lock: str | Path | None = None,
    output: str | Path | None = None,
) -> dict:
    """Run the benchmark action; returns the result record (raw latencies as an int64 array)."""
    from ...api import show
    from ..model import locate

    started = records.now()
    action = show(ACTION, verify=False)
    target = show(ref, verify=False)
    components = [target]
    layers: list[dict] = []
    options: dict = {}
    if target["kind"] == "solution":
        sol = target["meta"]
        if not sol.get("model"):
            raise CRError(f"{target['ref']} names no model", hint="add \"model\": \"model:NAME@VERSION\" to its meta")
        model = show(sol["model"], verify=False)
        components.append(model)
        backend = backend or sol.get("backend")
        options.update(sol.get("backend_options") or {})
        layers += [a.get("params") or {} for a in sol.get("actions") or [] if a.get("action") == "benchmark"]
    elif target["kind"] == "model":
        model = target
    else:
        raise CRError(f"cannot benchmark a {target['kind']} ({target['ref']})", hint="benchmark a model or a solution")
    components.append(action)
    if not backend:
        raise CRError("no backend given", hint=f"give --backend NAME; available: {', '.join(registry.available())}")
    entry = registry.find(backend)
    options.update(backend_options or {})
    params = _params(action["meta"], *layers, params or {})
    the_lock, env, python = None, None, sys.executable
    if lock is None and target["kind"] == "solution":
        # A solution runs where its requirements were resolved: its lock on this machine.
        from ...api import lock as resolve_lock
        from ...resolve.compose import compose

        the_lock = resolve_lock(target["ref"])
        env, python = compose(the_lock), the_lock["interpreter"]  # compose refuses missing software
    elif lock is not None:
        from ...api import env_for

        the_lock, env = env_for(Path(lock))
        python = the_lock["interpreter"]
    else:
        locate(model["meta"], model["path"], model["ref"])  # fail before starting a child
    job = {
        "format": 1,
        "action": "benchmark",
        "entry": action["meta"]["entry"],
        "model": {"ref": model["ref"], "meta": model["meta"], "dir": model["path"]},
        "backend": {**entry.to_dict(), "options": options},
        "params": params,
    }
    record = records.new(
        "benchmark",
        [records.component_entry(c) for c in components],
        {**entry.to_dict(), "options": options, "info": None},
        {**params, "backend": backend, "backend_options": options},
        the_lock,
        started,
    )
    result, latencies = launch.run_job(job, python=python, env=env, timeout=params.get("timeout_s"))
    records.complete(record, result, latencies)
    if output is not None:
        records.write(record, output)
    return record
