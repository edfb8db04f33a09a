"""reefkit: portable, versioned ML artifacts and reproducible benchmarks (`cr`).

The library API mirrors the CLI; see cr.api for the functions re-exported here.
Importing cr stays cheap: no numerical framework is imported until a model runs.
"""
from .__about__ import __version__
from .api import (
    CheckReport,
    Component,
    FileCheck,
    check,
    env_for,
    find,
    install_missing,
    lock,
    new,
    open_index,
    rehash,
    repo_add,
    repo_init,
    repo_list,
    repo_pull,
    repo_rm,
    repo_update,
    resolve,
    show,
    verify_files,
)
from .errors import CRError

__all__ = [
    "__version__", "CRError", "CheckReport", "Component", "FileCheck", "check", "env_for", "find", "install_missing", "lock", "new",
    "open_index", "rehash", "repo_add", "repo_init", "repo_list", "repo_pull", "repo_rm", "repo_update",
    "resolve", "show", "verify_files",
]
