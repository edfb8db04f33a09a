"""The library matches the CLI: every leaf command of `cr` has a documented twin in cr.api
(cr.api.CLI_TWINS) or a reason to have none (cr.api.CLI_ONLY), and, for a representative set,
the twin returns what the command's --json prints on the same CR_HOME (real runs on the
shipped lenet-digits and ssdlite models) and raises CRError where the command prints Error/Hint.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import click
import pytest

import cr
from cr import api
from cr.errors import CRError, NotFound

ROOT = Path(__file__).resolve().parent.parent
LENET = ("model", "lenet-digits")
FAST_PROFILE = ("--samples", "8", "--warmup", "2", "--batch-size", "64", "--threads", "1")
SHORT_BENCH = ("--min-duration", "0.2", "--min-queries", "50", "--warmup", "5", "--warmup-max-queries", "20")


def leaf_commands(group: click.Group) -> dict[str, click.Command]:
    """Every leaf command under group, by its path as typed after `cr` ("results compare")."""
    out: dict[str, click.Command] = {}

    def walk(cmd: click.Command, path: list[str]) -> None:
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + [name])
        else:
            out[" ".join(path)] = cmd

    walk(group, [])
    return out


def without_twin(group: click.Group) -> list[str]:
    """The leaf commands that neither CLI_TWINS nor CLI_ONLY names."""
    return sorted(p for p in leaf_commands(group) if p not in api.CLI_TWINS and p not in api.CLI_ONLY)


def _twins(value) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _cli():
    from cr.cli.main import cli

    return cli


# --- the mapping ------------------------------------------------------------------------------

def test_every_command_has_a_twin_or_a_reason_and_nothing_stale():
    leaves = leaf_commands(_cli())
    assert len(leaves) > 40  # the walk reached into the groups (results, repo, env, campaign, dashboard)
    assert without_twin(_cli()) == []
    assert not set(api.CLI_TWINS) & set(api.CLI_ONLY)
    named = sorted(set(api.CLI_TWINS) | set(api.CLI_ONLY))
    assert [p for p in named if p not in leaves] == []  # no entry for a command that is gone
    for path, reason in api.CLI_ONLY.items():
        assert len(reason.split()) >= 5, f"{path}: say why it has no twin"


def test_a_new_command_without_a_twin_fails_the_check():
    cli = _cli()
    ctx = click.Context(cli)
    commands = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    probe = click.Group("cr", commands={**commands, "frobnicate": click.Command("frobnicate", callback=lambda: None),
                                        "results": click.Group("results", commands={
                                            **commands["results"].commands,
                                            "purge": click.Command("purge", callback=lambda: None)})})
    assert without_twin(probe) == ["frobnicate", "results purge"]


def test_each_twin_is_exported_lazily_and_documented():
    undocumented = []
    for path, value in api.CLI_TWINS.items():
        for name in _twins(value):
            assert name in api.__all__, f"{path}: {name} is not in cr.api"
            assert name in cr._API_NAMES, f"{path}: {name} is not offered on cr"
            function = getattr(cr, name)
            assert getattr(api, name) is function
            if len((function.__doc__ or "").split()) < 4:
                undocumented.append(f"{path}: cr.{name}")
    assert undocumented == []


def test_docs_api_shows_every_call_and_the_command_it_mirrors():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    for path, value in api.CLI_TWINS.items():
        assert f"`cr {path}" in text, f"docs/api.md does not name `cr {path}`"
        for name in _twins(value):
            assert re.search(rf"cr\.{re.escape(name)}\(", text), f"docs/api.md has no example of cr.{name}(...)"
    for path in api.CLI_ONLY:
        assert f"`cr {path}" in text, f"docs/api.md does not say why `cr {path}` has no twin"


def test_import_cr_stays_light(tmp_path):
    import subprocess

    code = "import cr, sys; cr.api; print(sorted(m for m in ('numpy', 'torch', 'tensorflow', 'onnxruntime', 'dask', 'click') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- the same data as --json, on the same CR_HOME ----------------------------------------------

def _data(value):
    """A twin's return as its --json prints it: to_dict() of objects, through JSON."""
    from cr.cli.output import json_text

    if isinstance(value, list):
        value = [v.to_dict() if hasattr(v, "to_dict") else v for v in value]
    elif hasattr(value, "to_dict"):
        value = value.to_dict()
    return json.loads(json_text(value))


