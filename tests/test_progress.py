"""Progress of long work on stderr: a benchmark's phases and a solution's actions (on a
terminal, in a pipe, and not at all with -q), and a campaign's worker events and ETA.

The benchmarks are real `cr benchmark solution` runs of the shipped lenet-digits solution
on onnxruntime (a terminal is a real pty); the campaign runs on a real `cr scheduler` and
`cr worker` on 127.0.0.1."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import _env, make_component, make_repo
from helpers.campaign import null_solution
from helpers.cluster import start_cr, stop_all, wait_line
from helpers.terminal import open_terminal, read_terminal

SOLUTION = "lenet-digits-onnxruntime"
SHORT = ("--min-duration", "1", "--min-queries", "200", "--max-duration", "3")
PHASES = ("resolve", "load", "warm-up", "steady", "statistics")


def _under_pty(args: list[str], timeout: float = 240) -> tuple[bytes, bytes, int]:
    """(stdout, what the terminal got on stderr, exit status) of `python -m cr ARGS`, its
    stderr a real pty (a terminal of 100 columns), its stdout a pipe."""
    master, slave = open_terminal(100, rows=24)
    proc = subprocess.Popen([sys.executable, "-m", "cr", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave, env=_env())
    os.close(slave)
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        seen = read_terminal(master, proc, timeout)
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
        reader.join(timeout=10)
    return out[0] if out else b"", seen, proc.returncode


@pytest.fixture(scope="module")
def benchmarked(tmp_path_factory):
    """The same short `cr benchmark solution` run three ways in one CR_HOME: stderr on a pty
    (with --json), piped, and -q --json piped."""
    pytest.importorskip("onnxruntime")
    home = tmp_path_factory.mktemp("progress-home")
    old = os.environ.get("CR_HOME")
    os.environ["CR_HOME"] = str(home)
    try:
        args = ["benchmark", "solution", SOLUTION, *SHORT]
        tty = _under_pty([*args, "--json"])
        piped = subprocess.run([sys.executable, "-m", "cr", *args], capture_output=True, text=True, env=_env(), timeout=240)
        quiet = subprocess.run([sys.executable, "-m", "cr", "-q", *args, "--json"], capture_output=True, text=True,
                               env=_env(), timeout=240)
    finally:
        if old is None:
            os.environ.pop("CR_HOME", None)
        else:
            os.environ["CR_HOME"] = old
    return tty, piped, quiet


def test_a_terminal_shows_each_phase_live_with_an_eta(benchmarked):
    (stdout, screen, code), _, _ = benchmarked
    assert code == 0, screen.decode(errors="replace")[-2000:]
    text = screen.decode("utf-8", "replace")
    assert "\r" in text and "\x1b[K" in text  # one line rewritten in place
    for phase in PHASES:
        assert re.search(rf"benchmark[^\r\n]*: {phase} \d", text), phase  # the live line: phase, elapsed
    assert re.search(r"steady [\d.]+ s, ETA (at most )?[\d.]+ s", text)  # the steady phase's ETA
    assert re.search(r"solution [^\r\n]*: action 1/3 benchmark", text)  # the solution's declared actions, i/n
    assert "action 3/3 validate" in text and "accuracy pass (360 samples)" in text
    assert re.search(r"solution:lenet-digits-onnxruntime@1\.0\.0: 3 action\(s\) run in [\d.]+ s\r?\n", text)
    # stdout is the JSON records alone, whatever went to the terminal
    records = json.loads(stdout)
    assert [r["action"] for r in records] == ["benchmark", "benchmark", "validate"]


def test_a_pipe_gets_one_plain_line_per_phase(benchmarked):
    _, piped, _ = benchmarked
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert "\r" not in piped.stderr and "\x1b" not in piped.stderr
    lines = piped.stderr.splitlines()
    first = [line for line in lines if line.startswith("benchmark solution:")]
    # the first benchmark's phases, in order, each once
    names = [line.split(": ", 1)[1].split(" (")[0] for line in first[:7]]
    assert names == ["resolve", "load", "inputs", "warm-up", "steady", "statistics", "ran in " + names[6][7:]], first
    steady = next(line for line in first if ": steady" in line)
    assert re.search(r"steady \(about [\d.]+ s(, at most 3\.0 s)?\)$", steady), steady  # the run's own limits
    assert any(line.endswith("validate") and "action 3/3" in line for line in lines)
    assert "P50" in piped.stdout and "benchmark solution" not in piped.stdout  # stdout: the table only


def test_quiet_shows_no_progress_and_json_stays_the_same(benchmarked):
    (stdout, _, _), _, quiet = benchmarked
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert quiet.stderr == ""
    plain, shown = json.loads(quiet.stdout), json.loads(stdout)
    # the same records, field for field, with or without progress on stderr (the figures differ run to run)
    assert [sorted(r) for r in plain] == [sorted(r) for r in shown]
    assert [(r["action"], r["status"], r["config"]) for r in plain] == [(r["action"], r["status"], r["config"]) for r in shown]


def test_input_refused_before_anything_ran_prints_its_error_and_no_progress(run_cr):
    pytest.importorskip("onnxruntime")
    done = run_cr("benchmark", "solution", SOLUTION, "--scenario", "server")  # no --target-qps: refused in the checks
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[-2:] == ["Error: the server scenario needs a target rate", "Hint: give --target-qps X (queries per second)"]
    assert not [line for line in lines if "@1.0.0: " in line], done.stderr  # no phase, no "failed in" line


# -- the rendering, and the campaign ETA, on given clocks --------------------------------------------


def test_tentative_phases_show_only_once_the_work_got_past_them():
    from cr.cli.progress import PhaseView

    out = io.StringIO()
    view = PhaseView(out, tty=False, clock=lambda: 1.0)
    view.phase("solution solution:s", "action 1/2 benchmark")
    view.phase("benchmark solution:s", "resolve")
    view.phase("benchmark solution:s", None, "failed")  # bad input: refused while resolving
    view.phase("solution solution:s", None, "0 action(s) run")
    assert out.getvalue() == ""
    view.phase("solution solution:s", "action 1/2 benchmark")
    view.phase("benchmark solution:s", "resolve")
    view.phase("benchmark solution:s", "load")
    view.phase("benchmark solution:s", None, "ok")
    assert out.getvalue().splitlines() == ["solution solution:s: action 1/2 benchmark", "benchmark solution:s: resolve",
                                           "benchmark solution:s: load", "benchmark solution:s: ok in 0.0 s"]


def test_phase_view_on_a_terminal_line_names_the_phase_and_what_is_left():
    from cr.cli.progress import PhaseView

    now = [100.0]
    out = io.StringIO()
    view = PhaseView(out, tty=True, clock=lambda: now[0])
    view.phase("solution solution:s@1.0.0", "action 1/2 benchmark")
    view.phase("benchmark solution:s@1.0.0", "steady", expect_s=10.0, max_s=25.0)
    now[0] += 3
    assert view.line() == "solution s: action 1/2 benchmark | benchmark: steady 3.0 s, ETA 7.0 s"
    now[0] += 9  # past the expectation: what the maximum leaves
    assert view.line().endswith("steady 12 s, ETA at most 13 s")
    view.phase("benchmark solution:s@1.0.0", None, "ok")
    assert "benchmark solution:s@1.0.0: ok in 12 s\n" in out.getvalue()
    assert view.line() == "solution s: action 1/2 benchmark 12 s"


def test_a_local_campaign_line_and_its_job_phases_share_one_terminal_line():
    """A campaign on the local executor: its counts and the running job's phase are one live
    line (they overwrote each other when both wrote their own); ending the campaign takes its
    part off."""
    from cr.cli.progress import PhaseView

    now = [0.0]
    out = io.StringIO()
    view = PhaseView(out, tty=True, clock=lambda: now[0])
    view.set_status("sweep: 2/4 done, ETA 9 s")
    assert view.line() == "sweep: 2/4 done, ETA 9 s"
    view.phase("benchmark solution:s@1.0.0", "steady", expect_s=4.0)
    now[0] += 1
    assert view.line() == "sweep: 2/4 done, ETA 9 s | benchmark s: steady 1.0 s, ETA 3.0 s"
    drawn = out.getvalue().rsplit("\r", 1)[-1]
    assert drawn.startswith("sweep: 2/4 done") and "benchmark s: steady" in drawn  # one line holds both
    view.phase("benchmark solution:s@1.0.0", None, "ok")
    view.set_status(None)
    assert view.line() == "" and out.getvalue().endswith("\r\x1b[K")


def test_phase_view_in_a_pipe_writes_each_phase_once():
    from cr.cli.progress import PhaseView

    out = io.StringIO()
    view = PhaseView(out, tty=False, clock=lambda: 5.0)
    view.phase("benchmark model:m", "warm-up", max_s=5.0)
    view.phase("benchmark model:m", "steady", expect_s=2.0, max_s=25.0)
    view.phase("validate model:m", "accuracy pass", "360 samples")
    view.phase("benchmark model:m", None, "ok")
    assert out.getvalue().splitlines() == [
        "benchmark model:m: warm-up (at most 5.0 s)", "benchmark model:m: steady (about 2.0 s, at most 25 s)",
        "validate model:m: accuracy pass (360 samples)", "benchmark model:m: ok in 0.0 s"]


def test_eta_is_unknown_before_a_job_finished_then_the_median_per_remaining_job_over_parallelism():
    from cr.campaign.coordinator import Progress, eta_s

    assert eta_s([], remaining=10, running_elapsed=[3.0], parallelism=2) is None
    # the first job also set the solution up (40 s); the median is not fooled by it
    assert eta_s([40.0, 10.0, 12.0], remaining=6, running_elapsed=[], parallelism=2) == pytest.approx(12.0 * 6 / 2)
    # a running job counts for what the median leaves of it (none once it ran longer)
    assert eta_s([10.0], remaining=2, running_elapsed=[4.0, 15.0], parallelism=2) == pytest.approx((20 + 6) / 2)

    now = [0.0]
    p = Progress(total=4, clock=lambda: now[0])
    p.begin("a"), p.begin("b")
    assert p.line().endswith("2 remaining, ETA unknown")
    now[0] = 30.0
    p.end("a", measured=True)
    p.done += 1
    # 2 still to start at 30 s each, b already ran 30 s: 60 s of work over the 2 seen at once
    assert p.eta_s() == pytest.approx(30.0)
    assert p.line().endswith("ETA 30 s")
    p.end("b", measured=False)  # a lost attempt is no measured duration
    assert p.durations == [30.0]


# -- a campaign on a real scheduler and worker ---------------------------------------------------------


@pytest.mark.slow
def test_a_campaign_shows_forwarded_worker_events_and_the_worker_logs_each_job(tmp_path):
    pytest.importorskip("distributed")
    env = {**_env(), "CR_HOME": str(tmp_path / "coordinator")}
    sched = start_cr(["scheduler", "--port", "0"], env, tmp_path / "scheduler.log")
    procs = [sched]
    try:
        addr = wait_line(tmp_path / "scheduler.log", "scheduler at", sched).split()[-1]
        worker = start_cr(["worker", "--scheduler", addr, "--name", "w1", "--cr-home", tmp_path / "home-w1"], env,
                          tmp_path / "w1.log")
        procs.append(worker)
        wait_line(tmp_path / "w1.log", "worker w1", worker)
        repo = make_repo(tmp_path / "comps", "comps")
        null_solution(repo, min_queries=200, warmup_queries=20)
        make_component(repo, "campaign", "two", solutions=["solution:null-digits"], repeat=2)
        run = lambda *a: subprocess.run([sys.executable, "-m", "cr", *map(str, a)], env=env, capture_output=True,
                                        text=True, timeout=240)
        assert run("repo", "add", repo).returncode == 0
        done = run("campaign", "run", "two", "--scheduler", addr, "--wait-for-workers", "1")
        assert done.returncode == 0, done.stderr[-3000:]
        err = done.stderr
        # what the worker did, forwarded through the scheduler to the coordinator's output
        assert re.search(r"^w1: setting up solution:null-digits", err, re.M), err
        assert re.search(r"^w1: running every declared action of solution:null-digits", err, re.M), err
        assert re.search(r"^w1: benchmark solution:null-digits@1\.0\.0: steady \(about [\d.]+ s\)", err, re.M), err
        assert re.search(r"^w1: benchmark solution:null-digits@1\.0\.0: ran", err, re.M), err
        # an ETA from the first finished job, never a guess before it
        assert re.search(r"^done: .*1 done, 0 running, .*1 remaining, ETA \d+ s", err, re.M), err
        log = (tmp_path / "w1.log").read_text()
        starts = re.findall(r"^\d\d:\d\d:\d\d worker w1: job (\S+) \(solution:null-digits\S* on \S+\) started$", log, re.M)
        ends = re.findall(r"^\d\d:\d\d:\d\d worker w1: job (\S+) \(solution:null-digits\S* on \S+\) ok in [\d.]+ s$", log, re.M)
        assert len(starts) == 2 and sorted(starts) == sorted(ends), log
        assert "steady" not in log  # a job's phases go to the coordinator, the log holds one line per start and end
    finally:
        stop_all(list(reversed(procs)))
