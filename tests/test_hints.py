"""Hints that work: every `cr ...` command a Hint: line names exists with the options it names
(read from the code, checked against the real click tree), and the hints of the errors a new
user meets are run as printed through the real CLI (docs/errors.md)."""
from __future__ import annotations

import json
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest
from conftest import make_component, make_repo, write_json
from helpers.hints import check, command_tree, commands, hints

ROOT = Path(__file__).resolve().parent.parent
LENET = ROOT / "repo/model/lenet-digits/1.0.0"


# ---------------------------------------------------------------- read from the code

def test_every_cr_command_in_a_hint_exists_with_the_options_it_names():
    cli = command_tree()
    found = [(h, c) for h in hints() for c in commands(h.text)]
    assert len({(h.file, h.line) for h, _ in found}) > 120  # the reader finds the hints, in every module
    wrong = [f"{h.file}:{h.line}: {c!r}: {'; '.join(p)}" for h, c in found if (p := check(c, cli))]
    assert not wrong, "\n".join(wrong)


def test_the_hint_reader_finds_each_kind_of_site_and_the_checker_refuses_what_is_wrong():
    sites = {(h.file, h.text) for h in hints()}
    assert ("cr/resolve/trusting.py", "cr repo list shows the registered ones") in sites  # hint= keyword
    assert ("cr/cli/main.py", "\x00 --help shows its usage") in sites  # output.error's second argument
    assert any(f == "cr/campaign/jobs.py" and "cr results show UID" in t for f, t in sites)  # a "hint" dict entry
    assert any(f == "cr/run/describe.py" and t.startswith("cr find \x00 --repo \x00") for f, t in sites)  # an f-string
    cli = command_tree()
    assert commands("install it: cr install software imageio (and imageio-ffmpeg for video)") == ["cr install software imageio"]
    assert commands("cr results show UID lists each check; cr env exec --python PATH T -- CMD") == [
        "cr results show UID", "cr env exec --python PATH T -- CMD"]
    assert check("cr results list --solution NAME", cli) == []
    assert check("cr env exec --python PATH TARGET ... -- CMD", cli) == []
    assert check("cr instal software numpy", cli) == ["no command 'cr instal'"]
    assert check("cr backends", cli) == ["no command 'cr backends'"]  # no such command, not prose
    assert check("cr find model --tagz onnx", cli) == ["cr find has no option --tagz"]
    assert check("cr results", cli) == ["cr results needs a sub-command"]
    assert check("cr show <name>", cli) == ["placeholder not in capitals (write NAME, REF, FILE, ...)"]
    assert check("cr writes has no negative latency", cli) == []  # prose about cr


# ---------------------------------------------------------------- run as printed

@dataclass
class Scenario:
    """An error a user meets, and its hint run as printed.

    argv: the command that fails (str.format'ed with what setup returns); error: text of its
    Error: line; run: which of the hint's commands to run (default: all), each with the
    placeholders in fill filled (from the error's own context, formatted like argv) and
    expected to exit rc; shows: text the first one prints; fixes: the original command then
    gets past its error."""
    id: str
    argv: list
    error: str
    setup: Callable | None = None
    run: tuple | None = None
    fill: dict = field(default_factory=dict)
    rc: int = 0
    shows: str | None = None
    fixes: bool = False


def _empty_dir(tmp_path, run_cr):
    (tmp_path / "mine").mkdir()
    return {}


def _bad_lock(tmp_path, run_cr):
    write_json(tmp_path / "lock.json", {})
    return {}


def _bad_recipe(tmp_path, run_cr):
    repo = make_repo(tmp_path / "recipes", "testrecipes", layout="name", kind="software", meta_file="recipe.json")
    write_json(repo / "badmethod" / "recipe.json", {
        "uid": "00112233445566aa", "kind": "software", "name": "badmethod", "version": "1.0.0",
        "install": [{"method": "conda", "packages": ["six=={version}"], "versions": ["1.17.0"]}]})
    assert run_cr("repo", "add", repo).returncode == 0
    return {"recipe": str(repo / "badmethod" / "recipe.json")}


