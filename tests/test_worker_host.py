"""Several `cr worker`s on one machine: unique default names, and one benchmark slot per machine
(a host-wide lock) so two workers never time jobs on the same cores at once. Real scheduler
and workers on 127.0.0.1."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime

import pytest

from conftest import make_component, make_repo
from helpers.campaign import null_solution
from helpers.cluster import start_cr, stop_all, wait_line

pytestmark = pytest.mark.slow


def _cr(env, *args, timeout=240):
    return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture
def scheduler(tmp_path):
    env = {**os.environ, "CR_HOME": str(tmp_path / "coordinator")}
    env.pop("PYTHONWARNINGS", None)
    procs = [start_cr(["scheduler", "--port", "0"], env, tmp_path / "scheduler.log")]
    addr = wait_line(tmp_path / "scheduler.log", "scheduler at", procs[0]).split()[-1]
    yield addr, env, procs
    stop_all(list(reversed(procs)))


def test_two_unnamed_workers_on_one_host_join_under_distinct_names(scheduler, tmp_path):
    addr, env, procs = scheduler
    host = socket.gethostname()
    for i in (1, 2):
        procs.append(start_cr(["worker", "--scheduler", addr, "--cr-home", tmp_path / f"w{i}"], env, tmp_path / f"w{i}.log"))
        line = wait_line(tmp_path / f"w{i}.log", "worker ", procs[-1])
        assert line.startswith(f"worker {host if i == 1 else host + '-2'} joined "), line
    # a name given twice is refused: one Error line and a Hint, exit 1, no traceback
    procs.append(start_cr(["worker", "--scheduler", addr, "--name", "twin", "--cr-home", tmp_path / "t1"], env, tmp_path / "t1.log"))
    wait_line(tmp_path / "t1.log", "worker twin", procs[-1])
    again = _cr(env, "worker", "--scheduler", addr, "--name", "twin", "--cr-home", tmp_path / "t2", timeout=60)
    lines = again.stderr.strip().splitlines()
    assert again.returncode == 1 and "Traceback" not in again.stderr, again.stderr
    assert lines[0].startswith("Error: ") and "a worker named twin is already connected" in lines[0], again.stderr
    assert lines[1] == "Hint: give this worker another --name"


def test_two_workers_on_one_host_never_time_jobs_at_once(scheduler, tmp_path):
    addr, env, procs = scheduler
    for i in (1, 2):
        procs.append(start_cr(["worker", "--scheduler", addr, "--name", f"w{i}", "--cr-home", tmp_path / f"w{i}"],
                              env, tmp_path / f"w{i}.log"))
        wait_line(tmp_path / f"w{i}.log", f"worker w{i}", procs[-1])
    repo = make_repo(tmp_path / "comps", "comps")
    null_solution(repo, "null-slow", min_queries=15)
    meta = repo / "solution" / "null-slow" / "1.0.0" / "meta.json"
    data = json.loads(meta.read_text())
    data["backend_options"] = {"sleep_ms": 40}  # 15 queries x 40 ms: jobs of about 0.6 s
    meta.write_text(json.dumps(data))
    make_component(repo, "campaign", "shared-host", solutions=["solution:null-slow"], repeat=4)
    assert _cr(env, "repo", "add", repo).returncode == 0
    done = _cr(env, "campaign", "run", "shared-host", "--scheduler", addr, "--wait-for-workers", "2", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 4 and {r["state"] for r in rows} == {"done"}
    assert {r["worker"] for r in rows} == {"w1", "w2"}, rows  # both workers took jobs...
    listed = json.loads(_cr(env, "results", "list", "--campaign", "shared-host", "--json").stdout)
    records = [json.loads(_cr(env, "results", "show", r["uid"], "--json").stdout) for r in listed]
    windows = sorted((datetime.fromisoformat(r["started"]), datetime.fromisoformat(r["ended"])) for r in records)
    assert len(windows) == 4
    for (_, end), (start, _) in zip(windows, windows[1:]):
        assert start >= end, windows  # ...but never timed two at once on this machine's cores
    logs = (tmp_path / "w1.log").read_text() + (tmp_path / "w2.log").read_text()
    assert "waiting for this machine's benchmark slot" in logs


def test_the_machine_slot_is_one_per_host_and_released_by_a_dead_holder(tmp_path):
    """Two processes: the second waits while the first holds the slot, and gets it once the first is killed."""
    from cr.campaign.worker import machine_slot, slot_path

    holder = subprocess.Popen([sys.executable, "-c", (
        "import time; from cr.campaign.worker import machine_slot\n"
        "with machine_slot({'name': 'holder'}):\n    print('held', flush=True); time.sleep(60)")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        got = []

        def take():
            with machine_slot({"name": "second"}) as waited:
                got.append(waited)

        t = threading.Thread(target=take)
        t.start()
        time.sleep(0.5)
        assert not got and t.is_alive()  # still waiting
        holder.kill()
        t.join(timeout=20)
        assert got and got[0] >= 0.5
        assert os.path.exists(slot_path())
    finally:
        holder.kill()
        holder.wait()
