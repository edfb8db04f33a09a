"""The library API: every operation the CLI offers, as functions returning dataclasses/dicts.

    import cr
    cr.find("model", tags=["onnx"])
    cr.show("model:lenet-digits@>=1")
    cr.new("dataset", "my-data", version="1.0.0", tags=["images"])
    cr.init_solution("lenet-digits-onnxruntime")
    record = cr.benchmark("model:lenet-digits", backend="onnxruntime")
    cr.reproduce("lenet-digits-onnxruntime-1.0.0.cr.zip")["outcome"]

This module only re-exports: each name lives in the package that owns it (the table
below), and is imported on first use, so ``import cr`` and ``cr --help`` stay light. Code
inside cr imports the owners, never this facade. Nothing here prints: warnings go to the
Reporter (cr.events). CRError is raised for anything a user can fix.

CLI -> function: cr find/show -> find/show; cr new/check/hash -> new/check/rehash;
cr repo ... -> repo_*; cr resolve -> lock; cr env exec -> env_for; cr detect -> detect;
cr install -> install / install_missing; cr benchmark/validate/run/compile MODEL ->
benchmark/validate/parity/predict/compile_model (``cr.run`` is the package of the host-side
runner, hence ``predict``); cr init solution -> create_solution/init_solution;
cr benchmark solution -> run_solution; cr pack/unpack -> pack/unpack; cr reproduce ->
reproduce; cr results ... -> result_store(); cr dashboard build -> build_dashboard;
cr platform -> detect_platform; cr campaign show/run/status -> expand_campaign/run_campaign/
campaign_status. ``import cr`` offers every name here except ``resolve``, which
there is the subpackage cr.resolve: use ``cr.resolve_ref`` (or ``cr.api.resolve``).
"""
from __future__ import annotations

# name -> "module:attribute" of its owner
_EXPORTS = {
    # the catalog: lookups and repositories (cr.store.catalog)
    "Component": "cr.store.index:Component",
    "FileCheck": "cr.store.catalog:FileCheck",
    "open_index": "cr.store.catalog:open_index",
    "find": "cr.store.catalog:find",
    "show": "cr.store.catalog:show",
    "resolve": "cr.store.catalog:resolve",  # cr.api.resolve; as cr.resolve_ref on the package
    "resolve_ref": "cr.store.catalog:resolve",
    "matching": "cr.store.catalog:matching",
    "verify_files": "cr.store.catalog:verify_files",
    "component_sha256": "cr.store.content:component_sha256",
    "repo_list": "cr.store.catalog:repo_list",
    "repo_add": "cr.store.catalog:repo_add",
    "repo_init": "cr.store.catalog:repo_init",
    "repo_pull": "cr.store.catalog:repo_pull",
    "repo_update": "cr.store.catalog:repo_update",
    "repo_rm": "cr.store.catalog:repo_rm",
    # authoring (cr.store.authoring)
    "CheckReport": "cr.store.authoring:CheckReport",
    "new": "cr.store.authoring:new",
    "rehash": "cr.run.pins:rehash",
    "check": "cr.run.check:check",  # the store's checks + model formats against the backends
    # planning and software (cr.resolve.plan, cr.software)
    "lock": "cr.resolve.plan:lock",
    "env_for": "cr.resolve.plan:env_for",
    "install_missing": "cr.resolve.plan:install_missing",
    "install": "cr.software.install:install",
    "detect": "cr.software.detect:detect",
    "detect_platform": "cr.platform:current",
    # actions (cr.run)
    "benchmark": "cr.run.actions:benchmark",
    "predict": "cr.run.actions:predict",
    "run_action": "cr.run.actions:run_action",
    "validate": "cr.run.parity:validate",
    "parity": "cr.run.parity:parity",
    "compile_model": "cr.run.compile:compile_model",
    # solutions, archives, reproduction
    "create_solution": "cr.run.solution:create",
    "init_solution": "cr.run.solution:init",
    "run_solution": "cr.run.solution:run_declared",
    "reproduce": "cr.run.reproduce:reproduce",
    "pack": "cr.archive:pack",
    "unpack": "cr.archive:unpack",
    # campaigns: solutions x settings x platforms, here or on a Dask cluster
    "expand_campaign": "cr.campaign.runner:expand_campaign",
    "run_campaign": "cr.campaign.runner:run_campaign",
    "campaign_status": "cr.campaign.runner:campaign_status",
    # results and the dashboard
    "result_store": "cr.results.store:default_store",
    "build_dashboard": "cr.dashboard.build:build",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
