"""A profile on the dashboard: per-layer medians as bars (top 20 + other + unattributed +
the model median), coverage, the profiler's overhead and the trace's place on its result page; two profiles' matched layers side by side on the compare page.
Real profiles (lenet-digits on onnxruntime and torch), a real site, real Chromium."""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import _open, _wait, browser, page, to_fixed  # noqa: E402,F401  (fixtures)


@pytest.fixture
def profiled_site(cr_home, tmp_path):
    from cr.dashboard import build
    from cr.run.profile import profile

    params = {"samples": 5, "warmup": 1, "batch_size": 64, "threads": 1}
    ort = profile("model:lenet-digits", backend="onnxruntime", params=params)
    tor = profile("model:lenet-digits", backend="torch", variant="state-dict", params=params)
    big = profile("model:lenet-digits", backend="torch", variant="torchscript", params=params)
    assert ort["status"] == tor["status"] == big["status"] == "ok"
    site = tmp_path / "site"
    build(cr_home / "results", site)
    return (site,), ort, tor, big


def test_result_page_shows_layer_bars_coverage_and_trace(page, profiled_site):
    site, ort, tor, _ = profiled_site
    _open(page, site, f"#/result/{tor['uid']}")
    page.wait_for_selector("#profile-bars")
    rows = page.locator("#profile-bars tbody tr")
    layers = tor["profile"]["layers"]
    s = tor["profile"]["summary"]
    kinds = page.evaluate("[...document.querySelectorAll('#profile-bars tbody tr')].map(r => r.dataset.kind)")
    # the top layers by median, one "other", the unattributed remainder and the model median: as cr profile prints them
    assert kinds == ["layer"] * min(20, len(layers)) + (["other"] if len(layers) > 20 else []) + ["unattributed", "model"]
    assert rows.first.get_attribute("data-layer") == layers[0]["name"]  # the largest median first
    assert layers[0]["median_ns"] == max(l["median_ns"] for l in layers)
    widths = page.evaluate("[...document.querySelectorAll('#profile-bars .profile-bar')].map(b => parseFloat(b.style.width))")
    assert max(widths) == 100.0 and all(0 <= w <= 100 for w in widths)
    # the shares shown are medians over the model median and add up to 100 % with the unattributed row
    shares = page.evaluate("[...document.querySelectorAll('#profile-bars tbody tr')].map(r => r.cells[4].innerText)")
    assert shares[-1] == "100.0 %"
    shown = [float(x.split()[0]) for x in shares[:-1]]
    assert abs(sum(shown) - 100.0) < 0.1 * len(shown), shares
    assert shares[0].split()[0] == to_fixed(100 * layers[0]["median_ns"] / s["model_ns"]["p50"], 1)
    assert shares[-2].split()[0] == to_fixed(100 * s["unattributed"]["share"], 1)
    summary = page.locator("#profile table.profile-summary").inner_text()
    assert to_fixed(s['coverage'], 3) in summary and tor["trace"]["file"] in summary
    assert "sum of layer medians / model median" in summary and "unattributed" in summary
    o = tor["profile"]["overhead"]  # the profiler's overhead, as measured in the record
    assert f"{to_fixed(o['ratio'], 2)}x: profiled p50" in summary and "plain p50" in summary
    # the trace is copied into the site and linked: the bytes the record's sha256 names
    href = page.locator("#profile a[data-trace]").get_attribute("href")
    assert href == f"data/traces/{tor['trace']['sha256']}.trace.json.gz"
    assert hashlib.sha256((site[0] / href).read_bytes()).hexdigest() == tor["trace"]["sha256"]
    assert not page.problems


