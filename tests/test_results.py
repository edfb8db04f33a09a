"""The results store (cr.results) and `cr results`: the real CLI, real files, real SQLite, real processes."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from array import array
from pathlib import Path

import pytest
from helpers.results import latencies, make_record, uid_of

TESTS = Path(__file__).resolve().parent


@pytest.fixture
def cr(run_cr):
    """cr("list", "--json") runs `cr results list --json` (the real CLI, in a child process)."""
    return lambda *args, **kw: run_cr("results", *args, **kw)


# -- records as the runtime makes them ----------------------------------------------------------


PI_PLATFORM = {"os": "linux", "arch": "aarch64", "board": "Raspberry Pi 4 Model B", "cpu": {"model": "Cortex-A72", "cores": 4},
               "python": "3.11.2", "fingerprint": "a1b2c3d4e5f60718", "capabilities": ["aarch64", "linux", "neon"]}


@pytest.fixture
def store(cr_home):
    from cr.results.store import default_store

    with default_store() as s:
        yield s


@pytest.fixture
def seeded(store):
    """Six results: benchmarks and validations on two backends, a solution, a Pi, a failure."""
    records = [
        make_record(uid_of(1), started="2026-03-01T10:00:00.000Z"),
        make_record(uid_of(2), backend="torch", variant="torchscript", started="2026-03-02T10:00:00.000Z"),
        make_record(uid_of(3), action="validate", started="2026-03-03T10:00:00.000Z", top1=0.9806),
        make_record(uid_of(4), solution="digits-ort", started="2026-03-04T10:00:00.000Z"),
        make_record(uid_of(5), platform=PI_PLATFORM, started="2026-03-05T10:00:00.000Z"),
        make_record(uid_of(6), status="failed", started="2026-03-06T10:00:00.000Z"),
    ]
    for r in records:
        store.add(r)
    return {r["uid"]: r for r in records}


def _uids(done) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [row["uid"] for row in json.loads(done.stdout)]


# -- the CLI ------------------------------------------------------------------------------------

def test_list_with_each_filter(cr, seeded):
    u = uid_of
    assert _uids(cr("list", "--json")) == [u(6), u(5), u(4), u(3), u(2), u(1)]  # newest first
    assert _uids(cr("list", "--backend", "torch", "--json")) == [u(2)]
    assert _uids(cr("list", "--model", "lenet-digits", "--action", "validate", "--json")) == [u(3)]
    assert _uids(cr("list", "--model", "model:lenet-digits@1.0.0", "--limit", "2", "--json")) == [u(6), u(5)]
    assert _uids(cr("list", "--model", "lenet-digits@2.0.0", "--json")) == []
    assert _uids(cr("list", "--solution", "digits-ort", "--json")) == [u(4)]
    assert _uids(cr("list", "--solution", "solution:digits-ort@1.0.0", "--json")) == [u(4)]
    assert _uids(cr("list", "--platform", "a1b2c3", "--json")) == [u(5)]  # fingerprint prefix
    assert _uids(cr("list", "--platform", "raspberry pi", "--json")) == [u(5)]  # words of the description
    assert _uids(cr("list", "--status", "failed", "--json")) == [u(6)]
    assert _uids(cr("list", "--since", "2026-03-04T00:00:00Z", "--action", "benchmark", "--json")) == [u(6), u(5), u(4)]
    rows = json.loads(cr("list", "--backend", "onnxruntime", "--action", "benchmark", "--status", "ok", "--json").stdout)
    assert [r["uid"] for r in rows] == [u(5), u(4), u(1)]
    one = rows[-1]
    assert one["model"] == "model:lenet-digits@1.0.0" and one["variant"] == "onnx" and one["precision"] == "fp32"
    assert one["p50_ns"] == seeded[u(1)]["metrics"]["latency_ns"]["p50"] and one["samples"] == 200
    assert one["file"].endswith(f"{u(1)[:2]}/{u(1)}.json") and Path(one["file"]).is_file()
    bad = cr("list", "--since", "last tuesday")
    assert bad.returncode == 1 and "--since 'last tuesday'" in bad.stderr and "Traceback" not in bad.stderr


def test_list_table(cr, seeded):
    done = cr("list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert re.split(r"\s{2,}", lines[0]) == [
        "UID", "WHEN", "ACTION", "TARGET", "BACKEND/VARIANT", "CONFIG", "FROM", "PLATFORM", "P50 (ms)", "P99 (ms)",
        "THROUGHPUT (samples/s)", "ACCURACY", "STATUS"]  # one unit per figure, said in the header (docs/output.md)
    by_uid = {line.split()[0]: line for line in lines[1:]}
    assert set(by_uid) == set(seeded)
    assert "solution:digits-ort@1.0.0" in by_uid[uid_of(4)] and "torch/torchscript" in by_uid[uid_of(2)]
    assert "Raspberry Pi 4 Model B" in by_uid[uid_of(5)] and " us " not in by_uid[uid_of(1)] and "samples/s" not in by_uid[uid_of(1)]
    assert "0.9806" in by_uid[uid_of(3)] and by_uid[uid_of(3)].endswith("ok PASS") and by_uid[uid_of(6)].endswith("failed")
    empty = cr("list", "--backend", "tensorrt")
    assert empty.returncode == 0 and empty.stdout == "" and "no stored results match" in empty.stderr


def test_show(cr, seeded):
    uid = uid_of(1)
    done = cr("show", uid[:12])  # a unique prefix
    assert done.returncode == 0, done.stderr
    assert f"result {uid}" in done.stdout and "p99" in done.stdout and "model:lenet-digits@1.0.0" in done.stdout
    assert "200 latencies" in done.stdout
    as_json = json.loads(cr("show", uid, "--json").stdout)
    assert as_json["raw"]["latencies_ns_file"] == f"{uid}.latencies.i64" and as_json["raw"]["count"] == 200
    with_raw = json.loads(cr("show", uid, "--json", "--raw").stdout)
    assert with_raw["raw"] == {"latencies_ns": seeded[uid]["raw"]["latencies_ns"].tolist()}
    assert {k: v for k, v in with_raw.items() if k != "raw"} == {k: v for k, v in as_json.items() if k != "raw"}
    ambiguous = cr("show", "00")
    assert ambiguous.returncode == 1 and "matches several results" in ambiguous.stderr
    missing = cr("show", "ffff")
    assert missing.returncode == 1 and "no result 'ffff'" in missing.stderr


def test_compare_judges_noise_from_raw_samples(cr, store):
    same_a, same_b = latencies(1), latencies(2)  # one distribution, two seeds
    slow = latencies(3, base_ns=200_000.0)  # twice as slow
    for n, values in ((1, same_a), (2, same_b), (3, slow)):
        store.add(make_record(uid_of(n, 7), values=values))
    done = cr("compare", uid_of(1, 7), uid_of(2, 7), uid_of(3, 7), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    metrics = {m["metric"]: m for m in report["metrics"]}
    for key in ("p50_ns", "p90_ns", "p99_ns", "mean_ns"):
        m = metrics[key]
        assert m["within_noise"][0] is None and m["within_noise"][1] is True, (key, m)
        assert m["within_noise"][2] is False and m["verdict"][2] == "slower", (key, m)
        assert 0.8 < m["rel_diff"][2] < 1.2 and abs(m["rel_diff"][1]) < 0.1
        lo, hi = m["interval"][1]
        assert lo <= m["values"][1] - m["values"][0] <= hi
    assert metrics["throughput_qps"]["within_noise"][2] is False  # single-stream: judged through the mean
    assert "bootstrap" in metrics["p50_ns"]["method"] and report["baseline"] == uid_of(1, 7)
    # one judgement: the table's row is the significance section's verdict, its interval the same one
    for pair, column in zip(report["significance"]["pairs"], (1, 2)):
        for row in pair["metrics"]:
            m = metrics[row["metric"]]
            assert m["verdict"][column] == row["verdict"] and m["within_noise"][column] == (row["verdict"] == "inconclusive")
            base = m["values"][0]
            assert m["interval"][column] == pytest.approx([base * (row["ci"][0] - 1), base * (row["ci"][1] - 1)])
    table = cr("compare", uid_of(1, 7), uid_of(3, 7))
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    assert header.split()[-2:] == ["WITHIN", "NOISE"] and "DIFF" in header
    p50 = next(r for r in rows if r.startswith("p50 latency"))
    assert p50.split()[-1] == "NO" and "+" in p50 and "%" in p50
    one = cr("compare", uid_of(1, 7))
    assert one.returncode == 1 and "two or more" in one.stderr


def test_compare_without_raw_samples_judges_nothing_and_says_why(store):
    """No second, weaker rule (the IQR and count) that could disagree with the verdicts: without
    raw samples nothing is judged, and the significance section says why."""
    a = make_record(uid_of(1, 8), values=latencies(11))
    b = make_record(uid_of(2, 8), values=latencies(12))
    a["raw"] = b["raw"] = None
    store.add(a), store.add(b)
    report = store.compare([uid_of(1, 8), uid_of(2, 8)])
    metrics = {m["metric"]: m for m in report["metrics"]}
    for key in ("p50_ns", "p99_ns", "throughput_qps"):
        assert metrics[key]["within_noise"][1] is None and metrics[key]["verdict"][1] is None and metrics[key]["method"] is None
    assert metrics["p50_ns"]["values"][0] == a["metrics"]["latency_ns"]["p50"]  # the figures are still shown
    assert "carries no raw latencies" in report["significance"]["pairs"][0]["missing"]


def test_export_csv_and_json_round_trip(cr, seeded, tmp_path, cr_home):
    out = tmp_path / "all.csv"
    done = cr("export", "--format", "csv", "-o", out)
    assert done.returncode == 0 and "exported 6 result(s)" in done.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    from cr.results.summary import COLUMNS

    assert list(rows[0]) == list(COLUMNS) and {r["uid"] for r in rows} == set(seeded)
    row = next(r for r in rows if r["uid"] == uid_of(3))
    assert row["action"] == "validate" and float(row["top1"]) == 0.9806 and row["p50_ns"] == ""
    torch_only = cr("export", "--format", "csv", "--backend", "torch")  # to stdout, filtered
    assert [r["uid"] for r in csv.DictReader(io.StringIO(torch_only.stdout))] == [uid_of(2)]

    out = tmp_path / "all.json"
    assert cr("export", "--format", "json", "-o", out).returncode == 0
    records = json.loads(out.read_text())
    assert [r["uid"] for r in records] == [uid_of(n) for n in (6, 5, 4, 3, 2, 1)]
    assert records[-1]["raw"] == {"latencies_ns": seeded[uid_of(1)]["raw"]["latencies_ns"].tolist()}
    assert records[-1]["metrics"] == seeded[uid_of(1)]["metrics"]
    no_raw = json.loads(cr("export", "--format", "json", "--no-raw", "--limit", "1").stdout)
    assert len(no_raw) == 1 and no_raw[0]["raw"] is None

    # the JSON export imports elsewhere (another machine: another CR_HOME), latencies included
    other = tmp_path / "other-home"
    env = {**os.environ, "CR_HOME": str(other)}
    done = subprocess.run([sys.executable, "-m", "cr", "results", "add", str(out)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("added ") == 6
    from cr.results.store import ResultStore

    with ResultStore(other / "results") as imported:
        assert len(imported.list()) == 6
        assert imported.get(uid_of(1), raw=True)["raw"]["latencies_ns"] == seeded[uid_of(1)]["raw"]["latencies_ns"]


def test_rm(cr, seeded, store):
    done = cr("rm", uid_of(1), uid_of(2)[:-1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["removed", uid_of(1), "removed", uid_of(2)]
    assert uid_of(1) not in _uids(cr("list", "--json"))
    assert not (store.root / uid_of(1)[:2] / f"{uid_of(1)}.latencies.i64").exists()
    refused = cr("rm", uid_of(3), "ffffffffffffffff")  # all are resolved before any is removed
    assert refused.returncode == 1 and "no result 'ffffffffffffffff'" in refused.stderr
    assert uid_of(3) in _uids(cr("list", "--json"))


def test_add_refuses_invalid_files_and_imports_the_rest(cr, tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(json.loads(json.dumps(make_record(uid_of(1), values=latencies(5, n=50)),
                                                     default=lambda a: a.tolist()))))
    bad = tmp_path / "bad.json"
    broken = make_record(uid_of(2))
    del broken["status"]
    bad.write_text(json.dumps(broken, default=lambda a: a.tolist()))
    done = cr("add", good, bad)
    assert done.returncode == 1
    assert f"added {uid_of(1)}" in done.stdout
    assert f"{bad}" in done.stderr and "missing required field 'status'" in done.stderr
    assert "1 of 2 file(s) could not be imported" in done.stderr


# -- the API and robustness ---------------------------------------------------------------------

def test_record_write_output_imports_inline_or_with_side_file(store, tmp_path, monkeypatch):
    from cr.results import record

    values = latencies(9, n=64)
    inline = record.write(make_record(uid_of(1), values=values), tmp_path / "inline.json")
    monkeypatch.setattr(record, "INLINE_MAX", 10)
    beside = record.write(make_record(uid_of(2), values=values), tmp_path / "beside.json")
    assert (tmp_path / "beside.latencies.i64").is_file()
    assert store.add_file(inline) == [uid_of(1)] and store.add_file(beside) == [uid_of(2)]
    for uid in (uid_of(1), uid_of(2)):
        got = store.get(uid, raw=True)["raw"]["latencies_ns"]
        assert isinstance(got, array) and got.typecode == "q" and got == values
        stored = json.loads((store.root / uid[:2] / f"{uid}.json").read_text())
        assert stored["raw"]["latencies_ns_file"] == f"{uid}.latencies.i64" and stored["raw"]["count"] == 64
    # the record as stored validates against the shipped schema with jsonschema itself
    import jsonschema

    from cr.results.validate import schema

    jsonschema.Draft202012Validator(schema()).validate(json.loads((store.root / "00" / f"{uid_of(1)}.json").read_text()))


def test_add_is_idempotent_and_invalid_records_are_refused(store):
    from cr.results.store import InvalidResult

    rec = make_record(uid_of(1))
    store.add(rec)
    path = store.root / "00" / f"{uid_of(1)}.json"
    before = path.stat().st_mtime_ns
    time.sleep(0.01)
    assert store.add(rec) == uid_of(1)
    assert path.stat().st_mtime_ns == before and len(store.list()) == 1  # same bytes: not rewritten
    for change, words in (({"status": "done"}, "/status: expected one of"), ({"uid": "XYZ"}, "/uid: expected a string matching"),
                          ({"started": 5}, "/started: expected string"), ({"components": {}}, "/components: expected array")):
        with pytest.raises(InvalidResult, match=words):
            store.add({**rec, **change})
    with pytest.raises(InvalidResult, match="raw"):
        store.add({**rec, "raw": {"latencies_ns": ["fast", "slow"]}})


def test_compile_and_parity_shaped_records_are_stored(store):
    compiled = make_record(uid_of(1), action="compile")
    compiled.update(backend=None, output={"ref": "model:lenet-digits@1.1.0"}, conversion="onnx->tflite", checks=[], tools={},
                    duration_s=3.2)
    parity = make_record(uid_of(2), action="validate", backend="onnxruntime,torch", top1=0.98)
    parity["parity"] = {"outcome": "PASS", "runs": []}
    store.add(compiled), store.add(parity)
    rows = {r["uid"]: r for r in store.list()}
    assert rows[uid_of(1)]["backend"] is None and rows[uid_of(1)]["action"] == "compile"
    assert rows[uid_of(2)]["backend"] == "onnxruntime,torch" and rows[uid_of(2)]["outcome"] == "PASS"
    assert store.get(uid_of(1))["conversion"] == "onnx->tflite"


def test_side_file_is_verified(store):
    from cr.results.store import InvalidResult

    store.add(make_record(uid_of(1)))
    side = store.root / "00" / f"{uid_of(1)}.latencies.i64"
    blob = bytearray(side.read_bytes())
    blob[0] ^= 1
    side.write_bytes(bytes(blob))
    with pytest.raises(InvalidResult, match="does not match the sha256"):
        store.get(uid_of(1), raw=True)
    assert store.get(uid_of(1))["uid"] == uid_of(1)  # the record itself still reads


def test_hand_edited_broken_files_are_warnings_naming_them(cr, seeded, store):
    not_json = store.root / "00" / f"{uid_of(2)}.json"
    not_json.write_text(not_json.read_text()[:-20])  # cut short, in place
    wrong_type = store.root / "00" / f"{uid_of(3)}.json"
    data = json.loads(wrong_type.read_text())
    data["status"] = 3
    wrong_type.write_text(json.dumps(data))
    no_uid = store.root / "00" / f"{uid_of(4)}.json"
    data = json.loads(no_uid.read_text())
    del data["uid"]
    no_uid.write_text(json.dumps(data))
    done = cr("list", "--json")
    assert done.returncode == 0, done.stderr
    assert set(_uids(done)) == {uid_of(1), uid_of(5), uid_of(6)}
    assert f"Warning: {not_json}: invalid JSON at line" in done.stderr
    assert f"Warning: {wrong_type}: /status: expected one of" in done.stderr
    assert f"Warning: {no_uid}: /: missing required field 'uid'" in done.stderr
    shown = cr("show", uid_of(5))
    assert shown.returncode == 0, shown.stderr
    gone = cr("show", uid_of(2))
    assert gone.returncode == 1 and "no result" in gone.stderr
    # fixed by hand: listed again
    fixed = make_record(uid_of(3), action="validate", started="2026-03-03T10:00:00.000Z", top1=0.9806)
    wrong_type.write_text(json.dumps(fixed))
    assert uid_of(3) in _uids(cr("list", "--json"))
    removed = cr("rm", uid_of(2))  # a broken record is removable by its full uid
    assert removed.returncode == 0 and removed.stdout.split() == ["removed", uid_of(2)] and not not_json.exists()


def test_files_removed_or_added_behind_the_stores_back(cr, seeded, store, tmp_path):
    assert len(_uids(cr("list", "--json"))) == 6  # indexed, shard stamps remembered
    (store.root / "00" / f"{uid_of(1)}.json").unlink()
    assert uid_of(1) not in _uids(cr("list", "--json"))
    missing = cr("show", uid_of(1))
    assert missing.returncode == 1 and "no result" in missing.stderr
    # a result copied in (from a backup, by rsync) with its side file
    from cr.results.store import ResultStore

    with ResultStore(tmp_path / "elsewhere") as other:
        other.add(make_record("ab" + "0" * 14))
        for name in ("ab" + "0" * 14 + ".json", "ab" + "0" * 14 + ".latencies.i64"):
            (store.root / "ab").mkdir(exist_ok=True)
            (store.root / "ab" / name).write_bytes((other.root / "ab" / name).read_bytes())
    assert "ab" + "0" * 14 in _uids(cr("list", "--json"))
    assert store.get("ab00", raw=True)["raw"]["latencies_ns"]


def test_a_damaged_index_is_rebuilt_from_the_files(seeded, store, cr):
    store.close()
    (store.root / "index.sqlite").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(store.root / "index.sqlite") + suffix).unlink(missing_ok=True)
    done = cr("list", "--json")
    assert done.returncode == 0, done.stderr
    assert set(_uids(done)) == set(seeded) and "was damaged" in done.stderr


_WRITER = """
import sys
sys.path.insert(0, sys.argv[1])
from helpers.results import make_record, uid_of
from cr.results.store import default_store
group, count = int(sys.argv[2]), int(sys.argv[3])
store = default_store()
for n in range(count):
    store.add(make_record(uid_of(n, group), started=f"2026-04-01T00:00:{n % 60:02d}.000Z"))
    print(n, flush=True)
