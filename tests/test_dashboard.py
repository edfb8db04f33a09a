"""The static dashboard: the builder (cr/dashboard) and the site (dashboard/) in real Chromium.

Records are made in the result format (cr/results/record.py) with cr.dashboard.sample,
on two platforms detected from captured machines (tests/fixtures/platforms), several
backends, a benchmark and a validate per configuration, one with a real lock, and one
whose names, tags and error text carry HTML/script payloads. The browser tests open the
built site from file://, as a user does; they are skipped with the reason when Debian's
Chromium (/usr/bin/chromium) or the playwright package is missing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, records, sample
from cr.events import CollectingReporter, set_reporter
from cr.platform import detect
from helpers.dashboard import LOCK, PLATFORMS, _load_js, _open, _rows, _wait, browser, page, write  # noqa: F401  (browser: the fixture page needs)


XSS_NAME = '<img src=x onerror="window.__xss=1">'
XSS_TAG = "</script><script>window.__xss=2</script>"
XSS_ERROR = "boom <img src=x onerror=window.__xss=3> \u2028 <!-- <script>window.__xss=4</script>"

# (backend, variant, precision, median ns on the laptop, top-1) per platform
CONFIGS = {
    "x86-laptop": [("onnxruntime", "onnx", "fp32", 25_000, 0.9806), ("torch", "torchscript", "fp32", 52_000, 0.9806),
                   ("tflite", "tflite", "fp32", 10_000, 0.9806), ("tflite", "tflite-int8", "int8", 18_000, 0.9778)],
    "rpi4-64": [("onnxruntime", "onnx", "fp32", 310_000, 0.9806), ("tflite", "tflite", "fp32", 140_000, 0.9806),
                ("tflite", "tflite-int8", "int8", 95_000, 0.9778)],
}


def make_records(folder: Path) -> dict:
    """Write the test store; returns {name: uid} of the records the tests look at."""
    import random

    rng = random.Random(7)
    uids, n = {}, 0
    for capture, configs in CONFIGS.items():
        platform = detect(PLATFORMS / capture).to_dict()
        for backend, variant, precision, median, top1 in configs:
            n += 1
            extra = {}
            if capture == "x86-laptop" and backend == "onnxruntime":
                extra["lock"] = {**LOCK, "platform": {**LOCK["platform"], "fingerprint": platform["fingerprint"]}}
            bench = sample.benchmark_record("lenet-digits", backend, variant, precision, platform,
                                            sample.latencies(median, 600, rng), uid=f"b{n:015x}",
                                            started=f"2026-11-30T10:{n:02d}:00.000Z", tags=["ci", backend], **extra)
            val = sample.validate_record("lenet-digits", backend, variant, precision, platform, top1, expected=0.9806,
                                         uid=f"a{n:015x}", started=f"2026-11-30T09:{n:02d}:00.000Z")
            write(bench, folder / capture / f"bench-{n}.json")
            write(val, folder / capture / f"validate-{n}.json")
            uids[f"{capture}/{backend}/{variant}/bench"] = bench["uid"]
            uids[f"{capture}/{backend}/{variant}/validate"] = val["uid"]
    # an older, slower run of one configuration: it must not be the row's benchmark
    laptop = detect(PLATFORMS / "x86-laptop").to_dict()
    old = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, sample.latencies(900_000, 100, rng),
                                  uid="c000000000000001", started="2026-11-29T08:00:00.000Z")
    write(old, folder / "x86-laptop" / "old.json")
    # hostile text everywhere a result carries text
    xss = sample.benchmark_record(XSS_NAME, "onnxruntime", "onnx", "fp32", laptop, [1000, 2000], uid="d000000000000001",
                                  started="2026-11-30T11:00:00.000Z", tags=[XSS_TAG, "<b>bold</b>"],
                                  status="failed", metrics=None,
                                  error={"kind": "error", "type": "Crash</script>", "message": XSS_ERROR, "hint": XSS_TAG,
                                         "stderr_tail": XSS_ERROR})
    xss["config"]["note"] = XSS_ERROR
    write(xss, folder / "xss.json")
    uids["xss"] = xss["uid"]
    # not records: skipped with a warning each
    (folder / "broken.json").write_text('{"format": 1, "uid": ', encoding="utf-8")
    (folder / "lock.json").write_text(json.dumps(LOCK), encoding="utf-8")
    return uids


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("results")
    return folder, make_records(folder)


@pytest.fixture(scope="module")
def site(store, tmp_path_factory):
    out = tmp_path_factory.mktemp("site") / "dash"
    old = set_reporter(CollectingReporter())
    try:
        info = build(store[0], out)
    finally:
        set_reporter(old)
    return out, info, store[1]


# ---------------------------------------------------------------- builder


def test_build_counts_rows_and_warns_about_non_records(store, tmp_path):
    reporter = CollectingReporter()
    old = set_reporter(reporter)
    try:
        info = build(store[0], tmp_path / "site")
    finally:
        set_reporter(old)
    assert info.results == 2 * 7 + 2  # a benchmark and a validate per configuration, the old run, the hostile one
    assert info.rows == 7 + 1
    assert info.skipped == 2
    assert any("broken.json: skipped, not valid JSON" in w for w in reporter.warnings)
    assert any("lock.json: skipped, not a reefkit result record" in w for w in reporter.warnings)
    index = _load_js(tmp_path / "site" / "data" / "index.js", "CR_DATA_INDEX")
    rows = _rows(index)
    onnx_laptop = [r for r in rows if r["backend"] == "onnxruntime" and r["platform_label"] == "Dell Inc. Latitude 7430 (linux/x86_64, 10 cores)"
                   and r["name"] == "lenet-digits"]
    assert len(onnx_laptop) == 1 and onnx_laptop[0]["runs"] == 3  # the old run counts, but is not shown
    assert onnx_laptop[0]["bench_uid"] == store[1]["x86-laptop/onnxruntime/onnx/bench"]
    assert onnx_laptop[0]["top1"] == pytest.approx(0.9806)


def test_build_is_deterministic_and_incremental(store, tmp_path, monkeypatch):
    # several detail files for 18 record files (cr.dashboard.build is also the name of the function)
    monkeypatch.setattr(sys.modules["cr.dashboard.build"], "BUNDLE_SIZE", 2)
    a, b = tmp_path / "a", tmp_path / "b"
    build(store[0], a)
    build(store[0], b)
    assert _tree(a) == _tree(b)
    # touch one record: only its bundle is read again, and the result equals a full build
    record = store[0] / "rpi4-64" / "bench-5.json"
    data = json.loads(record.read_text(encoding="utf-8"))
    data["tags"] = ["rerun"]
    record.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    try:
        info = build(store[0], a)
        assert 0 < info.processed <= 6 and info.reused >= 12 and info.bundles > 4
        build(store[0], b, incremental=False)
        assert _tree(a) == _tree(b)
    finally:
        data["tags"] = ["ci", "onnxruntime"]
        record.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def test_build_refuses_a_foreign_directory(store, tmp_path):
    from cr.errors import CRError

    (tmp_path / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(CRError, match="refusing to write"):
        build(store[0], tmp_path)
    assert (tmp_path / "mine.txt").read_text(encoding="utf-8") == "keep me"


def test_detail_data_is_inert_javascript(site):
    out, _, uids = site
    text = "".join(p.read_text(encoding="utf-8") for p in (out / "data").rglob("*.js"))
    assert "</script" not in text.lower() and "<img" not in text and "<!--" not in text
    assert "\u2028" not in text and "\u2029" not in text
    assert "\\u003cimg src=x onerror" in text  # the payload is there, escaped


ODD_LAYOUTS = [
    b'{"format": 1, "uid": "x", "action": "benchmark", "raw": {"latencies_ns": [1, 2]}}',  # compact
    b'{\n  "raw": {\n    "latencies_ns": []\n  },\n  "platform": null\n}\n',
    b'{\n  "raw": {\n    "latencies_ns": [\n      -5,\n      7\n    ]\n  }\n}',
    b'{\n  "raw": {\n    "latencies_ns": [\n      1,,\n      7\n    ]\n  }\n}',  # not JSON
    b'{\n  "x": {\n  "raw": {\n    "latencies_ns": [1]\n  }\n  },\n  "raw": null\n}',  # a nested "raw" at indent 2
    b'{\n  "x": {\n  "platform": {\n    "a": 1\n  }\n  }\n}',  # a nested "platform" at indent 2
    b'{\n  "platform": {\n    "cpu": {\n      "flags": ["a"]\n    }\n  },\n  "raw": {\n    "latencies_ns": [\n      3\n    ]\n  }\n}',
    # what orjson (the first parser) refuses and the standard parser decides: the outcome is the standard one's
    b'{\n  "format": 1,\n  "x": 1e400\n}',  # a number beyond a double: inf, as json.loads gives
    b'{\n  "format": 1,\n  "x": "\\ud800"\n}',  # a lone surrogate escape
    b'\xef\xbb\xbf{\n  "format": 1\n}',  # a UTF-8 byte-order mark
    '{\n  "format": 1,\n  "x": "\u00e9"\n}'.encode("utf-16"),  # UTF-16 with its mark
    b'{\n  "format": 1,\n  "x": "\xff"\n}',  # not UTF-8: refused by both
]


@pytest.mark.parametrize("data", ODD_LAYOUTS)
def test_fast_parse_equals_json_loads(data):
    try:
        expected = json.loads(data)
    except ValueError:
        with pytest.raises(ValueError):
            records.parse(data)
        return
    record, text, samples = records.parse(data)
    if samples is None:
        assert record == expected and text == data
    else:  # the samples were cut out of the text and handed over separately
        assert record == {**expected, "raw": None} and json.loads(text) == record
        assert json.loads(samples) == expected["raw"]["latencies_ns"]


def test_an_integer_beyond_64_bits_is_read_as_the_browser_reads_it():
    # the one documented difference of the fast parser (cr/dashboard/records.py, _loads): the nearest double
    record, _, _ = records.parse(b'{\n  "format": 1,\n  "n": 123456789012345678901234567890\n}')
    assert record["n"] == float(123456789012345678901234567890)
    record, _, _ = records.parse(b'{\n  "format": 1,\n  "n": 18446744073709551615\n}')  # within 64 bits: exact
    assert record["n"] == 18446744073709551615 and type(record["n"]) is int


def _detail_record(record_file) -> dict:
    record, text, samples = records.load(str(record_file))
    js = records.detail_js(record, text, samples, str(record_file), record_file.name, "0000:x")
    body = js.decode("utf-8").partition("]=")[2].rstrip().rstrip(";")
    return json.loads(body)["record"]


def test_detail_files_hold_the_record_compact_or_its_own_text_when_orjson_cannot_write_it(tmp_path):
    plain = {"format": 1, "action": "validate", "uid": "e000000000000002", "note": "caf\u00e9 </script> \u2028", "n": 18446744073709551615,
             "x": 0.1 + 0.2, "raw": {"latencies_ns": [5, 6, 7]}}
    (tmp_path / "plain.json").write_text(json.dumps(plain, indent=2), encoding="utf-8")
    written = records.detail_js(*records.load(str(tmp_path / "plain.json")), str(tmp_path / "plain.json"), "plain.json",
                                "0000:x")
    assert b"\n  " not in written and b"</script" not in written and "\u2028".encode() not in written  # compact, escaped
    assert _detail_record(tmp_path / "plain.json") == {k: v for k, v in plain.items() if k != "raw"}
    # a lone surrogate escape: orjson refuses the text and cannot write the str; the text goes, exactly
    odd = '{\n  "format": 1,\n  "action": "validate",\n  "uid": "e000000000000003",\n  "s": "\\ud800",\n  "big": 123456789012345678901234567890\n}'
    (tmp_path / "odd.json").write_text(odd, encoding="utf-8")
    got = _detail_record(tmp_path / "odd.json")
    assert got["s"] == "\ud800" and got["big"] == 123456789012345678901234567890


def test_raw_samples_from_a_side_file_are_thinned(tmp_path):
    from array import array

    from cr.results.record import INLINE_MAX, write

    laptop = detect(PLATFORMS / "x86-laptop").to_dict()
    values = array("q", range(1000, 1000 + INLINE_MAX + 5))
    rec = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", laptop, [1, 2, 3], uid="e000000000000001",
                                  started="2026-11-30T12:00:00.000Z")
    rec["raw"] = {"latencies_ns": values}
    path = write(rec, tmp_path / "big.json")
    assert (tmp_path / "big.latencies.i64").is_file()
    stored = json.loads(path.read_text(encoding="utf-8"))
    raw = records.shrink_raw(stored["raw"], str(path))
    assert raw["count"] == len(values) and raw["source"] == "file" and not raw["problem"]
    assert len(raw["samples_ns"]) <= records.SAMPLES_MAX and raw["samples_ns"][0] == 1000
    stored["raw"]["sha256"] = "0" * 64
    assert "does not match its sha256" in records.shrink_raw(stored["raw"], str(path))["problem"]


def test_cli_build_and_open(store, tmp_path):
    out = tmp_path / "site"
    run = _cli("build", "--results", str(store[0]), "--out", str(out), "--json")
    assert run.returncode == 0, run.stderr
    info = json.loads(run.stdout)
    assert info["results"] == 16 and info["rows"] == 8 and info["index_html"] == str(out / "index.html")
    assert "broken.json: skipped" in run.stderr
    run = _cli("open", "--out", str(out), "--no-browser")
    assert run.returncode == 0 and run.stdout.strip() == (out / "index.html").as_uri()
    run = _cli("open", "--out", str(tmp_path / "none"), "--no-browser")
    assert run.returncode == 1 and "Error: there is no dashboard" in run.stderr


def test_cli_does_not_import_numerical_frameworks(store, tmp_path):
    probe = (
        "import json, sys\n"
        "from cr.cli import main as m\n"
        "from cr.cli.dashboard import dashboard\n"
        "if 'dashboard' not in m.cli.commands: m.cli.add_command(dashboard)\n"
        "try:\n    m.main(sys.argv[2:])\nexcept SystemExit:\n    pass\n"
        "json.dump(sorted(sys.modules), open(sys.argv[1], 'w'))\n"
    )
    listing = tmp_path / "modules.json"
    subprocess.run([sys.executable, "-c", probe, str(listing), "dashboard", "build", "--results", str(store[0]),
                    "--out", str(tmp_path / "site")], capture_output=True, check=True, timeout=60)
    modules = json.loads(listing.read_text(encoding="utf-8"))
    assert not [m for m in modules if m.split(".")[0] in ("numpy", "torch", "tensorflow", "onnxruntime")]


# ---------------------------------------------------------------- in Chromium


def _shot(pg, name: str) -> None:
    pg.screenshot(path=str(pg.shots / f"{name}.png"), full_page=True)


def test_leaderboard_lists_filters_and_sorts(page, site):
    _open(page, site, "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    # rows with figures first; the failed one waits behind the toggle, which counts it
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 7
    assert page.locator("[data-action=toggle-hidden]").inner_text() == "1 failed or without figures: show"
    page.click("[data-action=toggle-hidden]")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 8
    assert "failed" in page.locator("#leaderboard tbody tr[data-row]").last.locator("td[data-col=status]").inner_text()
    names = page.locator("#leaderboard td[data-col=name] a.subject").all_text_contents()
    assert names.count("lenet-digits") == 7 and XSS_NAME in names
    assert page.locator("#leaderboard").get_attribute("data-total") == "8"
    _shot(page, "leaderboard")

    page.select_option("select[data-filter=backend]", "tflite")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 4
    assert set(page.locator("#leaderboard td[data-col=backend]").all_text_contents()) == {"tflite 2.3.0"}
    page.select_option("select[data-filter=platform]", label="Raspberry Pi 4 Model B (linux/aarch64, 4 cores) (3)")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 2
    page.click("text=Clear filters")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 8
    page.fill("input[data-filter=q]", "int8")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 2

    page.fill("input[data-filter=q]", "")
    page.click("#leaderboard th[data-col=p50_ns]")
    p50 = _column_values(page, "p50_ns")
    assert p50 == sorted(p50) and len(p50) == 7  # rows without a benchmark come last, in any order
    assert page.locator("#leaderboard th[data-col=p50_ns]").get_attribute("aria-sort") == "ascending"
    page.click("#leaderboard th[data-col=p50_ns]")
    assert _column_values(page, "p50_ns") == sorted(p50, reverse=True)
    assert not page.problems


def test_pareto_plot_draws_every_point(page, site):
    _open(page, site, "#/pareto")
    page.wait_for_selector("#pareto[data-points='7']")
    assert page.locator("#pareto").get_attribute("data-drawn") == "7"  # point elements Chart.js laid out
    assert page.evaluate("window.CR_DASHBOARD.paretoPoints") == 7
    legend = page.locator("#pareto-legend").inner_text()
    assert all(b in legend for b in ("onnxruntime", "torch", "tflite")) and "Raspberry Pi 4 Model B" in legend
    _shot(page, "pareto")
    page.select_option("select[data-control=x-axis]", "throughput")
    _wait(page, "() => !!document.querySelector('#pareto-canvas') && window.CR_DASHBOARD.paretoPoints === 7")
    page.select_option("select[data-filter=platform]", label="Raspberry Pi 4 Model B (linux/aarch64, 4 cores) (3)")
    page.wait_for_selector("#pareto[data-points='3']")
    assert not page.problems


def test_detail_shows_lock_latency_and_validation(page, site):
    uid = site[2]["x86-laptop/onnxruntime/onnx/bench"]
    _open(page, site, f"#/result/{uid}")
    page.wait_for_selector("table.lock-software")
    software = page.locator("table.lock-software").inner_text()
    assert "onnxruntime" in software and "1.32.0" in software and "numpy" in software and "2.4.6" in software
    page.wait_for_selector("#latency[data-samples='600']")
    assert page.locator("#latency canvas").count() == 3
    assert "PASS" not in page.locator("#metrics").inner_text()  # a benchmark: metrics, not checks
    assert "98.06 %" in page.locator("table.overview").inner_text()  # accuracy of the latest validation
    page.wait_for_selector("table.runs")
    # this benchmark and the older one of its configuration; the validation (no scenario) is not one of them
    assert page.locator("table.runs tbody tr").count() == 2
    assert "validate" not in page.locator("table.runs tbody").inner_text()
    _shot(page, "detail")

    _open(page, site, f"#/result/{site[2]['rpi4-64/tflite/tflite-int8/validate']}")
    page.wait_for_selector("table.checks")
    assert "FAIL" not in page.locator("table.checks").inner_text()
    assert "run-software" in page.locator("#software table").get_attribute("class")  # no lock: what the run reported
    assert not page.problems


def test_compare_shows_results_side_by_side(page, site):
    a, b = site[2]["x86-laptop/onnxruntime/onnx/bench"], site[2]["x86-laptop/torch/torchscript/bench"]
    _open(page, site, f"#/compare/{a},{b}")
    page.wait_for_selector("#compare")
    assert page.locator("#compare thead th.result-col").count() == 2
    row = page.locator("#compare tr[data-metric='p50 latency']").inner_text()
    assert "%" in row  # relative difference to the first column
    assert "backend" in page.locator("table.compare-config").inner_text()
    _shot(page, "compare")
    # from the leaderboard: select two rows, press compare
    _open(page, site, "#/leaderboard")
    page.locator("#leaderboard tbody tr[data-row] input[type=checkbox]").nth(0).check()
    page.locator("#leaderboard tbody tr[data-row] input[type=checkbox]").nth(1).check()
    page.click("button[data-action=compare]")
    page.wait_for_selector("#compare")
    assert page.locator("#compare thead th.result-col").count() == 2
    assert not page.problems


def test_hostile_text_stays_text(page, site):
    page.add_init_script("window.__xss = undefined")
    for route in ("#/leaderboard", "#/pareto", f"#/result/{site[2]['xss']}",
                  f"#/compare/{site[2]['xss']},{site[2]['x86-laptop/onnxruntime/onnx/bench']}"):
        _open(page, site, route)
        page.wait_for_timeout(300)
        if route.startswith("#/result"):
            page.wait_for_selector("#error")
            assert XSS_ERROR.replace("\u2028", "").split(" <!--")[0] in page.locator("#error").inner_text()
            assert XSS_TAG in page.locator("table.overview").inner_text()
        state = page.evaluate("""() => ({
            xss: window.__xss,
            images: document.querySelectorAll('img').length,
            inline: Array.from(document.scripts).filter(s => !s.src).length,
            bold: document.querySelectorAll('main b').length })""")
        assert state == {"xss": None, "images": 0, "inline": 0, "bold": 0}, route
    _open(page, site, "#/leaderboard")
    page.click("[data-action=toggle-hidden]")  # the hostile record is a failed run: behind the toggle
    assert XSS_NAME in page.locator("#leaderboard").inner_text()
    assert page.evaluate("document.querySelectorAll('main img, main b').length") == 0
    _shot(page, "hostile")
    assert not page.problems


def test_many_rows_paginate_and_filter_by_typing(page, tmp_path):
    # 2,800 configurations: 28 pages of 100; 350 models, too many for a menu
    sample.write_store(tmp_path / "results", 5600, samples=16)
    info = build(tmp_path / "results", tmp_path / "site")
    assert info.rows == 2800
    site = (tmp_path / "site", info, {})
    _open(page, site, "#/leaderboard")
    page.wait_for_selector("#leaderboard tbody tr[data-row]")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 100
    assert page.locator("[data-pager=top] [data-pager=range]").inner_text() == "Rows 1–100 of 2,800"
    page.locator("[data-pager=bottom] button[data-action=next]").click()
    assert page.locator("[data-pager=top] [data-pager=range]").inner_text() == "Rows 101–200 of 2,800"
    assert page.locator("select[data-filter=name]").count() == 0  # a text box instead
    page.fill("input[data-filter=name]", "model-00007")
    assert page.locator("#leaderboard tbody tr[data-row]").count() == 8
    assert page.locator("[data-pager=top] [data-pager=range]").inner_text() == "Rows 1–8 of 8 (filtered from 2,800)"
    page.click("#leaderboard th[data-col=throughput]")
    tp = _column_values(page, "throughput")
    assert tp == sorted(tp, reverse=True)
    assert not page.problems


def test_missing_result_and_unknown_route(page, site):
    _open(page, site, "#/result/ffffffffffffffff")
    page.wait_for_selector("text=Result not found")
    _open(page, site, "#/result/..%2F..%2Fetc")
    page.wait_for_selector("text=Not a result id.")
    _open(page, site, "#/nowhere")
    page.wait_for_selector("text=Page not found")
    assert not [p for p in page.problems if not p.startswith("request failed")]


# ---------------------------------------------------------------- helpers


def _cli(*args: str) -> subprocess.CompletedProcess:
    """`cr dashboard ...` through cr's real entry point (registering the group if main.py does not yet)."""
    code = ("import sys\nfrom cr.cli import main as m\nfrom cr.cli.dashboard import dashboard\n"
            "if 'dashboard' not in m.cli.commands: m.cli.add_command(dashboard)\nm.main(sys.argv[1:])\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    return subprocess.run([sys.executable, "-c", code, "dashboard", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def _tree(folder: Path) -> dict:
    """The site's files and their bytes (not the builder's private state: its saved states
    name the inodes and times of the files they describe, which differ between folders)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.relative_to(folder).as_posix().startswith(".cr-dashboard")}


def _column_values(page, column: str) -> list[float]:
    cells = page.locator(f"#leaderboard td[data-col={column}]")
    return [float(v) for v in (cells.nth(i).get_attribute("data-value") for i in range(cells.count())) if v]
