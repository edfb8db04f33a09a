"""cr results list at scale: the store's rows() pages through the index, the command prints
as rows come, and the output is what the whole-list code printed (same rows, same order,
the same --json text). That memory stays flat as the store grows is measured by
benchmarks/bench_results.py, not here."""
from __future__ import annotations

import builtins
import json
import os

import pytest
from click.testing import CliRunner
from helpers.results import make_record, uid_of


@pytest.fixture
def store(cr_home):
    from cr.results.store import default_store

    with default_store() as s:
        yield s


@pytest.fixture
def tied(store):
    """23 results, several started at the same second (the uid breaks the tie), two backends."""
    records = []
    for i in range(23):
        rec = make_record(uid_of(100 + i), backend="torch" if i % 3 == 0 else "onnxruntime",
                          started=f"2026-03-{1 + i // 4:02d}T10:00:00.000Z")
        store.add(rec)
        records.append(rec)
    return records


def _newest_first(records) -> list[str]:
    return [r["uid"] for r in sorted(records, key=lambda r: (r["started"], r["uid"]), reverse=True)]


@pytest.mark.parametrize("page", [1, 3, 4, 500])
def test_rows_in_pages_give_every_result_once_newest_first(store, tied, page):
    assert [r["uid"] for r in store.rows(page=page)] == _newest_first(tied)
    torch = [r for r in tied if r["backend"]["name"] == "torch"]
    assert [r["uid"] for r in store.rows(page=page, backend="torch")] == _newest_first(torch)
    for limit in (1, 3, 7, 30):
        assert [r["uid"] for r in store.rows(page=page, limit=limit)] == _newest_first(tied)[:limit]
    assert list(store.rows(page=page)) == list(store.rows(page=1000))  # the same summaries, whatever the page


def test_a_result_edited_behind_the_store_is_read_again_in_its_page(store, tied):
    rows = store.rows(page=2)
    first = next(rows)
    victim = _newest_first(tied)[5]  # in a later page
    path = next(r["file"] for r in store.list() if r["uid"] == victim)
    text = open(path, encoding="utf-8").read().replace('"status": "ok"', '"status": "failed"')
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    os.utime(path, ns=(1, 1))  # a new mtime whatever the clock's resolution
    later = {r["uid"]: r for r in rows}
    assert first["uid"] == _newest_first(tied)[0] and later[victim]["status"] == "failed"


def test_json_streamed_is_the_text_of_the_whole_list(capsys):
    from cr.cli import output
    from cr.cli.results import _stream_json

    rows = [{"uid": "a1", "x": None, "name": "caf\u00e9 \u0085 \u202e", "n": 1.5},
            {"uid": "b2", "nested": {"k": [1, 2]}, "name": "two"}]
    for data in (rows, rows[:1], []):
        output.emit_json(data)
        expected = capsys.readouterr().out
        _stream_json(iter(data))
        assert capsys.readouterr().out == expected


def _list(*args) -> list[str]:
    from cr.cli.results import results

    run = CliRunner().invoke(results, ["list", *args])
    assert run.exit_code == 0, run.output
    return run.output.splitlines()


def test_long_table_streams_the_same_rows_in_order(store, tied, monkeypatch):
    from cr.cli import results as cli

    short = _list()  # under FIRST_PAGE rows: the table as output.table draws it
    assert [line.split()[0] for line in short[1:]] == _newest_first(tied)
    monkeypatch.setattr(cli, "FIRST_PAGE", 4)
    monkeypatch.setattr("cr.results.store.PAGE", 3)
    streamed = _list()
    assert streamed[0].split() == short[0].split() and [line.split()[0] for line in streamed[1:]] == _newest_first(tied)
    assert [line.split() for line in streamed] == [line.split() for line in short]  # the same cells; widths of the first four
    assert [line.split()[0] for line in _list("--limit", "9")[1:]] == _newest_first(tied)[:9]


def test_listing_3000_results_reads_no_record_file(cr_home, monkeypatch):
    """The listing comes from the index: once it is up to date, no record or latency file
    is opened, however many rows are printed."""
    from cr.dashboard import sample
    from cr.results.store import default_store

    root = cr_home / "results"
    assert sample.write_store(root, 3000, samples=16) == 3000  # laid out as the store keeps them
    with default_store() as s:
        assert s.count() == 3000  # indexes them (reads each once)
    opened = []
    real_open, real_os_open = builtins.open, os.open

    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: (opened.append(str(path)) if str(path).endswith(
        (".json", ".i64")) else None) or real_open(path, *a, **k))
    monkeypatch.setattr(os, "open", lambda path, *a, **k: (opened.append(str(path)) if str(path).endswith(
        (".json", ".i64")) else None) or real_os_open(path, *a, **k))
    lines = _list()
    rows = json.loads("\n".join(_list("--json")))
    assert len(lines) == 3001 and len(rows) == 3000 and len({r["uid"] for r in rows}) == 3000
    assert opened == [], opened[:5]
