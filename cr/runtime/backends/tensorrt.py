"""TensorRT backend (TensorRT >= 10, NVIDIA GPUs): a serialized engine (trt-plan), or ONNX built into one.

Building (``build_plan``, also what load() does for an ONNX model): the ONNX parser fills
a network; the builder config takes fp16 / int8 flags, a workspace limit and, when an
input has a dynamic leading (batch) dim, one optimisation profile with min/opt/max batch
from the options. Other dynamic dims take the model meta's size for them. A plan is tied
to the TensorRT version and GPU model that built it.

Execution: one CUDA stream and device buffers sized for the profile's largest shapes,
allocated once at load; run() copies the inputs host-to-device, calls execute_async_v3,
copies the outputs back and synchronises before returning them (fresh numpy arrays).
Device memory comes from cuda-python (``cuda.bindings.runtime``, or ``cuda.cudart`` in
older releases); without it, or without tensorrt or a GPU, load() says which is missing.

Input names: the engine's (the ONNX graph's); when the meta declares other names for as
many inputs, the unmatched ones pair up in order. Outputs come back in the meta's order
when it names exactly the engine's outputs, else in the engine's order.
"""
from __future__ import annotations

import os
import time

from ...errors import CRError
from .base import Backend, InputMismatch, check_inputs, pair_names

NEEDS = "tensorrt backend needs an NVIDIA GPU and the tensorrt package (>= 10) with cuda-python"
NEEDS_HINT = ("run it on a host with an NVIDIA GPU and driver, in an environment with pip install tensorrt cuda-python "
              "(cr init solution ... installs them where a recipe exists); elsewhere choose onnxruntime or torch")
DEFAULT_BATCH = {"min_batch": 1, "opt_batch": 8, "max_batch": 32}


