"""TensorFlow Lite backend: LiteRT (ai-edge-litert), else tflite-runtime, else tensorflow.lite.

Input names. TFLite names its tensors after the converter ("serving_default_x:0"), not as
a model meta does ("x"). When the meta declares as many inputs as the model has, inputs()
and run() use the meta's names, each matched to a tensor by, in turn: the tensor's exact
name; a serving signature input of that name; a tensor named ``serving_default_<name>:N``;
and last, the inputs still unmatched pair up in order (meta order, interpreter order).
Without declared inputs the tensor names are used. Outputs follow the same rule with the
meta's ``outputs``; without them (or with another number of them) run() returns them in
the interpreter's order, named after the signature's outputs where it has them.

Batch size. A leading dim that the model leaves dynamic (-1 in its shape_signature; inputs()
and outputs() say None for it, as for any dim <= 0), or that is 1 while the meta declares it
dynamic, may take any size: the first batch of a new shape resizes the inputs
and re-allocates the tensors (``prepare(batch)`` does it ahead of time, outside timing).
"""
from __future__ import annotations

import re
from contextlib import contextmanager

from ...errors import CRError
from .base import Backend, InputMismatch, check_inputs, first_line

_SIGNATURE = "serving_default"
_TENSOR_NAME = re.compile(r"^(?:serving_default_)?(?P<name>.+?)(?::\d+)?$")


