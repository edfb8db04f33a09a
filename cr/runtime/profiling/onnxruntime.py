"""ONNX Runtime's own profiler: SessionOptions.enable_profiling and its JSON file.

The session is opened with profiling on (load_options: the backend's ``profile`` and
``profile_prefix`` options), so ONNX Runtime also records the warm-up runs: align()
keeps the last runs, which are the profiled queries. Each node event ("cat": "Node",
"name": "<node>_kernel_time") gives the node name, its op type (after graph
optimisation: a FusedConv is a Conv with its activation folded in), the execution
provider and the input shapes; each "model_run" event is a run's marker.
"""
from __future__ import annotations

import json
import os

from . import Collected, LayerEvent, Profiler, unreadable

_SUFFIX = "_kernel_time"


class OnnxruntimeProfiler(Profiler):
    source = "onnxruntime SessionOptions.enable_profiling (node events)"
    UNPROFILED_BASELINE = False  # the session profiles from its creation on

    @classmethod
    def load_options(cls, workdir):
        return {"profile": True, "profile_prefix": os.path.join(workdir, "onnxruntime-profile")}

    def stop(self) -> Collected:
        session = self.backend.session
        path = session.end_profiling()
        return parse(path)


def parse(path: str) -> Collected:
    """Collected from ONNX Runtime's profile file; ProfileUnreadable naming it otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise unreadable("onnxruntime", path, getattr(exc, "strerror", None) or str(exc)) from None
    if isinstance(data, dict):
        data = data.get("traceEvents")
    if not isinstance(data, list):
        raise unreadable("onnxruntime", path, f"expected a list of trace events, found {type(data).__name__}")
    out = Collected(files=[path])
    try:
        for e in data:
            if not isinstance(e, dict):
                continue
            cat, name = e.get("cat"), str(e.get("name", ""))
            if cat == "Session" and name == "model_run":
                out.markers.append(int(float(e["ts"]) * 1000))
            elif cat == "Node" and name.endswith(_SUFFIX):
                args = e.get("args") or {}
                extra = {}
                shapes = args.get("input_type_shape")
                if shapes:
                    extra["shapes"] = shapes
                out.events.append(LayerEvent(name=name[:-len(_SUFFIX)], op=str(args.get("op_name", "?")),
                                             start_ns=int(float(e["ts"]) * 1000), dur_ns=int(float(e["dur"]) * 1000),
                                             provider=args.get("provider"), thread=e.get("tid", 0), args=extra or None))
    except (KeyError, TypeError, ValueError) as exc:
        raise unreadable("onnxruntime", path, f"an event lacks {exc}") from None
    if not out.markers:
        raise unreadable("onnxruntime", path, "it holds no model_run event")
    return out
