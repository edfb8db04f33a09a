"""PyTorch's profiler (torch.profiler), grouped by module and op.

An eager nn.Module gets a forward pre/post hook on every submodule that opens a
``module::<dotted path>`` record_function range, so each top-level op (an aten op not
called by another op) is attributed to the innermost module it ran in: the layer name is
the module's path ("features.0"), the op the aten op ("aten::conv2d"). A TorchScript
module takes no hooks and its graph keeps no module scopes: its ops are named by op
type and position in the run ("aten::_convolution#1"), which cross-backend matching
pairs by position. record_shapes gives each op's input shapes. On CUDA the device
activity is recorded too and each op carries its device time.
"""
from __future__ import annotations

from . import Collected, LayerEvent, Profiler

_QUERY = "cr.query"
_MODULE = "module::"


class TorchProfiler(Profiler):
    source = "torch.profiler (CPU ops, record_shapes, module scopes)"

    def start(self) -> None:
        import torch

        self._torch = torch
        self._hooks = []
        model = self.backend.model
        if isinstance(model, torch.nn.Module) and not isinstance(model, torch.jit.ScriptModule):
            for path, module in model.named_modules():
                if path:
                    self._hooks.append(module.register_forward_pre_hook(self._enter(path)))
                    self._hooks.append(module.register_forward_hook(self._exit))
        self._open: list = []
        activities = [torch.profiler.ProfilerActivity.CPU]
        device = getattr(self.backend, "_device", None)
        if device is not None and getattr(device, "type", "cpu") == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._prof = torch.profiler.profile(activities=activities, record_shapes=True, with_modules=True)
        self._prof.__enter__()

    def _enter(self, path):
        def hook(module, args):
            scope = self._torch.profiler.record_function(_MODULE + path)
            scope.__enter__()
            self._open.append(scope)
        return hook

    def _exit(self, module, args, output):
        if self._open:
            self._open.pop().__exit__(None, None, None)

    def run(self, batch):
        with self._torch.profiler.record_function(_QUERY):
            return self.backend.run(batch)

    def stop(self) -> Collected:
        self._prof.__exit__(None, None, None)
        for h in self._hooks:
            h.remove()
        return collect(self._prof.events())


def _is_op(name: str) -> bool:
    return "::" in name and not name.startswith(_MODULE)


def collect(function_events) -> Collected:
    """Collected from torch.profiler FunctionEvents: top-level ops, their innermost module."""
    out = Collected()
    counters: dict = {}
    for e in function_events:
        name = e.name
        start = int(e.time_range.start * 1000)
        if name == _QUERY:
            out.markers.append(start)
            counters = {}
            continue
        if not _is_op(name):
            continue
        parent, module, nested = e.cpu_parent, None, False
        while parent is not None:
            pname = parent.name
            if _is_op(pname):
                nested = True
                break
            if module is None and pname.startswith(_MODULE):
                module = pname[len(_MODULE):]
            parent = parent.cpu_parent
        if nested:
            continue
        if module is None:
            k = counters.get(name, 0)
            counters[name] = k + 1
            module = f"{name}#{k}"
        args = {}
        shapes = [s for s in (e.input_shapes or []) if s]
        if shapes:
            args["shapes"] = shapes
        device_us = getattr(e, "device_time_total", 0) or 0
        if device_us:
            args["device_ns"] = int(device_us * 1000)
        out.events.append(LayerEvent(name=module, op=name, start_ns=start,
                                     dur_ns=int((e.time_range.end - e.time_range.start) * 1000),
                                     provider="cuda" if device_us else "cpu", thread=getattr(e, "thread", 0),
                                     args=args or None))
    return out
