"""One statistic, one source: cr/results/significance.py (the CLI's compare, `cr reproduce`) and
dashboard/lib/stats.js (the site's compare table and significance block) reproduce the same
test vectors (tests/fixtures/stat_vectors.json, regenerated on purpose with
scripts/make_stat_vectors.py), and the site judges a pair on the very samples the CLI does.
The JavaScript runs in Chromium (tests/helpers/dashboard.py's fixtures)."""
from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, sample
from cr.dashboard.records import shrink_raw
from cr.events import CollectingReporter, set_reporter
from cr.platform import detect
from cr.results.significance import RESAMPLES, SAMPLES_MAX, SEED, compare_pair, mulberry32, settings, thin

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import PLATFORMS, _open, _wait, browser, page, write  # noqa: E402,F401  (fixtures)

VECTORS = json.loads((Path(__file__).resolve().parent / "fixtures" / "stat_vectors.json").read_text(encoding="utf-8"))


def test_the_vectors_were_made_with_the_settings_in_force():
    """A change of RESAMPLES, SEED, MIN_EFFECT... is a change of every interval: regenerate the
    vectors with it, deliberately (scripts/make_stat_vectors.py)."""
    assert VECTORS["settings"] == settings()
    shapes = [v for v in VECTORS["vectors"] if v["lat_a"] and len(v["lat_a"]) > SAMPLES_MAX]
    assert shapes, "no vector exercises the thinning"
    rows = [m for v in VECTORS["vectors"] for m in v["expected"]["metrics"]]
    assert {m["verdict"] for m in rows} == {"faster", "slower", "inconclusive", None}
    assert any(m["widened"] for m in rows)


@pytest.mark.parametrize("vector", VECTORS["vectors"], ids=lambda v: v["name"])
def test_python_reproduces_each_vector(vector):
    assert compare_pair(vector["a"], vector["b"], vector["lat_a"], vector["lat_b"]) == vector["expected"]


def _random_pair(rng: random.Random):
    n_a, n_b = rng.choice((20, 50, 300, 2047, 2049, 3000)), rng.choice((20, 60, 500, 2500))
    center = rng.choice((1e3, 1e5, 3e6))
    ratio = rng.choice((0.7, 0.97, 1.0, 1.02, 1.05, 1.4, 130.0))

    def run(n, c):
        if rng.random() < 0.5:
            return [int(c * rng.lognormvariate(0, rng.choice((0.01, 0.2, 0.8)))) for _ in range(n)]
        return [int(c * (rng.paretovariate(1.05) * 50 if rng.random() < 0.05 else rng.lognormvariate(0, 0.05))) + 1 for _ in range(n)]

    return run(n_a, center), run(n_b, center * ratio)


def test_the_point_lies_in_its_interval_and_the_verdict_follows_its_sign():
    """The bug this statistic replaces: `p99 latency SLOWER ratio 0.829, 95% interval 1.066 .. 2.800`
    (a point from all samples, an interval from a thinned copy). Heavy tails, runs above
    SAMPLES_MAX, ratios up to 130x: the point is always inside, and a verdict never points the
    other way."""
    rng = random.Random(2026)
    for _ in range(25):
        la, lb = _random_pair(rng)
        a, b = ({"uid": uid, "status": "ok", "raw": {}, "metrics": sample.latency_metrics(lat)} for uid, lat in (("a", la), ("b", lb)))
        pair = compare_pair(a, b, la, lb, resamples=200)
        for m in pair["metrics"]:
            lo, hi = m["ci"]
            assert lo <= m["ratio"] <= hi, m
            if m["verdict"] == ("slower" if m["better"] == "lower" else "faster"):
                assert m["ratio"] > 1, m
            if m["verdict"] == ("faster" if m["better"] == "lower" else "slower"):
                assert m["ratio"] < 1, m
            assert m["ratio"] == m["value"] / m["baseline"]  # the records' own figures


