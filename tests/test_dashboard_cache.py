"""The build's saved state (docs/dashboard.md, How a build works): a rebuild reads only the
record files that changed, gives the bytes a clean build gives, and never shows a figure
from a saved state that is corrupt, edited or sealed with another key."""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from cr.dashboard import build, sample
from cr.events import CollectingReporter, set_reporter

BUILD = sys.modules["cr.dashboard.build"]  # the module (cr.dashboard.build is also the function's name)


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setattr(BUILD, "BUNDLE_SIZE", 4)  # many bundles for 60 records
    folder = tmp_path / "results"
    sample.write_store(folder, 60, samples=64)
    return folder


def _site(folder: Path) -> dict:
    """The site's files and their bytes (the builder's private state left out)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.relative_to(folder).as_posix().startswith(".cr-dashboard")}


def _clean(store: Path, tmp_path: Path) -> dict:
    out = tmp_path / "clean"
    shutil.rmtree(out, ignore_errors=True)
    build(store, out, incremental=False)
    return _site(out)


def _bench_records(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*.json") if '"action": "benchmark"' in p.read_text(encoding="utf-8"))


def _add_copy(store: Path, record: Path, uid: str) -> Path:
    """A new benchmark result: a copy of record (and its side file) under another uid."""
    old = record.stem
    side = record.with_name(f"{old}.latencies.i64")
    target = store / uid[:2]
    target.mkdir(exist_ok=True)
    shutil.copyfile(side, target / f"{uid}.latencies.i64")
    new = target / f"{uid}.json"
    new.write_text(record.read_text(encoding="utf-8").replace(old, uid), encoding="utf-8")
    return new


def _index(out: Path) -> dict:
    text = (out / "data" / "index.js").read_text(encoding="utf-8")
    body = text[len("window.CR_DATA_INDEX=JSON.parse('"):-len("');\n")]
    return json.loads(body.replace("\\'", "'").replace("\\\\", "\\"))


def test_rebuild_after_add_change_remove_equals_a_clean_build(store, tmp_path):
    out = tmp_path / "site"
    first = build(store, out)
    assert first.processed == 60 and first.results == 60

    records = _bench_records(store)
    _add_copy(store, records[0], "ffff000000000001")
    info = build(store, out)
    assert 0 < info.processed <= 8 and info.results == 61  # the new record's bundle only
    assert _site(out) == _clean(store, tmp_path)

    # changed in place, its size and times kept: a new inode (the results store writes
    # through a temp file and a rename) is enough to read it again
    changed = records[1]
    text = changed.read_text(encoding="utf-8")
    st = changed.stat()
    at = text.index('"samples_per_s": ') + len('"samples_per_s": ')
    edited = text[:at] + ("9" if text[at] != "9" else "8") + text[at + 1:]  # another throughput, same length
    assert len(edited) == len(text) and edited != text
    temp = changed.with_suffix(".tmp")
    temp.write_text(edited, encoding="utf-8")
    os.utime(temp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(temp, changed)
    assert changed.stat().st_mtime_ns == st.st_mtime_ns and changed.stat().st_size == st.st_size
    info = build(store, out)
    assert 0 < info.processed <= 8
    assert _site(out) == _clean(store, tmp_path)

    removed = records[2]
    removed.unlink()
    removed.with_name(f"{removed.stem}.latencies.i64").unlink()
    info = build(store, out)
    assert info.results == 60 and 0 < info.processed <= 8
    assert _site(out) == _clean(store, tmp_path)
    assert removed.stem not in (out / "data" / "runs.js").read_text(encoding="utf-8")


def test_a_first_build_lists_without_stats_and_a_listing_without_stats_is_never_compared(store, tmp_path, monkeypatch):
    import importlib

    builder = importlib.import_module("cr.dashboard.build")
    scan, listings = builder._scan, []

    def recording(results, skip_dir, stats=True):
        listings.append(stats)
        return scan(results, skip_dir, stats)

    monkeypatch.setattr(builder, "_scan", recording)
    out = tmp_path / "site"
    assert build(store, out).processed == 60 and listings == [False]  # nothing built there: the workers stat
    assert build(store, out).workers == 0 and listings == [False, True]  # their stats are the next listing's
    # a listing without stats (a build finished between it and the lock) is not compared with that build's state
    monkeypatch.setattr(builder, "_scan", lambda results, skip_dir, stats=True: scan(results, skip_dir, False))
    info = build(store, out)
    assert info.processed == 60 and info.results == 60
    assert _site(out) == _clean(store, tmp_path)
    monkeypatch.setattr(builder, "_scan", scan)
    assert build(store, out).workers == 0


def test_rebuild_with_nothing_changed_reads_and_writes_nothing(store, tmp_path):
    out = tmp_path / "site"
    build(store, out)
    before = {p: p.stat().st_mtime_ns for p in (out / "data").rglob("*") if p.is_file()}
    info = build(store, out)
    assert info.processed == 0 and info.reused == 60 and info.workers == 0
    assert info.results == 60 and info.rows > 0
    assert {p: p.stat().st_mtime_ns for p in (out / "data").rglob("*") if p.is_file()} == before
    # an output file edited by hand is not left as it is: the rebuild writes it again
    (out / "data" / "index.js").write_text("window.CR_DATA_INDEX={};\n", encoding="utf-8")
    build(store, out)
    assert _site(out) == _clean(store, tmp_path)


def _tamper_one_figure(out: Path) -> tuple[Path, float]:
    """Put a p50 the record does not hold into a saved state, keeping it valid JSON."""
    from cr.dashboard.records import F

    for path in sorted((out / ".cr-dashboard").glob("*.json")):
        head, _, body = path.read_bytes().partition(b"\n")
        state = json.loads(body)
        for entry in state["files"].values():
            if entry[2] is not None and entry[2][F["p50_ns"]] is not None:
                entry[2][F["p50_ns"]] = 1.0
                path.write_bytes(head + b"\n" + json.dumps(state, separators=(",", ":")).encode("utf-8"))
                return path, 1.0
    raise AssertionError("no benchmark summary in the saved states")


def _p50s(out: Path) -> set:
    index = _index(out)
    at = index["columns"].index("p50_ns")
    return {row[at] for row in index["rows"]}


@pytest.mark.parametrize("how", ["edited", "resealed with another key", "truncated", "not JSON", "other bundle's"])
def test_a_saved_state_that_does_not_verify_is_read_again(store, tmp_path, how):
    from cr.dashboard import records

    out = tmp_path / "site"
    build(store, out)
    states = sorted((out / ".cr-dashboard").glob("*.json"))
    if how == "edited":
        victim, _ = _tamper_one_figure(out)
    elif how == "resealed with another key":
        victim, _ = _tamper_one_figure(out)
        body = victim.read_bytes().partition(b"\n")[2]
        victim.write_bytes(records.seal_state(os.urandom(32), victim.stem, json.loads(body)))
    elif how == "truncated":
        victim = states[0]
        victim.write_bytes(victim.read_bytes()[:100])
    elif how == "not JSON":
        victim = states[0]
        victim.write_bytes(b"\x00\xff" * 50)
    else:  # a valid state, moved to another bundle's name
        victim = states[1]
        victim.write_bytes(states[0].read_bytes())
    for record in _bench_records(store)[:1]:  # something changed, so the rebuild is not a no-op
        os.utime(record)
    reporter = CollectingReporter()
    old = set_reporter(reporter)
    try:
        info = build(store, out)
    finally:
        set_reporter(old)
    assert info.rejected == 1
    assert any(f"{victim.name}: the build's saved state does not verify" in w for w in reporter.warnings)
    assert 1.0 not in _p50s(out)
    assert _site(out) == _clean(store, tmp_path)
    assert build(store, out).rejected == 0  # sealed again by that build


def test_an_edited_marker_makes_the_next_build_read_everything(store, tmp_path):
    out = tmp_path / "site"
    build(store, out)
    _tamper_one_figure(out)
    marker = out / ".cr-dashboard.json"
    meta = json.loads(marker.read_text(encoding="utf-8"))
    meta["inputs"] = "0" * 64  # so that a rebuild with nothing changed does not stop at the marker
    marker.write_text(json.dumps(meta), encoding="utf-8")
    info = build(store, out)
    assert info.processed == 60  # the seal did not verify: nothing saved is trusted
    assert 1.0 not in _p50s(out)
    assert _site(out) == _clean(store, tmp_path)


def test_the_key_is_private_to_the_user_and_a_damaged_one_is_replaced(store, tmp_path):
    out = tmp_path / "site"
    build(store, out)
    key = Path(os.environ["CR_HOME"]) / BUILD.KEY_FILE
    assert len(key.read_bytes()) == 32 and stat.S_IMODE(key.stat().st_mode) == 0o600
    key.write_bytes(b"short")
    os.utime(_bench_records(store)[0])
    info = build(store, out)
    assert info.processed == 60 and len(key.read_bytes()) == 32  # a new key: every state read again
    assert _site(out) == _clean(store, tmp_path)


def test_a_marker_from_elsewhere_never_removes_files_outside_the_site(store, tmp_path):
    out = tmp_path / "site"
    build(store, out)
    outside = tmp_path / "keep.txt"
    outside.write_text("keep me", encoding="utf-8")
    marker = out / ".cr-dashboard.json"
    meta = json.loads(marker.read_text(encoding="utf-8"))
    meta["static"] = meta["static"] + ["../keep.txt"]
    marker.write_text(json.dumps(meta), encoding="utf-8")
    build(store, out)
    assert outside.read_text(encoding="utf-8") == "keep me"


def test_a_changed_builder_is_not_taken_for_the_last_one(store, tmp_path, monkeypatch):
    out = tmp_path / "site"
    build(store, out)
    assert build(store, out).processed == 0 and build(store, out).workers == 0  # nothing changed: stops at the marker
    monkeypatch.setattr(BUILD, "_code", lambda: "another builder")  # as after an upgrade that kept version and format
    info = build(store, out)
    assert info.workers == 1 and info.processed == 0  # past the marker: the index is written again from the states
