"""Hostile JSON never crashes cr: every JSON file cr reads goes through cr.jsonio.

An attacker who can put a file where cr reads one (a component repository pulled with
`cr repo pull`, a result record copied into the store, a lock handed over, an env.json)
tries: nesting a thousand levels deep (Python's json raises RecursionError, and anything
that walks the value recursively would too), NaN (Python reads it, no JSON standard does),
a lone surrogate escape (a str that cannot be encoded as UTF-8: SQLite refuses it), an
integer of 5,000 digits (int() refuses it with ValueError), and a FIFO or a device where
a file should be (reading one blocks forever, or never ends). Each is one warning naming
the file, or one Error: line, and everything else goes on; never a traceback or a hang.
Every input is built here.
"""
from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

import pytest

from conftest import make_component, make_repo, write_json

DEEP_ARRAY = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a": ' * 1000 + "1" + "}" * 1000

# name -> (the text of a meta's "description" value, or of the whole meta for "nan"; what the warning says)
HOSTILE_METAS = {
    "deep-array": (DEEP_ARRAY, "nested deeper than 100 levels"),
    "deep-object": (DEEP_OBJECT, "nested deeper than 100 levels"),
    "nan": (None, "NaN is not a JSON number"),
    "surrogate": ('"caf\\ud800"', "lone surrogate"),
    "huge-int": ("1" * 5000, "invalid JSON"),
}


def hostile_meta(repo: Path, name: str) -> Path:
    """<repo>/model/<name>/1.0.0/meta.json holding HOSTILE_METAS[name], else a valid meta."""
    value, _ = HOSTILE_METAS[name]
    path = repo / "model" / name / "1.0.0" / "meta.json"
    path.parent.mkdir(parents=True)
    if name == "nan":
        text = f'{{"uid": NaN, "kind": "model", "name": "{name}", "version": "1.0.0", "tags": []}}\n'
    else:
        text = (f'{{"uid": "{secrets.token_hex(8)}", "kind": "model", "name": "{name}", "version": "1.0.0", '
                f'"tags": [], "description": {value}}}\n')
    path.write_text(text, encoding="utf-8")
    return path


def no_traceback(done) -> None:
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr, done.stderr[-3000:]


def warnings_naming(done, path: Path) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Warning:") and str(path) in line]


def error_lines(done) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("Error:")]


@pytest.fixture
def repo(tmp_path) -> Path:
    """A plain-directory repository with two valid components (model:good, dataset:data)."""
    path = make_repo(tmp_path / "hostile", "hostile")
    make_component(path, "model", "good")
    make_component(path, "dataset", "data")
    return path


# -- metas in a registered repository ----------------------------------------------------------

@pytest.mark.parametrize("name", sorted(HOSTILE_METAS))
def test_a_hostile_meta_is_one_warning_and_the_search_goes_on(repo, run_cr, name):
    from cr import api

    bad = hostile_meta(repo, name)
    why = HOSTILE_METAS[name][1]
    api.repo_add(repo)

    for args in (("find", "--json"), ("find", "model", "--json")):
        done = run_cr(*args)
        no_traceback(done)
        assert done.returncode == 0, done.stderr
        found = {c["name"] for c in json.loads(done.stdout)}
        assert "good" in found and name not in found
        assert ("data" in found) == (args == ("find", "--json"))
        hits = warnings_naming(done, bad)
        assert len(hits) == 1 and why in hits[0], done.stderr

    checked = run_cr("check")
    no_traceback(checked)
    assert checked.returncode == 1, checked.stderr
    listed = [line for line in checked.stdout.splitlines() if str(bad) in line]
    assert len(listed) == 1 and why in listed[0], checked.stdout

    repos = run_cr("repo", "list", "--json")
    no_traceback(repos)
    assert repos.returncode == 0, repos.stderr
    assert "hostile" in repos.stdout

    shown = run_cr("show", "model:good")
    no_traceback(shown)
    assert shown.returncode == 0, shown.stderr
    assert "model:good@1.0.0" in shown.stdout

    missing = run_cr("show", f"model:{name}")  # refused, not half-read
    no_traceback(missing)
    assert missing.returncode == 1 and len(error_lines(missing)) == 1, missing.stderr