def _campaign(tmp_path, run_cr):
    assert run_cr("campaign", "new", "c1", "--solution", "solution:no-such").returncode == 0
    return {}


def _photo(tmp_path, run_cr):
    from PIL import Image

    Image.new("RGB", (32, 32), (200, 10, 10)).save(tmp_path / "photo.jpg")
    return {}


def _lenet_copy(expected: dict):
    """model:lenet-copy in a registered repo: the shipped ONNX lenet-digits with other expectations."""

    def setup(tmp_path, run_cr):
        repo = make_repo(tmp_path / "models", "models")
        meta = {k: v for k, v in json.loads((LENET / "meta.json").read_text()).items()
                if k not in ("uid", "kind", "name", "version", "variants", "architecture", "files", "provenance")}
        meta["expected"] = expected
        shutil.copy(LENET / "lenet-digits.onnx", make_component(repo, "model", "lenet-copy", **meta).parent)
        assert run_cr("repo", "add", repo).returncode == 0
        return {}

    return setup


def _missing_dataset_file(tmp_path, run_cr):
    repo = make_repo(tmp_path / "data", "data")
    make_component(repo, "dataset", "sensor", format="npz", source={"file": "sensor.npz"},
                   sample={"shape": [8, 8], "dtype": "float32"}, files={})
    assert run_cr("repo", "add", repo).returncode == 0
    return {}


def _stored_result(tmp_path, run_cr):
    done = run_cr("run", "model", "lenet-digits", "--backend", "onnxruntime", "--limit", "1")
    assert done.returncode == 0, done.stderr
    return {}


def _two_results(tmp_path, run_cr):
    uids = []
    for _ in range(2):
        done = run_cr("run", "model", "lenet-digits", "--backend", "onnxruntime", "--limit", "1", "--json")
        assert done.returncode == 0, done.stderr
        uids.append(json.loads(done.stdout)["uid"])
    return {"uid1": uids[0], "uid2": uids[1]}