class TensorrtBackend(Backend):
    name = "tensorrt"
    FORMATS = ("trt-plan", "onnx")
    REQUIRES = ("software:tensorrt",)
    PROFILER = "cr.runtime.profiling.tensorrt:TensorrtProfiler"
    OPTIONS = {
        "fp16": "true: allow FP16 kernels when building from ONNX",
        "int8": "true: allow INT8 kernels (the ONNX must carry Q/DQ nodes: no calibration here)",
        "workspace_mb": "builder workspace limit in MiB (default: TensorRT's)",
        "min_batch": "smallest batch of the optimisation profile for a dynamic batch dim (default 1)",
        "opt_batch": "batch the kernels are tuned for (default 8, within min..max)",
        "max_batch": "largest batch of the profile; device buffers are sized for it (default 32)",
        "builder_optimization_level": "0..5: build time against engine speed (default TensorRT's, 3)",
        "device": "CUDA device index (default 0)",
        "save_plan": "path: write the engine built from ONNX there (load it later as format trt-plan)",
    }

    def load(self, model_path, meta, options):
        import numpy as np

        trt, cudart = _modules()
        self._np, self._trt, self._cudart = np, trt, cudart
        self._buffers: list = []
        self._stream = None
        self._device = int(options.get("device", 0))
        _cuda(cudart, cudart.cudaSetDevice(self._device), f"cudaSetDevice({self._device})")
        if not model_path:
            raise CRError(f"the tensorrt backend needs a model file ({meta.get('format')})", hint="add 'file' to the model meta")
        self._logger = trt.Logger(trt.Logger.WARNING)
        self._built = None
        if meta.get("format") == "onnx":
            started = time.perf_counter()
            plan = _build(trt, self._logger, model_path, options, meta.get("inputs") or [])
            self._built = {"from": "onnx", "seconds": round(time.perf_counter() - started, 3),
                           "fp16": bool(options.get("fp16")), "int8": bool(options.get("int8"))}
            if options.get("save_plan"):
                _write(plan, options["save_plan"])
        else:
            with open(model_path, "rb") as f:
                plan = f.read()
        self._runtime = trt.Runtime(self._logger)
        self.engine = self._runtime.deserialize_cuda_engine(plan)
        if self.engine is None:
            raise CRError(f"TensorRT {trt.__version__} cannot deserialize the engine {model_path}",
                          hint="a plan loads only with the TensorRT version and GPU model that built it; "
                               "rebuild it from ONNX here")
        self.context = self.engine.create_execution_context()
        self._setup(meta)

    def _setup(self, meta) -> None:
        trt, np, cudart, engine = self._trt, self._np, self._cudart, self.engine
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        ins = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        outs = [n for n in names if n not in ins]
        declared = [t["name"] for t in meta.get("outputs") or []]
        self._out_names = declared if sorted(declared) == sorted(outs) else outs
        dtypes = {n: np.dtype(trt.nptype(engine.get_tensor_dtype(n))) for n in names}
        self._dtypes = dtypes
        pairs = pair_names([t["name"] for t in meta.get("inputs") or []], ins, "the engine")
        self._feed = pairs
        self._specs = []
        largest = {}
        for name, tensor in pairs:
            shape = [int(d) for d in engine.get_tensor_shape(tensor)]
            self._specs.append({"name": name, "shape": [d if d >= 0 else None for d in shape], "dtype": dtypes[tensor].name})
            if any(d < 0 for d in shape):  # dynamic: the profile's largest shape (profile 0)
                shape = [int(d) for d in engine.get_tensor_profile_shape(tensor, 0)[2]]
            largest[tensor] = shape
            self.context.set_input_shape(tensor, largest[tensor])
        self._max = {t: tuple(s) for t, s in largest.items()}
        sizes = dict(largest)
        for out in self._out_names:
            sizes[out] = _concrete(self.context.get_tensor_shape(out), out)
        self._stream = _cuda(cudart, cudart.cudaStreamCreate(), "cudaStreamCreate")
        self._ptr = {}
        for tensor, shape in sizes.items():
            nbytes = max(1, int(np.prod(shape)) * dtypes[tensor].itemsize)
            ptr = _cuda(cudart, cudart.cudaMalloc(nbytes), f"cudaMalloc({nbytes})")
            self._buffers.append(ptr)
            self._ptr[tensor] = int(ptr)
            self.context.set_tensor_address(tensor, int(ptr))
        self._shapes = {}
        self._out_shapes = []
        self._h2d = cudart.cudaMemcpyKind.cudaMemcpyHostToDevice
        self._d2h = cudart.cudaMemcpyKind.cudaMemcpyDeviceToHost
        self._stream_handle = int(self._stream)

    def inputs(self):
        return self._specs

    def outputs(self):
        shapes = {n: [int(d) if d >= 0 else None for d in self.engine.get_tensor_shape(n)] for n in self._out_names}
        return [{"name": n, "shape": shapes[n], "dtype": self._dtypes[n].name} for n in self._out_names]

    def prepare(self, batch: dict) -> None:
        """Set the engine's input shapes to this batch's (outside the timed loop when called ahead)."""
        check_inputs(self._specs, batch)
        for name, tensor in self._feed:
            shape = tuple(batch[name].shape)
            if any(s > m for s, m in zip(shape, self._max[tensor])):
                raise CRError(f"input {name!r} of shape {list(shape)} exceeds the engine's largest {list(self._max[tensor])}",
                              hint="rebuild with a larger max_batch option, or give a smaller --batch-size")
            if not self.context.set_input_shape(tensor, shape):
                raise CRError(f"TensorRT refuses the shape {list(shape)} for input {name!r}",
                              hint="the engine's optimisation profile does not cover it; rebuild with min_batch/max_batch")
            self._shapes[name] = shape
        self._out_shapes = [(out, _concrete(self.context.get_tensor_shape(out), out)) for out in self._out_names]

    def run(self, batch):
        np, cudart, stream = self._np, self._cudart, self._stream
        try:
            for name, tensor in self._feed:
                x = batch[name]
                # a wrong dtype would be copied as raw bytes: check it, not only the shape
                if x.shape != self._shapes.get(name) or x.dtype != self._dtypes[tensor]:
                    self.prepare(batch)
                    break
            for name, tensor in self._feed:
                x = np.ascontiguousarray(batch[name])
                copied = cudart.cudaMemcpyAsync(self._ptr[tensor], x.ctypes.data, x.nbytes, self._h2d, stream)
                _cuda(cudart, copied, "copy to device")
            if not self.context.execute_async_v3(self._stream_handle):
                raise RuntimeError("TensorRT execute_async_v3 failed (see TensorRT's log above)")
        except InputMismatch:
            raise
        except KeyError:
            check_inputs(self._specs, batch)
            raise
        outputs = []
        for out, shape in self._out_shapes:
            host = np.empty(shape, dtype=self._dtypes[out])
            copied = cudart.cudaMemcpyAsync(host.ctypes.data, self._ptr[out], host.nbytes, self._d2h, stream)
            _cuda(cudart, copied, "copy to host")
            outputs.append(host)
        _cuda(cudart, cudart.cudaStreamSynchronize(stream), "cudaStreamSynchronize")
        return outputs

    def close(self):
        cudart = getattr(self, "_cudart", None)
        self.context = None
        self.engine = None
        if cudart is None:
            return
        if self._stream is not None:
            cudart.cudaStreamSynchronize(self._stream)
        for ptr in self._buffers:
            cudart.cudaFree(ptr)
        self._buffers = []
        if self._stream is not None:
            cudart.cudaStreamDestroy(self._stream)
            self._stream = None

    def placement(self) -> dict:
        """The engine's layers per device, from TensorRT's engine inspector (see inspector_placement)."""
        inspector = self.engine.create_engine_inspector()
        text = inspector.get_engine_information(self._trt.LayerInformationFormat.JSON)
        return inspector_placement(text, f"cuda:{self._device}")

    def info(self):
        cudart = self._cudart
        props = _cuda(cudart, cudart.cudaGetDeviceProperties(self._device), "cudaGetDeviceProperties")
        name = props.name.decode(errors="replace") if isinstance(props.name, bytes) else str(props.name)
        return {
            "framework": "tensorrt",
            "version": self._trt.__version__,
            "device": f"cuda:{self._device}",
            "device_name": name.rstrip("\x00"),
            "engine": self._built or {"from": "plan"},
            "max_shapes": {t: list(s) for t, s in self._max.items()},
        }


