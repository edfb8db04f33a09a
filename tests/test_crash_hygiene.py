"""cr leaves nothing behind and nothing running when it is killed, and its exit codes tell the truth.

Every test drives the real CLI in a fresh CR_HOME and TMPDIR; nothing touches the network
(git repositories are local bare ones reached through file:// URLs). Tests run as root,
where chmod does not stop writes: a results store that cannot be written is made by putting
a file where CR_HOME/results should be.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GIT_ENV = {
    "GIT_AUTHOR_NAME": "reefkit tests", "GIT_AUTHOR_EMAIL": "tests@reefkit.invalid",
    "GIT_COMMITTER_NAME": "reefkit tests", "GIT_COMMITTER_EMAIL": "tests@reefkit.invalid",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
}
linux_only = pytest.mark.skipif(not Path("/proc/self/task").is_dir() or not sys.platform.startswith("linux"),
                                reason="needs Linux /proc (PR_SET_PDEATHSIG)")


@pytest.fixture
def env(tmp_path) -> dict:
    """The environment of a cr with its own CR_HOME and TMPDIR."""
    home, tmpdir = tmp_path / "home", tmp_path / "tmpdir"
    tmpdir.mkdir()
    out = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    out.update(CR_HOME=str(home), TMPDIR=str(tmpdir), **GIT_ENV)
    return out


def cr(env: dict, *args, timeout: float = 180, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL)


def start(env: dict, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "cr", *map(str, args)], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


# -- processes --------------------------------------------------------------------------

def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for c in children(todo.pop()):
            found.append(c)
            todo.append(c)
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def running(pid: int) -> bool:
    """Whether pid is a live process (a zombie is dead: nobody may reap it in a container)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    state = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("State:")), "")
    return state not in ("Z", "X")


def wait_for(condition, timeout: float, what: str, step: float = 0.02):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def kill_9(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL  # it was still running: killed in the middle


def named(folder: Path, prefix: str) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(prefix)) if folder.is_dir() else []


# -- kill -9 of cr benchmark -------------------------------------------------------------

@linux_only
def test_kill_9_of_a_benchmark_takes_the_child_along_and_the_next_run_sweeps_its_job_dir(env):
    home, tmpdir = Path(env["CR_HOME"]), Path(env["TMPDIR"])
    proc = start(env, "benchmark", "model", "lenet-digits", "--backend", "null", "--min-duration", "30")
    try:
        child = wait_for(lambda: next((c for c in children(proc.pid) if "job.json" in cmdline(c)), None),
                         90, "the runtime child")
        time.sleep(0.3)  # the child is running the job now
    finally:
        kill_9(proc)
    wait_for(lambda: not running(child), 5, f"the runtime child {child} to die with cr")
    assert named(home / "tmp", f"job-{proc.pid}-")  # left behind by the kill...
    assert named(tmpdir, "cr-job-") == []

    done = cr(env, "benchmark", "model", "lenet-digits", "--backend", "null", "--min-duration", "0.05",
              "--min-queries", "10", "--warmup", "1", "--no-store")
    assert done.returncode == 0, done.stderr
    assert named(home / "tmp", "job-") == []  # ...and swept by the next cr
    assert named(tmpdir, "cr-") == []  # nothing of cr in TMPDIR


