"""PyTorch backend: TorchScript, torch.export programs (.pt2) and state dicts with their architecture.

Torch files carry no reliable input specs, so inputs() is the model meta's ``inputs``
(in that order: run() passes them positionally to forward()). Outputs (a tensor, a
tuple/list, possibly nested, or a dict) come back as a flat list of numpy arrays; a dict
follows the meta's ``outputs`` names when it declares them all, else its own key order.

A torch-state-dict model names its architecture in the meta: ``architecture`` {file,
factory, kwargs}, the file relative to the component directory (``meta["_dir"]`` when the
caller sets it, else the directory of the weights file). The file is imported, the
factory called with kwargs, and the weights loaded with ``weights_only=True`` (no
pickled code runs).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from contextlib import contextmanager

from ...errors import CRError
from .base import Backend, check_inputs, first_line


class TorchBackend(Backend):
    name = "torch"
    FORMATS = ("torchscript", "torch-exported", "torch-state-dict")
    REQUIRES = ("software:torch@>=2.0",)
    PROFILER = "cr.runtime.profiling.torch:TorchProfiler"
    OPTIONS = {
        "interop_threads": "threads across operators (torch.set_num_interop_threads; default torch's)",
        "device": "cpu (default), cuda or cuda:N",
        "channels_last": "true: convert the model and 4-d inputs to the channels_last memory format",
        "inference_mode": "true (default): run under torch.inference_mode(); false: torch.no_grad()",
        "compile": "true: wrap the model in torch.compile (the first calls compile; warm-up covers them)",
    }

    def load(self, model_path, meta, options):
        import torch

        self._torch = torch
        self._format = meta.get("format")
        self._set_threads(options)
        self._device = self._pick_device(options.get("device", "cpu"))
        self._specs = _declared_inputs(meta)
        self._names = [s["name"] for s in self._specs]
        self._output_names = [t["name"] for t in meta.get("outputs") or []]
        model = self._open(model_path, meta)
        if hasattr(model, "eval") and self._format != "torch-exported":  # exported modules refuse eval()
            model.eval()
        self._channels_last = bool(options.get("channels_last", False))
        if self._channels_last:
            model = model.to(memory_format=torch.channels_last)
        if self._device.type != "cpu":
            model = model.to(self._device)
        self._compiled = bool(options.get("compile", False))
        if self._compiled:
            model = torch.compile(model)
        self.model = model
        self._mode = "inference_mode" if options.get("inference_mode", True) else "no_grad"
        guard = torch.inference_mode() if self._mode == "inference_mode" else torch.no_grad()
        self._call = guard(self._forward)

    # -- load ------------------------------------------------------------------------------

    def _set_threads(self, options: dict) -> None:
        torch = self._torch
        if options.get("threads") is not None:
            torch.set_num_threads(int(options["threads"]))
        wanted = options.get("interop_threads")
        if wanted is not None and torch.get_num_interop_threads() != int(wanted):
            try:
                torch.set_num_interop_threads(int(wanted))
            except RuntimeError as exc:  # allowed once, before any inter-op work
                raise CRError(
                    f"torch option interop_threads={wanted} cannot apply: {exc}",
                    hint="torch sets inter-op threads once per process, before any parallel work; run in a fresh process",
                ) from exc

    def _pick_device(self, wanted):
        torch = self._torch
        text = str(wanted).lower()
        if text == "cpu":
            return torch.device("cpu")
        if text.startswith("cuda"):
            if not torch.cuda.is_available():
                raise CRError(
                    f"torch option device={wanted}, but this torch ({torch.__version__}) sees no CUDA device",
                    hint="install a CUDA build of torch on a host with an NVIDIA GPU, or use device cpu",
                )
            return torch.device(text)
        raise CRError(f"torch option device is {wanted!r}", hint="use cpu, cuda or cuda:N")

    def _open(self, model_path, meta):
        torch = self._torch
        if not model_path:
            raise CRError(f"the torch backend needs a model file ({self._format})", hint="add 'file' to the model meta")
        try:
            if self._format == "torchscript":
                return torch.jit.load(model_path, map_location="cpu")
            if self._format == "torch-exported":
                return torch.export.load(model_path).module()
            if self._format == "torch-state-dict":
                return self._from_state_dict(model_path, meta)
        except CRError:
            raise
        except Exception as exc:
            raise CRError(
                f"torch cannot load {model_path} as {self._format}: {type(exc).__name__}: {first_line(exc)}",
                hint="check the meta's format against the file (torch.jit.save, torch.export.save or torch.save(state_dict))",
            ) from exc
        raise CRError(f"the torch backend cannot load format {self._format!r}", hint=f"it loads {', '.join(self.FORMATS)}")

    def _from_state_dict(self, model_path, meta):
        arch = meta.get("architecture") or {}
        if not arch.get("file") or not arch.get("factory"):
            raise CRError(
                "a torch-state-dict model needs its architecture: meta 'architecture' {file, factory, kwargs} is missing",
                hint="name the Python file (relative to the component) and the function that builds the module",
            )
        base = meta.get("_dir") or os.path.dirname(os.path.abspath(model_path))
        path = os.path.join(base, arch["file"])
        if not os.path.isfile(path):
            raise CRError(f"the architecture file {path} does not exist", hint="fix architecture.file in the model meta")
        factory = getattr(_import_file(path), arch["factory"], None)
        if not callable(factory):
            raise CRError(f"the architecture file {path} has no function {arch['factory']!r}",
                          hint="fix architecture.factory in the model meta")
        module = factory(**(arch.get("kwargs") or {}))
        state = self._torch.load(model_path, map_location="cpu", weights_only=True)
        try:
            result = module.load_state_dict(state, strict=False)
            problems = [f"missing {', '.join(result.missing_keys[:5])}" if result.missing_keys else "",
                        f"unexpected {', '.join(result.unexpected_keys[:5])}" if result.unexpected_keys else ""]
        except RuntimeError as exc:  # shapes that differ raise even when not strict
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            problems = [lines[1] if len(lines) > 1 else first_line(exc)]
        problem = "; ".join(p for p in problems if p)
        if problem:
            raise CRError(
                f"the state dict {model_path} does not fit {arch['factory']}() of {arch['file']}: {problem}",
                hint="the weights and the architecture (or its kwargs) are from different models",
            )
        return module

    # -- run -------------------------------------------------------------------------------

    def inputs(self):
        return self._specs

    def _tensors(self, batch) -> list:
        torch, device = self._torch, self._device
        args = []
        for name in self._names:
            x = torch.from_numpy(batch[name])
            if device.type != "cpu":
                x = x.to(device, non_blocking=True)
            if self._channels_last and x.dim() == 4:
                x = x.contiguous(memory_format=torch.channels_last)
            args.append(x)
        return args

    def _forward(self, batch):
        return self._numpy(self.model(*self._tensors(batch)))

    def _numpy(self, out) -> list:
        if isinstance(out, self._torch.Tensor):
            return [out.numpy() if out.device.type == "cpu" else out.cpu().numpy()]
        if isinstance(out, dict):
            keys = self._output_names if self._output_names and all(k in out for k in self._output_names) else list(out)
            return [a for k in keys for a in self._numpy(out[k])]
        if isinstance(out, (tuple, list)):
            return [a for item in out for a in self._numpy(item)]
        raise TypeError(f"the torch model returned a {type(out).__name__}, not tensors")

    def run(self, batch):
        try:
            return self._call(batch)
        except Exception:
            check_inputs(self._specs, batch)  # a clear message when the inputs are at fault
            raise

    @contextmanager
    def timed(self, batches):
        """run() at the bare loop's cost: the grad mode entered once for the whole window; on
        the CPU each batch's tensors made once (torch.from_numpy shares the array's memory, so
        nothing a query sees changes; on a GPU the copy to the device stays in every query, as
        it is in a deployment); the outputs stay torch's (a .numpy() costs ~3 us a tensor on
        a 2-core VM: more than lenet's whole wrapper budget)."""
        torch, model, tensors = self._torch, self.model, self._tensors
        if self._device.type != "cpu":
            def run(batch):
                return model(*tensors(batch))

            window = run, batches
        elif len(self._names) == 1:  # the module itself: the bare loop's call
            window = model, [tensors(b)[0] for b in batches]
        else:
            def run_many(args):
                return model(*args)

            window = run_many, [tuple(tensors(b)) for b in batches]
        with torch.inference_mode() if self._mode == "inference_mode" else torch.no_grad():
            yield window

    def bare(self, batches):
        """module(*tensors) on tensors made beforehand (held under timed()'s grad mode)."""
        if self._device.type != "cpu":
            return None  # a GPU query includes its input copy: the bare loop would not
        return self.model, [tuple(self._tensors(b)) for b in batches]

    def close(self):
        self.model = None
        self._call = None

    @classmethod
    def placement_available(cls, options: dict) -> list[str]:
        """cpu, and cuda:N for each CUDA device this torch sees."""
        import torch

        return ["cpu"] + [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else ["cpu"]

    def placement(self) -> dict:
        """The device of each of the model's parameters and buffers (the inputs go to the backend's device)."""
        by: dict = {}
        module = self.model
        tensors = []
        for get in ("parameters", "buffers"):
            try:
                tensors += list(getattr(module, get)())
            except Exception:  # noqa: BLE001 - a compiled wrapper or exported module without them
                pass
        for t in tensors:
            by[str(t.device)] = by.get(str(t.device), 0) + 1
        device = str(self._device)
        return {"unit": "tensors", "requested": [device], "device": device, "by_provider": by or {device: 0},
                "nodes": sum(by.values()),
                "how": "torch: the device of every parameter and buffer of the module (module.parameters(), "
                       "module.buffers()); the inputs are moved to the backend's device option"}

    def info(self):
        torch = self._torch
        device = self._device
        return {
            "framework": "torch",
            "version": torch.__version__,
            "device": str(device),
            "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "format": self._format,
            "mode": self._mode,
            "channels_last": self._channels_last,
            "compiled": self._compiled,
        }


def _declared_inputs(meta: dict) -> list[dict]:
    declared = meta.get("inputs") or []
    if not declared:
        raise CRError(
            f"torch model {meta.get('name', '?')} declares no inputs; torch files do not say what forward() takes",
            hint="add inputs [{name, shape, dtype}] to the model meta, in forward()'s argument order",
        )
    return [{"name": t["name"], "shape": _dims(t.get("shape")), "dtype": t["dtype"]} for t in declared]


def _dims(shape):
    return None if shape is None else [d if isinstance(d, int) else None for d in shape]


def _import_file(path: str):
    """Import a Python file under a name unique to its path; its directory is importable meanwhile."""
    name = "cr_architecture_" + hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)  # the architecture may import its sibling files
    # no __pycache__ in the component: it would be a file its meta does not list
    was, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        sys.modules[name] = module
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    finally:
        sys.dont_write_bytecode = was
        if folder in sys.path:
            sys.path.remove(folder)
    return module
