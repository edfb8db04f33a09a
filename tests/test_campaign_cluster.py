"""Campaigns on a real Dask cluster on 127.0.0.1: `cr scheduler` and three `cr worker`
processes, each with its own CR_HOME and a different platform (this host; the captured
Raspberry Pi 4 aarch64; the captured 8x H100 server). Jobs run the null backend on the
shipped lenet-digits model; the workers get the solution as archive bytes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime

import pytest

from conftest import ROOT, make_component, make_repo
from helpers.campaign import null_solution
from helpers.cluster import make_certs, start_cr as _start, stop_all, wait_line as _wait_line
from helpers.dashboard import browser  # noqa: F401  (the Chromium fixture)

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow
FIXTURES = ROOT / "tests" / "fixtures" / "platforms"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(scheduler address, coordinator env, {worker name: Popen}, the coordinator's repo)."""
    base = tmp_path_factory.mktemp("cluster")
    env = {**os.environ, "CR_HOME": str(base / "coordinator")}
    env.pop("PYTHONWARNINGS", None)
    procs = []
    sched = _start(["scheduler", "--port", "0"], env, base / "scheduler.log")
    procs.append(sched)
    addr = _wait_line(base / "scheduler.log", "scheduler at", sched).split()[-1]
    workers = {}
    for name, root in (("here", None), ("pi", FIXTURES / "rpi4-64"), ("gpu", FIXTURES / "x86-h100")):
        args = ["worker", "--scheduler", addr, "--name", name, "--cr-home", base / f"home-{name}"]
        if root:
            args += ["--platform-root", root]
        workers[name] = _start(args, env, base / f"{name}.log")
        procs.append(workers[name])
    for name, proc in workers.items():
        _wait_line(base / f"{name}.log", f"worker {name}", proc)
    repo = make_repo(base / "comps", "comps")
    null_solution(repo)
    null_solution(repo, "null-slow", min_queries=60)
    meta = repo / "solution" / "null-slow" / "1.0.0" / "meta.json"
    data = json.loads(meta.read_text())
    data["backend_options"] = {"sleep_ms": 50}  # 60 queries x 50 ms: a job of about 3 s
    meta.write_text(json.dumps(data))
    assert subprocess.run([sys.executable, "-m", "cr", "repo", "add", str(repo)], env=env, capture_output=True).returncode == 0
    yield addr, env, workers, repo, base
    stop_all(list(reversed(procs)))


def _cr(env, *args, timeout=240):
    return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], env=env, capture_output=True, text=True, timeout=timeout)


def _records(env, name):
    rows = json.loads(_cr(env, "results", "list", "--campaign", name, "--json").stdout)
    return [json.loads(_cr(env, "results", "show", r["uid"], "--json").stdout) for r in rows]


