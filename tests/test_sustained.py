"""Sustained runs (docs/sustained.md): the latency curve over time with the machine's state,
throttling onset and drift, refused durations, and a campaign's cold vs sustained rankings."""
from __future__ import annotations

import json
import random
from array import array

import pytest

from conftest import make_component
from helpers.campaign import null_repo
from helpers.dashboard import PLATFORMS, _open, _wait, browser, write  # noqa: F401  (browser: a fixture)

from cr.errors import CRError
from cr.results import sustained as S


def _refused(done, *words):
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert sum(ln.startswith("Error:") for ln in lines) == 1, done.stderr
    assert any(ln.startswith("Hint:") for ln in lines), done.stderr
    assert "Traceback" not in done.stderr
    for w in words:
        assert w in done.stderr, (w, done.stderr)


# -- a real run ------------------------------------------------------------------------------

def test_a_short_sustained_run_records_the_curve_the_state_and_the_verdict(run_cr):
    done = run_cr("benchmark", "model:lenet-digits", "--backend", "onnxruntime", "--sustained", "4s",
                  "--sustained-window", "1s", "--threads", "1", "--json", timeout=180)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    m = record["metrics"]
    block = m["sustained"]
    assert record["config"]["sustained_s"] == 4 and m["settings"]["sustained_window_s"] == 1
    assert m["stopped_by"] == "sustained"
    windows = block["windows"]
    assert len(windows) == 4 and block["window_s"] == 1
    # the windows partition the run: every timed query is in exactly one window
    assert sum(w["queries"] for w in windows) == m["queries"]
    assert all(w["queries"] > 0 and w["p50_ns"] <= w["p99_ns"] for w in windows)
    assert [w["start_s"] for w in windows[1:]] == [w["end_s"] for w in windows[:-1]]
    assert all(set(w) >= {"freq_mhz", "temp_c", "load_1m", "cpu_other_share"} for w in windows)
    assert any(w["load_1m"] is not None for w in windows)  # /proc/loadavg is readable here
    # the reference of a run shorter than two minutes: its first quarter (one window here)
    assert block["reference"]["windows"] == 1 and block["reference"]["label"] == "first 1s"
    d = block["drift"]
    assert d["ci"][0] <= d["ratio"] <= d["ci"][1] and d["verdict"] in ("faster", "slower", "inconclusive")
    assert "10%" in block["throttling"]["rule"] and "moving-block bootstrap" in d["rule"]
    assert block["verdict"].startswith("sustained: ") and "first 1s p50" in block["verdict"]
    shown = run_cr("results", "show", record["uid"])
    assert shown.returncode == 0, shown.stderr
    assert block["verdict"] in shown.stdout.replace("\n", " ") or "sustained:" in shown.stdout
    assert "curve" in shown.stdout and "throttling rule" in shown.stdout


# -- refused durations -----------------------------------------------------------------------

@pytest.mark.parametrize("args, words", [
    (["--sustained", "0"], ["--sustained", "not a positive duration"]),
    (["--sustained", "5x"], ["--sustained", "'5x' is not a duration"]),
    (["--sustained", "-3m"], ["--sustained", "not a duration"]),
    (["--sustained", "25h"], ["longer than 24h"]),
    (["--sustained", "4s", "--sustained-window", "3s"], ["fewer than two windows"]),
    (["--sustained-window", "1s"], ["--sustained-window needs --sustained"]),
    (["--sustained", "4s", "--scenario", "server", "--target-qps", "10"], ["server scenario cannot be sustained"]),
    (["--sustained", "4s", "--engine", "loadgen"], ["MLPerf LoadGen has no windows"]),
])
def test_bad_sustained_settings_are_one_error_with_a_hint(run_cr, args, words):
    _refused(run_cr("benchmark", "model:lenet-digits", "--backend", "null", *args), *words)


