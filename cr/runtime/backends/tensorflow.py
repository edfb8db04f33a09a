"""TensorFlow backend: SavedModel signatures, Keras models (.keras, .h5) and frozen GraphDefs.

A SavedModel is a directory; its meta's ``file`` names ``saved_model.pb`` inside it (the
directory is what loads). It runs the signature ``serving_default`` (option ``signature``)
with keyword inputs; outputs come back in the meta's ``outputs`` order when every name is
one of the signature's outputs, else in the signature's sorted output names. A Keras model
runs as a ``tf.function`` over its inputs (model.inputs order), outputs in the model's order.

Input names: meta inputs named like the model's inputs use them; those that are not pair
up in order with the model's inputs still unmatched (meta order, then the signature's
sorted names or the Keras model's order), so a meta may call the input "image" where the
signature says "input_1".

A frozen GraphDef (format ``tf-frozen-graph``, a .pb such as the TF Object Detection API
exports) is imported into a tf.compat.v1.wrap_function and pruned from the meta's inputs to
its outputs, whose ``name`` fields are the graph's tensor names ("image_tensor:0"; ":0" is
implied when left out): no TF1 session. Any tensor of the graph may be an input, so one
file can hold several variants (the whole graph, or its backbone from "Preprocessor/sub:0").

Threads: TensorFlow takes its thread pools' sizes only before it runs its first op; load()
sets them first, and refuses (naming the option) when this process has already started TF
with other sizes.
"""
from __future__ import annotations

import os
from contextlib import contextmanager

from ...errors import CRError
from .base import Backend, InputMismatch, check_inputs, first_line, pair_names