def _json(done) -> object:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_find_show_check_equal_their_json(run_cr):
    assert _data(cr.find("model")) == _json(run_cr("find", "model", "--json"))
    assert _data(cr.find("model", tags=["onnx"], name="lenet*")) == _json(run_cr("find", "model", "--tags", "onnx", "--name", "lenet*", "--json"))
    for ref in ("model:lenet-digits", "model:ssdlite-mobilenet-v2-person", "dataset:digits"):
        shown = cr.show(ref)
        assert _data(shown) == _json(run_cr("show", ref, "--json"))
    assert cr.show("model:ssdlite-mobilenet-v2-person")["payload"]["package"]  # the pin a model from a package has
    report = cr.check("model:lenet-digits")
    assert _data(report) == _json(run_cr("check", "model:lenet-digits", "--json"))
    assert report.ok


def test_errors_are_crerror_with_the_clis_words(run_cr):
    with pytest.raises(NotFound) as info:
        cr.show("model:no-such-model")
    done = run_cr("show", "model:no-such-model")
    assert done.returncode == 1 and f"Error: {info.value.message}" in done.stderr
    with pytest.raises(CRError) as info:
        cr.profile("model:lenet-digits", backend="torch", compare=["onnxruntime", "torch"])
    done = run_cr("profile", *LENET, "--compare", "onnxruntime,torch", "--backend", "torch")
    assert done.returncode == 1 and f"Error: {info.value.message}" in done.stderr and info.value.hint
    with pytest.raises(CRError) as info:
        cr.results_show("0123456789abcdef")
    done = run_cr("results", "show", "0123456789abcdef")
    assert done.returncode == 1 and f"Error: {info.value.message}" in done.stderr
    with pytest.raises(CRError) as info:
        cr.stream("model:lenet-digits", "no-such-clip.mp4")
    assert "no-such-clip.mp4 does not exist" in info.value.message


def test_results_list_show_compare_equal_their_json(run_cr):
    uids = [_json(run_cr("benchmark", *LENET, "--backend", "onnxruntime", *SHORT_BENCH, "--json", timeout=300))["uid"]
            for _ in range(2)]
    listed = cr.results_list()
    assert listed == _json(run_cr("results", "list", "--json")) and {r["uid"] for r in listed} == set(uids)
    assert cr.results_list(action="profile") == [] == _json(run_cr("results", "list", "--action", "profile", "--json"))
    assert _data(cr.results_show(uids[0])) == _json(run_cr("results", "show", uids[0][:8], "--json"))
    assert _data(cr.results_show(uids[0], raw=True)) == _json(run_cr("results", "show", uids[0], "--raw", "--json"))
    report = cr.compare(*uids)
    assert _data(report) == _json(run_cr("results", "compare", *uids, "--json"))
    sig = report["significance"]  # the intervals and the verdict with its rule, as the CLI prints them
    assert "interval" in sig["rule"] and sig["pairs"][0]["baseline"] == uids[0]
    judged = {m["metric"]: m for m in sig["pairs"][0]["metrics"]}
    p50 = judged["p50_ns"]
    assert p50["verdict"] in ("faster", "slower", "inconclusive") and p50["ci"][0] <= p50["ratio"] <= p50["ci"][1]


def test_profile_twin_gives_the_record_the_cli_prints(run_cr):
    printed = _json(run_cr("profile", *LENET, "--backend", "onnxruntime", *FAST_PROFILE, "--json", "--no-store", timeout=300))
    record = cr.profile("model:lenet-digits", backend="onnxruntime", samples=8, warmup=2, batch_size=64, threads=1, store=False)
    # two real runs: the same record shape, model, configuration and layers (times differ run to run)
    assert sorted(record) == sorted(printed) and record["status"] == printed["status"] == "ok"
    assert record["config"] == printed["config"] and record["components"] == printed["components"]
    assert sorted(record["profile"]) == sorted(printed["profile"])
    layers = lambda r: sorted((l["name"], l["op"]) for l in r["profile"]["layers"])  # noqa: E731
    assert layers(record) == layers(printed) and len(layers(record)) >= 4
    assert json.loads(json.dumps(record)) == record  # plain JSON data, as printed (raw inline)
    assert cr.results_list() == []  # store=False, as --no-store


