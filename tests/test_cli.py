"""The `cr` command line as a user meets it: exit codes, --json, errors, start-up cost, the wheel.

Everything here runs the real CLI in a subprocess (run_cr), with an isolated CR_HOME.
Exit codes are a contract: 0 ok, 1 user error (one 'Error:' line + 'Hint:', no traceback),
2 usage error.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import cr
import cr.api as api

from conftest import ROOT, make_component, make_repo, write_json

DATA_FOLDERS = ("repo", "recipes", "actions", "dashboard")
BUILTIN_REFS = {
    "model:iris-logreg@1.0.0",
    "dataset:iris@1.0.0",
    "dataset:digits@1.0.0",
    "solution:iris-logreg-onnxruntime@1.0.0",
    "platform:raspberry-pi-4-model-b@1.0.0",
    "action:benchmark@0.1.0",
    "software:python@1.0.0",
}


def ok_json(done):
    assert done.returncode == 0, (done.returncode, done.stderr)
    return json.loads(done.stdout)  # the whole of stdout must be one JSON document


def assert_user_error(done, *needles: str) -> str:
    """Exit 1, nothing on stdout, one 'Error:' line (naming every needle) then a 'Hint:' line."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    errors = [i for i, ln in enumerate(lines) if ln.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    error = lines[errors[0]]
    for needle in needles:
        assert needle in error, (needle, error)
    assert errors[0] + 1 < len(lines) and lines[errors[0] + 1].startswith("Hint: "), done.stderr
    assert "Traceback" not in done.stderr and 'File "' not in done.stderr
    return error


def refs(found: list[dict]) -> set[str]:
    return {c["ref"] for c in found}


# -- basics ----------------------------------------------------------------------------