def test_durations_in_seconds_and_minutes():
    from cr.durations import format_duration, parse_duration
    from cr.runtime.sustained import window_for

    assert parse_duration("5m") == 300 and parse_duration("1m30s") == 90 and parse_duration("90") == 90
    assert parse_duration("1.5m") == 90 and parse_duration(" 4S ") == 4 and parse_duration(2.5) == 2.5
    for bad in ("", "m", "5 m", "1s5m", "nan", "inf", True, None, "25h", "0s"):
        with pytest.raises(CRError):
            parse_duration(bad)
    assert window_for(300) == 1.0 and window_for(3600) == 6.0 and window_for(10, 2) == 2
    assert format_duration(130) == "2m10s" and format_duration(4) == "4s" and format_duration(3600) == "1h"


# -- detection on synthetic curves ------------------------------------------------------------

def _curve(n, p50s, freqs=None, window_s=1.0):
    return [{"start_s": i * window_s, "end_s": (i + 1) * window_s, "queries": 100, "p50_ns": p50s[i],
             "p99_ns": p50s[i] * 2, "freq_mhz": None if freqs is None else freqs[i]} for i in range(n)]


@pytest.mark.parametrize("k", [5, 20, 45])
def test_a_step_slowdown_at_window_k_is_found_at_k(k):
    rng = random.Random(k)
    n = 60
    p50s = [1e6 * (1 + rng.uniform(-0.03, 0.03)) * (1.25 if i >= k else 1) for i in range(n)]
    windows = _curve(n, p50s)
    t = S.detect_throttling(windows, ref_n=4)
    assert t["throttled"] and t["onset_window"] == k and t["latency"]["window"] == k
    assert t["onset_s"] == windows[k]["start_s"] and 0.2 < t["latency"]["p50_change"] < 0.3
    assert t["frequency"] is None  # no clock was read


def test_a_flat_noisy_curve_has_no_throttling_and_no_drift():
    rng = random.Random(1)
    windows = _curve(60, [1e6 * (1 + rng.uniform(-0.05, 0.05)) for _ in range(60)], [2400 + rng.uniform(-30, 30) for _ in range(60)])
    t = S.detect_throttling(windows, ref_n=10)
    assert not t["throttled"] and t["latency"] is None and t["frequency"] is None
    lat = [int(1e6 * rng.lognormvariate(0, 0.05)) for _ in range(6000)]
    d = S.drift(lat[:1000], lat[1000:])
    assert d["verdict"] == "inconclusive" and d["drift"] == "none" and d["ci"][0] <= 1 <= d["ci"][1]


def test_a_single_slow_window_is_not_throttling_but_a_clock_drop_is():
    p50s = [1e6] * 30
    p50s[10] = 2e6  # one hiccup: not "stays above"
    freqs = [3000.0] * 12 + [2400.0] * 18  # the clock drops at window 12 and stays down
    t = S.detect_throttling(_curve(30, p50s, freqs), ref_n=5)
    assert t["latency"] is None
    assert t["throttled"] and t["frequency"]["window"] == 12 and t["onset_window"] == 12
    assert abs(t["frequency"]["freq_change"] + 0.2) < 1e-9


def test_drift_and_the_verdict_line_of_a_slower_rest():
    rng = random.Random(2)
    first = [int(1e6 * rng.lognormvariate(0, 0.03)) for _ in range(2000)]
    rest = [int(1.2e6 * rng.lognormvariate(0, 0.03)) for _ in range(6000)]
    lat = array("q", first + rest)
    edges = [(int((i + 1) * 1e9), (i + 1) * 1000) for i in range(8)]  # 8 windows of 1000 queries
    block = S.analyse(lat, edges, [{} for _ in edges], 0, 8.0, 1.0)
    assert block["reference"]["windows"] == 2  # the first quarter of an 8 s run
    assert block["drift"]["verdict"] == "slower" and 1.15 < block["drift"]["ratio"] < 1.25
    assert block["throttling"]["onset_window"] == 2 and block["throttling"]["onset_s"] == 2.0
    line = block["verdict"]
    assert line.startswith("sustained: throttling from 2s: p50 +20%") and "drift: rest slower (first 2s p50 " in line and "rest 1.20 ms, ratio 1.20" in line
    assert "95% interval" in line


