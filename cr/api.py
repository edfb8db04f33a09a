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

Every CLI command has its twin here: CLI_TWINS (below) names it, and CLI_ONLY says why the
few without one have none (tests/test_api_twins.py walks the command tree and holds both to
it). A twin returns what the command's --json prints (an object with to_dict(): that dict),
and raises CRError where the command prints Error/Hint; docs/api.md shows each call.
``import cr`` offers every name here except ``resolve``, which there is the subpackage
cr.resolve: use ``cr.resolve_ref`` (or ``cr.api.resolve``).
"""
from __future__ import annotations

# name -> "module:attribute" of its owner
_EXPORTS = {
    # the catalog: lookups and repositories (cr.store.catalog)
    "Component": "cr.store.index:Component",
    "FileCheck": "cr.store.catalog:FileCheck",
    "open_index": "cr.store.catalog:open_index",
    "find": "cr.store.catalog:find",
    "show": "cr.run.describe:show",  # the catalog's show + a model's pinned package file
    "resolve": "cr.store.catalog:resolve",  # cr.api.resolve; as cr.resolve_ref on the package
    "resolve_ref": "cr.store.catalog:resolve",
    "matching": "cr.store.catalog:matching",
    "verify_files": "cr.store.catalog:verify_files",
    "component_sha256": "cr.store.content:component_sha256",
    "repo_list": "cr.store.catalog:repo_list",
    "repo_add": "cr.store.catalog:repo_add",
    "repo_init": "cr.store.catalog:repo_init",
    "repo_pull": "cr.resolve.trusting:repo_pull",  # the store's pull + what it would run, trust
    "repo_update": "cr.store.catalog:repo_update",
    "repo_rm": "cr.store.catalog:repo_rm",
    "repo_trust": "cr.resolve.trusting:repo_trust",
    "repo_untrust": "cr.resolve.trusting:repo_untrust",
    # authoring (cr.store.authoring)
    "CheckReport": "cr.store.authoring:CheckReport",
    "new": "cr.store.authoring:new",
    "rehash": "cr.run.pins:rehash",
    "check": "cr.run.check:check",  # the store's checks + model formats against the backends
    # planning and software (cr.resolve.plan, cr.software)
    "lock": "cr.resolve.plan:lock",
    "env_for": "cr.resolve.plan:env_for",
    "env_exec": "cr.resolve.execute:env_exec",
    "env_list": "cr.software.envcalls:env_list",
    "env_show": "cr.software.envcalls:env_show",
    "env_rm": "cr.software.envcalls:env_rm",
    "install_missing": "cr.resolve.plan:install_missing",
    "install": "cr.software.install:install",
    "install_software": "cr.resolve.installing:install_software",  # install + its missing dependencies
    "detect": "cr.software.detect:detect",
    "detect_platform": "cr.platform:current",
    # actions (cr.run)
    "benchmark": "cr.run.actions:benchmark",
    "predict": "cr.run.actions:predict",
    "run_action": "cr.run.actions:run_action",
    "validate": "cr.run.parity:validate",
    "parity": "cr.run.parity:parity",
    "compile_model": "cr.run.compile:compile_model",
    "profile": "cr.run.profiling:profile",
    "stream": "cr.run.streaming:stream",
    "RunFailed": "cr.run.outcome:RunFailed",
    "tune_model": "cr.tune:tune",  # cr.tune is the subpackage
    # solutions, archives, reproduction
    "create_solution": "cr.run.solution:create",
    "new_solution": "cr.run.solution:new_solution",  # create_solution as --json prints it
    "init_solution": "cr.run.solution:init",
    "run_solution": "cr.run.solution:run_declared",
    "reproduce": "cr.run.reproduce:reproduce",
    "pack": "cr.archive:pack",
    "unpack": "cr.archive:unpack",
    "export_solution": "cr.export.image:export_solution",  # an OCI image of a locked solution
    "export_campaign": "cr.export.k8s:export_campaign",  # Kubernetes manifests of a campaign
    "pack_solution": "cr.run.packing:pack_solution",  # cr.pack + the reference results, the summary
    "unpack_archive": "cr.run.packing:unpack_archive",  # cr.unpack + the pins checked here
    # campaigns: solutions x settings x platforms, here or on a Dask cluster
    "expand_campaign": "cr.campaign.runner:expand_campaign",
    "run_campaign": "cr.campaign.runner:run_campaign",
    "campaign_status": "cr.campaign.runner:campaign_status",
    "campaign_show": "cr.campaign.calls:campaign_show",
    "campaign_report": "cr.campaign.calls:campaign_report",
    "campaign_run": "cr.campaign.calls:campaign_run",  # run_campaign's rows as --json prints them; dry_run
    # results and the dashboard
    "result_store": "cr.results.store:default_store",
    "results_list": "cr.results.queries:results_list",
    "results_show": "cr.results.queries:results_show",
    "compare": "cr.results.queries:compare",
    "results_pareto": "cr.results.queries:results_pareto",
    "results_export": "cr.results.queries:results_export",
    "results_rm": "cr.results.queries:results_rm",
    "results_add": "cr.results.queries:results_add",
    "results_reindex": "cr.results.queries:results_reindex",
    "gate": "cr.run.gating:gate",
    "gate_published": "cr.dashboard.gating:gate_published",
    "build_dashboard": "cr.dashboard.build:build",
    "publish_git": "cr.dashboard.publish:publish_git",
    "publish_upload": "cr.dashboard.upload:upload",
}

# Every leaf command of the CLI ("group command" as typed after `cr`) -> the name(s) of its
# twin in this module; a command whose options pick between calls names each.
CLI_TWINS = {
    "find": "find", "show": "show", "new": "new", "check": "check", "hash": "rehash",
    "repo list": "repo_list", "repo add": "repo_add", "repo init": "repo_init", "repo pull": "repo_pull",
    "repo update": "repo_update", "repo rm": "repo_rm", "repo trust": "repo_trust", "repo untrust": "repo_untrust",
    "platform": "detect_platform", "detect": "detect", "install": ("install_software", "install_missing"),
    "resolve": "lock", "env exec": "env_exec", "env list": "env_list", "env show": "env_show", "env rm": "env_rm",
    "benchmark": ("benchmark", "run_solution"), "validate": ("validate", "parity", "run_solution"),
    "run": ("predict", "stream", "run_solution"),  # cr run MODEL --stream SRC -> stream
    "do": "run_action", "profile": "profile", "compile": "compile_model",
    "init": ("init_solution", "new_solution"), "reproduce": "reproduce", "pack": "pack_solution", "unpack": "unpack_archive",
    "results list": "results_list", "results show": "results_show", "results compare": "compare",
    "results pareto": "results_pareto", "results export": "results_export", "results rm": "results_rm",
    "results add": "results_add", "results reindex": "results_reindex", "gate": ("gate", "gate_published"), "tune": "tune_model",
    "campaign new": "new",  # cr.new("campaign", NAME, fields={"solutions": [...]})
    "campaign show": "campaign_show", "campaign run": "campaign_run", "campaign status": "campaign_report",
    "export solution": "export_solution", "export campaign": "export_campaign",
    "dashboard build": "build_dashboard", "publish": ("publish_git", "publish_upload"),
}

# Commands with no twin, and why: each is about the terminal or a long-lived process, not data.
CLI_ONLY = {
    "env shell": "an interactive shell for a person at a terminal; env_exec runs any command in the same environment",
    "dashboard open": "opens a web browser on the built site; build_dashboard returns where the site is",
    "dashboard serve": "a long-running upload server process; publish_upload is the client side",
    "scheduler": "a long-running Dask scheduler process (cr.campaign.cluster.serve_scheduler); run_campaign(scheduler=...) uses it",
    "worker": "a long-running Dask worker process (cr.campaign.cluster.serve_worker) serving campaign jobs",
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