def test_version(run_cr):
    done = run_cr("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"cr (reefkit) {cr.__version__}"
    assert done.stderr == ""


def test_help_lists_the_commands(run_cr):
    done = run_cr("--help")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith("Usage: cr ")
    for command in ("find", "show", "new", "check", "repo"):
        assert f"\n  {command} " in done.stdout
    assert "--json" in done.stdout and "CR_HOME" in done.stdout


def test_short_help_and_group_help(run_cr):
    done = run_cr("repo", "-h")
    assert done.returncode == 0
    for command in ("add", "init", "list", "pull", "rm", "update"):
        assert f"\n  {command} " in done.stdout
    show = run_cr("show", "--help")
    assert show.returncode == 0 and "--json" in show.stdout and "--no-verify" in show.stdout


@pytest.mark.parametrize("argv0", ["cr", "module"])
def test_version_answers_before_click_is_imported(argv0, cr_home, tmp_path):
    """`cr --version` (console script or python -m cr) imports neither click nor cr.api."""
    if argv0 == "module":
        cmd = [sys.executable, "-X", "importtime", "-m", "cr", "--version"]
    else:
        cmd = [sys.executable, "-X", "importtime", "-c",
               "import sys; sys.argv[0] = 'cr'; from cr.cli.main import main; main()", "--version"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env={**os.environ, "CR_HOME": str(cr_home)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"cr (reefkit) {cr.__version__}\n"
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "cr.cli.main" in imported
    assert not imported & {"click", "cr.api", "cr.store", "rich"}, sorted(imported & {"click", "cr.api", "cr.store", "rich"})


def test_version_with_other_arguments_goes_through_click(run_cr):
    done = run_cr("--version", "--debug")
    assert done.returncode == 0 and done.stdout == f"cr (reefkit) {cr.__version__}\n"
    assert run_cr("-q", "--version").stdout == f"cr (reefkit) {cr.__version__}\n"


def test_import_cr_is_lazy_and_keeps_the_api():
    code = (
        "import sys, cr\n"
        "assert 'cr.api' not in sys.modules and 'cr.store' not in sys.modules, sorted(m for m in sys.modules if m.startswith('cr'))\n"
        "assert cr.__version__ and issubclass(cr.CRError, Exception)\n"
        "assert 'find' in dir(cr) and 'find' in cr.__all__\n"
        "find = cr.find\n"
        "import cr.api\n"
        "assert find is cr.api.find and cr.new is cr.api.new\n"
        "from cr import show, Component, CheckReport\n"
        "assert show is cr.api.show and Component is cr.api.Component\n"
        "assert cr.store.registry.all_repos\n"
        "assert not hasattr(cr, 'no_such_name')\n"
        "print(sorted(c.ref for c in cr.find('dataset'))[:1])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "dataset:" in done.stdout


def test_running_the_console_script_entry_point(cr_home):
    """`cr` as installed is cr.cli.main:main; it is importable and behaves like python -m cr."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from cr.cli.main import main; sys.argv[0] = 'cr'; main()", "find", "dataset", "--json"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "CR_HOME": str(cr_home)},
    )
    assert {"dataset:iris@1.0.0", "dataset:digits@1.0.0"} <= refs(ok_json(done))


# -- --json everywhere ----------------------------------------------------------------

@pytest.mark.parametrize("args, shape", [
    (("find", "--json"), list),
    (("find", "model", "--json"), list),
    (("show", "model:iris-logreg", "--json"), dict),
    (("repo", "list", "--json"), list),
    (("repo", "update", "--json"), list),  # no git repos yet: []
    (("check", "--json"), dict),
    (("new", "model", "json-made", "--json"), dict),
], ids=["find", "find-kind", "show", "repo-list", "repo-update", "check", "new"])
def test_listings_print_valid_json(run_cr, args, shape):
    data = ok_json(run_cr(*args))
    assert isinstance(data, shape)
    assert bool(data) == (args[:2] != ("repo", "update"))


def test_find_json_describes_each_component(run_cr):
    found = ok_json(run_cr("find", "--json"))
    assert BUILTIN_REFS <= refs(found)
    for c in found:
        assert set(c) >= {"ref", "kind", "name", "version", "uid", "repo", "path", "tags", "description"}
        assert c["ref"] == f"{c['kind']}:{c['name']}@{c['version']}"
        assert Path(c["path"]).is_dir()
    models = ok_json(run_cr("find", "model", "--json"))
    assert models and all(c["kind"] == "model" for c in models)


def test_find_json_with_no_match_is_an_empty_list(run_cr):
    done = run_cr("find", "--name", "no-such-thing*", "--json")
    assert ok_json(done) == []


def test_find_table_with_no_match_says_so(run_cr):
    done = run_cr("find", "--name", "no-such-thing")
    assert done.returncode == 0
    assert done.stdout == ""
    assert "no matching components" in done.stderr


def test_show_json_has_meta_and_verification(run_cr):
    info = ok_json(run_cr("show", "model:iris-logreg", "--json"))
    assert info["ref"] == "model:iris-logreg@1.0.0"
    assert info["meta"]["name"] == "iris-logreg" and info["meta"]["kind"] == "model"
    assert info["verified"] is True and isinstance(info["files"], list)
    assert Path(info["meta_path"]).is_file()
    assert Path(info["meta_path"]).parent == Path(info["path"])


def test_check_json_reports_ok(run_cr):
    report = ok_json(run_cr("check", "--json"))
    assert report["ok"] is True and report["problems"] == []
    assert report["checked"] >= len(BUILTIN_REFS)


def test_repo_list_json(run_cr):
    repos = ok_json(run_cr("repo", "list", "--json"))
    assert [r["name"] for r in repos][:3] == ["builtin", "builtin-actions", "builtin-recipes"]
    assert [r["rank"] for r in repos] == list(range(1, len(repos) + 1))
    assert all(r["exists"] and r["origin"] == "builtin" for r in repos)
    assert repos[0]["components"] >= 5


def test_json_stays_clean_when_a_meta_is_broken(run_cr, tmp_path):
    """One bad meta is a warning on stderr naming the file; stdout is still pure JSON."""
    repo = make_repo(tmp_path / "mine", "mine")
    good = make_component(repo, "model", "good")
    bad = make_component(repo, "model", "bad")
    bad.write_text('{"kind": "model", "name": "bad",')
    api.repo_add(repo)
    done = run_cr("find", "--json")
    found = ok_json(done)
    assert "model:good@1.0.0" in refs(found) and "model:bad@1.0.0" not in refs(found)
    assert BUILTIN_REFS <= refs(found)
    warnings = [ln for ln in done.stderr.splitlines() if ln.startswith("Warning:")]
    assert len(warnings) == 1 and str(bad) in warnings[0]
    assert str(good) not in done.stderr


# -- show ------------------------------------------------------------------------------

@pytest.mark.parametrize("words, ref", [
    (("model", "iris-logreg"), "model:iris-logreg"),
    (("model", "iris-logreg@1.0.0"), "model:iris-logreg@1.0.0"),
    (("dataset", "iris@>=1,<2"), "dataset:iris@>=1,<2"),
])
def test_show_two_words_equals_kind_colon_name(run_cr, words, ref):
    two = ok_json(run_cr("show", *words, "--json"))
    one = ok_json(run_cr("show", ref, "--json"))
    assert two == one
    assert one["name"] == words[1].split("@")[0]


def test_show_text_output(run_cr):
    done = run_cr("show", "model", "iris-logreg")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("model:iris-logreg@1.0.0  (uid ")
    assert "repo:  builtin" in lines
    meta = json.loads(done.stdout.split("meta:\n", 1)[1])
    assert meta["name"] == "iris-logreg"


@pytest.fixture
def tampered(tmp_path):
    """A registered repo whose model lists a file whose bytes no longer match its sha256."""
    repo = make_repo(tmp_path / "mine", "mine")
    meta = make_component(repo, "model", "tampered", files={"weights.bin": "0" * 64})
    (meta.parent / "weights.bin").write_bytes(b"changed")
    api.repo_add(repo)
    return meta


def test_show_fails_when_a_file_does_not_verify(run_cr, tampered):
    done = run_cr("show", "model:tampered")
    assert done.returncode == 1
    assert "weights.bin  sha256 MISMATCH" in done.stdout
    error = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(error) == 1 and "weights.bin" in error[0]
    assert "Hint: cr check model:tampered" in done.stderr
    info = ok_json(run_cr("show", "model:tampered", "--json"))
    assert info["verified"] is False
    assert info["files"] == [{"path": "weights.bin", "expected": "0" * 64, "actual": info["files"][0]["actual"], "status": "mismatch"}]
    skipped = run_cr("show", "model:tampered", "--no-verify")
    assert skipped.returncode == 0 and "MISMATCH" not in skipped.stdout


# -- user errors -----------------------------------------------------------------------

@pytest.mark.parametrize("args, needles", [
    (("show", "widget:foo"), ["'widget'"]),
    (("show", "widget", "foo"), ["'widget'"]),
    (("find", "widget"), ["'widget'"]),
    (("new", "widget", "foo"), ["'widget'"]),
], ids=["show-ref", "show-words", "find", "new"])
def test_unknown_kind(run_cr, args, needles):
    done = run_cr(*args)
    assert_user_error(done, *needles)
    assert "model, dataset" in done.stderr  # the hint lists the kinds


@pytest.mark.parametrize("args, needles", [
    (("show", "model:Bad_Name"), ["'Bad_Name'"]),
    (("show", "model:"), ["'model:'"]),
    (("show", "iris-logreg"), ["'iris-logreg'", "kind"]),
    (("show", "model:iris-logreg@"), ["'@'"]),
    (("show", "a", "b", "c"), ["reference"]),
    (("new", "model", "Has Spaces"), ["'Has Spaces'"]),
], ids=["bad-name", "no-name", "no-kind", "empty-spec", "three-words", "new-bad-name"])
def test_bad_ref(run_cr, args, needles):
    assert_user_error(run_cr(*args), *needles)


@pytest.mark.parametrize("args, needles", [
    (("show", "model:nope"), ["model:nope"]),
    (("show", "model", "nope"), ["model:nope"]),
    (("check", "model:nope"), ["model:nope"]),
], ids=["show", "show-words", "check"])
def test_unknown_component(run_cr, args, needles):
    done = run_cr(*args)
    assert_user_error(done, *needles)
    assert "cr find model" in done.stderr


def test_no_version_matches(run_cr):
    assert_user_error(run_cr("show", "model:iris-logreg@>=2"), "model:iris-logreg", ">=2")


@pytest.mark.parametrize("args, needles", [
    (("show", "model:iris-logreg@>>1"), [">>1"]),
    (("show", "model", "iris-logreg@=>1"), ["=>1"]),
    (("find", "--version", ">>1"), [">>1"]),
    (("find", "model", "--version", "1.0.0.x"), ["1.0.0.x"]),
    (("new", "model", "x", "--version", "not-a-version"), ["not-a-version"]),
], ids=["show", "show-words", "find", "find-bare", "new"])
def test_bad_version_spec(run_cr, args, needles):
    assert_user_error(run_cr(*args), *needles)


def test_unknown_repo_in_find(run_cr):
    assert_user_error(run_cr("find", "--repo", "nope"), "'nope'")


def test_check_of_a_path_that_does_not_exist(run_cr, tmp_path):
    missing = tmp_path / "missing"
    assert_user_error(run_cr("check", str(missing)), str(missing))


def test_debug_shows_the_traceback(run_cr):
    done = run_cr("--debug", "show", "model:nope")
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr
    assert "NotFound" in done.stderr
    assert "Error: no component model:nope" in done.stderr
    plain = run_cr("show", "model:nope")
    assert "Traceback" not in plain.stderr


@pytest.mark.parametrize("args", [
    ("bogus",),
    ("find", "--bogus"),
    ("find", "--version"),
    ("show",),
    ("new", "model"),
    ("check", "a", "b", "c"),
    ("repo", "pull"),
    ("repo", "bogus"),
    ("repo", "init", "somewhere"),
], ids=["command", "option", "missing-value", "show-no-ref", "new-no-name", "check-3", "pull-no-url", "repo-command", "init-no-name"])
def test_usage_errors_exit_2(run_cr, args, cr_home):
    done = run_cr(*args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("Error: ") and "Traceback" not in done.stderr, done.stderr
    assert lines[1].startswith("Hint: cr") and lines[1].endswith(" --help shows its usage"), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert not (cr_home / "repos.json").exists()


def test_no_command_shows_usage(run_cr):
    done = run_cr()
    assert "Usage: cr" in done.stdout + done.stderr
    assert "Commands:" in done.stdout + done.stderr
    assert "Traceback" not in done.stderr


# -- new, find, check ------------------------------------------------------------------

def test_new_then_find_show_and_check(run_cr, cr_home):
    done = run_cr("new", "model", "my-model", "--tags", "alpha, beta", "--description", "mine")
    assert done.returncode == 0, done.stderr
    meta_path = cr_home / "local" / "model" / "my-model" / "0.1.0" / "meta.json"
    assert f"created model:my-model@0.1.0 in repo local: {meta_path}" in done.stdout
    meta = json.loads(meta_path.read_text())
    assert meta["tags"] == ["alpha", "beta"] and meta["description"] == "mine"
    assert len(meta["uid"]) == 16

    found = ok_json(run_cr("find", "model", "--json"))
    mine = next(c for c in found if c["name"] == "my-model")
    assert mine["repo"] == "local" and mine["tags"] == ["alpha", "beta"] and mine["uid"] == meta["uid"]
    table = run_cr("find", "model")
    assert "model:my-model@0.1.0" in table.stdout and "local" in table.stdout

    assert ok_json(run_cr("show", "model", "my-model", "--json"))["uid"] == meta["uid"]

    check = run_cr("check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "all valid" in check.stderr
    assert run_cr("check", "model", "my-model").returncode == 0
    assert run_cr("check", str(meta_path.parent)).returncode == 0
    listed = ok_json(run_cr("repo", "list", "--json"))
    assert listed[0]["name"] == "local" and listed[0]["components"] == 1


def test_find_table_in_a_pipe_is_plain_aligned_text(run_cr, tmp_path):
    """Piped, `cr find` prints the rich table's columns as plain text: no styles, nothing cut."""
    repo = make_repo(tmp_path / "mine", "mine")
    long_text = "a description far longer than any terminal " * 6
    make_component(repo, "model", "plain-a", tags=["x", "yy"], description="short")
    make_component(repo, "model", "plain-bb", "2.0.0", tags=["zzz"], description=long_text.strip())
    api.repo_add(repo)
    done = run_cr("find", "model", "--repo", "mine")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "\x1b" not in done.stdout
    assert lines[0].split() == ["REF", "REPO", "TAGS", "DESCRIPTION"]
    assert len(lines) == 3 and all(ln == ln.rstrip() for ln in lines)
    starts = [lines[0].index(h) for h in ("REPO", "TAGS", "DESCRIPTION")]
    assert starts == [len("model:plain-bb@2.0.0") + 2, len("model:plain-bb@2.0.0") + 2 + len("mine") + 2,
                      len("model:plain-bb@2.0.0") + 2 + len("mine") + 2 + len("x,yy") + 2]
    rows = {ln.split()[0]: ln for ln in lines[1:]}
    assert rows["model:plain-a@1.0.0"][starts[0]:].split() == ["mine", "x,yy", "short"]
    assert rows["model:plain-bb@2.0.0"][starts[2]:] == long_text.strip()  # not truncated


def test_plain_table_matches_the_rich_layout():
    """The plain table keeps the rich table's columns and alignment (rich pads and cuts the last one)."""
    import io

    from rich.console import Console
    from rich.table import Table

    from cr.cli.output import plain_table

    columns = ["REF", "REPO", "DESCRIPTION"]
    cells = [["model:a@1.0.0", "local", "one"], ["dataset:long-name@10.0", "r", "-"], ["x:y@1", "builtin", "three words here"]]
    t = Table(show_edge=False, header_style="bold", pad_edge=False, box=None)
    for i, col in enumerate(columns):
        width = max([len(col)] + [len(r[i]) for r in cells])
        t.add_column(col, no_wrap=True, overflow="ellipsis", min_width=10 if i == len(columns) - 1 else width)
    for row in cells:
        t.add_row(*row)
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None, highlight=False, soft_wrap=False).print(t)
    rich_lines = [ln.rstrip() for ln in buf.getvalue().splitlines()]
    assert plain_table(columns, cells).splitlines() == rich_lines
    # an empty cell is '-' in a pipe (docs/output.md): the same lines
    assert plain_table(columns, [r[:2] + ([""] if r[2] == "-" else r[2:]) for r in cells]).splitlines() == rich_lines


class _Terminal(io.StringIO):
    """stderr as a terminal (isatty), keeping what is written."""

    def isatty(self):
        return True


def test_terminal_table_keeps_every_identifier_column(monkeypatch):
    """On a narrow terminal the description is cut, never a column of identifiers."""
    from cr.cli import output

    out = _Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setenv("COLUMNS", "80")
    rows = [["dataset:digits@1.0.0", "builtin", "images,classification,digits,8x8", "UCI optical handwritten digits " * 3],
            ["dataset:iris@1.0.0", "builtin", "tabular,classification,iris", "Fisher's iris"]]
    output.table(["REF", "REPO", "TAGS", "DESCRIPTION"], rows)
    import re

    lines = [ln for ln in re.sub(r"\x1b\[[0-9;]*m", "", out.getvalue()).splitlines() if ln.strip()]
    assert lines[0].split() == ["REF", "REPO", "TAGS", "DESCRIPTION"]
    for line, row in zip(lines[1:], rows):
        assert line.split()[:3] == row[:3]
        assert len(line.rstrip()) <= 80
    assert "…" in lines[1]


def test_new_action_skeleton_is_valid(run_cr):
    made = ok_json(run_cr("new", "action", "my-action", "--version", "2.0.0", "--json"))
    assert made["ref"] == "action:my-action@2.0.0"
    report = ok_json(run_cr("check", "action:my-action", "--json"))
    assert report == {"ok": True, "checked": 1, "problems": [], "warnings": [], "payloads": [], "models": []}


def test_new_twice_with_the_same_version_fails(run_cr, cr_home):
    assert run_cr("new", "dataset", "twice", "--version", "1.0.0").returncode == 0
    meta_path = cr_home / "local" / "dataset" / "twice" / "1.0.0" / "meta.json"
    first = meta_path.read_bytes()
    done = run_cr("new", "dataset", "twice", "--version", "1.0.0")
    assert_user_error(done, "dataset:twice@1.0.0", "already exists")
    assert meta_path.read_bytes() == first  # not overwritten
    # another version is fine, and both are listed
    assert run_cr("new", "dataset", "twice", "--version", "1.1.0").returncode == 0
    found = ok_json(run_cr("find", "dataset", "--name", "twice", "--json"))
    assert [c["version"] for c in found] == ["1.1.0", "1.0.0"]


def test_new_in_a_builtin_repo_is_refused(run_cr):
    assert_user_error(run_cr("new", "model", "intruder", "--repo", "builtin"), "'builtin'")
    assert "model:intruder@0.1.0" not in refs(ok_json(run_cr("find", "--json")))


def test_new_in_a_registered_repo(run_cr, tmp_path):
    repo = make_repo(tmp_path / "team", "team")
    api.repo_add(repo)
    made = ok_json(run_cr("new", "solution", "sol", "--repo", "team", "--json"))
    assert made["repo"] == "team"
    assert (repo / "solution" / "sol" / "0.1.0" / "meta.json").is_file()
    assert_user_error(run_cr("new", "solution", "sol2", "--repo", "nope"), "'nope'")


def test_new_with_an_invalid_tag_is_refused(run_cr, cr_home):
    assert_user_error(run_cr("new", "model", "tagged", "--tags", "Not A Tag"), "model:tagged")
    assert not (cr_home / "local" / "model" / "tagged").exists()


def test_find_filters_from_the_command_line(run_cr):
    for name, version, tags in (("pre-a", "1.0.0", ["x", "y"]), ("pre-b", "2.0.0", ["x"]), ("other", "1.5.0", ["y"])):
        api.new("model", name, version=version, tags=tags)

    def names(*args):
        return sorted(c["name"] for c in ok_json(run_cr("find", "model", "--repo", "local", "--json", *args)))

    assert names() == ["other", "pre-a", "pre-b"]
    assert names("--tags", "x") == ["pre-a", "pre-b"]
    assert names("--tags", "x,-y") == ["pre-b"]
    assert names("--tags", "x, y") == ["pre-a"]
    assert names("--name", "pre*") == ["pre-a", "pre-b"]
    assert names("--name", "other") == ["other"]
    assert names("--version", ">=1.5") == ["other", "pre-b"]
    assert names("--version", "2.0.0") == ["pre-b"]


# -- check reports file + JSON pointer -------------------------------------------------

@pytest.fixture
def broken_repo(tmp_path):
    repo = make_repo(tmp_path / "broken", "broken")
    good = make_component(repo, "dataset", "fine")
    bad = make_component(repo, "model", "bad", tags="not-a-list")
    api.repo_add(repo)
    return repo, good, bad


def test_check_of_a_broken_meta_file_names_file_and_pointer(run_cr, broken_repo):
    _, _, bad = broken_repo
    done = run_cr("check", str(bad))
    assert done.returncode == 1
    problem = [ln for ln in done.stdout.splitlines() if ln.strip()]
    assert len(problem) == 1
    assert problem[0].startswith(f"{bad}: /tags: ")
    assert "1 problem" in done.stderr
    assert "Traceback" not in done.stderr

    report = json.loads(run_cr("check", str(bad), "--json").stdout)
    assert report["ok"] is False
    assert report["problems"] == [{"file": str(bad), "pointer": "/tags", "message": report["problems"][0]["message"]}]
    assert "array" in report["problems"][0]["message"]


def test_check_everything_fails_on_one_broken_meta_but_find_goes_on(run_cr, broken_repo):
    repo, good, bad = broken_repo
    done = run_cr("check")
    assert done.returncode == 1
    assert f"{bad}: /tags:" in done.stdout
    assert str(good) not in done.stdout
    repo_check = run_cr("check", str(repo), "--json")
    assert repo_check.returncode == 1
    assert [p["file"] for p in json.loads(repo_check.stdout)["problems"]] == [str(bad)]
    found = run_cr("find", "--json")
    assert found.returncode == 0
    assert "dataset:fine@1.0.0" in refs(json.loads(found.stdout))


def test_check_of_invalid_json_names_file_line_and_column(run_cr, tmp_path):
    repo = make_repo(tmp_path / "r", "r")
    meta = make_component(repo, "model", "syntax")
    meta.write_text('{\n  "kind": "model",\n  "name": "syntax",,\n}\n')
    done = run_cr("check", str(meta))
    assert done.returncode == 1
    assert str(meta) in done.stdout and "line 3" in done.stdout


def test_check_of_a_missing_listed_file_points_at_it(run_cr, tmp_path):
    repo = make_repo(tmp_path / "r", "r")
    meta = make_component(repo, "model", "weights", files={"dir/w.bin": "a" * 64})
    report = json.loads(run_cr("check", str(meta), "--json").stdout)
    assert report["ok"] is False
    assert [(p["file"], p["pointer"]) for p in report["problems"]] == [(str(meta), "/files/dir~1w.bin")]


def test_check_of_a_misplaced_meta(run_cr, tmp_path):
    repo = make_repo(tmp_path / "r", "r")
    meta = make_component(repo, "model", "here")
    data = json.loads(meta.read_text())
    data["version"] = "9.9.9"
    write_json(meta, data)
    done = run_cr("check", str(repo))
    assert done.returncode == 1
    assert str(meta) in done.stdout and "9.9.9" in done.stdout


def test_quiet_hides_progress_but_not_results(run_cr, tmp_path):
    loud = run_cr("repo", "init", str(tmp_path / "a"), "--name", "a")
    assert loud.returncode == 0 and "cr-repo.json" in loud.stderr
    quiet = run_cr("-q", "repo", "init", str(tmp_path / "b"), "--name", "b")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert "created repository b" in quiet.stdout


# -- start-up: no framework imports ----------------------------------------------------

from conftest import HEAVY, IMPORT_PROBE as _PROBE


@pytest.fixture(scope="module")
def decoys(tmp_path_factory) -> Path:
    """Importable stand-ins for the frameworks, so an import is seen even where one is missing."""
    root = tmp_path_factory.mktemp("decoys")
    for name in HEAVY:
        (root / name).mkdir()
        (root / name / "__init__.py").write_text("")
    return root


@pytest.mark.parametrize("argv", [
    ["--help"],
    ["--version"],
    ["find"],
    ["find", "model", "--json"],
    ["show", "model:iris-logreg"],
    ["campaign", "--help"],
], ids=["help", "version", "find", "find-json", "show", "campaign-help"])
def test_startup_imports_no_framework(argv, decoys, tmp_path, cr_home):
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(out), json.dumps(argv)],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "CR_HOME": str(cr_home), "PYTHONPATH": str(decoys)},
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["code"] == 0, done.stderr
    top = {m.split(".")[0] for m in result["modules"]}
    assert "cr" in top and "click" in top
    assert not top & set(HEAVY), sorted(top & set(HEAVY))
    if argv[0] in ("find", "show"):
        assert "git" not in top, "gitpython is imported by a command that does not need git"


def test_the_decoys_would_be_seen(decoys, tmp_path):
    """Guard for the test above: an import of a framework does show up in the probe."""
    out = tmp_path / "modules.json"
    probe = "import numpy, torch\n" + _PROBE
    subprocess.run(
        [sys.executable, "-c", probe, str(out), json.dumps(["--version"])],
        capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(decoys)},
    )
    top = {m.split(".")[0] for m in json.loads(out.read_text())["modules"]}
    assert {"numpy", "torch"} <= top


