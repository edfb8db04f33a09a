"""A campaign is counted before it is built (docs/campaigns.md): a matrix of 10^9 or 10^12
combinations is one Error: naming the count, quickly and in bounded memory; 20,000 `include`
and `exclude` entries expand in linear time."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

from conftest import _env, make_component, make_repo

FAST = {"inputs": "synthetic", "min_duration_s": 0, "min_queries": 10, "warmup_queries": 0, "max_duration_s": 0}

_MEASURED = """
import atexit, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(open("/proc/self/status").read()))
from cr.cli.main import main
main(sys.argv[2:])
"""


@pytest.fixture
def repo(tmp_path, run_cr):
    r = make_repo(tmp_path / "comps", "comps")
    make_component(r, "solution", "null-digits", model="model:lenet-digits@1.0.0", backend="null",
                   actions=[{"action": "benchmark", "params": FAST}], deps=["software:python@>=3.9", "software:numpy@>=1.23"])
    assert run_cr("repo", "add", r).returncode == 0
    return r


def _measured(tmp_path, *args):
    status = tmp_path / "status.txt"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _MEASURED, str(status), *args], capture_output=True, text=True,
                          env=_env(), timeout=120)
    elapsed = time.monotonic() - start
    hwm = int(re.search(r"^VmHWM:\s+(\d+) kB", status.read_text(), re.M).group(1)) * 1024
    return done, elapsed, hwm


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads VmHWM from /proc")
@pytest.mark.parametrize("per_key, total", [(1000, "1,000,000,000"), (10000, "1,000,000,000,000")])
def test_a_huge_matrix_is_one_error_with_its_count_quickly_and_in_bounded_memory(repo, tmp_path, per_key, total):
    make_component(repo, "campaign", "huge", solutions=["solution:null-digits"],
                   matrix={"threads": list(range(1, per_key + 1)), "batch_size": list(range(1, per_key + 1)),
                           "variant": [f"v{i}" for i in range(per_key)]})
    done, elapsed, hwm = _measured(tmp_path, "campaign", "show", "huge", "--jobs")
    errors = [ln for ln in done.stderr.splitlines() if ln.startswith("Error: ")]
    assert done.returncode == 1 and len(errors) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert f"{total} combinations" in errors[0] and "100,000" in errors[0], errors
    assert elapsed < 10, elapsed  # (2 s on a quiet machine; a shared CI runner gets room)
    assert hwm < 200 * 2**20, f"peak RSS {hwm / 2**20:.0f} MiB"


def test_twenty_thousand_include_and_exclude_entries_expand_in_linear_time(repo, run_cr):
    include = [{"threads": 1, "batch_size": b} for b in range(1, 20001)]
    exclude = [{"threads": 1, "batch_size": b} for b in range(2, 20001, 2)]
    make_component(repo, "campaign", "wide", solutions=["solution:null-digits"], matrix={"threads": [1]},
                   include=include, exclude=exclude + [{"solution": "null-digits", "batch_size": 3}])
    started = time.monotonic()
    done = run_cr("campaign", "show", "wide", "--jobs", "--json", timeout=120)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    jobs = json.loads(done.stdout)["jobs"]
    kept = sorted(j["overrides"].get("batch_size", 0) for j in jobs)
    # the matrix's point (threads 1 alone) plus the odd batch sizes but 3 (excluded by solution name)
    assert kept == [0] + [b for b in range(1, 20001, 2) if b != 3]
    assert elapsed < 60, elapsed  # took 80 s when each entry was compared with every point


def test_a_worker_takes_an_edited_solution_and_keeps_no_archive_file(repo, tmp_path, run_cr, cr_home):
    """A solution edited without a version bump makes a new archive: the worker sets it up in
    place of the old one (it used to refuse every later job: "already holds another archive").
    The archive file is deleted once unpacked; a junk payload leaves nothing either."""
    import hashlib

    from cr.campaign.worker import set_up
    from cr.errors import CRError
    from cr.store.catalog import show

    author = {"CR_HOME": str(tmp_path / "author-home")}
    assert run_cr("repo", "add", repo, env=author).returncode == 0
    archives = []
    for queries in (10, 12):
        meta_path = repo / "solution" / "null-digits" / "1.0.0" / "meta.json"
        meta = json.loads(meta_path.read_text())
        meta["actions"][0]["params"]["min_queries"] = queries
        meta_path.write_text(json.dumps(meta))
        out = tmp_path / f"out{queries}"
        out.mkdir()
        done = run_cr("pack", "solution", "null-digits", "-o", out, env=author)
        assert done.returncode == 0, done.stderr
        (archive,) = out.glob("*.cr.zip")
        archives.append(archive.read_bytes())
    assert run_cr("repo", "rm", "comps").returncode == 0  # the worker knows only what it is sent
    refs = [set_up(data, hashlib.sha256(data).hexdigest(), trust=False) for data in archives]
    assert refs == ["solution:null-digits@1.0.0"] * 2
    assert show(refs[1], verify=False)["meta"]["actions"][0]["params"]["min_queries"] == 12
    junk = b"PK\x03\x04" + b"\0" * 100_000
    with pytest.raises(CRError):
        set_up(junk, hashlib.sha256(junk).hexdigest(), trust=False)
    assert list((cr_home / "campaign-archives").iterdir()) == []


class _Stop(BaseException):
    """The coordinator process dying at that point."""


@pytest.mark.parametrize("dies", ["after storing, before journaling", "while storing"])
def test_a_coordinator_that_dies_while_storing_stores_each_result_once(repo, dies, monkeypatch):
    from cr.campaign import coordinator, journal, spec, wire
    from cr.campaign.jobs import run_here

    make_component(repo, "solution", "two-runs", model="model:lenet-digits@1.0.0", backend="null",
                   actions=[{"action": "benchmark", "params": FAST}, {"action": "benchmark", "params": {**FAST, "min_queries": 12}}],
                   deps=["software:python@>=3.9", "software:numpy@>=1.23"])
    make_component(repo, "campaign", "once", solutions=["solution:two-runs"])
    campaign = spec.load("once")
    (job,) = spec.expand(campaign)
    outcome = wire.to_wire(run_here(job, job.solution))
    assert outcome["status"] == "ok" and len(outcome["records"]) == 2
    run = coordinator.Run(campaign, [job])
    run.started(job, "w1")
    if dies == "while storing":
        real_add, added = run.store.add, []

        def add_then_die(record, *a, **kw):
            if added:
                raise _Stop()
            added.append(record["uid"])
            return real_add(record, *a, **kw)

        monkeypatch.setattr(run.store, "add", add_then_die)
    else:
        real_append = journal.Journal.append

        def append_or_die(self, job_id, event, *a, **kw):
            if event == "done":
                raise _Stop()
            return real_append(self, job_id, event, *a, **kw)

        monkeypatch.setattr(journal.Journal, "append", append_or_die)
    with pytest.raises(_Stop):
        run.finished(job, outcome, {"name": "w1"})
    run.journal.close()
    if dies == "while storing":  # (monkeypatch.undo() would also undo the test's CR_HOME)
        monkeypatch.setattr(run.store, "add", real_add)
    else:
        monkeypatch.setattr(journal.Journal, "append", real_append)
    assert run.store.count() == (2 if dies.startswith("after") else 1)
    again = coordinator.Run(campaign, [job])  # the next `cr campaign run once`
    if dies.startswith("after"):
        assert again.todo == [] and again.outcomes[job.id]["state"] == "done"  # not run again
        assert sorted(again.outcomes[job.id]["results"]) == sorted(r["uid"] for r in outcome["records"])
    else:
        assert again.todo == [job]  # runs again; the half-stored result is gone
        assert again.store.count() == 0
    again.journal.close()


def test_the_coordinator_keeps_no_stored_result_and_its_memory_stays_flat_per_job(repo):
    """Run.finished stores a job's records and keeps only their uids and key metrics: a
    campaign of thousands of jobs with 1,000 latencies each holds none of them (docs/campaigns.md).
    The latencies reach the store bit-exact through the wire form, each result once."""
    import copy
    import gc
    import tracemalloc
    from array import array

    from cr.campaign import coordinator, spec, wire
    from cr.campaign.jobs import run_here

    make_component(repo, "solution", "thousand", model="model:lenet-digits@1.0.0", backend="null",
                   actions=[{"action": "benchmark", "params": {**FAST, "min_queries": 1000}}],
                   deps=["software:python@>=3.9", "software:numpy@>=1.23"])
    make_component(repo, "campaign", "many", solutions=["solution:thousand"], repeat=160)
    campaign = spec.load("many")
    jobs = spec.expand(campaign)
    measured = run_here(jobs[0], jobs[0].solution)  # one real run: its record is what every job returns
    assert measured["status"] == "ok" and len(measured["records"][0]["raw"]["latencies_ns"]) >= 1000
    extremes = array("q", [0, 1, 2**63 - 1, 2**40 + 7] + list(measured["records"][0]["raw"]["latencies_ns"]))
    measured["records"][0]["raw"]["latencies_ns"] = extremes
    wired = wire.to_wire(measured)
    run = coordinator.Run(campaign, jobs)

    def finish(i):
        outcome = copy.deepcopy(wired)
        outcome["records"][0]["uid"] = f"{i:016x}"
        run.started(jobs[i], "w1")
        run.finished(jobs[i], outcome, {"name": "w1"}, sync=False)

    for i in range(40):  # the store's and the journal's first-use costs
        finish(i)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(40, len(jobs)):
            finish(i)
        gc.collect()
        per_job = (tracemalloc.get_traced_memory()[0] - before) / (len(jobs) - 40)
    finally:
        tracemalloc.stop()
    run.close()
    # a record with its 1,004 latencies is ~40 KB in memory; what a finished job keeps is ~1 KB
    assert per_job < 4096, f"the coordinator keeps {per_job:.0f} bytes per finished job"
    assert all("records" not in o for o in run.outcomes.values())
    assert run.store.count() == len(jobs)  # each job's result stored once
    stored = run.store.get(f"{len(jobs) - 1:016x}", raw=True)
    assert stored["raw"]["latencies_ns"] == extremes and stored["campaign"]["job"] == jobs[-1].id
    rows = run.summary()  # the key metrics survive without the records
    assert len(rows) == len(jobs) and all(r["state"] == "done" and r["p50_ns"] for r in rows)
    assert rows[-1]["p50_ns"] == measured["records"][0]["metrics"]["latency_ns"]["p50"]
    again = coordinator.Run(campaign, jobs)  # the next `cr campaign run many`: resumed from the journal
    assert again.todo == [] and again.progress.already == len(jobs)
    assert [r["p50_ns"] for r in again.summary()] == [r["p50_ns"] for r in rows]  # read back from the store
    again.close()
