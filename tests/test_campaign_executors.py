"""Campaign executors are plugins: a third one, installed as a distribution of its own (a
dist-info folder and a module on PYTHONPATH, nothing of cr/ touched), runs a campaign
through the real CLI; a broken one is one clear error naming it. Also the executor-neutral
pieces every executor reuses: the checked CampaignJob and the wire format of outcomes."""
from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest

from conftest import make_component, make_repo

FAST = {"inputs": "synthetic", "min_duration_s": 0, "min_queries": 12, "warmup_queries": 0, "max_duration_s": 0}

# A trivial executor as a user would write it: every job in this process, through the
# worker-side pieces cr ships (placement, run_here, the wire format).
INPROC = '''
from cr.campaign.executors import Executor, Option
from cr.campaign.jobs import run_here
from cr.campaign.placement import lacking
from cr.campaign.wire import to_wire


class InProcess(Executor):
    name = "inproc"
    summary = "every job inside the coordinator's process (a test plugin)"
    OPTIONS = (Option("label", str, "inproc", "the worker name its records carry"),
               Option("limit", int, 0, "run at most this many jobs (0: all)"))

    def __init__(self, label="inproc", limit=0):
        self.label, self.limit = label, limit

    def where(self):
        return "this very process"

    def run(self, run):
        from cr.platform import current

        here = current()
        for i, job in enumerate(run.todo):
            if self.limit and i >= self.limit:
                run.not_run(job, "skipped", f"beyond limit={self.limit}")
                continue
            reason = lacking(job.target, here)
            if reason:
                run.not_run(job, "skipped", "this machine " + reason)
                continue
            run.started(job, self.label)
            outcome = to_wire(run_here(job, job.solution))  # as if it had crossed to a worker and back
            assert all(isinstance(b, bytes) for b in outcome["latencies"]), outcome["latencies"]
            run.finished(job, outcome, {"name": self.label, "host": "in-process"})
'''


def _plugin(folder: Path, dist: str, entries: dict[str, str], modules: dict[str, str]) -> Path:
    """A distribution as pip leaves it: DIST-0.1.dist-info/{METADATA,entry_points.txt} + modules."""
    info = folder / f"{dist.replace('-', '_')}-0.1.dist-info"  # as pip names it
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[cr.executors]\n" + "".join(f"{k} = {v}\n" for k, v in entries.items()))
    for name, text in modules.items():
        (folder / f"{name}.py").write_text(text)
    return folder


@pytest.fixture
def sweep(tmp_path, run_cr):
    repo = make_repo(tmp_path / "comps", "comps")
    make_component(repo, "solution", "null-digits", model="model:lenet-digits@1.0.0", backend="null",
                   actions=[{"action": "benchmark", "params": FAST}], deps=["software:python@>=3.9", "software:numpy@>=1.23"])
    make_component(repo, "campaign", "sweep", solutions=["solution:null-digits"], matrix={"threads": [1, 2]},
                   platforms={"here": {}, "pi": {"requires": ["raspberry-pi-4"]}})
    assert run_cr("repo", "add", repo).returncode == 0
    return repo


def test_a_third_executor_from_its_own_distribution_runs_a_campaign(sweep, run_cr, tmp_path):
    env = {"PYTHONPATH": str(_plugin(tmp_path / "site", "myexec", {"inproc": "myexec_inproc:InProcess"},
                                     {"myexec_inproc": INPROC}))}
    helped = run_cr("campaign", "run", "--help", env=env)
    assert helped.returncode == 0 and "inproc: every job inside" in helped.stdout and "label" in helped.stdout
    done = run_cr("campaign", "run", "sweep", "--executor", "inproc", "-E", "label=mine", "--json", env=env)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert sorted(r["state"] for r in rows) == ["done", "done", "skipped", "skipped"]
    assert {r["worker"] for r in rows if r["state"] == "done"} == {"mine"}
    listed = json.loads(run_cr("results", "list", "--campaign", "sweep", "--json").stdout)
    assert len(listed) == 2
    record = json.loads(run_cr("results", "show", listed[0]["uid"], "--json", "--raw").stdout)
    assert record["worker"] == {"name": "mine", "host": "in-process"} and record["campaign"]["name"] == "sweep"
    # the latencies crossed as bytes and were stored whole: one per query, checked on the way in
    assert len(record["raw"]["latencies_ns"]) == record["metrics"]["queries"] >= 12
    # the status and a rerun see it like any other executor's work
    status = json.loads(run_cr("campaign", "status", "sweep", "--json").stdout)
    assert sorted(s["state"] for s in status) == ["done", "done", "skipped", "skipped"]
    again = run_cr("campaign", "run", "sweep", "--executor", "inproc", env=env)
    assert again.returncode == 0 and "2 already done (on this very process)" in again.stderr  # the skipped ones are tried again
    assert len(json.loads(run_cr("results", "list", "--campaign", "sweep", "--json").stdout)) == 2
    # its options are checked against what it declares, by type
    bad = run_cr("campaign", "run", "sweep", "--executor", "inproc", "-E", "limit=many", env=env)
    _refused(bad, "inproc", "limit", "an integer")
    unknown = run_cr("campaign", "run", "sweep", "--executor", "inproc", "-E", "nodes=3", env=env)
    _refused(unknown, "inproc", "nodes")
    assert "-E label=" in unknown.stderr  # the hint names the options it has
    flag = run_cr("campaign", "run", "sweep", "--executor", "inproc", "--retries", "3", env=env)
    _refused(flag, "inproc", "retries")
    # without the distribution the name is unknown, and the error lists what there is
    missing = run_cr("campaign", "run", "sweep", "--executor", "inproc")
    assert missing.returncode == 2 and "local" in missing.stderr and "dask" in missing.stderr


