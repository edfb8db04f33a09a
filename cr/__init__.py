"""reefkit: portable, versioned ML artifacts and reproducible benchmarks (`cr`).

The library API mirrors the CLI; see cr.api for the functions re-exported here.
Importing cr stays cheap: cr.api (and the store behind it) is imported on the first use
of one of its names (``cr.find(...)``, ``from cr import find``), and no numerical
framework is imported until a model runs.
"""
from .__about__ import __version__
from .errors import CRError

# Re-exported from cr.api (which re-exports the owning modules), imported on first use (PEP 562);
# the same names as cr.api.__all__ but "resolve", which on this package is the subpackage cr.resolve
# (the import system sets it as an attribute once it is imported): cr.resolve_ref is that function.
_API_NAMES = frozenset({
    "CheckReport", "Component", "FileCheck", "RunFailed", "benchmark", "build_dashboard", "campaign_report", "campaign_run", "campaign_show", "campaign_status", "check",
    "compare", "compile_model", "component_sha256", "create_solution", "detect", "detect_platform", "env_exec", "env_for",
    "env_list", "env_rm", "env_show", "expand_campaign", "export_campaign", "export_solution", "find", "gate", "gate_published", "init_solution", "install", "install_missing", "install_software",
    "lock", "matching", "new", "new_solution", "open_index", "pack", "pack_solution", "parity", "predict", "profile", "publish_git", "publish_upload",
    "rehash", "repo_add", "repo_init", "repo_list", "repo_pull", "repo_rm", "repo_trust", "repo_untrust", "repo_update",
    "reproduce", "resolve_ref", "result_store", "results_add", "results_export", "results_list", "results_pareto",
    "results_reindex", "results_rm", "results_show", "run_action", "run_campaign", "run_solution", "show", "stream",
    "tune_model", "unpack", "unpack_archive", "validate", "verify_files",
})

__all__ = ["__version__", "CRError", *sorted(_API_NAMES)]


def __getattr__(name: str):
    if name in _API_NAMES:
        from . import api

        value = getattr(api, name)
        globals()[name] = value  # looked up once
        return value
    if not name.startswith("__"):
        # `import cr; cr.store.registry...` works: a submodule is imported on first access.
        import importlib

        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API_NAMES)
