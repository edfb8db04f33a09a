"""TensorFlow's profiler: a tf.profiler trace (XPlane) of the host's TensorFlow ops.

tf.profiler.experimental.start/stop writes ``*.xplane.pb`` under the work directory;
the ``/host:CPU`` plane holds one line per thread, with an event per executed op named
``<node name>:<op type>`` ("sequential/conv2d/Conv2D:Conv2D": Keras keeps its layer
names in the node names) and each run's ``cr.query`` TraceMe, the run's marker.
Function-call ops (StatefulPartitionedCall, PartitionedCall) wrap the ops they run and
are left out, so no time is counted twice.
"""
from __future__ import annotations

import glob
import os
import re

from . import Collected, LayerEvent, Profiler, unreadable

_QUERY = "cr.query"
_OP = re.compile(r"^(?P<node>[^\s:][^:]*):(?P<op>[A-Z_][A-Za-z0-9_]*)$")
_WRAPPERS = {"StatefulPartitionedCall", "PartitionedCall", "While", "If", "StatelessWhile", "StatelessIf"}


class TensorflowProfiler(Profiler):
    source = "tf.profiler trace (XPlane host ops)"

    def start(self) -> None:
        import tensorflow as tf

        self._tf = tf
        self._logdir = os.path.join(self.workdir, "tensorflow-profile")
        tf.profiler.experimental.start(self._logdir)

    def run(self, batch):
        with self._tf.profiler.experimental.Trace(_QUERY):
            return self.backend.run(batch)

    def stop(self) -> Collected:
        self._tf.profiler.experimental.stop()
        found = sorted(glob.glob(os.path.join(self._logdir, "**", "*.xplane.pb"), recursive=True), key=os.path.getmtime)
        if not found:
            raise unreadable("tensorflow", self._logdir, "the profiler wrote no *.xplane.pb there")
        return parse(found[-1])


def parse(path: str) -> Collected:
    """Collected from an XPlane file; ProfileUnreadable naming it otherwise."""
    try:
        from tensorflow.tsl.profiler.protobuf import xplane_pb2
    except ImportError as exc:
        raise unreadable("tensorflow", path, f"this TensorFlow has no XPlane reader ({exc})") from None
    space = xplane_pb2.XSpace()
    try:
        with open(path, "rb") as f:
            space.ParseFromString(f.read())
    except Exception as exc:  # noqa: BLE001 - protobuf's DecodeError and OSError alike
        raise unreadable("tensorflow", path, f"{type(exc).__name__}: {exc}") from None
    out = Collected(files=[path])
    for plane in space.planes:
        if not plane.name.startswith("/host:"):
            continue
        names = plane.event_metadata
        for line in plane.lines:
            base = line.timestamp_ns
            for e in line.events:
                name = names[e.metadata_id].name if e.metadata_id in names else ""
                start = base + e.offset_ps // 1000
                if name == _QUERY:
                    out.markers.append(start)
                    continue
                m = _OP.match(name)
                if m is None or m.group("op") in _WRAPPERS:
                    continue
                out.events.append(LayerEvent(name=m.group("node"), op=m.group("op"), start_ns=start,
                                             dur_ns=e.duration_ps // 1000, provider=plane.name.lstrip("/"),
                                             thread=line.name or line.id))
    if not out.markers:
        raise unreadable("tensorflow", path, "it holds no cr.query run marker")
    return out