def test_library_loaders_refuse_hostile_metas_with_invalid_meta(tmp_path):
    from cr.errors import InvalidMeta
    from cr.store.meta import load_json, validate

    repo = make_repo(tmp_path / "r", "r")
    for name, (_, why) in HOSTILE_METAS.items():
        path = hostile_meta(repo, name)
        with pytest.raises(InvalidMeta) as exc:
            load_json(path)
        assert str(exc.value).startswith(f"{path}: ") and why in str(exc.value), str(exc.value)
    # the limit leaves room: a meta nesting 99 levels (far more than any cr writes) loads and validates
    path = tmp_path / "meta.json"
    nested = "[" * 98 + "]" * 98  # the meta object is level 1, x-nested's list level 2
    path.write_text(f'{{"uid": "{secrets.token_hex(8)}", "kind": "model", "name": "m", "version": "1.0.0", '
                    f'"x-nested": {nested}}}', encoding="utf-8")
    assert isinstance(validate(load_json(path), str(path)), list)


# -- a FIFO, a socket or a device where a meta should be ---------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_or_a_device_named_meta_json_never_hangs_a_search(repo, tmp_path, run_cr):
    from cr import api

    fifo = repo / "model" / "fifo" / "1.0.0" / "meta.json"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    planted = [fifo]
    if os.path.exists("/dev/zero"):  # reading it never ends
        zero = repo / "dataset" / "zero" / "1.0.0" / "meta.json"
        zero.parent.mkdir(parents=True)
        zero.symlink_to("/dev/zero")
        planted.append(zero)
    # a name-layout repository (as recipes/ is) whose recipe.json is a FIFO
    recipes = make_repo(tmp_path / "recipes", "hostile-recipes", layout="name", kind="software", meta_file="recipe.json")
    recipe_fifo = recipes / "evil" / "recipe.json"
    recipe_fifo.parent.mkdir(parents=True)
    os.mkfifo(recipe_fifo)
    planted.append(recipe_fifo)
    api.repo_add(repo)
    api.repo_add(recipes)

    done = run_cr("find", "--json", timeout=20)
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert {"good", "data"} <= {c["name"] for c in json.loads(done.stdout)}
    for path in planted:
        hits = warnings_naming(done, path)
        assert len(hits) == 1 and "not a regular file" in hits[0], (path, done.stderr)

    checked = run_cr("check", timeout=20)
    no_traceback(checked)
    assert checked.returncode == 1
    for path in planted:
        assert any(str(path) in line and "not a regular file" in line for line in checked.stdout.splitlines()), checked.stdout


# -- result records ----------------------------------------------------------------------------

def _record(uid: str) -> dict:
    from cr.dashboard import sample

    platform = {"os": "linux", "arch": "aarch64", "fingerprint": "a1b2c3d4e5f60718"}
    return sample.validate_record("lenet-digits", "onnxruntime", "onnx", "fp32", platform, 0.98,
                                  uid=uid, started="2026-03-01T10:00:00.000Z")


def _record_text(uid: str, extra: str) -> str:
    """A record as cr lays it out (indent 2), with extra (raw JSON text) as its "x-extra" member."""
    text = json.dumps(_record(uid), indent=2)
    return text.replace('\n  "status": "ok",', f'\n  "status": "ok",\n  "x-extra": {extra},', 1)


GOOD_UID, DEEP_UID, NAN_UID, SURROGATE_UID = "00aa000000000001", "00aa000000000002", "00aa000000000003", "00aa000000000004"


@pytest.fixture
def hostile_store(cr_home) -> dict[str, Path]:
    """The results store with one good record and three hostile ones placed in its folders by hand."""
    from cr.results.store import default_store

    with default_store() as store:
        store.add(_record(GOOD_UID))
        root = store.root
    planted = {}
    for uid, extra in ((DEEP_UID, DEEP_OBJECT), (NAN_UID, "NaN"), (SURROGATE_UID, '"\\udc00"')):
        path = root / uid[:2] / f"{uid}.json"
        path.write_text(_record_text(uid, extra), encoding="utf-8")
        planted[uid] = path
    return planted


