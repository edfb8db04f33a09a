"""A counting backend and batch helpers for harness and LoadGen tests."""
from __future__ import annotations

from cr.runtime.inputs import SyntheticInputs
from cr.runtime.registry import load_backend


DYNAMIC = {
    "inputs": [{"name": "x", "shape": [None, 4], "dtype": "float32"}, {"name": "ids", "shape": ["batch", 2], "dtype": "int64"}],
    "outputs": [{"name": "y", "shape": [None, 3], "dtype": "float32"}],
}


class Counting:
    """Wraps a backend and counts run() calls and samples (first dim of the first input)."""

    def __init__(self, inner):
        self.inner, self.calls, self.samples = inner, 0, 0

    def run(self, batch):
        self.calls += 1
        self.samples += len(next(iter(batch.values())))
        return self.inner.run(batch)


def null(meta=DYNAMIC, **options):
    backend = load_backend("null")
    backend.load(None, meta, options)
    return backend


def batches(meta=DYNAMIC, batch_size=1, seed=0, count=4):
    return SyntheticInputs(meta["inputs"], batch_size, seed=seed, count=count).batches()