def test_a_failed_profile_is_runfailed_with_the_clis_words_and_the_record(run_cr):
    done = run_cr("profile", *LENET, "--backend", "onnxruntime", "--samples", "3", "--timeout", "0.05", "--json")
    printed = json.loads(done.stdout)
    assert done.returncode == 1 and printed["status"] == "failed"
    with pytest.raises(cr.RunFailed) as info:
        cr.profile("model:lenet-digits", backend="onnxruntime", samples=3, timeout_s=0.05)
    assert isinstance(info.value, CRError)
    assert f"Error: {info.value.message}" in done.stderr and f"Hint: {info.value.hint}" in done.stderr
    kept = info.value.result  # nothing lost: the record the CLI printed before its Error line
    assert kept["status"] == "failed" and sorted(kept) == sorted(printed)
    assert kept["error"]["message"] == printed["error"]["message"]
    assert {r["uid"] for r in cr.results_list(action="profile")} == {kept["uid"], printed["uid"]}  # both stored


def test_env_exec_runs_in_the_environment_the_cli_builds(run_cr):
    code = ("import json, os, sys; print(json.dumps({k: os.environ.get(k) for k in ('CR_LOCK_ROOT', 'PYTHONPATH', 'PATH')}));"
            " sys.exit(3)")
    done = run_cr("env", "exec", "model:lenet-digits", "--", "python", "-c", code)
    twin = cr.env_exec("model:lenet-digits", ["python", "-c", code], capture_output=True, text=True)
    assert done.returncode == twin.returncode == 3
    assert json.loads(twin.stdout) == json.loads(done.stdout.strip().splitlines()[-1])
    assert json.loads(twin.stdout)["CR_LOCK_ROOT"] == "model:lenet-digits@1.0.0"
    with pytest.raises(CRError) as info:
        cr.env_exec("model:lenet-digits", ["no-such-program-here"])
    done = run_cr("env", "exec", "model:lenet-digits", "--", "no-such-program-here")
    assert done.returncode == 1 and f"Error: {info.value.message}" in done.stderr


