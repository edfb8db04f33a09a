"""An unpacked archive's repository (what `cr unpack` and `cr reproduce` register) sorts below
the shipped and the user's repositories, so a plain ref keeps meaning the trusted copy and
`cr find` lists a component that both hold identically once, from the trusted repository.

Through the real CLI: a real `cr pack` of the shipped lenet-digits-onnxruntime, then
`cr reproduce` (or `cr unpack`) into the same CR_HOME.
"""
from __future__ import annotations

import json
import shutil

from conftest import ROOT

def test_reproduced_archive_sorts_below_builtin_and_find_lists_lenet_once(run_cr, tmp_path):
    done = run_cr("pack", "solution", "lenet-digits-onnxruntime", "-o", tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    archive = json.loads(done.stdout)["archive"]
    done = run_cr("reproduce", archive, timeout=600)
    assert done.returncode == 0 and "outcome: PASS" in done.stdout, done.stdout + done.stderr
    repos = [r["name"] for r in json.loads(run_cr("repo", "list", "--json").stdout)]
    unpacked = "lenet-digits-onnxruntime-1.0.0"
    assert unpacked in repos and repos.index("builtin") < repos.index(unpacked)
    # the fast path (cr find ...) and click's (cr --debug find ...) list the same: lenet-digits once, builtin
    for argv in (("find", "model", "--json"), ("--debug", "find", "model", "--json")):
        found = json.loads(run_cr(*argv).stdout)
        lenet = [c for c in found if c["name"] == "lenet-digits"]
        assert [c["repo"] for c in lenet] == ["builtin"], found
    table = run_cr("find", "model").stdout
    assert sum(1 for l in table.splitlines() if l.startswith("model:lenet-digits@1.0.0")) == 1
    # the archive's own copy is still there for who asks for it
    mine = json.loads(run_cr("find", "model", "--repo", unpacked, "--json").stdout)
    assert [c["name"] for c in mine] == ["lenet-digits"]
    assert json.loads(run_cr("show", "model:lenet-digits", "--json").stdout)["repo"] == "builtin"


def test_a_changed_copy_is_still_listed(run_cr, tmp_path):
    """Only identical copies are folded: a same-version component that differs shows twice
    (the trusted one first), so the difference stays visible."""
    done = run_cr("pack", "solution", "lenet-digits-onnxruntime", "-o", tmp_path, "--json")
    archive = json.loads(done.stdout)["archive"]
    assert run_cr("unpack", archive, "--into", tmp_path / "unpacked").returncode == 0
    meta_path = tmp_path / "unpacked" / "model" / "lenet-digits" / "1.0.0" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["description"] = "changed"
    meta_path.write_text(json.dumps(meta, indent=2))
    found = json.loads(run_cr("find", "model", "--name", "lenet-digits", "--json").stdout)
    assert [c["repo"] for c in found] == ["builtin", "lenet-digits-onnxruntime-1.0.0"]


def test_an_archive_of_a_shipped_solution_with_a_changed_model_is_refused(run_cr, tmp_path):
    """The archive's solution is the shipped one (identical), so it would run the shipped
    model, not the archive's changed copy that its reference results came from: one Error,
    naming the model, instead of a silently different reproduction."""
    local = tmp_path / "crhome" / "local" / "model" / "lenet-digits" / "1.0.0"
    assert run_cr("new", "model", "scratch").returncode == 0  # creates the local repo
    shutil.copytree(ROOT / "repo" / "model" / "lenet-digits" / "1.0.0", local)
    meta = json.loads((local / "meta.json").read_text())
    meta["description"] = "a changed copy"
    (local / "meta.json").write_text(json.dumps(meta, indent=2))
    done = run_cr("pack", "solution", "lenet-digits-onnxruntime", "-o", tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    archive = json.loads(done.stdout)["archive"]
    done = run_cr("reproduce", archive, env={"CR_HOME": str(tmp_path / "fresh")}, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("Error: the archive's solution:lenet-digits-onnxruntime@1.0.0 is the "
                               "solution:lenet-digits-onnxruntime@1.0.0 of repo 'builtin', but its model:lenet-digits@1.0.0 differs")
    assert lines[1].startswith("Hint: give the archive's solution a version of its own") and "Traceback" not in done.stderr
    compare = lines[1].split("compare the two with ", 1)[1].split()  # the hint's command works as printed
    assert compare[0] == "cr"
    shown = run_cr(*compare[1:], "--json", env={"CR_HOME": str(tmp_path / "fresh")})
    assert shown.returncode == 0 and json.loads(shown.stdout)["meta"]["description"] == "a changed copy"