def inspector_placement(text: str, device: str = "cuda:0") -> dict:
    """Layers per device from IEngineInspector.get_engine_information(LayerInformationFormat.JSON):
    {"Layers": [names] (the default profiling verbosity) or [{"Name", "LayerType", ...}] (DETAILED),
    "Bindings": [...]}. A TensorRT layer runs on the GPU unless the inspector names it a DLA
    layer (Jetson's deep-learning accelerator); there is no CPU fallback inside an engine."""
    import json

    layers = (json.loads(text) or {}).get("Layers") or []
    by: dict = {}
    for layer in layers:
        kind = str(layer.get("LayerType", "")) if isinstance(layer, dict) else ""
        key = "DLA" if "dla" in kind.lower() else device
        by[key] = by.get(key, 0) + 1
    return {"unit": "layers", "requested": [device], "device": device, "by_provider": by, "nodes": len(layers),
            "how": "TensorRT IEngineInspector.get_engine_information(LayerInformationFormat.JSON): the engine's "
                   "layers (after fusion); each runs on the GPU unless its LayerType names DLA"}


def build_plan(onnx_path: str, plan_path: str, options: dict | None = None, inputs: list | None = None) -> dict:
    """Build a TensorRT engine from onnx_path and write it to plan_path (for a compile action).

    options: the backend's build options (fp16, int8, workspace_mb, min/opt/max_batch,
    builder_optimization_level, device); inputs: the model meta's inputs, whose sizes fill
    dynamic dims other than the batch. Returns what was built: {plan, seconds, tensorrt, options}.
    """
    options = dict(options or {})
    trt, cudart = _modules()
    _cuda(cudart, cudart.cudaSetDevice(int(options.get("device", 0))), "cudaSetDevice")
    started = time.perf_counter()
    plan = _build(trt, trt.Logger(trt.Logger.WARNING), onnx_path, options, inputs or [])
    _write(plan, plan_path)
    return {"plan": str(plan_path), "seconds": round(time.perf_counter() - started, 3), "tensorrt": trt.__version__,
            "options": {k: v for k, v in options.items() if k != "save_plan"}}


# -- helpers ---------------------------------------------------------------------------------