"""


def _writer(cr_home: Path, group: int, count: int) -> subprocess.Popen:
    env = {**os.environ, "CR_HOME": str(cr_home)}
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(TESTS), str(group), str(count)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def test_kill_9_while_adding_leaves_a_consistent_store(store, cr_home):
    writer = _writer(cr_home, 3, 300)
    for line in writer.stdout:  # let it write a few dozen, then kill it mid-stream
        if int(line) >= 30:
            break
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    listed = store.list()
    files = sorted(store.root.glob("*/*.json"))
    assert 30 <= len(listed) < 300 and len(listed) == len(files)  # everything visible is complete
    for row in listed:
        assert len(store.get(row["uid"], raw=True)["raw"]["latencies_ns"]) == 200
    again = _writer(cr_home, 3, 300)  # re-running completes (adding is idempotent)
    _, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert len(store.list()) == 300
    store.reindex(full=True, orphan_grace_s=0)
    names = [p.name for p in store.root.glob("*/*")]
    assert not [n for n in names if n.endswith(".tmp")]
    assert len([n for n in names if n.endswith(".latencies.i64")]) == 300


def test_eight_processes_adding_at_once_lose_nothing(store, cr_home, cr):
    writers = [_writer(cr_home, 100 + g, 25) for g in range(8)]
    for w in writers:
        _, err = w.communicate(timeout=120)
        assert w.returncode == 0, err
    assert len(store.list()) == 200
    assert len(_uids(cr("list", "--json"))) == 200
    assert len(list(store.root.glob("*/*.json"))) == 200


def test_results_list_imports_no_framework(seeded, tmp_path, cr_home):
    from conftest import HEAVY, IMPORT_PROBE

    decoys = tmp_path / "decoys"
    for name in HEAVY:
        (decoys / name).mkdir(parents=True)
        (decoys / name / "__init__.py").write_text("")
    for argv in (["results", "list"], ["results", "list", "--json", "--model", "lenet-digits"], ["results", "show", uid_of(1)],
                 ["results", "compare", uid_of(1), uid_of(2)]):
        out = tmp_path / "modules.json"
        done = subprocess.run([sys.executable, "-c", IMPORT_PROBE, str(out), json.dumps(argv)], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "CR_HOME": str(cr_home), "PYTHONPATH": str(decoys)})
        assert done.returncode == 0, done.stderr
        result = json.loads(out.read_text())
        assert result["code"] == 0, (argv, done.stderr)
        top = {m.split(".")[0] for m in result["modules"]}
        assert "cr" in top and not top & set(HEAVY), (argv, sorted(top & set(HEAVY)))
        assert "jsonschema" not in top, argv  # valid records never need it
