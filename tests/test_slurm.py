"""The Slurm executor on a real one-node Slurm (Debian's slurm-wlm + munge on 127.0.0.1,
started by scripts/slurm-up.sh, which .ci/run calls): `cr worker`s run as Slurm batch jobs,
the campaign's records come back to the coordinator's store, a worker job cancelled mid-job
or ended by Slurm's time limit has its job retried on another (the reason Slurm gives is in
the failed attempt), every worker job is cancelled at the end and on SIGTERM,
and bad input is refused before anything is submitted. Skipped, with the reason, where
Slurm cannot run. The jobs run the null backend on the shipped lenet-digits model."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, make_component, make_repo
from helpers.campaign import null_solution

from cr.campaign import slurm
from cr.errors import CRError


def _slurm_up() -> str | None:
    """None when a Slurm answers here, else why not. The tests start no daemons themselves:
    .ci/run starts the one-node Slurm with scripts/slurm-up.sh."""
    if not shutil.which("sinfo"):
        return "Slurm is not installed (apt-get install slurm-wlm munge, then scripts/slurm-up.sh as root; .ci/run does)"
    try:
        slurm.partitions()
    except CRError as exc:
        return f"{exc.message} (scripts/slurm-up.sh starts a one-node Slurm as root; .ci/run does)"
    return None


# -- what needs no Slurm ------------------------------------------------------------------------

@pytest.mark.parametrize("text,secs", [("10", 600), ("10:30", 630), ("1:00:05", 3605), ("2-3", 2 * 86400 + 3 * 3600),
                                       ("1-00:10", 86400 + 600), ("1-00:00:07", 86407), ("UNLIMITED", None)])
def test_slurm_time_limits_read_as_slurm_reads_them(text, secs):
    assert slurm.seconds(text) == secs


def test_a_malformed_time_limit_is_refused_naming_it():
    with pytest.raises(CRError) as err:
        slurm.seconds("ten minutes")
    assert "'ten minutes'" in err.value.message and "10:00" in err.value.hint


def test_the_longest_measured_job_comes_from_the_journal():
    events = [{"job": "a", "event": "started", "attempt": 1, "time": 100.0},
              {"job": "a", "event": "attempt-failed", "attempt": 1, "time": 900.0},  # no outcome: not a measure
              {"job": "a", "event": "started", "attempt": 2, "time": 1000.0},
              {"job": "a", "event": "done", "attempt": 2, "time": 1012.5},
              {"job": "b", "event": "started", "attempt": 1, "time": 1000.0},
              {"job": "b", "event": "failed", "attempt": 1, "time": 1030.0}]
    assert slurm.longest_job(events) == (30.0, "b")
    assert slurm.longest_job([]) is None


def test_the_worker_script_asks_for_what_was_given_and_keeps_its_home_on_the_node():
    script = slurm.worker_script("tcp://10.0.0.5:8786", "/opt/venv/bin/python -m cr", "gpu", "10:00", 4, "8G", 1, "lab",
                                 worker_args=["--trust"])
    lines = script.splitlines()
    for d in ("--partition=gpu", "--time=10:00", "--cpus-per-task=4", "--mem=8G", "--gres=gpu:1", "--account=lab"):
        assert f"#SBATCH {d}" in lines
    run = lines[-1]
    assert run.startswith("/opt/venv/bin/python -m cr worker --scheduler tcp://10.0.0.5:8786 --name \"slurm-$SLURM_JOB_ID\"")
    assert '--cr-home "$home"' in run and run.endswith("--trust")
    plain = slurm.worker_script("tcp://127.0.0.1:1")
    assert not any(x in plain for x in ("--partition", "--time", "--gres", "--account", "--mem"))


def _settings_of(platforms: dict, jobs: list[tuple[str, bool]], **flags) -> dict:
    """SlurmExecutor(**flags).settings() of a campaign with these platform targets and jobs
    ((target, uses a GPU) each)."""
    from types import SimpleNamespace

    from cr.campaign.slurm_executor import SlurmExecutor
    from cr.campaign.spec import Campaign

    campaign = Campaign("campaign:c", "c", "0" * 16, {"platforms": platforms}, "c/meta.json")
    todo = [SimpleNamespace(id=f"j{i}", platform=target, uses_gpu=gpu) for i, (target, gpu) in enumerate(jobs)]
    return SlurmExecutor(**flags).settings(SimpleNamespace(campaign=campaign, todo=todo, jobs=todo))


def test_each_target_gets_its_own_slurm_settings_a_flag_wins_and_defaults_fill_the_rest():
    platforms = {"cpu": {"slurm": {"partition": "short", "time": "9:00", "cores": 2, "mem": "2G", "account": "lab"}},
                 "gpu": {"requires": ["nvidia-gpu"], "slurm": {"partition": "gpu", "gpus": 2}},
                 "idle": {"slurm": {"partition": "never"}}}  # no job to run: no worker job, never checked
    got = _settings_of(platforms, [("cpu", False), ("gpu", True), ("cpu", False)])
    assert got == {"cpu": {"partition": "short", "time": "9:00", "cores": 2, "mem": "2G", "gpus": 0, "account": "lab"},
                   "gpu": {"partition": "gpu", "time": None, "cores": 1, "mem": None, "gpus": 2, "account": None}}
    flagged = _settings_of(platforms, [("cpu", False), ("gpu", True)], time="30:00", cores=4, gpus=1)
    assert flagged["cpu"] == {**got["cpu"], "time": "30:00", "cores": 4, "gpus": 1}
    assert flagged["gpu"] == {**got["gpu"], "time": "30:00", "cores": 4, "gpus": 1}
    # no slurm mapping: a GPU target still gets one GPU, a CPU target none
    plain = _settings_of({"gpu": {"requires": ["nvidia-gpu"]}, "cpu": {}}, [("gpu", True), ("cpu", False)])
    assert plain["gpu"]["gpus"] == 1 and plain["cpu"]["gpus"] == 0 and plain["cpu"]["cores"] == 1


@pytest.mark.parametrize("slurm_key,value,words", [
    ("time", "ten minutes", ["/platforms/cpu/slurm/time", '"ten minutes"']),
    ("cores", 0, ["/platforms/cpu/slurm/cores", "0"]),
    ("mem", "4 GB", ["/platforms/cpu/slurm/mem", '"4 GB"']),
    ("gpus", -1, ["/platforms/cpu/slurm/gpus", "-1"]),
    ("partition", "a b", ["/platforms/cpu/slurm/partition", '"a b"']),
    ("qos", "high", ["/platforms/cpu/slurm", "'qos'"]),
])
def test_a_bad_slurm_setting_in_the_campaign_is_refused_naming_file_field_and_value(tmp_path, slurm_key, value, words):
    env = {**os.environ, "CR_HOME": str(tmp_path / "home"), **_no_controller(tmp_path)}
    env.pop("PYTHONWARNINGS", None)
    repo = make_repo(tmp_path / "comps", "comps")
    null_solution(repo)
    make_component(repo, "campaign", "bad-slurm", solutions=["solution:null-digits"],
                   platforms={"cpu": {"slurm": {slurm_key: value}}})
    assert _cr(env, "repo", "add", repo).returncode == 0
    done = _cr(env, "campaign", "run", "bad-slurm", "--executor", "slurm")  # refused before Slurm is asked
    assert done.returncode == 1 and "Traceback" not in done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(error) == 1 and "campaign/bad-slurm/1.0.0/meta.json" in error[0], done.stderr
    for w in words:
        assert w in error[0], error[0]
    assert done.stderr.splitlines()[-1].startswith("Hint: ")
    assert "Slurm is not reachable" not in done.stderr and _journal(env, "bad-slurm") == []


def test_the_slurm_mapping_changes_no_job_and_other_executors_ignore_it(tmp_path):
    env = {**os.environ, "CR_HOME": str(tmp_path / "home")}
    env.pop("PYTHONWARNINGS", None)
    repo = make_repo(tmp_path / "comps", "comps")
    null_solution(repo)
    make_component(repo, "campaign", "plain", solutions=["solution:null-digits"], platforms={"cpu": {}})
    make_component(repo, "campaign", "with-slurm", solutions=["solution:null-digits"],
                   platforms={"cpu": {"slurm": {"partition": "nowhere", "time": "1", "cores": 64}}})
    assert _cr(env, "repo", "add", repo).returncode == 0
    ids = [[j["id"] for j in json.loads(_cr(env, "campaign", "show", n, "--jobs", "--json").stdout)["jobs"]]
           for n in ("plain", "with-slurm")]
    assert ids[0] == ids[1]  # where a job's worker was scheduled decides nothing of its result
    done = _cr(env, "campaign", "run", "with-slurm", "--json")  # the local executor: no Slurm asked
    assert done.returncode == 0, done.stderr
    assert [r["state"] for r in json.loads(done.stdout)] == ["done"]


def _no_controller(tmp_path) -> dict:
    """An environment whose Slurm configuration names a controller that is not there: the
    real sinfo fails as it does when slurmctld is down (without Slurm installed, sinfo is
    missing, which is refused the same way)."""
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=nowhere\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=9\nAuthType=auth/munge\n"
                    "MessageTimeout=1\nNodeName=localhost CPUs=1 State=UNKNOWN\nPartitionName=debug Nodes=localhost\n")
    return {"SLURM_CONF": str(conf)}


def _unreachable_words() -> list[str]:
    if shutil.which("sinfo"):
        return ["Slurm is not reachable", "sinfo failed", "Unable to contact slurm controller"]
    return ["Slurm is not reachable", "sinfo is not installed"]


def test_sinfo_that_fails_is_slurm_not_reachable(tmp_path, monkeypatch):
    for k, v in _no_controller(tmp_path).items():
        monkeypatch.setenv(k, v)
    with pytest.raises(CRError) as err:
        slurm.partitions()
    assert all(w in err.value.message for w in _unreachable_words()), err.value.message
    assert "slurm-up.sh" in err.value.hint


def test_a_machine_without_slurm_is_told_so(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sinfo on it
    with pytest.raises(CRError) as err:
        slurm.partitions()
    assert err.value.message == "Slurm is not reachable: sinfo is not installed here"
    assert "submit host" in err.value.hint


# -- on the one-node Slurm ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    why = _slurm_up()
    if why:
        pytest.skip(why)
    base = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "CR_HOME": str(base / "coordinator")}
    env.pop("PYTHONWARNINGS", None)
    repo = make_repo(base / "comps", "comps")
    null_solution(repo)
    null_solution(repo, "null-slow", min_queries=80)
    meta = repo / "solution" / "null-slow" / "1.0.0" / "meta.json"
    data = json.loads(meta.read_text())
    data["backend_options"] = {"sleep_ms": 50}  # 80 queries x 50 ms: a job of about 4 s
    meta.write_text(json.dumps(data))
    assert _cr(env, "repo", "add", repo).returncode == 0
    yield env, repo, base
    left = _ours()
    if left:
        slurm.cancel(left)


def _cr(env, *args, timeout=300):
    return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout)


COMMAND = f"{sys.executable} -m cr"


def _ours() -> list[str]:
    """The Slurm job ids of cr workers Slurm still lists."""
    out = subprocess.run(["squeue", "--noheader", "--format=%i %j"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.split()[1:] == ["cr-worker"]]


def _all_cancelled() -> bool:
    """Whether every cr worker job left Slurm's queue (scancel is asynchronous: a cancelled
    job stays listed, COMPLETING, for up to KillWait)."""
    for _ in range(75):
        if not _ours():
            return True
        time.sleep(0.2)
    return False


def _records(env, name):
    rows = json.loads(_cr(env, "results", "list", "--campaign", name, "--json").stdout)
    return [json.loads(_cr(env, "results", "show", r["uid"], "--json").stdout) for r in rows]


def _journal(env, name):
    folders = list((ROOT / env["CR_HOME"] / "campaigns").glob(f"{name}-*"))
    return [json.loads(line) for line in (folders[0] / "journal.jsonl").read_text().splitlines()] if folders else []


@pytest.mark.slow
def test_a_campaign_runs_on_slurm_workers_and_its_records_come_home(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "on-slurm", solutions=["solution:null-digits"], repeat=3)
    done = _cr(env, "campaign", "run", "on-slurm", "--executor", "slurm", "--partition", "debug", "--time", "10:00",
               "-E", "workers=2", "-E", f"command={COMMAND}", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 3 and {r["state"] for r in rows} == {"done"}
    assert all(r["worker"].startswith("slurm-") for r in rows)
    records = _records(env, "on-slurm")
    assert len(records) == 3 and all(r["worker"]["name"].startswith("slurm-") for r in records)
    assert all(r["metrics"]["latency_ns"]["p50"] > 0 for r in records)
    assert _all_cancelled()  # the worker jobs were cancelled when the campaign ended
    # each worker's CR_HOME was on the node's disk and went with its job
    homes = [Path(os.environ.get("TMPDIR") or "/tmp") / f"cr-{r['worker']}" for r in rows]
    for _ in range(50):
        if not any(h.exists() for h in homes):
            break
        time.sleep(0.2)
    assert not any(h.exists() for h in homes), homes


@pytest.mark.slow
def test_a_worker_job_cancelled_mid_job_has_its_job_retried_on_another(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "cancelled", solutions=["solution:null-slow"], repeat=3)
    proc = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "cancelled", "--executor", "slurm",
                             "--time", "10:00", "--retries", "2", "-E", "workers=2", "-E", f"command={COMMAND}", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        running = [e for e in _journal(env, "cancelled") if e["event"] == "started"]
        if running:
            victim = running[0]["worker"]
        time.sleep(0.2)
    assert victim and victim.startswith("slurm-"), proc.communicate()[1]
    subprocess.run(["scancel", victim.removeprefix("slurm-")], check=True)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    rows = json.loads(out)
    assert {r["state"] for r in rows} == {"done"} and len(rows) == 3
    events = _journal(env, "cancelled")
    lost = [e for e in events if e["event"] == "attempt-failed"]
    assert lost and lost[0]["worker"] == victim
    again = [e for e in events if e["event"] == "done" and e["job"] == lost[0]["job"]]
    assert len(again) == 1 and again[0]["worker"] != victim and again[0]["attempt"] == 2
    assert f"Slurm ended worker job {victim.removeprefix('slurm-')} by scancel (CANCELLED)" in lost[0]["error"]
    assert len(_records(env, "cancelled")) == 3  # each job stored once
    assert _all_cancelled()


@pytest.mark.slow
def test_the_only_worker_job_ended_mid_campaign_is_replaced_and_the_campaign_completes(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "replaced", solutions=["solution:null-slow"], repeat=3)
    proc = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "replaced", "--executor", "slurm",
                             "--time", "10:00", "--retries", "1", "-E", "workers=1", "-E", f"command={COMMAND}", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        running = [e for e in _journal(env, "replaced") if e["event"] == "started"]
        if running:
            victim = running[0]["worker"]
        time.sleep(0.2)
    assert victim and victim.startswith("slurm-"), proc.communicate()[1]
    first = _ours()
    assert first == [victim.removeprefix("slurm-")]  # the only worker job
    subprocess.run(["scancel", victim.removeprefix("slurm-")], check=True)
    replacement = None
    while replacement is None and time.monotonic() < deadline and proc.poll() is None:
        replacement = next((j for j in _ours() if j not in first), None)
        time.sleep(0.2)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert replacement is not None  # a second Slurm job was submitted for the target
    rows = json.loads(out)
    assert {r["state"] for r in rows} == {"done"} and len(rows) == 3, rows
    events = _journal(env, "replaced")
    lost = [e for e in events if e["event"] == "attempt-failed"]
    assert len(lost) == 1 and lost[0]["worker"] == victim
    again = [e for e in events if e["event"] == "done" and e["job"] == lost[0]["job"]]
    assert len(again) == 1 and again[0]["attempt"] == 2
    assert len(_records(env, "replaced")) == 3
    assert _all_cancelled()  # the replacement too


@pytest.mark.slow
def test_replacements_are_bounded_by_retries(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "not-replaced", solutions=["solution:null-slow"], repeat=2)
    proc = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "not-replaced", "--executor", "slurm",
                             "--time", "10:00", "--retries", "0", "-E", "workers=1", "-E", f"command={COMMAND}", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = None
    deadline = time.monotonic() + 120
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        running = [e for e in _journal(env, "not-replaced") if e["event"] == "started"]
        if running:
            victim = running[0]["worker"]
        time.sleep(0.2)
    assert victim, proc.communicate()[1]
    subprocess.run(["scancel", victim.removeprefix("slurm-")], check=True)
    out, err = proc.communicate(timeout=240)
    rows = {r["state"] for r in json.loads(out)} if out.strip() else set()
    assert "done" not in rows and rows <= {"failed", "unplaceable"} and rows, (out, err)
    assert _all_cancelled()


def _slurm_job(job_id: str) -> dict:
    """scontrol's fields of a Slurm job (it keeps an ended job for MinJobAge, 300 s by default)."""
    out = subprocess.run(["scontrol", "show", "job", job_id], capture_output=True, text=True).stdout
    return dict(part.split("=", 1) for part in out.split() if "=" in part)


