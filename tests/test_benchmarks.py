"""Every script in benchmarks/ runs, in a tiny mode, so none can rot unnoticed.

The figures of a tiny run mean nothing (one round, a handful of queries or components, on a
machine running the rest of the suite); what is checked is that the script still works
against today's code: it exits 0, prints its table, writes no traceback and, where it has
--json, writes valid JSON. A new script in benchmarks/ without an entry here fails
test_every_benchmark_has_a_tiny_mode.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

# script -> arguments of its tiny run ("{tmp}" is a fresh directory, "{records}" a folder of
# store-shaped result records). A JSON file written to {tmp}/out.json is parsed when named.
TINY = {
    "bench_archive.py": ["--size-mb", "1", "--runs", "1", "--json", "{tmp}/out.json"],
    "bench_campaign.py": ["--jobs", "2", "--tiny", "20", "--real", "20", "--rounds", "1", "--ceiling", "2"],
    "bench_check.py": ["--runs", "1", "--json", "{tmp}/out.json"],
    "bench_compare_agree.py": ["--pairs", "4", "--real", "1", "--derived", "5"],
    "bench_conversions.py": ["--models", "lenet-digits", "--to", "onnx", "--json", "{tmp}/out.json"],
    "bench_dashboard.py": ["--sizes", "200", "--work", "{tmp}/work", "--json", "{tmp}/out.json"],
    "bench_emulation.py": ["{records}", "{emulated}", "--json", "{tmp}/out.json"],
    "bench_gate.py": ["--pairs", "2", "--queries", "100", "--rounds", "1", "--json", "{tmp}/out.json"],
    "bench_image.py": ["--rounds", "1", "--seconds", "0.2", "--no-rebuild", "--json", "{tmp}/out.json"],
    "bench_harness.py": ["--queries", "2000", "--warmup", "10", "--runs", "1"],
    "bench_hints.py": ["--runs", "1", "--json", "{tmp}/out.json"],
    "bench_init.py": ["--runs", "1"],
    "bench_jobenv.py": ["--tiny", "--rounds", "1", "--json", "{tmp}/out.json"],
    "bench_models.py": ["--only", "fidelity", "--models", "lenet-digits", "--rounds", "1", "--seconds", "0.2",
                        "--json", "{tmp}/out.json"],
    "bench_monitor.py": ["--pairs", "1", "--seconds", "0.3", "--json", "{tmp}/out.json"],
    "bench_payloads.py": ["--runs", "1", "--json", "{tmp}/out.json"],
    "bench_progress.py": ["--rounds", "1", "--seconds", "0.2", "--before", "HEAD", "--json"],
    "bench_progress_children.py": ["--rounds", "1", "--samples", "20", "--profile-only", "--before", "HEAD", "--json"],
    "bench_profile.py": ["--quick", "--no-tensorflow", "--samples", "5", "--repeats", "1", "--json", "{tmp}/out.json"],
    "bench_resolve.py": ["--runs", "1", "--graph", "20", "--json", "{tmp}/out.json"],
    "bench_tables.py": ["--rows", "20", "--runs", "1", "--json", "{tmp}/out.json"],
    "bench_slurm.py": ["--jobs", "2", "--rounds", "1", "--json", "{tmp}/out.json"],
    "bench_results.py": ["--results", "400", "--samples", "10", "--durable", "10", "--runs", "1",
                         "--json", "{tmp}/out.json"],
    "bench_store.py": ["--components", "300", "--runs", "1", "--new", "20", "--json", "{tmp}/out.json"],
    "bench_study.py": ["--tiny", "--rounds", "1", "--model", "lenet-digits", "--json", "{tmp}/out.json"],
    "bench_trust.py": ["--models", "lenet-digits", "--rounds", "1", "--seconds", "0.2", "--json"],
    "bench_tune.py": ["--seeds", "0", "--threads", "1", "--batch", "1,8", "--budget", "2", "--min-duration", "0.05",
                      "--json", "{tmp}/out.json"],
    "bench_twins.py": ["--runs", "1", "--json", "{tmp}/out.json"],
    "dashboard_screens.py": ["--results", "{records}", "--out", "{tmp}/img"],
    "bench_firstview.py": ["--results", "400", "--rounds", "2", "--json", "{tmp}/out.json"],
}
# scripts whose product is files (under {tmp}) rather than a printed table
PRODUCES = {"dashboard_screens.py": ["img/dashboard-leaderboard.png", "img/dashboard-pareto.png"]}
NEEDS_CHROMIUM = {"dashboard_screens.py", "bench_compare_agree.py", "bench_firstview.py"}


def test_every_benchmark_has_a_tiny_mode():
    scripts = {p.name for p in BENCH.glob("*.py")}
    assert scripts - set(TINY) == set(), "add a tiny run for each new benchmark to TINY"
    assert set(TINY) - scripts == set(), "TINY names a script benchmarks/ no longer has"


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> Path:
    """A folder of result records as the store writes them (a benchmark and a validate record per
    configuration, this machine's and a Raspberry Pi's platform)."""
    from cr.dashboard.sample import write_store

    out = tmp_path_factory.mktemp("records")
    write_store(out, 40)
    return out


@pytest.fixture(scope="module")
def emulated(records, tmp_path_factory) -> Path:
    """An arm64 twin of one native benchmark record of `records`, as a run in an emulated root makes."""
    out = tmp_path_factory.mktemp("emulated")
    for path in sorted(records.rglob("*.json")):
        rec = json.loads(path.read_text())
        plat = rec.get("platform") or {}
        if rec.get("action") == "benchmark" and rec.get("status") == "ok" and plat.get("arch") == "x86_64":
            break
    else:
        pytest.fail("write_store wrote no native x86_64 benchmark record")
    p50 = rec["metrics"]["latency_ns"]["p50"]
    rec["uid"] = "e" * 16
    rec["platform"] = {**plat, "arch": "aarch64", "host_arch": "x86_64", "emulated": "qemu-user",
                       "fingerprint": "emulated-aarch64"}
    rec["metrics"]["latency_ns"]["p50"] = p50 * 8
    (out / "emulated.json").write_text(json.dumps(rec))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_in_tiny_mode(script, tmp_path, records, emulated):
    if script in NEEDS_CHROMIUM and not Path("/usr/bin/chromium").exists():
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    args = [a.format(tmp=tmp_path, records=records, emulated=emulated) for a in TINY[script]]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["CR_HOME"] = str(tmp_path / "home")
    done = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    for name in PRODUCES.get(script, []):
        assert (tmp_path / name).stat().st_size > 0, f"{script} wrote no {name}"
    if script not in PRODUCES:
        assert done.stdout.strip(), f"{script} printed no figures"
    if "{tmp}/out.json" in TINY[script]:
        json.loads((tmp_path / "out.json").read_text())
