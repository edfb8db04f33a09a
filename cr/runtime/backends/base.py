"""The backend contract.

A backend is a class, instantiated with no arguments, then:

    load(model_path, meta, options)   open the model (meta: the model component's meta;
                                      options: backend options, plus ``threads`` when given)
    inputs() -> [{"name", "shape", "dtype"}]   what run() expects; a dim that is a str or
                                      None is dynamic; dtype is a numpy dtype name
    run(batch) -> outputs             batch: {input name: numpy array}; called in the timed
                                      loop, so it does nothing but run the model
    close()                           release the model
    profile() -> dict | None          optional: what the framework's profiler recorded
    info() -> dict                    optional: framework name, version, devices used
    outputs() -> [{"name", "shape", "dtype"}] | None   optional: what run() returns, in its
                                      order (None: known only by running the model)
    placement() -> dict               optional: where the framework put the model, after load():
                                      {unit, requested, by_provider, nodes, how} (docs/placement.md)
    placement_available(options)      optional classmethod: the providers/devices this machine
                                      offers, asked before load() by --require-placement
    prepare(batch) -> None            optional: get ready for batches shaped like this one
                                      (e.g. resize a TFLite interpreter), outside the timed
                                      loop; run() does it itself on a new shape otherwise
    timed(batches) -> context manager yielding (run', items)   optional: entered once around
                                      a timed window (warm-up, scenario, fidelity loop) over
                                      these batches; items[i] is batches[i] made ready for the
                                      framework once (tensors, bound arrays), and run'(items[i])
                                      runs what run(batches[i]) runs at no more per-call cost
                                      than the framework's own loop (contexts such as
                                      torch.inference_mode entered once), returning the
                                      framework's own outputs (the timed loops drop them;
                                      run() is what returns numpy arrays)
    bare(batches) -> (call, items)    optional: the framework's minimal loop body for the
                                      --fidelity check: call(item) made of framework calls
                                      only, items[i] prebuilt from batches[i] (run inside
                                      timed(), after the scenario)

run() returns the outputs as a list of numpy arrays in the model's output order (the null
backend, which knows only declared names, returns {name: array}). The framework is imported
inside load(), never at module level: the host imports the class to read FORMATS and
OPTIONS without loading any framework.

Class attributes read by the host (cr.runtime.registry): ``name``, ``FORMATS`` (model
formats it loads, its native one first), ``OPTIONS`` and ``REQUIRES`` (the software it
needs, e.g. ``("software:onnxruntime@>=1.17", "software:numpy@>=1.23")``).

Subclassing Backend is optional (the registry checks the methods, not the base class); it
brings option checking (OPTIONS), format checking (FORMATS) and the input check.
"""
from __future__ import annotations

from contextlib import nullcontext

from ...errors import CRError


class InputMismatch(CRError):
    """An input the backend was given does not match what the model expects."""


class Backend:
    name = ""
    #: model formats this backend loads; None means any
    FORMATS: tuple[str, ...] | None = None
    #: option name -> what it means; "threads" is always accepted
    OPTIONS: dict[str, str] = {}
    # the OPTIONS whose values name native code the backend loads (a delegate library, a custom
    # op library, a plugin): from a solution or campaign you have not trusted, they need your
    # consent like a script (cr.run.actions.code_option_items)
    CODE_OPTIONS: tuple[str, ...] = ()
    #: the software the backend needs in the environment it runs in (requirement strings, as in
    #: a meta's deps); read by the host without importing the framework, to make solutions and
    #: locks. None: unknown (only numpy is assumed).
    REQUIRES: tuple[str, ...] | None = None

    def load(self, model_path: str | None, meta: dict, options: dict) -> None:
        raise NotImplementedError

    def inputs(self) -> list[dict]:
        raise NotImplementedError

    def run(self, batch: dict):
        raise NotImplementedError

    def close(self) -> None:
        pass

    def profile(self) -> dict | None:
        return None

    def info(self) -> dict:
        return {}

    def outputs(self) -> list[dict] | None:
        return None

    def prepare(self, batch: dict) -> None:
        pass

    def timed(self, batches: list):
        """(the callable to time, the items it takes for batches), valid while the context is
        held (see the module's doc); the default is run() on the batches themselves."""
        return nullcontext((self.run, batches))