SCENARIOS = [
    # a ref or name that does not exist: the listing of what does
    Scenario("typo-in-model-ref", ["show", "model:lenet-digitz"], "did you mean lenet-digits?", shows="lenet-digits"),
    Scenario("unknown-solution", ["init", "solution", "no-such"], "no component solution:no-such",
             shows="lenet-digits-onnxruntime"),
    Scenario("unknown-solution-to-pack", ["pack", "solution", "no-such"], "no component solution:no-such"),
    Scenario("unknown-model-to-resolve", ["resolve", "model:no-such"], "no component model:no-such", shows="lenet-digits"),
    Scenario("unknown-software", ["install", "software", "no-such-sw"], "unknown software 'no-such-sw'", shows="imageio-ffmpeg"),
    Scenario("unknown-software-to-detect", ["detect", "software", "no-such-sw"], "unknown software 'no-such-sw'"),
    Scenario("unknown-software-env-exec", ["env", "exec", "software:no-such", "--", "true"], "no component software:no-such"),
    Scenario("unknown-software-env", ["env", "show", "no-such"], "no software env no-such"),
    Scenario("unknown-campaign", ["campaign", "run", "no-such"], "no component campaign:no-such"),
    Scenario("unknown-campaign-status", ["campaign", "status", "no-such"], "no component campaign:no-such"),
    Scenario("unknown-repo-to-trust", ["repo", "trust", "no-such"], "no repository named 'no-such'"),
    Scenario("unknown-repo-to-update", ["repo", "update", "no-such"], "no git repository named 'no-such'"),
    Scenario("show-in-unknown-repo", ["show", "model:lenet-digits", "--repo", "no-such"], "no repository named 'no-such'"),
    Scenario("show-in-repo-without-it", ["show", "model:lenet-digits", "--repo", "builtin-recipes"],
             "repository 'builtin-recipes' holds no model:lenet-digits"),
    # results
    Scenario("unknown-result", ["results", "show", "0123456789abcdef"], "no result '0123456789abcdef'"),
    Scenario("gate-unknown-baseline", ["gate", "a", "b"], "baseline 'a': no result 'a'"),
    Scenario("pareto-of-nothing", ["results", "pareto", "--model", "no-such", "--objective", "p50"],
             "no successful benchmark result matches", run=(0,)),  # then: cr benchmark (prose: run one first)
    Scenario("compare-one-result", ["results", "compare", "{uid1}"], "compare needs two or more results",
             setup=_two_results, fill={" [UID...]": "", "UID UID": "{uid1} {uid2}"}, shows="{uid2}"),
    # not there yet: the command that makes it
    Scenario("dashboard-not-built", ["dashboard", "open"], "there is no dashboard", setup=_stored_result, fixes=True),
    Scenario("dashboard-without-results", ["dashboard", "build"], "there are no results in", fixes=True),
    Scenario("not-a-repository", ["repo", "add", "mine"], "is not a reefkit repository (no cr-repo.json)",
             setup=_empty_dir, fill={"NAME": "mine"}, fixes=True),
    Scenario("not-a-lock-install", ["install", "--lock", "lock.json"], "lock.json: not a reefkit lock",
             setup=_bad_lock, fill={"REF": "model:iris-logreg", "FILE": "lock.json"}, fixes=True),
    Scenario("not-a-lock-env-exec", ["env", "exec", "lock.json", "--", "true"], "lock.json: not a reefkit lock",
             setup=_bad_lock, fill={"REF": "model:iris-logreg", "FILE": "lock.json"}, fixes=True),
    Scenario("check-what", ["check", "no-such"], "neither an existing path nor a component reference",
             run=(1,)),  # the first is an example path (e.g. cr check ./my-repo)
    # broken metas and files: the command that shows the problem (cr check exits 1 when it finds one)
    Scenario("invalid-recipe", ["install", "software", "badmethod"], "the recipe for software 'badmethod' is invalid",
             setup=_bad_recipe, rc=1, shows="/install/0/method"),
    Scenario("campaign-names-unknown-solution", ["campaign", "run", "c1"], "unknown solution 'solution:no-such'",
             setup=_campaign, shows="lenet-digits-onnxruntime"),
    Scenario("dataset-file-missing", ["run", "model", "lenet-digits", "--backend", "onnxruntime", "--dataset", "dataset:sensor"],
             "its file", setup=_missing_dataset_file, shows='"file": "sensor.npz"'),
    # a model and its input
    Scenario("image-into-array-model", ["run", "model", "lenet-digits", "--backend", "onnxruntime", "-i", "photo.jpg"],
             "its pre-processing has no decode step, but input photo.jpg is an image file", setup=_photo, shows='"op": "reshape"'),
    Scenario("better-than-expected", ["validate", "model", "lenet-copy", "--backend", "onnxruntime"],
             "better than expected", setup=_lenet_copy({"top1": {"value": 0.5, "abs": 0.01}}), shows='"split_by"'),
    # usage errors: the command's --help
    Scenario("usage-bad-choice", ["compile", "model", "lenet-digits", "--to", "keras"], "'keras' is not one of"),
    Scenario("usage-missing-file", ["install", "--lock", "no-lock.json"], "does not exist"),
    Scenario("usage-missing-argument", ["results", "show"], "Missing argument 'UID'"),
]

# A placeholder left in a command after filling (docs/errors.md: capitals, or ...).
_PLACEHOLDER = re.compile(r"(?<![\w:/.-])(?:[A-Z][A-Z0-9_]+(?::[A-Z]+)?|\.\.\.|\[[A-Z][A-Z0-9_.]*\])(?![\w/.-])")


def _hint_commands(stderr: str) -> tuple[str, list[str]]:
    errors = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    found = [line[len("Hint: "):] for line in stderr.splitlines() if line.startswith("Hint: ")]
    assert len(errors) == 1 and len(found) == 1, stderr
    return errors[0], commands(found[0])


