"""The LoadGen engine in-process: every scenario on the null backend, through real MLPerf LoadGen."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from cr.errors import CRError
from cr.runtime import loadgen
from cr.runtime.harness import Settings, benchmark
from helpers.harness import Counting, batches, null

pytest.importorskip("mlperf_loadgen")

SHORT = {"min_duration_s": 0.2, "min_queries": 100, "warmup_queries": 5}
CASES = {
    "single-stream": ({}, 1),
    # LoadGen's early stopping wants >= 662 queries for multi-stream's p99, ~460 for server's
    "multi-stream": ({"samples_per_query": 8, "min_queries": 700}, 2),  # 4 batches of 2 a query
    "offline": ({}, 4),
    "server": ({"target_qps": 1000, "min_queries": 600}, 1),
}


def harness_keys(scenario: str, extra: dict, batch_size: int) -> set:
    quick = Settings(scenario=scenario, **{**extra, "min_duration_s": 0, "min_queries": 5, "warmup_queries": 0})
    return set(benchmark(null(), batches(batch_size=batch_size), batch_size, quick).metrics)


@pytest.mark.parametrize("scenario", list(CASES))
def test_each_scenario_runs_through_loadgen(scenario, tmp_path):
    extra, batch_size = CASES[scenario]
    settings = Settings(scenario=scenario, **{**SHORT, **extra})
    backend = Counting(null())
    out = loadgen.run(backend, batches(batch_size=batch_size), batch_size, settings, str(tmp_path / "logs"))
    m = out.metrics

    assert set(m) == harness_keys(scenario, extra, batch_size) | {"engine", "latency_source", "loadgen"}
    if scenario == "server":
        assert set(m["server"]) == {"target_qps", "achieved_qps", "latency_bound_ms", "p99_ms", "queued_queries"}
    assert m["engine"] == "loadgen" and m["scenario"] == scenario
    # the minimums as LoadGen judged them (its clock starts before the SUT's first issue, so
    # on a loaded machine the SUT-measured duration can be a little shorter)
    assert m["queries"] >= settings.min_queries and m["loadgen"]["detail"].get("result_min_duration_met") is not False
    assert m["duration_s"] > 0
    assert len(out.latencies_ns) == m["queries"] == m["latency_ns"]["count"]
    assert m["samples"] == m["queries"] * m["samples_per_query"]
    assert backend.samples == (m["queries"] + m["phases"]["warmup"]["queries"]) * m["samples_per_query"]
    assert m["validity"] == "VALID", m["invalid_reasons"]
    assert m["invalid_reasons"] == []

    lg = m["loadgen"]
    logs = Path(lg["log_dir"])
    assert logs == (tmp_path / "logs").resolve()
    for name in ("mlperf_log_summary.txt", "mlperf_log_detail.txt", "mlperf_log_accuracy.json", "mlperf_log_trace.json"):
        assert (logs / name).is_file(), name
    assert "MLPerf Results Summary" in (logs / "mlperf_log_summary.txt").read_text()
    assert lg["result_validity"] == lg["summary"]["Result is"] == "VALID"
    assert lg["summary"]["Scenario"] == loadgen.LOADGEN_SCENARIOS[scenario]
    assert lg["version"] and lg["trace"] is (scenario != "offline") and lg["errors"] == []
    assert lg["detail"]["effective_min_duration_ms"] == 1000 * settings.min_duration_s

    detail = lg["detail"]
    if scenario == "offline":  # one LoadGen query of many batches; each batch timed by the SUT
        assert m["latency_source"] == "sut"
        assert detail["result_query_count"] == 1 and detail["effective_samples_per_query"] == m["queries"]
        assert m["throughput"]["samples_per_s"] == pytest.approx(lg["summary"]["Samples per second"] * batch_size, rel=0.05)
    else:  # LoadGen's own latencies, read from its trace: they agree with its detail log
        assert m["latency_source"] == "loadgen"
        assert detail["result_query_count"] == m["queries"]
        prefix = "result_%s_query_latency_ns" if scenario == "multi-stream" else "result_%s_latency_ns"
        assert m["latency_ns"]["min"] == detail[prefix % "min"] and m["latency_ns"]["max"] == detail[prefix % "max"]
        assert lg["summary"]["Min latency (ns)"] == m["latency_ns"]["min"]
    if scenario == "multi-stream":
        assert detail["effective_samples_per_query"] == 4 and m["samples_per_query"] == 8
    if scenario == "server":
        assert lg["summary"]["Performance constraints satisfied"] == "Yes"
        assert m["server"]["achieved_qps"] == pytest.approx(1000, rel=0.25)
        assert 0 <= m["server"]["queued_queries"] < m["queries"]


def test_server_at_an_unsustainable_rate_is_invalid_with_loadgen_reason(tmp_path):
    settings = Settings(scenario="server", target_qps=1000, latency_bound_ms=20, min_duration_s=0.25, min_queries=50, warmup_queries=0)
    m = loadgen.run(null(sleep_ms=5), batches(), 1, settings, str(tmp_path)).metrics  # capacity ~190 queries/s
    assert m["validity"] == "INVALID" and m["loadgen"]["result_validity"] == "INVALID"
    assert m["loadgen"]["summary"]["Performance constraints satisfied"] == "NO"
    latency = [r for r in m["invalid_reasons"] if "latency constraint not met" in r]
    assert latency and "over the bound of 20 ms at 1000 queries/s" in latency[0], m["invalid_reasons"]
    assert m["server"]["p99_ms"] > 100  # the queue grows for the whole run, as in cr's own harness
    assert m["server"]["achieved_qps"] < 250
    assert m["server"]["queued_queries"] > 0.9 * m["queries"]


def test_without_the_trace_latencies_come_from_the_sut(tmp_path):
    settings = Settings(**SHORT)
    m = loadgen.run(null(), batches(), 1, settings, str(tmp_path), trace=False).metrics
    assert m["latency_source"] == "sut" and m["loadgen"]["trace"] is False
    assert not (tmp_path / "mlperf_log_trace.json").exists() or (tmp_path / "mlperf_log_trace.json").stat().st_size < 1000
    assert m["queries"] == m["loadgen"]["detail"]["result_query_count"] >= 100
    # The SUT times run() alone; LoadGen's latency also holds its scheduling, so it is never smaller.
    assert m["latency_ns"]["min"] <= m["loadgen"]["detail"]["result_min_latency_ns"]


def test_a_large_run_is_not_traced_by_default(monkeypatch, tmp_path):
    monkeypatch.setattr(loadgen, "TRACE_MAX_SAMPLES", 50)
    m = loadgen.run(null(), batches(), 1, Settings(**SHORT), str(tmp_path)).metrics
    assert m["loadgen"]["trace"] is False and m["latency_source"] == "sut"


class Failing:
    def __init__(self, after: int):
        self.left = after

    def run(self, batch):
        self.left -= 1
        if self.left < 0:
            raise RuntimeError("device lost")


def test_a_backend_error_ends_the_run_and_is_raised(tmp_path):
    started = time.perf_counter()
    with pytest.raises(RuntimeError, match="device lost"):
        # a fixed warm-up of 5: the failure comes inside LoadGen's run, not in the warm-up
        loadgen.run(Failing(after=20), batches(), 1, Settings(**SHORT, warmup_until_stable=False), str(tmp_path))
    assert time.perf_counter() - started < 5  # LoadGen was not left waiting for a query
    assert (tmp_path / "mlperf_log_summary.txt").is_file()


def test_summary_parser_keeps_key_values(tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("MLPerf Results Summary\nScenario : Offline\nSamples per second: 1633.28\nResult is : VALID\n"
                    "  Min duration satisfied : Yes\n * Processed at least 64 queries (314).\nPer-query latency:  \n"
                    "Min latency (ns)                : 562376\nTest Parameters Used\nsamples_per_query : 1\n")
    assert loadgen.read_summary(str(path)) == {
        "Scenario": "Offline", "Samples per second": 1633.28, "Result is": "VALID",
        "Min duration satisfied": "Yes", "Min latency (ns)": 562376,
    }


def test_missing_loadgen_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "mlperf_loadgen", None)  # import raises ImportError
    with pytest.raises(CRError) as err:
        loadgen.run(null(), batches(), 1, Settings(**SHORT), str(tmp_path))
    assert "LoadGen" in err.value.message and "pip install mlcommons-loadgen" in err.value.hint


def test_settings_are_checked_before_loadgen(tmp_path):
    with pytest.raises(CRError, match="target rate"):
        loadgen.run(null(), batches(), 1, Settings(scenario="server"), str(tmp_path))
    with pytest.raises(CRError, match="no input batches"):
        loadgen.run(null(), [], 1, Settings(), str(tmp_path))