class TfliteBackend(Backend):
    name = "tflite"
    FORMATS = ("tflite",)
    REQUIRES = ("software:ai-edge-litert",)
    PROFILER = "cr.runtime.profiling.tflite:TfliteProfiler"
    CODE_OPTIONS = ("delegates",)  # each names a shared library, loaded into the process
    OPTIONS = {
        "delegates": "[{library, options}]: delegates to load (e.g. libedgetpu.so.1), in order",
        "xnnpack": "false: no default delegates (the XNNPACK CPU delegate); true/unset: the runtime's default",
        "preserve_all_tensors": "true: keep intermediate tensors readable (slower; default false)",
    }

    def load(self, model_path, meta, options):
        runtime = _runtime()
        self._runtime = runtime
        self._threads = int(options["threads"]) if options.get("threads") is not None else None
        self._xnnpack = options.get("xnnpack")
        kwargs = {"experimental_preserve_all_tensors": bool(options.get("preserve_all_tensors", False))}
        if self._threads is not None:
            kwargs["num_threads"] = self._threads
        if self._xnnpack is not None:
            resolver = runtime.resolver
            kwargs["experimental_op_resolver_type"] = resolver.AUTO if self._xnnpack else resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES
        self._delegates = [_delegate(runtime, d) for d in options.get("delegates") or []]
        if self._delegates:
            kwargs["experimental_delegates"] = [d for _, d in self._delegates]
        try:
            interp = runtime.Interpreter(model_path=model_path, **kwargs)
            interp.allocate_tensors()
        except Exception as exc:
            raise CRError(
                f"{runtime.name} cannot open {model_path}: {type(exc).__name__}: {first_line(exc)}",
                hint="is it a .tflite flatbuffer? A model with custom ops needs their delegate (option delegates)",
            ) from exc
        self._interp = interp
        signature = _signature_io(interp)
        self._specs, self._feed = _match_inputs(interp.get_input_details(), meta.get("inputs") or [], signature[0])
        self._outputs, self._fetch = _match_outputs(interp.get_output_details(), meta.get("outputs") or [], signature[1])
        details = interp.get_input_details()
        self._shapes = {name: tuple(int(d) for d in details[pos]["shape"]) for name, _, pos in self._feed}

    def inputs(self):
        return self._specs

    def outputs(self):
        return self._outputs

    def prepare(self, batch: dict) -> None:
        """Resize the inputs to this batch's shapes (a no-op when they already fit)."""
        changed = [(name, index) for name, index, _ in self._feed if tuple(batch[name].shape) != self._shapes[name]]
        if not changed:
            return
        check_inputs(self._specs, batch)  # only dims the specs leave dynamic may change
        try:
            for name, index in changed:
                self._interp.resize_tensor_input(index, list(batch[name].shape), strict=False)
            self._interp.allocate_tensors()
        except Exception as exc:
            self._restore(changed)
            shapes = ", ".join(f"{n} {list(batch[n].shape)}" for n, _ in changed)
            raise CRError(
                f"the tflite model cannot take inputs of shape {shapes}: {first_line(exc)}",
                hint="its batch size may be fixed: give --batch-size 1, or convert the model with a dynamic batch",
            ) from exc
        for name, _ in changed:
            self._shapes[name] = tuple(batch[name].shape)

    def _restore(self, changed: list) -> None:
        """Back to the shapes that worked, so a refused batch leaves the model usable."""
        try:
            for name, index in changed:
                self._interp.resize_tensor_input(index, list(self._shapes[name]), strict=False)
            self._interp.allocate_tensors()
        except Exception:  # the refusal is what the caller needs to see
            pass

    def run(self, batch):
        interp = self._interp
        try:
            for name, _, _ in self._feed:
                if batch[name].shape != self._shapes[name]:
                    self.prepare(batch)
                    break
            for name, index, _ in self._feed:
                interp.set_tensor(index, batch[name])
            interp.invoke()
        except InputMismatch:
            raise
        except Exception:
            check_inputs(self._specs, batch)  # a clear message when the inputs are at fault
            raise
        return [interp.get_tensor(i) for i in self._fetch]

    @contextmanager
    def timed(self, batches):
        """run() at the bare loop's cost: the interpreter resized once for the batches' shapes
        (when they all share them; else run() itself, which resizes on a new shape), then
        set_tensor, invoke and get_tensor only."""
        if batches:
            self.prepare(batches[0])
        same = all(tuple(b[name].shape) == self._shapes[name] for b in batches for name, _, _ in self._feed)
        if not same:
            yield self.run, batches
            return
        call, args = self.bare(batches)
        if len(self._feed) == 1:
            yield call, [a[0] for a in args]
            return

        def run(xs):
            return call(*xs)

        yield run, args

    def bare(self, batches):
        """set_tensor for each input, invoke, get_tensor for each output: a LiteRT user's loop."""
        interp = self._interp
        set_tensor, invoke, get_tensor = interp.set_tensor, interp.invoke, interp.get_tensor
        fetch = self._fetch
        if len(self._feed) == 1 and len(fetch) == 1:
            (name, index, _), (out,) = self._feed[0], fetch

            def call(x):
                set_tensor(index, x)
                invoke()
                return get_tensor(out)

            return call, [(b[name],) for b in batches]

        def call_many(*xs):
            for (_, index, _), x in zip(self._feed, xs):
                set_tensor(index, x)
            invoke()
            return [get_tensor(i) for i in fetch]

        return call_many, [tuple(b[name] for name, _, _ in self._feed) for b in batches]

    def close(self):
        self._interp = None
        self._delegates = []

    @classmethod
    def placement_available(cls, options: dict) -> list[str]:
        """CPU, XNNPACK unless turned off, and the delegate libraries the options load."""
        names = ["CPU"] + (["XNNPACK"] if options.get("xnnpack") is not False else [])
        for spec in options.get("delegates") or []:
            library = spec.get("library") if isinstance(spec, dict) else spec
            names.append(_delegate_key(str(library)))
        return names

    def placement(self) -> dict:
        """Ops run by a delegate vs by TFLite's own CPU kernels, read off the interpreter's ops
        (see delegated_ops)."""
        details = self._interp._get_ops_details()  # noqa: SLF001 - the interpreter's only op listing
        delegated, kernels = delegated_ops(details)
        original = [d for d in details if d.get("op_name") != "DELEGATE"]
        libraries = [library for library, _ in self._delegates]
        if libraries and self._xnnpack is False and len(libraries) == 1:
            key = _delegate_key(libraries[0])
        elif libraries:
            key = "delegates (" + ", ".join([_delegate_key(x) for x in libraries] + ([] if self._xnnpack is False else ["XNNPACK"])) + ")"
        else:
            key = "XNNPACK"
        by = {key: len(delegated), "CPU": len(original) - len(delegated)} if delegated else {"CPU": len(original)}
        cpu_ops: dict = {}
        for d in original:
            if d["index"] not in delegated:
                cpu_ops[d["op_name"]] = cpu_ops.get(d["op_name"], 0) + 1
        requested = ["CPU"] + libraries + ([] if self._xnnpack is False else ["XNNPACK"])
        return {"unit": "ops", "requested": requested, "by_provider": by,
                "nodes": len(original), "delegate_kernels": kernels,
                "fallback_ops": dict(sorted(cpu_ops.items(), key=lambda kv: -kv[1])) if cpu_ops and delegated else None,
                "how": f"{self._runtime.name} Interpreter._get_ops_details(): the model's ops and the DELEGATE kernels that "
                       "replaced some of them; an op is delegated when it lies between a DELEGATE kernel's input and "
                       "output tensors"}

    def info(self):
        return {
            "framework": "tflite",
            "runtime": self._runtime.name,
            "version": self._runtime.version,
            "device": "cpu" if not self._delegates else "delegates",
            "threads": self._threads,
            "xnnpack": self._xnnpack if self._xnnpack is not None else "default",
            "delegates": [library for library, _ in self._delegates],
        }


