"""`cr tune`: a budgeted search over stacks on the real lenet-digits model (onnxruntime, tflite),
resumable after kill -9, failed trials recorded, the report's front and pick, --verify and
--save-solution; and every bad input the issue lists (one Error line, exit 1, nothing lost)."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("optuna")

QUICK = ["--min-duration", "0.2"]
LENET = "model:lenet-digits"


def _records(home: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((home / "results").glob("??/*.json"))] if (home / "results").is_dir() else []


def _one_error(done, *words: str) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    for w in words:
        assert w in errors[0], errors[0]
    return errors[0]


def _tune(run_cr, *args, timeout=300):
    done = run_cr("tune", LENET, *QUICK, "--json", *args, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


# ------------------------------------------------------------------------------- bad input

def test_energy_objective_without_a_sensor_is_one_error(run_cr, cr_home):
    from cr.platform import energy
    from cr.platform.sources import HostSource

    if energy.meters(HostSource(timeout=2.0))[0]:
        pytest.skip("this machine has an energy meter")
    done = run_cr("tune", LENET, "--objective", "p50,energy", env={"CR_ENERGY_COMMAND": ""})
    _one_error(done, "energy")
    assert not (cr_home / "tune").exists() and not _records(cr_home)


def test_constraint_on_a_metric_the_dataset_cannot_give_is_one_error(run_cr, cr_home):
    done = run_cr("tune", LENET, "--backends", "onnxruntime", "--constraint", "map>=0.5")
    _one_error(done, "cannot give map", "top1")
    assert not (cr_home / "tune").exists() and not _records(cr_home)


def test_empty_space_after_excludes_is_one_error(run_cr, cr_home):
    done = run_cr("tune", LENET, "--backends", "onnxruntime,tflite", "--exclude", "backend=onnxruntime",
                  "--exclude", "backend=tflite")
    _one_error(done, "empty", "excluded")
    assert not (cr_home / "tune").exists()


def test_budget_too_small_for_one_trial_is_one_error(run_cr, cr_home):
    _one_error(run_cr("tune", LENET, "--budget", "0"), "too small for one trial")
    assert not (cr_home / "tune").exists()


def test_bad_constraint_and_objective_are_one_error(run_cr):
    _one_error(run_cr("tune", LENET, "--constraint", "top1 about 0.9"), "--constraint")
    _one_error(run_cr("tune", LENET, "--objective", "speed"), "speed")


def test_a_study_of_another_model_is_refused_and_kept(run_cr, cr_home):
    first = _tune(run_cr, "--backends", "onnxruntime", "--budget", "1", "--name", "shared")
    assert first["trials"]["measured"] == 1
    db = cr_home / "tune" / "shared.db"
    before = db.read_bytes()
    _one_error(run_cr("tune", "model:iris-logreg", "--name", "shared"), "belongs to model:lenet-digits")
    assert db.read_bytes() == before
    again = _tune(run_cr, "--backends", "onnxruntime", "--budget", "1", "--name", "shared")  # resumes: nothing new to run
    assert again["ran_now"] == 0 and again["study"]["uid"] == first["study"]["uid"]
    assert [p["id"] for p in again["points"]] == [p["id"] for p in first["points"]]


# ------------------------------------------------------------------------------- the search

def test_search_stores_tagged_records_reports_front_and_saves_the_pick(run_cr, cr_home):
    pytest.importorskip("ai_edge_litert")
    got = _tune(run_cr, "--backends", "onnxruntime,tflite", "--batch", "1,8", "--budget", "3",
                "--constraint", "top1>=ref-0.01", "--save-solution", "lenet-pick")
    study = got["study"]
    assert got["configurations"] == 6 and got["trials"]["measured"] >= 3 and got["local_only"]
    ok = [p for p in got["points"] if p["state"] == "ok"]
    assert ok and all(p["status"] in ("front", "tied", "dominated") for p in ok)
    for p in ok:
        for name in ("p50", "throughput"):
            v = p["values"][name]
            assert v["lo"] <= v["value"] <= v["hi"]
    assert set(got["front"]) <= {p["id"] for p in ok} and got["front"]
    pick = got["recommendation"]
    assert pick["id"] in got["front"] and "first objective (p50)" in pick["rule"]
    assert got["constraints"][0]["text"] == "top1>=ref-0.01" and 0.9 < got["constraints"][0]["bound"] < 1
    # every trial's benchmark is an ordinary stored record carrying the study and the settings that ran
    records = {r["uid"]: r for r in _records(cr_home)}
    for p in ok:
        r = records[p["record"]]
        assert r["study"] == {"name": study["name"], "uid": study["uid"], "trial": p["trial"]}
        assert (r["config"]["threads"], r["config"]["batch_size"], r["backend"]["name"], r["config"]["variant"]) == \
            (p["config"]["threads"], p["config"]["batch_size"], p["config"]["backend"], p["config"]["variant"])
    validations = [r for r in records.values() if r["action"] == "validate"]
    assert validations and all(r["study"]["uid"] == study["uid"] for r in validations)
    assert len({r["config"]["variant"] + r["backend"]["name"] for r in validations}) == len(validations)  # once per stack
    # the pick is a locked solution with the pick's settings
    sol = got["solution"]
    assert sol["ref"].startswith("solution:lenet-pick@") and Path(sol["lock"]).is_file()
    shown = json.loads(run_cr("show", sol["ref"], "--json").stdout)
    bench = next(a for a in shown["meta"]["actions"] if a["action"] == "benchmark")
    assert bench["params"]["threads"] == pick["config"]["threads"] and bench["params"]["batch_size"] == pick["config"]["batch_size"]
    assert shown["meta"]["backend"] == pick["config"]["backend"]
    # the table names the rule and the pick
    text = run_cr("tune", LENET, *QUICK, "--backends", "onnxruntime,tflite", "--batch", "1,8", "--budget", "3",
                  "--constraint", "top1>=ref-0.01")
    assert text.returncode == 0 and "recommendation:" in text.stdout and "frontier rule:" in text.stdout


def test_a_stack_that_cannot_load_is_a_failed_trial_not_a_failed_search(run_cr, cr_home):
    try:
        import tensorrt  # noqa: F401
        pytest.skip("TensorRT loads here")
    except ImportError:
        pass
    got = _tune(run_cr, "--backends", "onnxruntime,tensorrt", "--budget", "2", "--batch", "1,8")
    failed = [p for p in got["points"] if p["state"] == "failed"]
    assert len(failed) == 1 and failed[0]["config"]["backend"] == "tensorrt" and "tensorrt" in failed[0]["error"]
    assert [p for p in got["points"] if p["state"] == "ok" and p["config"]["backend"] == "onnxruntime"]
    assert got["recommendation"]["config"]["backend"] == "onnxruntime"


def _completed(db: Path) -> int:
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return con.execute("SELECT count(*) FROM trials WHERE state = 'COMPLETE'").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def test_kill_9_then_the_same_command_continues(run_cr, cr_home):
    args = ["tune", LENET, *QUICK, "--backends", "onnxruntime", "--threads", "1,2", "--batch", "1,8,32", "--budget", "4",
            "--name", "killed"]
    env = {**os.environ, "CR_HOME": str(cr_home)}
    proc = subprocess.Popen([sys.executable, "-m", "cr", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = cr_home / "tune" / "killed.db"
    deadline = time.monotonic() + 240
    while _completed(db) < 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the search ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    kept = _completed(db)
    assert 1 <= kept < 4
    got = json.loads(run_cr(*args[:1], *args[1:], "--json", timeout=300).stdout)
    ids = [p["id"] for p in got["points"]]
    assert len(ids) == len(set(ids)) and got["ran_now"] <= 4 - kept + 1
    assert sum(p["device_s"] > 0 for p in got["points"]) >= 4 and got["trials"]["failed"] == 0


def test_verify_reports_the_gap_to_the_grid(run_cr, cr_home):
    got = _tune(run_cr, "--backends", "onnxruntime", "--batch", "1,8", "--budget", "1", "--verify")
    v = got["verify"]
    assert v["grid"]["configurations"] == 2 and v["grid"]["measured"] == 2
    assert 0 < v["hypervolume"]["ratio"] <= 1 and v["hypervolume"]["exhaustive"] > 0
    assert 0 <= v["recall"]["recall"] <= 1 and v["recall"]["of"] >= 1
    assert v["device_s"]["tune"] > 0 and v["device_s"]["exhaustive"] > v["device_s"]["tune"]
    grid_records = [r for r in _records(cr_home) if (r.get("study") or {}).get("name") == v["grid"]["study"]]
    assert len([r for r in grid_records if r["action"] == "benchmark"]) == 2


# ------------------------------------------------------------------------------- pieces

def test_constraints_parse_relative_and_absolute_bounds():
    from cr.errors import CRError
    from cr.tune.study import parse_constraint

    rel = parse_constraint("top1>=ref-0.01")
    assert rel.relative and rel.offset == -0.01 and rel.bound(0.98) == pytest.approx(0.97)
    assert rel.violation(0.975, 0.98) <= 0 < rel.violation(0.96, 0.98)
    ab = parse_constraint("p99<=2000000")
    assert not ab.relative and ab.violation(1e6, None) < 0 < ab.violation(3e6, None)
    assert parse_constraint("top1>=ref").bound(0.9) == 0.9
    with pytest.raises(CRError):
        parse_constraint("top1 > 3")
    with pytest.raises(CRError):
        parse_constraint("speed>=3")


def test_excludes_match_every_key_given():
    from cr.tune.space import Config, Space, Stack

    a, b = Stack("onnxruntime", "onnx", "fp32"), Stack("tflite", "tflite-int8", "int8")
    space = Space("model:x@1", None, None, [a, b], [1, 2], [1, 8], ["precision=int8,batch=8", "backend=onnxruntime,threads=2"])
    keys = {c.key for c in space.configs()}
    assert keys == {Config(a, 1, 1).key, Config(a, 1, 8).key, Config(b, 1, 1).key, Config(b, 2, 1).key}


def test_precision_keeps_the_variants_of_that_precision(cr_home):
    from cr.tune.space import build

    space = build(LENET, backends=["tflite"], precisions=["int8"])  # an existing variant: nothing compiled
    assert [(s.backend, s.variant, s.precision) for s in space.stacks] == [("tflite", "tflite-int8", "int8")]
    everything = build(LENET, backends=["onnxruntime", "tflite"])
    assert {s.precision for s in everything.stacks} == {"fp32", "int8"} and len(everything.configs()) == 3


def test_compiled_versions_are_stacks_and_their_trials_run_that_version(run_cr, cr_home):
    assert run_cr("compile", LENET, "--to", "onnx").returncode == 0  # lenet's onnx -> an optimised onnx, 1.0.0+onnx.opt
    got = _tune(run_cr, "--backends", "onnxruntime", "--budget", "2")
    stacks = {p["config"]["model"]: p for p in got["points"] if p["state"] == "ok"}
    compiled = [m for m in stacks if m and "+onnx" in m]
    assert None in stacks and len(compiled) == 1
    record = next(r for r in _records(cr_home) if r["uid"] == stacks[compiled[0]]["record"])
    assert compiled[0] in {c["ref"] for c in record["components"]}


def test_ctrl_c_keeps_what_was_measured_and_the_same_command_continues(run_cr, cr_home):
    args = ["tune", LENET, "--min-duration", "1", "--backends", "onnxruntime", "--threads", "1,2", "--batch", "1,8,32",
            "--budget", "3", "--name", "stopped"]
    env = {**os.environ, "CR_HOME": str(cr_home)}
    proc = subprocess.Popen([sys.executable, "-m", "cr", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = cr_home / "tune" / "stopped.db"
    deadline = time.monotonic() + 240
    while _completed(db) < 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    time.sleep(1.0)  # inside the next trial's run
    assert proc.poll() is None, "the search ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "continues the study" in err and "Traceback" not in err, err
    kept = _completed(db)
    got = json.loads(run_cr(*args, "--json", timeout=300).stdout)
    assert got["trials"]["measured"] >= 3 and got["trials"]["failed"] == 0 and got["ran_now"] <= 3 - kept + 1


def test_a_constraint_nothing_meets_leaves_no_pick_and_marks_the_records(run_cr, cr_home):
    got = _tune(run_cr, "--backends", "onnxruntime", "--budget", "1", "--constraint", "top1>=0.999")
    [point] = got["points"]
    assert point["state"] == point["status"] == "infeasible" and point["missed"] == ["top1>=0.999"]
    assert got["recommendation"] is None and got["front"] == []
    record = next(r for r in _records(cr_home) if r["uid"] == point["record"])
    assert record["study"]["feasible"] is False
    done = run_cr("tune", LENET, *QUICK, "--backends", "onnxruntime", "--budget", "1", "--constraint", "top1>=0.999",
                  "--save-solution", "nothing")
    _one_error(done, "no configuration to save")


def test_a_precision_the_model_lacks_is_compiled_before_the_search(cr_home):
    from cr.tune.space import build

    space = build(LENET, backends=["onnxruntime"], precisions=["int8"])
    [stack] = space.stacks
    assert stack.precision == "int8" and stack.model.startswith("model:lenet-digits@1.0.0+onnx.int8")
    again = build(LENET, backends=["onnxruntime"], precisions=["int8"])  # the compiled version is the cache
    assert again.stacks == space.stacks and again.digest == space.digest


def test_a_precision_no_conversion_gives_a_backend_is_reported_not_silently_dropped(cr_home):
    from cr.errors import CRError
    from cr.tune.space import build

    space = build(LENET, backends=["onnxruntime"], precisions=["fp32", "fp16"])
    assert [(s.backend, s.precision) for s in space.stacks] == [("onnxruntime", "fp32")]
    [gone] = space.unavailable
    assert (gone["backend"], gone["precision"]) == ("onnxruntime", "fp16") and gone["reason"]
    with pytest.raises(CRError) as e:
        build(LENET, backends=["onnxruntime"], precisions=["fp16"])
    assert "empty" in e.value.message and "onnxruntime at fp16: " + gone["reason"] in e.value.message