def _modules():
    """(tensorrt, cudart), or the CRError saying what of GPU, tensorrt and cuda-python is missing."""
    try:
        import tensorrt as trt
    except ImportError as exc:
        raise CRError(f"{NEEDS}; the tensorrt package is not importable here ({exc})", hint=NEEDS_HINT) from None
    major = str(getattr(trt, "__version__", "0")).split(".")[0]
    if not major.isdigit() or int(major) < 10:
        raise CRError(f"{NEEDS}; found tensorrt {getattr(trt, '__version__', '?')}", hint="pip install 'tensorrt>=10'")
    try:
        from cuda.bindings import runtime as cudart
    except ImportError:
        try:
            from cuda import cudart
        except ImportError:
            raise CRError(f"{NEEDS}; cuda-python (cuda.bindings.runtime) is not importable here", hint=NEEDS_HINT) from None
    err, count = cudart.cudaGetDeviceCount()
    if err != cudart.cudaError_t.cudaSuccess or count < 1:
        reason = getattr(err, "name", str(err)) if err != cudart.cudaError_t.cudaSuccess else "no device"
        raise CRError(f"{NEEDS}; no NVIDIA GPU is visible ({reason})", hint=NEEDS_HINT)
    return trt, cudart


def _cuda(cudart, result, what: str):
    """The value of a cuda-python call ((err, value...)), or a CRError naming the failed call."""
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != cudart.cudaError_t.cudaSuccess:
        raise CRError(f"CUDA {what} failed: {getattr(err, 'name', err)}",
                      hint="check the GPU (nvidia-smi), its free memory, and that the driver supports this CUDA")
    return values[0] if len(values) == 1 else (tuple(values) or None)


def _build(trt, logger, onnx_path, options: dict, declared: list):
    builder = trt.Builder(logger)
    network = builder.create_network(0)  # TensorRT 10: explicit batch always
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(os.fspath(onnx_path)):
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise CRError(f"TensorRT cannot parse {onnx_path}: {errors[0] if errors else 'unknown error'}",
                      hint="TensorRT may not support an operator or opset of this model; try onnxruntime, or re-export it")
    config = builder.create_builder_config()
    if options.get("workspace_mb") is not None:
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(options["workspace_mb"]) << 20)
    if options.get("fp16"):
        config.set_flag(trt.BuilderFlag.FP16)
    if options.get("int8"):
        config.set_flag(trt.BuilderFlag.INT8)
    if options.get("builder_optimization_level") is not None:
        config.builder_optimization_level = int(options["builder_optimization_level"])
    batch = _batch_range(options)
    sizes = {t["name"]: t.get("shape") for t in declared}
    profile, dynamic = builder.create_optimization_profile(), False
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        shape = [int(d) for d in tensor.shape]
        if all(d >= 0 for d in shape):
            continue
        dynamic = True
        low, mid, high = [], [], []
        for axis, d in enumerate(shape):
            if d >= 0:
                size = (d, d, d)
            elif axis == 0:
                size = batch
            else:
                meta_shape = sizes.get(tensor.name) or (declared[i].get("shape") if len(declared) == network.num_inputs else None)
                fixed = meta_shape[axis] if meta_shape and len(meta_shape) == len(shape) else None
                if not isinstance(fixed, int):
                    raise CRError(f"ONNX input {tensor.name!r} has a dynamic dim at position {axis}; TensorRT needs its size",
                                  hint="declare the input's shape in the model meta, or export the ONNX with that dim fixed")
                size = (fixed, fixed, fixed)
            low.append(size[0])
            mid.append(size[1])
            high.append(size[2])
        profile.set_shape(tensor.name, low, mid, high)
    if dynamic:
        config.add_optimization_profile(profile)
    plan = builder.build_serialized_network(network, config)
    if plan is None:
        raise CRError(f"TensorRT could not build an engine from {onnx_path}",
                      hint="TensorRT's log above says why (often: int8 without Q/DQ nodes, or too small a workspace_mb)")
    return plan


def _batch_range(options: dict) -> tuple[int, int, int]:
    low, opt, high = (int(options.get(k, DEFAULT_BATCH[k])) for k in ("min_batch", "opt_batch", "max_batch"))
    if not 1 <= low <= high:
        raise CRError(f"tensorrt options min_batch={low}, max_batch={high}: need 1 <= min_batch <= max_batch",
                      hint="e.g. min_batch 1, max_batch 32")
    return low, min(max(opt, low), high), high


def _concrete(dims, name: str) -> tuple:
    shape = tuple(int(d) for d in dims)
    if any(d < 0 for d in shape):
        raise CRError(f"output {name!r} has a data-dependent shape {list(shape)}, which this backend does not run",
                      hint="TensorRT needs an output allocator for such outputs; use onnxruntime for this model")
    return shape


def _write(plan, path) -> None:
    from ...fsutil import atomic_write_bytes

    atomic_write_bytes(os.path.abspath(path), plan, durable=False)