def _delegate_key(library: str) -> str:
    import os

    return os.path.basename(library)


def delegated_ops(details: list) -> tuple[set, int]:
    """({indices of the model's ops a delegate runs}, number of DELEGATE kernels) from an
    interpreter's op details (after allocate_tensors).

    A delegate replaces a partition of the graph with one DELEGATE kernel whose inputs are
    the partition's inputs (weights included) and whose outputs are its outputs; the replaced
    ops stay listed but are no longer in the execution plan. Walking back from each DELEGATE
    kernel's outputs through their producers, stopping at its inputs, finds that partition.
    """
    kernels = [d for d in details if d.get("op_name") == "DELEGATE"]
    producer, by_index = {}, {}
    for d in details:
        if d.get("op_name") != "DELEGATE":
            by_index[d["index"]] = d
            for t in d.get("outputs", []):
                producer[int(t)] = d["index"]
    delegated: set = set()
    for kernel in kernels:
        stop = {int(t) for t in kernel.get("inputs", [])}
        todo, seen = [int(t) for t in kernel.get("outputs", [])], set()
        while todo:
            tensor = todo.pop()
            if tensor in seen or tensor in stop:
                continue
            seen.add(tensor)
            op = producer.get(tensor)
            if op is None or op in delegated:
                continue
            delegated.add(op)
            todo += [int(t) for t in by_index[op].get("inputs", []) if int(t) >= 0]
    return delegated, len(kernels)


class _Runtime:
    def __init__(self, name, version, module, resolver):
        self.name, self.version = name, version
        self.Interpreter, self.load_delegate, self.resolver = module.Interpreter, module.load_delegate, resolver


def _runtime() -> _Runtime:
    try:
        import ai_edge_litert
        from ai_edge_litert import interpreter

        return _Runtime("ai-edge-litert", getattr(ai_edge_litert, "__version__", None), interpreter, interpreter.OpResolverType)
    except ImportError:
        pass
    try:
        import tflite_runtime
        from tflite_runtime import interpreter

        return _Runtime("tflite-runtime", getattr(tflite_runtime, "__version__", None), interpreter, interpreter.OpResolverType)
    except ImportError:
        pass
    try:
        import os

        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import tensorflow as tf
    except ImportError:
        raise CRError(
            "the tflite backend needs a TFLite interpreter: none of ai-edge-litert, tflite-runtime, tensorflow is installed",
            hint="pip install ai-edge-litert (or benchmark inside a lock that has it)",
        ) from None

    class _Lite:
        Interpreter = tf.lite.Interpreter
        load_delegate = staticmethod(tf.lite.experimental.load_delegate)

    return _Runtime("tensorflow.lite", tf.__version__, _Lite, tf.lite.experimental.OpResolverType)


def _delegate(runtime: _Runtime, spec) -> tuple[str, object]:
    if isinstance(spec, str):
        spec = {"library": spec}
    library = spec.get("library") if isinstance(spec, dict) else None
    if not library:
        raise CRError(f"tflite option delegates has an entry without a library: {spec!r}",
                      hint='give [{"library": "libedgetpu.so.1", "options": {...}}]')
    try:
        return library, runtime.load_delegate(library, {k: str(v) for k, v in (spec.get("options") or {}).items()})
    except Exception as exc:
        raise CRError(f"tflite cannot load the delegate {library}: {first_line(exc)}",
                      hint="is the library installed and on LD_LIBRARY_PATH, and its device attached?") from exc