@pytest.mark.parametrize("s", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_the_hint_of_a_common_error_runs_as_printed(s, run_cr, tmp_path, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)  # cr dashboard open prints its URL, starts no browser
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("BROWSER", raising=False)
    context = s.setup(tmp_path, run_cr) if s.setup else {}
    argv = [a.format(**context) for a in s.argv]
    failed = run_cr(*argv, cwd=tmp_path)
    assert failed.returncode in (1, 2) and "Traceback" not in failed.stderr, failed.stderr
    error, hinted = _hint_commands(failed.stderr)
    assert s.error in error
    assert hinted, f"the hint names no cr command: {failed.stderr}"
    chosen = [hinted[i] for i in s.run] if s.run is not None else hinted
    for n, command in enumerate(chosen):
        for placeholder, value in s.fill.items():
            command = command.replace(placeholder, value.format(**context))
        left = _PLACEHOLDER.findall(command)
        assert not left, f"{command!r}: {left} not filled (from the hint: {hinted})"
        ran = run_cr(*shlex.split(command)[1:], cwd=tmp_path)
        assert ran.returncode == s.rc, f"{command!r} (the hint of {' '.join(argv)}) exited {ran.returncode}: {ran.stderr}"
        assert "Traceback" not in ran.stderr
        if s.shows and n == 0:
            assert s.shows.format(**context) in ran.stdout + ran.stderr, ran.stdout + ran.stderr
    if s.fixes:
        again = run_cr(*argv, cwd=tmp_path)
        assert s.error not in again.stderr, again.stderr


def test_the_scenarios_cover_the_errors_a_new_user_meets():
    assert len(SCENARIOS) >= 25 and len({s.id for s in SCENARIOS}) == len(SCENARIOS)


# ---------------------------------------------------------------- the accuracy verdict

def test_worse_than_expected_points_at_the_pipeline(run_cr, tmp_path):
    _lenet_copy({"top1": {"value": 1.0, "abs": 0.001}})(tmp_path, run_cr)
    done = run_cr("validate", "model", "lenet-copy", "--backend", "onnxruntime")
    assert done.returncode == 1
    error, _ = _hint_commands(done.stderr)
    assert re.search(r"top1 0\.9\d+, expected 1\.0000 \+- 0\.0010: worse than expected", error), error
    assert "Hint: check the pre-processing (pipeline sha256 in the result)" in done.stderr
    assert "better than expected" not in done.stderr


def test_better_than_expected_is_said_so_and_points_at_the_data_not_the_pipeline(run_cr, tmp_path):
    _lenet_copy({"top1": {"value": 0.5, "abs": 0.01}})(tmp_path, run_cr)
    done = run_cr("validate", "model", "lenet-copy", "--backend", "onnxruntime")
    assert done.returncode == 1
    error, _ = _hint_commands(done.stderr)
    assert re.search(r"top1 0\.9\d+, expected 0\.5000 \+- 0\.0100: better than expected", error), error
    assert "split and labels (cr show dataset:digits@1.0.0)" in done.stderr
    assert "pre-processing" not in done.stderr


def test_an_error_metric_below_its_expected_value_is_better():
    from cr.cli.actions import _check_tolerance
    from cr.errors import CRError

    lower = {"metric": "nme", "value": 0.02, "expected": 0.05, "allowed": 0.01, "ok": False}
    with pytest.raises(CRError) as err:
        _check_tolerance({"outcome": "FAIL", "checks": [lower]}, "dataset:faces@1.0.0")
    assert "nme 0.0200, expected 0.0500 +- 0.0100: better than expected" in err.value.message
    assert "cr show dataset:faces@1.0.0" in err.value.hint
    mixed = [lower, {"metric": "top1", "value": 0.7, "expected": 0.9, "allowed": 0.01, "ok": False}]
    with pytest.raises(CRError) as err:  # one figure worse: the pipeline is the first suspect
        _check_tolerance({"outcome": "FAIL", "checks": mixed})
    assert "top1 0.7000, expected 0.9000 +- 0.0100: worse than expected" in err.value.message
    assert "pre-processing" in err.value.hint