@linux_only
def test_die_with_parent_kills_a_child_whose_parent_is_killed(tmp_path):
    """cr.procs.die_with_parent(): the helper other modules (pip's install) start children with."""
    script = (
        "import subprocess, sys, time\n"
        "from cr.procs import die_with_parent\n"
        "p = subprocess.Popen(['sleep', '60'], preexec_fn=die_with_parent(), start_new_session=True)\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        sleeper = int(parent.stdout.readline())
        assert running(sleeper)
    finally:
        kill_9(parent)
    wait_for(lambda: not running(sleeper), 5, "the sleep child to die with its parent")


def test_die_with_parent_is_harmless_where_it_cannot_work(monkeypatch):
    from cr import procs

    monkeypatch.setattr(procs.sys, "platform", "darwin")
    assert procs.die_with_parent() is None and procs.popen_kwargs() == {}


# -- kill -9 of cr repo pull -------------------------------------------------------------

def git(*args, cwd: Path) -> str:
    done = subprocess.run(["git", *map(str, args)], cwd=cwd, env={**os.environ, **GIT_ENV},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture(scope="module")
def big_remote(tmp_path_factory) -> Path:
    """A bare repo 'big' of ~80 MB of incompressible files: a clone takes seconds."""
    root = tmp_path_factory.mktemp("bigremote")
    work, bare = root / "work", root / "big.git"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    (work / "cr-repo.json").write_text(json.dumps({"name": "big", "uid": "0123456789abcdef", "version": "1.0.0"}))
    for i in range(8):
        (work / f"blob{i}.bin").write_bytes(os.urandom(10_000_000))
    git("-c", "core.compression=0", "add", "-A", cwd=work)
    git("commit", "-q", "-m", "big", cwd=work)
    git("-c", "pack.compression=0", "clone", "-q", "--bare", work, bare, cwd=root)
    return bare


def registered(env: dict) -> list[dict]:
    done = cr(env, "repo", "list", "--json")
    assert done.returncode == 0, done.stderr
    return [r for r in json.loads(done.stdout) if r.get("origin") == "git"]


def cr_gits(pid: int) -> list[int]:
    """cr's own git processes: the clone and what it started to receive the pack (a file://
    URL's server side, upload-pack and pack-objects, is the remote's: it ends at its next
    write into the closed pipe)."""
    return [p for p in descendants(pid) if any(f"git {c}" in cmdline(p) for c in ("clone", "index-pack", "fetch-pack"))]


@linux_only
def test_kill_9_mid_clone_leaves_nothing_that_blocks_the_next_pull(env, big_remote):
    home = Path(env["CR_HOME"])
    url = big_remote.as_uri()
    proc = start(env, "repo", "pull", url)
    try:
        gits = wait_for(lambda: cr_gits(proc.pid), 60, "git clone")
        time.sleep(0.3)
        gits = cr_gits(proc.pid) or gits
    finally:
        kill_9(proc)
    # a clone takes seconds: without the death signal git would go on until it is done
    wait_for(lambda: not any(running(p) for p in gits), 1.5, "git to die with cr")
    assert registered(env) == []

    done = cr(env, "repo", "pull", url)
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in registered(env)] == ["big"]
    assert sorted(p.name for p in (home / "repos").iterdir()) == ["big"]  # no partial clone anywhere
    assert named(home / "tmp", "clone-") == []
    assert named(Path(env["TMPDIR"]), "") == []


@pytest.fixture
def small_remote(tmp_path) -> Path:
    work, bare = tmp_path / "small-work", tmp_path / "small.git"
    work.mkdir()
    git("init", "-q", "-b", "main", cwd=work)
    (work / "cr-repo.json").write_text(json.dumps({"name": "small", "uid": "00112233445566ff", "version": "1.0.0"}))
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "small", cwd=work)
    git("clone", "-q", "--bare", work, bare, cwd=tmp_path)
    return bare


def test_a_clone_left_unregistered_by_a_killed_pull_or_rm_is_replaced_by_the_next_pull(env, small_remote):
    """The state a kill between the rename into CR_HOME/repos and the registration leaves
    (and a kill of `cr repo rm` between unregistering and deleting): a clone nobody owns."""
    home = Path(env["CR_HOME"])
    url = small_remote.as_uri()
    assert cr(env, "repo", "pull", url).returncode == 0
    registry = home / "repos.json"
    data = json.loads(registry.read_text())
    registry.write_text(json.dumps({**data, "repos": []}))  # the registration never happened
    (home / "repos" / "small" / "half-written").write_text("x")
    assert registered(env) == []

    done = cr(env, "repo", "pull", url)
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in registered(env)] == ["small"]
    assert not (home / "repos" / "small" / "half-written").exists()  # a fresh clone, not the leftover
    assert sorted(p.name for p in (home / "repos").iterdir()) == ["small"]
    again = cr(env, "repo", "pull", url)  # a registered clone is still refused, not replaced
    assert again.returncode == 1 and "already pulled" in again.stderr and "cr repo update small" in again.stderr
    assert cr(env, "repo", "update", "small").returncode == 0
    assert cr(env, "repo", "rm", "small").returncode == 0
    assert registered(env) == [] and list((home / "repos").iterdir()) == []


# -- a results store that cannot take the record ----------------------------------------

