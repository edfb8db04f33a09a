"""Numbers a reader can trust: phases (load, first inference, warm-up to convergence, steady
state), the harness self-check (--fidelity), and significance-gated comparison with likely
causes (cr results compare, cr reproduce)."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from array import array

import pytest
from conftest import HEAVY, IMPORT_PROBE

from cr.errors import CRError
from cr.results.causes import likely_causes, state_notes
from cr.results.significance import MIN_SAMPLES, compare_pair, quantile, report
from cr.run.reproduce import compare as reproduce_compare
from cr.runtime.harness import Settings, benchmark

QUICK = ["--min-duration", "0.3", "--min-queries", "50"]


# -- warm-up until stable ----------------------------------------------------------------

def _spin(ns: int) -> None:
    end = time.perf_counter_ns() + ns
    while time.perf_counter_ns() < end:
        pass


class Settling:
    """A backend whose calls get faster from slow_ns to fast_ns over the first k calls, then
    stay there (caches filling, allocations reused, a JIT at work)."""

    def __init__(self, k: int, slow_ns: int = 1_500_000, fast_ns: int = 300_000):
        self.k, self.slow, self.fast, self.calls = k, slow_ns, fast_ns, 0

    def run(self, batch):
        self.calls += 1
        left = max(0, self.k - self.calls) / self.k if self.k else 0
        _spin(int(self.fast + (self.slow - self.fast) * left))


class Drifting:
    """A backend that never settles: every call `rate` slower than the one before (1%)."""

    def __init__(self, start_ns: int = 20_000, rate: float = 0.01):
        self.ns, self.calls, self.rate = float(start_ns), 0, rate

    def run(self, batch):
        self.calls += 1
        self.ns *= 1 + self.rate
        _spin(int(self.ns))


FEW = dict(min_duration_s=0, min_queries=20, warmup_queries=1)


@pytest.mark.parametrize("k", [35, 80])
def test_warm_up_converges_soon_after_the_latency_settles(k):
    backend = Settling(k)
    out = benchmark(backend, [{}], 1, Settings(**FEW, warmup_window=10, warmup_threshold=0.05, warmup_max_queries=500))
    warm = out.metrics["phases"]["warmup"]
    assert warm["converged"] is True and warm["stopped_by"] == "converged"
    # the first whole window after call k, compared with the one before, is the earliest stable point
    assert k < warm["converged_at"] <= k + 30, warm
    assert warm["queries"] == warm["converged_at"] and backend.calls == warm["queries"] + out.metrics["queries"]
    assert warm["window"] == 10 and warm["threshold"] == 0.05 and warm["max_queries"] == 500
    medians = warm["window_medians_ns"]
    assert medians[0] > 900_000 and medians[-1] < 400_000  # the convergence curve, slow to fast
    # the first inference is the first warm-up query (a slow one); the steady state is fast
    phases = out.metrics["phases"]
    assert phases["first_inference_in"] == "warmup" and phases["first_inference_s"] >= 1.3e-3
    assert phases["steady"]["queries"] == out.metrics["queries"] and phases["steady"]["p50_ns"] < 600_000


def test_a_warm_up_that_never_settles_is_bounded_and_says_so():
    # 5% a call (consecutive window medians ~60% apart): a drift no scheduler noise on a loaded
    # machine hides (at 1% two windows of a busy 2-CPU machine's preempted 20-60 us spins could
    # look alike, and the warm-up "settled": seen in CI with the whole suite running)
    backend = Drifting(start_ns=100_000, rate=0.05)
    out = benchmark(backend, [{}], 1, Settings(**FEW, warmup_max_queries=120, warmup_max_s=30))
    warm = out.metrics["phases"]["warmup"]
    assert warm["converged"] is False and warm["converged_at"] is None
    assert warm["stopped_by"] == "max_queries" and warm["queries"] == 120
    backend = Drifting(start_ns=200_000, rate=0.05)
    out = benchmark(backend, [{}], 1, Settings(**FEW, warmup_max_queries=100_000, warmup_max_s=0.2))
    warm = out.metrics["phases"]["warmup"]
    assert warm["converged"] is False and warm["stopped_by"] == "max_s" and 0.2 <= warm["seconds"] < 2


def test_warm_up_settings_old_and_new():
    # at least warmup_queries, even when stable sooner
    out = benchmark(Settling(0), [{}], 1, Settings(min_duration_s=0, min_queries=5, warmup_queries=150))
    warm = out.metrics["phases"]["warmup"]
    assert warm["queries"] == 150 and warm["converged"] is True and warm["converged_at"] < 150
    assert warm["stopped_by"] == "warmup_queries"
    # the fixed count of before
    backend = Settling(1000)
    out = benchmark(backend, [{}], 1, Settings(min_duration_s=0, min_queries=5, warmup_queries=7, warmup_until_stable=False))
    warm = out.metrics["phases"]["warmup"]
    assert warm["queries"] == 7 and warm["converged"] is None and backend.calls == 7 + out.metrics["queries"]
    # no warm-up: the first inference is the first timed query
    out = benchmark(Settling(10), [{}], 1, Settings(min_duration_s=0, min_queries=5, warmup_queries=0))
    phases = out.metrics["phases"]
    assert phases["warmup"]["stopped_by"] == "disabled" and phases["warmup"]["queries"] == 0
    assert phases["first_inference_in"] == "steady" and phases["first_inference_s"] >= 1.3e-3


@pytest.mark.parametrize("bad, words", [
    (dict(warmup_window=1), "warmup_window"),
    (dict(warmup_threshold=1.5), "warmup_threshold"),
    (dict(warmup_queries=50, warmup_max_queries=10), "warmup_max_queries"),
    (dict(scenario="server", target_qps=10, fidelity=True), "server"),
])
def test_warm_up_and_fidelity_settings_that_cannot_work_are_refused(bad, words):
    with pytest.raises(CRError, match=words):
        Settings(**bad).check()


def test_fidelity_of_the_harness_on_a_backend_of_known_cost():
    out = benchmark(Settling(0, fast_ns=200_000), [{}], 1, Settings(min_duration_s=0.2, min_queries=100, warmup_queries=10, fidelity=True))
    fid = out.metrics["fidelity"]
    assert fid["queries"] == out.metrics["queries"] and fid["bare_p50_ns"] >= 200_000
    assert fid["p50_ns"] == out.metrics["latency_ns"]["p50"]
    assert fid["ratio"] == pytest.approx(fid["p50_ns"] / fid["bare_p50_ns"]) and 0.8 < fid["ratio"] < 1.25


def test_loadgen_engine_records_phases_and_fidelity(tmp_path):
    pytest.importorskip("mlperf_loadgen")
    from cr.runtime import loadgen

    out = loadgen.run(Settling(30), [{}], 1, Settings(min_duration_s=0.2, min_queries=50, warmup_queries=1, fidelity=True),
                      str(tmp_path / "logs"))
    warm = out.metrics["phases"]["warmup"]
    assert warm["converged"] is True and 30 < warm["converged_at"] <= 60
    assert out.metrics["fidelity"]["ratio"] > 0


# -- real benchmarks ------------------------------------------------------------------------

def _bench(run_cr, *args) -> dict:
    done = run_cr("benchmark", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_null_backend_record_carries_sensible_phases(run_cr):
    r = _bench(run_cr, "model", "iris-logreg", "--backend", "null", *QUICK)
    m = r["metrics"]
    phases = m["phases"]
    assert phases["load_s"] > 0 and phases["inputs_s"] >= 0 and phases["first_inference_s"] > 0
    warm = phases["warmup"]
    assert warm["queries"] >= 100 and isinstance(warm["converged"], bool) and warm["until_stable"] is True
    assert phases["steady"] == {"queries": m["queries"], "seconds": m["duration_s"], "p50_ns": m["latency_ns"]["p50"],
                                "latencies": "latency_ns"}
    assert "fidelity" not in m  # only when asked
    shown = run_cr("results", "show", r["uid"])
    assert shown.returncode == 0 and "warm-up" in shown.stdout and "first inference" in shown.stdout and "load" in shown.stdout


@pytest.mark.slow
def test_lenet_on_onnxruntime_phases_and_fidelity(run_cr):
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--threads", "1", *QUICK, "--fidelity")
    assert done.returncode == 0, done.stderr
    assert "warm-up" in done.stdout and "fidelity" in done.stdout and "cr p50 / bare loop p50" in done.stdout
    listed = json.loads(run_cr("results", "list", "--json").stdout)
    r = json.loads(run_cr("results", "show", listed[0]["uid"], "--json").stdout)
    m = r["metrics"]
    assert r["config"]["fidelity"] is True
    # loading onnxruntime and the model costs far more than one steady-state inference
    assert m["phases"]["load_s"] > m["latency_ns"]["p50"] / 1e9
    assert m["phases"]["first_inference_s"] > 0
    fid = m["fidelity"]
    assert fid["queries"] > 0 and fid["bare_p50_ns"] > 0
    assert 0.5 < fid["ratio"] < 2.0  # a loose bound on a shared machine: the harness adds ~nothing


# -- significance -------------------------------------------------------------------------

def _record(uid: str, lat, scenario="single-stream", **extra) -> dict:
    """A record whose figures are those the harness computes from all of lat (the points the
    verdicts are centred on)."""
    mean = sum(lat) / len(lat)
    ordered = sorted(lat)
    figures = {name: quantile(ordered, q) for name, q in (("p50", .5), ("p90", .9), ("p99", .99))}
    rec = {"uid": uid, "status": "ok", "action": "benchmark", "raw": {},
           "config": {"scenario": scenario, "threads": 1, "batch_size": 1},
           "backend": {"name": "onnxruntime", "info": {"framework": "onnxruntime", "version": "1.32.0"}},
           "platform": {"fingerprint": "f00d", "os": "linux", "arch": "x86_64"},
           "metrics": {"scenario": scenario, "latency_ns": {**figures, "mean": mean},
                       "throughput": {"queries_per_s": 1e9 / mean, "samples_per_s": 1e9 / mean}}}
    for key, value in extra.items():
        rec[key] = value
    return rec


def _samples(seed: int, center: float, n: int = 3000, spread: float = 0.04) -> array:
    rng = random.Random(seed)
    return array("q", (int(center * rng.lognormvariate(0, spread)) for _ in range(n)))


def test_bootstrap_verdicts_on_synthetic_samples():
    a, slow, same = _samples(1, 1e6), _samples(2, 1.2e6), _samples(3, 1e6)
    pair = compare_pair(_record("a", a), _record("b", slow), a, slow)
    verdicts = {m["metric"]: m["verdict"] for m in pair["metrics"]}
    assert verdicts == {"p50_ns": "slower", "p90_ns": "slower", "p99_ns": "slower", "mean_ns": "slower",
                        "throughput_qps": "slower"} and pair["beyond_noise"]
    p50 = pair["metrics"][0]
    assert p50["ci"][0] <= p50["ratio"] <= p50["ci"][1] and 1.15 < p50["ratio"] < 1.25
    back = compare_pair(_record("b", slow), _record("a", a), slow, a)
    assert {m["verdict"] for m in back["metrics"]} == {"faster"}
    pair = compare_pair(_record("a", a), _record("c", same), a, same)
    assert {m["verdict"] for m in pair["metrics"]} == {"inconclusive"} and not pair["beyond_noise"]
    # seeded: the same records give the same interval
    assert compare_pair(_record("a", a), _record("c", same), a, same) == pair


def test_a_small_real_difference_is_not_overclaimed():
    """2% slower: real, but inside the run-to-run noise band: inconclusive."""
    a, b = _samples(1, 1e6, spread=0.01), _samples(2, 1.02e6, spread=0.01)
    p50 = compare_pair(_record("a", a), _record("b", b), a, b)["metrics"][0]
    assert 1.01 < p50["ci"][0] and p50["verdict"] == "inconclusive"


def test_time_correlated_noise_widens_the_interval():
    """A run with a slow stretch (a neighbour for a few seconds) is judged by blocks of time,
    so its interval is wider than the one of the same samples shuffled."""
    rng = random.Random(5)
    base = _samples(1, 1e6, spread=0.02)
    stretch = array("q", list(base[:1500]) + [int(x * 1.15) for x in base[1500:2000]] + list(base[2000:]))
    shuffled = array("q", stretch)
    rng.shuffle(shuffled)
    ref = _samples(9, 1e6, spread=0.02)
    width = {}
    for name, lat in (("ordered", stretch), ("shuffled", shuffled)):
        ci = compare_pair(_record("a", ref), _record("b", lat), ref, lat)["metrics"][0]["ci"]
        width[name] = ci[1] - ci[0]
    assert width["ordered"] > 1.5 * width["shuffled"]


def test_without_raw_samples_the_interval_is_refused_with_the_reason():
    a = _samples(1, 1e6)
    pair = compare_pair(_record("a", a), {**_record("b", a), "raw": None}, a, None)
    assert pair["metrics"] == [] and "result b carries no raw latencies" in pair["missing"] and "--no-raw" in pair["missing"]
    few = a[:MIN_SAMPLES - 1]
    assert f"at least {MIN_SAMPLES}" in compare_pair(_record("a", a), _record("b", few), a, few)["missing"]
    failed = {**_record("b", a), "status": "failed"}
    assert "status failed" in compare_pair(_record("a", a), failed, a, None)["missing"]


def test_server_throughput_is_not_judged():
    a, b = _samples(1, 1e6), _samples(2, 1.3e6)
    pair = compare_pair(_record("a", a, "server"), _record("b", b, "server"), a, b)
    tp = [m for m in pair["metrics"] if m["metric"] == "throughput_qps"][0]
    assert tp["verdict"] is None and "arrival rate" in tp["why"]


# -- likely causes ------------------------------------------------------------------------

def _machine(share=0.01, **kw) -> dict:
    summary = {"governor": "performance", "freq_mhz_max": 3000.0, "cpu_other_share": share, "throttled": False,
               "temp_c_max": 50.0, "swap_activity": False, "load_avg_start": 0.1}
    summary.update(kw)
    return {"summary": summary, "start": {}, "end": {}}


def test_background_load_is_the_first_cause_of_a_slower_busy_run():
    a, b = _samples(1, 1e6), _samples(2, 1.4e6)
    quiet = _record("a", a, machine=_machine(0.01))
    busy = _record("b", b, machine=_machine(0.6, freq_mhz_max=2500.0))
    out = report([quiet, busy], [a, b])
    pair = out["pairs"][0]
    assert out["confidence"] == 0.95 and pair["beyond_noise"]
    causes = [c["cause"] for c in pair["likely_causes"]]
    assert causes[0] == "background CPU load" and "60%" in pair["likely_causes"][0]["detail"]
    assert "different CPU frequency" in causes and pair["notes"] == []
    # the same machine states the other way round: the busy run was the faster one, so its
    # load does not explain the difference
    pair = report([_record("a", b, machine=_machine(0.01)), _record("b", a, machine=_machine(0.6))], [b, a])["pairs"][0]
    assert "background CPU load" not in [c["cause"] for c in pair["likely_causes"]]


def test_causes_are_ranked_configuration_and_software_before_machine_state():
    a, b = _samples(1, 1e6), _samples(2, 1.4e6)
    base = _record("a", a, machine=_machine(0.01))
    other = _record("b", b, machine=_machine(0.5, throttled=True, governor="powersave"))
    other["config"] = {**other["config"], "threads": 4}
    other["backend"] = {"name": "onnxruntime", "info": {"framework": "onnxruntime", "version": "1.20.1"}}
    pair = compare_pair(base, other, a, b)
    causes = likely_causes(base, other, pair)
    assert [c["cause"] for c in causes] == ["different thread count", "different software versions", "throttling",
                                           "background CPU load", "different CPU governor"]
    assert "threads 1 (A) vs 4 (B)" in causes[0]["detail"] and "onnxruntime 1.32.0 (A) vs 1.20.1 (B)" in causes[1]["detail"]
    other["platform"] = {"fingerprint": "beef", "os": "linux", "arch": "aarch64"}
    assert likely_causes(base, other, pair)[0]["cause"] == "different platform"


def test_records_without_machine_state_say_what_could_not_be_checked():
    a, b = _samples(1, 1e6), _samples(2, 1.4e6)
    notes = state_notes(_record("a", a), _record("b", b, machine=_machine()))
    assert len(notes) == 1 and "no machine state recorded in a" in notes[0]
    pair = report([_record("a", a), _record("b", b)], [a, b])["pairs"][0]
    assert pair["beyond_noise"] and pair["likely_causes"] == [] and pair["notes"]


def test_reproduce_gives_each_benchmark_a_verdict_against_its_reference():
    a, b = _samples(1, 1e6), _samples(2, 1.5e6)
    ref, here = _record("aaaa", a, machine=_machine(0.01)), _record("bbbb", b, machine=_machine(0.7))
    ref["started"], here["started"] = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"
    lat = {"aaaa": a, "bbbb": b}
    out = reproduce_compare([ref], [here], {}, lambda r: lat.get(r["uid"]))
    sig = out["performance"][0]["significance"]
    assert sig["baseline"] == "aaaa" and sig["uid"] == "bbbb" and sig["metrics"][0]["verdict"] == "slower"
    assert sig["likely_causes"][0]["cause"] == "background CPU load" and sig["confidence"] == 0.95
    assert out["outcome"] == "PASS"  # performance is shown, judged only against a declared tolerance
    line = out["lines"][0]
    assert line["verdict"] == "PASS" and line["performance"][0]["comparison"] == "slower"
    assert line["performance"][0]["ci"] == sig["metrics"][0]["ci"] and "no tolerance declared" in line["rule"]
    sig = reproduce_compare([ref], [here], {})["performance"][0]["significance"]
    assert sig["metrics"] == [] and "no raw latencies" in sig["missing"]


# -- the CLI --------------------------------------------------------------------------------

def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="needs /proc/stat to tell whether the machine is quiet")
def test_two_runs_of_the_same_model_are_not_called_very_different(run_cr):
    """Two identical runs on a quiet machine may differ by a few percent (and then be 'slower'
    or 'faster' by a little); what must not happen is a confident verdict of a large
    difference. On a machine that other work keeps busy, a large difference is real: the test
    measures the other processes' share of the CPU and asks for quiet only when it had it."""
    args = ("model", "lenet-digits", "--backend", "onnxruntime", "--threads", "1", "--min-duration", "1", "--min-queries", "500")

    def pair_of_runs():
        busy0, total0 = _cpu_jiffies()
        ours0 = sum(os.times()[2:4])
        uids = [_bench(run_cr, *args)["uid"] for _ in range(2)]
        busy1, total1 = _cpu_jiffies()
        ticks = os.sysconf("SC_CLK_TCK")
        others = max(0.0, (busy1 - busy0) - (sum(os.times()[2:4]) - ours0) * ticks) / max(1, total1 - total0)
        done = run_cr("results", "compare", *uids, "--json")
        assert done.returncode == 0, done.stderr
        p50 = json.loads(done.stdout)["significance"]["pairs"][0]["metrics"][0]
        assert p50["metric"] == "p50_ns" and p50["verdict"] in ("faster", "slower", "inconclusive")
        assert p50["ci"][0] <= p50["ratio"] <= p50["ci"][1]
        return uids, others, p50

    def far_apart(p50):
        return p50["verdict"] != "inconclusive" and not (0.8 < p50["ci"][0] and p50["ci"][1] < 1.25)

    uids, others, p50 = pair_of_runs()
    text = run_cr("results", "compare", *uids)
    assert "p50 latency" in text.stdout and "95% interval" in text.stdout
    if others > 0.10:
        pytest.skip(f"the machine was not quiet: other processes used {100 * others:.0f}% of its CPU during the runs")
    # A virtual machine's speed can change under it (a neighbour's load shows in no counter of
    # ours: seen in CI, one pair's baseline p50 16.3 us, the next pair's 11.1 us): then the
    # verdict is right. Confidently far apart in three quiet pairs in a row is what would be the
    # verdict's fault (a verdict that calls every pair of equal runs very different).
    seen = [p50]
    while far_apart(seen[-1]) and len(seen) < 3:
        _, others, again = pair_of_runs()
        if others > 0.10:
            return
        seen.append(again)
    assert not far_apart(seen[-1]), seen


