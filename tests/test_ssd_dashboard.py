"""Detection rows on the dashboard: COCO AP columns and the p50-vs-AP50 Pareto plot.

Records are shaped like the SSDLite solutions' (benchmark + detection validate per
backend/variant) with cr.dashboard.sample; the figures are those measured here.
"""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, sample
from cr.events import CollectingReporter, set_reporter
from cr.results.validate import problems

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import PLATFORMS, _load_js, _open, _rows, _wait, browser, page, write  # noqa: E402,F401  (fixtures)

# (backend, variant, precision, p50 ns, AP, AP50)
SSD = (("tensorflow", "tf-frozen-graph", "fp32", 75_700_000, 0.8337, 1.0),
       ("tflite", "tflite", "fp32", 41_600_000, 0.8337, 1.0),
       ("tflite", "tflite-int8", "int8", 15_500_000, 0.8663, 1.0),
       ("onnxruntime", "onnx", "fp32", 80_700_000, 0.8337, 1.0))


def _detection_validation(rec: dict, ap: float, ap50: float) -> dict:
    rec["validation"] = {
        "outcome": "PASS", "task": "detection", "samples": 9, "objects": 3, "detections": 3, "matched": 3,
        "iou_threshold": 0.5, "score_threshold": 0.5, "recall": 1.0, "precision": 1.0, "mean_iou": 0.9065,
        "ap": ap, "ap50": ap50, "ap75": 1.0, "coco_recall": ap,
        "coco": {"evaluator": "pycocotools 2.0.11", "images": 9, "objects": 3},
        "checks": [{"metric": "ap", "value": ap, "expected": ap, "abs": 0.02, "rel": None, "allowed": 0.02, "diff": 0.0, "ok": True}],
    }
    rec["config"]["dataset"] = rec["inputs"]["dataset"] = "dataset:person-photos@1.0.0"
    return rec


@pytest.fixture(scope="module")
def ssd_site(tmp_path_factory):
    from cr.platform import detect

    laptop = detect(PLATFORMS / "x86-laptop").to_dict()
    rng = random.Random(5)
    folder = tmp_path_factory.mktemp("ssd-results")
    uids = {}
    for i, (backend, variant, precision, p50, ap, ap50) in enumerate(SSD):
        name = f"ssdlite-person-{variant}"
        bench = sample.benchmark_record(name, backend, variant, precision, laptop, sample.latencies(p50, 200, rng),
                                        uid=f"b{i:015x}", started=f"2026-12-01T10:0{i}:00.000Z")
        bench["config"]["dataset"] = bench["inputs"]["dataset"] = "dataset:person-photos@1.0.0"
        val = _detection_validation(sample.validate_record(name, backend, variant, precision, laptop, 0.0, uid=f"a{i:015x}",
                                                           started=f"2026-12-01T09:0{i}:00.000Z"), ap, ap50)
        val["validation"].pop("top1", None)
        for rec in (bench, val):
            assert problems(rec, rec["uid"]) == []
            write(rec, folder / f"{rec['uid']}.json")
        uids[variant] = (bench["uid"], val["uid"])
    out = tmp_path_factory.mktemp("ssd-site") / "dash"
    old = set_reporter(CollectingReporter())
    try:
        build(folder, out)
    finally:
        set_reporter(old)
    return out, None, uids


def test_index_rows_carry_ap_and_ap50(ssd_site):
    rows = _rows(_load_js(ssd_site[0] / "data" / "index.js", "CR_DATA_INDEX"))
    by_variant = {r["variant"]: r for r in rows}
    assert by_variant["tflite-int8"]["ap"] == pytest.approx(0.8663) and by_variant["tflite"]["ap50"] == pytest.approx(1.0)
    assert all(r["top1"] is None for r in rows)


def test_leaderboard_shows_ap_columns_and_the_pareto_plots_latency_vs_ap50(page, ssd_site):
    _open(page, ssd_site, "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    headers = page.locator("#leaderboard thead th").all_text_contents()
    assert any(h.startswith("AP50") for h in headers) and any(h.strip().startswith("AP") and "50" not in h for h in headers)
    body = page.locator("#leaderboard tbody").inner_text()
    assert "86.63 %" in body and "83.37 %" in body
    _open(page, ssd_site, "#/pareto")
    page.select_option("select[data-control=x-axis]", "latency-ap50")
    _wait(page, "() => !!window.CR_DASHBOARD.pareto && document.querySelector('#pareto').getAttribute('data-plot') === 'latency-ap50'")
    info = page.evaluate("window.CR_DASHBOARD.pareto")
    assert len(info["points"]) == 4
    # one frontier (detection, person-photos, one platform): the fastest variant at AP50 1.0 dominates
    assert len(info["frontiers"]) == 1 and "detection" in info["frontiers"][0]["line"]
    assert not page.problems
