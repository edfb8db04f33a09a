"""profile(): a model (or solution) on one backend under the framework's own profiler -> a result record.

    from cr.run.profile import profile, compare
    record = profile("model:lenet-digits", backend="onnxruntime", params={"samples": 50})
    record["profile"]["summary"]["coverage"], record["profile"]["layers"][0], record["trace"]
    result = compare("model:lenet-digits", ["onnxruntime", "torch"])   # records + matched layers

Like every action it runs in a child, in the model's own software environment (the lock
of what running it needs here). The child writes the framework's profile files and the
trace into a work directory (CR_HOME/profiles/work/...); the trace goes beside the
stored record (cr.results.traces), its sha256 in the record's "trace", and to --trace
when given. On success the work directory is removed; when the run fails it is kept
and named in the record's error (the framework's own file is what to look at).

A profile record has action "profile": its times are profiled times (the profiler
slows the model), so it never enters a leaderboard's latency columns.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path

from ..errors import CRError
from ..results import record as records
from ..results import traces
from ..runtime import registry
from .hooks import ActionHost


def profiling_backends() -> dict[str, str]:
    """{backend name: "layer" | "model"} of the registered backends that name a profiler
    (read from the backend classes; no framework is imported)."""
    from ..runtime.profiling import profiler_class

    out = {}
    for name in registry.available():
        try:
            cls = profiler_class(registry.load_class(registry.find(name)))
        except (CRError, ImportError, AttributeError):
            continue
        if cls is not None:
            out[name] = getattr(cls, "level", "layer")
    return out


def _check_profiler(entry: registry.BackendEntry) -> None:
    from ..runtime.profiling import profiler_class

    try:
        cls = registry.load_class(entry)
    except registry.BackendError:
        return  # installed only in a lock's interpreter: the child checks it
    if profiler_class(cls) is None:
        have = profiling_backends()
        listing = ", ".join(f"{n} ({'per layer' if lvl == 'layer' else 'model level only'})" for n, lvl in sorted(have.items()))
        raise CRError(f"backend {entry.name!r} has no profiler (its class names no PROFILER)",
                      hint=f"backends that profile: {listing}")


def check_trace_path(path: str | Path) -> Path:
    """The trace path, absolute, after checking that a file can be written there (before any run)."""
    path = Path(path).expanduser().absolute()
    if path.is_dir():
        raise CRError(f"--trace {path} is a directory", hint="give a file name, e.g. --trace profile.json (or .json.gz)")
    folder = path.parent
    if not folder.is_dir():
        raise CRError(f"cannot write the trace {path}: its folder {folder} does not exist", hint="create the folder, or give another --trace path")
    probe = folder / f".cr-trace-probe-{secrets.token_hex(4)}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
        if path.exists() and not os.access(path, os.W_OK):
            raise PermissionError(13, "Permission denied")
    except OSError as exc:
        raise CRError(f"cannot write the trace {path}: {exc.strerror or exc}",
                      hint="give a --trace path in a folder you can write") from None
    return path


def _work_dir() -> Path:
    from ..paths import ensure_home

    stamp = records.now().replace(":", "").replace("-", "").split(".")[0]
    work = ensure_home() / "profiles" / "work" / f"{stamp}-{secrets.token_hex(4)}"
    work.mkdir(parents=True)
    return work


class ProfileHost(ActionHost):
    """The profile action's host hook: the backend must name a profiler; the child writes
    into a work directory; the trace goes beside the record (and to --trace)."""

    def check(self, run) -> None:
        trace = run.extra.get("trace")
        run.state["trace"] = check_trace_path(trace) if trace is not None else None
        _check_profiler(run.target.entry)

    def config(self, run) -> dict:
        return {**super().config(run), "dataset": None, "split": None}  # profiled inputs are synthetic

    def before_launch(self, run, job, record: dict) -> None:
        run.state["work"] = _work_dir()
        job.log_dir = str(run.state["work"])

    def after_child(self, run, record: dict, result: dict) -> None:
        record.pop("trace_file", None)  # in the work directory: kept below, by content
        work = run.state["work"]
        if record["status"] == "ok":
            from .layermatch import annotate

            annotate(record["profile"])
            _keep_trace(record, result, run.state["trace"], run.output, run.store)
            shutil.rmtree(work, ignore_errors=True)
        else:
            record["error"] = {**(record.get("error") or {}), "kept": str(work)}


def profile(ref: str, backend: str | None = None, params: dict | None = None, backend_options: dict | None = None,
            variant: str | None = None, trace: str | Path | None = None, output: str | Path | None = None,
            store: bool = True, lock: str | Path | None = None, install: bool = False) -> dict:
    """Run the profile action (run_action with ProfileHost); the result record (its "trace"
    names the trace beside it).

    NotStored (cr.run.actions) when the results store does not take the record."""
    from .actions import run_action

    return run_action("profile", ref, backend=backend, params=params, backend_options=backend_options, variant=variant,
                      lock=lock, output=output, store=store, install=install, extra={"trace": trace})


def _keep_trace(record: dict, result: dict, trace_path: Path | None, output, store: bool) -> None:
    path = result.get("trace_file")
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    except (OSError, TypeError, ValueError) as exc:
        raise CRError(f"the profile's trace {path} cannot be read: {exc}", hint="profile again; the work directory is kept") from None
    blob = traces.encode(trace)
    count = len(trace.get("traceEvents") or [])
    uid = record["uid"]
    kept = None
    if store:
        from ..results.store import default_store

        try:
            kept = traces.write(blob, traces.beside_store(default_store().root, uid))
        except OSError:
            kept = None  # the store is not writable: store_record() says so, and keeps the record elsewhere
    if output is not None:
        kept_out = traces.write(blob, traces.beside_output(output))
        kept = kept or kept_out
    record["trace"] = traces.entry(blob, kept.name if kept is not None else None, count)
    if output is not None:
        record["trace"]["beside_output"] = str(traces.beside_output(output).absolute())
    if trace_path is not None:
        traces.write(blob, trace_path)
        record["trace"]["exported"] = str(trace_path)


def compare(ref: str, backends: list[str], params: dict | None = None, backend_options: dict | None = None,
            variants: dict | None = None, store: bool = True, install: bool = False, output_dir: str | Path | None = None,
            trace_dir: str | Path | None = None) -> dict:
    """Profile ref on each backend (one record each, stored), then match their layers
    (cr.run.layermatch). {"records": [...], "comparison": {...}}."""
    from .layermatch import compare_profiles

    names = [b.strip() for b in backends if b.strip()]
    if len(names) < 2 or len(set(names)) != len(names):
        raise CRError(f"--compare needs two or three different backends, given {','.join(names) or 'none'}",
                      hint="e.g. --compare onnxruntime,torch")
    if len(names) > 3:
        raise CRError(f"--compare takes at most three backends, given {len(names)}", hint="compare two or three at a time")
    for name in names:  # every backend checked before the first one runs
        _check_profiler(registry.find(name))
    from ..events import reporter

    recs = []
    for k, name in enumerate(names, 1):
        reporter().info(f"profiling {ref} on {name} ({k} of {len(names)})")
        out = Path(output_dir) / f"profile-{name}.json" if output_dir else None
        tr = Path(trace_dir) / f"trace-{name}.json" if trace_dir else None
        recs.append(profile(ref, backend=name, params=params, backend_options=(backend_options or {}).get(name),
                            variant=(variants or {}).get(name), trace=tr, output=out, store=store, install=install))
        if recs[-1]["status"] != "ok":
            break
    ok = [r for r in recs if r["status"] == "ok"]
    comparison = compare_profiles([(r["backend"]["name"], r["profile"]) for r in ok]) if len(ok) == len(names) else None
    return {"records": recs, "comparison": comparison}
