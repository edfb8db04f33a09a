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