_BUSY = "import time\nend = time.time() + 120\nwhile time.time() < end:\n    pass\n"


@pytest.mark.slow
def test_a_run_beside_busy_loops_names_background_load_first(run_cr):
    """The issue's acceptance case: a benchmark with every core kept busy by loops this test
    starts, against one without; the difference is beyond noise and its first likely cause
    is the background load. Needs the machine summary the host-side monitor records."""
    # two intra-op threads on batches of 64: a run that needs every core, so loops on every
    # core slow it beyond doubt (one thread on a 10 us query often keeps its p50 under load,
    # and a p50 that does not move leaves nothing for the causes to explain)
    args = ("model", "lenet-digits", "--backend", "onnxruntime", "--threads", str(max(2, os.cpu_count() or 2)),
            "--batch-size", "64", "--min-duration", "1", "--min-queries", "500")
    quiet = _bench(run_cr, *args)
    summary = (quiet.get("machine") or {}).get("summary")
    if not isinstance(summary, dict) or summary.get("cpu_other_share") is None:
        pytest.skip("this build records no machine.summary.cpu_other_share (the host-side monitor)")
    if summary["cpu_other_share"] > 0.3:
        pytest.skip(f"the machine is not quiet: other processes used {100 * summary['cpu_other_share']:.0f}% of its CPU")
    loops = [subprocess.Popen([sys.executable, "-c", _BUSY]) for _ in range(os.cpu_count() or 2)]
    try:
        busy = _bench(run_cr, *args)
    finally:
        for p in loops:
            p.kill()
            p.wait()
    done = run_cr("results", "compare", quiet["uid"], busy["uid"], "--json")
    pair = json.loads(done.stdout)["significance"]["pairs"][0]
    assert pair["beyond_noise"], pair["metrics"]
    assert pair["likely_causes"][0]["cause"] == "background CPU load", pair["likely_causes"]


