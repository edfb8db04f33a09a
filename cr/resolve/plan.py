"""Planning: what a component needs on this machine (a lock), the environment it runs in,
and installing what the lock lists as missing.

    from cr.resolve import plan
    the_lock = plan.lock("solution:lenet-digits-onnxruntime")      # resolve (or reuse) + save
    the_lock, env = plan.env_for("solution:lenet-digits-onnxruntime")
    plan.install_missing("solution:lenet-digits-onnxruntime")      # exactly what the lock says

Installation takes the lock as its input: each missing entry is installed with the
method, packages and version the lock recorded (cr.software.install.install_locked), so a
recipe edited between resolution and installation cannot change what gets installed.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import CRError, NotFound
from ..store.catalog import open_index

__all__ = ["lock", "env_for", "install_missing"]


def lock(ref: str, python: str | None = None, output: str | Path | None = None, platform_root: str | Path | None = None) -> dict:
    """Resolve what ref (a solution or any component with deps) needs on this platform.

    Returns the lock (DESIGN.md contract) and saves it in CR_HOME/locks (and at output).
    Software that is present is preferred; what must be installed is listed in 'missing'.
    With platform_root (a machine captured by `cr platform --capture DIR`), plan for that
    machine instead: nothing of this host is used, and the lock is only written to output.
    """
    import sys

    from ..platform import current, detect
    from .lock import build_lock, lock_path, save_lock

    if platform_root is not None:
        interpreter = python or "python3"
    else:
        from ..software.host import canonical_interpreter

        interpreter = str(Path(python).absolute()) if python else sys.executable
        if python and not Path(interpreter).is_file():
            raise NotFound(f"python interpreter {python} does not exist", hint="give the path of a python executable")
        interpreter = canonical_interpreter(interpreter)  # python and python3 must share a lock
    platform = detect(platform_root) if platform_root is not None else current()
    index = open_index()
    try:
        result = build_lock(ref, index, platform, interpreter, foreign=platform_root is not None)
    finally:
        index.close()
    if platform_root is not None:
        if output:
            save_lock(result, Path(output))
        result["path"] = str(output) if output else None
        result["cached"] = False
        return result
    cached = result.pop("cached", False)
    result.pop("path", None)
    if output:
        save_lock(result, Path(output))
    if cached:
        result["path"] = str(lock_path(result["root"], result["platform"]["fingerprint"]))
    else:
        result["path"] = str(save_lock(result))
    result["cached"] = cached
    return result


def env_for(ref_or_lock: str | Path, python: str | None = None) -> tuple[dict, dict]:
    """(lock, environment variables) to run a command inside what ref needs; a lock file works too."""
    from .compose import compose, missing_paths
    from .lock import load_lock

    path = Path(str(ref_or_lock))
    if path.is_file():  # a lock file (any name); otherwise a ref
        the_lock = load_lock(path)
        gone = missing_paths(the_lock)
        if gone:
            raise CRError(f"lock {path} refers to software that is gone: {gone[0]}", hint=f"re-resolve: cr resolve {the_lock['root']}")
    else:
        the_lock = lock(str(ref_or_lock), python=python)
    return the_lock, compose(the_lock)


def install_missing(ref_or_lock: str | Path | dict, python: str | None = None, offline: bool = False) -> dict:
    """Install every software a lock lists as missing, exactly as it recorded them (method,
    packages, version; dependencies first, in the lock's order), then resolve again.

    ref_or_lock: a ref (resolved here first: the lock cr resolve would give), a lock file
    or a lock dict. Returns {'installed': [env dicts], 'lock': the new lock}.
    """
    from ..software.install import install_locked
    from .lock import load_lock

    if isinstance(ref_or_lock, dict):
        first = ref_or_lock
    elif Path(str(ref_or_lock)).is_file():
        first = load_lock(Path(str(ref_or_lock)))
    else:
        first = lock(str(ref_or_lock), python=python)
    installed = []
    for sw in first["software"]:
        if sw["origin"] == "installable":
            env = install_locked(sw, interpreter=first["interpreter"], offline=offline)
            installed.append(env.to_dict())
    final = lock(first["root"], python=first["interpreter"]) if installed else first
    return {"installed": installed, "lock": final}
