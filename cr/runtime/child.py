"""The child process: ``python -m cr.runtime.child JOB.json RESULT.json``.

Reads the job, imports the action's entry (``module:function``, from the action meta),
runs it and writes the result JSON atomically; raw latencies go to RESULT.json's
directory as ``latencies.i64`` (little-endian int64). Every exception becomes a failed result
({"status": "failed", "error": {"kind": "error", "message", "hint", "type", "traceback"}});
what cannot be caught (a segfault, os.abort, a hang) is for the parent to notice
(cr.run.launch).

The parent starts it through BOOTSTRAP rather than ``-m``: that registers the ``cr``
package without executing cr/__init__.py, so the measured process holds the runtime
only (no cr.store, click, jsonschema), and the target interpreter needs no reefkit
installed: only numpy and its framework.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback

from ..results.latencies import write_child

# argv: CR_PACKAGE_DIR JOB RESULT
BOOTSTRAP = (
    "import sys,types\n"
    "m=types.ModuleType('cr');m.__path__=[sys.argv[1]];m.__file__=None;sys.modules['cr']=m\n"
    "from cr.runtime.child import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


def _entry(spec: str, action: str | None):
    """The function an action entry names; CRError naming the action when it cannot be had."""
    from ..errors import CRError

    module, _, attr = spec.partition(":")
    where = f"the entry {spec!r} of action:{action}" if action else f"the entry {spec!r}"
    try:
        obj = importlib.import_module(module)
    except ImportError as exc:
        raise CRError(f"{where} cannot be imported here: {type(exc).__name__}: {exc}",
                      hint=f"check entry in the action's meta.json (cr show action:{action or 'NAME'}) and the environment it runs in") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise CRError(f"{where}: module {module} has no attribute {attr!r}",
                          hint=f"check entry in the action's meta.json (cr show action:{action or 'NAME'})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CRError(f"{where} is a {type(obj).__name__}, not a function", hint="an entry names a function that takes the job")
    return obj


def execute(job: dict, out_dir: str) -> dict:
    """Run one job (as Job.to_dict() gives it); never raises."""
    from ..errors import CRError
    from .job import Job

    started = time.time()
    try:
        job = Job.from_dict(job).to_dict()
        body = _entry(job["entry"], job.get("action"))(job)
        latencies = body.pop("_latencies", None)
        result = {"status": "ok", "error": None, **body}
        if latencies is not None:
            result["raw"] = write_child(out_dir, latencies)
    except CRError as exc:
        result = {"status": "failed", "error": {"kind": "error", "type": type(exc).__name__, "message": exc.message, "hint": exc.hint}}
        if isinstance(getattr(exc, "placement", None), dict):  # a requirement unmet: the record says where it ran
            result["placement"] = exc.placement
    except BaseException as exc:  # a framework's or a backend's own exception: reported, not raised
        if isinstance(exc, KeyboardInterrupt):
            raise
        tb = traceback.format_exc()
        result = {
            "status": "failed",
            "error": {
                "kind": "error", "type": type(exc).__name__, "message": f"{type(exc).__name__}: {exc}",
                "hint": "the backend or its framework raised this",
                "traceback": tb[-4000:],
            },
        }
    result["runtime"] = {
        "python": sys.version.split()[0], "executable": sys.executable, "pid": os.getpid(),
        "seconds": time.time() - started,
    }
    return result


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m cr.runtime.child JOB.json RESULT.json", file=sys.stderr)
        return 2
    job_path, result_path = argv
    with open(job_path, encoding="utf-8") as f:
        job = json.load(f)
    result = execute(job, os.path.dirname(os.path.abspath(result_path)))
    from ..fsutil import atomic_file

    with atomic_file(result_path, "w", encoding="utf-8") as f:
        json.dump(result, f, default=_jsonable)
    return 0


def _jsonable(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
