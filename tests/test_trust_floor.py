"""The harness at the framework's floor: each backend's timed window (Backend.timed) gives the
numbers run() gives, --fidelity compares against the framework's own loop (Backend.bare) and
says which loop it was, and two latency modes in one run are flagged in the record."""
from __future__ import annotations

import glob
import json
import os
import random
import time

import numpy as np
import pytest

from cr.cli.trust import fidelity_text, phase_rows
from cr.runtime import modes, registry
from cr.runtime.harness import Settings, benchmark, timed
from cr.runtime.warmup import framework_loop

LENET = glob.glob(os.path.join(os.path.dirname(__file__), "..", "repo", "model", "lenet-digits", "*", ""))[0]
FEW = dict(min_duration_s=0, min_queries=60, warmup_queries=1, warmup_until_stable=False)


def _spin(ns: int) -> None:
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


# -- the mode detector ----------------------------------------------------------------------

def test_two_latency_levels_are_flagged_with_their_medians_and_shares():
    r = random.Random(0)
    lat = [int(r.gauss(22e6, 0.4e6)) for _ in range(600)] + [int(r.gauss(28e6, 0.5e6)) for _ in range(400)]
    r.shuffle(lat)
    found = modes.modes(lat)
    assert found["bimodal"] is True
    assert abs(found["low_p50_ns"] - 22e6) < 0.3e6 and abs(found["high_p50_ns"] - 28e6) < 0.3e6
    assert found["high_share"] == pytest.approx(0.4, abs=0.02) and found["gap"] == pytest.approx(0.27, abs=0.03)


@pytest.mark.parametrize("shape", ["normal", "lognormal", "exponential tail", "uniform", "a 5% slow tail"])
def test_one_level_with_noise_or_a_tail_is_not_flagged(shape):
    r = random.Random(1)
    draw = {
        "normal": lambda: r.gauss(20e3, 1e3),
        "lognormal": lambda: 20e3 * r.lognormvariate(0, 0.3),
        "exponential tail": lambda: 20e3 + r.expovariate(1 / 2e3),
        "uniform": lambda: r.uniform(20e3, 30e3),
        "a 5% slow tail": lambda: r.uniform(40e3, 90e3) if r.random() < 0.05 else r.gauss(20e3, 0.5e3),
    }[shape]
    assert modes.modes([int(draw()) for _ in range(5000)])["bimodal"] is False


def test_a_long_run_is_judged_on_a_sample_of_its_queries():
    from array import array

    r = random.Random(2)
    lat = array("q", (int(r.gauss(20e3, 0.5e3)) if i % 3 else int(r.gauss(30e3, 0.5e3)) for i in range(450_000)))
    found = modes.modes(lat)
    assert found["bimodal"] is True and found["high_share"] == pytest.approx(1 / 3, abs=0.02)


def test_too_few_queries_judge_nothing():
    assert modes.modes([1000, 2000] * 10) is None
    assert modes.account([1000] * 10)["bimodal"] is None


