"""The dashboard shows a result's phases and fidelity, and the compare page the bootstrap
verdicts and likely causes that `cr results compare` gives (in Chromium, with
tests/test_dashboard.py's browser and page fixtures)."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, sample
from cr.events import CollectingReporter, set_reporter
from cr.platform import detect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import PLATFORMS, _open, _wait, browser, page, write  # noqa: E402,F401  (fixtures)

PHASES = {"load_s": 0.31, "inputs_s": 0.02, "first_inference_s": 0.0024, "first_inference_in": "warmup",
          "warmup": {"until_stable": True, "window": 10, "threshold": 0.05, "min_queries": 100, "max_queries": 1000,
                     "max_s": 5.0, "queries": 100, "seconds": 0.004, "converged": True, "converged_at": 30,
                     "stopped_by": "warmup_queries", "window_medians_ns": [90000, 21000, 20500]},
          "steady": {"queries": 600, "seconds": 0.02, "p50_ns": 25000, "latencies": "latency_ns"}}


def _machine(share: float) -> dict:
    return {"summary": {"governor": "performance", "freq_mhz_max": 3000.0, "cpu_other_share": share, "throttled": False,
                        "temp_c_max": 50.0, "swap_activity": False, "load_avg_start": 0.2}, "start": {}, "end": {}}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    rng = random.Random(3)
    laptop = detect(PLATFORMS / "x86-laptop").to_dict()
    folder = tmp_path_factory.mktemp("trust-results")
    uids = {}
    for i, (name, median, share) in enumerate((("quiet", 25_000, 0.01), ("busy", 40_000, 0.6), ("quiet2", 25_000, 0.01))):
        rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(median, 3000, rng),
                                      uid=f"d{i:015x}", started=f"2026-12-01T10:0{i}:00.000Z")
        rec["metrics"]["phases"] = PHASES
        rec["metrics"]["fidelity"] = {"bare_p50_ns": 24800.0, "p50_ns": 25000.0, "ratio": 1.008, "queries": 600, "seconds": 0.02}
        rec["machine"] = _machine(share)
        write(rec, folder / f"{name}.json")
        uids[name] = rec["uid"]
    rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(25_000, 600, rng),
                                  uid="d" + "f" * 15, started="2026-12-01T11:00:00.000Z")
    rec["raw"] = None
    write(rec, folder / "summary-only.json")
    uids["summary"] = rec["uid"]
    out = tmp_path_factory.mktemp("trust-site") / "dash"
    old = set_reporter(CollectingReporter())
    try:
        build(folder, out)
    finally:
        set_reporter(old)
    return out, None, uids


def _settled(pg) -> None:
    _wait(pg, "() => window.CR_DASHBOARD.ready && !(window.CR_DASHBOARD.pending > 0)")


def test_result_page_shows_phases_and_fidelity(page, site):
    _open(page, site, f"#/result/{site[2]['quiet']}")
    page.wait_for_selector("#phases")
    text = page.locator("#phases").inner_text()
    assert "first inference" in text and "2.40 ms" in text
    assert "100 queries" in text and "stable after 30" in text and "window 10, within 5 %" in text
    assert "1.008" in text and "fidelity" in text
    assert page.locator("#phases [data-warmup-medians='3']").count() == 1
    assert not page.problems


def test_compare_page_gives_verdicts_and_names_background_load_first(page, site):
    uids = site[2]
    _open(page, site, f"#/compare/{uids['quiet']},{uids['busy']}")
    page.wait_for_selector("#significance")
    _settled(page)
    block = page.locator(f"#significance .verdicts[data-uid='{uids['busy']}']")
    assert block.locator("tr[data-metric='p50 latency']").get_attribute("data-verdict") == "slower"
    assert block.locator("tr[data-metric='throughput']").get_attribute("data-verdict") == "slower"
    assert block.locator("ol.causes li").first.get_attribute("data-cause") == "background CPU load"
    assert "60 %" in block.locator("ol.causes li").first.inner_text()
    # one distribution twice: inconclusive, no causes
    _open(page, site, f"#/compare/{uids['quiet']},{uids['quiet2']}")
    page.wait_for_selector("#significance")
    _settled(page)
    block = page.locator(f"#significance .verdicts[data-uid='{uids['quiet2']}']")
    assert block.locator("tr[data-metric='p50 latency']").get_attribute("data-verdict") == "inconclusive"
    assert block.locator("ol.causes").count() == 0
    # a run without raw samples: why there is no interval
    _open(page, site, f"#/compare/{uids['quiet']},{uids['summary']}")
    page.wait_for_selector("#significance")
    _settled(page)
    note = page.locator("#significance [data-missing]").inner_text()
    assert "carries no raw latencies" in note
    assert not page.problems
