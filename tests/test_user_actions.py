"""A user's own action, end to end through the real CLI: an action component (meta, entry
module, host hook) in a user's repository runs through `cr do`, in a solution's declared
actions and in a campaign's expansion, and every key it returns is in the stored record.
Also: compile and profile share run_action (their records are in the results store)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import make_component, make_repo

ENTRY = '''
def main(job):
    inputs = job["model"]["meta"].get("inputs") or []
    return {
        "input_stats": {"count": len(inputs), "names": [i["name"] for i in inputs]},
        "my_metric": 1 * job["params"]["scale"],
        "backend_seen": (job.get("backend") or {}).get("name"),
        "_scratch": "the child's own note, never stored",
        "uid": "not-the-records-uid",
    }
'''

HOST = '''
from cr.errors import CRError
from cr.run.hooks import ActionHost


class StatsHost(ActionHost):
    def check(self, run):
        if run.params["scale"] < 0:
            raise CRError(f"scale {run.params['scale']} is negative", hint="give -P scale=2")

    def after_child(self, run, record, result):
        record["host_note"] = f"scaled by {run.params['scale']}"
'''


def user_action(repo: Path, name: str = "input-stats", host: str | None = "input_stats_host:StatsHost",
                host_source: str = HOST) -> Path:
    """actions component NAME in repo: meta.json, its entry module and (host) its host hook beside it."""
    meta = dict(entry="input_stats_action:main", applies_to=["model", "solution"],
                description="How many inputs the model declares, scaled (a test action)",
                parameters={"type": "object", "properties": {"scale": {"type": "number"}, "timeout_s": {"type": "number"}},
                            "additionalProperties": False},
                defaults={"scale": 2, "timeout_s": 120})
    if host:
        meta["host"] = host
    path = make_component(repo, "action", name, version="0.1.0", **meta)
    (path.parent / "input_stats_action.py").write_text(textwrap.dedent(ENTRY), encoding="utf-8")
    (path.parent / "input_stats_host.py").write_text(textwrap.dedent(host_source), encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path, run_cr):
    r = make_repo(tmp_path / "mine", "mine")
    user_action(r)
    make_component(r, "solution", "iris-stats", model="model:iris-logreg@1.0.0", backend="null",
                   actions=[{"action": "input-stats", "params": {"scale": 3}}],
                   deps=["software:python@>=3.9", "software:numpy@>=1.23"])
    assert run_cr("repo", "add", r).returncode == 0
    return r


def _record(run_cr, uid: str) -> dict:
    shown = run_cr("results", "show", uid, "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)


def test_a_user_action_runs_through_cr_do_and_its_outputs_are_stored(repo, run_cr):
    done = run_cr("do", "input-stats", "model", "iris-logreg", "--backend", "null", "-P", "scale=5", "--json")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    stored = _record(run_cr, printed["uid"])
    assert stored["action"] == "input-stats" and stored["status"] == "ok"
    assert stored["my_metric"] == 5 and stored["input_stats"] == {"count": 1, "names": ["float_input"]}
    assert stored["backend_seen"] == "null" and stored["config"]["scale"] == 5
    assert stored["host_note"] == "scaled by 5"  # its host hook ran after the child
    assert stored["uid"] == printed["uid"] != "not-the-records-uid"  # reserved keys stay the host's
    assert "_scratch" not in stored
    assert {"ref": "action:input-stats@0.1.0", "repo": "mine"}.items() <= next(
        c for c in stored["components"] if c["kind"] == "action").items()
    # the table names what the action returned
    table = run_cr("do", "input-stats", "model:iris-logreg", "--backend", "null", "--no-store")
    assert table.returncode == 0, table.stderr
    assert "my_metric" in table.stdout and "host_note" in table.stdout


def test_a_user_actions_host_hook_refuses_bad_settings_before_the_run(repo, run_cr):
    done = run_cr("do", "input-stats", "model", "iris-logreg", "--backend", "null", "-P", "scale=-1")
    assert done.returncode == 1
    assert "Error: scale -1 is negative" in done.stderr and "Hint: give -P scale=2" in done.stderr
    assert json.loads(run_cr("results", "list", "--json").stdout) == []
    schema = run_cr("do", "input-stats", "model", "iris-logreg", "--backend", "null", "-P", "speed=1")
    assert schema.returncode == 1 and "speed" in schema.stderr  # the action's parameters schema


def test_cr_do_names_the_actions_that_apply_to_a_kind(repo, run_cr):
    done = run_cr("do", "nothing-here", "model", "iris-logreg")
    assert done.returncode == 1
    assert "no action 'nothing-here' applies to a model" in done.stderr
    assert "benchmark" in done.stderr and "compile" in done.stderr and "input-stats" in done.stderr


def test_a_host_hook_that_is_not_an_action_host_is_refused_naming_the_meta_file(tmp_path, run_cr):
    r = make_repo(tmp_path / "bad", "bad")
    meta = user_action(r, host="input_stats_host:StatsHost", host_source="class StatsHost:\n    pass\n")
    assert run_cr("repo", "add", r).returncode == 0
    done = run_cr("do", "input-stats", "model", "iris-logreg", "--backend", "null")
    assert done.returncode == 1
    assert f"{meta}: /host: input_stats_host:StatsHost is class StatsHost, not a subclass of cr.run.hooks.ActionHost" in done.stderr
    source = "from cr.run.hooks import ActionHost\nclass StatsHost(ActionHost):\n    def after_child(self, run):\n        pass\n"
    (meta.parent / "input_stats_host.py").write_text(source, encoding="utf-8")
    done = run_cr("do", "input-stats", "model", "iris-logreg", "--backend", "null")
    assert done.returncode == 1 and "StatsHost.after_child(self, run) cannot be called as after_child(self, run, record, result)" in done.stderr


def test_an_untrusted_user_action_runs_nothing_until_trusted(repo, run_cr, tmp_path):
    marker = tmp_path / "host-imported"
    host = user_action(repo).parent / "input_stats_host.py"
    host.write_text(f"open({str(marker)!r}, 'w').close()\n" + textwrap.dedent(HOST), encoding="utf-8")
    assert run_cr("repo", "untrust", "mine").returncode == 0
    done = run_cr("do", "input-stats", "model", "iris-logreg", "--backend", "null")
    assert done.returncode == 1 and "not trusted" in done.stderr
    assert "input_stats_action:main" in done.stderr and "input_stats_host:StatsHost" in done.stderr
    assert not marker.exists()  # the host module was never imported
    assert run_cr("repo", "trust", "mine").returncode == 0
    done = run_cr("do", "input-stats", "model", "iris-logreg", "--backend", "null")
    assert done.returncode == 0, done.stderr
    assert marker.exists()


def test_a_solution_runs_a_user_action_it_declares(repo, run_cr):
    done = run_cr("benchmark", "solution", "iris-stats", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    (printed,) = json.loads(done.stdout)
    stored = _record(run_cr, printed["uid"])
    assert stored["action"] == "input-stats" and stored["my_metric"] == 3 and stored["host_note"] == "scaled by 3"
    assert stored["components"][0]["ref"] == "solution:iris-stats@1.0.0"


def test_a_campaign_expands_and_parameterises_a_user_action(repo, run_cr):
    from cr.campaign.spec import expand, load, run_kwargs

    make_component(repo, "campaign", "stats-sweep", solutions=["solution:iris-stats"], matrix={"threads": [1]},
                   actions=["input-stats"], params={"input-stats": {"scale": 7}})
    shown = run_cr("campaign", "show", "stats-sweep", "--json")
    assert shown.returncode == 0, shown.stderr
    (job,) = expand(load("stats-sweep"))
    assert job.actions == ["input-stats"]
    overrides, kw = run_kwargs(job)
    assert overrides["input-stats"] == {"scale": 7}  # threads is no parameter of it: not passed
    assert overrides["benchmark"] == {"threads": 1}


@pytest.mark.slow
def test_compile_goes_through_run_action_and_its_record_is_stored(run_cr, tmp_path):
    done = run_cr("compile", "model", "lenet-digits", "--to", "onnx", "--variant", "state-dict", "--json", timeout=600)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    listed = json.loads(run_cr("results", "list", "--json").stdout)
    assert [(r["uid"], r["action"]) for r in listed] == [(printed["uid"], "compile")]
    stored = _record(run_cr, printed["uid"])
    assert stored["output"]["ref"] == "model:lenet-digits@1.0.0+onnx" and stored["backend"] is None
    assert stored["checks"] and stored["config"]["conversion"] == printed["conversion"]


def test_profile_and_compile_are_hosts_of_run_action():
    from cr.run.compile import CompileHost
    from cr.run.hooks import ActionHost, load_host
    from cr.run.profile import ProfileHost
    from cr.store.catalog import show

    assert isinstance(load_host(show("action:profile", verify=False)), ProfileHost)
    compile_host = load_host(show("action:compile", verify=False))
    assert isinstance(compile_host, CompileHost) and compile_host.needs_backend is False
    assert type(load_host(show("action:validate", verify=False))) is ActionHost

