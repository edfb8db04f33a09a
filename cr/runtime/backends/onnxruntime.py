"""ONNX Runtime backend: CPU, and the CUDA / TensorRT execution providers where present."""
from __future__ import annotations

from contextlib import nullcontext
from functools import partial

from ...errors import CRError
from .base import Backend, check_inputs

# ONNX tensor element types -> numpy dtype names
_DTYPES = {
    "tensor(float)": "float32", "tensor(float16)": "float16", "tensor(double)": "float64",
    "tensor(bfloat16)": "bfloat16", "tensor(int8)": "int8", "tensor(uint8)": "uint8",
    "tensor(int16)": "int16", "tensor(uint16)": "uint16", "tensor(int32)": "int32",
    "tensor(uint32)": "uint32", "tensor(int64)": "int64", "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
}
_LEVELS = ("disable", "basic", "extended", "all")
_ASSIGNMENT_KEY = "session.record_ep_graph_assignment_info"
_SHORT = {"cpu": "CPUExecutionProvider", "cuda": "CUDAExecutionProvider", "tensorrt": "TensorrtExecutionProvider"}


class OnnxruntimeBackend(Backend):
    name = "onnxruntime"
    FORMATS = ("onnx",)
    REQUIRES = ("software:onnxruntime@>=1.17",)
    PROFILER = "cr.runtime.profiling.onnxruntime:OnnxruntimeProfiler"
    THREADS_OPTION = "intra_op_threads"  # what `threads` sets (cr.run.target.settle_threads: one knob)
    OPTIONS = {
        "intra_op_threads": "threads inside one operator (default: threads, else all cores)",
        "inter_op_threads": "threads across operators (parallel execution mode only)",
        "graph_optimization_level": "disable, basic, extended or all (default all)",
        "execution_mode": "sequential (default) or parallel",
        "providers": "execution providers in order, e.g. [\"cuda\", \"cpu\"]; auto (default): CUDA when present, then CPU",
        "provider_options": "{provider: {option: value}} passed to those providers",
        "profile": "true: record ONNX Runtime's profile; the result names its file (the run is flagged profiled)",
        "profile_prefix": "where ONNX Runtime writes its profile: a path prefix (default: the current directory)",
    }

    def load(self, model_path, meta, options):
        import onnxruntime as ort

        self._ort = ort
        so = ort.SessionOptions()
        so.log_severity_level = 3
        threads = options.get("intra_op_threads", options.get("threads"))
        if threads is not None:
            so.intra_op_num_threads = int(threads)
        self._threads = int(threads) if threads is not None else None
        if options.get("inter_op_threads") is not None:
            so.inter_op_num_threads = int(options["inter_op_threads"])
        level = options.get("graph_optimization_level", "all")
        if level not in _LEVELS:
            raise CRError(f"onnxruntime option graph_optimization_level is {level!r}", hint=f"use one of {', '.join(_LEVELS)}")
        so.graph_optimization_level = {
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
        }[level]
        mode = options.get("execution_mode", "sequential")
        if mode not in ("sequential", "parallel"):
            raise CRError(f"onnxruntime option execution_mode is {mode!r}", hint="use sequential or parallel")
        so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if mode == "parallel" else ort.ExecutionMode.ORT_SEQUENTIAL
        try:  # which nodes each execution provider got: placement() (ONNX Runtime >= 1.23 records it)
            so.add_session_config_entry(_ASSIGNMENT_KEY, "1")
        except Exception:  # noqa: BLE001 - an older build: placement() says it cannot tell
            pass
        so.enable_profiling = bool(options.get("profile", False))
        if so.enable_profiling and options.get("profile_prefix"):
            so.profile_file_prefix = str(options["profile_prefix"])
        self._requested = self._providers(options.get("providers", "auto"))
        provider_options = options.get("provider_options") or {}
        per_provider = [provider_options.get(p, provider_options.get(_short(p), {})) for p in self._requested]
        self.session = ort.InferenceSession(model_path, sess_options=so, providers=self._requested, provider_options=per_provider)
        used = self.session.get_providers()
        explicit = options.get("providers", "auto") != "auto"
        lost = [p for p in self._requested if p not in used]
        if explicit and lost:
            raise CRError(
                f"onnxruntime could not start {', '.join(lost)} (session uses {', '.join(used)})",
                hint="the provider's libraries (CUDA, cuDNN, TensorRT) are probably not loadable; check LD_LIBRARY_PATH",
            )
        self._specs = [_spec(i) for i in self.session.get_inputs()]
        # Run only the outputs the meta declares (skips e.g. a ZipMap that turns
        # probabilities into Python dicts), unless it declares names the model lacks.
        have = {o.name: o for o in self.session.get_outputs()}
        declared = [t["name"] for t in meta.get("outputs") or []]
        self._outputs = declared if declared and all(n in have for n in declared) else None
        self._output_specs = [_spec(have[n]) for n in self._outputs or have]
        self._profile = so.enable_profiling

    def _providers(self, wanted) -> list[str]:
        available = self._ort.get_available_providers()
        if wanted == "auto":
            chosen = [p for p in ("CUDAExecutionProvider",) if p in available]
            return chosen + ["CPUExecutionProvider"]
        if isinstance(wanted, str):
            wanted = [wanted]
        chosen = []
        for p in wanted:
            # cuda, tensorrt, cpu; any other provider by its name without "ExecutionProvider" (azure, openvino)
            full = _SHORT.get(str(p).lower()) or next(
                (a for a in available if a.lower() in (str(p).lower(), str(p).lower() + "executionprovider")), p)
            if full not in available:
                raise CRError(
                    f"onnxruntime has no execution provider {p!r} here",
                    hint=f"available: {', '.join(available)} (CUDA/TensorRT need the onnxruntime-gpu build)",
                )
            chosen.append(full)
        return chosen

    def inputs(self):
        return self._specs

    def outputs(self):
        return self._output_specs

    def run(self, batch):
        try:
            return self.session.run(self._outputs, batch)
        except Exception:
            check_inputs(self._specs, batch)  # a clear message when the inputs are at fault
            raise

    def timed(self, batches):
        """session.run itself, its output names bound once (a C-level partial: no Python frame),
        on the batches as they are (they are its feeds)."""
        return nullcontext((partial(self.session.run, self._outputs), batches))

    def bare(self, batches):
        """session.run(output names, feed) on the prebuilt feeds: an ONNX Runtime user's loop."""
        return self.session.run, [(self._outputs, b) for b in batches]

    def close(self):
        self.session = None

    def profile(self):
        if not self._profile or self.session is None:
            return None
        return {"file": self.session.end_profiling()}

    @classmethod
    def placement_available(cls, options: dict) -> list[str]:
        """The execution providers this onnxruntime build offers (cr.runtime.placement)."""
        import onnxruntime as ort

        return list(ort.get_available_providers())

    def placement(self) -> dict:
        """The nodes ONNX Runtime assigned to each execution provider when it partitioned the graph
        (InferenceSession.get_provider_graph_assignment_info, recorded at load)."""
        session = self.session
        out = {"unit": "nodes", "requested": list(self._requested), "active": list(session.get_providers())}
        get = getattr(session, "get_provider_graph_assignment_info", None)
        subgraphs = get() if callable(get) else None
        if not subgraphs:
            why = ("has no InferenceSession.get_provider_graph_assignment_info" if not callable(get)
                   else "recorded no graph assignment")
            return {**out, "by_provider": None, "nodes": None,
                    "how": f"onnxruntime {self._ort.__version__} {why}: only the session's providers are known "
                           "(session.get_providers())"}
        by: dict = {}
        parts: dict = {}
        ops: dict = {}
        for sg in subgraphs:
            nodes = sg.get_nodes()
            by[sg.ep_name] = by.get(sg.ep_name, 0) + len(nodes)
            parts[sg.ep_name] = parts.get(sg.ep_name, 0) + 1
            for node in nodes:
                counts = ops.setdefault(sg.ep_name, {})
                counts[node.op_type] = counts.get(node.op_type, 0) + 1
        out.update({"by_provider": by, "nodes": sum(by.values()), "subgraphs": parts, "op_types": ops,
                    "how": f"InferenceSession.get_provider_graph_assignment_info() with session config {_ASSIGNMENT_KEY}=1 "
                           "(the nodes each execution provider was assigned when ONNX Runtime partitioned the graph)"})
        if any(p != "CPUExecutionProvider" for p in self._requested) and "CPUExecutionProvider" in ops:
            cpu = ops["CPUExecutionProvider"]
            out["fallback_ops"] = dict(sorted(cpu.items(), key=lambda kv: -kv[1]))
        return out

    def info(self):
        return {
            "framework": "onnxruntime",
            "version": self._ort.__version__,
            "providers": self.session.get_providers() if self.session is not None else self._requested,
            "device": self._ort.get_device(),
            "threads": getattr(self, "_threads", None),  # intra-op threads set; null: ONNX Runtime's default (one per core)
        }


def _dim(d):
    """A dim as onnxruntime reports it -> cr's: a positive int, or None when dynamic (onnxruntime
    gives None, a str (the dim_param), or -1 / 0 for a graph that writes a dynamic dim as a value <= 0)."""
    return d if isinstance(d, int) and not isinstance(d, bool) and d > 0 else None


def _spec(arg) -> dict:
    """{"name", "shape", "dtype"} of an onnxruntime NodeArg (shape None: not a tensor, or no shape)."""
    shape = getattr(arg, "shape", None)
    return {"name": arg.name, "shape": [_dim(d) for d in shape] if isinstance(shape, (list, tuple)) else None,
            "dtype": _DTYPES.get(arg.type, arg.type)}


def _short(provider: str) -> str:
    return next((k for k, v in _SHORT.items() if v == provider), provider)