class TwoLevels:
    """A backend that runs at one speed for a block of calls, then at another (a core
    migration or a frequency step half-way)."""

    def __init__(self):
        self.calls = 0

    def run(self, batch):
        self.calls += 1
        _spin(200_000 if (self.calls // 40) % 2 else 500_000)


def test_the_record_carries_the_flag_and_the_libraries_in_import_order():
    out = benchmark(TwoLevels(), [{}], 1, Settings(**{**FEW, "min_queries": 200}))
    found = out.metrics["modes"]
    assert found["bimodal"] is True and found["high_p50_ns"] > 1.8 * found["low_p50_ns"]
    # the watched libraries this process imported (numpy, through the test's imports), nothing else
    assert "numpy" in found["libraries"] and "os" not in found["libraries"] and "pytest" not in found["libraries"]
    rows = dict(phase_rows(out.metrics))
    assert rows["modes"].startswith("TWO MODES") and "ms" in rows["modes"]


# -- fidelity against the framework's own loop -----------------------------------------------

class Wrapped:
    """A framework call of 100 us behind a wrapper that adds 200 us a call (the kind of wrapper
    a backend.run-only fidelity check cannot see)."""

    def run(self, batch):
        _spin(200_000)
        self._framework(batch["x"])

    @staticmethod
    def _framework(x):
        _spin(100_000)

    def bare(self, batches):
        return self._framework, [(b["x"],) for b in batches]


class Unwrapped(Wrapped):
    bare = None


def test_fidelity_measures_the_wrapper_against_the_framework_loop():
    batches = [{"x": i} for i in range(4)]
    fid = benchmark(Wrapped(), batches, 1, Settings(**FEW, fidelity=True)).metrics["fidelity"]
    assert fid["bare"] == "framework" and fid["interleaved"] is True
    assert fid["bare_p50_ns"] < fid["p50_ns"] and fid["ratio"] > 1.8  # 300 us / 100 us, less a loaded machine's noise
    assert fid["delta_ns"] == fid["p50_ns"] - fid["bare_p50_ns"] and fid["scenario_p50_ns"] > 0
    assert "framework's own loop" in fidelity_text(fid)
    # without a framework loop the check times backend.run itself, and says so
    fid = benchmark(Unwrapped(), batches, 1, Settings(**FEW, fidelity=True)).metrics["fidelity"]
    assert fid["bare"] == "backend.run" and fid["interleaved"] is False and fid["ratio"] < 1.8
    assert "backend.run" in fidelity_text(fid)


# -- real backends: same numbers through the timed window ---------------------------------------

def _lenet(name: str):
    meta = json.loads(open(os.path.join(LENET, "meta.json")).read())
    variant = {"torch": "torchscript", "tflite": "tflite", "onnxruntime": None}[name]
    file = meta["file"]
    if variant:
        v = next(v for v in meta["variants"] if v["name"] == variant)
        meta = {**meta, **{k: v[k] for k in ("format", "inputs", "outputs") if k in v}}
        file = v["file"]
    backend = registry.load_backend(name)
    backend.load(os.path.join(LENET, file), {**meta, "_dir": LENET}, {"threads": 1})
    return backend


def _batches(backend, n: int = 5, batch: int = 1) -> list:
    spec = backend.inputs()[0]
    shape = [batch if d is None else d for d in spec["shape"]]
    rng = np.random.default_rng(7)
    return [{spec["name"]: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)]


def _flat(out) -> list:
    return [np.asarray(a) for a in (out if isinstance(out, (list, tuple)) else [out])]


@pytest.mark.parametrize("name", ["torch", "tflite", "onnxruntime"])
def test_the_timed_window_gives_run_s_numbers_on_lenet(name):
    backend = _lenet(name)
    batches = _batches(backend)
    before = [backend.run(b) for b in batches]  # run() is the path validate and predict take
    with timed(backend, batches) as (run, items):
        assert len(items) == len(batches)
        during = [_flat(run(item)) for item in items * 2]  # each item again: inputs made once, reused
        call, by_id = framework_loop(backend, batches, items)
        floor = [_flat(call(*by_id[id(item)])) for item in items]
    for expected, got, bare in zip(before * 2, during, floor * 2):
        assert [a.tolist() for a in expected] == [a.tolist() for a in got] == [a.tolist() for a in bare]
    assert all(isinstance(a, np.ndarray) for out in before for a in out)
    # the window leaves nothing behind: run() afterwards still gives numpy, the same numbers
    again = backend.run(batches[0])
    assert isinstance(again[0], np.ndarray) and [a.tolist() for a in again] == [a.tolist() for a in before[0]]
    backend.close()


def test_torch_holds_inference_mode_for_the_window_only():
    import torch

    backend = _lenet("torch")
    batches = _batches(backend)
    with timed(backend, batches) as (run, items):
        assert torch.is_inference_mode_enabled()
        assert all(isinstance(t, torch.Tensor) for t in items)  # made once, before any query
        run(items[0])
    assert not torch.is_inference_mode_enabled()
    backend.close()


def test_tflite_window_over_batches_of_two_sizes_goes_through_run():
    backend = _lenet("tflite")
    mixed = _batches(backend, 1, 1) + _batches(backend, 1, 2)
    with timed(backend, mixed) as (run, items):
        assert items == mixed  # no single shape to allocate for: run() resizes per batch, as it always has
        outs = [_flat(run(b)) for b in items]
    assert [o[0].shape[0] for o in outs] == [1, 2]
    assert [o[0].tolist() for o in outs] == [backend.run(b)[0].tolist() for b in mixed]
    backend.close()


def test_lenet_record_names_the_framework_loop(run_cr):
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "torch", "--variant", "torchscript", "--threads", "1",
                  "--min-duration", "0.2", "--min-queries", "50", "--warmup", "1", "--fidelity", "--json")
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    r = r[0] if isinstance(r, list) else r
    fid = r["metrics"]["fidelity"]
    assert fid["bare"] == "framework" and fid["interleaved"] is True and fid["bare_p50_ns"] > 0 and fid["queries"] >= 50
    assert "torch" in r["metrics"]["modes"]["libraries"]