def _signature_io(interp) -> tuple[dict, dict]:
    """({signature input name: tensor index}, {output name: tensor index}) of serving_default."""
    try:
        signatures = interp.get_signature_list()
        key = _SIGNATURE if _SIGNATURE in signatures else (next(iter(signatures)) if len(signatures) == 1 else None)
        if key is None:
            return {}, {}
        runner = interp.get_signature_runner(key)
        return ({n: d["index"] for n, d in runner.get_input_details().items()},
                {n: d["index"] for n, d in runner.get_output_details().items()})
    except Exception:  # old runtimes, models without signatures
        return {}, {}


def _spec(detail: dict, name: str, dynamic_batch: bool = False) -> dict:
    import numpy as np

    signature = detail.get("shape_signature")  # the shape as converted: a dynamic dim is -1 there
    shape = [int(d) for d in (signature if signature is not None and len(signature) else detail["shape"])]
    dims = [None if d <= 0 else d for d in shape]  # -1 (or 0): dynamic, as cr writes it
    if dims and dims[0] == 1 and dynamic_batch:
        dims[0] = None
    spec = {"name": name, "shape": dims, "dtype": np.dtype(detail["dtype"]).name}
    scale, zero_point = detail.get("quantization") or (0.0, 0)
    if scale:
        spec["quantization"] = {"scale": float(scale), "zero_point": int(zero_point)}
    return spec


def _match_inputs(details: list, declared: list, signature: dict) -> tuple[list, list]:
    """(specs, feed [(name, tensor index, position in details)]) in the meta's order when it declares them."""
    if not declared:
        feed = [(d["name"], d["index"], pos) for pos, d in enumerate(details)]
        return [_spec(d, d["name"]) for d in details], feed
    if len(declared) != len(details):
        raise CRError(
            f"the model meta declares {len(declared)} input(s), the tflite model has {len(details)}: "
            + ", ".join(d["name"] for d in details),
            hint="make the meta's inputs match the model's",
        )
    chosen = _pair([t["name"] for t in declared], details, signature)
    specs, feed = [], []
    for t, pos in zip(declared, chosen):
        specs.append(_spec(details[pos], t["name"], dynamic_batch=_dynamic_batch(t)))
        feed.append((t["name"], details[pos]["index"], pos))
    return specs, feed


def _match_outputs(details: list, declared: list, signature: dict) -> tuple[list, list]:
    """(specs, tensor indices) in the meta's order when it declares as many, else the interpreter's."""
    if declared and len(declared) == len(details):
        chosen = _pair([t["name"] for t in declared], details, signature)
        specs = [_spec(details[p], t["name"], dynamic_batch=_dynamic_batch(t)) for t, p in zip(declared, chosen)]
        return specs, [details[p]["index"] for p in chosen]
    by_signature = {index: name for name, index in signature.items()}
    return [_spec(d, by_signature.get(d["index"], d["name"])) for d in details], [d["index"] for d in details]


def _dynamic_batch(tensor: dict) -> bool:
    shape = tensor.get("shape") or []
    return bool(shape) and not isinstance(shape[0], int)


def _pair(names: list, details: list, signature: dict) -> list:
    """For each name, the position in details of its tensor (see the module docstring)."""
    position = {d["index"]: pos for pos, d in enumerate(details)}
    exact = {d["name"]: pos for pos, d in enumerate(details)}
    stripped = {}
    for pos, d in enumerate(details):
        stripped.setdefault(_TENSOR_NAME.match(d["name"]).group("name"), pos)
    chosen: list = []
    for name in names:
        pos = exact.get(name)
        if pos is None and name in signature:
            pos = position.get(signature[name])
        if pos is None:
            pos = stripped.get(name)
        chosen.append(pos if pos not in chosen else None)
    free = iter(p for p in range(len(details)) if p not in chosen)
    return [p if p is not None else next(free) for p in chosen]
