"""Input providers: every batch the timed loop will use is built before timing starts.

An InputProvider says how many samples one batch holds and builds the list of batches
(pre-loaded, pre-processed, as the backend's numpy arrays). The harness cycles through
that list; nothing is read, decoded or converted inside the timed region.

Providers in this slice: SyntheticInputs (seeded random arrays of the model's declared
inputs). A dataset provider (samples -> pre-processing pipeline -> batches) implements
the same two members.
"""
from __future__ import annotations

from ..errors import CRError


class InputProvider:
    """Interface: ``batch_size`` (samples per batch) and ``batches()`` (the pre-built list)."""

    batch_size: int = 1

    def batches(self) -> list[dict]:
        raise NotImplementedError


def batch_size_for(specs: list[dict], requested: int | None, ref: str = "the model") -> int:
    """Samples per model call: the model's fixed leading dim, or requested (default 1) when dynamic.

    All inputs share the leading (batch) dim. A fixed one cannot be changed: asking for
    another batch size is an error that names the input.
    """
    fixed = [s for s in specs if s.get("shape") and isinstance(s["shape"][0], int)]
    if not fixed:
        return int(requested or 1)
    if len({s["shape"][0] for s in fixed}) > 1:
        return int(requested or 1)  # no common leading dim: one call counts as one sample
    spec, size = fixed[0], fixed[0]["shape"][0]
    if requested is not None and int(requested) != size:
        raise CRError(
            f"{ref} has a fixed batch of {size} (input {spec['name']!r} has shape {spec['shape']}); batch size {requested} cannot apply",
            hint=f"leave --batch-size out, or give --batch-size {size}",
        )
    return size


class SyntheticInputs(InputProvider):
    """``count`` distinct batches of seeded random data shaped like the declared inputs.

    Dynamic leading dims become batch_size; any other dynamic dim is an error naming the
    input (synthetic data needs a concrete shape). Values: uniform in the spec's ``range``
    [low, high] when it declares one, else standard normal for floats, 0..9 for signed
    ints, 0..255 for uint8, random booleans.
    """

    def __init__(self, specs: list[dict], batch_size: int = 1, seed: int = 0, count: int = 16):
        if not specs:
            raise CRError("the model declares no inputs", hint="add inputs (name, shape, dtype) to the model meta")
        self.specs = specs
        self.batch_size = batch_size
        self.seed = seed
        self.count = max(1, count)

    def _shape(self, spec: dict) -> tuple:
        shape = spec.get("shape")
        if shape is None:
            raise CRError(f"input {spec['name']!r} declares no shape", hint="add its shape to the model meta's inputs")
        out = []
        for i, d in enumerate(shape):
            if isinstance(d, int):
                out.append(d)
            elif i == 0:
                out.append(self.batch_size)
            else:
                raise CRError(
                    f"input {spec['name']!r} has a dynamic dim {d!r} at position {i}; synthetic inputs need a size",
                    hint="give the model a dataset (--dataset REF: its samples set the size); a model whose inputs "
                         "really are of one size declares it in its meta's inputs, and cr compile carries it into "
                         "every compiled version",
                )
        return tuple(out)

    def batches(self) -> list[dict]:
        import numpy as np

        rng = np.random.default_rng(self.seed)
        out = []
        for _ in range(self.count):
            batch = {}
            for spec in self.specs:
                shape, dtype = self._shape(spec), spec["dtype"]
                if dtype == "bfloat16":
                    raise CRError(f"input {spec['name']!r} is bfloat16, which numpy cannot hold", hint="declare float32 or float16")
                kind = np.dtype(dtype).kind
                low, high = spec.get("range") or (None, None)
                if low is not None and kind in "fiu":  # the declared range: uniform in [low, high]
                    value = (rng.uniform(low, high, shape) if kind == "f"
                             else rng.integers(int(low), int(high), shape, endpoint=True)).astype(dtype)
                elif kind == "f":
                    value = rng.standard_normal(shape).astype(dtype)
                elif kind == "b":
                    value = rng.random(shape) < 0.5
                elif kind == "u":
                    value = rng.integers(0, 256, shape).astype(dtype)
                else:
                    value = rng.integers(0, 10, shape).astype(dtype)
                batch[spec["name"]] = np.ascontiguousarray(value)
            out.append(batch)
        return out