def check_format(backend, meta: dict, ref: str = "the model") -> None:
    """CRError when the backend cannot load the model's format."""
    formats = getattr(backend, "FORMATS", None)
    fmt = meta.get("format")
    if formats is not None and fmt not in formats:
        raise CRError(
            f"backend {getattr(backend, 'name', '?')!r} cannot load {ref}: its format is {fmt or 'not declared'}, "
            f"the backend loads {', '.join(formats)}",
            hint="choose a backend for this format, or compile the model to one this backend loads",
        )


def check_options(backend, options: dict) -> None:
    """CRError naming the unknown options and the known ones."""
    known = getattr(backend, "OPTIONS", None)
    if known is None:
        return
    unknown = sorted(set(options) - set(known) - {"threads"})
    if unknown:
        listing = "; ".join(f"{k}: {v}" for k, v in sorted(known.items())) or "none besides threads"
        raise CRError(
            f"backend {getattr(backend, 'name', '?')!r} has no option {', '.join(unknown)}",
            hint=f"its options: {listing}",
        )


def describe(shape, dtype) -> str:
    dims = ", ".join("?" if d is None else str(d) for d in shape) if shape is not None else "any shape"
    return f"{dtype} [{dims}]"


def check_inputs(specs: list[dict], batch: dict) -> None:
    """InputMismatch naming the input, what is expected and what was given.

    Names must match exactly; shapes must have the same rank and agree on every fixed dim
    (a str or None dim is dynamic); dtypes must be equal.
    """
    expected = {s["name"]: s for s in specs}
    missing = [n for n in expected if n not in batch]
    extra = [n for n in batch if n not in expected]
    if missing or extra:
        raise InputMismatch(
            "input names do not match the model: "
            + (f"missing {', '.join(missing)}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {', '.join(extra)}" if extra else ""),
            hint=f"the model's inputs: {', '.join(expected)}",
        )
    for name, spec in expected.items():
        array = batch[name]
        shape = spec.get("shape")
        given_shape, given_dtype = tuple(getattr(array, "shape", ())), str(getattr(array, "dtype", type(array).__name__))
        ok = given_dtype == spec["dtype"]
        if shape is not None:
            ok = ok and len(shape) == len(given_shape) and all(
                not isinstance(d, int) or d == g for d, g in zip(shape, given_shape)
            )
        if not ok:
            raise InputMismatch(
                f"input {name!r}: expected {describe(shape, spec['dtype'])}, given {describe(given_shape, given_dtype)}",
                hint="check the model meta's inputs (shape, dtype) against the model file, and --batch-size",
            )


def pair_names(declared: list[str], model_names: list[str], where: str = "the model") -> list[tuple[str, str]]:
    """[(the name run() takes, the model's input name)] for a model meta's declared input names.

    Without declared names the model's are used. Declared names equal to a model input
    name take it; the others pair up in order with the model inputs left over, so a meta
    may call the input "image" where the file says "input_1". A different number of
    inputs is a CRError naming the model's inputs.
    """
    if not declared:
        return [(m, m) for m in model_names]
    if len(declared) != len(model_names):
        raise CRError(
            f"the model meta declares {len(declared)} input(s), {where} has {len(model_names)}: {', '.join(model_names)}",
            hint="make the meta's inputs match the model's",
        )
    unmatched = iter([m for m in model_names if m not in declared])
    return [(n, n if n in model_names else next(unmatched)) for n in declared]


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (frameworks' messages run to pages)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