class TensorflowBackend(Backend):
    name = "tensorflow"
    FORMATS = ("savedmodel", "keras", "tf-frozen-graph")
    REQUIRES = ("software:tensorflow-cpu",)
    PROFILER = "cr.runtime.profiling.tensorflow:TensorflowProfiler"
    OPTIONS = {
        "inter_op_threads": "threads across operators (tf.config.threading; default TensorFlow's)",
        "signature": "the SavedModel signature to run (default serving_default)",
        "jit_compile": "true: compile the model with XLA (tf.function(jit_compile=True))",
    }

    def load(self, model_path, meta, options):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        if meta.get("format") == "keras":
            os.environ.setdefault("KERAS_BACKEND", "tensorflow")
        import tensorflow as tf

        self._tf = tf
        self._set_threads(options.get("threads"), options.get("inter_op_threads"))
        self._format = meta.get("format")
        self._jit = bool(options.get("jit_compile", False))
        self._signature = None
        if not model_path:
            raise CRError(f"the tensorflow backend needs a model file ({self._format})", hint="add 'file' to the model meta")
        if self._format == "savedmodel":
            self._load_savedmodel(model_path, meta, options.get("signature") or "serving_default")
        elif self._format == "keras":
            self._load_keras(model_path, meta)
        elif self._format == "tf-frozen-graph":
            from .tf_graph import load_frozen_graph

            self._call, self._specs, self._output_specs, self._feed = load_frozen_graph(tf, model_path, meta)
            self._keys = None
            self._dict_keys = [s["name"] for s in self._output_specs]
        else:
            raise CRError(f"the tensorflow backend cannot load format {self._format!r}",
                          hint=f"it loads {', '.join(self.FORMATS)}")
        self._expect_dtypes()

    def _set_threads(self, intra, inter) -> None:
        threading = self._tf.config.threading
        for option, value, get, put in (
            ("threads", intra, threading.get_intra_op_parallelism_threads, threading.set_intra_op_parallelism_threads),
            ("inter_op_threads", inter, threading.get_inter_op_parallelism_threads, threading.set_inter_op_parallelism_threads),
        ):
            if value is None or get() == int(value):
                continue
            try:
                put(int(value))
            except RuntimeError as exc:  # TensorFlow has started: its pools are fixed
                raise CRError(
                    f"tensorflow option {option}={value} cannot apply: TensorFlow already runs in this process ({exc})",
                    hint="thread counts must be set before TensorFlow's first op; run the backend in a fresh process",
                ) from exc

    # -- SavedModel ------------------------------------------------------------------------

    def _load_savedmodel(self, model_path, meta, signature):
        tf = self._tf
        folder = model_path if os.path.isdir(model_path) else os.path.dirname(os.path.abspath(model_path))
        try:
            self._loaded = tf.saved_model.load(folder)
        except Exception as exc:
            raise CRError(f"tensorflow cannot load the SavedModel {folder}: {type(exc).__name__}: {first_line(exc)}",
                          hint="the meta's file should be the saved_model.pb inside the SavedModel directory") from exc
        signatures = dict(self._loaded.signatures)
        if signature not in signatures:
            raise CRError(f"the SavedModel {folder} has no signature {signature!r}",
                          hint=f"its signatures: {', '.join(signatures) or 'none (export it with a serving signature)'}; "
                               "choose one with the option signature")
        self._signature = signature
        fn = signatures[signature]
        args, kwargs = fn.structured_input_signature
        if args:
            raise CRError(f"signature {signature!r} of {folder} takes positional inputs",
                          hint="export the model with named (keyword) inputs")
        model_names = sorted(kwargs)
        pairs = pair_names([t["name"] for t in meta.get("inputs") or []], model_names, "the signature")
        self._specs = [_spec(name, kwargs[model_name]) for name, model_name in pairs]
        self._feed = pairs
        outputs = fn.structured_outputs
        if not isinstance(outputs, dict):
            raise CRError(f"signature {signature!r} of {folder} does not return named outputs",
                          hint="export the model with a serving signature")
        declared = [t["name"] for t in meta.get("outputs") or []]
        self._keys = declared if declared and all(n in outputs for n in declared) else sorted(outputs)
        self._output_specs = [_spec(k, outputs[k]) for k in self._keys]
        if self._jit:
            specs = [tf.TensorSpec(kwargs[m].shape, kwargs[m].dtype, name=m) for _, m in pairs]
            names = [m for _, m in pairs]
            fn = tf.function(lambda *xs: signatures[signature](**dict(zip(names, xs))), input_signature=specs, jit_compile=True)
            self._call = lambda batch: fn(*[batch[n] for n, _ in self._feed])
        else:
            self._call = lambda batch: fn(**{m: batch[n] for n, m in self._feed})

    # -- Keras -----------------------------------------------------------------------------

    def _load_keras(self, model_path, meta):
        tf = self._tf
        try:
            import keras

            if keras.backend.backend() != "tensorflow":
                raise CRError(f"keras runs on its {keras.backend.backend()} backend in this process, not tensorflow",
                              hint="unset KERAS_BACKEND (or set it to tensorflow) for the tensorflow backend")
            self._keras_version = keras.__version__
            model = keras.models.load_model(model_path, compile=False)
        except CRError:
            raise
        except Exception as exc:
            raise CRError(f"keras cannot load {model_path}: {type(exc).__name__}: {first_line(exc)}",
                          hint="a Keras model is a .keras (or .h5) file written by model.save()") from exc
        self._loaded = model
        tensors = list(model.inputs)
        pairs = pair_names([t["name"] for t in meta.get("inputs") or []], [t.name for t in tensors], "the Keras model")
        by_name = {t.name: t for t in tensors}
        self._specs = [{"name": name, "shape": list(by_name[m].shape), "dtype": str(by_name[m].dtype)} for name, m in pairs]
        self._feed = pairs
        order = [t.name for t in tensors]
        signature = [tf.TensorSpec(by_name[m].shape, by_name[m].dtype, name=m) for m in order]
        single = len(order) == 1
        fn = tf.function(lambda *xs: model(xs[0] if single else list(xs), training=False),
                         input_signature=signature, jit_compile=self._jit)
        position = {m: i for i, m in enumerate(order)}
        feed_order = sorted(pairs, key=lambda pair: position[pair[1]])
        self._call = lambda batch: fn(*[batch[n] for n, _ in feed_order])
        self._keys = None
        names = list(getattr(model, "output_names", None) or [])
        declared = [t["name"] for t in meta.get("outputs") or []]
        self._dict_keys = declared or names
        self._output_specs = [{"name": n, "shape": None, "dtype": None} for n in names] or None

    # -- run -------------------------------------------------------------------------------

    def _expect_dtypes(self) -> None:
        import numpy as np

        self._dtypes = [(s["name"], np.dtype(s["dtype"])) for s in self._specs]

    def inputs(self):
        return self._specs

    def outputs(self):
        return self._output_specs

    def run(self, batch):
        try:
            for name, dtype in self._dtypes:
                if batch[name].dtype != dtype:  # TensorFlow would cast it silently
                    check_inputs(self._specs, batch)
            out = self._call(batch)
        except InputMismatch:
            raise
        except Exception:
            check_inputs(self._specs, batch)  # a clear message when the inputs are at fault
            raise
        if self._keys is not None:
            return [out[k].numpy() for k in self._keys]
        return _flatten(out, self._dict_keys)

    @contextmanager
    def timed(self, batches):
        """run() without its per-call work: each batch's inputs made TensorFlow tensors once
        (run() has checked their dtypes before the window), the outputs left as TensorFlow's
        (.numpy() is run()'s)."""
        tf = self._tf
        yield self._call, [{n: tf.convert_to_tensor(b[n]) for n, _ in self._dtypes} for b in batches]

    def close(self):
        self._call = None
        self._loaded = None

    @classmethod
    def placement_available(cls, options: dict) -> list[str]:
        """The devices TensorFlow sees (CPU:0, GPU:0, ...)."""
        import tensorflow as tf

        return [d.name.replace("/physical_device:", "") for d in tf.config.list_physical_devices()]

    def placement(self) -> dict:
        """Where TensorFlow's placer can put the ops: with no GPU visible, every op runs on CPU:0; with
        one, per-op placement is not collected (tf.debugging.set_log_device_placement logs it)."""
        devices = [d.name.replace("/device:", "") for d in self._tf.config.list_logical_devices()]
        how = "tf.config.list_logical_devices()"
        if all(d.startswith("CPU") for d in devices):
            return {"unit": "model", "requested": devices, "by_provider": {devices[0] if devices else "CPU:0": 1},
                    "nodes": 1, "how": f"{how}: no GPU is visible to TensorFlow, so its placer puts every op on the CPU"}
        return {"unit": "model", "requested": devices, "by_provider": None, "nodes": None,
                "how": f"{how}: {', '.join(devices)}; TensorFlow places each op at run time (GPU first) and does not "
                       "report it (tf.debugging.set_log_device_placement logs it)"}

    def info(self):
        tf = self._tf
        threading = tf.config.threading
        info = {
            "framework": "tensorflow",
            "version": tf.__version__,
            "devices": [d.name for d in tf.config.list_logical_devices()],
            "threads": threading.get_intra_op_parallelism_threads() or None,
            "inter_op_threads": threading.get_inter_op_parallelism_threads() or None,
            "format": self._format,
            "jit_compile": self._jit,
        }
        if self._signature:
            info["signature"] = self._signature
        if self._format == "keras":
            info["keras_version"] = self._keras_version
        return info


def _spec(name: str, tensor_spec) -> dict:
    shape = tensor_spec.shape
    return {"name": name, "shape": shape.as_list() if shape.rank is not None else None, "dtype": tensor_spec.dtype.name}


def _flatten(out, keys: list) -> list:
    if hasattr(out, "numpy"):
        return [out.numpy()]
    if isinstance(out, dict):
        order = keys if keys and all(k in out for k in keys) else list(out)
        return [a for k in order for a in _flatten(out[k], [])]
    if isinstance(out, (tuple, list)):
        return [a for item in out for a in _flatten(item, [])]
    raise TypeError(f"the tensorflow model returned a {type(out).__name__}, not tensors")
