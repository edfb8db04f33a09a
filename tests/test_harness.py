"""The harness in-process: statistics against numpy, every scenario on the null backend."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cr.errors import CRError
from cr.runtime import scenarios, stats
from cr.runtime.harness import Settings, benchmark
from cr.runtime.inputs import SyntheticInputs, batch_size_for
from helpers.harness import Counting, DYNAMIC, batches, null


# -- statistics ------------------------------------------------------------------------

@pytest.mark.parametrize("data", [
    np.arange(1, 101),
    np.array([10, 20, 30, 40]),
    np.array([7]),
    np.random.default_rng(3).lognormal(10, 0.5, 10_001).astype(np.int64),
], ids=["1..100", "four", "one", "lognormal"])
def test_summary_matches_numpy(data):
    s = stats.summarize(data)
    assert s["count"] == data.size
    assert s["min"] == data.min() and s["max"] == data.max()
    assert s["mean"] == pytest.approx(data.mean())
    assert s["stdev"] == pytest.approx(data.std(ddof=1) if data.size > 1 else 0.0)
    for name, q in (("p50", 50), ("p90", 90), ("p95", 95), ("p99", 99), ("p99.9", 99.9)):
        assert s[name] == pytest.approx(np.percentile(data, q)), name
    assert s["iqr"] == pytest.approx(np.percentile(data, 75) - np.percentile(data, 25))


def test_summary_known_values():
    s = stats.summarize([10, 20, 30, 40])
    assert (s["p50"], s["iqr"], s["mean"]) == (25.0, 15.0, 25.0)
    assert s["stdev"] == pytest.approx(math.sqrt(500 / 3))
    assert stats.noise(s) == pytest.approx(15 / 25)


def test_noise_flag_and_throughput():
    steady = stats.summarize([100] * 50 + [101] * 50)
    assert stats.noise(steady) < stats.NOISE_THRESHOLD
    assert stats.throughput(1000, 3000, 2_000_000_000) == {"queries_per_s": 500.0, "samples_per_s": 1500.0}
    with pytest.raises(ValueError):
        stats.summarize([])


def test_peak_rss_is_plausible():
    rss = stats.peak_rss_bytes()
    assert rss is None or 10 * 2**20 < rss < 64 * 2**30


# -- inputs ----------------------------------------------------------------------------

def test_synthetic_inputs_are_seeded_and_shaped():
    a, b, c = batches(batch_size=5, seed=1), batches(batch_size=5, seed=1), batches(batch_size=5, seed=2)
    assert a[0]["x"].shape == (5, 4) and a[0]["x"].dtype == np.float32
    assert a[0]["ids"].shape == (5, 2) and a[0]["ids"].dtype == np.int64
    assert all(np.array_equal(p["x"], q["x"]) for p, q in zip(a, b))
    assert not np.array_equal(a[0]["x"], c[0]["x"])
    assert not np.array_equal(a[0]["x"], a[1]["x"])  # distinct batches in the pool


def test_batch_size_rules():
    fixed = [{"name": "float_input", "shape": [3, 2], "dtype": "float32"}]
    assert batch_size_for(fixed, None) == 3
    assert batch_size_for(fixed, 3) == 3
    with pytest.raises(CRError, match="fixed batch of 3.*float_input"):
        batch_size_for(fixed, 8)
    assert batch_size_for(DYNAMIC["inputs"], None) == 1
    assert batch_size_for(DYNAMIC["inputs"], 16) == 16
    with pytest.raises(CRError, match="'x'.*dynamic dim"):
        SyntheticInputs([{"name": "x", "shape": [1, None], "dtype": "float32"}]).batches()


# -- scenarios -------------------------------------------------------------------------

def test_single_stream_meets_min_queries_and_duration():
    backend = Counting(null())
    out = benchmark(backend, batches(), 1, Settings(min_duration_s=0.2, min_queries=50, warmup_queries=7))
    m = out.metrics
    assert m["duration_s"] >= 0.2 and m["queries"] >= 50
    warm = m["phases"]["warmup"]
    assert warm["queries"] >= 7 and backend.calls == m["queries"] + warm["queries"]  # at least 7, then until stable
    assert len(out.latencies_ns) == m["queries"] == m["latency_ns"]["count"]
    assert m["validity"] == "VALID" and m["scenario"] == "single-stream"
    assert m["throughput"]["queries_per_s"] == pytest.approx(m["queries"] / m["duration_s"])


def test_min_queries_dominates_when_duration_is_short():
    out = benchmark(null(), batches(), 1, Settings(min_duration_s=0, min_queries=5000, warmup_queries=0))
    assert out.metrics["queries"] == 5000  # stops at the first query meeting both minimums


def test_min_duration_dominates_with_a_slow_backend():
    out = benchmark(null(sleep_ms=20), batches(), 1, Settings(min_duration_s=0.3, min_queries=2, warmup_queries=0))
    m = out.metrics
    assert m["duration_s"] >= 0.3 and 10 <= m["queries"] <= 16
    assert m["latency_ns"]["p50"] >= 20e6


def test_multi_stream_runs_n_samples_per_query():
    backend = Counting(null())
    out = benchmark(backend, batches(batch_size=2), 2, Settings(scenario="multi-stream", samples_per_query=8,
                                                                  min_duration_s=0.1, min_queries=20, warmup_queries=3))
    m = out.metrics
    assert m["samples_per_query"] == 8 and m["samples"] == 8 * m["queries"]
    assert backend.calls == 4 * (m["queries"] + m["phases"]["warmup"]["queries"]) and backend.samples == 2 * backend.calls
    assert m["duration_s"] >= 0.1 and m["queries"] >= 20


def test_offline_batches_back_to_back():
    backend = Counting(null(sleep_ms=1))
    out = benchmark(backend, batches(batch_size=32), 32, Settings(scenario="offline", min_duration_s=0.1, min_queries=10, warmup_queries=0))
    m = out.metrics
    assert m["samples"] == 32 * m["queries"] and backend.samples == m["samples"]
    assert m["throughput"]["samples_per_s"] == pytest.approx(32 * m["throughput"]["queries_per_s"])
    assert m["throughput"]["samples_per_s"] > 10_000  # 32 samples per ~1 ms


def test_poisson_arrivals_are_seeded_with_the_right_rate():
    take = lambda seed: [t for _, t in zip(range(20_000), scenarios.poisson_arrivals(500.0, seed))]
    a, b, c = take(1), take(1), take(2)
    assert a == b and a != c
    gaps = np.diff([0] + a) / 1e9
    assert gaps.mean() == pytest.approx(1 / 500, rel=0.03)
    assert gaps.std() == pytest.approx(1 / 500, rel=0.05)  # exponential: sd == mean


def test_server_achieves_the_target_rate_when_sustainable():
    settings = Settings(scenario="server", target_qps=100, latency_bound_ms=50, min_duration_s=1.5, min_queries=20, warmup_queries=2, seed=7)
    m = benchmark(null(sleep_ms=5), batches(), 1, settings).metrics  # capacity ~190 queries/s
    # The seeded process decides how many queries arrive before the deadline.
    arrived = sum(1 for _, t in zip(range(10_000), scenarios.poisson_arrivals(100, 7)) if t <= 1.5e9)
    assert abs(m["queries"] - arrived) <= 2
    assert m["server"]["achieved_qps"] == pytest.approx(100, rel=0.25)
    assert m["validity"] == "VALID", m["invalid_reasons"]
    assert 5 <= m["server"]["p99_ms"] < 50


def test_server_unsustainable_rate_is_invalid_with_observed_p99():
    settings = Settings(scenario="server", target_qps=1000, latency_bound_ms=20, min_duration_s=0.5, min_queries=20, warmup_queries=0)
    m = benchmark(null(sleep_ms=5), batches(), 1, settings).metrics  # capacity ~190 queries/s
    assert m["validity"] == "INVALID"
    assert m["server"]["p99_ms"] > 100  # the queue grows for the whole run
    assert m["server"]["achieved_qps"] < 250
    assert f"{m['server']['p99_ms']:.3f} ms exceeds the bound of 20 ms" in m["invalid_reasons"][0]


def test_settings_are_checked():
    with pytest.raises(CRError, match="target rate"):
        benchmark(null(), batches(), 1, Settings(scenario="server"))
    with pytest.raises(CRError, match="unknown scenario"):
        benchmark(null(), batches(), 1, Settings(scenario="burst"))


def test_null_backend_returns_declared_zeros():
    backend = null()
    out = backend.run(batches(batch_size=6)[0])
    assert out["y"].shape == (6, 3) and out["y"].dtype == np.float32 and not out["y"].any()
