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


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def pinned_threads(names: list[str], params: dict | None, backend_options: dict | None) -> tuple[int, str]:
    """(the one thread count every compared run gets, where it came from): --threads, else a
    backend option that sets threads (the same on every side that sets one), else the cores
    this process may use. CRError when the sides are given different counts."""
    from .target import threads_option

    given = {}
    if (params or {}).get("threads") is not None:
        given["--threads"] = params["threads"]
    for name in names:
        opts = (backend_options or {}).get(name) or {}
        for key in {"threads", threads_option(registry.find(name))} - {None}:
            if opts.get(key) is not None:
                given[f"-O {name}:{key}"] = opts[key]
    values = set()
    for where, value in given.items():
        try:
            n = int(value)
        except (TypeError, ValueError):
            raise CRError(f"{where}={value!r} is not a thread count", hint="give a whole number of threads, e.g. --threads 2") from None
        if n < 1:
            raise CRError(f"{where}={value!r}: a thread count is 1 or more", hint="e.g. --threads 2")
        values.add(n)
    if len(values) > 1:
        raise CRError("--compare runs every backend with one thread count, but "
                      + ", ".join(f"{w}={v}" for w, v in given.items()) + " differ",
                      hint="give one count (--threads N), or profile each backend on its own with cr profile --backend")
    if values:
        return values.pop(), " and ".join(given)
    return usable_cores(), "the cores this process may use (no --threads given)"


def compare(ref: str, backends: list[str], params: dict | None = None, backend_options: dict | None = None,
            variants: dict | None = None, store: bool = True, install: bool = False, output_dir: str | Path | None = None,
            trace_dir: str | Path | None = None) -> dict:
    """Profile ref on each backend (one record each, stored) with the same thread count
    (pinned_threads), then match their layers (cr.run.layermatch); a backend without per-op
    timing is listed by its ops. {"records": [...], "comparison": {...}, "threads": {...}}."""
    from .layermatch import compare_profiles

    names = [b.strip() for b in backends if b.strip()]
    if len(names) < 2 or len(set(names)) != len(names):
        raise CRError(f"--compare needs two or three different backends, given {','.join(names) or 'none'}",
                      hint="e.g. --compare onnxruntime,torch")
    if len(names) > 3:
        raise CRError(f"--compare takes at most three backends, given {len(names)}", hint="compare two or three at a time")
    for name in names:  # every backend checked before the first one runs
        _check_profiler(registry.find(name))
    threads, source = pinned_threads(names, params, backend_options)
    params = {**(params or {}), "threads": threads}
    from ..events import reporter

    recs = []
    for k, name in enumerate(names, 1):
        reporter().info(f"profiling {ref} on {name} ({k} of {len(names)}, {threads} threads)")
        out = Path(output_dir) / f"profile-{name}.json" if output_dir else None
        tr = Path(trace_dir) / f"trace-{name}.json" if trace_dir else None
        recs.append(profile(ref, backend=name, params=params, backend_options=(backend_options or {}).get(name),
                            variant=(variants or {}).get(name), trace=tr, output=out, store=store, install=install))
        if recs[-1]["status"] != "ok":
            break
    ok = [r for r in recs if r["status"] == "ok"]
    comparison = compare_profiles([(r["backend"]["name"], r["profile"]) for r in ok]) if len(ok) == len(names) else None
    pinned = {"threads": threads, "from": source,
              "ran": {r["backend"]["name"]: (r["backend"].get("info") or {}).get("threads") for r in ok}}
    if comparison is not None:
        comparison["summary"]["threads"] = pinned
    return {"records": recs, "comparison": comparison, "threads": pinned}


