"""`cr dashboard build` survives being killed, failing, and being run twice at once.

The store is 6,000 small records in the real format (cr.dashboard.sample.write_store), so a
build takes about a second on a small machine: long enough to kill one or to start a
second build while the first is reading. Builds run as real processes (the CLI, or
build() with two worker processes) and are killed with SIGKILL, as an OOM killer or a
closed terminal would.
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

from cr.dashboard import build, sample
from cr.events import CollectingReporter, set_reporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers.dashboard import _load_js  # noqa: E402  (the data-file reader of the dashboard tests)

RECORDS = 6000
LINUX = sys.platform.startswith("linux")

# `cr dashboard ARGS...` through cr's real entry point, started once the file argv[1] exists
# ("-": at once), with cr already imported so that the build starts within milliseconds.
CLI = (
    "import os, sys, time\n"
    "from cr.cli import main as m\n"
    "from cr.cli.dashboard import dashboard\n"
    "import cr.dashboard.build\n"
    "if 'dashboard' not in m.cli.commands: m.cli.add_command(dashboard)\n"
    "while sys.argv[1] != '-' and not os.path.exists(sys.argv[1]): time.sleep(0.002)\n"
    "m.main(sys.argv[2:])\n"
)
# build(results, out, workers=N): worker processes whatever the machine's CPU count
BUILD = "import sys\nfrom cr.dashboard import build\nbuild(sys.argv[1], sys.argv[2], workers=int(sys.argv[3]))\n"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("results")
    assert sample.write_store(folder, RECORDS, samples=64) == RECORDS
    return folder


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}


def _start(code: str, *args, log: Path) -> subprocess.Popen:
    with open(log, "wb") as f:
        return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.DEVNULL, stderr=f,
                                env=_env())


def _wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.002)


def _reading(out: Path) -> bool:
    """The build has written its first detail file (it is reading records)."""
    try:
        return any(n.endswith(".js") for n in os.listdir(out / "data" / "results"))
    except OSError:
        return False


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process from /proc, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def _children(pid: int) -> dict[int, int]:
    """pid -> start time of each live child of pid."""
    found = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(int(name))
            if st and st[1] == pid and st[0] != "Z":
                found[int(name)] = st[2]
    return found


def _alive(pid: int, started: int) -> bool:
    st = _stat(pid)
    return st is not None and st[0] != "Z" and st[2] == started  # a zombie is dead; another start time, another process


def _kill_all(processes: dict[int, int]) -> None:
    for pid, started in processes.items():
        if _alive(pid, started):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _site_uids(out: Path) -> set[str]:
    """The uids of the results the site lists (data/runs.js), each checked to be in the detail
    file its entry names: what a result page can show."""
    index = _load_js(out / "data" / "index.js", "CR_DATA_INDEX")
    runs = _load_js(out / "data" / "runs.js", "CR_DATA_RUNS")
    values, strings = runs["values"], index["strings"]
    assert runs["count"] == index["counts"]["results"] == len(values["uid"])
    bundles: dict[str, str] = {}
    for uid, loc in zip(values["uid"], values["loc"]):
        bundle = strings[loc]
        if bundle not in bundles:
            bundles[bundle] = (out / "data" / "results" / f"{bundle}.js").read_text(encoding="ascii")
        assert f'["{bundle}:{uid}"]=' in bundles[bundle], f"result {uid} is not in its detail file {bundle}.js"
    return set(values["uid"])


def _store_uids(*folders: Path) -> set[str]:
    return {p.stem for folder in folders for p in folder.rglob("*.json")}


def _marker(out: Path) -> dict:
    return json.loads((out / ".cr-dashboard.json").read_text(encoding="utf-8"))


# ---------------------------------------------------------------- killed builds


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_a_killed_first_build_leaves_a_folder_the_next_build_completes(store, tmp_path):
    out = tmp_path / "site"
    proc = _start(CLI, "-", "dashboard", "build", "--results", store, "--out", out, log=tmp_path / "first.log")
    workers = {}
    try:
        _wait_until(lambda: _reading(out) or proc.poll() is not None, 25, "the first build to start writing")
        workers = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL, (tmp_path / "first.log").read_text()
    finally:
        proc.kill()
        proc.wait(10)
        _kill_all(workers)  # (the code before this test's fix left them running)
    assert not (out / "data" / "index.js").exists(), "the build finished before it could be killed"
    assert _marker(out)["complete"] is False  # cr's marker is the first file of a new folder

    reporter = CollectingReporter()
    old = set_reporter(reporter)
    try:
        info = build(store, out)
    finally:
        set_reporter(old)
    assert info.results == RECORDS and info.processed == RECORDS  # all of it again: the killed build's state is not trusted
    assert _site_uids(out) == _store_uids(store)
    assert _marker(out)["complete"] is True
    assert not [p for p in out.rglob("*.tmp")]
    info = build(store, out)  # and now a rebuild is incremental again
    assert info.processed == 0 and info.reused == RECORDS


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_killing_a_build_with_worker_processes_leaves_none_running(store, tmp_path):
    out = tmp_path / "site"
    proc = _start(BUILD, store, out, 2, log=tmp_path / "build.log")
    workers = {}
    try:
        _wait_until(lambda: (len(_children(proc.pid)) >= 2 and _reading(out)) or proc.poll() is not None, 25,
                    "the build's worker processes")
        workers = _children(proc.pid)
        assert len(workers) >= 2, (tmp_path / "build.log").read_text()
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
        deadline = time.monotonic() + 5
        while any(_alive(pid, started) for pid, started in workers.items()) and time.monotonic() < deadline:
            time.sleep(0.02)
        left = [pid for pid, started in workers.items() if _alive(pid, started)]
        assert not left, f"worker processes {left} outlived the build they belonged to"
    finally:
        proc.kill()
        proc.wait(10)
        _kill_all(workers)
    info = build(store, out)  # nothing holds the folder's lock any more
    assert info.results == RECORDS


class _CtrlC(CollectingReporter):
    def warning(self, message: str) -> None:
        raise KeyboardInterrupt  # Ctrl-C while the builder takes in the first bundle's records


def _workers_of(pid: int) -> dict[int, int]:
    """The build worker processes of pid: its children, or a fork server's (multiprocessing's
    helpers themselves, the fork server and the resource tracker, left out)."""
    found = {}
    for child, started in _children(pid).items():
        try:
            helper = b"multiprocessing" in Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if helper:
            found.update(_children(child))
        else:
            found[child] = started
    return found


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_ctrl_c_in_a_build_stops_its_workers_at_once_and_the_next_build_is_full(store, tmp_path):
    from cr.dashboard.build import _bundle_count, _bundle_of

    # a file that is not a record, in the first bundle: its warning comes with the first records read
    bad = tmp_path / "bad"
    bad.mkdir()
    name = next(f"bad-{i}.json" for i in range(100_000) if _bundle_of(f"bad-{i}.json", _bundle_count(RECORDS + 1)) == "0000")
    (bad / name).write_text("{", encoding="utf-8")
    out, before = tmp_path / "site", _workers_of(os.getpid())
    old = set_reporter(_CtrlC())
    try:
        with pytest.raises(KeyboardInterrupt) as interrupted:
            build([store, bad], out, workers=2)
    finally:
        set_reporter(old)
    try:
        # while the exception (and its traceback, holding the builder's frames) is still around
        deadline = time.monotonic() + 3
        while set(_workers_of(os.getpid())) - set(before) and time.monotonic() < deadline:
            time.sleep(0.02)
        left = set(_workers_of(os.getpid())) - set(before)
        assert not left, f"worker processes {sorted(left)} still run after Ctrl-C"
        assert interrupted.value is not None
    finally:
        _kill_all({pid: st for pid, st in _workers_of(os.getpid()).items() if pid not in before})
    assert _marker(out)["complete"] is False
    info = build([store, bad], out)
    assert info.processed == RECORDS + 1 and info.skipped == 1  # everything again, not what the stopped build left
    assert _site_uids(out) == _store_uids(store)


# ---------------------------------------------------------------- two builds at once


def test_two_builds_into_one_folder_both_succeed_and_the_site_has_every_result(store, tmp_path):
    out, extra, go = tmp_path / "site", tmp_path / "more", tmp_path / "go"
    extra.mkdir()
    sample.write_store(extra, 10, samples=8, seed=1)
    args = ("dashboard", "build", "--results", store, "--results", extra, "--out", out)
    first = _start(CLI, "-", *args, log=tmp_path / "first.log")
    second = _start(CLI, go, *args, log=tmp_path / "second.log")
    try:
        _wait_until(lambda: _reading(out) or first.poll() is not None, 25, "the first build to start writing")
        assert first.poll() is None, "the first build finished before the second one started"
        sample.write_store(extra / "late", 6, samples=8, seed=2)  # records stored while the first build runs
        go.touch()  # the second build starts while the first is reading
        assert first.wait(25) == 0, (tmp_path / "first.log").read_text()
        assert second.wait(25) == 0, (tmp_path / "second.log").read_text()
    finally:
        for proc in (first, second):
            proc.kill()
            proc.wait(10)
    assert f"waiting for another build of {out}" in (tmp_path / "second.log").read_text()
    assert _site_uids(out) == _store_uids(store, extra) and len(_store_uids(store, extra)) == RECORDS + 16
    assert _marker(out)["complete"] is True
