"""`cr find` answered before click is imported (cr/cli/fastfind.py): for every form it
accepts it must print and exit exactly as the click command does, and every other form
must be left to click."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cr import api
from cr.cli import fastfind
from cr.cli import main as cli_main

from conftest import _env, make_component, make_repo


@pytest.fixture
def store(tmp_path, cr_home):
    repo = make_repo(tmp_path / "r", "r")
    for i in range(4):
        make_component(repo, "model", f"m{i}", tags=["common", f"t{i % 2}"], description=f"model {i}")
    make_component(repo, "model", "m0", "2.0.0", tags=["common"], description="newer")
    make_component(repo, "dataset", "d", tags=["common"], description="a dataset \x1b[31mred")
    (repo / "model" / "broken" / "1.0.0").mkdir(parents=True)
    (repo / "model" / "broken" / "1.0.0" / "meta.json").write_text("{not json")
    api.repo_add(repo)
    return repo


ACCEPTED = [
    [], ["model"], ["dataset", "--json"], ["--tags", "common,t1"], ["model", "--tags=t0", "--json"],
    ["--name", "m*"], ["model", "--version", ">=2"], ["--version=1.0.0", "--repo", "r"], ["--repo=nosuch"],
    ["nosuchkind"], ["model", "--tags", "nosuchtag"], ["--tags", ""], ["--json", "model", "--name", "m1"],
]


def click_path(args, capsys) -> tuple[int, str, str]:
    try:
        cli_main.main(["find", *args])
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def fast_path(args, capsys) -> tuple[int, str, str]:
    code = fastfind.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("args", ACCEPTED, ids=lambda a: " ".join(a) or "(none)")
def test_the_fast_path_answers_as_click_does(store, capsys, args):
    assert fastfind.parse(args) is not None
    want = click_path(args, capsys)
    got = fast_path(args, capsys)
    assert got == want
    assert want[0] in (0, 1)


def test_the_fast_path_keeps_warnings_and_errors(store, capsys):
    code, out, err = fast_path(["model"], capsys)
    assert code == 0 and "model:m0@2.0.0" in out and "Warning: skipped invalid component" in err
    code, out, err = fast_path(["--repo", "nosuch"], capsys)
    assert (code, out) == (1, "") and "\nError: no repository named 'nosuch'\nHint: " in err
    code, out, _ = fast_path(["dataset"], capsys)
    assert "\x1b" not in out and "\\x1b[31mred" in out


@pytest.mark.parametrize("args", [
    ["--help"], ["-h"], ["model", "--bogus"], ["model", "dataset"], ["--tags"], ["--tags", "-deprecated"],
    ["--json=1"], ["--tags", "a", "--tags", "b"], ["-q"], ["--", "model"], ["-"], ["--name"],
])
def test_other_forms_are_left_to_click(args):
    assert fastfind.parse(args) is None
    assert fastfind.main(args) is None


def test_cr_find_runs_without_click(store, cr_home):
    """The real command, as a user runs it: it answers, and click is never imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "cr", "find", "model", "--json"],
                          capture_output=True, text=True, env=_env({"CR_HOME": str(cr_home)}), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert {c["ref"] for c in json.loads(proc.stdout)} >= {"model:m0@2.0.0", "model:m3@1.0.0"}
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "cr.store.index" in imported and "click" not in imported
    # a form it declines still works, through click
    proc = subprocess.run([sys.executable, "-m", "cr", "find", "--tags", "-t0", "model"],
                          capture_output=True, text=True, env=_env({"CR_HOME": str(cr_home)}), timeout=120)
    assert proc.returncode == 0 and "model:m1@1.0.0" in proc.stdout and "model:m0@1.0.0" not in proc.stdout