def _variant_of(model: dict, backend: str, item: str, install: bool) -> dict:
    """{"label", "model_ref", "variant", "precision"} for one --variants item: a precision
    (fp32, int8, int8-dynamic, ...: cr.run.precision finds or compiles it), a variant name
    of the model, or a model ref of another version of the same model."""
    from ..runtime import variants as model_variants
    from ..store.catalog import show
    from . import precision

    if item in precision.PRECISIONS:
        v = precision.variant_for(model["ref"], backend, item, install=install)
        return {"label": item, "model_ref": v.model_ref, "variant": str(v), "precision": item, "compiled": v.compiled}
    if ":" in item:
        other = show(item, verify=False)
        if other["kind"] != "model" or other["name"] != model["name"]:
            raise CRError(f"--variants {item} is {other['kind']} {other['name']}, not a version of model {model['name']}: "
                          "a layer diff compares two versions of one model",
                          hint=f"give precisions (e.g. --variants fp32,int8) or variants of {model['ref']} "
                               f"({', '.join(model_variants.names(model['meta'])) or 'none'}); "
                               "to compare different models, profile each with cr profile")
        return {"label": other["ref"], "model_ref": other["ref"], "variant": None,
                "precision": model_variants.effective(other["meta"]).get("precision")}
    names = model_variants.names(model["meta"])
    if item not in names:
        raise CRError(f"--variants {item!r} is neither a precision nor a variant of {model['ref']}",
                      hint=f"its variants: {', '.join(names) or 'none'}; precisions: {', '.join(precision.PRECISIONS)}")
    return {"label": item, "model_ref": model["ref"], "variant": item,
            "precision": model_variants.effective(model["meta"], item).get("precision")}


def diff_variants(ref: str, backend: str, items: list[str], params: dict | None = None, backend_options: dict | None = None,
                  store: bool = True, install: bool = False, output_dir: str | Path | None = None) -> dict:
    """Profile two versions of one model on one backend (fp32 vs int8: a precision, a variant
    name or another version's ref each) with the same threads and inputs, and match their
    layers side by side (cr.run.layermatch, the first item is the reference).
    {"records", "comparison", "threads", "variants"}."""
    from ..store.catalog import show
    from .layermatch import compare_profiles

    items = [i.strip() for i in items if i.strip()]
    if len(items) != 2 or items[0] == items[1]:
        raise CRError(f"--variants needs two different versions of the model, given {','.join(items) or 'none'}",
                      hint="e.g. --variants fp32,int8 (precisions), or two variant names of the model")
    if not backend:
        raise CRError("--variants needs --backend: a layer diff compares two versions of one model on one backend",
                      hint="e.g. cr profile model lenet-digits --backend onnxruntime --variants fp32,int8")
    model = show(ref if ":" in ref else f"model:{ref}", verify=False)
    if model["kind"] != "model":
        raise CRError(f"--variants takes a model, {model['ref']} is a {model['kind']}",
                      hint="give a model ref, e.g. cr profile model lenet-digits --backend onnxruntime --variants fp32,int8")
    entry = registry.find(backend)
    _check_profiler(entry)
    from .precision import PRECISIONS

    # refs and variant names are checked before a precision is made (cr compile may run for one)
    found = {i: _variant_of(model, backend, item, install) for i, item in enumerate(items) if item not in PRECISIONS}
    found.update({i: _variant_of(model, backend, item, install) for i, item in enumerate(items) if item in PRECISIONS})
    resolved = [found[i] for i in range(len(items))]
    threads, source = pinned_threads([backend], params, {backend: backend_options or {}})
    params = {**(params or {}), "threads": threads}
    from ..events import reporter

    recs = []
    for k, v in enumerate(resolved, 1):
        reporter().info(f"profiling {v['model_ref']} ({v['label']}, variant {v['variant'] or 'default'}) on {backend} "
                        f"({k} of 2, {threads} threads)")
        out = Path(output_dir) / f"profile-{k}-{v['label'].replace(':', '_').replace('/', '_')}.json" if output_dir else None
        recs.append(profile(v["model_ref"], backend=backend, params=params, backend_options=backend_options,
                            variant=v["variant"], output=out, store=store, install=install))
        if recs[-1]["status"] != "ok":
            break
    ok = [r for r in recs if r["status"] == "ok"]
    comparison = compare_profiles([(v["label"], r["profile"]) for v, r in zip(resolved, ok)]) if len(ok) == 2 else None
    pinned = {"threads": threads, "from": source,
              "ran": {v["label"]: (r["backend"].get("info") or {}).get("threads") for v, r in zip(resolved, ok)}}
    if comparison is not None:
        comparison["summary"]["threads"] = pinned
        comparison["summary"]["backend"] = backend
    return {"records": recs, "comparison": comparison, "threads": pinned, "variants": resolved}
