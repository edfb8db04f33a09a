"""The host as software detection and installation see it: platform, markers, capabilities, interpreter.

cr.platform owns host detection; this module only reaches it lazily (it is imported when
a detection or an install actually runs) and gives the rest of cr.software one place to
ask for the current platform, the PEP 508 markers of a chosen interpreter, and which
python that interpreter is.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from ..errors import CRError
from ..procs import clean_env


def current_platform():
    """cr.platform.current(): the host's Platform (fingerprint, markers(), capabilities())."""
    from ..platform import current

    return current()


def capabilities(platform=None) -> frozenset:
    """The capability names of a platform (default: this host), e.g. {'nvidia-gpu', 'cuda'}."""
    platform = platform or current_platform()
    return frozenset(platform.capabilities())


def resolve_interpreter(interpreter: str | None = None) -> str:
    """The python to probe or install for: an absolute path, default the one running cr.

    A bare name is looked up on PATH. Symlinks are kept as given: a venv's python is a
    link to its base interpreter, and resolving it would lose the venv.
    """
    if not interpreter:
        return canonical_interpreter(sys.executable)
    path = interpreter
    if os.sep not in interpreter:
        path = shutil.which(interpreter) or ""
    path = os.path.abspath(os.path.expanduser(path)) if path else ""
    if not path or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise CRError(
            f"no Python interpreter at {interpreter!r}",
            hint="--python takes the path (or a name on PATH) of a python executable, e.g. --python /usr/bin/python3",
        )
    return canonical_interpreter(path)


def canonical_interpreter(path: str) -> str:
    """One spelling per interpreter, so that envs found through `python`, `python3` or
    `python3.11` of the same installation get the same id.

    In a venv (pyvenv.cfg one level above the executable's directory) the venv's own
    bin/python3 (or bin/python) is kept: resolving its symlink would name the base
    interpreter, which sees other packages. Elsewhere symlinks are resolved.
    """
    path = os.path.abspath(path)
    bindir = os.path.dirname(path)
    if os.path.isfile(os.path.join(os.path.dirname(bindir), "pyvenv.cfg")):
        real = os.path.realpath(path)
        for name in ("python3", "python"):
            candidate = os.path.join(bindir, name)
            if os.path.exists(candidate) and os.path.realpath(candidate) == real:
                return candidate
        return path
    return os.path.realpath(path)


_MARKER_SCRIPT = (
    "import json, os, platform, sys\n"
    "impl = sys.implementation\n"
    "v = impl.version\n"
    "iv = '%d.%d.%d' % (v.major, v.minor, v.micro)\n"
    "if v.releaselevel != 'final': iv += v.releaselevel[0] + str(v.serial)\n"
    "print(json.dumps({'python_version': '.'.join(platform.python_version_tuple()[:2]),"
    " 'python_full_version': platform.python_version(), 'implementation_name': impl.name,"
    " 'implementation_version': iv, 'platform_python_implementation': platform.python_implementation(),"
    " 'executable': sys.executable}))\n"
)


def interpreter_markers(interpreter: str, timeout: float = 30.0) -> dict:
    """The python-specific PEP 508 markers of another interpreter (python_version, ...)."""
    if _is_running_python(interpreter):
        from packaging.markers import default_environment

        env = default_environment()
        keys = ("python_version", "python_full_version", "implementation_name", "implementation_version", "platform_python_implementation")
        return {k: env[k] for k in keys}
    try:
        done = subprocess.run(
            [interpreter, "-c", _MARKER_SCRIPT], capture_output=True, text=True, timeout=timeout,
            stdin=subprocess.DEVNULL, env=clean_env(),
        )
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        raise CRError(
            f"cannot run the Python interpreter {interpreter}",
            hint="check that it starts: run it with -c 'print(1)'",
        ) from None
    data.pop("executable", None)
    return data


def markers_for(platform, interpreter: str | None = None) -> dict:
    """The platform's markers, with the python ones taken from interpreter when it is not ours."""
    markers = dict(platform.markers())
    if interpreter and not _is_running_python(interpreter):
        markers.update(interpreter_markers(interpreter))
    return markers


def _is_running_python(interpreter: str) -> bool:
    return canonical_interpreter(interpreter) == canonical_interpreter(sys.executable)