@pytest.mark.parametrize("args, words", [
    (("--warmup", "50", "--warmup-max-queries", "10"), "warmup_max_queries (10) is below warmup_queries (50)"),
    (("--scenario", "server", "--target-qps", "10", "--fidelity"), "the server scenario's latencies include queueing"),
])
def test_benchmark_settings_that_cannot_work_are_refused_before_running(run_cr, args, words):
    done = run_cr("benchmark", "model", "iris-logreg", "--backend", "null", *QUICK, *args)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Error: " in done.stderr and words in done.stderr and "Hint:" in done.stderr
    assert json.loads(run_cr("results", "list", "--json").stdout) == []  # no failed run stored: none started


def test_compare_of_a_result_without_raw_samples_says_why_there_is_no_interval(run_cr, tmp_path):
    r = _bench(run_cr, "model", "iris-logreg", "--backend", "null", *QUICK)
    exported = tmp_path / "summary.json"
    assert run_cr("results", "export", "--format", "json", "--no-raw", "-o", exported).returncode == 0
    record = json.loads(exported.read_text())[0]
    record["uid"] = "0123456789abcdef"
    (tmp_path / "copy.json").write_text(json.dumps(record))
    assert run_cr("results", "add", tmp_path / "copy.json").returncode == 0
    done = run_cr("results", "compare", r["uid"], "0123456789abcdef")
    assert done.returncode == 0, done.stderr
    assert "no confidence interval: result 0123456789abcdef carries no raw latencies" in done.stdout
    pair = json.loads(run_cr("results", "compare", r["uid"], "0123456789abcdef", "--json").stdout)["significance"]["pairs"][0]
    assert pair["missing"] and pair["metrics"] == []


def test_results_compare_imports_no_framework(run_cr, cr_home, tmp_path):
    r = _bench(run_cr, "model", "iris-logreg", "--backend", "null", *QUICK)
    s = _bench(run_cr, "model", "iris-logreg", "--backend", "null", *QUICK)
    decoys = tmp_path / "decoys"
    for name in HEAVY:
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text("")
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(out), json.dumps(["results", "compare", r["uid"], s["uid"]])],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "CR_HOME": str(cr_home), "PYTHONPATH": str(decoys) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0
    top = {m.split(".")[0] for m in result["modules"]}
    assert "cr" in top and not top & set(HEAVY), sorted(top & set(HEAVY))