def test_a_flat_run_says_no_drift_with_its_figures():
    rng = random.Random(3)
    lat = array("q", [int(1.23e6 * rng.lognormvariate(0, 0.02)) for _ in range(8000)])
    edges = [(int((i + 1) * 30e9), (i + 1) * 1000) for i in range(8)]  # 8 windows of 30 s: a 4-minute run
    block = S.analyse(lat, edges, [{} for _ in edges], 0, 240.0, 30.0)
    assert block["reference"]["windows"] == 2 and block["reference"]["label"] == "first minute"
    assert block["verdict"].startswith("sustained: no throttling, no drift (first minute p50 1.23 ms, rest 1.23 ms, ratio 1.00")


# -- campaigns: cold vs sustained rankings ----------------------------------------------------

def _entry(name, cold_ms, warm_ms, spread=0.02, seed=0):
    rng = random.Random(seed)
    cold = [int(cold_ms * 1e6 * rng.lognormvariate(0, spread)) for _ in range(800)]
    warm = [int(warm_ms * 1e6 * rng.lognormvariate(0, spread)) for _ in range(800)]
    return {"id": name, "label": name, "cold": {"p50_ns": sorted(cold)[400], "latencies": cold},
            "sustained": {"p50_ns": sorted(warm)[400], "latencies": warm}}


def test_a_swap_beyond_noise_is_counted_and_one_within_noise_is_not():
    entries = [_entry("a", 1.0, 1.5, seed=1), _entry("b", 1.2, 1.25, seed=2),
               _entry("c", 2.0, 2.0, seed=3), _entry("d", 2.01, 1.99, seed=4)]
    r = S.compare_rankings(entries)
    assert [x["id"] for x in r["ranks"]] == ["a", "b", "c", "d"]
    assert {x["id"]: x["sustained_rank"] for x in r["ranks"]} == {"a": 2, "b": 1, "c": 4, "d": 3}
    swaps = {(s["faster_cold"], s["faster_sustained"]): s for s in r["swaps"]}
    assert set(swaps) == {("a", "b"), ("c", "d")}
    assert swaps[("a", "b")]["counted"] and not swaps[("c", "d")]["counted"]
    assert r["differ"] and "b now ahead of a" in r["line"] and "c" not in r["line"].split(":", 1)[1]
    same = S.compare_rankings([_entry("a", 1.0, 1.5, seed=1), _entry("c", 2.0, 2.0, seed=3)])
    assert not same["differ"] and same["swaps"] == [] and same["line"] == "sustained ranking: same as cold"


def test_a_swap_without_raw_latencies_is_not_counted():
    a, b = _entry("a", 1.0, 1.5, seed=1), _entry("b", 1.2, 1.25, seed=2)
    a["cold"]["latencies"] = None
    r = S.compare_rankings([a, b])
    assert len(r["swaps"]) == 1 and not r["swaps"][0]["counted"] and "fewer than 20" in r["swaps"][0]["cold"]["why"]


@pytest.fixture
def repo(tmp_path, run_cr):
    return null_repo(tmp_path, run_cr)


