"""A user's own model end to end, and small sharp edges: `cr init solution --model` for a model
without a dataset, several scenarios and backend options; `cr check` of an invalid meta;
file modes under the umask; the recipe how-to's list; `cr publish --git` to the remote's
default branch."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, make_component, make_repo

FAST = ("--min-duration", "0.05", "--min-queries", "20", "--warmup", "1")


def _own_model(tmp_path: Path, run_cr, name: str = "tiny", **extra) -> Path:
    """model:NAME in a registered repo: one onnx file, no dataset (the null backend runs any format)."""
    repo = make_repo(tmp_path / "mine", "mine")
    (repo / "model" / name / "1.0.0").mkdir(parents=True)
    (repo / "model" / name / "1.0.0" / "net.onnx").write_bytes(b"not really onnx")
    fields = dict(format="onnx", file="net.onnx", task="classification",
                  inputs=[{"name": "x", "shape": [1, 4], "dtype": "float32"}],
                  outputs=[{"name": "y", "shape": [1, 3], "dtype": "float32"}])
    fields.update(extra)
    path = make_component(repo, "model", name, **fields)
    assert run_cr("repo", "add", repo).returncode == 0
    return path


def _created(done) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["meta"]


# ------------------------------------------------------------ cr init solution --model

def test_a_model_without_a_dataset_declares_no_validate_and_its_benchmark_passes(run_cr, tmp_path):
    _own_model(tmp_path, run_cr)
    meta = _created(run_cr("init", "solution", "mine", "--model", "model:tiny", "--backend", "null", "--json"))
    assert "dataset" not in meta
    assert meta["actions"] == [{"action": "benchmark", "params": {"scenario": "single-stream"}}]
    assert meta["deps"] == ["software:numpy@>=1.23"]  # the runtime's numpy; null requires nothing
    done = run_cr("benchmark", "solution", "mine", *FAST)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "VALID" in done.stdout and "validate" not in done.stdout


def test_a_labelled_dataset_still_declares_validate(run_cr, tmp_path):
    _own_model(tmp_path, run_cr)
    meta = _created(run_cr("init", "solution", "with-data", "--model", "model:tiny", "--backend", "null",
                           "--dataset", "dataset:iris", "--json"))
    assert meta["dataset"] == "dataset:iris@1.0.0"
    assert [a["action"] for a in meta["actions"]] == ["benchmark", "validate"]


def test_a_dataset_without_labels_declares_no_validate(run_cr, tmp_path):
    _own_model(tmp_path, run_cr)
    data = make_repo(tmp_path / "data", "data")
    make_component(data, "dataset", "unlabelled", format="csv", source={"file": "rows.csv"}, label_column=None, samples=2)
    (data / "dataset/unlabelled/1.0.0/rows.csv").write_text("1,2,3,4\n5,6,7,8\n")
    assert run_cr("repo", "add", data).returncode == 0
    meta = _created(run_cr("init", "solution", "no-labels", "--model", "model:tiny", "--backend", "null",
                           "--dataset", "dataset:unlabelled", "--json"))
    assert [a["action"] for a in meta["actions"]] == ["benchmark"]


def test_several_scenarios_are_several_benchmark_actions(run_cr, tmp_path):
    _own_model(tmp_path, run_cr)
    done = run_cr("init", "solution", "two", "--model", "model:tiny", "--backend", "null",
                  "--scenario", "single-stream", "--scenario", "offline")
    assert done.returncode == 0, done.stderr
    assert "declared: benchmark single-stream, benchmark offline" in done.stdout
    meta = json.loads(run_cr("show", "solution:two", "--json").stdout)["meta"]
    assert meta["actions"] == [{"action": "benchmark", "params": {"scenario": "single-stream"}},
                               {"action": "benchmark", "params": {"scenario": "offline"}}]
    done = run_cr("benchmark", "solution", "two", *FAST, "--json")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    records = records if isinstance(records, list) else records.get("results", records.get("records"))
    assert sorted(r["metrics"]["scenario"] for r in records) == ["offline", "single-stream"]


def test_backend_options_land_in_the_meta_and_unknown_ones_write_nothing(run_cr, tmp_path, cr_home):
    _own_model(tmp_path, run_cr)
    meta = _created(run_cr("init", "solution", "opts", "--model", "model:tiny", "--backend", "null",
                           "-O", "sleep_ms=0.5", "-O", "threads=2", "--json"))
    assert meta["backend_options"] == {"sleep_ms": 0.5, "threads": 2}
    done = run_cr("init", "solution", "typo-opt", "--model", "model:tiny", "--backend", "null", "-O", "sleep_sm=1")
    assert done.returncode == 1
    assert "backend 'null' has no option sleep_sm" in done.stderr and "sleep_ms" in done.stderr
    assert not (cr_home / "local" / "solution" / "typo-opt").exists()


# ------------------------------------------------------------ cr check of an invalid meta

def test_check_of_a_ref_whose_meta_is_invalid_lists_its_problems(run_cr, tmp_path):
    path = _own_model(tmp_path, run_cr, name="typo")
    meta = json.loads(path.read_text())
    meta["licence"] = meta.pop("license", "MIT")  # the typo'd field
    path.write_text(json.dumps(meta, indent=2))
    done = run_cr("check", "model:typo")
    assert done.returncode == 1
    assert "no component" not in done.stderr
    assert str(path) in done.stdout and "'licence'" in done.stdout
    report = json.loads(run_cr("check", "model", "typo@1.0.0", "--json").stdout)
    assert not report["ok"] and report["checked"] == 1
    assert report["problems"][0]["file"] == str(path) and "licence" in report["problems"][0]["message"]
    nothing = run_cr("check", "model:typo@2")  # no such version, valid or not
    assert nothing.returncode == 1 and "Error: no component model:typo" in nothing.stderr


# ------------------------------------------------------------ file modes follow the umask

@pytest.mark.parametrize("mask, mode", [("022", 0o644), ("027", 0o640)])
def test_files_cr_writes_get_the_mode_the_umask_gives(tmp_path, cr_home, mask, mode):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env["CR_HOME"] = str(cr_home)
    repo = make_repo(tmp_path / "other", "other")
    lock = tmp_path / "tiny.lock.json"
    script = (f"umask {mask} && {sys.executable} -m cr new model mode-check --version 1.0.0 >/dev/null"
              f" && {sys.executable} -m cr repo add {repo} >/dev/null"
              f" && {sys.executable} -m cr resolve model:iris-logreg -o {lock} >/dev/null")
    done = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for written in (cr_home / "local/model/mode-check/1.0.0/meta.json", lock, cr_home / "repos.json"):
        assert written.stat().st_mode & 0o777 == mode, f"{written}: {oct(written.stat().st_mode & 0o777)}"


# ------------------------------------------------------------ the recipe how-to

def test_the_recipe_howto_lists_every_shipped_recipe():
    text = (ROOT / "docs" / "howto-add-a-recipe.md").read_text(encoding="utf-8")
    shipped = sorted(json.loads(p.read_text())["name"] for p in (ROOT / "recipes").glob("*/recipe.json"))
    assert shipped, "no recipes found"
    listed = sorted(line.split("`")[1] for line in text.splitlines() if line.startswith("| `"))
    missing = [n for n in shipped if n not in listed]
    assert not missing, f"docs/howto-add-a-recipe.md does not list {missing} (regenerate its table from recipes/)"
    assert listed == shipped, f"the how-to lists recipes that do not exist: {sorted(set(listed) - set(shipped))}"


# ------------------------------------------------------------ cr publish --git: the remote's default branch

def _git(*args, cwd=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _record(folder: Path, n: int) -> Path:
    from cr.dashboard import sample

    record = sample.benchmark_record("lenet-digits", "onnxruntime", "onnx", "fp32", sample.XEON,
                                     sample.latencies(20_000 + n, 32, random.Random(n)), uid=f"{n:016x}",
                                     started=f"2026-11-30T10:{n:02d}:00.000Z")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"r{n}.json"
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


GIT_ID = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
          "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org"}


def test_publish_git_goes_to_the_remote_default_branch(run_cr, tmp_path):
    bare = tmp_path / "results.git"
    _git("init", "-q", "--bare", "--initial-branch=trunk", str(bare))
    url = f"file://{bare}"
    done = run_cr("publish", "--git", url, "--results", _record(tmp_path / "a", 1), "--json", env=GIT_ID)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["branch"] == "trunk" and report["commit"]
    assert _git("rev-parse", "trunk", cwd=bare).strip() == report["commit"]
    assert "main" not in _git("branch", "--list", cwd=bare)
    checkout = tmp_path / "checkout"
    _git("clone", "-q", url, str(checkout))  # what a clone shows: the default branch, with the results
    assert any((checkout / "results").glob("*.json")) and (checkout / "site").is_dir()

    # a remote with commits: its HEAD (ls-remote) names trunk, from another machine too
    done = run_cr("publish", "--git", url, "--results", _record(tmp_path / "b", 2), env={**GIT_ID, "CR_HOME": str(tmp_path / "h2")})
    assert done.returncode == 0, done.stderr
    assert f"to {url} (trunk)" in done.stdout
    assert len(_git("log", "--format=%H", "trunk", cwd=bare).split()) == 2

    # --branch still says where
    done = run_cr("publish", "--git", url, "--branch", "other", "--results", _record(tmp_path / "c", 3), "--json", env=GIT_ID)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["branch"] == "other" and _git("rev-parse", "other", cwd=bare).strip() == report["commit"]
    assert len(_git("log", "--format=%H", "trunk", cwd=bare).split()) == 2  # trunk untouched


def test_publish_git_to_a_remote_that_names_no_branch_uses_main(run_cr, tmp_path):
    bare = tmp_path / "results.git"
    _git("init", "-q", "--bare", "--initial-branch=trunk", str(bare))
    # protocol v0 does not tell a client an empty repository's unborn HEAD
    done = run_cr("publish", "--git", f"file://{bare}", "--results", _record(tmp_path / "a", 1), "--json",
                  env={**GIT_ID, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.version", "GIT_CONFIG_VALUE_0": "0"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["branch"] == "main"
    assert _git("rev-parse", "main", cwd=bare).strip()