def test_hostile_records_in_the_store_are_warnings_and_the_rest_goes_on(hostile_store, run_cr, tmp_path):
    reindexed = run_cr("results", "reindex")
    no_traceback(reindexed)
    assert reindexed.returncode == 0, reindexed.stderr
    assert "3 invalid" in reindexed.stdout, reindexed.stdout

    listed = run_cr("results", "list", "--json")
    no_traceback(listed)
    assert listed.returncode == 0, listed.stderr
    assert [r["uid"] for r in json.loads(listed.stdout)] == [GOOD_UID]
    for uid, path in hostile_store.items():
        hits = warnings_naming(listed, path)
        assert len(hits) == 1 and "(result skipped)" in hits[0], listed.stderr
    assert "nested deeper than 100 levels" in "".join(warnings_naming(listed, hostile_store[DEEP_UID]))
    assert "NaN is not a JSON number" in "".join(warnings_naming(listed, hostile_store[NAN_UID]))

    exported = run_cr("results", "export", "--format", "json")
    no_traceback(exported)
    assert exported.returncode == 0, exported.stderr
    assert [r["uid"] for r in json.loads(exported.stdout)] == [GOOD_UID]

    shown = run_cr("results", "show", DEEP_UID)
    no_traceback(shown)
    assert shown.returncode == 1 and len(error_lines(shown)) == 1, shown.stderr

    built = run_cr("dashboard", "build", "--out", str(tmp_path / "site"))
    no_traceback(built)
    assert built.returncode == 0, built.stderr
    for uid in (DEEP_UID, NAN_UID):
        hits = warnings_naming(built, hostile_store[uid])
        assert len(hits) == 1 and "skipped, not valid JSON" in hits[0], built.stderr
    assert "nested deeper than 100 levels" in "".join(warnings_naming(built, hostile_store[DEEP_UID]))
    assert "NaN is not a JSON number" in "".join(warnings_naming(built, hostile_store[NAN_UID]))


@pytest.mark.parametrize("extra, why", [(DEEP_OBJECT, "nested deeper than 100 levels"), (DEEP_ARRAY, "nested deeper"),
                                        ("-Infinity", "-Infinity is not a JSON number")])
def test_results_add_of_a_hostile_file_is_one_error(tmp_path, run_cr, extra, why):
    path = tmp_path / "hostile-result.json"
    path.write_text(_record_text("00bb000000000001", extra), encoding="utf-8")
    done = run_cr("results", "add", str(path))
    no_traceback(done)
    assert done.returncode == 1
    assert len(error_lines(done)) == 1, done.stderr
    assert any(str(path) in line and why in line for line in done.stderr.splitlines()), done.stderr
    assert json.loads(run_cr("results", "list", "--json").stdout) == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_results_add_of_a_fifo_does_not_wait_on_it(tmp_path, run_cr):
    fifo = tmp_path / "result.json"
    os.mkfifo(fifo)
    done = run_cr("results", "add", str(fifo), timeout=20)
    no_traceback(done)
    assert done.returncode == 1 and len(error_lines(done)) == 1, done.stderr
    assert any(str(fifo) in line and "not a regular file" in line for line in done.stderr.splitlines()), done.stderr


def test_the_store_never_writes_what_it_cannot_read_back(cr_home):
    from cr.results.store import InvalidResult, default_store

    record = _record("00cc000000000001")
    record["metrics"] = {"x-score": float("nan")}
    with default_store() as store:
        with pytest.raises(InvalidResult, match="NaN or Infinity"):
            store.add(record)
        assert store.list() == []


def test_the_dashboards_fast_parser_follows_the_same_rules():
    from cr.dashboard import records

    good = _record_text("00dd000000000001", "1").encode()
    assert records.parse(good)[0]["uid"] == "00dd000000000001"
    for extra in ("NaN", "Infinity", DEEP_ARRAY, DEEP_OBJECT, "[" * 150 + "]" * 150):
        with pytest.raises(ValueError):
            records.parse(_record_text("00dd000000000001", extra).encode())


# -- locks and software envs -------------------------------------------------------------------

@pytest.mark.parametrize("software, why", [(DEEP_ARRAY, "nested deeper than 100 levels"),
                                           ("[NaN]", "NaN is not a JSON number")])
def test_a_hostile_lock_is_one_error(tmp_path, run_cr, software, why):
    lock = tmp_path / "hostile.lock.json"
    lock.write_text(f'{{"format": 1, "root": "solution:x@1.0.0", "software": {software}}}', encoding="utf-8")
    done = run_cr("env", "exec", str(lock), "--", "true")
    no_traceback(done)
    assert done.returncode == 1
    errors = error_lines(done)
    assert len(errors) == 1 and str(lock) in errors[0] and why in errors[0], done.stderr


def test_a_hostile_env_record_is_skipped_with_a_warning(cr_home, run_cr):
    env_file = cr_home / "envs" / "evil" / "1.0.0-detected-0123456789" / "env.json"
    env_file.parent.mkdir(parents=True)
    env_file.write_text('{"format": 1, "name": "evil", "version": "1.0.0", "x": ' + DEEP_OBJECT + "}", encoding="utf-8")
    wrong = cr_home / "envs" / "wrong" / "1.0.0-detected-0123456789" / "env.json"
    write_json(wrong, ["not", "an", "env"])
    done = run_cr("env", "list")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    hits = warnings_naming(done, env_file)
    assert len(hits) == 1 and "nested deeper than 100 levels" in hits[0], done.stderr
    assert len(warnings_naming(done, wrong)) == 1, done.stderr