@pytest.mark.slow
def test_each_platform_target_runs_on_worker_jobs_with_its_own_slurm_settings(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "two-targets", solutions=["solution:null-digits"], repeat=2,
                   platforms={"small": {"slurm": {"partition": "debug", "time": "9:00", "cores": 1}},
                              "wide": {"slurm": {"time": "7:00", "cores": 2}}})
    targets = {j["id"]: j["platform"] for j in json.loads(_cr(env, "campaign", "show", "two-targets", "--jobs",
                                                                "--json").stdout)["jobs"]}
    done = _cr(env, "campaign", "run", "two-targets", "--executor", "slurm", "--time", "8:00", "-E", "workers=1",
               "-E", f"command={COMMAND}", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 4 and {r["state"] for r in rows} == {"done"}
    ran_on = {}
    for e in _journal(env, "two-targets"):
        if e["event"] == "done":
            ran_on.setdefault(targets[e["job"]], set()).add(e["worker"])
    assert set(ran_on) == {"small", "wide"} and all(len(w) == 1 for w in ran_on.values()), ran_on
    assert ran_on["small"] != ran_on["wide"]  # a target's jobs ran on its own worker job only
    small, wide = (_slurm_job(next(iter(ran_on[t])).removeprefix("slurm-")) for t in ("small", "wide"))
    assert small["TimeLimit"] == wide["TimeLimit"] == "00:08:00"  # --time wins over both targets' time
    assert small["Partition"] == wide["Partition"] == "debug"  # wide: the cluster's default partition
    assert small["NumCPUs"] == "1" and wide["NumCPUs"] == "2"
    assert _all_cancelled()


def test_a_partition_in_the_campaign_that_does_not_exist_is_refused_naming_its_field(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "bad-target-partition", solutions=["solution:null-digits"],
                   platforms={"cpu": {"slurm": {"partition": "gpu-h100"}}})
    done = _cr(env, "campaign", "run", "bad-target-partition", "--executor", "slurm")
    lines = _refused(done, "campaign/bad-target-partition/1.0.0/meta.json: /platforms/cpu/slurm/partition",
                     "'gpu-h100'", "debug")
    assert "/platforms/cpu/slurm/partition" in lines[1] and "--partition" in lines[1]
    assert _ours() == [] and _journal(env, "bad-target-partition") == []
    # the flag wins over the campaign's value
    done = _cr(env, "campaign", "run", "bad-target-partition", "--executor", "slurm", "--partition", "debug",
               "-E", f"command={COMMAND}", "--json")
    assert done.returncode == 0, done.stderr
    assert _all_cancelled()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_an_interrupt_cancels_the_worker_jobs_and_a_rerun_resumes(cluster, sig):
    env, repo, base = cluster
    name = f"stopped-{sig.name.lower()}"
    make_component(repo, "campaign", name, solutions=["solution:null-slow"], repeat=4)
    proc = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", name, "--executor", "slurm",
                             "-E", "workers=1", "-E", f"command={COMMAND}"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any(e["event"] == "started" for e in _journal(env, name)):
        time.sleep(0.2)
    assert _ours(), "a worker job runs"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Interrupted" in err and "resumes" in err, err
    assert _all_cancelled()
    assert any(e["event"] == "interrupted" for e in _journal(env, name))
    again = _cr(env, "campaign", "run", name, "--executor", "slurm", "-E", f"command={COMMAND}", "--json")
    assert again.returncode == 0, again.stderr
    assert {r["state"] for r in json.loads(again.stdout)} == {"done"}


@pytest.mark.slow
def test_a_running_scheduler_can_be_given(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "given", solutions=["solution:null-digits"], repeat=2)
    log = base / "given-scheduler.log"
    sched = subprocess.Popen([sys.executable, "-m", "cr", "scheduler", "--port", "0"], env=env, stdout=open(log, "w"),
                             stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            if "scheduler at" in log.read_text():
                break
            time.sleep(0.1)
        addr = log.read_text().split("scheduler at")[1].split()[0]
        done = _cr(env, "campaign", "run", "given", "--executor", "slurm", "--scheduler", addr,
                   "-E", f"command={COMMAND}", "--json")
        assert done.returncode == 0, done.stderr
        assert {r["state"] for r in json.loads(done.stdout)} == {"done"}
        assert sched.poll() is None  # a scheduler it did not start is left running
        assert _all_cancelled()
    finally:
        sched.terminate()
        sched.wait(timeout=30)


# -- bad input: one Error line and a Hint, exit 1, nothing submitted, nothing lost ---------------

def _refused(done, *words):
    assert done.returncode == 1, done.stderr
    said = done.stderr.strip().splitlines()  # after the line naming what would run, if any
    lines = said[-2:]
    assert [x for x in said if x.startswith("Error")] == lines[:1] and lines[0].startswith("Error: "), done.stderr
    assert lines[1].startswith("Hint: ") and len(said) <= 3, done.stderr
    assert "Traceback" not in done.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines


def test_slurm_not_reachable_is_refused_before_anything(tmp_path):
    env = {**os.environ, "CR_HOME": str(tmp_path / "home"), **_no_controller(tmp_path)}
    env.pop("PYTHONWARNINGS", None)
    repo = make_repo(tmp_path / "comps", "comps")
    null_solution(repo)
    make_component(repo, "campaign", "nowhere", solutions=["solution:null-digits"])
    assert _cr(env, "repo", "add", repo).returncode == 0
    done = _cr(env, "campaign", "run", "nowhere", "--executor", "slurm")
    _refused(done, *_unreachable_words())
    assert _journal(env, "nowhere") == []  # nothing started, nothing to resume


def test_a_partition_that_does_not_exist_is_refused_naming_it(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "no-partition", solutions=["solution:null-digits"])
    done = _cr(env, "campaign", "run", "no-partition", "--executor", "slurm", "--partition", "gpu-h100")
    lines = _refused(done, "'gpu-h100'", "debug")
    assert "--partition" in lines[1]
    assert _ours() == [] and _journal(env, "no-partition") == []


def test_a_malformed_time_is_refused_before_slurm_is_asked(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "bad-time", solutions=["solution:null-digits"])
    done = _cr(env, "campaign", "run", "bad-time", "--executor", "slurm", "--time", "5min")
    _refused(done, "'5min'", "time")


@pytest.mark.slow
def test_a_time_limit_shorter_than_a_measured_job_is_refused(cluster):
    env, repo, base = cluster
    make_component(repo, "campaign", "too-short", solutions=["solution:null-slow"], repeat=2)
    first = _cr(env, "campaign", "run", "too-short")  # locally: the journal measures each job (about 4 s)
    assert first.returncode == 0, first.stderr
    before = _journal(env, "too-short")
    done = _cr(env, "campaign", "run", "too-short", "--rerun", "--executor", "slurm", "--time", "0:01")
    lines = _refused(done, "--time 0:01 (1 s) is shorter than job", "too-short", "measured")
    assert "--time at least" in lines[1]
    assert _journal(env, "too-short") == before and _ours() == []  # nothing submitted, nothing lost
    assert len(_records(env, "too-short")) == 2


def _elapsed(job_id: str) -> float:
    """Seconds Slurm says job_id has run (squeue's %M: M:SS, H:MM:SS or D-HH:MM:SS); 0 when not listed."""
    out = subprocess.run(["squeue", "--noheader", "--format=%M", f"--jobs={job_id}"], capture_output=True, text=True).stdout.strip()
    return (slurm.seconds(out) or 0.0) if out and out != "INVALID" else 0.0


@pytest.mark.slow
def test_a_worker_job_ended_by_slurms_time_limit_mid_job_is_retried_on_a_replacement(cluster):
    """Slurm's own time limit ends the only worker job while a job runs on it. Slurm keeps
    limits in whole minutes and checks them every 30 s, so the job's limit is lowered with
    scontrol to 1 minute once it has run more than that, just after a job started; the job
    (40 s) is still running when Slurm ends the worker job within those 30 s (+ KillWait)."""
    env, repo, base = cluster
    null_solution(repo, "null-long", min_queries=80)
    meta = repo / "solution" / "null-long" / "1.0.0" / "meta.json"
    data = json.loads(meta.read_text())
    data["backend_options"] = {"sleep_ms": 500}  # 80 queries x 0.5 s: a job of about 40 s
    meta.write_text(json.dumps(data))
    make_component(repo, "campaign", "timed-out", solutions=["solution:null-long"], repeat=3)
    logs = base / "timed-out-logs"
    logs.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "timed-out", "--executor", "slurm",
                             "--time", "10:00", "--retries", "2", "-E", "workers=1", "-E", f"command={COMMAND}",
                             "-E", f"output={logs}/worker-%j.out", "--json"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = None
        deadline = time.monotonic() + 240
        while first is None and time.monotonic() < deadline and proc.poll() is None:
            first = next(iter(_ours()), None)
            time.sleep(0.2)
        assert first, proc.communicate()[1]
        # past a minute of the worker job, wait for the next job to start on it, then lower its limit
        seen = None
        victim_job = None
        while victim_job is None and time.monotonic() < deadline and proc.poll() is None:
            started = [e for e in _journal(env, "timed-out") if e["event"] == "started"]
            if seen is None and _elapsed(first) >= 62:
                seen = len(started)
            elif seen is not None and len(started) > seen:
                victim_job = started[-1]
                break
            time.sleep(0.2)
        assert victim_job and victim_job["worker"] == f"slurm-{first}", proc.communicate()[1]
        subprocess.run(["scontrol", "update", f"JobId={first}", "TimeLimit=1"], check=True, capture_output=True)
        replacement = None
        while replacement is None and time.monotonic() < deadline and proc.poll() is None:
            replacement = next((j for j in _ours() if j != first), None)
            time.sleep(0.2)
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert _slurm_job(first).get("JobState") == "TIMEOUT"  # Slurm's own kill, not a scancel
    assert replacement is not None and replacement != first  # a new worker job was submitted
    rows = json.loads(out)
    assert {r["state"] for r in rows} == {"done"} and len(rows) == 3, rows
    events = _journal(env, "timed-out")
    (lost,) = [e for e in events if e["event"] == "attempt-failed"]
    assert lost["job"] == victim_job["job"] and lost["worker"] == f"slurm-{first}"
    assert f"Slurm ended worker job {first} at its time limit (TIMEOUT)" in lost["error"]
    # the job that was running ran again, on the replacement (it takes the worker's name, slurm-FIRST)
    again = [e for e in events if e["event"] == "done" and e["job"] == lost["job"]]
    assert len(again) == 1 and again[0]["attempt"] == 2
    status = {r["job"]: r for r in json.loads(_cr(env, "campaign", "status", "timed-out", "--json").stdout)}
    assert f"Slurm ended worker job {first} at its time limit" in status[lost["job"]]["failed_attempts"][0]["error"]
    assert len(_records(env, "timed-out")) == 3  # every job's result in the coordinator's store, once
    # the worker's log (-E output) has Slurm's own word for it
    assert "DUE TO TIME LIMIT" in (logs / f"worker-{first}.out").read_text()
    assert _all_cancelled()  # the replacement was cancelled at the end: nothing left in squeue
