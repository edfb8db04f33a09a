"""`cr profile` as one call: the checks of its options, the profile (one backend, two or three
backends matched, or two versions of a model), and the data its --json prints.

    cr.profile("model:lenet-digits", backend="onnxruntime", samples=8)          # one record
    cr.profile("model:lenet-digits", compare=["onnxruntime", "torch"])          # records + comparison
    cr.profile("model:lenet-digits", backend="onnxruntime", variants=["fp32", "int8"])

The CLI (cr/cli/profile.py) calls run() and draws its tables from the same data.
"""
from __future__ import annotations

from pathlib import Path

from ..errors import CRError
from .outcome import failure, finished, first_failure


def _names(value) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else list(value)
    return [str(v).strip() for v in items if str(v).strip()]


def folder(path, flag: str) -> None:
    """Make the folder --trace/-o name with --compare (CRError when it is a file or cannot be made)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise CRError(f"{flag} {path} is a file; with --compare it names a folder", hint=f"give a folder for {flag}")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CRError(f"cannot create the folder {path} ({flag}): {exc.strerror or exc}", hint="give a folder you can write") from None


def run(ref: str, backend: str | None = None, *, compare=None, variant=None, variants=None, options: dict | None = None,
        samples: int | None = None, warmup: int | None = None, batch_size: int | None = None, threads: int | None = None,
        timeout_s: float | None = None, trace=None, lock=None, output=None, store: bool = True, install: bool = False):
    """(data, error, not_stored): what profile() returns or raises, for the CLI to show first.

    data is what `cr profile --json` prints; error the RunFailed of a failed profile (None
    when it succeeded); not_stored the NotStored of a record the store did not take."""
    from . import profile as run_profile
    from ..results.record import to_json
    from .actions import NotStored

    params = {k: v for k, v in dict(samples=samples, warmup=warmup, batch_size=batch_size, threads=threads,
                                    timeout_s=timeout_s).items() if v is not None}
    if variants is not None:
        if compare is not None or variant:
            raise CRError("give --variants A,B alone: it profiles two versions on one --backend",
                          hint="drop --compare/--variant; e.g. --backend onnxruntime --variants fp32,int8")
        if output is not None:
            folder(output, "-o")
        result = run_profile.diff_variants(ref, backend, _names(variants), params=params, backend_options=options or {},
                                           store=store, install=install, output_dir=output)
        return _comparison(result), _compare_failure(result), None
    if compare is not None:
        if backend:
            raise CRError("give --backend or --compare, not both", hint="--compare onnxruntime,torch profiles on each")
        names = _names(compare)
        if not isinstance(variant or {}, dict):
            raise CRError(f"--variant {variant!r}: with --compare give BACKEND=VARIANT", hint="e.g. --variant torch=state-dict")
        per_variant = dict(variant or {})
        per_options = dict(options or {})
        unknown = sorted((set(per_variant) | set(per_options)) - set(names))
        if unknown:
            raise CRError(f"--variant/-O name {', '.join(unknown)}, which --compare does not run", hint=f"--compare runs {', '.join(names)}")
        if trace is not None:
            folder(trace, "--trace")
        if output is not None:
            folder(output, "-o")
        result = run_profile.compare(ref, names, params=params, variants=per_variant, backend_options=per_options,
                                     store=store, install=install, output_dir=output, trace_dir=trace)
        return _comparison(result), _compare_failure(result), None
    if isinstance(variant, dict):
        raise CRError("a variant per backend (BACKEND=VARIANT) is for --compare", hint="give one variant name")
    try:
        record, not_stored = run_profile.profile(ref, backend=backend, params=params, backend_options=options or {},
                                                 variant=variant, trace=trace, output=output, store=store, lock=lock,
                                                 install=install), None
    except NotStored as exc:
        record, not_stored = exc.records, exc
    record = record[0] if isinstance(record, list) else record
    return to_json(record), failure(record), not_stored


def _comparison(result: dict) -> dict:
    from ..results.record import to_json

    return {"records": [to_json(r) for r in result["records"]], "comparison": result["comparison"],
            "threads": result.get("threads") or {}, **({"variants": result["variants"]} if "variants" in result else {})}


def _compare_failure(result: dict):
    return first_failure(result["records"], lambda r: f"profile on {r['backend']['name']}")


def profile(ref: str, backend: str | None = None, *, compare=None, variant=None, variants=None, options: dict | None = None,
            samples: int | None = None, warmup: int | None = None, batch_size: int | None = None, threads: int | None = None,
            timeout_s: float | None = None, trace=None, lock=None, output=None, store: bool = True,
            install: bool = False) -> dict:
    """Profile a model layer by layer (`cr profile REF --backend B`): what `cr profile --json` prints.

    One backend: the profile record (its "profile" holds layers, summary, overhead; its
    "trace" the Chrome trace beside it). ``compare=["onnxruntime", "torch"]`` (two or three
    backends, one thread count on all; ``variant`` and ``options`` then per backend:
    {"torch": "state-dict"}, {"onnxruntime": {"intra_op_threads": 1}}) or
    ``variants=["fp32", "int8"]`` (two versions on one ``backend``): {"records": [...],
    "comparison": {...}, "threads": {...}} (and "variants"). samples, warmup, batch_size,
    threads, timeout_s: as the CLI's options; trace: a file (a folder with compare);
    output: where the record goes (a folder with compare or variants).

    Raises CRError for bad options, RunFailed (a CRError, the data on ``.result``) for a
    profile that failed, NotStored when the results store did not take a record.
    """
    data, error, not_stored = run(ref, backend, compare=compare, variant=variant, variants=variants, options=options,
                                  samples=samples, warmup=warmup, batch_size=batch_size, threads=threads,
                                  timeout_s=timeout_s, trace=trace, lock=lock, output=output, store=store, install=install)
    return finished(data, error, not_stored)