def _broken_store(env: dict) -> Path:
    home = Path(env["CR_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "results").write_text("not a directory\n")  # fails for root too, unlike chmod
    return home


QUICK = ("--backend", "null", "--min-duration", "0.05", "--min-queries", "20", "--warmup", "1")


def _kept_file(stderr: str) -> Path:
    errors = [ln for ln in stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, stderr
    assert "not stored" in errors[0] and "kept at " in errors[0], errors[0]
    path = Path(errors[0].split("kept at ", 1)[1].split()[0].rstrip(";,"))
    assert path.is_file(), errors[0]
    hints = [ln for ln in stderr.splitlines() if ln.startswith("Hint:")]
    assert hints and "CR_HOME/tmp" in hints[0] and f"cr results add {path}" in hints[0], stderr
    return path


def test_a_benchmark_the_store_cannot_take_exits_1_prints_the_result_and_keeps_the_record(env):
    home = _broken_store(env)
    done = cr(env, "benchmark", "model", "lenet-digits", *QUICK)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "p50" in done.stdout and "throughput" in done.stdout  # the table is shown as usual
    kept = _kept_file(done.stderr)
    assert kept.parent == home / "tmp"
    record = json.loads(kept.read_text())
    assert record["action"] == "benchmark" and record["status"] == "ok" and record["uid"] in done.stderr
    assert "Traceback" not in done.stderr

    done = cr(env, "benchmark", "model", "lenet-digits", *QUICK, "--json")
    assert done.returncode == 1
    printed = json.loads(done.stdout)
    kept = _kept_file(done.stderr)
    assert json.loads(kept.read_text())["uid"] == printed["uid"]

    # once the store works again, the kept record goes in as the hint says
    (home / "results").unlink()
    added = cr(env, "results", "add", kept)
    assert added.returncode == 0, added.stderr
    listed = json.loads(cr(env, "results", "list", "--json").stdout)
    assert printed["uid"] in {r["uid"] for r in listed}


def test_with_output_the_record_is_kept_in_the_output_file(env, tmp_path):
    _broken_store(env)
    out = tmp_path / "r.json"
    done = cr(env, "benchmark", "model", "lenet-digits", *QUICK, "-o", out)
    assert done.returncode == 1
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and f"kept at {out}" in errors[0], done.stderr
    assert json.loads(out.read_text())["status"] == "ok"


def test_a_solution_the_store_cannot_take_runs_every_action_then_exits_1(env, tmp_path):
    _broken_store(env)
    done = cr(env, "benchmark", "solution", "lenet-digits-onnxruntime", "--min-duration", "0.05", "--min-queries", "20",
              "--json", timeout=300)
    if "not installed here" in done.stderr:
        pytest.skip("onnxruntime is not installed in this interpreter")
    assert done.returncode == 1, done.stderr
    printed = json.loads(done.stdout)
    assert [r["action"] for r in printed] == ["benchmark", "benchmark", "validate"]
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "and 2 more not stored" in errors[0], done.stderr
    kept = sorted((Path(env["CR_HOME"]) / "tmp").glob("cr-result-*.json"))
    assert {json.loads(p.read_text())["uid"] for p in kept} == {r["uid"] for r in printed}


# -- --lock of a solution ------------------------------------------------------------------

def test_a_garbage_lock_for_a_solution_is_refused(env, tmp_path):
    garbage = tmp_path / "garbage.json"
    garbage.write_text("this is not a lock {")
    done = cr(env, "benchmark", "solution", "lenet-digits-onnxruntime", "--lock", garbage)
    assert done.returncode == 1
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and str(garbage) in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert not (Path(env["CR_HOME"]) / "results").exists()  # nothing ran


def _lock(env: dict, tmp_path: Path) -> dict:
    path = tmp_path / "lock.json"
    done = cr(env, "resolve", "solution:lenet-digits-onnxruntime", "-o", path)
    assert done.returncode == 0, done.stderr
    lock = json.loads(path.read_text())
    if lock.get("missing"):
        pytest.skip(f"the solution's software is not installed here: {lock['missing']}")
    return lock


def test_a_lock_of_another_component_is_refused(env, tmp_path):
    lock = _lock(env, tmp_path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**lock, "root": "solution:lenet-digits-torch@1.0.0"}))
    done = cr(env, "benchmark", "solution", "lenet-digits-onnxruntime", "--lock", other)
    assert done.returncode == 1
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "is a lock of solution:lenet-digits-torch@1.0.0, not of solution:lenet-digits-onnxruntime@1.0.0" in errors[0]


@linux_only
def test_a_solution_runs_inside_the_lock_given_with_lock(env, tmp_path):
    lock = _lock(env, tmp_path)
    marker = tmp_path / "interpreter-used"
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$$" >> "{marker}"\nexec "{lock["interpreter"]}" "$@"\n')
    wrapper.chmod(0o755)
    given = tmp_path / "given.json"
    given.write_text(json.dumps({**lock, "interpreter": str(wrapper)}))
    done = cr(env, "benchmark", "solution", "lenet-digits-onnxruntime", "--lock", given,
              "--min-duration", "0.05", "--min-queries", "20", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert len(marker.read_text().split()) == len(records) == 3  # every declared action ran in it
    assert all(r["lock"]["interpreter"] == str(wrapper) for r in records)