def test_the_site_keeps_exactly_the_samples_the_cli_judges():
    for n in (1, SAMPLES_MAX, SAMPLES_MAX + 1, 3 * SAMPLES_MAX - 1, 10_000):
        values = list(range(n))
        kept = shrink_raw({"latencies_ns": values}, "/nowhere/r.json")["samples_ns"]
        assert kept == thin(values) and len(kept) <= SAMPLES_MAX
        assert kept == values[::-(-n // SAMPLES_MAX)]  # every ceil(n/2048)-th, from the first


# ---------------------------------------------------------------- the JavaScript side

@pytest.fixture(scope="module")
def site(tmp_path_factory):
    rng = random.Random(7)
    laptop = detect(PLATFORMS / "x86-laptop").to_dict()
    folder = tmp_path_factory.mktemp("stat-results")
    records = {}
    for i, (n, median, tail) in enumerate(((5000, 25_000, 0.0), (3000, 26_000, 0.03), (600, 25_500, 0.0))):
        lat = [int(median * (rng.paretovariate(1.1) * 20 if rng.random() < tail else rng.lognormvariate(0, 0.08)))
               for _ in range(n)]
        rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, lat,
                                      uid=f"e{i:015x}", started=f"2026-12-01T10:0{i}:00.000Z")
        write(rec, folder / f"r{i}.json")
        records[rec["uid"]] = (rec, lat)
    out = tmp_path_factory.mktemp("stat-site") / "dash"
    old = set_reporter(CollectingReporter())
    try:
        build(folder, out)
    finally:
        set_reporter(old)
    return out, None, records


def _close(x: float, y: float) -> bool:
    return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))


def _same(js: dict, py: dict) -> None:
    assert js["missing"] == py["missing"] and js["samples"] == py["samples"] and js["beyond_noise"] == py["beyond_noise"]
    assert len(js["metrics"]) == len(py["metrics"])
    for j, p in zip(js["metrics"], py["metrics"]):
        assert (j["metric"], j["label"], j["verdict"], j["widened"], j["why"]) == (p["metric"], p["label"], p["verdict"], p["widened"], p["why"])
        if p["ratio"] is None:
            assert j["ratio"] is None and j["ci"] is None
        else:
            assert _close(j["ratio"], p["ratio"]) and _close(j["ci"][0], p["ci"][0]) and _close(j["ci"][1], p["ci"][1]), (j, p)


def test_javascript_reproduces_every_vector(page, site):
    _open(page, site, "#/leaderboard")
    draws = page.evaluate("() => { const d = window.CR_SITE.stats.mulberry32(0); return Array.from({length: 1000}, d); }")
    draw = mulberry32(0)
    assert draws == [draw() for _ in range(1000)]  # the same generator, bit for bit
    assert page.evaluate("window.CR_SITE.stats.settings.resamples") == RESAMPLES and page.evaluate("window.CR_SITE.stats.settings.seed") == SEED
    got = page.evaluate("""vs => vs.map(v => window.CR_SITE.stats.comparePair(v.a, v.b, v.lat_a, v.lat_b))""", VECTORS["vectors"])
    for vector, js in zip(VECTORS["vectors"], got):
        _same(js, vector["expected"])
    assert not page.problems


def test_the_sites_compare_page_gives_the_clis_verdicts(page, site):
    """Records built into a site (their samples thinned by the site's rule) give, on the compare
    page's table and its significance block, the verdicts and intervals compare_pair gives on the
    runs' whole raw latencies."""
    records = site[2]
    uids = list(records)
    base = uids[0]
    _open(page, site, f"#/compare/{','.join(uids)}")
    page.wait_for_selector("#significance")
    _wait(page, "() => window.CR_DASHBOARD.ready && !(window.CR_DASHBOARD.pending > 0)")
    js_pairs = page.evaluate("""uids => Promise.all(uids.map(u => window.CR_SITE.loadResult(u))).then(recs =>
        recs.slice(1).map(r => window.CR_SITE.stats.sitePair(recs[0], r)))""", uids)
    table = {"p50 latency": "p50_ns", "p90 latency": "p90_ns", "p99 latency": "p99_ns", "mean latency": "mean_ns",
             "throughput": "throughput_qps"}
    colour = {"faster": "better", "slower": "worse", "inconclusive": "noise"}
    for column, (uid, js) in enumerate(zip(uids[1:], js_pairs), start=1):
        py = compare_pair(records[base][0], records[uid][0], records[base][1], records[uid][1])
        _same(js, py)
        verdicts = {m["metric"]: m["verdict"] for m in py["metrics"]}
        block = page.locator(f"#significance .verdicts[data-uid='{uid}']")
        for m in py["metrics"]:
            assert block.locator(f"tr[data-metric='{m['label']}']").get_attribute("data-verdict") == m["verdict"]
        for label, key in table.items():
            cell = page.locator(f"#compare tr[data-metric='{label}'] td.result-col").nth(column).locator(".diff")
            assert cell.get_attribute("data-judgement") == colour[verdicts[key]], (uid, label)
    assert {m["verdict"] for m in compare_pair(records[base][0], records[uids[1]][0], records[base][1], records[uids[1]][1])["metrics"]} - {"inconclusive"}
    assert not page.problems
