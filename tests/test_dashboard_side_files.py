"""Latencies that the results store keeps in side files reach the site as the bytes of the
file (base64 in the record's bundle) and the result page as the same numbers: the build
copies them, lib/data.js decodes them (docs/dashboard.md, Where the data goes)."""
from __future__ import annotations

import base64
import json
import random
from array import array

import pytest

from cr.dashboard import build, sample
from cr.results.significance import thin
from cr.results.store import ResultStore
from helpers.dashboard import _open, _wait, browser, page  # noqa: F401  (browser: the fixture page needs)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A store written by ResultStore.add (latencies always in side files): 1,500 and 5,000
    samples of about 20-40 us, 900 of about 1-10 ms and 700 of about 20-100 ms."""
    root = tmp_path_factory.mktemp("store") / "results"
    rng = random.Random(5)
    values = {}
    with ResultStore(root, durable=False) as store:
        for i, (n, low, high) in enumerate(((1500, 20_000, 40_000), (5000, 20_000, 40_000), (900, 10**6, 10**7),
                                            (700, 2 * 10**7, 10**8))):
            lat = [rng.randrange(low, high) + (2**40 if k == 7 else 0) for k in range(n)]  # one far above 2**32
            rec = sample.benchmark_record(f"m{i}", "onnxruntime", "onnx", "fp32", sample.XEON, lat, uid=f"f{i:015x}",
                                          started=f"2026-11-30T1{i}:00:00.000Z")
            store.add(rec)
            values[rec["uid"]] = lat
    assert all((root / uid[:2] / f"{uid}.latencies.i64").is_file() for uid in values)
    out = tmp_path_factory.mktemp("site") / "dash"
    info = build(root, out)
    assert info.results == 4
    return out, info, values


def _entries(out) -> dict:
    found = {}
    for path in (out / "data" / "results").glob("*.js"):
        for part in path.read_text(encoding="utf-8").split("(window.CR_RESULTS=window.CR_RESULTS||{})")[1:]:
            key, _, body = part.partition("]=")
            found[json.loads(key[1:]).split(":")[1]] = json.loads(body.rstrip().rstrip(";"))
    return found


def test_bundle_holds_the_side_files_bytes_thinned_as_the_cli_thins(site):
    out, _, values = site
    entries = _entries(out)
    for uid, lat in values.items():
        raw, record = entries[uid]["raw"], entries[uid]["record"]
        blob = base64.b64decode(raw["samples_b64"])
        # the fewest low bytes that hold every value kept, as planes (byte b of every value
        # in plane b), when 4 or fewer do; else little-endian int64
        planes = max(1, (max(thin(lat)).bit_length() + 7) // 8)
        if planes <= 4:
            assert raw["samples_planes"] == planes
            n = len(blob) // planes
            kept = [sum(blob[b * n + j] << (8 * b) for b in range(planes)) for j in range(n)]
        else:
            assert "samples_planes" not in raw
            kept = array("q", blob).tolist()  # little-endian, as this host
        assert kept == thin(lat) and raw["count"] == len(lat) and raw["step"] == (1 if len(lat) <= 2048 else 3)
        assert raw["source"] == "file" and raw["problem"] == "" and "samples_ns" not in raw
        assert "raw" not in record and record["uid"] == uid and record["metrics"]["latency_ns"]["count"] == len(lat)


def test_result_page_reads_the_numbers(page, site):
    out, _, values = site
    for uid, lat in values.items():
        _open(page, site, f"#/result/{uid}")
        page.wait_for_selector(f"#latency[data-samples='{len(thin(lat))}']")
        note = page.locator("#latency").inner_text()
        assert (f"From all {len(lat):,} samples." in note) if len(lat) <= 2048 else ("one in every 3" in note)
        # the numbers the views get, exactly (one above 2**32: no 32-bit truncation on the way)
        got = page.evaluate("uid => window.CR_SITE.loadResult(uid).then(rec => rec.raw.samples_ns)", uid)
        assert got == thin(lat)
    assert not page.problems