def test_a_campaign_with_a_sustained_phase_ranks_cold_and_sustained(repo, run_cr):
    make_component(repo, "campaign", "warm", solutions=["solution:null-digits"], matrix={"threads": [1, 2]},
                   sustained="2s")
    done = run_cr("campaign", "run", "warm", "--json", timeout=240)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 2 and all(len(r["results"]) == 2 for r in rows)  # the cold benchmark, then the sustained one
    for r in rows:
        s = r["sustained"]
        assert s["verdict"].startswith("sustained: ") and {s["cold_rank"], s["sustained_rank"]} <= {1, 2}
        assert "beyond 3%" in s["rule"]
        # the row's p50 is the cold benchmark's, not the sustained one's
        cold = [json.loads(run_cr("results", "show", u, "--json").stdout) for u in r["results"]]
        assert r["p50_ns"] == next(c for c in cold if "sustained" not in c["metrics"])["metrics"]["latency_ns"]["p50"]
    assert sorted(r["sustained"]["cold_rank"] for r in rows) == [1, 2]
    table = run_cr("campaign", "status", "warm")
    assert table.returncode == 0 and "SUSTAINED: the ranking" in table.stdout and "rule: rank by p50" in table.stdout


def test_a_campaign_with_a_bad_sustained_duration_names_the_file_and_the_field(repo, run_cr):
    path = make_component(repo, "campaign", "bad", solutions=["solution:null-digits"], sustained="soon")
    _refused(run_cr("campaign", "show", "bad", "--jobs"), str(path), "/sustained", "'soon' is not a duration")


# -- the dashboard's result page ---------------------------------------------------------------

def test_the_result_page_charts_the_curve_with_the_verdict(browser, tmp_path):  # noqa: F811 (fixture)
    from cr.dashboard import build, sample
    from cr.events import CollectingReporter, set_reporter
    from cr.platform import detect

    rng = random.Random(5)
    lat = array("q", [int(1e6 * rng.lognormvariate(0, 0.03) * (1.2 if i >= 2000 else 1)) for i in range(8000)])
    edges = [(int((i + 1) * 1e9), (i + 1) * 1000) for i in range(8)]
    states = [{"freq_mhz": 3000.0 if i < 2 else 2500.0, "temp_c": 60.0 + i, "load_1m": 1.0, "cpu_other_share": 0.01}
              for i in range(8)]
    rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", detect(PLATFORMS / "x86-laptop").to_dict(),
                                  list(lat), uid="e" + "0" * 15, started="2026-12-01T10:00:00.000Z")
    rec["metrics"]["sustained"] = S.analyse(lat, edges, states, 0, 8.0, 1.0)
    write(rec, tmp_path / "results" / "warm.json")
    old = set_reporter(CollectingReporter())
    try:
        build(tmp_path / "results", tmp_path / "dash")
    finally:
        set_reporter(old)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    problems = []
    pg.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    pg.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    _open(pg, (tmp_path / "dash", None), f"#/result/{rec['uid']}")
    pg.wait_for_selector("#sustained")
    _wait(pg, "() => document.querySelector('#sustained').getAttribute('data-chart') === '1'")
    section = pg.locator("#sustained")
    assert section.get_attribute("data-windows") == "8"
    verdict = section.locator("p.verdict")
    assert verdict.get_attribute("data-throttled") == "1" and verdict.get_attribute("data-drift") == "slower"
    assert verdict.inner_text() == rec["metrics"]["sustained"]["verdict"]
    assert "throttling from 2s" in verdict.inner_text() and "CPU clock -17%" in verdict.inner_text()
    assert "stays above the reference p50" in section.inner_text()
    assert not problems
    import os

    if os.environ.get("CR_TEST_SHOTS"):
        section.screenshot(path=os.path.join(os.environ["CR_TEST_SHOTS"], "sustained.png"))
    context.close()


def test_the_reference_label_says_what_it_covers():
    lat = array("q", [1_000_000 + (i % 7) * 1000 for i in range(200)])
    block = S.analyse(lat, [(1_000_000_000, 100), (2_000_000_000, 200)], [{}, {}], 0, 2.0, 1.0)
    assert block["reference"]["windows"] == 1 and block["reference"]["label"] == "first 1s"  # not the nominal 0.5 s
    assert "first 1s p50" in block["verdict"]
