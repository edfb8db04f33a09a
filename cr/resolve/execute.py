"""`cr env exec` as a call: run a command inside what one or more targets need.

    done = cr.env_exec("software:onnxruntime", ["python", "-c", "import onnxruntime"])
    done.returncode                      # what `cr env exec ... -- CMD` exits with
"""
from __future__ import annotations

import subprocess

from ..errors import CRError


def env_exec(targets, command, python: str | None = None, **run_options) -> subprocess.CompletedProcess:
    """Run command inside what each target (a ref or a lock file; a list composes them in
    order, the first target's software first) needs: `cr env exec TARGET [TARGET ...] -- CMD`.

    The environment is the one env_for composes (PATH, PYTHONPATH, ... of every target's
    software), the one the CLI runs its command in. command: a list of words (a string is
    one program without arguments). run_options go to subprocess.run (capture_output=True,
    text=True, timeout=..., check=..., cwd=...); the child's exit status is ``returncode``,
    the status `cr env exec` exits with. CRError when a target cannot be resolved, two
    targets need one software at two versions, or the program is not found."""
    from .plan import env_for

    words = [command] if isinstance(command, str) else [str(w) for w in command]
    if not words:
        raise CRError("env_exec needs a command to run", hint="e.g. cr.env_exec('software:numpy', ['python', '-V'])")
    if "env" in run_options:
        raise CRError("env_exec composes the environment itself; env= cannot be given",
                      hint="set variables inside the command (env NAME=VALUE CMD), or use cr.env_for for the mapping")
    if isinstance(targets, (list, tuple)):
        targets = list(targets) if len(targets) > 1 else targets[0]
    _, env = env_for(targets, python=python)
    try:
        return subprocess.run(words, env=env, **run_options)
    except FileNotFoundError:
        raise CRError(f"command not found: {words[0]}",
                      hint="check the command name and the PATH the lock composes (cr resolve --json)") from None
