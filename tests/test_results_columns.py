"""`cr results list/export` answer "which stack ran what": the configuration columns (backend,
variant/precision, effective threads, batch, pipeline, dataset split) and where a result came
from (campaign job, study trial), each filterable; the index rebuilds a cache of the old format."""
from __future__ import annotations

import csv
import io
import json
import sqlite3

import pytest
from helpers.results import make_record, uid_of

QUICK = ["--min-duration", "0.2", "--min-queries", "100", "--warmup", "10"]


def _json(done):
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def store(cr_home):
    from cr.results.store import default_store

    with default_store() as s:
        yield s


@pytest.fixture
def origins(store):
    """Four benchmarks: two jobs of campaign 'sweep', two trials of study 'pick', as those commands record them."""
    records = []
    for n, (kind, name, ident, threads) in enumerate([("campaign", "sweep", "1a2b3c4d5e6f7081", 1),
                                                      ("campaign", "sweep", "9a8b7c6d5e4f3021", 2),
                                                      ("study", "pick", 0, 1), ("study", "pick", 7, 2)], start=1):
        r = make_record(uid_of(n), started=f"2026-03-0{n}T10:00:00.000Z")
        r["config"]["threads"] = threads
        r["config"]["batch_size"] = 8
        r[kind] = ({"name": name, "uid": "c" * 16, "job": ident, "attempt": 1} if kind == "campaign"
                   else {"name": name, "trial": ident})
        store.add(r)
        records.append(r)
    return records


def test_list_json_carries_origin_and_configuration_and_filters_them(run_cr, origins):
    rows = _json(run_cr("results", "list", "--json"))
    by_uid = {r["uid"]: r for r in rows}
    first = by_uid[uid_of(1)]
    assert first["campaign"] == "sweep" and first["campaign_job"] == "1a2b3c4d5e6f7081" and first["study"] is None
    assert first["threads"] == 1 and first["batch_size"] == 8 and first["pipeline"] == "cd" * 32
    assert first["backend"] == "onnxruntime" and first["variant"] == "onnx" and first["precision"] == "fp32"
    assert by_uid[uid_of(4)]["study"] == "pick" and by_uid[uid_of(4)]["trial"] == "7" and by_uid[uid_of(3)]["trial"] == "0"

    def uids(*args):
        return sorted(r["uid"] for r in _json(run_cr("results", "list", "--json", *args)))

    assert uids("--campaign", "sweep") == sorted([uid_of(1), uid_of(2)])
    assert uids("--campaign-job", "9a8b7c6d5e4f3021") == [uid_of(2)]
    assert uids("--study", "pick") == sorted([uid_of(3), uid_of(4)])
    assert uids("--study", "pick", "--threads", "2") == [uid_of(4)]
    assert uids("--batch-size", "8", "--threads", "1") == sorted([uid_of(1), uid_of(3)])
    assert uids("--pipeline", "CDCD") == uids()  # the first digits of the sha256, any case
    assert uids("--precision", "int8") == [] and uids("--study", "another") == []

    table = run_cr("results", "list", "--study", "pick")
    assert table.returncode == 0, table.stderr
    line = next(x for x in table.stdout.splitlines() if x.startswith(uid_of(4)))
    assert "study pick trial 7" in line and "threads=2 batch=8 pipeline=cdcdcdcd" in line
    bad = run_cr("results", "list", "--threads", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_export_csv_and_json_take_the_same_filters(run_cr, origins, tmp_path):
    done = run_cr("results", "export", "--format", "csv", "--campaign", "sweep")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert {"split", "threads", "batch_size", "pipeline", "campaign", "campaign_job", "study", "trial"} <= set(rows[0])
    assert sorted((r["uid"], r["threads"], r["campaign_job"]) for r in rows) == sorted(
        [(uid_of(1), "1", "1a2b3c4d5e6f7081"), (uid_of(2), "2", "9a8b7c6d5e4f3021")])
    out = tmp_path / "pick.json"
    assert run_cr("results", "export", "--format", "json", "--study", "pick", "-o", out).returncode == 0
    assert sorted(r["study"]["trial"] for r in json.loads(out.read_text())) == [0, 7]


def test_effective_threads_are_the_ones_that_ran():
    from cr.results.summary import effective_threads

    r = make_record(uid_of(1))
    assert effective_threads(r) is None  # nothing said: the framework's default
    r["config"]["threads"] = 2
    assert effective_threads(r) == 2
    r["backend"]["options"] = {"intra_op_threads": 1}  # onnxruntime's own option wins over threads
    r["config"]["backend_options"] = {"intra_op_threads": 1}
    assert effective_threads(r) == 1
    r["backend"]["info"] = {"threads": 4}  # what the backend reports it ran with
    assert effective_threads(r) == 4
    r["threads"] = 3  # the record's own statement of the effective value
    assert effective_threads(r) == 3
    r["threads"] = True  # junk is ignored, never an exception
    assert effective_threads(r) == 4


def test_an_index_of_the_old_format_is_rebuilt_with_the_new_columns(store, origins):
    from cr.results.index import INDEX_FILE

    assert store.list(study="pick")
    path = store.root / INDEX_FILE
    store.close()
    db = sqlite3.connect(path)
    db.execute("UPDATE info SET value = '3' WHERE key = 'format'")
    db.execute("DROP INDEX results_study")
    db.execute("ALTER TABLE results DROP COLUMN study")  # as a format-3 cache lacks it
    db.commit()
    db.close()
    from cr.results.store import default_store

    with default_store() as again:
        assert sorted(r["uid"] for r in again.list(study="pick")) == sorted([uid_of(3), uid_of(4)])


def test_real_benchmarks_state_threads_batch_and_pipeline(run_cr, tmp_path):
    out = tmp_path / "b.json"
    done = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "--threads", "2", "--batch-size", "8",
                  *QUICK, "-o", out)
    assert done.returncode == 0, done.stderr
    ours = run_cr("benchmark", "model", "lenet-digits", "--backend", "onnxruntime", "-O", "intra_op_threads=1", *QUICK)
    assert ours.returncode == 0, ours.stderr
    record = json.loads(out.read_text())
    rows = {r["uid"]: r for r in _json(run_cr("results", "list", "--json", "--model", "lenet-digits"))}
    row = rows[record["uid"]]
    assert row["threads"] == 2 and row["batch_size"] == 8 and row["pipeline"] == record["pipeline"]["sha256"]
    assert row["split"] == record["config"]["split"] and row["precision"] == "fp32"
    (other,) = [r for u, r in rows.items() if u != record["uid"]]
    assert other["threads"] == 1  # the backend's own option, as onnxruntime applies it
    assert [r["uid"] for r in _json(run_cr("results", "list", "--json", "--threads", "2"))] == [record["uid"]]