# -- the installed wheel ---------------------------------------------------------------

def _shipped_files() -> set[str]:
    files = set()
    for folder in DATA_FOLDERS:
        for p in (ROOT / folder).rglob("*"):
            rel = p.relative_to(ROOT)
            if p.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
                files.add(f"cr/_data/{rel.as_posix()}")
    return files


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    base = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)]
    done = subprocess.run(base[:4] + ["--no-build-isolation"] + base[4:], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        done = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    [whl] = out.glob("reefkit-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_ships_the_data_folders(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "cr/_data/repo/cr-repo.json" in names
    for folder in ("repo", "recipes", "actions", "dashboard"):
        assert any(n.startswith(f"cr/_data/{folder}/") for n in names), folder
    missing = _shipped_files() - names
    assert not missing, sorted(missing)
    assert any(n.startswith("cr/store/schemas/") and n.endswith(".json") for n in names)
    assert "cr/__main__.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "cr = cr.cli.main:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
    assert not any(n.startswith(("tests/", "benchmarks/", "repo/")) for n in names)


@pytest.mark.slow
def test_unpacked_wheel_finds_its_builtin_components(wheel, tmp_path, cr_home):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "CR_HOME": str(cr_home)}

    def run(*args):
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=elsewhere, env=env, timeout=60)

    where = run("-c", "import cr, cr.paths; print(cr.__file__); print(cr.paths.data_dir('repo'))")
    assert where.returncode == 0, where.stderr
    module_file, data = where.stdout.splitlines()
    assert Path(module_file).is_relative_to(site)
    assert Path(data) == site / "cr" / "_data" / "repo"

    found = ok_json(run("-m", "cr", "find", "--json"))
    assert BUILTIN_REFS <= refs(found)
    for c in found:
        assert Path(c["path"]).is_relative_to(site / "cr" / "_data"), c
    shown = ok_json(run("-m", "cr", "show", "model:iris-logreg", "--json"))
    assert Path(shown["meta_path"]).is_relative_to(site / "cr" / "_data" / "repo")
    check = run("-m", "cr", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_download_progress_is_one_rewritten_line_on_a_terminal_and_silent_in_a_pipe(monkeypatch):
    from cr.cli.main import CLIReporter

    for stream, expect_output in ((_Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        reporter = CLIReporter()
        reporter.progress("download model.onnx", 5_000_000, 10_000_000)
        reporter.progress("download model.onnx", 6_000_000, 10_000_000)  # within 0.1 s: skipped
        reporter.progress("download model.onnx", 10_000_000, 10_000_000)
        text = stream.getvalue()
        if expect_output:
            assert text == ("\rdownload model.onnx: 5.0 / 10.0 MB (50%)\x1b[K"
                            "\rdownload model.onnx: 10.0 / 10.0 MB (100%)\x1b[K\n")
        else:
            assert text == ""


def test_progress_of_counted_work_names_its_unit_not_megabytes(monkeypatch):
    from cr.cli.main import CLIReporter

    stream = _Terminal()
    monkeypatch.setattr(sys, "stderr", stream)
    reporter = CLIReporter()
    reporter.progress("grid lenet", 3, 12, "settings")
    reporter.progress("reading results", 1_500, 1_500, "results")
    assert stream.getvalue() == ("\rgrid lenet: 3 / 12 settings (25%)\x1b[K"
                                 "\rreading results: 1,500 / 1,500 results (100%)\x1b[K\n")
