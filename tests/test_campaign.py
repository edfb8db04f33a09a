"""Campaigns on this machine: expansion into content-hash jobs, the local executor, resuming,
and every bad input the user can give (one Error line, exit 1, nothing lost)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import make_component
from helpers.campaign import FAST, null_repo, null_solution


def campaign(repo: Path, name: str = "sweep", **fields) -> Path:
    meta = {"solutions": ["solution:null-digits"], "matrix": {"threads": [1, 2]}, **fields}
    return make_component(repo, "campaign", name, **meta)


@pytest.fixture
def repo(tmp_path, run_cr):
    return null_repo(tmp_path, run_cr)


def _json(done):
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_expansion_is_a_deterministic_product_with_include_and_exclude(repo, run_cr):
    campaign(repo, matrix={"threads": [1, 2], "batch_size": [1, 4]}, include=[{"threads": 3, "batch_size": 1}],
             exclude=[{"threads": 2, "batch_size": 4}], platforms={"x86": {"marker": "platform_machine == 'x86_64'"},
                                                                  "pi": {"requires": ["raspberry-pi-4"]}}, repeat=2)
    first = _json(run_cr("campaign", "show", "sweep", "--jobs", "--json"))
    again = _json(run_cr("campaign", "show", "sweep", "--jobs", "--json"))
    jobs = first["jobs"]
    # (2 x 2 - 1 excluded + 1 included) settings x 2 platforms x 2 repetitions
    assert len(jobs) == 4 * 2 * 2
    assert [j["id"] for j in jobs] == [j["id"] for j in again["jobs"]]
    assert len({j["id"] for j in jobs}) == len(jobs)
    settings = {(j["overrides"].get("threads"), j["overrides"].get("batch_size")) for j in jobs}
    assert settings == {(1, 1), (1, 4), (2, 1), (3, 1)}
    table = run_cr("campaign", "show", "sweep", "--jobs")
    assert table.returncode == 0 and "16 job(s)" in table.stdout and "threads=3 batch=1" in table.stdout


def test_solutions_by_tag_query(repo, run_cr):
    make_component(repo, "solution", "tagged-a", tags=["sweepme"], model="model:lenet-digits@1.0.0", backend="null",
                   actions=[{"action": "benchmark", "params": FAST}])
    make_component(repo, "solution", "tagged-b", tags=["sweepme", "slow"], model="model:lenet-digits@1.0.0", backend="null",
                   actions=[{"action": "benchmark", "params": FAST}])
    campaign(repo, solutions=[{"tags": ["sweepme", "-slow"]}, "solution:null-digits"], matrix={"threads": [1]})
    jobs = _json(run_cr("campaign", "show", "sweep", "--jobs", "--json"))["jobs"]
    assert [j["solution"] for j in jobs] == ["solution:tagged-a@1.0.0", "solution:null-digits@1.0.0"]
    path = campaign(repo, "none", solutions=[{"tags": ["nothing-has-this"]}])
    _refused(run_cr("campaign", "show", "none"), str(path), "/solutions/0", "nothing-has-this")


def test_editing_the_solution_changes_the_job_ids(repo, run_cr):
    campaign(repo)
    before = {j["id"] for j in _json(run_cr("campaign", "show", "sweep", "--jobs", "--json"))["jobs"]}
    meta_path = repo / "solution" / "null-digits" / "1.0.0" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["actions"][0]["params"]["min_queries"] = 11
    meta_path.write_text(json.dumps(meta))
    after = {j["id"] for j in _json(run_cr("campaign", "show", "sweep", "--jobs", "--json"))["jobs"]}
    assert before and not before & after


def test_local_run_stores_campaign_records_skips_other_platforms_and_resumes(repo, run_cr):
    campaign(repo, platforms={"here": {}, "pi": {"requires": ["raspberry-pi-4"]}})
    done = run_cr("campaign", "run", "sweep", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert sorted(r["state"] for r in rows) == ["done", "done", "skipped", "skipped"]
    assert all("lacks raspberry-pi-4" in r["reason"] for r in rows if r["state"] == "skipped")
    listed = _json(run_cr("results", "list", "--campaign", "sweep", "--json"))
    assert len(listed) == 2
    record = _json(run_cr("results", "show", listed[0]["uid"], "--json"))
    assert record["campaign"]["name"] == "sweep" and record["campaign"]["attempt"] == 1
    assert record["campaign"]["job"] in {r["job"] for r in rows if r["state"] == "done"}
    assert record["worker"]["name"] == "local"
    assert record["config"]["threads"] in (1, 2)
    # a rerun runs nothing that is stored; --rerun runs it again
    again = run_cr("campaign", "run", "sweep", "--json")
    assert again.returncode == 0 and "0 already done" not in again.stderr
    assert [r for r in json.loads(again.stdout) if r["state"] == "done" and not r["earlier"]] == []
    assert len(_json(run_cr("results", "list", "--campaign", "sweep", "--json"))) == 2
    forced = run_cr("campaign", "run", "sweep", "--rerun", "--json")
    assert forced.returncode == 0
    assert len(_json(run_cr("results", "list", "--campaign", "sweep", "--json"))) == 4
    status = _json(run_cr("campaign", "status", "sweep", "--json"))
    assert sorted(s["state"] for s in status) == ["done", "done", "skipped", "skipped"]
    watched = run_cr("campaign", "status", "sweep", "--watch", timeout=30)  # every job final: it returns at once
    assert watched.returncode == 0 and watched.stdout.count("done") == 2 and "lacks raspberry-pi-4" in watched.stdout


def test_removing_a_result_makes_its_job_run_again(repo, run_cr):
    campaign(repo, matrix={"threads": [1]})
    assert run_cr("campaign", "run", "sweep").returncode == 0
    (uid,) = [r["uid"] for r in _json(run_cr("results", "list", "--campaign", "sweep", "--json"))]
    assert run_cr("results", "rm", uid).returncode == 0
    dry = _json(run_cr("campaign", "run", "sweep", "--dry-run", "--json"))
    assert [r["state"] for r in dry] == ["to run"]


def test_a_failed_job_exits_1_with_the_reason_and_the_others_still_run(repo, run_cr):
    null_solution(repo, "null-bad", scenario="server", target_qps=-1)
    campaign(repo, solutions=["solution:null-digits", "solution:null-bad"], matrix={"threads": [1]})
    done = run_cr("campaign", "run", "sweep", "--json")
    assert done.returncode == 1
    rows = json.loads(done.stdout)
    assert {r["solution"].split("@")[0]: r["state"] for r in rows} == {"solution:null-digits": "done", "solution:null-bad": "failed"}
    assert "Error: 1 job(s) of campaign:sweep" in done.stderr and "Traceback" not in done.stderr


def test_cr_new_campaign_makes_a_valid_skeleton(run_cr):
    done = run_cr("new", "campaign", "mine")
    assert done.returncode == 0, done.stderr
    shown = run_cr("campaign", "show", "mine")
    assert shown.returncode == 1 and "names no solution" in shown.stderr and "Hint:" in shown.stderr
    made = run_cr("campaign", "new", "other", "--solution", "solution:lenet-digits-onnxruntime", "--json")
    assert made.returncode == 0
    assert _json(run_cr("campaign", "show", "other", "--json"))["jobs"] == 1


# -- bad input -------------------------------------------------------------------------

def _refused(done, *words):
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "Hint:" in done.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def test_unknown_solution(repo, run_cr):
    path = campaign(repo, solutions=["solution:no-such-thing"])
    _refused(run_cr("campaign", "run", "sweep"), str(path), "/solutions/0", "no-such-thing")


def test_an_override_the_backend_does_not_have_names_its_options(repo, run_cr):
    campaign(repo, matrix={"backend_options": [{"graph_level": 3}]})
    done = run_cr("campaign", "show", "sweep", "--jobs")
    _refused(done, "/matrix/backend_options", "graph_level", "null")
    assert "sleep_ms" in done.stderr


def test_an_unknown_backend_in_the_matrix(repo, run_cr):
    campaign(repo, matrix={"backend": ["nosuch"]})
    done = run_cr("campaign", "run", "sweep")
    _refused(done, "/matrix/backend", "nosuch")
    assert "null" in done.stderr  # the hint lists the backends there are


def test_empty_expansion_after_excludes(repo, run_cr):
    campaign(repo, matrix={"threads": [1]}, exclude=[{"threads": 1}])
    _refused(run_cr("campaign", "run", "sweep"), "/exclude", "no job")


def test_a_schema_error_names_the_file_and_the_pointer(repo, run_cr):
    path = campaign(repo, matrix={"threads": ["many"]})
    _refused(run_cr("campaign", "show", "sweep"), str(path), "/matrix/threads/0")
    path = campaign(repo, "sweep2", matrix={"colour": ["red"]})
    _refused(run_cr("campaign", "run", "sweep2"), str(path), "colour")


def test_a_scheduler_that_does_not_answer(repo, run_cr):
    import socket

    campaign(repo)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    done = run_cr("campaign", "run", "sweep", "--scheduler", f"127.0.0.1:{port}", "--connect-timeout", "2", timeout=60)
    _refused(done, f"tcp://127.0.0.1:{port}", "does not answer")
    assert _json(run_cr("campaign", "status", "sweep", "--json"))[0]["state"] == "pending"


def test_tls_options_must_come_together(repo, run_cr, tmp_path):
    campaign(repo)
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    _refused(run_cr("campaign", "run", "sweep", "--scheduler", "tls://127.0.0.1:1", "--tls-ca-file", ca), "--tls-cert")


def test_dask_executor_needs_a_scheduler(repo, run_cr):
    campaign(repo)
    _refused(run_cr("campaign", "run", "sweep", "--executor", "dask"), "--scheduler")


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_a_rerun_resumes(repo, run_cr, cr_home):
    import os
    import signal
    import subprocess
    import sys
    import time

    null_solution(repo, "null-slow", min_queries=40)
    meta = repo / "solution" / "null-slow" / "1.0.0" / "meta.json"
    data = json.loads(meta.read_text())
    data["backend_options"] = {"sleep_ms": 50}  # about 2 s a job
    meta.write_text(json.dumps(data))
    campaign(repo, solutions=["solution:null-slow"], matrix={"threads": [1]}, repeat=3)
    env = {**os.environ, "CR_HOME": str(cr_home)}
    proc = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "sweep"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        journal = list(cr_home.glob("campaigns/sweep-*/journal.jsonl"))
        if journal and '"done"' in journal[0].read_text():
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("no job finished")
    time.sleep(0.3)  # into the second job
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Interrupted" in err and "resumes" in err and "Traceback" not in err
    states = sorted(s["state"] for s in _json(run_cr("campaign", "status", "sweep", "--json")))
    assert states[0] == "done" and "running" not in states
    done_before = states.count("done")
    again = run_cr("campaign", "run", "sweep", timeout=120)
    assert again.returncode == 0, again.stderr
    assert f"{3 - done_before} job(s) to run, {done_before} already done" in again.stderr
    assert len(_json(run_cr("results", "list", "--campaign", "sweep", "--json"))) == 3


def test_a_scheduler_port_in_use_is_one_clear_error(run_cr):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        _refused(run_cr("scheduler", "--port", port, timeout=60), f"127.0.0.1:{port}", "cannot listen")


def test_a_worker_with_a_missing_platform_root(run_cr, tmp_path):
    _refused(run_cr("worker", "--scheduler", "127.0.0.1:1", "--platform-root", tmp_path / "nope"), "platform root", "nope")


def test_a_matrix_backend_gets_only_the_solutions_thread_count_and_refuses_options_it_lacks(repo, run_cr):
    # the solution's intra_op_threads is onnxruntime's: a job on another backend keeps its thread
    # count only (as threads, cr.run.target.carried_options), so it expands
    campaign(repo, solutions=["solution:lenet-digits-onnxruntime"], matrix={"backend": ["null"]})
    assert run_cr("campaign", "show", "sweep", "--jobs").returncode == 0
    campaign(repo, "opts", solutions=["solution:lenet-digits-onnxruntime"], matrix={"backend": ["null"]},
             include=[{"backend": "null", "backend_options": {"intra_op_threads": 2}}])
    done = run_cr("campaign", "show", "opts", "--jobs")
    _refused(done, "/matrix/backend_options", "intra_op_threads", "lenet-digits-onnxruntime")
    assert "sleep_ms" in done.stderr