def test_only_the_trace_a_record_names_is_copied(tmp_path, monkeypatch):
    """A record is input like any other: a trace name that leaves the record's folder, a link,
    a FIFO, a file whose sha256 differs or one over the size bound is not copied (no link)."""
    from cr.dashboard import records

    folder, data = tmp_path / "records", tmp_path / "site" / "data"
    folder.mkdir()
    blob = b"\x1f\x8b not really gzip, but bytes with a hash"
    sha = hashlib.sha256(blob).hexdigest()
    (folder / "a.trace.json.gz").write_bytes(blob)
    (tmp_path / "outside.trace.json.gz").write_bytes(blob)
    (folder / "link.trace.json.gz").symlink_to(tmp_path / "outside.trace.json.gz")
    os.mkfifo(folder / "fifo.trace.json.gz")
    record_path = str(folder / "r.json")

    def copied(name, digest=sha):
        return records.copy_trace({"trace": {"file": name, "sha256": digest}}, record_path, str(data))

    for name in ("../outside.trace.json.gz", str(tmp_path / "outside.trace.json.gz"), "link.trace.json.gz",
                 "fifo.trace.json.gz", "a.json", "missing.trace.json.gz", None, 3):
        assert copied(name) is None, name
    assert copied("a.trace.json.gz", "0" * 64) is None  # not the file the record names
    assert not (data / "traces").exists() or not any((data / "traces").iterdir())
    monkeypatch.setattr(records, "TRACE_MAX_BYTES", len(blob) - 1)
    assert copied("a.trace.json.gz") is None
    monkeypatch.setattr(records, "TRACE_MAX_BYTES", len(blob))
    assert copied("a.trace.json.gz") == f"data/traces/{sha}.trace.json.gz"
    assert (data / "traces" / f"{sha}.trace.json.gz").read_bytes() == blob


def test_compare_page_shows_matched_layers_side_by_side(page, profiled_site):
    site, ort, tor, _ = profiled_site
    _open(page, site, f"#/compare/{ort['uid']},{tor['uid']}")
    page.wait_for_selector("#profile-compare-table")
    layers = page.evaluate("[...document.querySelectorAll('#profile-compare-table tbody tr')].map(r => r.dataset.layer)")
    assert {"features.0", "features.2", "classifier.1", "classifier.3"} <= set(layers), layers
    text = page.locator("#profile-compare-table").inner_text()
    assert "onnxruntime" in text and "torch (ratio)" in text and "x)" in text
    assert not page.problems


def test_hostile_profile_fields_render_as_text(page, profiled_site, tmp_path):
    import copy
    import json

    from cr.dashboard import build

    _, ort, tor, _ = profiled_site
    bad = copy.deepcopy(tor)
    bad["uid"] = "badbadbadbadbad0"
    bad["profile"]["layers"] = [{"name": "<img src=x onerror=alert(1)>", "op": "<b>op</b>", "per_query_ns": "many",
                                 "path": None, "class": 7}, None, 3, "text", {"name": "x", "per_query_ns": -5}]
    bad["profile"]["summary"] = {"coverage": "high", "model_ns": [1, 2],
                                 "unattributed": {"ns": 5, "share": "most", "meaning": "<img src=y onerror=alert(3)>"}}
    bad["profile"]["overhead"] = {"ratio": "fast", "why": "<b>never</b>"}
    bad["trace"] = {"file": "<script>alert(2)</script>", "sha256": 12, "events": {"a": 1}}
    other = copy.deepcopy(ort)
    other["uid"] = "badbadbadbadbad1"
    other["profile"]["layers"] = {"not": "a list"}
    folder = tmp_path / "records"
    folder.mkdir()
    for rec in (bad, other, tor):
        (folder / f"{rec['uid']}.json").write_text(json.dumps(rec))
    site = tmp_path / "hostile-site"
    build(folder, site)
    _open(page, (site,), f"#/result/{bad['uid']}")
    page.wait_for_selector("#profile-bars")
    assert "<img src=x" in page.locator("#profile-bars").inner_text()  # shown as text, never as markup
    assert page.locator("#profile a[data-trace]").count() == 0  # its trace names no file of the site
    assert page.locator("#profile-bars img").count() == 0 and page.locator("#profile img").count() == 0
    summary = page.locator("#profile table.profile-summary").inner_text()
    assert "<img src=y" in summary and "not measured: <b>never</b>" in summary  # text, never markup
    _open(page, (site,), f"#/compare/{bad['uid']},{other['uid']},{tor['uid']}")
    page.wait_for_selector("#profile-compare")
    assert not page.problems, page.problems