def test_jobs_land_only_on_matching_workers_and_never_overlap(cluster):
    addr, env, workers, repo, base = cluster
    make_component(repo, "campaign", "spread", solutions=["solution:null-digits"], repeat=2,
                   platforms={"pi": {"requires": ["raspberry-pi-4"]}, "gpu": {"requires": ["nvidia-gpu"]},
                              "x86": {"marker": "platform_machine == 'x86_64'"}})
    done = _cr(env, "campaign", "run", "spread", "--scheduler", addr, "--wait-for-workers", "3", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 6 and {r["state"] for r in rows} == {"done"}
    by_platform = {}
    for r in rows:
        by_platform.setdefault(r["platform"], set()).add(r["worker"])
    assert by_platform["pi"] == {"pi"} and by_platform["gpu"] == {"gpu"}
    assert by_platform["x86"] <= {"here", "gpu"}
    records = _records(env, "spread")
    assert len(records) == 6
    assert {r["worker"]["name"] for r in records} >= {"pi", "gpu"}
    pi = [r for r in records if r["worker"]["name"] == "pi"]
    assert all(r["platform"]["arch"] == "aarch64" and "raspberry-pi-4" in r["platform"]["capabilities"] for r in pi)
    gpu_jobs = [r for r in records if r["campaign"]["job"] in {x["job"] for x in rows if x["platform"] == "gpu"}]
    assert all(0 <= r["worker"]["gpu"] < 8 for r in gpu_jobs)  # ran with CUDA_VISIBLE_DEVICES set to its slot
    spans = [(datetime.fromisoformat(r["started"]), datetime.fromisoformat(r["ended"]), r["worker"]["gpu"]) for r in gpu_jobs]
    for a in spans:
        for b in spans:
            if a is not b and a[0] < b[1] and b[0] < a[1]:
                assert a[2] != b[2], "two GPU jobs at once on one GPU"
    # benchmark-slot jobs on one worker never overlap in time
    for name in ("pi", "here", "gpu"):
        windows = sorted((datetime.fromisoformat(r["started"]), datetime.fromisoformat(r["ended"]))
                         for r in records if r["worker"]["name"] == name and "gpu" not in r["worker"])
        for (_, end), (start, _) in zip(windows, windows[1:]):
            assert start >= end, (name, windows)
    # the coordinator's store holds the results of all three machines, with their platforms
    listed = json.loads(_cr(env, "results", "list", "--campaign", "spread", "--json").stdout)
    assert any("Raspberry Pi 4" in (r["platform_description"] or "") for r in listed)
    assert any("H100" in (r["platform_description"] or "") for r in listed)
    # a rerun of a finished campaign runs nothing
    again = _cr(env, "campaign", "run", "spread", "--scheduler", addr)
    assert again.returncode == 0 and "0 job(s) to run, 6 already done" in again.stderr
    assert len(_records(env, "spread")) == 6


def test_the_dashboard_shows_the_campaign_matrix_of_three_workers(cluster, browser, tmp_path):
    from helpers.dashboard import _wait

    addr, env, workers, repo, base = cluster
    site = tmp_path / "site"
    built = _cr(env, "dashboard", "build", "--out", site)
    assert built.returncode == 0, built.stderr
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((site / "index.html").as_uri() + "#/leaderboard")
    _wait(page, "() => !!window.CR_DASHBOARD && window.CR_DASHBOARD.ready")
    options = page.eval_on_selector_all("select[data-filter=campaign] option", "els => els.map(e => e.value)")
    assert "spread" in options
    assert page.eval_on_selector_all("[data-nav=campaign]", "els => els.length") == 1
    page.goto((site / "index.html").as_uri() + "#/campaign/spread")
    _wait(page, "() => !!document.querySelector('table[data-campaign=spread]')")
    heads = page.eval_on_selector_all("table[data-campaign=spread] thead th", "els => els.map(e => e.textContent)")
    assert heads[0] == "Solution" and any("Raspberry Pi 4" in h for h in heads) and any("H100" in h for h in heads)
    links = page.eval_on_selector_all("table[data-campaign=spread] td a", "els => els.map(e => e.getAttribute('href'))")
    assert len(links) == 6 and all(link.startswith("#/result/") for link in links)
    cells = page.eval_on_selector_all("table[data-campaign=spread] td", "els => els.map(e => e.textContent)")
    assert any("p50" in c and "on pi" in c for c in cells)
    page.click("table[data-campaign=spread] td a")
    _wait(page, "() => location.hash.startsWith('#/result/') && !!document.querySelector('main[data-result]')")
    assert not errors, errors
    page.close()


def test_a_job_no_worker_can_run_is_unplaceable_at_once(cluster):
    addr, env, workers, repo, base = cluster
    make_component(repo, "campaign", "orin", solutions=["solution:null-digits"],
                   platforms={"jetson": {"requires": ["jetson"]}, "pi": {"requires": ["raspberry-pi-4"]}})
    t0 = time.monotonic()
    done = _cr(env, "campaign", "run", "orin", "--scheduler", addr, "--json", timeout=120)
    elapsed = time.monotonic() - t0
    assert done.returncode == 1
    rows = {r["platform"]: r for r in json.loads(done.stdout)}
    assert rows["pi"]["state"] == "done" and rows["jetson"]["state"] == "unplaceable"
    reason = rows["jetson"]["reason"]
    for name in ("here", "pi", "gpu"):
        assert f"{name} (" in reason
    assert reason.count("lacks jetson") == 3
    assert "unplaceable" in done.stderr and "Traceback" not in done.stderr
    assert elapsed < 60


def test_a_damaged_archive_fails_the_job_with_that_reason(cluster):
    """Bytes that are not the archive their sha256 names never reach a worker; an archive that
    is not a solution's fails its job on the worker, with the reason."""
    addr, env, workers, repo, base = cluster
    from cr.campaign.link import LinkError, connect

    link = connect(addr, None, 10)
    link.send({"op": "hello", "role": "coordinator"})
    assert link.recv()[0]["op"] == "welcome"
    link.send({"op": "archive", "sha256": "ab" * 32}, [b"PK not really"])
    with pytest.raises(LinkError):
        while True:
            link.recv(timeout=10)
    import hashlib

    link = connect(addr, None, 10)
    link.send({"op": "hello", "role": "coordinator"})
    assert link.recv()[0]["op"] == "welcome"
    data = b"PK not really"
    sha = hashlib.sha256(data).hexdigest()
    job = {"id": "0" * 16, "solution": "solution:x@1", "solution_uid": "0" * 16, "solution_sha256": "0" * 64, "overrides": {},
           "platform": "any", "target": {}, "repetition": 0, "actions": None, "params": {}}
    link.send({"op": "archive", "sha256": sha}, [data])
    link.send({"op": "submit", "jobs": [{"key": "k1", "job": job, "kind": "job", "sha256": sha, "needs": {"benchmark": 1},
                                        "workers": ["here"], "retries": 0}]})
    while True:
        msg, _ = link.recv(timeout=60)
        if msg["op"] == "result":
            break
    link.close()
    out = msg["outcome"]
    assert msg["worker"] == "here" and out["status"] == "failed"
    assert "setting up the solution on worker here failed" in out["error"]["message"]


def test_a_worker_runs_nothing_but_cr_jobs(cluster):
    """A plain Dask client cannot even connect: the cluster speaks no Dask protocol
    (tests/test_cluster_lockdown.py tries every Dask route)."""
    addr, env, workers, repo, base = cluster
    code = f"""
from distributed import Client
try:
    c = Client({addr!r}, timeout=5)
    c.submit(print, "hello", pure=False).result(timeout=30)
    print("RAN")
except Exception as exc:
    print("REFUSED", type(exc).__name__)
"""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert "REFUSED" in done.stdout and "RAN" not in done.stdout, done.stdout + done.stderr


def test_a_worker_killed_mid_job_the_job_completes_elsewhere_once(cluster):
    """Runs near the end of this module: it kills the worker the job started on."""
    addr, env, workers, repo, base = cluster
    make_component(repo, "campaign", "survive", solutions=["solution:null-slow"],
                   platforms={"x86": {"marker": "platform_machine == 'x86_64'"}})
    run = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "survive", "--scheduler", addr, "--json",
                            "--retries", "1"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = next(iter((base / "coordinator").glob("campaigns/survive-*/journal.jsonl")), None)
    deadline = time.monotonic() + 60
    victim = None
    while victim is None and time.monotonic() < deadline:
        journal = journal or next(iter((base / "coordinator").glob("campaigns/survive-*/journal.jsonl")), None)
        if journal and journal.exists():
            started = [json.loads(line) for line in journal.read_text().splitlines() if '"started"' in line]
            if started:
                victim = started[-1]["worker"]
        time.sleep(0.05)
    assert victim in ("here", "gpu"), victim
    time.sleep(0.5)
    os.killpg(workers[victim].pid, signal.SIGKILL)
    out, err = run.communicate(timeout=180)
    assert run.returncode == 0, err
    (row,) = json.loads(out)
    assert row["state"] == "done" and row["worker"] != victim and row["attempts"] == 2
    records = _records(env, "survive")
    assert len(records) == 1 and records[0]["campaign"]["attempt"] == 2
    status = json.loads(_cr(env, "campaign", "status", "survive", "--json").stdout)
    assert status[0]["failed_attempts"][0]["worker"] == victim


def test_tls_on_loopback(tmp_path):
    ca, made = make_certs(tmp_path)
    cert, key = made["node"]
    tls = ["--tls-ca-file", ca, "--tls-cert", cert, "--tls-key", key]
    env = {**os.environ, "CR_HOME": str(tmp_path / "coordinator")}
    sched = _start(["scheduler", "--port", "0", *tls], env, tmp_path / "s.log")
    procs = [sched]
    try:
        addr = _wait_line(tmp_path / "s.log", "scheduler at", sched).split()[-1]
        assert addr.startswith("tls://127.0.0.1:")
        w = _start(["worker", "--scheduler", addr, "--name", "secure", "--cr-home", tmp_path / "wh", *tls], env, tmp_path / "w.log")
        procs.append(w)
        _wait_line(tmp_path / "w.log", "worker secure", w)
        repo = make_repo(tmp_path / "comps", "comps")
        null_solution(repo)
        make_component(repo, "campaign", "secure", solutions=["solution:null-digits"])
        assert _cr(env, "repo", "add", repo).returncode == 0
        plain = _cr(env, "campaign", "run", "secure", "--scheduler", addr.replace("tls://", ""), "--connect-timeout", "3", timeout=60)
        assert plain.returncode == 1 and "does not answer" in plain.stderr  # no certificate, no connection
        done = _cr(env, "campaign", "run", "secure", "--scheduler", addr, *tls, "--json")
        assert done.returncode == 0, done.stderr
        assert [r["worker"] for r in json.loads(done.stdout)] == ["secure"]
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=20)


def test_no_retry_left_fails_the_job_naming_the_worker(cluster):
    """Runs last in this module: it kills the Raspberry Pi worker."""
    addr, env, workers, repo, base = cluster
    make_component(repo, "campaign", "fragile", solutions=["solution:null-slow"], platforms={"pi": {"requires": ["raspberry-pi-4"]}})
    run = subprocess.Popen([sys.executable, "-m", "cr", "campaign", "run", "fragile", "--scheduler", addr, "--json",
                            "--retries", "0"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        journal = next(iter((base / "coordinator").glob("campaigns/fragile-*/journal.jsonl")), None)
        if journal and '"started"' in journal.read_text():
            break
        time.sleep(0.05)
    time.sleep(0.3)
    os.killpg(workers["pi"].pid, signal.SIGKILL)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 1
    (row,) = json.loads(out)
    assert row["state"] == "failed" and "worker pi left mid-job" in row["error"] and "no retry is left" in row["error"]
    assert "Traceback" not in err and _records(env, "fragile") == []