def test_pack_and_unpack_twins_give_the_clis_summaries(run_cr, tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    ref = "solution:lenet-digits-onnxruntime"
    printed = _json(run_cr("pack", ref, "-o", tmp_path / "a", "--no-results", "--json"))
    summary = cr.pack_solution(ref, tmp_path / "b", stored_results=False)
    assert Path(summary["archive"]).parent == tmp_path / "b" and Path(printed["archive"]).parent == tmp_path / "a"
    # deterministic bytes: the same archive, so the same summary but where it was written
    assert {**summary, "archive": None} == {**printed, "archive": None} and summary["sha256"] == printed["sha256"]
    info = cr.unpack_archive(summary["archive"], into=tmp_path / "unpacked")
    assert info["solution"] == printed["solution"] and not info["reused"]
    again = _json(run_cr("unpack", summary["archive"], "--into", tmp_path / "unpacked", "--json"))
    assert again == {**info, "reused": True, "unregistered": again["unregistered"]}  # unpacked once: nothing to do


def test_campaign_show_and_status_twins_equal_their_json(run_cr):
    made = _json(run_cr("campaign", "new", "sweep", "--solution", "solution:lenet-digits-onnxruntime", "--json"))
    assert made["ref"].startswith("campaign:sweep")
    for jobs in (False, True):
        printed = _json(run_cr("campaign", "show", "sweep", *(["--jobs"] if jobs else []), "--json"))
        assert _data(cr.campaign_show("sweep", jobs=jobs)) == printed
    rows = cr.campaign_report("sweep")
    assert _data(rows) == _json(run_cr("campaign", "status", "sweep", "--json"))
    assert rows and {r["state"] for r in rows} == {"pending"}  # nothing ran yet
    with pytest.raises(CRError) as info:
        cr.campaign_report("no-such-campaign")
    done = run_cr("campaign", "status", "no-such-campaign")
    assert done.returncode == 1 and f"Error: {info.value.message}" in done.stderr


def _git(cwd: Path, *args: str) -> None:
    import subprocess

    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_repo_add_and_pull_twins_equal_their_json(run_cr, tmp_path):
    from conftest import make_repo
    from helpers.recipes import recipe_repo

    plain = make_repo(tmp_path / "plain", "plain")
    printed = _json(run_cr("repo", "add", plain, "--json"))
    run_cr("repo", "rm", "plain")
    added = cr.repo_add(plain)
    assert added.name == "plain"  # still the Repo callers use
    assert _data(added) == printed and printed["name"] == "plain" and printed["origin"] == "dir"
    # a git repository holding something that runs code: a recipe with an install script
    remote = recipe_repo(tmp_path / "r", {"name": "scripted", "install": [{"method": "script", "versions": ["0.3.0"],
                                                                        "script": 'mkdir -p "$PREFIX"'}]})
    run_cr("repo", "rm", "testrecipes")
    _git(remote, "init", "-q")
    _git(remote, "add", "-A")
    _git(remote, "-c", "user.email=a@b.invalid", "-c", "user.name=a", "commit", "-qm", "recipes")
    for trust in (False, True):
        printed = _json(run_cr("repo", "pull", remote.as_uri(), *(["--trust"] if trust else []), "--json"))
        assert run_cr("repo", "rm", printed["name"]).returncode == 0
        pulled = cr.repo_pull(remote.as_uri(), trust=trust)
        assert _data(pulled) == printed
        assert printed["trusted"] is trust and [i["what"] for i in printed["would_run"]] != []
        assert pulled.name == printed["name"] and pulled.would_run  # the Repo, plus what it would run
        assert {r["name"]: r["trusted"] for r in cr.repo_list()}[pulled.name] is trust
        cr.repo_rm(pulled.name)


def test_install_software_twin_equals_its_json_with_the_dependencies(run_cr, tmp_path):
    from helpers.recipes import recipe_repo

    script = 'mkdir -p "$PREFIX/bin"\nprintf "#!/bin/sh\\necho $VERSION\\n" > "$PREFIX/bin/{0}"\nchmod +x "$PREFIX/bin/{0}"'
    recipe_repo(tmp_path, *({"name": name, "install": [{"method": "script", "versions": ["0.3.0"], "script": script.format(name)}],
                             "detect": [{"type": "executable", "names": [name], "args": ["--version"], "regex": r"(\S+)"}],
                             "deps": deps}
                            for name, deps in (("helper-tool", []), ("main-tool", ["software:helper-tool@>=0.1"]))))
    printed = _json(run_cr("install", "software", "main-tool", "--json"))
    assert printed["name"] == "main-tool" and [d["name"] for d in printed["dependencies_installed"]] == ["helper-tool"]
    for env in (printed, *printed["dependencies_installed"]):
        cr.env_rm(env["name"], env["version"])
    got = cr.install_software("main-tool")  # installed again from nothing, as the CLI did
    assert list(got) == list(printed)  # the same keys, in the same order
    same = lambda d: {k: v for k, v in d.items() if k not in ("created", "id", "dependencies_installed")}  # noqa: E731
    assert same(got) == same(printed) and Path(got["prefix"], "bin", "main-tool").is_file()
    assert [same(d) for d in got["dependencies_installed"]] == [same(d) for d in printed["dependencies_installed"]]
    # installed already: nothing more to install, the same answer from both
    again = cr.install_software("main-tool")
    assert again["dependencies_installed"] == [] and _json(run_cr("install", "software", "main-tool", "--json")) == again


def test_new_solution_twin_equals_init_solution_model_json(run_cr):
    printed = _json(run_cr("init", "solution", "mine-a", "--model", "model:lenet-digits", "--backend", "onnxruntime", "--json"))
    made = cr.new_solution("mine-b", "model:lenet-digits", "onnxruntime")
    assert sorted(made) == sorted(printed) == ["created", "meta", "path"]
    assert made["created"] == "solution:mine-b@1.0.0" and printed["created"] == "solution:mine-a@1.0.0"
    assert Path(made["path"]).is_file() and Path(made["path"]).parent.parent.parent == Path(printed["path"]).parent.parent.parent
    unnamed = lambda m: {k: v for k, v in m.items() if k not in ("uid", "name", "description")}  # noqa: E731
    assert unnamed(made["meta"]) == unnamed(printed["meta"])
    assert _data(cr.show("solution:mine-b"))["meta"] == made["meta"]


def test_campaign_run_twin_equals_its_json_and_its_dry_run(run_cr, tmp_path):
    from conftest import make_component
    from helpers.campaign import null_repo

    repo = null_repo(tmp_path, run_cr)
    make_component(repo, "campaign", "tiny", solutions=["solution:null-digits"], matrix={"threads": [1, 2]})
    plan = cr.campaign_run("tiny", dry_run=True)
    assert plan == _json(run_cr("campaign", "run", "tiny", "--dry-run", "--json"))
    assert [r["state"] for r in plan] == ["to run", "to run"]
    printed = _json(run_cr("campaign", "run", "tiny", "--json", timeout=300))
    assert [r["state"] for r in printed] == ["done", "done"] and all(r["results"] for r in printed)
    plan = cr.campaign_run("tiny", dry_run=True)
    assert plan == _json(run_cr("campaign", "run", "tiny", "--dry-run", "--json"))
    assert [r["state"] for r in plan] == ["done (earlier)", "done (earlier)"]
    rows = cr.campaign_run("tiny")  # nothing left to run: the rows of the run before, as the CLI gives them now
    assert rows == _json(run_cr("campaign", "run", "tiny", "--json"))
    assert [{**r, "earlier": False} for r in rows] == printed and all(r["earlier"] for r in rows)
    status = {r["job"]: (r["state"], r["results"]) for r in cr.campaign_report("tiny")}  # what cr campaign status says
    assert {r["job"]: (r["state"], r["results"]) for r in rows} == status
    events = []
    rerun = cr.campaign_run("tiny", rerun=True, listener=lambda kind, job, info: events.append(kind),
                            on_start=lambda run, executor: events.append(len(run.todo)))
    assert events[0] == 2 and events.count("done") == 2 and [r["state"] for r in rerun] == ["done", "done"]
    assert {u for r in rerun for u in r["results"]}.isdisjoint({u for r in printed for u in r["results"]})
    # a job that fails: a row saying so (nothing raised), where the command exits 1 with the same rows
    from helpers.campaign import null_solution
    from cr.campaign.calls import failure

    null_solution(repo, "null-bad", scenario="server", target_qps=-1)
    make_component(repo, "campaign", "bad", solutions=["solution:null-bad"])
    rows = cr.campaign_run("bad")
    assert [r["state"] for r in rows] == ["failed"] and rows[0]["error"]
    done = run_cr("campaign", "run", "bad", "--rerun", "--json")
    assert done.returncode == 1 and [r["state"] for r in json.loads(done.stdout)] == ["failed"]
    said = failure(rows, "campaign:bad@1.0.0", "bad")  # the command's Error/Hint, made from the twin's rows
    assert f"Error: {said.message}\nHint: {said.hint}\n" in done.stderr and failure(cr.campaign_run("tiny"), "", "") is None
    with pytest.raises(CRError) as info:
        cr.campaign_run("no-such-campaign", dry_run=True)
    done = run_cr("campaign", "run", "no-such-campaign", "--dry-run")
    assert done.returncode == 1 and f"Error: {info.value.message}" in done.stderr


@pytest.fixture
def frames(tmp_path) -> Path:
    """Two real photographs (scikit-image's astronaut and cat) as a folder of frames."""
    skimage = pytest.importorskip("skimage.data")
    from PIL import Image

    folder = tmp_path / "frames"
    folder.mkdir()
    Image.fromarray(skimage.astronaut()).resize((160, 160)).save(folder / "a.png")
    Image.fromarray(skimage.chelsea()).resize((160, 120)).save(folder / "b.png")
    return folder


def test_stream_twin_iterates_the_frames_the_cli_prints(run_cr, frames):
    pytest.importorskip("ai_edge_litert")
    ref = "model:ssdlite-mobilenet-v2-person"
    printed = _json(run_cr("run", ref, "--backend", "tflite", "--stream", frames, "--max-frames", "2", "--json",
                           "--no-store", timeout=300))
    run = cr.stream(ref, frames, backend="tflite", max_frames=2, store=False)
    got = list(run)
    assert len(got) == len(printed["predictions"]) == 2
    seen = lambda ps: [(p["frame"], p["id"], [(d["label"], round(d["score"], 3)) for d in p["detections"]]) for p in ps]  # noqa: E731
    assert seen(got) == seen(printed["predictions"])
    assert seen(got)[0][2][0][0] == "person" and seen(got)[1][2] == []  # the astronaut is found, the cat is not
    assert sorted(run.record) == sorted(printed) and sorted(run.record["stream"]) == sorted(printed["stream"])
    assert run.record["stream"]["frames"] == 2 and run.record["stream"]["fps"] > 0