def _refused(done, *words) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr and "Hint:" in done.stderr, done.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.mark.parametrize("value, module, words", [
    ("brokenexec_mod:Thing", "import no_such_framework_here\n", ["cannot be imported", "no_such_framework_here"]),
    ("brokenexec_mod:Thing", "class Thing:\n    pass\n", ["no method run(self, run)"]),
    ("brokenexec_mod:Thing", "class Thing:\n    def run(self, run): pass\n    OPTIONS = ('nodes',)\n", ["OPTIONS"]),
    ("brokenexec_mod:Thing", "class Thing:\n    name = 'other'\n    def run(self, run): pass\n", ["declares name 'other'"]),
    ("brokenexec_mod:Nope", "", ["has no attribute 'Nope'"]),
], ids=["import-error", "no-run", "bad-options", "wrong-name", "no-attribute"])
def test_a_broken_executor_plugin_is_one_clear_error_naming_it(sweep, run_cr, tmp_path, value, module, words):
    env = {"PYTHONPATH": str(_plugin(tmp_path / "site", "brokenexec", {"shaky": value}, {"brokenexec_mod": module}))}
    done = run_cr("campaign", "run", "sweep", "--executor", "shaky", env=env)
    _refused(done, "shaky", "distribution brokenexec 0.1", "cr.executors", *words)
    # the others still work, and the help lists the broken one with what is wrong
    helped = run_cr("campaign", "run", "--help", env=env)
    assert helped.returncode == 0 and "shaky: cannot be used" in helped.stdout and "local:" in helped.stdout


def test_an_executor_name_registered_twice_is_refused_naming_both(sweep, run_cr, tmp_path):
    site = _plugin(tmp_path / "site", "exec-a", {"twice": "mod_a:A"}, {"mod_a": INPROC.replace("InProcess", "A")})
    _plugin(site, "exec-b", {"twice": "mod_b:B"}, {"mod_b": INPROC.replace("InProcess", "B")})
    done = run_cr("campaign", "run", "sweep", "--executor", "twice", env={"PYTHONPATH": str(site)})
    _refused(done, "twice", "more than once", "exec-a 0.1", "exec-b 0.1")


# -- the executor-neutral pieces ------------------------------------------------------------

JOB = {"id": "0" * 16, "solution": "solution:x@1.0.0", "solution_uid": "0" * 16, "solution_sha256": "0" * 64,
       "overrides": {"threads": 2}, "platform": "any", "target": {}, "repetition": 0, "actions": None, "params": {}}


@pytest.mark.parametrize("change, words", [
    ({"repetition": "0"}, ["repetition", "an integer", "str"]),
    ({"repetition": True}, ["repetition", "an integer"]),
    ({"overrides": ["threads"]}, ["overrides", "an object"]),
    ({"actions": "benchmark"}, ["actions", "a list or null"]),
    ({"colour": "red"}, ["colour", "unknown"]),
    ({"solution": None}, ["solution", "a string"]),
])
def test_a_campaign_job_from_another_machine_is_checked_field_by_field(change, words):
    from cr.campaign.spec import CampaignJob
    from cr.errors import CRError

    job = CampaignJob.from_dict(json.loads(json.dumps(JOB)))
    assert job.to_dict() == JOB and job.setting == "threads=2"
    with pytest.raises(CRError) as err:
        CampaignJob.from_dict({**JOB, **change})
    for w in words:
        assert w in err.value.message
    missing = {k: v for k, v in JOB.items() if k != "platform"}
    with pytest.raises(CRError, match="platform: missing"):
        CampaignJob.from_dict(missing)
    assert CampaignJob.from_dict({k: v for k, v in JOB.items() if k != "params"}).params == {}


def test_outcomes_carry_latencies_as_the_codec_bytes_and_are_checked_on_arrival(tmp_path):
    import pickle

    from cr.campaign.wire import from_files, from_wire, to_files, to_wire
    from cr.results.latencies import LatencyError, decode

    values = array("q", [5, 7, 1 << 40, 3])
    outcome = {"status": "ok", "error": None, "records": [
        {"uid": "a" * 16, "raw": {"latencies_ns": values}}, {"uid": "b" * 16, "raw": None}]}
    wired = to_wire(outcome)
    assert wired["latencies"][1] is None and decode(wired["latencies"][0]) == values
    assert wired["records"][0]["raw"]["count"] == 4 and "latencies_ns" not in wired["records"][0]["raw"]
    back = from_wire(pickle.loads(pickle.dumps(wired)))  # as Dask carries it
    assert back["records"][0]["raw"] == {"latencies_ns": values} and "latencies" not in back
    # the JSON-only channel (a GPU job's child process): side files, checked when read back
    text = json.dumps(to_files(outcome, tmp_path))
    assert str(1 << 40) not in text
    assert from_files(json.loads(text), tmp_path)["records"][0]["raw"]["latencies_ns"] == values
    # bytes that do not match the count and sha256 their record names are refused
    damaged = {**wired, "latencies": [wired["latencies"][0][:-8] + b"\0" * 8, None]}
    with pytest.raises(LatencyError, match="a" * 16):
        from_wire(damaged)
    (tmp_path / "0.latencies.i64").write_bytes(b"\0" * 32)
    with pytest.raises(LatencyError):
        from_files(json.loads(text), tmp_path)
