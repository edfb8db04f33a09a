"""The host side of actions: runs in `cr` itself, above the runtime (which runs in the child).

    from cr.run import benchmark
    record = benchmark("model:iris-logreg", backend="onnxruntime",
                       params={"min_duration_s": 1, "min_queries": 500}, output="r.json")
    record["status"], record["metrics"]["latency_ns"]["p99"]

    actions.py    run_action(), the one pipeline of every action (child -> record ->
                  results store); the typed Job; benchmark(), predict()
    target.py     prepare(): target, variant, dataset, options, trust; merged_params();
                  where(): the lock, env and interpreter a child runs with
    hooks.py      ActionHost: the per-action host hook run_action calls at each step
                  (an action meta's "host"), load_host() checks it; actions_for(kind)
    benchmark_host.py  the benchmark's hook (a module name apart from the benchmark() function
                  this package exports): settings check, LoadGen software and logs
    profile.py    the profile's hook (profiler check, work dir, trace beside the record),
                  profile(), compare()
    launch.py     run_job(): the child process, its timeout, crash and exit handling
    monitor.py    the machine's state, energy and memory sampled around a benchmark's child
    parity.py     validate() and parity() across backends
    compile.py    the compile's hook (no backend; output version, free slot, dataset, the
                  new model version registered), compile_model()
    solution.py   solutions: create, init (verify, resolve, install, compile, lock), run declared
    reproduce.py  reproduce(): init + the declared actions + a comparison with the reference
    check.py      cr check: the store's checks + a warning per model format nothing here loads

Parameters are an action meta's defaults (actions/NAME/meta.json), overridden by a
solution's params, overridden by the caller's; they are validated against the action's
``parameters`` schema before anything runs. Problems found before the run raise CRError;
a run that starts and fails returns (and stores) a record with status "failed".
"""
__all__ = ["benchmark", "predict", "run_action"]


def __getattr__(name: str):
    # Imported on first use (PEP 562): a command that needs only a light module of this
    # package (cr show -> describe, cr gate -> gating) does not pay for the action pipeline.
    if name in __all__:
        from . import actions

        return getattr(actions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
