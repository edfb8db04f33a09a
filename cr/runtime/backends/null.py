"""The null backend: no framework. run() returns zeros of the model's declared outputs.

It measures the harness itself, and with ``sleep_ms`` it is a device of known, fixed
service time, which makes scenario tests (server rate, INVALID runs) deterministic.
"""
from __future__ import annotations

import time

from .base import Backend


class NullBackend(Backend):
    name = "null"
    FORMATS = None
    REQUIRES = ()
    PROFILER = "cr.runtime.profiling:ModelOnly"
    OPTIONS = {"sleep_ms": "milliseconds each run() sleeps (default 0: return at once)"}

    def load(self, model_path, meta, options):
        import numpy as np

        self._np = np
        self._sleep = float(options.get("sleep_ms", 0)) / 1000.0
        self._inputs = [dict(t) for t in meta.get("inputs") or []]
        self._outputs = [dict(t) for t in meta.get("outputs") or []]
        self._cache: dict[int, dict] = {}  # batch size -> output arrays, built once

    def inputs(self):
        return [{"name": t["name"], "shape": t.get("shape"), "dtype": t["dtype"]} for t in self._inputs]

    def _zeros(self, n: int) -> dict:
        out = {}
        for t in self._outputs:
            shape = list(t.get("shape") or [])
            if shape and not isinstance(shape[0], int):
                shape[0] = n
            shape = [d if isinstance(d, int) else 1 for d in shape]
            out[t["name"]] = self._np.zeros(shape, dtype=t["dtype"])
        return out

    def run(self, batch):
        if self._sleep:
            time.sleep(self._sleep)
        n = len(next(iter(batch.values()))) if batch else 1
        out = self._cache.get(n)
        if out is None:
            out = self._cache[n] = self._zeros(n)
        return out

    def close(self):
        self._cache = {}

    def info(self):
        return {"framework": "none", "version": None, "sleep_ms": self._sleep * 1000.0}
